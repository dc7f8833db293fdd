"""Cost of the estimated gains: per kernel, the gain stage's time (one time-model run per uncoalesced access or
bank conflict) beside the time stage's own, over the examples and the planted kernels. The memory analysis is
not run again by the gains, so their cost should stay about the time stage's times the number of gains.

    .venv/bin/python benchmarks/gain_cost.py [FILE.cu ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from kerncast.analysis import pipeline
from kerncast.analysis.context import KernelContext
from kerncast.analysis.stages.gains import gain_stage
from kerncast.analysis.stages.time import time_stage

ROOT = Path(__file__).resolve().parent.parent


def _timed(stage: Callable[[KernelContext], None], into: dict[str, float]) -> Callable[[KernelContext], None]:
    """`stage`, recording its seconds per kernel under the kernel's name."""
    def run(ctx: KernelContext) -> None:
        start = time.perf_counter()
        stage(ctx)
        into[ctx.report.name] = into.get(ctx.report.name, 0.0) + time.perf_counter() - start
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    files = args.files or sorted((ROOT / "examples").glob("*.cu")) + sorted((ROOT / "tests" / "kernels").glob("*.cu"))
    times: dict[str, float] = {}
    gains: dict[str, float] = {}
    stages = pipeline.STAGES
    stages[stages.index(time_stage)] = _timed(time_stage, times)
    stages[stages.index(gain_stage)] = _timed(gain_stage, gains)
    ratios = []
    print(f"{'file':<22} {'kernel':<24} {'gains':>5} {'time stage ms':>14} {'gain stage ms':>14}")
    for path in files:
        times.clear()
        gains.clear()
        report = pipeline.analyze_file(path)
        for k in report.kernels:
            n = sum(1 for f in k.findings if "gain" in f.detail)
            t, g = times.get(k.name, 0.0) * 1e3, gains.get(k.name, 0.0) * 1e3
            if n:
                ratios.append(g / n / t if t else 0.0)
                print(f"{path.name:<22} {k.name[:24]:<24} {n:>5} {t:>14.1f} {g:>14.1f}")
    if ratios:
        print(f"gain stage per gain / time stage: median {statistics.median(ratios):.2f}, "
              f"max {max(ratios):.2f} over {len(ratios)} kernels with gains")


if __name__ == "__main__":
    main()
