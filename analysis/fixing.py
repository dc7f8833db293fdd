"""Applying fixes to a file, and checking that each kept its promise.

A quick fix promises three things: its finding is gone, nvcc says nothing new, and no other finding appears.
`kerncast analyze --fix` applies the fixes it may (safe ones; unsafe ones when asked) one at a time and
checks each promise by compiling and analysing the file again, so a fix that breaks it is put back rather than
left in the user's file. `benchmarks/fix_sweep.py` runs the same check over whole code bases.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kerncast.analysis.finding import Finding, Fix, TextEdit
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport

#: at most this many fixes are tried on one file: each costs a compile and an analysis
MAX_ATTEMPTS = 40


class OverlappingEdits(ValueError):
    """Two edits of one fix change the same text; applying both would be guesswork."""


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """`text` with the edits applied (1-based lines and columns, end exclusive), the last edit first so that
    earlier positions stay valid. A position past the end of a line or of the text is clamped to it."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        if line > len(lines):
            return len(text)
        body = lines[line - 1].rstrip("\r\n")
        return starts[line - 1] + min(max(column, 1), len(body) + 1) - 1

    spans = sorted(((offset(e.line, e.column), offset(e.end_line, e.end_column), e.new_text) for e in edits),
                   reverse=True)
    for (start, _, _), (_, prev_end, _) in zip(spans, spans[1:], strict=False):
        if prev_end > start:
            raise OverlappingEdits("two edits of the fix overlap")
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def fix_key(finding: Finding, fix: Fix) -> tuple[object, ...]:
    """What identifies a fix from one analysis to the next: what it is for, what it does and where. Fixes are
    applied from the bottom of the file up, so a fix not yet applied keeps its place; the same fix for another
    use of a name (nvcc reports an undeclared name once per function) is another fix."""
    first = min((e.line, e.column) for e in fix.edits) if fix.edits else (0, 0)
    return (finding.kernel or "", str(finding.code), str(fix.kind), fix.description, finding.line, first)


def applicable_fix(finding: Finding, unsafe: bool = False) -> Fix | None:
    """The fix `--fix` may apply to a finding: its only safe fix with edits (with `unsafe`, its only safe or
    unsafe one). A finding with two candidates is left to the user, as the editors leave it unpreferred; one
    in another file (a kernel of an included header) has edits of that file, not of the file being fixed."""
    if finding.file is not None:
        return None
    allowed = ("safe", "unsafe") if unsafe else ("safe",)
    candidates = [x for x in finding.fixes() if x.edits and x.applicability in allowed]
    return candidates[0] if len(candidates) == 1 else None


_NVCC_CODES = ("compile-error", "compile-warning")


def _finding_counts(report: FileReport) -> Counter[tuple[str | None, str]]:
    """The analysis's findings by kernel and code; nvcc's messages are compared on their own, by text."""
    return Counter((f.kernel, str(f.code)) for f in report.all_findings() if str(f.code) not in _NVCC_CODES)


def _nvcc_text(finding: Finding) -> str:
    """An nvcc message without its numbers: a fix that adds lines moves every later message."""
    return re.sub(r"\d+", "N", finding.message)


def _nvcc_messages(report: FileReport) -> Counter[str]:
    return Counter(_nvcc_text(f) for f in report.all_findings() if str(f.code) in _NVCC_CODES)


def _moved_line(line: int, edits: Iterable[TextEdit]) -> int:
    """Where `line` is after the edits: moved by the lines that edits wholly above it add or remove."""
    for e in edits:
        if (e.end_line, e.end_column) <= (line, 1):
            line += e.new_text.count("\n") - (e.end_line - e.line)
    return line


