"""Warps that skip a lane-guarded block: `MemoryAnalysis.warp_share` on `examples/reduction.cu`.

In the strided and sequential reductions, the guard of the loop's body (`2 * s * tid < blockDim.x`, `tid < s`)
lets half as many warps through at each step until one warp is left, which runs every later step; a warp none of
whose lanes passes the guard issues nothing of the body. `storeSum`'s `tid == 0` block runs in one warp of the
block. The kerncast model charges the body's issue for that share of the warps only. The compile is the session's
cached one of the example (the same the time-model tests use).
"""
from __future__ import annotations

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx


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
