"""The estimated gain of a performance finding, as Nsight Compute attaches one to each of its rules: the
kernel's time predicted again with that finding's cost removed, divided into the time predicted as it is.

Only findings whose cost the time models read from one place get a gain, so that the number is the model's and
not a guess: an uncoalesced global access (its sectors per request set to what a unit-stride access of its
width moves, the same bar the finding is raised against), and a shared-memory bank conflict (its wavefronts set
to the ideal). The memory analysis is not run again: the accesses of the finding's line are copied with those
fields changed and handed to the time model, one extra run of it per finding: of that model alone
(`stages.static_time`), the same static model as the kernel's time (kerncast's when the trace model is chosen),
and the gain compares it with that model's point for the unchanged kernel.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Any

from kerncast.analysis.context import KernelContext
from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.memory_access import unit_stride_sectors
from kerncast.analysis.memory.analysis import AccessInfo, MemoryAnalysis
from kerncast.analysis.rules import Code
from kerncast.analysis.stages.time import static_model, static_time
from kerncast.analysis.timing.estimate import TIME_MODELS


@cache
def _little() -> float:
    """Below this ratio a finding is said to buy little (`data/gains.toml`)."""
    text = resources.files("kerncast.analysis").joinpath("data/gains.toml").read_text(encoding="utf-8")
    return float(tomllib.loads(text)["little"])


def ideal_access(a: AccessInfo, code: str) -> AccessInfo | None:
    """`a` with the cost `code` charges it removed, or None when `code` charges it nothing."""
    if code == Code.UNCOALESCED_GLOBAL and a.space == "global" and a.known and a.sectors_per_request:
        target = max(float(a.ideal_sectors or 0.0), unit_stride_sectors(a))
        if a.sectors_per_request > target:
            return replace(a, sectors_per_request=target, ideal_sectors=min(float(a.ideal_sectors or target),
                                                                             target))
    if (code == Code.SHARED_BANK_CONFLICT and a.space == "shared" and a.known and a.wavefronts
            and a.ideal_wavefronts and a.wavefronts > a.ideal_wavefronts):
        return replace(a, wavefronts=a.ideal_wavefronts)
    return None


def without_cost(memory: MemoryAnalysis, finding: Finding, kernel_line: int | None) -> MemoryAnalysis | None:
    """A shallow copy of `memory` whose accesses on the finding's line (several instructions of one line make
    one finding) no longer pay what the finding reports; None when no access of the line does."""
    changed = False
    accesses: list[AccessInfo] = []
    for a in memory.accesses:
        line = a.line if a.line is not None else kernel_line  # as the finding's place is chosen
        better = ideal_access(a, finding.code) if line == finding.line else None
        changed |= better is not None
        accesses.append(better or a)
    return replace(memory, accesses=accesses) if changed else None


def gain_text(speedup: float) -> str:
    """What a diagnostic says of a gain."""
    if speedup < _little():
        return f"fixing this buys little (model: {speedup:.2f}x)"
    digits = 2 if speedup < 2 else 1 if speedup < 10 else 0
    return f"fixing this: about {speedup:.{digits}f}x faster (model)"


def finding_gain(ctx: KernelContext, finding: Finding) -> dict[str, Any] | None:
    """The finding's gain, {"speedup", "time_us_before", "time_us_after", "model"}, or None without one."""
    est, memory = ctx.report.time, ctx.memory
    if est is None or memory is None:
        return None
    ideal = without_cost(memory, finding, ctx.report.line)
    model = static_model(ctx)
    before = est.models.get(model)
    if ideal is None or not before:
        return None
    after = static_time(ctx, ideal)
    if not after or after <= 0:
        return None
    return {"speedup": round(before / after, 3), "time_us_before": before, "time_us_after": after,
            "model": TIME_MODELS[model]}


def gain_stage(ctx: KernelContext) -> None:
    """Attach a gain to each performance finding of the kernel that has one, in its detail and its message."""
    for f in ctx.report.findings:
        if f.code not in (Code.UNCOALESCED_GLOBAL, Code.SHARED_BANK_CONFLICT) or "gain" in f.detail:
            continue
        gain = finding_gain(ctx, f)
        if gain is None:
            continue
        f.detail["gain"] = gain
        f.message += f"; {gain_text(gain['speedup'])}"
