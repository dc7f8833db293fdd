"""Time the time prediction: every example kernel, a 10^6-block launch and a 10^4-iteration loop.

Prediction (the kerncast model with its distinct-bytes footprint, the thesis scheduler + penalties, MWP-CWP and
the roofline) must stay in milliseconds and must not grow with the grid size or the trip count: identical waves
and loop bodies are scheduled once and multiplied, footprints are closed forms over the index ranges. Prints
the median time per prediction over several runs (parse, CFG, memory analysis and compilation are not timed).

    .venv/bin/python benchmarks/timing_speed.py [--gpu k20] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, ToolchainError, compile_cuda
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory.analysis import analyze_memory
from kerncast.analysis.pipeline import Thresholds
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.timing import predict_time

ROOT = Path(__file__).resolve().parent.parent

LOOP_PTX = """.version 7.0
.target sm_70
.address_size 64
.visible .entry accum(.param .u64 pa)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [pa];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 0;
    mov.f32 %f1, 0f00000000;
$L_loop:
    ld.global.f32 %f2, [%rd2];
    fma.rn.f32 %f1, %f2, %f2, %f1;
    add.s32 %r1, %r1, 1;
    setp.lt.s32 %p1, %r1, 10000;
    @%p1 bra $L_loop;
    st.global.f32 [%rd2], %f1;
    ret;
}
"""


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _memory(module, fn, cfg, loops, block: tuple[int, int, int], trips: dict[int, int]):
    """The memory analysis the kerncast model's footprint reads (computed once, not timed)."""
    return analyze_memory(module, fn, cfg, loops, block, {}, trips, Thresholds())


def _kernels() -> list[tuple[str, object, object]]:
    out = []
    for cu in sorted((ROOT / "examples").glob("*.cu")):
        try:
            result = compile_cuda(cu, options=CompileOptions(arch="sm_75"))
        except ToolchainError as exc:
            print(f"skipping the example kernels: no CUDA toolchain ({exc})")
            return []
        if not result.ok or result.ptx is None:
            print(f"skipping {cu.name}: it did not compile")
            continue
        module = parse_ptx(result.ptx)
        for fn in module.kernels:
            out.append((f"{cu.stem}:{fn.display_name}", fn, module))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="k20")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    profile = load_profile(args.gpu)
    print(f"GPU profile {profile.id}; median of {args.repeat} runs per prediction")
    for name, fn, module in _kernels():
        cfg = build_cfg(fn)
        loops = find_loops(cfg)
        mem = _memory(module, fn, cfg, loops, (256, 1, 1), {})
        ms = _median_ms(lambda cfg=cfg, loops=loops, mem=mem: predict_time(
            cfg, loops, profile, blocks=4096, threads_per_block=256, memory=mem), args.repeat)
        print(f"  {name:60s} {len(fn.body):5d} instructions  {ms:7.2f} ms")
    module = parse_ptx(LOOP_PTX)
    fn = module.kernels[0]
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    header = loops.loops[0].header
    rows = []
    for blocks, trips in ((13, 1), (10**6, 1), (13, 10**4), (10**6, 10**4)):
        mem = _memory(module, fn, cfg, loops, (256, 1, 1), {header: trips})
        ms = _median_ms(lambda b=blocks, t=trips, mem=mem: predict_time(
            cfg, loops, profile, blocks=b, threads_per_block=256, trips={header: t}, memory=mem), args.repeat)
        est = predict_time(cfg, loops, profile, blocks=blocks, threads_per_block=256, trips={header: trips},
                           memory=mem)
        rows.append(ms)
        print(f"  loop kernel, {blocks:>8d} blocks x 256 threads, {trips:>6d} iterations: {ms:6.2f} ms "
              f"(kerncast {est.us:,.1f} us, range {est.range_us[0]:,.1f}-{est.range_us[1]:,.1f} us, "
              f"{est.waves} waves)")
    growth = max(rows) / min(rows)
    print(f"largest / smallest prediction time across those launches: {growth:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
