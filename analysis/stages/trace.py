"""Feeds the trace model from a `KernelContext` and puts its time beside the other models' in the report.

With `--time-model trace` the time stage first predicts with the closed-form models (their times stay in
`models`; the kerncast model's DRAM bytes give the trace model its L2/DRAM split), then this stage runs the
trace model and makes its time the report's. The range covers the trace time and the other models' spread.
A kernel the trace model cannot follow (odd PTX the dataflow layer refuses) keeps the kerncast time, and a
note says why.
"""

from __future__ import annotations

from kerncast.analysis.context import KernelContext
from kerncast.analysis.dataflow import ODD_PTX_ERRORS
from kerncast.analysis.timing.estimate import KernelGraphs, TimeEstimate
from kerncast.analysis.timing.trace import MODEL, predict_trace, trace_constants
from kerncast.analysis.tripcount import trip_values


def launch_params(ctx: KernelContext) -> dict[int, int]:
    """Kernel parameter index -> the launch's known value for it."""
    launch = ctx.report.launch
    out: dict[int, int] = {}
    if launch is None:
        return out
    for i in range(len(ctx.function.params)):
        s = launch.param(i)
        if s is not None and isinstance(s.value, int):
            out[i] = s.value
    return out


def add_trace_model(ctx: KernelContext, est: TimeEstimate, graphs: KernelGraphs) -> None:
    """Run the trace model on the context's launch and make it the estimate's chosen time; `graphs` are the
    kernel's dependence DAGs and instruction classes that the closed-form models were predicted with."""
    launch, profile = ctx.report.launch, ctx.gpu
    if launch is None or profile is None or not launch.blocks or not launch.threads_per_block:
        return
    try:
        res = predict_trace(ctx.cfg, ctx.loops, profile, ctx.dataflow.symbolic, blocks=launch.blocks,
                            threads_per_block=launch.threads_per_block, grid=launch.grid_dims() or
                            (launch.blocks, 1, 1), block=launch.block_dims() or (launch.threads_per_block, 1, 1),
                            blocks_per_sm=int(est.detail.get("blocks_per_sm") or 1),
                            trips=trip_values(ctx.trip_counts), params=launch_params(ctx), memory=ctx.memory,
                            dram_bytes=est.detail.get("dram_bytes"), graphs=graphs)
    except ODD_PTX_ERRORS as exc:
        est.assumptions.append(f"trace model not run ({type(exc).__name__}: {exc}): the kerncast time is shown")
        return
    others = list(est.models.values())
    kerncast = est.models.get("kerncast")
    est.models[MODEL] = res.us
    est.us, est.cycles, est.model = res.us, res.us * profile.core_clock_mhz, MODEL
    est.range_us = (min([res.us, *others]), max([res.us, *others]))
    est.range_basis = "range: the trace time and the spread of the three closed-form models for this launch"
    est.bottleneck = f"trace simulation ({res.warps} warps, {res.distinct_traces} distinct traces)"
    est.detail.update({"trace_round_cycles": res.round_cycles, "trace_rounds": res.rounds,
                       "trace_block_pace_cycles": res.block_pace_cycles, "trace_distinct_traces": res.distinct_traces,
                       "trace_issued": res.issued, "trace_divergent_branches": res.divergent_branches,
                       "trace_assumed_branches": res.assumed_branches})
    est.assumptions.extend(res.notes)
    note = disagreement(res.us, kerncast)
    if note:
        est.assumptions.append(note)
    est.assumptions.append(est.range_basis)


def disagreement(trace_us: float, kerncast_us: float | None) -> str | None:
    """A note when the trace and kerncast models differ by more than `data/trace.toml`'s factor: two different
    kinds of model disagreeing is worth saying, and the shown range covers both."""
    if not kerncast_us or kerncast_us <= 0 or trace_us <= 0:
        return None
    ratio = max(trace_us, kerncast_us) / min(trace_us, kerncast_us)
    if ratio <= float(trace_constants()["disagreement"]["factor"]):
        return None
    return (f"the trace and kerncast models disagree by {ratio:.1f}x ({trace_us:.4g} us against "
            f"{kerncast_us:.4g} us): the range covers both")
