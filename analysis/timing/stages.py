"""The pipeline's occupancy and time stages: what the time models need from a `KernelContext`, and their report.

`occupancy_stage` computes the occupancy of the launch on the GPU profile; `time_stage` predicts the time.
Neither raises: a kernel without a GPU profile or a launch size is reported without a time. The launch
itself is inferred by `kerncast.analysis.launch_stage`, the GPU profile loaded by `kerncast.analysis.gpus`.
"""

from __future__ import annotations

from kerncast.analysis.context import KernelContext
from kerncast.analysis.occupancy import compute_occupancy
from kerncast.analysis.timing.estimate import DEFAULT_TIME_MODEL, predict_time
from kerncast.analysis.timing.trace_stage import add_trace_model
from kerncast.analysis.tripcount import trip_count_assumptions, trip_values


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
    dyn = ctx.report.launch.dynamic_shared_bytes.value or 0
    shared = (ctx.report.shared_bytes or 0) + dyn
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
    blocks_per_sm = None
    occupancy = None
    if occ is not None:
        notes += list(occ.notes)
        if occ.active_blocks_per_sm <= 0:
            ctx.report.notes.append("no time prediction: the launch cannot run on "
                                    f"{profile.name} ({occ.limiter} limit)")
            return
        blocks_per_sm, occupancy = occ.active_blocks_per_sm, occ.occupancy
    est = predict_time(ctx.cfg, ctx.loops, profile, blocks=launch.blocks, threads_per_block=launch.threads_per_block,
                       trips=trip_values(ctx.trip_counts), blocks_per_sm=blocks_per_sm, occupancy=occupancy,
                       registers=ctx.report.registers, shared_bytes=ctx.report.shared_bytes or 0,
                       memory=ctx.memory, assumptions=notes, model=DEFAULT_TIME_MODEL
                       if ctx.options.time_model == "trace" else ctx.options.time_model,
                       grid=launch.grid_dims(), block=launch.block_dims())
    ctx.report.time = est
    if ctx.options.time_model == "trace":
        add_trace_model(ctx, est)
