"""`kerncast compare REPORT SOURCE.cu`: an Nsight Compute report of the user's kernels against the predictions.

Each profiled launch is matched by name to a kernel of the source, the source is analysed with that launch's
grid and block (once per distinct shape), and measured and predicted duration, occupancy, DRAM bytes, sectors
per request and registers are printed side by side, with the findings Nsight Compute's metrics confirm.
`--calibrate OUT.toml` writes a GPU profile whose device and limits sections come from the report instead.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from kerncast.analysis import gpus
from kerncast.analysis.calibration.compare import KernelComparison, Quantity, compare, profile_from_report
from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.calibration.ncu import NcuKernel, NcuReportError, read_report
from kerncast.analysis.calibration.profile_writer import profile_id, write_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import KernelReport
from kerncast.analysis.strict_json import dumps_strict
from kerncast.analysis.targets import default_gpu
from kerncast.server.cmd_analyze import add_toolchain_arguments, options_from_args
from kerncast.server.units import fmt_time

#: distinct launch shapes analysed at most (each is one analysis of the source)
MAX_SHAPES = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", type=Path, help="Nsight Compute report: .ncu-rep, or an `ncu --csv` export")
    parser.add_argument("source", nargs="?", type=Path, help="the CUDA source of the profiled kernels (.cu)")
    gpu = default_gpu(AnalysisOptions().gpu)
    add_toolchain_arguments(parser, f"GPU profile to predict with (default {gpu})")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="value of a kernel parameter, as in `analyze` (repeatable)")
    parser.add_argument("--loops", type=int, default=None, metavar="N",
                        help="trip count for loops whose count cannot be found statically")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--calibrate", type=Path, metavar="OUT.toml",
                        help="write a GPU profile with the report's device attributes and clocks (no comparison)")
    parser.add_argument("--base", help="profile supplying what the report does not hold (default: --gpu)")
    parser.add_argument("--id", dest="profile_id", help="id of the written profile (default: from the GPU name)")


def run(args: argparse.Namespace) -> int:
    try:
        launches = read_report(args.report)
    except (NcuReportError, OSError) as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    if args.calibrate is not None:
        return _calibrate(args, launches)
    if args.source is None:
        print("kerncast: compare needs the CUDA source of the profiled kernels (or --calibrate OUT.toml)",
              file=sys.stderr)
        return 2
    try:
        options = _options(args)
    except ValueError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    try:
        results, errors = _compare_all(args.source, launches, options, list(args.param))
    except ValueError as exc:  # a malformed --param
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    for message in errors:
        print(f"kerncast: {message}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(dumps_strict({"report": str(args.report), "source": str(args.source), "gpu": options.gpu,
                                       "kernels": [r.to_json() for r in results]}) + "\n")
    else:
        sys.stdout.write(render(results))
    return 1 if errors or not any(r.kernel for r in results) else 0


def _options(args: argparse.Namespace) -> AnalysisOptions:
    """`analyze`'s options from the same flags (each launch's grid and block come from the report)."""
    return options_from_args(argparse.Namespace(**vars(args), grid=None, block=None, smem=None))


def _compare_all(source: Path, launches: list[NcuKernel], options: AnalysisOptions,
                 params: list[str] | None = None) -> tuple[list[KernelComparison], list[str]]:
    """Every launch compared; the source analysed once per distinct (grid, block)."""
    reports: dict[tuple, list[KernelReport]] = {}
    results: list[KernelComparison] = []
    errors: list[str] = []
    for launch in launches:
        shape = (launch.grid, launch.block)
        if shape not in reports:
            if len(reports) >= MAX_SHAPES:
                errors.append(f"more than {MAX_SHAPES} launch shapes in the report; the rest are not compared")
                break
            overrides = LaunchOverrides.from_strings(grid=",".join(map(str, launch.grid)),
                                                     block=",".join(map(str, launch.block)), loops=options.loops,
                                                     params=list(params or ()), source="cli")
            file_report = analyze_file(source, options=replace(options, overrides=overrides))
            if not file_report.ok:
                errors.extend(f"{source}:{f.line}: {f.message}" for f in file_report.findings
                              if f.severity == "error")
                return results, errors
            reports[shape] = file_report.kernels
        results.append(compare(launch, reports[shape]))
    unmatched = sorted({r.launch.name for r in results if r.kernel is None})
    if unmatched:
        errors.append(f"no kernel of {source.name} matches " + ", ".join(unmatched))
    return results, errors


def _value(q: Quantity, value: float | None) -> str:
    if value is None:
        return "-"
    if q.unit == "us":
        return fmt_time(value) or "-"
    if q.unit == "byte":
        return f"{value / 1e6:.3g} MB" if value >= 1e5 else f"{value:,.0f} B"
    if q.unit == "%":
        return f"{value:.1f} %"
    return f"{value:.3g}"


def render(results: list[KernelComparison]) -> str:
    """Text report: one block per profiled launch."""
    lines: list[str] = []
    for r in results:
        shape = f"grid {'x'.join(map(str, r.launch.grid))}, block {'x'.join(map(str, r.launch.block))}"
        if r.kernel is None:
            lines.append(f"[{r.launch.id}] {r.launch.name} ({shape}): no kernel of the source has this name")
            continue
        lines.append(f"[{r.launch.id}] {r.kernel.name} ({shape}; matched by {r.matched_by})")
        lines.append(f"    {'':34}{'measured':>12}{'predicted':>12}{'pred/meas':>11}")
        for q in r.quantities:
            ratio = f"{q.ratio:.2f}x" if q.ratio is not None else ""
            note = f"  {q.note}" if q.note else ""
            lines.append(f"    {q.name:34}{_value(q, q.measured):>12}{_value(q, q.predicted):>12}{ratio:>11}{note}")
        for c in r.confirmations:
            lines.append(f"    finding {c.code} (line {c.line}): {c.verdict} by Nsight Compute ({c.evidence})")
        if not r.confirmations:
            lines.append("    no finding that an Nsight Compute metric can confirm")
        lines.append("")
    return "\n".join(lines)


def _calibrate(args: argparse.Namespace, launches: list[NcuKernel]) -> int:
    try:
        base = gpus.load_profile(args.base or args.gpu)
        profile, taken = profile_from_report(launches, base, args.report.name)
        profile = replace(profile, id=args.profile_id or profile_id(profile.name))
        text = write_profile(profile)
    except (ValueError, gpus.ProfileError, CalibrationError) as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    args.calibrate.write_text(text, encoding="utf-8")
    print(f"wrote {args.calibrate}: {len(taken)} values from {args.report.name} ({', '.join(taken)}); "
          f"the rest from the {base.id} profile")
    return 0


