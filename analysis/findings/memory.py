"""Findings from the warp-level facts: uncoalesced global accesses, shared bank conflicts, divergent branches.

Wording follows Nsight Compute (sectors per request vs ideal and % excessive; N-way bank conflict as
wavefronts vs ideal; divergent branches) so a user can confirm a finding with the profiler. One finding per
source line and kind: an unrolled loop repeats an access several times on one line, and the worst copy
speaks for them. Unknown addresses (gathers) are never warnings, only an information note.
"""

from __future__ import annotations

from math import ceil
from typing import Any

from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.finding import Finding, Fix, Related, char_column, source_line_range
from kerncast.analysis.findings import memory_fixes as F
from kerncast.analysis.findings.budget import budget_finding
from kerncast.analysis.memory.analysis import AccessInfo, BranchInfo, MemoryAnalysis, WarpFacts
from kerncast.analysis.memory.render import cuda_symbol_name
from kerncast.analysis.options import Thresholds
from kerncast.analysis.rules import Code
from kerncast.analysis.source_model import SourceFacts, scanned

#: a lane stride above this is a row of a matrix, not a struct, even when neighbouring fields are read too
#: (an unrolled walk along a row reads at small offsets from the same lane stride)
MAX_STRUCT_BYTES = 64

_SEVERITY_RANK = {"warning": 0, "information": 1, "hint": 2}


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(round(x))) if abs(x - round(x)) < 0.05 else f"{x:.1f}"


class _Source:
    """Lines of the analysed CUDA file for exact ranges, and its source model for declarations and fixes."""

    def __init__(self, text: str | None) -> None:
        self.lines = text.splitlines() if text else []
        self.facts: SourceFacts | None = scanned(text)

    def range(self, line: int, column: int) -> tuple[int, int]:
        """(start, end) characters of a finding at a `.loc` line and column (the column counts bytes)."""
        if column > 0 and 1 <= line <= len(self.lines):
            column = char_column(self.lines[line - 1], column)
        return source_line_range(self.lines, line, column)


def _location(k: WarpFacts, line: int | None, column: int, file: str | None, src: _Source,
              kernel_line: int | None) -> tuple[int, int, int, str] | None:
    """(line, column, end column, prefix) for a finding; header lines go to the kernel's line."""
    if line is not None:
        c, e = src.range(line, column)
        return line, c, e, ""
    if kernel_line is None:
        return None
    c, e = src.range(kernel_line, 0)
    where = f"in {file}: " if file else ""
    return kernel_line, c, e, where


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
    src = _Source(cuda_source)
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
        loc = _location(k, a.line, a.column, a.file, src, kernel_line)
        if loc is None:
            continue
        if a.space == "global" and a.known and a.sectors_per_request is not None:
            excess = a.excess_percent
            extra = a.sectors_per_request - unit_stride_sectors(a)
            if extra >= 1 and extra / a.sectors_per_request * 100.0 > unc_pct:
                f = _uncoalesced(k, a, res, loc, shape, excess, src)
                put(f.code, extra * a.executions, f)
        elif a.space == "shared" and a.known and a.wavefronts is not None and a.ideal_wavefronts:
            ways = a.wavefronts / a.ideal_wavefronts
            if ways >= ways_min:
                f = _bank_conflict(k, a, res, loc, shape, ways, src, ways_min)
                put(f.code, (a.wavefronts - a.ideal_wavefronts) * a.executions, f)
        elif a.space in ("global", "shared") and not a.known and a.active_lanes:
            line, col, end, prefix = loc
            why = ("through an address that depends on loaded data or a call's result (a gather)" if a.gather else
                   "through an address with no loaded value in it, but one Kerncast cannot compute lane by lane "
                   "(it needs the block size, or follows a data-dependent branch or loop)")
            f = Finding(Code.UNKNOWN_ACCESS, "information", line, col, line, end,
                        f"{prefix}{a.space} {a.kind} {why}: Kerncast cannot tell how the lanes of a warp spread "
                        "over memory",
                        detail={"space": a.space, "width_bytes": a.width_bytes, "assumed_block": shape},
                        kernel=k.kernel)
            put(f.code, 0.0, f)
    for b in res.branches:
        if not b.divergent:
            continue
        loc = _location(k, b.line, b.column, b.file, src, kernel_line)
        if loc is None:
            continue
        f = _divergent(k, b, loc, shape)
        put(f.code, (b.share or 0) * b.executions, f)
    ordered = sorted(out.values(), key=lambda t: (t[1].line, t[1].code))
    return [f for _, f in ordered]


