"""`kerncast analyze PATH...`: the whole analysis of files and directories, as text (for people), JSON or SARIF.

One file is analysed in this process and printed as it always was. Several files, or a directory, are
analysed in a process pool (`server.analyze_many`) and printed as one report.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import POWER_MODELS, AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.strict_json import dumps_strict
from kerncast.analysis.targets import default_gpu
from kerncast.analysis.timing.estimate import TIME_MODELS
from kerncast.analysis.toolchain import (
    COMPILE_SLOTS,
    DEFAULT_COMPILE_MEMORY_MB,
    MIN_COMPILE_MEMORY_MB,
    check_define,
    check_include_dir,
    check_memory_mb,
    check_timeout,
    default_compile_memory_mb,
    resume_tools,
    stop_tools,
)
from kerncast.server import analyze_many as many
from kerncast.server import multi_gpu
from kerncast.server.apply_fixes import fix_files
from kerncast.server.render_text import render_file_report
from kerncast.server.sarif import to_sarif


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="CUDA C++ (.cu, .cuh) or PTX (.ptx) files, or directories to search for them")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="worker processes for several files; default the number of cores")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files (and directories) matching this glob (repeatable)")
    parser.add_argument("--lime", action="store_true",
                        help="add LIME weights to power explanations (slower; the exact contributions are "
                             "always there)")
    defaults = AnalysisOptions()
    gpu = default_gpu(defaults.gpu)
    add_toolchain_arguments(parser, f"GPU profile id (see `kerncast gpus`); default {gpu} (this machine's GPU when "
                                    f"NVML finds one with a profile, else {defaults.gpu})")
    parser.add_argument("--budget", type=float, default=defaults.budget_s, metavar="SECONDS",
                        help=f"time budget of the memory analysis per kernel; default {defaults.budget_s:g}")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="output format")
    add_fix_arguments(parser)
    add_time_model_argument(parser)
    add_launch_arguments(parser)


def add_toolchain_arguments(parser: argparse.ArgumentParser, gpu_help: str) -> None:
    """The GPU and the compiler's flags, one definition for every command that compiles a file (`analyze`,
    `report`, `diff`), so that each takes the same flags with the same defaults."""
    defaults = AnalysisOptions()
    parser.add_argument("--gpu", default=default_gpu(defaults.gpu), help=gpu_help)
    parser.add_argument("--arch", default=None,
                        help="nvcc/ptxas target, e.g. sm_80; default: the project's compile_commands.json, else "
                             "the GPU profile's architecture (h100 -> sm_90)")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="extra include directory for nvcc (repeatable)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                        help="preprocessor definition for nvcc (repeatable)")
    parser.add_argument("--nvcc", dest="nvcc_path", default=None, help="path of the nvcc to use")
    parser.add_argument("--prefer-system-cuda", action="store_true",
                        help="use the installed CUDA toolkit (CUDA_HOME, /usr/local/cuda) before the pip wheels")
    parser.add_argument("--timeout", type=float, default=defaults.timeout_s,
                        help=f"seconds allowed for nvcc; default {defaults.timeout_s:g}")
    parser.add_argument("--compile-memory-mb", dest="compile_memory_mb", type=int, default=None, metavar="MIB",
                        help="memory of all the compiles that run at once, in MiB: each of the "
                             f"{COMPILE_SLOTS} a process runs at once (x the -j workers of analyze) gets an equal "
                             f"share as address space; default {default_compile_memory_mb()} "
                             f"(min({DEFAULT_COMPILE_MEMORY_MB}, half this machine's memory))")


def add_fix_arguments(parser: argparse.ArgumentParser) -> None:
    """`--fix`, `--unsafe-fixes`, `--diff`: apply quick fixes from the command line, each checked first."""
    group = parser.add_argument_group("fixes (each one kept only when a new compile and analysis confirm it)")
    group.add_argument("--fix", action="store_true",
                       help="apply each finding's safe fix to the .cu files, then report on the fixed files")
    group.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff, apply unsafe fixes too (review them: which thread does what "
                            "changes)")
    group.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff instead of writing them (no report)")


def add_time_model_argument(parser: argparse.ArgumentParser) -> None:
    """`--time-model`: which model's prediction is the kernel's time (the others are shown beside it)."""
    parser.add_argument("--time-model", dest="time_model", choices=tuple(TIME_MODELS),
                        default=AnalysisOptions().time_model,
                        help="time model: kerncast (default: pipelined units, overlapped waves, DRAM floor), "
                             "thesis (the thesis's scheduler as printed), mwp-cwp (Hong & Kim) or trace "
                             "(per-warp traces through a warp-pipeline simulation)")
    parser.add_argument("--power-model", dest="power_model", choices=POWER_MODELS,
                        default=AnalysisOptions().power_model,
                        help="power model shown: auto (default: the event model on every GPU), statistical or "
                             "events; both are in the JSON")


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    """Launch flags shared by every command that predicts: they apply to every kernel of the file."""
    group = parser.add_argument_group("launch configuration (applies to every kernel of the file)")
    group.add_argument("--grid", default=None, metavar="X[,Y[,Z]]", help="grid size in blocks")
    group.add_argument("--block", default=None, metavar="X[,Y[,Z]]", help="block size in threads")
    group.add_argument("--smem", type=int, default=None, metavar="BYTES", help="dynamic shared memory per block")
    group.add_argument("--loops", type=int, default=None, metavar="N",
                       help="trip count for loops whose count cannot be found statically")
    group.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                       help="value of a kernel parameter, by source name or 0-based index (repeatable)")


def launch_overrides(args: argparse.Namespace) -> Any:
    """The `LaunchOverrides` for the launch flags, or None when no flag was given (ValueError on a bad flag)."""
    if not (args.grid or args.block or args.smem is not None or args.loops is not None or args.param):
        return None

    return LaunchOverrides.from_strings(grid=args.grid, block=args.block, smem=args.smem, loops=args.loops,
                                        params=list(args.param), source="cli")


def options_from_args(args: argparse.Namespace) -> AnalysisOptions:
    """Analysis options from the command line (ValueError names a define, path or timeout that is refused)."""
    for define in args.defines:
        check_define(define)
    for directory in args.include_dirs:
        check_include_dir(directory)
    check_timeout(args.timeout)
    memory_mb = getattr(args, "compile_memory_mb", None)
    if memory_mb is not None:
        check_memory_mb(memory_mb)
    return AnalysisOptions(
        gpu=args.gpu, arch=args.arch, include_dirs=list(args.include_dirs), defines=list(args.defines),
        nvcc_path=args.nvcc_path, timeout_s=args.timeout, overrides=launch_overrides(args), loops=args.loops,
        time_model=getattr(args, "time_model", None) or AnalysisOptions().time_model,
        power_model=getattr(args, "power_model", None) or AnalysisOptions().power_model,
        lime=bool(getattr(args, "lime", False)), budget_s=getattr(args, "budget", AnalysisOptions().budget_s),
        prefer_system_toolkit=bool(getattr(args, "prefer_system_cuda", False)), compile_memory_mb=memory_mb,
    )


def format_report(report: Any, fmt: str) -> str:
    """The report as `fmt` ("text", "json" or "sarif"); JSON and SARIF are strict (no NaN or Infinity)."""
    if fmt == "json":
        return dumps_strict(report.to_json()) + "\n"
    if fmt == "sarif":
        return dumps_strict(to_sarif(report), in_properties=True) + "\n"
    return render_file_report(report)


#: Kerncast's own code: a stop request raises SystemExit only while this code runs, never inside the standard
#: library or a dependency, where it could leave a lock held (logging's, a pool's) or a child half started
_OWN_CODE = tuple(str(Path(__file__).resolve().parent.parent / name) + os.sep for name in ("analysis", "server"))
#: how soon a stop request that came at an unsafe moment is tried again
_RETRY_S = 0.05


def _interruptible(frame: FrameType | None) -> bool:
    """Whether the main thread was interrupted in Kerncast's own code (an exception there unwinds through its
    `with` and `finally` blocks) rather than in a library it called."""
    return frame is not None and frame.f_code.co_filename.startswith(_OWN_CODE)


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl-C does, through every `finally`: the compiler's process group is killed
    and the temporary folders are removed, instead of the process vanishing and leaving both behind.

    The handler kills every running compiler at once (those worker threads wait on too, which would otherwise
    hold the exit) and raises SystemExit only where the main thread runs Kerncast's code; interrupted inside a
    library (logging's lock, a pool's shutdown, a temporary folder's removal) it tries again 50 ms later, and
    every later compile raises it, so the command stops within a compile's start either way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    status: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        if not status:
            status.append(128 + signum)
            stop_tools(status[0])
        retry(signum, frame)

    def retry(_signum: int, frame: FrameType | None) -> None:
        if _interruptible(frame):
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise SystemExit(status[0])
        signal.setitimer(signal.ITIMER_REAL, _RETRY_S)

    previous = signal.signal(signal.SIGTERM, stop)
    previous_alarm = signal.signal(signal.SIGALRM, retry)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_alarm)
        signal.signal(signal.SIGTERM, previous)
        resume_tools()
    if status:  # asked to stop at an unsafe moment, and the command ended before a safe one came
        raise SystemExit(status[0])


def run(args: argparse.Namespace) -> int:
    with _sigterm_exits():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        options = options_from_args(args)
    except ValueError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    if "," in args.gpu:  # several GPUs side by side
        return multi_gpu.run_analyze(args, options)
    if args.jobs is not None and args.jobs < 1:
        print("kerncast: -j needs at least 1 worker", file=sys.stderr)
        return 2
    fixed, checked = 0, dict[str, FileReport]()
    if args.fix or args.diff:
        fixed = fix_files(many.collect_files(list(args.paths), list(args.exclude)), options, args.unsafe_fixes,
                          args.diff, checked)
        if args.diff:
            return fixed
    elif args.unsafe_fixes:
        print("kerncast: --unsafe-fixes goes with --fix or --diff", file=sys.stderr)
        return 2
    if len(args.paths) == 1 and not os.path.isdir(args.paths[0]):
        return max(fixed, _run_one(args.paths[0], options, args.format, checked.get(args.paths[0])))
    return max(fixed, _run_many(args, options))


def _run_one(path: str, options: AnalysisOptions, fmt: str, report: FileReport | None = None) -> int:
    """One file, in this process, printed exactly as `kerncast analyze FILE` always printed it; `report` is its
    analysis when `--fix` has just made it (the check of the last fix kept), so it is not analysed again."""
    report = report if report is not None else analyze_file(path, options=options)
    sys.stdout.write(format_report(report, fmt))
    if not report.ok:
        for f in report.findings:
            if f.severity == "error":
                print(f"{report.file}:{f.line}:{f.column}: error: {f.message}", file=sys.stderr)
        return 1
    return 0


def _share_memory(jobs: int, options: AnalysisOptions) -> tuple[int, AnalysisOptions]:
    """The workers and each one's compile memory limit: the limit holds for all of them together, so each gets
    an equal share, and no more workers run than have at least MIN_COMPILE_MEMORY_MB each."""
    if jobs <= 1:
        return jobs, options
    budget = options.compile_memory_mb or default_compile_memory_mb()
    most = max(1, budget // MIN_COMPILE_MEMORY_MB)
    if jobs > most:
        print(f"kerncast: {most} workers instead of {jobs}: each needs {MIN_COMPILE_MEMORY_MB} MiB of the "
              f"{budget} MiB compile memory limit (--compile-memory-mb)", file=sys.stderr)
        jobs = most
    return jobs, replace(options, compile_memory_mb=budget // jobs)


def _run_many(args: argparse.Namespace, options: AnalysisOptions) -> int:
    """Many files (or directories) in a process pool, printed as one report; 1 when any file has an error."""
    files = many.collect_files(list(args.paths), list(args.exclude))
    if not files:
        print("kerncast: no .cu, .cuh or .ptx file found in " + ", ".join(args.paths), file=sys.stderr)
        return 1
    jobs, options = _share_memory(min(args.jobs or many.default_jobs(), len(files)), options)
    progress, bar = many.stderr_progress(len(files))
    try:
        outcomes = many.analyse_all(files, options, args.format, jobs, progress)
    finally:
        if bar is not None:
            bar.close()
    if args.format == "json":
        sys.stdout.write(dumps_strict(many.combined_json(outcomes)) + "\n")
    elif args.format == "sarif":
        sys.stdout.write(dumps_strict(many.combined_sarif(outcomes), in_properties=True) + "\n")
    else:
        sys.stdout.write(many.combined_text(outcomes))
    errors = [e for o in outcomes for e in o.errors]
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0
