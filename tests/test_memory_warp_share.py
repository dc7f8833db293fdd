"""Warps that skip a lane-guarded block: `MemoryAnalysis.warp_share` on `examples/reduction.cu`.

In the strided and sequential reductions, the guard of the loop's body (`2 * s * tid < blockDim.x`, `tid < s`)
lets half as many warps through at each step until one warp is left, which runs every later step; a warp none of
whose lanes passes the guard issues nothing of the body. `storeSum`'s `tid == 0` block runs in one warp of the
block. The kerncast model charges the body's issue for that share of the warps only. The compile is the session's
cached one of the example (the same the time-model tests use).
"""
from __future__ import annotations

from pathlib import Path

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx

KERNELS = Path(__file__).resolve().parent / "kernels"


def _halving_share(threads: int) -> float:
    """Warps running the body, summed over the loop's steps, over the warps of every step: the first step lets
    half the block's warps through, each later one half as many, never fewer than one warp."""
    warps, steps = threads // 32, threads.bit_length() - 1
    running = [max(1, warps >> (k + 1)) for k in range(steps)]
    return sum(running) / (warps * steps)


def test_guarded_body_share_halves_each_step(compile_example) -> None:
    result = compile_example("reduction.cu")
    assert result.ok, result.diagnostics
    module = parse_ptx(result.ptx)
    for name in ("reduceStrided", "reduceSequential"):
        fn = next(f for f in module.kernels if name in f.name)
        cfg = build_cfg(fn)
        loops = find_loops(cfg)
        stores = [i.index for i in fn.body if i.opcode == "st" and i.space == "shared"]
        body = next(cfg.block_of[i] for i in stores if loops.enclosing(cfg.block_of[i]))
        leader = next(cfg.block_of[i.index] for i in fn.body if i.opcode == "st" and i.space == "global")
        for threads in (256, 512):
            memory = analyze_memory(module, fn, cfg, loops, (threads, 1, 1), {}, {}, Thresholds(), budget_s=None)
            assert abs(memory.warp_share[body] - _halving_share(threads)) < 1e-9, (name, threads)
            assert abs(memory.warp_share[leader] - 32 / threads) < 1e-9, (name, threads)
            assert 0 not in memory.warp_share  # the entry block runs in every warp


def test_a_guard_on_the_loop_counter_and_the_lane_is_read_per_iteration(nvcc_available) -> None:
    """`tests/kernels/halo.cu`: inside the tap loop, a lane reads its neighbour from global memory only where
    `k = i - taps / 2 + j` falls outside its block's tile, a test of both the lane and the loop counter `j`.
    Read at sampled values of the counter (and of the block index, in the grid's first blocks, which the
    assumptions say), the global path is run by one warp of the block's eight at most (the first at the early
    taps, the last at the late ones) and, in those warps, by the edge lanes only; with the counter left a symbol
    the test was undecided and every warp was taken to run it."""
    path = KERNELS / "halo.cu"
    source = path.read_text(encoding="utf-8")
    result = compile_cuda(path, options=CompileOptions(arch="sm_86"))
    assert result.ok, result.diagnostics
    module = parse_ptx(result.ptx)
    fn = next(f for f in module.kernels if "haloFromGlobal" in f.name)
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    memory = analyze_memory(module, fn, cfg, loops, (256, 1, 1), {"taps": 5, "n": 1 << 20}, {}, Thresholds(),
                            cuda_source=source, budget_s=None)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "acc += in[k]" in text)
    halo = [a for a in memory.accesses if a.space == "global" and a.kind == "load" and a.line == line]
    assert len(halo) >= 4  # `in[k]` and `mask[j]` in the unrolled copies and the remainder
    shares = [memory.warp_share.get(cfg.block_of[a.index], 1.0) for a in halo]
    assert all(s <= 1 / 8 + 1e-9 for s in shares), shares
    assert sum(shares) > 0.0, shares
    assert all(a.active_lanes is None or a.active_lanes <= 2 for a in halo), [a.active_lanes for a in halo]
    tile = [a for a in memory.accesses if a.space == "global" and a.kind == "load" and a.line == line - 2]
    assert tile and all(memory.warp_share.get(cfg.block_of[a.index], 1.0) == 1.0 for a in tile)
    # the first blocks stand for all (block 0 has no left halo: its `k >= 0` test fails there), and it is said
    assert any(str(line) in note and "blocks 0-" in note and "guards decide" in note for note in memory.assumptions)