def unit_stride_sectors(a: AccessInfo) -> float:
    """Sectors a unit-stride access of the same width needs for the lanes that make the request.

    A warp whose lanes read only a few distinct addresses (a broadcast, a row broadcast under a 16x16 block)
    needs fewer sectors than that: such a load moves fewer bytes than a perfectly coalesced one and is not
    reported, even though it exceeds its own ideal (the distinct bytes it touches).
    """
    lanes = a.active_lanes if a.active_lanes else 32.0
    return max(1.0, float(ceil(lanes * a.width_bytes / 32.0)))


def _uncoalesced(k: WarpFacts, a: AccessInfo, res: MemoryAnalysis, loc: tuple[int, int, int, str], shape: Any,
                 excess: float, src: _Source) -> Finding:
    line, col, end, prefix = loc
    msg = (f"{prefix}uncoalesced global {a.kind}: {_fmt(a.sectors_per_request)} sectors per request, ideal "
           f"{_fmt(a.ideal_sectors)} ({excess:.0f}% excessive)")
    if a.lane_stride_bytes is not None:
        msg += f"; neighbouring lanes are {a.lane_stride_bytes} bytes apart"
    if a.condition:
        msg += f"; uncoalesced unless {a.condition}"
    if a.executions > 1:
        msg += f"; runs {_fmt(a.executions)} times per thread"
    detail = {"sectors_per_request": a.sectors_per_request, "ideal_sectors": a.ideal_sectors,
              "unit_stride_sectors": unit_stride_sectors(a),
              "excessive_percent": round(excess, 1), "lane_stride_bytes": a.lane_stride_bytes,
              "width_bytes": a.width_bytes, "executions": a.executions, "assumed_block": shape,
              "waste_sectors": round(((a.sectors_per_request or 0) - (a.ideal_sectors or 0)) * a.executions, 2),
              "ncu_metric": "memory_l2_theoretical_sectors_global_excessive"}
    if a.condition:
        detail["condition"] = a.condition
    fixes = _global_fixes(k, a, res, src, line if a.line is not None else None)
    return Finding(Code.UNCOALESCED_GLOBAL, "warning", line, col, line, end, msg, detail=detail,
                   fix=fixes[0] if fixes else None, extra_fixes=fixes[1:], kernel=k.kernel)


def _lane_coeffs(k: WarpFacts, index: int) -> dict[str, E.Value]:
    """Byte coefficients of threadIdx.x, threadIdx.y and the loop iterations in an access's address."""
    addr = k.sym.addresses.get(index)
    v = E.evaluate(k.atoms, addr, k.base, {})
    out: dict[str, E.Value] = {}
    if v is None:
        return out
    names = {k.lane_atoms["tid.x"]: "x", k.lane_atoms["tid.y"]: "y"}
    names.update({a: "k" for a in k.sym.iteration_atom.values()})
    for m, c in v:
        for a in set(m):
            if a in names:
                rest = list(m)
                rest.remove(a)
                term = (((tuple(rest), c),))
                out[names[a]] = E.add(out.get(names[a], E.ZERO), term)
    return out


def _const_coeffs(k: WarpFacts, index: int) -> F.LaneCoefficients:
    co = _lane_coeffs(k, index)
    return F.LaneCoefficients(E.as_const(co["x"]) if "x" in co else 0, E.as_const(co["y"]) if "y" in co else 0)


def _kernel_definition(k: WarpFacts, src: _Source, line: int | None) -> Any:
    """The definition of the kernel that makes an access on `line` (None: not in the analysed file)."""
    if src.facts is None or line is None:
        return None
    fn = src.facts.function_at_line(line)
    if fn is None or not fn.is_kernel:
        return None
    return next((d for d in src.facts.kernels if d.name_offset == fn.name_offset), None)


