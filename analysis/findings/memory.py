"""The findings of a kernel's memory analysis: one finding per source line and kind from its accesses and
branches (the families `memory_access.py`, `bank_conflicts.py` and `divergence.py` build them), then the
`analysis-budget` note when it stopped at its time budget.

One finding per source line and kind: an unrolled loop repeats an access several times on one line, and the
worst copy speaks for them.
"""

from __future__ import annotations

from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.bank_conflicts import bank_conflict
from kerncast.analysis.findings.budget import budget_finding
from kerncast.analysis.findings.divergence import divergent
from kerncast.analysis.findings.memory_access import uncoalesced, unit_stride_sectors, unknown_access
from kerncast.analysis.findings.memory_place import MemorySource, place
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.options import Thresholds

_SEVERITY_RANK = {"warning": 0, "information": 1, "hint": 2}


def memory_findings(res: MemoryAnalysis, thresholds: Thresholds, cuda_source: str | None, kernel_line: int | None,
                    budget_s: float | None) -> list[Finding]:
    """The findings of a kernel's memory analysis: its accesses' and branches' (`build_findings`), then the
    note that it stopped at its time budget (`budget_s`), if it did."""
    out = build_findings(res, thresholds, cuda_source, kernel_line)
    if res.skipped:
        out.append(budget_finding(res, budget_s, kernel_line))
    return out


def build_findings(res: MemoryAnalysis, thresholds: Thresholds, cuda_source: str | None,
                   kernel_line: int | None) -> list[Finding]:
    """Uncoalesced global accesses, shared bank conflicts, unknown accesses and divergent branches, one finding
    per source line and kind, from the analysis's accesses and branches."""
    if res.facts is None:
        return []
    k = res.facts
    src = MemorySource(cuda_source)
    unc_pct = float(thresholds.uncoalesced_excess_percent)
    ways_min = float(thresholds.bank_conflict_ways)
    block = list(k.block) if k.block is not None else None
    shape = block if block is not None else "unknown (blockDim.x assumed a multiple of 32)"
    out: dict[tuple[str, int], tuple[float, Finding]] = {}

    def put(code: str, score: float, f: Finding) -> None:
        key = (code, f.line)
        prev = out.get(key)
        if prev is None:
            f.detail.setdefault("instructions", 1)
            out[key] = (score, f)
            return
        n = prev[1].detail.get("instructions", 1) + 1
        if (_SEVERITY_RANK[f.severity], -score) < (_SEVERITY_RANK[prev[1].severity], -prev[0]):
            f.detail["instructions"] = n
            out[key] = (score, f)
        else:
            prev[1].detail["instructions"] = n

    for a in res.accesses:
        loc = place(k, a.line, a.column, a.file, src, kernel_line)
        if loc is None:
            continue
        if a.space == "global" and a.known and a.sectors_per_request is not None:
            excess = a.excess_percent
            extra = a.sectors_per_request - unit_stride_sectors(a)
            if extra >= 1 and extra / a.sectors_per_request * 100.0 > unc_pct:
                f = uncoalesced(k, a, res, loc, shape, excess, src)
                put(f.code, extra * a.executions, f)
        elif a.space == "shared" and a.known and a.wavefronts is not None and a.ideal_wavefronts:
            ways = a.wavefronts / a.ideal_wavefronts
            if ways >= ways_min:
                f = bank_conflict(k, a, res, loc, shape, ways, src, ways_min)
                put(f.code, (a.wavefronts - a.ideal_wavefronts) * a.executions, f)
        elif a.space in ("global", "shared") and not a.known and a.active_lanes:
            f = unknown_access(k, a, loc, shape)
            put(f.code, 0.0, f)
    for b in res.branches:
        if not b.divergent:
            continue
        loc = place(k, b.line, b.column, b.file, src, kernel_line)
        if loc is None:
            continue
        f = divergent(k, b, loc, shape)
        put(f.code, (b.share or 0) * b.executions, f)
    ordered = sorted(out.values(), key=lambda t: (t[1].line, t[1].code))
    return [f for _, f in ordered]
