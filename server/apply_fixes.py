"""`kerncast analyze --fix` and `--diff`: the quick fixes of files applied from the command line, each one
checked by compiling and analysing the file again before it is kept (`analysis.fixing`).

Only safe fixes are applied, and only a finding's sole safe fix (the one the editors mark preferred);
`--unsafe-fixes` admits unsafe ones too. Snippets are templates and are never applied. A file is written only
when a fix was kept, in its own encoding and line endings; `--diff` writes nothing and prints what would change.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

from kerncast.analysis.fixing import FixOutcome, fix_text, trial_analyses
from kerncast.analysis.pipeline import AnalysisOptions
from kerncast.analysis.report import FileReport

#: files that may carry fixes: a fix edits CUDA C++ source, never PTX
FIXABLE_SUFFIXES = (".cu", ".cuh")


def fix_files(files: list[str], options: AnalysisOptions, unsafe: bool, diff: bool,
              reports: dict[str, FileReport] | None = None) -> int:
    """Fix each CUDA file (or print the diff); 1 when a file could not be read as text, else 0. `reports`
    receives each fixed file's analysis as the last check made it, which is the report of the file as written."""
    status = 0
    for name in files:
        path = Path(name)
        if path.suffix.lower() not in FIXABLE_SUFFIXES:
            continue
        text = _read_text(path)
        if text is None:
            print(f"kerncast: {name}: not fixed: the file is not UTF-8 text", file=sys.stderr)
            status = 1
            continue
        with trial_analyses(path, options) as analyse:
            outcome = fix_text(text, analyse, unsafe)
        if reports is not None:
            reports[name] = outcome.report
        _tell(name, outcome, "would fix" if diff else "fixed")
        if not outcome.kept:
            continue
        fixed = _with_line_endings_of(text, outcome.text)
        if diff:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(keepends=True),
                                                       fixed.splitlines(keepends=True), name, name))
        else:
            path.write_bytes(fixed.encode("utf-8"))
    return status


def _read_text(path: Path) -> str | None:
    """The file's text with its line endings as they are; None when it is not UTF-8 (a fix would have to
    guess how to write it back)."""
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _with_line_endings_of(original: str, fixed: str) -> str:
    """`fixed` with the lines a fix added ended in CRLF when the original used CRLF (fixes write LF)."""
    return re.sub(r"(?<!\r)\n", "\r\n", fixed) if "\r\n" in original else fixed


def _tell(name: str, outcome: FixOutcome, done: str) -> None:
    """One stderr line per fix tried: applied (`done`: "fixed", or "would fix" for a diff), or not and why."""
    for a in outcome.attempts:
        where = f"{name}:{a.finding.line}"
        what = f"{a.fix.kind} for {a.finding.code}" + (f" in {a.finding.kernel}" if a.finding.kernel else "")
        if a.kept:
            print(f"{where}: {done}: {what}", file=sys.stderr)
        else:
            print(f"{where}: not fixed: {what}: {'; '.join(a.problems)}", file=sys.stderr)
