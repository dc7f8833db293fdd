"""`kerncast diff PATH [--rev REV | --against FILE]`: the file's kernels against its version at a git revision
(default HEAD) or against another file, per kernel matched by name; exit status 1 when a kernel got slower
than `--fail-slower PERCENT`, so a CI job can stop a pull request that slows a kernel down.

The old version is read with `git show REV:path` (an argument list, with a timeout) into a temporary folder
that is removed afterwards; the file's own folder is added to the include path so its quoted includes still
resolve. The working tree is never written.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kerncast.analysis.context import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.strict_json import dumps_strict
from kerncast.analysis.targets import default_gpu
from kerncast.server.cmd_analyze import add_launch_arguments, add_time_model_argument, options_from_args
from kerncast.server.kernel_diff import compare_reports, diff_json, diff_markdown, diff_text, slower_than

#: seconds allowed for each git command
GIT_TIMEOUT_S = 30.0


class DiffInputError(Exception):
    """The old version cannot be had (not a git repository, unknown revision, file absent there)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="the CUDA C++ (.cu) or PTX (.ptx) file as it is now")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--rev", default=None, metavar="REV",
                       help="compare with the file at this git revision; default HEAD")
    which.add_argument("--against", default=None, metavar="FILE", help="compare with another file instead")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                        help="output format; markdown is a table for a pull-request comment")
    parser.add_argument("--fail-slower", dest="fail_slower", type=float, default=None, metavar="PERCENT",
                        help="exit with status 1 when a kernel's predicted time grew by more than PERCENT %%")
    defaults = AnalysisOptions()
    gpu = default_gpu(defaults.gpu)
    parser.add_argument("--gpu", default=gpu, help=f"GPU profile id; default {gpu}")
    parser.add_argument("--arch", default=None, help="nvcc/ptxas target, e.g. sm_80; default the GPU's")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="extra include directory for nvcc (repeatable)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                        help="preprocessor definition for nvcc (repeatable)")
    parser.add_argument("--nvcc", dest="nvcc_path", default=None, help="path of the nvcc to use")
    parser.add_argument("--timeout", type=float, default=defaults.timeout_s,
                        help=f"seconds allowed for nvcc; default {defaults.timeout_s:g}")
    add_time_model_argument(parser)
    add_launch_arguments(parser)


def _git(folder: Path, *args: str) -> str:
    """stdout of `git -C folder args...` (DiffInputError with git's own message when it fails)."""
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, timeout=GIT_TIMEOUT_S,
                              check=False)
    except FileNotFoundError as exc:
        raise DiffInputError("git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise DiffInputError(f"git {args[0]} took more than {GIT_TIMEOUT_S:g} s") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffInputError(message[-1] if message else f"git {args[0]} failed")
    return done.stdout.decode("utf-8", "surrogateescape")


def file_at_revision(path: Path, rev: str) -> bytes:
    """The bytes of `path` at git revision `rev` of the repository that holds it."""
    if rev.startswith("-") or not rev.strip():
        raise DiffInputError(f"--rev {rev!r} is not a revision")
    folder = path.resolve().parent
    top = Path(_git(folder, "rev-parse", "--show-toplevel").strip())
    try:
        rel = path.resolve().relative_to(top.resolve()).as_posix()
    except ValueError as exc:
        raise DiffInputError(f"{path} is not inside the git repository {top}") from exc
    try:
        done = subprocess.run(["git", "-C", str(top), "show", f"{rev}:{rel}"], capture_output=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DiffInputError(f"git show took more than {GIT_TIMEOUT_S:g} s") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffInputError(f"{rel} at {rev}: " + (message[-1] if message else "git show failed"))
    return done.stdout


def analyse_old(path: Path, rev: str, options: AnalysisOptions) -> FileReport:
    """The analysis of the file at `rev`, compiled from a temporary copy under the file's own name, with the
    file's folder on the include path (its quoted includes are the working tree's versions)."""
    data = file_at_revision(path, rev)
    with tempfile.TemporaryDirectory(prefix="kerncast-diff-") as tmp:
        old = Path(tmp) / path.name
        old.write_bytes(data)
        opts = replace(options, include_dirs=[*options.include_dirs, str(path.resolve().parent)])
        report = analyze_file(str(old), options=opts)
    report.file = f"{rev}:{path}"
    return report


def _old_report(args: argparse.Namespace, path: Path, options: AnalysisOptions) -> tuple[FileReport, str]:
    if args.against is not None:
        other = Path(args.against)
        if not other.is_file():
            raise DiffInputError(f"--against {args.against}: no such file")
        return analyze_file(str(other), options=options), str(other)
    rev = args.rev or "HEAD"
    return analyse_old(path, rev, options), f"{rev}:{path}"


def _errors(report: FileReport, label: str) -> list[str]:
    return [f"kerncast: {label}: {f.message}" for f in report.findings if f.severity == "error"]


def run(args: argparse.Namespace) -> int:
    try:
        options = options_from_args(args)
    except ValueError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    if args.fail_slower is not None and args.fail_slower < 0:
        print("kerncast: --fail-slower takes a percentage of 0 or more", file=sys.stderr)
        return 2
    path = Path(args.path)
    if not path.is_file():
        print(f"kerncast: {args.path}: no such file", file=sys.stderr)
        return 2
    try:
        old, old_label = _old_report(args, path, options)
    except DiffInputError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    new = analyze_file(str(path), options=options)
    errors = _errors(old, old_label) + _errors(new, str(path))
    for e in errors:
        print(e, file=sys.stderr)
    changes = compare_reports(old, new)
    if args.format == "json":
        sys.stdout.write(dumps_strict(diff_json(changes, old_label, str(path), new.gpu)) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(diff_markdown(changes, old_label, str(path)))
    else:
        sys.stdout.write(diff_text(changes, old_label, str(path)))
    slower = slower_than(changes, args.fail_slower) if args.fail_slower is not None else []
    for c in slower:
        print(f"kerncast: {c.name} is {c.time_ratio():.2f}x slower than in {old_label} "
              f"(more than --fail-slower {args.fail_slower:g}%)", file=sys.stderr)
    return 1 if slower or errors else 0
