"""The pipeline stage: run `analyze_memory` on the kernel's launch and trip counts and publish its results.

The launch carries whether each value is known or only the tool's default. A block shape that is only the
default is a guess, and a warning must not rest on a guess, so it is not passed on: the analysis then
states its own assumption (blockDim.x a multiple of 32) instead. Trip counts are passed as the time model uses
them (one source for every stage); a trip count only weighs how often an access runs, never whether it is
flagged, and a fallback count is stated once, with the time assumptions.
"""

from __future__ import annotations

from kerncast.analysis.context import KernelContext
from kerncast.analysis.dataflow import ODD_PTX_ERRORS
from kerncast.analysis.findings.memory import memory_findings
from kerncast.analysis.launch import Sourced
from kerncast.analysis.memory.analysis import MemoryAnalysis, analyze_memory
from kerncast.analysis.tripcount import trip_values


def _trips(counts: dict[int, Sourced]) -> dict[int, int]:
    """The trip counts the time model uses, fallbacks included, as the whole iterations the analysis weighs
    accesses with."""
    return {h: int(v) for h, v in trip_values(counts).items() if v >= 0}


def memory_stage(ctx: KernelContext) -> None:
    """Run the memory and divergence analysis for one kernel: `ctx.memory`, findings, and assumptions."""
    launch = ctx.report.launch
    block = launch.block_dims(known_only=True) if launch is not None else None
    params = launch.known_params() if launch is not None else {}
    report = ctx.report
    try:
        result = analyze_memory(ctx.module, ctx.function, ctx.cfg, ctx.loops, block, params, _trips(ctx.trip_counts),
                                ctx.options.thresholds, ctx.main_file, cuda_source=ctx.cuda_source,
                                budget_s=ctx.options.budget_s, dataflow=ctx.dataflow)
        findings = memory_findings(result, ctx.options.thresholds, ctx.cuda_source, report.line, ctx.options.budget_s)
    except ODD_PTX_ERRORS as exc:
        report.notes.append(f"memory analysis skipped: {type(exc).__name__}: {exc}")
        ctx.memory = MemoryAnalysis()
        return
    ctx.memory = result
    report.findings.extend(findings)
    for note in result.assumptions:
        text = f"memory analysis: {note}"
        if text not in report.notes:
            report.notes.append(text)