def broken_promises(before: FileReport, after: FileReport, finding: Finding, fix: Fix) -> list[str]:
    """What `fix`, applied for `finding` in the file `before` analysed, broke in the file `after` analysed:
    empty when its finding is gone, nvcc says nothing new, and no other finding appeared (one that went away
    with it, as a store fixed with its load, is no harm). A snippet promises only the last two. A fix of an
    nvcc message (an error or a warning) is checked on nvcc's messages, so it may fix a file that does not
    compile."""
    if before.ok and not after.ok:
        errors = "; ".join(f.message.splitlines()[0] for f in after.findings if f.severity == "error")
        return [f"the file no longer compiles: {errors}"]
    problems = []
    said_before, said_after = _nvcc_messages(before), _nvcc_messages(after)
    added = said_after - said_before
    if added:
        problems.append("nvcc says: " + "; ".join(sorted(added)))
    expected, found = _finding_counts(before), _finding_counts(after)
    if fix.applicability != "snippet":
        if str(finding.code) in _NVCC_CODES:
            moved = _moved_line(finding.line, fix.edits)
            gone = not any(f.line == moved and _nvcc_text(f) == _nvcc_text(finding) for f in after.all_findings())
        else:
            key = (finding.kernel, str(finding.code))
            gone = found[key] < expected[key]
            expected[key] -= 1
        if not gone:
            problems.append(f"the {finding.code} finding is still there")
    new = found - expected if before.ok else Counter()  # unanalysed before: nothing to compare
    if new:
        problems.append("new findings: " + ", ".join(f"{code} in {kernel}" for kernel, code in sorted(new)))
    return problems


@dataclass(frozen=True, slots=True)
class FixAttempt:
    """One fix tried on a file: what it was for, and what it broke (empty: applied and kept)."""

    finding: Finding
    fix: Fix
    problems: tuple[str, ...] = ()

    @property
    def kept(self) -> bool:
        return not self.problems


@dataclass(slots=True)
class FixOutcome:
    """The file's text after every kept fix, the analysis of that text, and each fix tried."""

    text: str
    report: FileReport
    attempts: list[FixAttempt] = field(default_factory=list)

    @property
    def kept(self) -> list[FixAttempt]:
        return [a for a in self.attempts if a.kept]

    @property
    def refused(self) -> list[FixAttempt]:
        return [a for a in self.attempts if not a.kept]


def fix_text(text: str, analyse: Callable[[str], FileReport], unsafe: bool = False) -> FixOutcome:
    """Apply the applicable fixes of `text` one at a time, keeping each only when its promise holds.

    `analyse` compiles and analyses a version of the file (the caller decides where it lives, so that
    its includes and its includers still resolve). Every kept fix changes lines, so the file is analysed
    again after each, and the next fix is taken from the new analysis.
    """
    report = analyse(text)
    outcome = FixOutcome(text, report)
    tried: set[tuple[object, ...]] = set()
    while len(outcome.attempts) < MAX_ATTEMPTS:
        pick = _next_fix(outcome.report, tried, unsafe)
        if pick is None:
            break
        finding, fix = pick
        tried.add(fix_key(finding, fix))
        try:
            new_text = apply_edits(outcome.text, fix.edits)
        except OverlappingEdits as exc:
            outcome.attempts.append(FixAttempt(finding, fix, (str(exc),)))
            continue
        after = analyse(new_text)
        attempt = FixAttempt(finding, fix, tuple(broken_promises(outcome.report, after, finding, fix)))
        outcome.attempts.append(attempt)
        if attempt.kept:
            outcome.text, outcome.report = new_text, after
    return outcome


def trial_analysis(path: Path, options: AnalysisOptions) -> Callable[[str], FileReport]:
    """A function that analyses versions of the file at `path` without ever writing it.

    A version is analysed as the editor's unsaved text at the file's path, so its includes, `main()` and
    neighbours resolve as before; a fragment, which nvcc compiles through the file that #includes it, is
    compiled through copies of both (`compile.compile_fragment_copy`). Nothing is written into the user's file
    while fixes are tried, so a run that is stopped half-way leaves it as it was, and a save made meanwhile is
    not reverted."""
    return lambda text: analyze_file(path, text=text, options=options)


def _next_fix(report: FileReport, tried: set[tuple[object, ...]],
              unsafe: bool) -> tuple[Finding, Fix] | None:
    """The untried applicable fix whose edits start lowest in the file: fixing from the bottom up leaves the
    lines above, where the other findings are, where they were, so each is reported at its line as written."""
    candidates = []
    for finding in report.all_findings():
        fix = applicable_fix(finding, unsafe)
        if fix is not None and fix_key(finding, fix) not in tried:
            candidates.append((finding, fix))
    return max(candidates, key=lambda c: min(e.line for e in c[1].edits), default=None)
