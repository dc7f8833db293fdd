"""`kerncast diff PATH [--rev REV | --against FILE]`: the file's kernels against its version at a git revision
(default HEAD) or against another file, per kernel matched by name; exit status 1 when a kernel got slower
than `--fail-slower PERCENT`, so a CI job can stop a pull request that slows a kernel down. PATH may be a
folder of the repository: each CUDA or PTX file in it now or at the revision is compared, file by file.

The old version is read with `git show REV:path` (an argument list, with a timeout) and analysed as the file's
text at its own path, as the editor's unsaved text is: its includes, its includer and the project's flags are
the working tree's for both versions. The working tree is never written.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.strict_json import dumps_strict
from kerncast.analysis.targets import default_gpu
from kerncast.server.analyze_many import SUFFIXES, collect_files
from kerncast.server.cmd_analyze import (
    add_launch_arguments,
    add_time_model_argument,
    add_toolchain_arguments,
    options_from_args,
)
from kerncast.server.kernel_diff import KernelChange, compare_reports, diff_json, diff_markdown, diff_text, slower_than
from kerncast.server.multi_gpu import split_gpus

#: seconds allowed for each git command
GIT_TIMEOUT_S = 30.0


class DiffInputError(Exception):
    """The old version cannot be had (not a git repository, unknown revision, file absent there)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH",
                        help="the CUDA C++ (.cu) or PTX (.ptx) file as it is now, or a folder of such files")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--rev", default=None, metavar="REV",
                       help="compare with the file at this git revision; default HEAD")
    which.add_argument("--against", default=None, metavar="FILE", help="compare with another file instead")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                        help="output format; markdown is a table for a pull-request comment")
    parser.add_argument("--fail-slower", dest="fail_slower", type=float, default=None, metavar="PERCENT",
                        help="exit with status 1 when a kernel's predicted time grew by more than PERCENT %%")
    gpu = default_gpu(AnalysisOptions().gpu)
    add_toolchain_arguments(parser, f"GPU profile id, or a comma list (a100,h100) for one comparison per GPU; "
                                    f"default {gpu}")
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


def files_at_revision(folder: Path, rev: str) -> list[Path]:
    """The CUDA and PTX files under `folder` at revision `rev`, as paths of the working tree (they may be gone
    from it now)."""
    if rev.startswith("-") or not rev.strip():
        raise DiffInputError(f"--rev {rev!r} is not a revision")
    top = Path(_git(folder, "rev-parse", "--show-toplevel").strip()).resolve()
    rel = folder.resolve().relative_to(top).as_posix()
    names = _git(top, "ls-tree", "-r", "--name-only", "-z", rev, "--", rel if rel != "." else ".").split("\0")
    return [top / n for n in names if n and n.lower().endswith(SUFFIXES)]


def file_pairs(folder: Path, rev: str) -> list[tuple[Path, bool, bool]]:
    """(path, in the working tree, at the revision) for every CUDA or PTX file of the folder in either."""
    now = [Path(p).resolve() for p in collect_files([str(folder)], [])]
    then = files_at_revision(folder, rev)
    then_set = set(then)
    out = [(p, True, p in then_set) for p in now]
    out.extend((p, False, True) for p in then if p not in set(now))
    return out


def analyse_old(path: Path, rev: str, options: AnalysisOptions, cache: KernelCache | None = None) -> FileReport:
    """The analysis of the file at `rev`: its bytes analysed at the file's own path, as an editor's unsaved text
    is, so its includes, its includer, its compile_commands.json flags are the working tree's, as the new
    version's are; a file unchanged since `rev` is the same compile (and, with a `cache`, the same kernels)."""
    report = analyze_file(str(path), text=file_at_revision(path, rev), options=options, cache=cache)
    report.file = f"{rev}:{path}"
    return report


@dataclass(slots=True)
class FileDiff:
    """One file's comparison: its two labels, the kernels' changes and the analyses' errors."""

    old_label: str
    new_label: str
    gpu: str
    changes: list[KernelChange]
    errors: list[str]


def _errors(report: FileReport, label: str) -> list[str]:
    return [f"kerncast: {label}: {f.message}" for f in report.findings if f.severity == "error"]


def _compare(old: FileReport, old_label: str, new: FileReport, new_label: str) -> FileDiff:
    return FileDiff(old_label, new_label, new.gpu, compare_reports(old, new),
                    _errors(old, old_label) + _errors(new, new_label))


