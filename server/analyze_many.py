"""`kerncast analyze PATH...` over many files: which files, analysed in a process pool, as one report.

Directories are walked for `.cu`, `.cuh` and `.ptx` files (sorted, so the report's order is stable); a path
named on the command line is analysed whatever its suffix, as a single file always was. `--exclude` globs
match a file's path relative to the directory it was found under, its full path, or its name.

Each worker analyses one file and sends back only what the output needs (the text, the JSON, or the SARIF
run of that file), not the report objects. Workers are forked from a parent that has already imported the
analysis and the power model's runtime, so that runtime is loaded once for the whole run.
"""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kerncast.analysis.pipeline import analyze_file
from kerncast.server.render_text import render_file_report
from kerncast.server.sarif import to_sarif

SUFFIXES = (".cu", ".cuh", ".ptx")
#: a progress bar is drawn (on a terminal) for more files than this
PROGRESS_ABOVE = 3


@dataclass(slots=True)
class FileOutcome:
    """What one analysed file contributes to the combined report."""

    file: str
    output: Any  # the text, the JSON dict or the SARIF log of this file
    errors: list[str] = field(default_factory=list)  # `file:line:column: error: message` lines
    kernels: int = 0
    warnings: int = 0


def collect_files(paths: list[str], excludes: list[str]) -> list[str]:
    """The files to analyse: named files as given, directories walked for CUDA and PTX files, minus excludes."""
    out: list[str] = []
    seen: set[str] = set()
    for given in paths:
        for f in _expand(given, excludes):
            key = os.path.normpath(os.path.abspath(f))
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def _expand(given: str, excludes: list[str]) -> Iterator[str]:
    if not os.path.isdir(given):
        if not _excluded(given, given, excludes):
            yield given  # a missing or odd file is reported by the analysis itself, clearly
        return
    for root, dirs, files in os.walk(given):
        dirs[:] = sorted(d for d in dirs if not _excluded(os.path.relpath(os.path.join(root, d), given),
                                                           os.path.join(root, d), excludes))
        for name in sorted(files):
            path = os.path.join(root, name)
            if name.lower().endswith(SUFFIXES) and not _excluded(os.path.relpath(path, given), path, excludes):
                yield path


def _excluded(relative: str, path: str, excludes: list[str]) -> bool:
    rel = Path(relative).as_posix()
    full = Path(path).as_posix()
    name = os.path.basename(path)
    return any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(full, g) or fnmatch.fnmatch(name, g) for g in excludes)


def analyse_one(path: str, options: Any, fmt: str) -> FileOutcome:
    """Analyse one file and render it in `fmt` (runs in a worker process, or in this one for -j 1)."""
    report = analyze_file(path, options=options)
    if fmt == "json":
        output: Any = report.to_json()
    elif fmt == "sarif":
        output = to_sarif(report)
    else:
        output = render_file_report(report)
    errors = [f"{report.file}:{f.line}:{f.column}: error: {f.message}" for f in report.findings
              if f.severity == "error"]
    for k in report.all_kernels():
        errors += [f"{f.file or report.file}:{f.line}:{f.column}: error: {f.message}" for f in k.findings
                   if f.severity == "error"]
    warnings = sum(1 for f in report.all_findings() if f.severity == "warning")
    return FileOutcome(report.file, output, errors, len(report.kernels), warnings)


def _pool(jobs: int) -> ProcessPoolExecutor:
    """Worker processes forked from this one (the analysis is imported already); spawned where fork is not."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)


def analyse_all(files: list[str], options: Any, fmt: str, jobs: int,
                progress: Callable[[int, int, str], None] | None = None) -> list[FileOutcome]:
    """Every file's outcome, in the order of `files`; `jobs` worker processes (1: in this process)."""
    outcomes: list[FileOutcome | None] = [None] * len(files)
    if jobs <= 1 or len(files) <= 1:
        for i, f in enumerate(files):
            outcomes[i] = analyse_one(f, options, fmt)
            if progress:
                progress(i + 1, len(files), f)
        return [o for o in outcomes if o is not None]
    # lazy import: the power model's runtime, loaded here in the parent just before the workers are
    # forked, so that each worker inherits it instead of importing it again for its first file
    import kerncast.analysis.stages.power  # noqa: F401

    with _pool(min(jobs, len(files))) as pool:
        futures: dict[Future[FileOutcome], int] = {pool.submit(analyse_one, f, options, fmt): i
                                                   for i, f in enumerate(files)}
        for done, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            try:
                outcomes[i] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one file's crash must not lose the others' results
                outcomes[i] = FileOutcome(files[i], None, [f"{files[i]}:1:1: error: analysis failed: "
                                                           f"{type(exc).__name__}: {exc}"])
            if progress:
                progress(done, len(files), files[i])
    return [o for o in outcomes if o is not None]


