"""`kerncast analyze --fix` and `--diff`: the quick fixes of files applied from the command line, each one
checked by compiling and analysing the file again before it is kept (`analysis.fixing`).

Only safe fixes are applied, and only a finding's sole safe fix (the one the editors mark preferred);
`--unsafe-fixes` admits unsafe ones too. Snippets are templates and are never applied. A file is written only
when a fix was kept, in its own encoding and with each line's own ending, and only while it still holds the text
the fixes were made for (a save made during the run wins); `--diff` writes nothing and prints what would change.
"""

from __future__ import annotations

import difflib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from kerncast.analysis.fixing import FixOutcome, fix_text, trial_analysis
from kerncast.analysis.input_files import read_regular_file
from kerncast.analysis.locate import split_lines
from kerncast.analysis.options import AnalysisOptions
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
        try:
            raw = read_regular_file(path, options.max_file_bytes)
        except OSError as exc:  # InputRefused too: a FIFO, a device, a file over the size limit
            print(f"kerncast: {name}: not fixed: {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        text = _utf8(raw)
        if text is None:
            print(f"kerncast: {name}: not fixed: the file is not UTF-8 text", file=sys.stderr)
            status = 1
            continue
        outcome = fix_text(text, trial_analysis(path, options), unsafe)
        if reports is not None:
            reports[name] = outcome.report
        _tell(name, outcome, "would fix" if diff else "fixed")
        if not outcome.kept:
            continue
        fixed = with_line_endings_of(text, outcome.text)
        if diff:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(keepends=True),
                                                       fixed.splitlines(keepends=True), name, name))
        elif not _write_unless_changed(path, raw, fixed.encode("utf-8")):
            print(f"kerncast: {name}: not fixed: the file changed while Kerncast was checking its fixes; "
                  "nothing was written (run again on the new text)", file=sys.stderr)
            if reports is not None:
                reports.pop(name, None)  # that report is of a text that was not written
            status = 1
    return status


def _read_bytes(path: Path, max_bytes: int) -> bytes | None:
    """The file's bytes now (a regular file no larger than `max_bytes`), or None when it cannot be read."""
    try:
        return read_regular_file(path, max_bytes)
    except OSError:
        return None


def _utf8(raw: bytes) -> str | None:
    """The file's text with its line endings as they are; None when it is not UTF-8 (a fix would have to
    guess how to write it back)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _write_unless_changed(path: Path, before: bytes, data: bytes) -> bool:
    """Write `data` over the file only while it still holds `before`, the bytes the fixes were made for: a save
    made while the fixes were checked (seconds of compiles) is kept, and the fixed text is not written. The new
    bytes go to a temporary file beside the real one (links followed) that then replaces it, so the file is
    never seen half-written; its permissions are kept. False when the file changed (nothing is written)."""
    real = Path(os.path.realpath(path))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{real.name[:40]}.", suffix=".kerncast", dir=real.parent)
    except OSError:
        return _write_in_place(real, before, data)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        shutil.copymode(real, tmp)
        if _read_bytes(real, len(before) + 1) != before:
            return False
        os.replace(tmp, real)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _write_in_place(real: Path, before: bytes, data: bytes) -> bool:
    """The write where no temporary file can be made beside the file (a read-only folder): checked, then in place."""
    if _read_bytes(real, len(before) + 1) != before:
        return False
    real.write_bytes(data)
    return True


def _lines(text: str) -> list[tuple[str, str]]:
    """(body, ending) of each line; the ending is "\r\n", "\n", "\r" or "" (a last line without one)."""
    out = []
    start = 0
    for body in split_lines(text) if text else []:
        end = start + len(body)
        ending = "\r\n" if text.startswith("\r\n", end) else text[end:end + 1]
        out.append((body, ending))
        start = end + len(ending)
    return out


def with_line_endings_of(original: str, fixed: str) -> str:
    """`fixed` with each line ended as in the original: an unchanged line keeps its own ending, and a line a
    fix added or changed takes the ending of the line it replaces (or of the line above it). A file that mixes
    CRLF and LF lines keeps each as it was; fixes themselves write LF."""
    old, new = _lines(original), _lines(fixed)
    matcher = difflib.SequenceMatcher(None, [b for b, _ in old], [b for b, _ in new], autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(j2 - j1):
            body, ending = new[j1 + k]
            if ending:
                if tag == "equal" and old[i1 + k][1]:
                    ending = old[i1 + k][1]
                else:
                    ending = _nearby_ending(old, min(i1 + k, i2 - 1) if i2 > i1 else i1 - 1, ending)
            out.append(body + ending)
    return "".join(out)


def _nearby_ending(lines: list[tuple[str, str]], index: int, default: str) -> str:
    """The ending of line `index`, else of the nearest line above it with one, else `default`."""
    for i in range(min(index, len(lines) - 1), -1, -1):
        if lines[i][1]:
            return lines[i][1]
    return default


def _tell(name: str, outcome: FixOutcome, done: str) -> None:
    """One stderr line per fix tried: applied (`done`: "fixed", or "would fix" for a diff), or not and why."""
    for a in outcome.attempts:
        where = f"{name}:{a.finding.line}"
        what = f"{a.fix.kind} for {a.finding.code}" + (f" in {a.finding.kernel}" if a.finding.kernel else "")
        if a.kept:
            print(f"{where}: {done}: {what}", file=sys.stderr)
        else:
            print(f"{where}: not fixed: {what}: {'; '.join(a.problems)}", file=sys.stderr)
