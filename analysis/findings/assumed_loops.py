"""The `assumed-trip-count` finding: a loop whose count is a guess says so at its line, and the first offers
the annotation that states the count (`// kerncast: loops=N?` above the kernel).

Which counts are guesses, and how far they move the time range, is `assumed_loops.py`'s; this module only turns
them into findings.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.assumed_loops import ASSUMED_SCALES, assumed_counts
from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.edits import insert_lines_above
from kerncast.analysis.finding import Finding, Fix, line_range
from kerncast.analysis.launch import Sourced, split_kernel_name
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import scanned


def annotation_fix(cuda_source: str, kernel: str, count: Any) -> Fix | None:
    """The `// kerncast: loops=N?` placeholder above the kernel's definition, N the assumed count."""
    facts = scanned(cuda_source)
    base, _ = split_kernel_name(kernel)
    kdef = facts.kernel(base, included=False) if facts is not None else None
    if kdef is None:
        return None
    line, _ = facts.position(kdef.start_offset)
    spec = rule(Code.ASSUMED_TRIP_COUNT).fix(FixKind.ANNOTATE_LOOP_COUNT)
    edit = insert_lines_above(facts, line, [f"// kerncast: loops={count}?"])
    return Fix(FixKind.ANNOTATE_LOOP_COUNT, "state the loop count: // kerncast: loops=N above the kernel",
               {"placeholder": count}, [edit], spec.applicability)


def _first_lines(ctx: KernelContext) -> dict[int, int]:
    """Each loop's first source line (its `for`/`while`), by header; the header's line is the loop's test."""
    out = {}
    for lp in ctx.loops.loops:
        lines = lp.source_lines(ctx.cfg, ctx.main_file)
        if lines is not None:
            out[lp.header] = lines[0]
    return out


def assumed_loop_findings(ctx: KernelContext) -> list[Finding]:
    """One `assumed-trip-count` finding per source line with loops whose count is a guess (nvcc's unrolled copy
    and remainder of one loop share its line), at the loop's first line; the first carries the annotation fix
    (one annotation states every loop count of the kernel), unless the count already comes from a placeholder
    the user has yet to fill in."""
    first = _first_lines(ctx)
    by_line: dict[int, list[Sourced]] = {}
    for header, count in sorted(assumed_counts(ctx.trip_counts).items()):
        line = first.get(header, count.line)
        if line is not None:
            by_line.setdefault(line, []).append(count)
    out: list[Finding] = []
    for line, found in sorted(by_line.items()):
        count = found[0]
        start, end = line_range(ctx.cuda_source, line)
        fix = None
        if not out and count.source == "default" and ctx.cuda_source:
            fix = annotation_fix(ctx.cuda_source, ctx.report.name, count.value)
        low, high = (count.value * f for f in ASSUMED_SCALES)
        out.append(Finding(Code.ASSUMED_TRIP_COUNT, "information", line, start, line, end,
                           f"loop {count.detail}; the time range covers {low:g} to {high:g} iterations",
                           detail={"assumed": count.value, "source": count.source, "compiled_loops": len(found)},
                           fix=fix, kernel=ctx.report.name))
    return out


def assumed_loops_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add the kernel's `assumed-trip-count` findings."""
    add_findings(ctx, assumed_loop_findings)
