"""The pipeline stage: adapt the kernel context (launch, trip counts) to `analyze_memory` and publish results.

The launch configuration and trip counts carry where each value came from. A block shape that is only the
tool's default is a guess, and a warning must not rest on a guess, so it is not passed on: the analysis then
states its own assumption (blockDim.x a multiple of 32) instead. Trip counts are passed as the time model uses
them (one source for every stage); a trip count only weighs how often an access runs, never whether it is
flagged, and a fallback count is stated once, with the time assumptions.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.memory.analysis import DEFAULT_BUDGET_S, MemoryAnalysis, analyze_memory

_GUESSED = frozenset({"default"})


def _value(sourced: Any) -> Any:
    """The value of a `Sourced` (or a plain value), None when it is only a default."""
    if sourced is None:
        return None
    if getattr(sourced, "source", None) in _GUESSED:
        return None
    return getattr(sourced, "value", sourced)


def _block(launch: Any) -> tuple[int, int, int] | None:
    value = _value(getattr(launch, "block", None))
    if value is None:
        return None
    try:
        dims = tuple(int(d) for d in value)
    except (TypeError, ValueError):
        return None
    if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
        return None
    return (dims + (1, 1))[:3]  # type: ignore[return-value]


def _params(launch: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    params = getattr(launch, "params", None) or {}
    for name, sourced in dict(params).items():
        v = _value(sourced)
        if isinstance(v, bool) or not isinstance(v, int):
            continue
        out[str(name)] = v
    return out


def _trips(counts: Any) -> dict[int, int]:
    """The trip counts the time model uses, fallbacks included, so that both stages count alike; the
    launch stage states a fallback once, in the time assumptions."""
    out: dict[int, int] = {}
    for header, sourced in dict(counts or {}).items():
        v = getattr(sourced, "value", sourced)
        if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0:
            out[int(header)] = int(v)
    return out


def memory_stage(ctx: Any) -> None:
    """Run the memory and divergence analysis for one kernel: `ctx.memory`, findings, and assumptions."""
    launch = getattr(ctx, "launch", None)
    options = getattr(ctx, "options", None)
    thresholds = getattr(options, "thresholds", None)
    report = ctx.report
    try:
        result = analyze_memory(ctx.module, ctx.function, ctx.cfg, ctx.loops, _block(launch), _params(launch),
                                _trips(getattr(ctx, "trip_counts", None)), thresholds,
                                getattr(ctx, "main_file", None), cuda_source=getattr(ctx, "cuda_source", None),
                                kernel_line=getattr(report, "line", None),
                                budget_s=getattr(options, "budget_s", DEFAULT_BUDGET_S))
    except (ArithmeticError, ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        report.notes.append(f"memory analysis skipped: {type(exc).__name__}: {exc}")
        ctx.memory = MemoryAnalysis()
        return
    ctx.memory = result
    for f in result.findings:
        report.findings.append(f)
    for note in result.assumptions:
        text = f"memory analysis: {note}"
        if text not in report.notes:
            report.notes.append(text)
