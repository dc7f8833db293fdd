"""The `assumed-trip-count` finding: a loop whose count is a guess says so at its line, and the first offers
the annotation that states the count (`// kerncast: loops=N?` above the kernel).

Which counts are guesses, and how far they move the time range, is `assumed_loops.py`'s; this module only turns
them into findings.
"""

from __future__ import annotations

import re
from typing import Any

from kerncast.analysis.assumed_loops import ASSUMED_SCALES, assumed_counts
from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.edits import insert_lines_above
from kerncast.analysis.finding import Finding, Fix, line_range, source_lines
from kerncast.analysis.launch import Sourced, split_kernel_name
from kerncast.analysis.loops import Loop
from kerncast.analysis.ptx.model import line_in_file
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import scanned

#: a statement that opens a loop
_LOOP_KEYWORD_RE = re.compile(r"\b(?:for|while|do)\b")
#: a comment within a line (`// ...` to its end, `/* ... */`)
_COMMENT_RE = re.compile(r"//.*$|/\*.*?\*/")
#: how far above a loop body's first line its `while (true)` may stand (braces and comments between)
_LOOK_UP_LINES = 6


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


def _names_loop(text: tuple[str, ...], line: int) -> bool:
    """Whether a line's code (its comments left out: "faster to do" is no loop) opens a loop."""
    if not 1 <= line <= len(text):
        return False
    code = _COMMENT_RE.sub(" ", text[line - 1]).strip()
    return not code.startswith(("*", "/*")) and _LOOP_KEYWORD_RE.search(code) is not None


def loop_opening_above(text: tuple[str, ...], line: int, floor: int) -> int | None:
    """The `while (true)` or `for (;;)` a loop body's first line sits under: such a loop statement has no
    instruction of its own, so the nearest line above naming a loop is taken, over blank, brace and comment
    lines only (never above `floor`, the kernel's first line)."""
    for n in range(line - 1, max(floor, line - _LOOK_UP_LINES) - 1, -1):
        if _names_loop(text, n):
            return n
        if not 1 <= n <= len(text):  # no source line there (a .ptx input has no source text at all)
            return None
        if text[n - 1].strip() and not text[n - 1].strip().startswith(("{", "//", "/*", "*")):
            return None
    return None


def _loop_line(ctx: KernelContext, lp: Loop, text: tuple[str, ...], kernel_line: int) -> int | None:
    """The source line of one loop's `for`/`while`/`do`: the line of a branch that closes its back edge or leaves
    it (the loop's test), where that line names a loop; else the first line of the loop naming one; else the
    loop statement just above its first line (`while (true)`); else its first line. Lines of the kernel come
    before the lines of device functions defined above it, which inlining brings into the loop; its first line
    alone can also be another statement, a value nvcc recomputes inside the loop (`bx = blockIdx.x`)."""
    span = lp.source_lines(ctx.cfg, ctx.main_file)
    if span is None:
        return None
    tests = {lp.header, *lp.latches, *(inside for inside, _ in lp.exits)}
    branch_lines = sorted({n for b in tests for ins in ctx.cfg.instructions(b)[-1:] if ins.opcode == "bra"
                           and (n := line_in_file(ins.loc, ctx.main_file)) is not None})
    named = [n for n in branch_lines if _names_loop(text, n)]
    if named:
        return named[0]
    every = sorted({n for b in lp.blocks for ins in ctx.cfg.instructions(b)
                    if (n := line_in_file(ins.loc, ctx.main_file)) is not None})
    own = [n for n in every if n >= kernel_line] or every
    first = next((n for n in own if _names_loop(text, n)), None)
    if first is not None:
        return first
    return loop_opening_above(text, own[0], kernel_line) or own[0]


def _kernel_line(ctx: KernelContext) -> int:
    """The first line of the kernel's definition in the analysed source (1 when it cannot be found)."""
    facts = scanned(ctx.cuda_source)
    kdef = facts.kernel(split_kernel_name(ctx.report.name)[0], included=False) if facts is not None else None
    return facts.position(kdef.start_offset)[0] if kdef is not None else 1


def _first_lines(ctx: KernelContext) -> dict[int, int]:
    """Each loop's source line (its `for`/`while`, see `_loop_line`), by header."""
    text = source_lines(ctx.cuda_source) if ctx.cuda_source else ()
    kernel_line = _kernel_line(ctx)
    out = {}
    for lp in ctx.loops.loops:
        line = _loop_line(ctx, lp, text, kernel_line)
        if line is not None:
            out[lp.header] = line
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
