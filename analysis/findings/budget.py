"""The `analysis-budget` finding: an analysis that stopped at its time budget says what it skipped.

The memory analysis of one kernel is bounded (`AnalysisOptions.budget_s`); past its budget it stops, and what it
analysed stands. This information finding, at the kernel's line, says how much was left out, so that a missing
warning is never read as a clean kernel.
"""

from __future__ import annotations

from kerncast.analysis.finding import Finding
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.rules import Code


def budget_finding(result: MemoryAnalysis, budget_s: float | None, kernel_line: int | None) -> Finding:
    """The information finding of a memory analysis that ran out of time: what it skipped, what stands."""
    done = len(result.accesses) + len(result.branches)
    line = kernel_line or 1
    return Finding(
        Code.ANALYSIS_BUDGET, "information", line, 1, line, 2,
        f"memory analysis stopped at its time budget of {budget_s:g} s: {result.skipped} memory "
        f"instruction(s) and branch(es) of this kernel were not analysed for coalescing, bank conflicts or "
        f"divergence ({done} analysed); the rest of the report is complete",
        detail={"stage": "memory", "budget_s": budget_s, "skipped": result.skipped, "analysed": done},
        kernel=result.facts.kernel if result.facts is not None else None)
