"""The memory-access findings: uncoalesced global accesses (`uncoalesced-global`, with the rewrite, relabelling
or snippet that fixes one) and accesses whose lanes' addresses cannot be computed (`unknown-access`).

Wording follows Nsight Compute (sectors per request vs ideal and % excessive), so a user can confirm a finding
with the profiler. Unknown addresses (gathers) are never warnings, only an information note.
"""

from __future__ import annotations

from math import ceil
from typing import Any

from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.finding import Finding, Fix
from kerncast.analysis.findings import memory_fixes as F
from kerncast.analysis.findings.memory_place import MemorySource, fmt_count
from kerncast.analysis.memory.analysis import AccessInfo, MemoryAnalysis, WarpFacts
from kerncast.analysis.memory.render import cuda_symbol_name
from kerncast.analysis.rules import Code

#: a lane stride above this is a row of a matrix, not a struct, even when neighbouring fields are read too
#: (an unrolled walk along a row reads at small offsets from the same lane stride)
MAX_STRUCT_BYTES = 64


def unit_stride_sectors(a: AccessInfo) -> float:
    """Sectors a unit-stride access of the same width needs for the lanes that make the request.

    A warp whose lanes read only a few distinct addresses (a broadcast, a row broadcast under a 16x16 block)
    needs fewer sectors than that: such a load moves fewer bytes than a perfectly coalesced one and is not
    reported, even though it exceeds its own ideal (the distinct bytes it touches).
    """
    lanes = a.active_lanes if a.active_lanes else 32.0
    return max(1.0, float(ceil(lanes * a.width_bytes / 32.0)))


def uncoalesced(k: WarpFacts, a: AccessInfo, res: MemoryAnalysis, loc: tuple[int, int, int, str], shape: Any,
                 excess: float, src: MemorySource) -> Finding:
    line, col, end, prefix = loc
    msg = (f"{prefix}uncoalesced global {a.kind}: {fmt_count(a.sectors_per_request)} sectors per request, ideal "
           f"{fmt_count(a.ideal_sectors)} ({excess:.0f}% excessive)")
    if a.lane_stride_bytes is not None:
        msg += f"; neighbouring lanes are {a.lane_stride_bytes} bytes apart"
    if a.condition:
        msg += f"; uncoalesced unless {a.condition}"
    if a.executions > 1:
        msg += f"; runs {fmt_count(a.executions)} times per thread"
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


def unknown_access(k: WarpFacts, a: AccessInfo, loc: tuple[int, int, int, str], shape: Any) -> Finding:
    """The information note of an access whose lanes' addresses Kerncast cannot compute: never a warning."""
    line, col, end, prefix = loc
    why = ("through an address that depends on loaded data or a call's result (a gather)" if a.gather else
           "through an address with no loaded value in it, but one Kerncast cannot compute lane by lane "
           "(it needs the block size, or follows a data-dependent branch or loop)")
    return Finding(Code.UNKNOWN_ACCESS, "information", line, col, line, end,
                   f"{prefix}{a.space} {a.kind} {why}: Kerncast cannot tell how the lanes of a warp spread "
                   "over memory",
                   detail={"space": a.space, "width_bytes": a.width_bytes, "assumed_block": shape},
                   kernel=k.kernel)


def lane_coeffs(k: WarpFacts, index: int) -> dict[str, E.Value]:
    """Byte coefficients of threadIdx.x, threadIdx.y and the loop iterations in an access's address."""
    v = k.at_launch(index)
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


def _kernel_definition(k: WarpFacts, src: MemorySource, line: int | None) -> Any:
    """The definition of the kernel that makes an access on `line` (None: not in the analysed file)."""
    if src.facts is None or line is None:
        return None
    fn = src.facts.function_at_line(line)
    if fn is None or not fn.is_kernel:
        return None
    return next((d for d in src.facts.kernels if d.name_offset == fn.name_offset), None)


def _global_fixes(k: WarpFacts, a: AccessInfo, res: MemoryAnalysis, src: MemorySource, line: int | None) -> list[Fix]:
    """The fixes of an uncoalesced access: a rewrite or relabelling where one is known, else a snippet."""
    w = a.width_bytes
    co = lane_coeffs(k, a.index)
    unit = E.const(w)
    stride = a.lane_stride_bytes
    kdef = _kernel_definition(k, src, line)
    array = next((cuda_symbol_name(n) for n in a.arrays), None)
    snippet_line = line
    if co.get("y") == unit or co.get("k") == unit:
        transposed = any(o.space == "global" and o.index != a.index and lane_coeffs(k, o.index).get("x") == unit
                         and co.get("y") == unit and lane_coeffs(k, o.index).get("y") is not None
                         for o in res.accesses)
        if transposed and kdef is not None and src.facts is not None:
            fix = F.tiled_transpose(src.facts, kdef, k.block)
            if fix is not None:
                return [fix]
        square = k.block is not None and k.block[0] == k.block[1] and k.block[2] == 1
        others_coalesced = any(o.space == "global" and o.index != a.index and
                               lane_coeffs(k, o.index).get("x") == E.const(o.width_bytes) for o in res.accesses)
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
