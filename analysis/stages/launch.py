"""The pipeline's launch stages: the launch inferred once, then the loops' trip counts under it.

The launch (flags, settings, annotations, `<<<>>>` sites, `.reqntid`, defaults; see `launch.infer_launch`)
is the one value memory, time and power read: every field says whether it is known or assumed. The trip
counts are read from the PTX under that launch (`tripcount`) and shown on the report's loops. They are a stage
of their own because they follow from the kernel's PTX and its launch alone, both in the kernel cache's key:
a save works them out only for the kernels it analyses again, not for the ones it takes from the cache.
"""

from __future__ import annotations

from pathlib import Path

from kerncast.analysis.context import KernelContext
from kerncast.analysis.launch import Launch, LaunchOverrides, infer_launch
from kerncast.analysis.tripcount import trip_counts


def _kernel_settings(ctx: KernelContext) -> LaunchOverrides | None:
    """The editor's launch settings for this kernel, by display name, mangled name or template name."""
    settings = ctx.options.kernel_settings or {}
    fn = ctx.function
    for key in (fn.display_name, fn.name, fn.display_name.split("<", 1)[0]):
        if key in settings:
            return settings[key]
    return None


def _from_source(launch: Launch) -> bool:
    """Whether a launch's grid or block was read from code: a `<<<...>>>` site or an annotation."""
    return any(s.source in ("launch-site", "annotation") for s in (launch.grid, launch.block))


def launch_stage(ctx: KernelContext) -> None:
    """Launch configuration and trip counts into the context and the report."""
    overrides = ctx.options.overrides
    if overrides is None and ctx.options.loops is not None:
        overrides = LaunchOverrides(loops=ctx.options.loops)
    reqntid = ctx.function.directives.get("reqntid")
    source, path = ctx.launch_source or (ctx.cuda_source, ctx.source_path)

    def infer(text: str | None, where: str | None) -> Launch:
        return infer_launch(ctx.function.display_name, text, overrides=overrides, settings=_kernel_settings(ctx),
                            reqntid=tuple(reqntid) if reqntid else None, source_path=where,
                            include_dirs=list(ctx.options.include_dirs), scan=ctx.scans.scan)

    launch = infer(source, path)
    if ctx.launch_source is not None and not _from_source(launch):
        # a header that launches its kernel itself, from a host wrapper the .cu calls (cuda-samples'
        # HSOpticalFlow): the launch is the header's own, with its wrapper's values from the sources beside it
        own = infer(ctx.cuda_source, ctx.source_path)
        if _from_source(own):
            launch, path = own, ctx.source_path
    ctx.report.launch = launch
    if ctx.launch_source is not None and path not in (None, ctx.source_path) and _from_source(launch):
        ctx.report.notes.append(f"launched from {Path(path).name}: the lines its launch's details name are that "
                                "file's")
    if ctx.gpu is None:
        ctx.report.notes.append(f"no time prediction: the GPU profile {ctx.options.gpu!r} could not be loaded")


def trip_count_stage(ctx: KernelContext) -> None:
    """The loops' trip counts under the launch, into the context and the report's loops."""
    assert ctx.report.launch is not None, "the launch stage runs first"
    ctx.trip_counts = trip_counts(ctx.function, ctx.cfg, ctx.loops, ctx.report.launch, ctx.dataflow,
                                  ctx.main_file)
    for lp, info in zip(ctx.loops.loops, ctx.report.loops, strict=False):
        count = ctx.trip_counts.get(lp.header)
        if count is not None:
            info.trip_count = count.value
            info.trip_source = count.source
            info.trip_detail = count.detail or None
