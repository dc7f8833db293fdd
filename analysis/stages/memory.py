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
    _unreached_loops(ctx, result.dead_blocks)
    report.findings.extend(findings)
    for note in result.assumptions:
        text = f"memory analysis: {note}"
        if text not in report.notes:
            report.notes.append(text)


def _unreached_loops(ctx: KernelContext, dead: frozenset[int]) -> None:
    """A loop whose count fell back to an assumed value but which no thread of the launch reaches (the other
    side of a branch the launch's values decide, such as the `n <= 0` copy of a loop nest nvcc emits beside
    the `n > 0` one) runs 0 times: the time model already leaves its blocks out, and its count is no
    assumption to report."""
    for lp, info in zip(ctx.loops.loops, ctx.report.loops, strict=False):
        count = ctx.trip_counts.get(lp.header)
        if lp.header not in dead or count is None or count.source == "ptx":
            continue
        settled = Sourced(0, "ptx", count.line, "no thread of this launch reaches the loop (a branch ahead of it "
                          "is decided against it by the launch's sizes and parameters): 0 iterations")
        ctx.trip_counts[lp.header] = settled
        if info is not None:
            info.trip_count, info.trip_source, info.trip_detail = settled.value, settled.source, settled.detail
