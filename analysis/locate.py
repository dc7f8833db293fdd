"""A report's `Places` in the text it was made from: read once, by the library, for every consumer.

Made when first asked for, not during the analysis (a CLI run never needs them): the findings' places when
the diagnostics are published (`places_of`), the kernels' and launches' when a lens, hint, hover or action
first asks (`kernel_places`), as they need the source model of the text, which the diagnostics need not wait
for. They are made for one report and one text and never kept with the cached kernel reports, whose kernels
may have moved in a later text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kerncast.analysis.edits import launch_annotation_edit
from kerncast.analysis.finding import Finding, Related, Span
from kerncast.analysis.launch import DEFAULT_BLOCK, DEFAULT_GRID, Launch, split_kernel_name
from kerncast.analysis.places import FindingPlace, KernelPlace, LaunchPlace, Places
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.source_model import KernelDefinition, SourceFacts, scanned


def split_lines(text: str) -> list[str]:
    """The text's lines as LSP and editors number them, without their breaks (`\\r\\n`, `\\r` or `\\n`; not
    `str.splitlines`, which also breaks at form feeds and U+2028); a final break ends the last line."""
    lines = (text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text).split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def places_of(report: FileReport, lines: Sequence[str]) -> Places:
    """The report's places in `lines` (the text it was made from, as `split_lines` splits it), its findings'
    at least: made on the first call and kept on the report, which later calls answer from (a report has one
    text)."""
    if report.places is None:
        report.places = Places(lines, {id(f): finding_place(f, lines) for f in report.all_findings()})
    return report.places


def kernel_places(report: FileReport, lines: Sequence[str], text: str | None = None) -> Places:
    """`places_of` with the kernels' and launches' places too (read from the source model on the first call).

    `text` is the text the report was analysed from, where the caller still has it: its scan is the analysis's
    own, kept by the source model. The lines joined again lose the text's final line break (and `\r\n`), which
    makes another text and a second scan of the whole source."""
    places = places_of(report, lines)
    if places.kernels is None:
        lines = places.lines
        # PTX has no C++ definition or launch to find: its kernels are named on their `.entry` lines
        facts = None if report.file.lower().endswith(".ptx") else scanned(_scanned_text(lines, text))
        entries = None if facts is not None else _entry_names(lines)
        kernels = {}
        for k in report.kernels:
            place = _kernel_place(lines, facts, entries, k)
            if place is not None:
                kernels[k.mangled] = place
        places.launches = _launch_places(lines, facts, report) if facts is not None else ()
        places.kernels = kernels
    return places


def _scanned_text(lines: Sequence[str], text: str | None) -> str:
    """The text to scan for `lines`: the analysed `text` where its lines are `lines` as the source model counts
    them (a `\r` alone also breaks a line for `split_lines`, not for the source model), else the lines joined."""
    if text is not None and text.count("\r") == text.count("\r\n"):
        return text
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ kernels


def kernel_definition(facts: SourceFacts, k: KernelReport) -> KernelDefinition | None:
    """The source model's definition of a reported kernel: of its name, the last one at or above its line."""
    base = split_kernel_name(k.name or "")[0]
    named = [d for d in facts.kernels if d.base_name == base]
    reported = k.line
    if isinstance(reported, int) and reported >= 1:
        above = [d for d in named if d.line <= reported]
        if above:
            return max(above, key=lambda d: d.line)
    return next((d for d in named if d.is_definition), named[0] if named else None)


def _kernel_place(lines: Sequence[str], facts: SourceFacts | None, entries: dict[str, Span] | None,
                  k: KernelReport) -> KernelPlace | None:
    kdef = kernel_definition(facts, k) if facts is not None else None
    if facts is not None and kdef is not None:
        line, col = facts.position(kdef.name_offset)
        name = Span(line, col, line, col + len(kdef.name))
        end = (lines[line - 1] if 0 < line <= len(lines) else "").rstrip()
        if kdef.params_end_offset >= 0:
            end_line, end_col = facts.position(kdef.params_end_offset)
            signature_end = (end_line, end_col + 1)
        else:
            signature_end = (line, len(end) + 1)
        grid, block = annotation_dims(k.launch)
        return KernelPlace(name, signature_end,
                           launch_annotation_edit(facts, split_kernel_name(k.name)[0], grid, block))
    name_span = _entry_name(entries or {}, k) or _reported_line(lines, k)
    if name_span is None:
        return None
    text = lines[name_span.line - 1]
    return KernelPlace(name_span, (name_span.line, len(text.rstrip()) + 1))


#: a PTX kernel's name on its `.entry` line
_ENTRY_NAME_RE = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)")


