"""Loops whose trip count stays assumed: which they are, how far the assumption moves the time, and the
`assumed-trip-count` finding at each such loop's line.

A count the PTX does not give (a bound loaded from memory, as in a CSR row loop) falls back to the launch's
`loops` value; when that value is the default or a placeholder the user has not filled in (`loops=10?`), the
count is a guess, and a guess must not look like a fact. So the kernel's time range is widened to cover the
guessed counts at a quarter and at four times their value (`ASSUMED_SCALES`: a factor of four either way is a
stated rule, not a fitted one), by re-predicting with those counts: the time model is linear in the
instructions, so this costs two more predictions. The memory requests of the re-prediction are scaled the same
way, per enclosing assumed loop, so that a memory-bound loop moves the time as much as a compute-bound one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.context import KernelContext, reported_here
from kerncast.analysis.edits import insert_lines_above
from kerncast.analysis.finding import Finding, Fix, line_range
from kerncast.analysis.launch import GUESSED_SOURCES, Sourced, split_kernel_name
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import scanned
from kerncast.analysis.timing.estimate import TimeEstimate
from kerncast.analysis.tripcount import trip_values

#: the factors the assumed counts are scaled by to bound the time range (a quarter and four times)
ASSUMED_SCALES = (0.25, 4.0)


def assumed_counts(counts: dict[int, Sourced]) -> dict[int, Sourced]:
    """The trip counts (by loop header) that are a guess: the default or an unfilled placeholder."""
    return {h: c for h, c in counts.items() if c.source in GUESSED_SOURCES}


def scaled_trips(counts: dict[int, Sourced], factor: float) -> dict[int, float]:
    """Every loop's count, the assumed ones multiplied by `factor`."""
    guessed = assumed_counts(counts)
    return {h: v * factor if h in guessed else v for h, v in trip_values(counts).items()}


def scaled_memory(memory: Any, cfg: Cfg, forest: LoopForest, headers: set[int], factor: float) -> Any:
    """The memory analysis with each access's executions multiplied by `factor` once per assumed loop around
    it; anything that is not a full `MemoryAnalysis` is returned as it is."""
    if not isinstance(memory, MemoryAnalysis) or not headers or factor == 1.0:
        return memory
    around = {b: sum(1 for lp in forest.loops if lp.header in headers and b in lp.blocks)
              for b in range(len(cfg.blocks))}
    accesses = [replace(a, executions=a.executions * factor ** around.get(cfg.block_of[a.index], 0))
                if 0 <= a.index < len(cfg.block_of) else a for a in memory.accesses]
    return replace(memory, accesses=accesses)


def widen_for_assumed(est: TimeEstimate, base_us: float, repredict: Callable[[float], float], n: int) -> None:
    """Widen `est.range_us` so that it covers the time with the assumed counts scaled by each of
    `ASSUMED_SCALES`. `repredict(factor)` is the closed-form model's time at those counts and `base_us` its time
    at the assumed counts; their ratios are applied to `est.us` (the same numbers when the chosen model is the
    closed-form one)."""
    if n <= 0 or base_us <= 0:
        return
    points = [est.us * repredict(f) / base_us for f in ASSUMED_SCALES]
    low, high = est.range_us if est.range_us is not None else (est.us, est.us)
    est.range_us = (min(low, *points), max(high, *points))
    loops = f"{n} loop count{'s' if n != 1 else ''}"
    note = (f"widened for {loops} assumed (not read from the code): the time at a quarter and at four times the "
            f"assumed count{'s' if n != 1 else ''} is {min(points):.3g} to {max(points):.3g} µs")
    est.range_basis = f"{est.range_basis}; {note}" if est.range_basis else note
    est.detail["assumed_loops"] = n


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


def assumed_lines(counts: dict[int, Sourced]) -> dict[int | None, list[Sourced]]:
    """The assumed counts by source line: nvcc's unrolled copy and remainder of one loop share its line."""
    out: dict[int | None, list[Sourced]] = {}
    for _, count in sorted(assumed_counts(counts).items()):
        out.setdefault(count.line, []).append(count)
    return out


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
    if not reported_here(ctx):
        return
    ctx.report.findings.extend(assumed_loop_findings(ctx))