def diff_file(args: argparse.Namespace, path: Path, options: AnalysisOptions,
              cache: KernelCache | None = None) -> FileDiff:
    """The file against `--against` or its version at `--rev` (DiffInputError when that cannot be had)."""
    if args.against is not None:
        other = Path(args.against)
        if not other.is_file():
            raise DiffInputError(f"--against {args.against}: no such file")
        old, old_label = analyze_file(str(other), options=options, cache=cache), str(other)
    else:
        rev = args.rev or "HEAD"
        old, old_label = analyse_old(path, rev, options, cache), f"{rev}:{path}"
    return _compare(old, old_label, analyze_file(str(path), options=options, cache=cache), str(path))


def diff_folder(args: argparse.Namespace, folder: Path, options: AnalysisOptions,
                cache: KernelCache | None = None) -> list[FileDiff]:
    """Every CUDA or PTX file of the folder now or at `--rev`; a file only on one side has only added (or
    only removed) kernels."""
    if args.against is not None:
        raise DiffInputError("--against compares two files; PATH is a folder")
    rev = args.rev or "HEAD"
    out = []
    for path, now, then in file_pairs(folder, rev):
        shown = Path(os.path.relpath(path))
        old_label = f"{rev}:{shown}"
        old = analyse_old(shown, rev, options, cache) if then else FileReport(file=old_label, gpu=options.gpu)
        new = (analyze_file(str(shown), options=options, cache=cache) if now
               else FileReport(file=str(shown), gpu=options.gpu))
        out.append(_compare(old, old_label, new, str(shown)))
    return out


def _render(diffs: list[FileDiff], fmt: str, folder: bool) -> str:
    """One file's diff as it always was; a folder's as the files' diffs in a row (JSON: under "files")."""
    if fmt == "json":
        parts = [diff_json(d.changes, d.old_label, d.new_label, d.gpu) for d in diffs]
        return dumps_strict({"files": parts} if folder else parts[0]) + "\n"
    render = diff_markdown if fmt == "markdown" else diff_text
    if folder and not diffs:
        return "no CUDA or PTX file in the folder at either version\n"
    return "\n".join(render(d.changes, d.old_label, d.new_label) for d in diffs)


def _render_gpus(runs: list[tuple[str, list[FileDiff]]], fmt: str, folder: bool) -> str:
    """One GPU: `_render`'s output unchanged. Several: one section per GPU (JSON: `{"by_gpu": [{"gpu", "diff"}]}`
    with each GPU's single-GPU JSON)."""
    if len(runs) == 1:
        return _render(runs[0][1], fmt, folder)
    if fmt == "json":
        by_gpu = [{"gpu": gpu, "diff": json.loads(_render(diffs, fmt, folder))} for gpu, diffs in runs]
        return dumps_strict({"by_gpu": by_gpu}) + "\n"
    head = "### GPU {}\n\n" if fmt == "markdown" else "== GPU {} ==\n"
    return "\n".join(head.format(gpu) + _render(diffs, fmt, folder) for gpu, diffs in runs)


def run(args: argparse.Namespace) -> int:
    try:
        options = options_from_args(args)
        gpus = split_gpus(args.gpu)
    except ValueError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    if args.fail_slower is not None and args.fail_slower < 0:
        print("kerncast: --fail-slower takes a percentage of 0 or more", file=sys.stderr)
        return 2
    path = Path(args.path)
    if not path.exists():
        print(f"kerncast: {args.path}: no such file or folder", file=sys.stderr)
        return 2
    runs = []
    cache = KernelCache()  # a kernel unchanged since the revision, or a PTX shared by two GPUs, is worked on once
    try:
        for gpu in gpus:
            opts = replace(options, gpu=gpu)
            runs.append((gpu, diff_folder(args, path, opts, cache) if path.is_dir()
                         else [diff_file(args, path, opts, cache)]))
    except DiffInputError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(_render_gpus(runs, args.format, path.is_dir()))
    errors = sorted({e for _, diffs in runs for d in diffs for e in d.errors})
    for e in errors:
        print(e, file=sys.stderr)
    slower = 0
    for gpu, diffs in runs:
        on = f" on {gpu}" if len(runs) > 1 else ""
        for d in diffs:
            for c in slower_than(d.changes, args.fail_slower) if args.fail_slower is not None else []:
                slower += 1
                print(f"kerncast: {c.name} is {c.time_ratio():.2f}x slower than in {d.old_label}{on} "
                      f"(more than --fail-slower {args.fail_slower:g}%)", file=sys.stderr)
    return 1 if slower or errors else 0
