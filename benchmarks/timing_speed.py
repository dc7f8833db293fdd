"""Time the time prediction: every example kernel, and the first looping one at up to 10^6 blocks and 10^4 iterations.

Prediction (the kerncast model with its distinct-bytes footprint, the thesis scheduler + penalties, MWP-CWP and
the roofline) must stay in milliseconds and must not grow with the grid size or the trip count: identical waves
and loop bodies are scheduled once and multiplied, footprints are closed forms over the index ranges. Prints
the median time per prediction over several runs (parse, CFG, memory analysis and compilation are not timed).

    .venv/bin/python benchmarks/timing_speed.py [--gpu k20] [--repeat 7]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, ToolchainError, compile_cuda
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory.analysis import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.timing import predict_time
from timer import median_ms

ROOT = Path(__file__).resolve().parent.parent

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
    kernels = _kernels()
    for name, fn, module in kernels:
        cfg = build_cfg(fn)
        loops = find_loops(cfg)
        mem = _memory(module, fn, cfg, loops, (256, 1, 1), {})
        ms = median_ms(lambda cfg=cfg, loops=loops, mem=mem: predict_time(
            cfg, loops, profile, blocks=4096, threads_per_block=256, memory=mem), args.repeat)
        print(f"  {name:60s} {len(fn.body):5d} instructions  {ms:7.2f} ms")
    looped = [(name, fn, module) for name, fn, module in kernels if find_loops(build_cfg(fn)).loops]
    if not looped:
        print("no example kernel with a loop: the launch and trip-count scaling is not measured")
        return 0
    name, fn, module = looped[0]
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    header = loops.loops[0].header
    print(f"{name}, its first loop's trip count set:")
    rows = []
    for blocks, trips in ((13, 1), (10**6, 1), (13, 10**4), (10**6, 10**4)):
        mem = _memory(module, fn, cfg, loops, (256, 1, 1), {header: trips})
        ms = median_ms(lambda b=blocks, t=trips, mem=mem: predict_time(
            cfg, loops, profile, blocks=b, threads_per_block=256, trips={header: t}, memory=mem), args.repeat)
        est = predict_time(cfg, loops, profile, blocks=blocks, threads_per_block=256, trips={header: trips},
                           memory=mem)
        rows.append(ms)
        print(f"  {blocks:>8d} blocks x 256 threads, {trips:>6d} iterations: {ms:6.2f} ms "
              f"(kerncast {est.us:,.1f} us, range {est.range_us[0]:,.1f}-{est.range_us[1]:,.1f} us, "
              f"{est.waves} waves)")
    growth = max(rows) / min(rows)
    print(f"largest / smallest prediction time across those launches: {growth:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
