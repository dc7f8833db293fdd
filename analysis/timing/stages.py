"""The pipeline's launch and time stages: what the time models need from a `KernelContext`, and their report.

`launch_stage` infers the launch (flags, settings, annotations, `<<<>>>` sites, `.reqntid`, defaults), the
loops' trip counts, the GPU profile and the occupancy; `time_stage` predicts the time. Neither raises: a bad
GPU profile becomes a file-level finding (`load_gpu`) and a note on each kernel, and the kernel is
reported without a time.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.report import Finding
from kerncast.analysis.timing.estimate import predict_time


def load_gpu(gpu: str) -> tuple[Any, Finding | None]:
    """The GPU profile, or None and a file-level error when it cannot be loaded (unknown id, broken file).

    The pipeline calls this once per file and hands the profile to every kernel's context.
    """
    from kerncast.analysis.gpus import ProfileError, load_profile

    try:
        return load_profile(gpu), None
    except ProfileError as exc:
        return None, Finding("gpu-profile-error", "error", 1, 1, 1, 1,
                             f"GPU profile: {exc}; the kernels are analysed without a time prediction")


def _kernel_settings(ctx: Any) -> Any:
    settings = ctx.options.kernel_settings or {}
    fn = ctx.function
    for key in (fn.display_name, fn.name, fn.display_name.split("<", 1)[0]):
        if key in settings:
            return settings[key]
    return None


def launch_stage(ctx: Any) -> None:
    """Launch configuration and trip counts into the context and the report."""
    from kerncast.analysis.launch import LaunchOverrides, infer_launch
    from kerncast.analysis.tripcount import trip_counts

    overrides = ctx.options.overrides
    if overrides is None and ctx.options.loops is not None:
        overrides = LaunchOverrides(loops=ctx.options.loops)
    reqntid = ctx.function.directives.get("reqntid")
    launch = infer_launch(ctx.function.display_name, ctx.cuda_source, overrides=overrides,
                          settings=_kernel_settings(ctx), reqntid=tuple(reqntid) if reqntid else None,
                          source_path=getattr(ctx, "source_path", None), include_dirs=list(ctx.options.include_dirs))
    ctx.launch = launch
    ctx.report.launch = launch
    ctx.trip_counts = trip_counts(ctx.function, ctx.cfg, ctx.loops, launch)
    for lp, info in zip(ctx.loops.loops, ctx.report.loops, strict=False):
        count = ctx.trip_counts.get(lp.header)
        if count is not None:
            info.trip_count = count.value
            info.trip_source = count.source
            info.trip_detail = count.detail or None
    if ctx.gpu is None:
        ctx.report.notes.append(f"no time prediction: the GPU profile {ctx.options.gpu!r} could not be loaded")


def occupancy_stage(ctx: Any) -> None:
    """Occupancy of the launch on the GPU profile, from ptxas's registers (after `resources_stage`)."""
    from kerncast.analysis.occupancy import compute_occupancy

    if ctx.gpu is None or ctx.launch is None:
        return
    profile = ctx.gpu
    tpb = ctx.launch.threads_per_block
    if not tpb:
        return
    regs = ctx.report.registers
    if regs is None:
        ctx.extras.setdefault("time_assumptions", []).append(
            "registers per thread unknown (ptxas did not run): occupancy counts no register limit")
        regs = 0
    dyn = ctx.launch.dynamic_shared_bytes.value or 0
    shared = (ctx.report.shared_bytes or 0) + dyn
    occ = compute_occupancy(profile, tpb, regs, shared)
    ctx.occupancy = occ
    ctx.report.occupancy = occ


def _dims(sourced: Any) -> tuple[int, int, int] | None:
    """A launch's grid or block shape as three ints, None when it is not known."""
    value = getattr(sourced, "value", None)
    try:
        dims = tuple(int(d) for d in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return None
    return (dims + (1, 1, 1))[:3] if dims and all(d > 0 for d in dims) else None  # type: ignore[return-value]


def time_stage(ctx: Any) -> None:
    """Predict the kernel's time (thesis scheduler, MWP-CWP, roofline range) into `ctx.time`/`report.time`."""
    from kerncast.analysis.tripcount import trip_count_assumptions

    profile, launch = ctx.gpu, ctx.launch
    if profile is None or launch is None or not launch.blocks or not launch.threads_per_block:
        return
    notes = list(launch.assumptions) + trip_count_assumptions(ctx.trip_counts)
    notes += ctx.extras.get("time_assumptions", [])
    occ = ctx.occupancy
    blocks_per_sm = None
    occupancy = None
    if occ is not None:
        notes += list(getattr(occ, "notes", []) or [])
        if occ.active_blocks_per_sm <= 0:
            ctx.report.notes.append("no time prediction: the launch cannot run on "
                                    f"{profile.name} ({occ.limiter} limit)")
            return
        blocks_per_sm, occupancy = occ.active_blocks_per_sm, occ.occupancy
    trips = {h: float(s.value) for h, s in ctx.trip_counts.items() if isinstance(s.value, int | float)}
    est = predict_time(ctx.cfg, ctx.loops, profile, blocks=launch.blocks, threads_per_block=launch.threads_per_block,
                       trips=trips, blocks_per_sm=blocks_per_sm, occupancy=occupancy,
                       registers=ctx.report.registers, shared_bytes=ctx.report.shared_bytes or 0,
                       memory=ctx.memory, assumptions=notes, model=ctx.options.time_model,
                       grid=_dims(launch.grid), block=_dims(launch.block))
    ctx.time = est
    ctx.report.time = est
