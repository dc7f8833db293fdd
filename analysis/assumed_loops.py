"""Loops whose trip count stays assumed: which they are and how far the assumption moves the time (the
`assumed-trip-count` finding at each such loop's line is `findings/assumed_loops.py`).

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
from kerncast.analysis.launch import GUESSED_SOURCES, Sourced
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.memory.analysis import MemoryAnalysis
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


def assumed_lines(counts: dict[int, Sourced]) -> dict[int | None, list[Sourced]]:
    """The assumed counts by source line: nvcc's unrolled copy and remainder of one loop share its line."""
    out: dict[int | None, list[Sourced]] = {}
    for _, count in sorted(assumed_counts(counts).items()):
        out.setdefault(count.line, []).append(count)
    return out
