"""Analysis time per kernel, every stage, on the examples and the memory corpus (nvcc and ptxas excluded).

Each `.cu` is compiled once and ptxas run once (neither is timed); then every kernel goes through every
pipeline stage (structure, launch, memory, resources, occupancy, time, power, resource findings) as
`analyze_file` runs them in the editor's save path, the cheapest of a few rounds over all files: without the
power model's explanation (its exact contributions and LIME weights), which the editor works out when a hover
asks for it. Prints per kernel the milliseconds, then the median and 95th percentile over all kernels (targets:
≤ 5 ms and ≤ 20 ms), the median per stage, and the median cost of a kernel's exact power contributions when a
hover first asks.

    .venv/bin/python benchmarks/analysis_speed.py [--repeat 5] [--cpu] [--time-model MODEL] [files...]

`--time-model` times the analysis with that model chosen (the trace model runs only when chosen; its targets
are a median <= 100 ms and a worst <= 1 s per kernel); the time stage's median and maximum are printed too.

The garbage collector runs as in a `kerncast` process (`analysis/collector.py`: a generation-0 collection every
GEN0_THRESHOLD container allocations, not CPython's 700).

`--cpu` measures this process's CPU time instead of wall time: on a shared, busy machine wall time counts the
time other processes held the cores.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import sys
import time
from collections import defaultdict
from concurrent.futures import Future
from pathlib import Path

from kerncast.analysis import pipeline as P
from kerncast.analysis.collector import GEN0_THRESHOLD, tune_collector
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.findings.gpu_profile import load_gpu
from kerncast.analysis.power.model import explanation_of
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.source_model import FileScans
from kerncast.analysis.targets import resolve_target
from kerncast.analysis.timing.estimate import TIME_MODELS

ROOT = Path(__file__).resolve().parent.parent
#: the stage key of the explanation a hover asks for (timed, not part of the save path's total)
ON_HOVER = "explanation_on_hover"


def _done(value: object) -> Future:
    fut: Future = Future()
    fut.set_result(value)
    return fut


@dataclasses.dataclass
class Prepared:
    """One `.cu` file compiled and run through ptxas (neither timed), ready for timed rounds."""

    path: Path
    source: str
    ptx: str
    options: P.AnalysisOptions
    resources: Future


def prepare(path: Path, time_model: str = "kerncast") -> Prepared | None:
    """Compile `path` once and run ptxas once, as the analysis would (untimed); None where it does not compile."""
    options = P.AnalysisOptions(lime=False, power_explanation=False, time_model=time_model)
    target = resolve_target(options.arch, [], options.gpu, options.nvcc_path)  # the arch analyze would use
    options = dataclasses.replace(options, arch=target.arch)
    result = compile_cuda(path, options=CompileOptions(arch=options.arch), with_resources=False)
    if result.ptx is None:
        print(f"{path.name}: did not compile", file=sys.stderr)
        return None
    resources = _done(P._ptxas_resources(result.ptx, options))  # noqa: SLF001 - ptxas once, untimed
    return Prepared(path, path.read_text(), result.ptx, options, resources)


def one_round(item: Prepared, clock=time.perf_counter) -> list[tuple[str, dict[str, float]]]:
    """(kernel, seconds per stage) for every kernel of one file, analysed once as `analyze_file` does.

    The stages run per kernel; the file's batched power prediction (`finish_power`) runs once for all its
    kernels, as in `analyze_file`, and each kernel is charged an equal share of it.
    """
    path, options = item.path, item.options
    gpu, _ = load_gpu(options.gpu)
    scans = _scanned(item)
    module = parse_ptx(item.ptx, str(path))
    main_file = P._main_file(module, str(path))  # noqa: SLF001
    names = P._display_names(module)  # noqa: SLF001
    contexts, rows = [], []
    for fn in module.kernels:
        fn.demangled = names.get(fn.name, fn.name)
        start = clock()
        ctx = P._kernel_context(module, fn, options, item.source, main_file, item.resources)  # noqa: SLF001
        ctx.gpu = gpu
        ctx.source_path = str(path)
        ctx.scans = scans
        stages = {"cfg": clock() - start}
        for stage in P.STAGES:
            t0 = clock()
            stage(ctx)
            stages[stage.__name__] = clock() - t0
        contexts.append(ctx)
        rows.append((fn.display_name, stages))
    t0 = clock()
    P.finish_power(contexts)
    share = (clock() - t0) / max(1, len(contexts))
    for ctx, (_, stages) in zip(contexts, rows, strict=True):
        stages["finish_power"] = share
        stages[ON_HOVER] = _explanation_cost(ctx, clock)
    return rows


def _scanned(item: Prepared) -> FileScans:
    """The file's source scan, made untimed as `analyze_file` makes it while nvcc runs (the launch stage and the
    kernels' first lines then find it done). Made again each round: the scans are cached by text for a few
    files only, and a save of an edited file finds no scan of its new text."""
    scans = FileScans()
    with contextlib.suppress(Exception):  # a scan that fails fails again in the launch stage, timed there
        scans.scan(item.source, str(item.path), list(item.options.include_dirs))
    return scans


def kernel_times(items: list[Prepared], repeat: int,
                 clock=time.perf_counter) -> list[tuple[str, float, dict[str, float]]]:
    """(file:kernel, best total ms, ms per stage of that run) for every kernel of the prepared files.

    The files are analysed in `repeat` rounds, each round every file once, and each kernel keeps its cheapest
    round: a shared machine that runs slower for a while (other tenants, clock changes) then slows one round
    of every kernel rather than every round of some kernels, and the minimum is the cost of the code itself,
    as `timeit` takes it.
    """
    runs = [[one_round(item, clock) for item in items] for _ in range(repeat)]
    out = []
    for f, item in enumerate(items):
        for index in range(len(runs[0][f])):
            name, stages = min((run[f][index] for run in runs), key=lambda r: _save_path(r[1]))
            out.append((f"{item.path.name}:{name}", _save_path(stages) * 1e3,
                        {k: v * 1e3 for k, v in stages.items()}))
    return out


def _save_path(stages: dict[str, float]) -> float:
    """The seconds of the save path: every stage but the explanation a hover asks for later."""
    return sum(v for k, v in stages.items() if k != ON_HOVER)


def _explanation_cost(ctx: P.KernelContext, clock) -> float:
    """Seconds to work out the kernel's exact power contributions as the first hover on it does (LIME, which a
    hover adds too, left out: it is the same on every path), 0 for a kernel without a power prediction."""
    power = ctx.report.power
    if power is None or not power.explanation_incomplete():
        return 0.0
    t0 = clock()
    explanation_of(power.features, power.gpu, False)
    return clock() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5,
                        help="rounds over all files; each kernel keeps its cheapest (default 5)")
    parser.add_argument("--cpu", action="store_true", help="measure CPU time, not wall time")
    parser.add_argument("--time-model", choices=tuple(TIME_MODELS), default="kerncast",
                        help="the time model the analysis runs (default kerncast)")
    args = parser.parse_args()
    tune_collector()  # as every `kerncast` command does (analysis/collector.py)
    clock = time.process_time if args.cpu else time.perf_counter
    files = args.files or sorted([*ROOT.glob("examples/*.cu"), *ROOT.glob("tests/kernels/*.cu")])
    items = [item for f in files if (item := prepare(f, args.time_model)) is not None]
    rows = kernel_times(items, args.repeat, clock)
    per_stage: dict[str, list[float]] = defaultdict(list)
    print(f"{'kernel':<52} {'ms':>8}")
    for name, ms, stages in rows:
        print(f"{name:<52.52} {ms:>8.2f}")
        for k, v in stages.items():
            per_stage[k].append(v)
    if not rows:
        return 1
    totals = sorted(ms for _, ms, _ in rows)
    p95 = totals[min(len(totals) - 1, round(0.95 * (len(totals) - 1)))]
    kind = "CPU" if args.cpu else "wall"
    print(f"\n{kind} time, {len(rows)} kernels: median {statistics.median(totals):.2f} ms (target <= 5), "
          f"p95 {p95:.2f} ms (target <= 20), max {totals[-1]:.2f} ms")
    timed = sorted(stages.get("time_stage", 0.0) for _, _, stages in rows)
    print(f"time stage ({args.time_model} model): median {statistics.median(timed):.2f} ms, max {timed[-1]:.2f} ms")
    hover = per_stage.pop(ON_HOVER, [0.0])
    print("median per stage: " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in per_stage.items()))
    print(f"garbage collector: a generation-0 collection every {GEN0_THRESHOLD} container allocations, as in a "
          "kerncast process")
    print(f"power explanation when a hover first asks (exact contributions, not in the totals above): median "
          f"{statistics.median(hover):.2f} ms per kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