def _entry_names(lines: Sequence[str]) -> dict[str, Span]:
    """Each PTX kernel's name on its `.entry` line (the first line that declares it), read in one pass: a file
    of hundreds of kernels is looked up once per kernel, not searched line by line for each."""
    out: dict[str, Span] = {}
    for line, text in enumerate(lines, 1):
        if ".entry" in text:
            m = _ENTRY_NAME_RE.search(text)
            if m is not None:
                out.setdefault(m.group(1), Span(line, m.start(1) + 1, line, m.end(1) + 1))
    return out


def _entry_name(entries: dict[str, Span], k: KernelReport) -> Span | None:
    """The kernel's name on a PTX `.entry` line: its mangled name's, else its plain name's."""
    for n in (k.mangled, split_kernel_name(k.name or "")[0]):
        if n and n in entries:
            return entries[n]
    return None


def _reported_line(lines: Sequence[str], k: KernelReport) -> Span | None:
    """The text of the kernel's reported line (clamped to the text)."""
    reported = k.line
    if not isinstance(reported, int) or reported < 1 or not lines:
        return None
    line = min(reported, len(lines))
    text = lines[line - 1]
    return Span(line, len(text) - len(text.lstrip()) + 1, line, len(text.rstrip()) + 1)


def annotation_dims(launch: Launch | None) -> tuple[str, str]:
    """(grid, block) texts of a `// kerncast:` annotation: the launch's sizes, else the defaults."""
    grid = (launch.grid.value if launch is not None else None) or DEFAULT_GRID
    block = (launch.block.value if launch is not None else None) or DEFAULT_BLOCK
    return _dims(grid), _dims(block)


def _dims(dim: Sequence[int]) -> str:
    """`(64, 2, 1)` -> `64,2` (trailing 1s dropped)."""
    vals = list(dim)
    while len(vals) > 1 and vals[-1] == 1:
        vals.pop()
    return ",".join(str(v) for v in vals)


# ------------------------------------------------------------------------------------------------ launches


def _launch_places(lines: Sequence[str], facts: SourceFacts, report: FileReport) -> tuple[LaunchPlace, ...]:
    """The launch sites of reported kernels (a header's kernel too: the header shows its name's lens)."""
    by_name = {split_kernel_name(k.name)[0]: k for k in (*report.included_kernels, *report.kernels)}
    out = []
    for site in facts.sites:
        k = by_name.get(site.base_name)
        if k is None or site.config_offset < 0 or not 0 < site.line <= len(lines):
            continue
        end_line, end_col = facts.position(site.config_offset)
        end = end_col + 3 if end_line == site.line else len(lines[site.line - 1]) + 1
        out.append(LaunchPlace(Span(site.line, site.column, site.line, end), k.mangled))
    return tuple(out)


# ------------------------------------------------------------------------------------------------ findings


def finding_place(f: Finding, lines: Sequence[str]) -> FindingPlace:
    """Where an editor shows a finding and its related locations (see `finding_span`)."""
    return FindingPlace(finding_span(f, lines), tuple(finding_span(r, lines) for r in f.related))


def finding_span(f: Finding | Related, lines: Sequence[str]) -> Span:
    """Where an editor shows a finding (or a related location): its range, clamped to the text; an empty range,
    or one that starts past its line's text, covers the line's text; a range of one character covers the word
    that starts there."""
    line0 = max(0, int(f.line or 1) - 1)
    if lines:
        line0 = min(line0, len(lines) - 1)
    end_line0 = max(line0, int(f.end_line or f.line or 1) - 1)
    col0 = max(0, int(f.column or 1) - 1)
    end_col0 = max(0, int(f.end_column or 1) - 1)
    text = lines[line0] if 0 <= line0 < len(lines) else ""
    if (end_line0, end_col0) <= (line0, col0) or col0 >= len(text.rstrip()) and end_line0 == line0:
        start = len(text) - len(text.lstrip())
        end = len(text.rstrip("\r\n").rstrip())
        return Span(line0 + 1, start + 1, line0 + 1, max(end, start) + 1)
    if end_line0 == line0 and end_col0 - col0 <= 1:
        end_col0 = max(end_col0, _word_end(text, col0))
    if lines and end_line0 >= len(lines):
        end_line0, end_col0 = len(lines) - 1, len(lines[-1])
    return Span(line0 + 1, col0 + 1, end_line0 + 1, end_col0 + 1)


def _word_end(text: str, col0: int) -> int:
    """End of the identifier-like word (letters, digits, `_`, `$`, `.`) that starts at col0."""
    end = col0
    while end < len(text) and (text[end].isalnum() or text[end] in "_$."):
        end += 1
    return end