class ProgressBar:
    """`[#####.....] 12/100 path` on one terminal line of stderr, redrawn in place, cleared at the end."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self.stream = stream
        self.width = width

    def __call__(self, done: int, total: int, current: str) -> None:
        filled = self.width * done // max(total, 1)
        name = current if len(current) <= 40 else "…" + current[-39:]
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {name:<40}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\r" + " " * (self.width + 60) + "\r")
        self.stream.flush()


def wants_progress(stream: TextIO, files: int) -> bool:
    """A progress bar only on a terminal and only for more than a few files."""
    try:
        return files > PROGRESS_ABOVE and stream.isatty()
    except (AttributeError, ValueError):
        return False


# --------------------------------------------------------------------------------------- combined output

def combined_json(outcomes: list[FileOutcome]) -> dict[str, Any]:
    """`{"files": [each file's report JSON], "summary": {...}}`."""
    return {"files": [o.output for o in outcomes if o.output is not None], "summary": summary(outcomes)}


def summary(outcomes: list[FileOutcome]) -> dict[str, int]:
    return {"files": len(outcomes), "kernels": sum(o.kernels for o in outcomes),
            "errors": sum(len(o.errors) for o in outcomes), "warnings": sum(o.warnings for o in outcomes),
            "failed_files": sum(1 for o in outcomes if o.errors)}


def combined_text(outcomes: list[FileOutcome]) -> str:
    parts = [o.output for o in outcomes if isinstance(o.output, str)]
    s = summary(outcomes)
    parts.append(f"{s['files']} files, {s['kernels']} kernels: {s['errors']} errors, {s['warnings']} warnings\n")
    return "\n".join(parts)


def combined_sarif(outcomes: list[FileOutcome]) -> dict[str, Any]:
    """One SARIF run for every file: the files' runs merged, with one rule list and one artifact per file.

    Each file's run indexes its own rules and its one artifact from 0, so results are renumbered into the
    merged lists (rule indices by rule id, artifact indices by the file's position).
    """
    logs = [o.output for o in outcomes if isinstance(o.output, dict)]
    if not logs:
        return {"version": "2.1.0", "runs": []}
    first = logs[0]
    rules: list[dict[str, Any]] = []
    rule_index: dict[str, int] = {}
    artifacts: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    kernels: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    for log in logs:
        for run in log.get("runs", []):
            base = len(artifacts)
            artifacts.extend(run.get("artifacts", []))
            for rule in run["tool"]["driver"].get("rules", []):
                if rule["id"] not in rule_index:
                    rule_index[rule["id"]] = len(rules)
                    rules.append(rule)
            for res in run.get("results", []):
                where = _result_key(res)
                if where in seen:  # a header's kernel, reported by the header and by the .cu that includes it
                    continue
                seen.add(where)
                res = dict(res)
                res["ruleIndex"] = rule_index[res["ruleId"]]
                for loc in [*res.get("locations", []), *res.get("relatedLocations", [])]:
                    art = loc.get("physicalLocation", {}).get("artifactLocation", {})
                    if "index" in art:
                        art["index"] = art["index"] + base
                results.append(res)
            for inv in run.get("invocations", []):
                notifications.extend(inv.get("toolExecutionNotifications", []))
            kernels.extend((run.get("properties") or {}).get("kernels", []))
    run0 = first["runs"][0]
    merged_run: dict[str, Any] = {
        "tool": {"driver": {**run0["tool"]["driver"], "rules": rules}},
        "artifacts": artifacts,
        "results": results,
        "properties": {**(run0.get("properties") or {}), "kernels": kernels},
        "invocations": [{"executionSuccessful": not notifications,
                         **({"toolExecutionNotifications": notifications} if notifications else {})}],
    }
    return {**{k: v for k, v in first.items() if k != "runs"}, "runs": [merged_run]}


def _result_key(res: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two results one: the rule, the message and the places (file and region) they point at."""
    places = tuple((loc.get("physicalLocation", {}).get("artifactLocation", {}).get("uri"),
                    tuple(sorted(loc.get("physicalLocation", {}).get("region", {}).items())))
                   for loc in res.get("locations", []))
    return res.get("ruleId"), (res.get("message") or {}).get("text"), places


def default_jobs() -> int:
    """The worker count by default: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def stderr_progress(files: int) -> tuple[Callable[[int, int, str], None] | None, ProgressBar | None]:
    if not wants_progress(sys.stderr, files):
        return None, None
    bar = ProgressBar(sys.stderr)
    return bar, bar
