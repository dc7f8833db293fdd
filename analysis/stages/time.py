"""The pipeline's occupancy and time stages: what the time models need from a `KernelContext`, and their report.

`occupancy_stage` computes the occupancy of the launch on the GPU profile; `time_stage` predicts the time.
Neither raises: a kernel without a GPU profile or a launch size is reported without a time. The launch
itself is inferred by `kerncast.analysis.stages.launch`, the GPU profile loaded by `kerncast.analysis.gpus`.
"""

from __future__ import annotations

from kerncast.analysis.assumed_loops import (
    assumed_counts,
    assumed_lines,
    scaled_memory,
    scaled_trips,
    widen_for_assumed,
)
from kerncast.analysis.context import KernelContext
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.occupancy import compute_occupancy
from kerncast.analysis.stages.trace import add_trace_model
from kerncast.analysis.timing.estimate import (
    DEFAULT_TIME_MODEL,
    KernelGraphs,
    TimeEstimate,
    kerncast_us,
    kernel_graphs,
    predict_time,
)
from kerncast.analysis.tripcount import trip_count_assumptions


def occupancy_stage(ctx: KernelContext) -> None:
    """Occupancy of the launch on the GPU profile, from ptxas's registers (after `resources_stage`)."""
    if ctx.gpu is None or ctx.report.launch is None:
        return
    profile = ctx.gpu
    tpb = ctx.report.launch.threads_per_block
    if not tpb:
        return
    regs = ctx.report.registers
    if regs is None:
        ctx.time_assumptions.append(
            "registers per thread unknown (ptxas did not run): occupancy counts no register limit")
        regs = 0
    shared = (ctx.report.shared_bytes or 0) + ctx.report.launch.dynamic_shared
    occ = compute_occupancy(profile, tpb, regs, shared)
    ctx.report.occupancy = occ


def time_stage(ctx: KernelContext) -> None:
    """Predict the kernel's time (thesis scheduler, MWP-CWP, roofline range) into `report.time`."""
    profile, launch = ctx.gpu, ctx.report.launch
    if profile is None or launch is None or not launch.blocks or not launch.threads_per_block:
        return
    notes = list(launch.assumptions) + trip_count_assumptions(ctx.trip_counts)
    notes += ctx.time_assumptions
    occ = ctx.report.occupancy
    if occ is not None:
        notes += list(occ.notes)
        if occ.active_blocks_per_sm <= 0:
            ctx.report.notes.append("no time prediction: the launch cannot run on "
                                    f"{profile.name} ({occ.limiter} limit)")
            return
    est = repredict(ctx, ctx.memory, notes)
    base_us = est.us
    ctx.report.time = est
    if ctx.options.time_model == "trace":
        add_trace_model(ctx, est, time_graphs(ctx))
    guessed = set(assumed_counts(ctx.trip_counts))
    if guessed:
        widen_for_assumed(est, base_us, lambda factor: static_time(
            ctx, scaled_memory(ctx.memory, ctx.cfg, ctx.loops, guessed, factor), factor),
            len(assumed_lines(ctx.trip_counts)))


def static_model(ctx: KernelContext) -> str:
    """The `predict_time` model of the kernel's options: the trace model's own runs start from kerncast's."""
    return DEFAULT_TIME_MODEL if ctx.options.time_model == "trace" else ctx.options.time_model


def repredict(ctx: KernelContext, memory: MemoryAnalysis | None, notes: list[str] | None = None,
              assumed_factor: float = 1.0, graphs: KernelGraphs | None = None) -> TimeEstimate:
    """`predict_time` on the kernel's launch and occupancy with `memory` as its memory analysis: the time stage
    passes the kernel's own, `static_time` (gains, assumed loop counts) a changed copy. `assumed_factor` scales
    the trip counts that are a guess (the time range's bounds for them); `graphs` replaces the kernel's own
    instruction classes (a gain that charges an instruction as a cheaper one). Call only where the time stage
    predicted a time (a profile, a runnable launch)."""
    launch, occ = ctx.report.launch, ctx.report.occupancy
    assert ctx.gpu is not None and launch is not None and launch.blocks and launch.threads_per_block
    blocks_per_sm, occupancy = (occ.active_blocks_per_sm, occ.occupancy) if occ is not None else (None, None)
    return predict_time(ctx.cfg, ctx.loops, ctx.gpu, blocks=launch.blocks, threads_per_block=launch.threads_per_block,
                        trips=scaled_trips(ctx.trip_counts, assumed_factor), blocks_per_sm=blocks_per_sm,
                        occupancy=occupancy,
                        registers=ctx.report.registers, shared_bytes=ctx.report.shared_bytes or 0,
                        memory=memory, assumptions=notes, model=static_model(ctx),
                        grid=launch.grid_dims(), block=launch.block_dims(), graphs=graphs or time_graphs(ctx),
                        dynamic_shared=launch.dynamic_shared)


def static_time(ctx: KernelContext, memory: MemoryAnalysis | None, assumed_factor: float = 1.0,
                graphs: KernelGraphs | None = None) -> float:
    """The time of the kernel's static model alone, as `repredict(...).models[static_model(ctx)]` gives it: a
    re-prediction that is compared with that model's own time (a gain, the bounds of assumed loop counts) needs
    no other model, and the kerncast model, the usual one, runs without the thesis scheduler, MWP-CWP and the
    roofline."""
    model = static_model(ctx)
    if model != DEFAULT_TIME_MODEL:
        return repredict(ctx, memory, [], assumed_factor, graphs).models[model]
    launch, occ = ctx.report.launch, ctx.report.occupancy
    assert ctx.gpu is not None and launch is not None and launch.blocks and launch.threads_per_block
    return kerncast_us(ctx.cfg, ctx.loops, ctx.gpu, blocks=launch.blocks, threads_per_block=launch.threads_per_block,
                       trips=scaled_trips(ctx.trip_counts, assumed_factor),
                       blocks_per_sm=occ.active_blocks_per_sm if occ is not None else None,
                       registers=ctx.report.registers, shared_bytes=ctx.report.shared_bytes or 0, memory=memory,
                       grid=launch.grid_dims(), block=launch.block_dims(), graphs=graphs or time_graphs(ctx),
                       dynamic_shared=launch.dynamic_shared)


def time_graphs(ctx: KernelContext) -> KernelGraphs:
    """The kernel's dependence DAGs and instruction classes, built on first use and kept on the context."""
    if ctx.time_graphs is None:
        ctx.time_graphs = kernel_graphs(ctx.cfg)
    return ctx.time_graphs
