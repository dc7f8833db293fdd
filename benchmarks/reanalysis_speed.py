"""Milliseconds per pipeline step of a full re-analysis: an editor save after which every kernel is analysed again.

The language server keeps a kernel cache, so a save re-analyses only the kernels whose key changed, and a kernel
that an edit above it only moved is shifted from its previous report (`kernel_shift`), not analysed again. This
script measures the case where every kernel is analysed again, on `benchmarks/data/kernels20.cu` (20 kernels):
it compiles N+1 copies of the file, each a file of its own with a different number of comment lines in front (so
that no kernel, parsed function or ptxas result is reused or shifted from the copy before), warms one cache on
the first and times the others through `_analyze_ptx` with that cache, as the server's save path runs them,
with the cyclic garbage collector paused as the server pauses it from an analysis to its publication. nvcc is
not timed (it runs before the analysis); ptxas's numbers come from the cache, because a moved kernel's PTX
text, without its line table, is unchanged.

Prints the mean milliseconds of each stage and of the parse, context, cache-key and power-batch steps over the
N analyses, then the median and minimum total.

    .venv/bin/python benchmarks/reanalysis_speed.py [--runs 14] [--file benchmarks/data/kernels20.cu]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerncast.analysis import pipeline as P
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.report import FileReport

ROOT = Path(__file__).resolve().parent.parent
#: the pipeline's module-level steps besides the per-kernel stages
STEPS = ("parse_ptx", "_look_up", "finish_power", "_kernel_context", "start_ptxas_cached")


def _timed(fn: Callable[..., Any], name: str, totals: dict[str, float]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[name] += time.perf_counter() - start

    run.__name__ = name
    return run


def _analyse(copies: list[tuple[str, str]], source: Path, options: P.AnalysisOptions
             ) -> tuple[dict[str, float], list[float]]:
    """Analyse every copy through one cache, timing each step; (seconds per step over all but the first copy,
    wall seconds of each of those analyses)."""
    totals: dict[str, float] = defaultdict(float)
    saved = {name: getattr(P, name) for name in STEPS}
    stages = list(P.STAGES)
    walls: list[float] = []
    try:
        for name, fn in saved.items():
            setattr(P, name, _timed(fn, name, totals))
        P.STAGES[:] = [_timed(stage, stage.__name__, totals) for stage in stages]
        cache = KernelCache()
        for i, (shifted, ptx) in enumerate(copies):
            if i == 1:
                totals.clear()  # the first copy warms the cache and the loaded models
            gc.collect()  # the server collects after publishing and pauses collection during an analysis
            gc.disable()
            start = time.perf_counter()
            try:
                P._analyze_ptx(FileReport(file=str(source), gpu=options.gpu, arch=options.arch), ptx,  # noqa: SLF001
                               options, shifted, cache)
            finally:
                gc.enable()
            if i:
                walls.append(time.perf_counter() - start)
    finally:
        for name, fn in saved.items():
            setattr(P, name, fn)
        P.STAGES[:] = stages
    return totals, walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=14)
    parser.add_argument("--file", type=Path, default=ROOT / "benchmarks" / "data" / "kernels20.cu")
    args = parser.parse_args()
    source = args.file.resolve()
    text = source.read_text()
    options = P.AnalysisOptions(lime=False)
    report = FileReport(file=str(source), gpu=options.gpu, arch=options.arch)
    options = P._with_target(report, P._with_toolkit(report, options), [])  # noqa: SLF001 - as analyze_file
    with tempfile.TemporaryDirectory(prefix="kerncast-reanalysis-") as tmp:  # kept while the copies are analysed
        copies: list[tuple[str, str]] = []
        for i in range(args.runs + 1):
            shifted = "// moved\n" * (i + 1) + text
            path = Path(tmp) / f"copy{i}.cu"
            path.write_text(shifted)
            result = compile_cuda(path, options=CompileOptions(arch=options.arch or ""), with_resources=False)
            if result.ptx is None:
                raise SystemExit(f"{source.name} did not compile: {result.diagnostics[:1]}")
            copies.append((shifted, result.ptx))
        totals, walls = _analyse(copies, source, options)
    runs = len(walls)
    for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"{name:22s} {seconds / runs * 1e3:7.2f} ms")
    print(f"total: median {statistics.median(walls) * 1e3:.1f} ms, min {min(walls) * 1e3:.1f} ms over {runs} "
          f"re-analyses of {source.name}")


if __name__ == "__main__":
    main()