def _global_fixes(k: WarpFacts, a: AccessInfo, res: MemoryAnalysis, src: _Source, line: int | None) -> list[Fix]:
    """The fixes of an uncoalesced access: a rewrite or relabelling where one is known, else a snippet."""
    w = a.width_bytes
    co = _lane_coeffs(k, a.index)
    unit = E.const(w)
    stride = a.lane_stride_bytes
    kdef = _kernel_definition(k, src, line)
    array = next((cuda_symbol_name(n) for n in a.arrays), None)
    snippet_line = line
    if co.get("y") == unit or co.get("k") == unit:
        transposed = any(o.space == "global" and o.index != a.index and _lane_coeffs(k, o.index).get("x") == unit
                         and co.get("y") == unit and _lane_coeffs(k, o.index).get("y") is not None
                         for o in res.accesses)
        if transposed and kdef is not None and src.facts is not None:
            fix = F.tiled_transpose(src.facts, kdef, k.block)
            if fix is not None:
                return [fix]
        square = k.block is not None and k.block[0] == k.block[1] and k.block[2] == 1
        others_coalesced = any(o.space == "global" and o.index != a.index and
                               _lane_coeffs(k, o.index).get("x") == E.const(o.width_bytes) for o in res.accesses)
        if co.get("y") == unit and square and not others_coalesced and kdef is not None and src.facts is not None:
            fix = F.swap_thread_indices(src.facts, kdef)
            if fix is not None:
                return [fix]
        if src.facts is not None and snippet_line is not None:
            return [F.stage_snippet(src.facts, snippet_line, array)]
    if src.facts is None or snippet_line is None:
        return []
    if isinstance(stride, int) and stride > w and (stride % w or (stride // w) & (stride // w - 1)
                                                   or stride <= MAX_STRUCT_BYTES and _has_sibling_fields(k, a, res)):
        return [F.soa_snippet(src.facts, snippet_line, array)]
    return [F.stage_snippet(src.facts, snippet_line, array)]


def _has_sibling_fields(k: WarpFacts, a: AccessInfo, res: MemoryAnalysis) -> bool:
    """Other global accesses with the same lane stride at a small constant offset: fields of one struct."""
    base = k.sym.addresses.get(a.index)
    for o in res.accesses:
        if o.index == a.index or o.space != "global" or o.lane_stride_bytes != a.lane_stride_bytes:
            continue
        d = E.as_const(E.sub(k.sym.addresses.get(o.index), base))
        if d is not None and 0 < abs(d) < int(a.lane_stride_bytes or 0):
            return True
    return False


def _bank_conflict(k: WarpFacts, a: AccessInfo, res: MemoryAnalysis, loc: tuple[int, int, int, str], shape: Any,
                   ways: float, src: _Source, ways_min: float) -> Finding:
    line, col, end, prefix = loc
    name = cuda_symbol_name(a.arrays[0]) if a.arrays else None
    msg = (f"{prefix}{_fmt(ways)}-way bank conflict: {_fmt(a.wavefronts)} wavefronts instead of "
           f"{_fmt(a.ideal_wavefronts)} per shared {a.kind}")
    if name:
        msg += f" on '{name}'"
    if a.lane_stride_bytes is not None:
        msg += f"; neighbouring lanes are {a.lane_stride_bytes} bytes apart"
    detail = {"wavefronts": a.wavefronts, "ideal_wavefronts": a.ideal_wavefronts, "ways": round(ways, 2),
              "lane_stride_bytes": a.lane_stride_bytes, "width_bytes": a.width_bytes, "executions": a.executions,
              "assumed_block": shape, "ncu_metric": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared"}
    related: list[Related] = []
    fix: Fix | None = None
    facts = src.facts
    # the array as the function making the access sees it, not the first array of that name in the file
    owner = facts.function_at_line(a.line) if facts is not None and a.line is not None else None
    decl = facts.array(name, owner) if facts is not None and name and owner is not None else None
    if decl is not None and facts is not None:
        dline, dcol = facts.position(decl.offset)
        dend_line, dend_col = facts.position(decl.end_offset)
        related.append(Related(dline, dcol, dend_line, dend_col, f"shared array '{name}' declared here"))
        others = [(_const_coeffs(k, o.index), o.width_bytes) for o in res.accesses
                  if o.space == "shared" and o.index != a.index and o.arrays[:1] == a.arrays[:1]]
        fix = F.pad_shared_array(facts, decl, _const_coeffs(k, a.index), k.block, a.width_bytes, ways_min, others)
        if fix is None and len(decl.dims) >= 2 and a.line is not None:
            fix = F.swizzle_snippet(facts, a.line, decl.name)
    if fix is None and facts is not None and a.line is not None:
        fix = F.sequential_snippet(facts, a.line, name)
    return Finding(Code.SHARED_BANK_CONFLICT, "warning", line, col, line, end, msg, detail=detail, fix=fix,
                   related=related, kernel=k.kernel)


def _divergent(k: WarpFacts, b: BranchInfo, loc: tuple[int, int, int, str], shape: Any) -> Finding:
    line, col, end, prefix = loc
    dep = " and ".join(b.depends_on) or "per-lane data"
    share = (b.share or 0) * 100
    msg = (f"{prefix}divergent branch: condition depends on {dep}; the lanes of a warp take different paths in "
           f"{share:.0f}% of the sampled warp executions")
    if b.executions > 1:
        msg += f" (runs {_fmt(b.executions)} times per thread)"
    detail = {"divergent_share": round(b.share or 0, 3), "depends_on": b.depends_on, "condition": b.condition,
              "executions": b.executions, "assumed_block": shape,
              "ncu_metric": "smsp__thread_inst_executed_per_inst_executed.ratio"}
    return Finding(Code.DIVERGENT_BRANCH, "warning", line, col, line, end, msg, detail=detail,
                   kernel=k.kernel)
