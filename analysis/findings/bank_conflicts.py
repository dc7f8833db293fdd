"""The `shared-bank-conflict` finding: an N-way conflict as wavefronts against the ideal, as Nsight Compute
counts them, with the padding, swizzle or sequential-addressing fix of the array it falls on.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.finding import Finding, Fix, Related
from kerncast.analysis.findings import memory_fixes as F
from kerncast.analysis.findings.memory_access import lane_coeffs
from kerncast.analysis.findings.memory_place import MemorySource, fmt_count
from kerncast.analysis.memory.analysis import AccessInfo, MemoryAnalysis, WarpFacts
from kerncast.analysis.memory.render import cuda_symbol_name
from kerncast.analysis.rules import Code


def const_coeffs(k: WarpFacts, index: int) -> F.LaneCoefficients:
    co = lane_coeffs(k, index)
    return F.LaneCoefficients(E.as_const(co["x"]) if "x" in co else 0, E.as_const(co["y"]) if "y" in co else 0)


def bank_conflict(k: WarpFacts, a: AccessInfo, res: MemoryAnalysis, loc: tuple[int, int, int, str], shape: Any,
                   ways: float, src: MemorySource, ways_min: float) -> Finding:
    line, col, end, prefix = loc
    name = cuda_symbol_name(a.arrays[0]) if a.arrays else None
    msg = (f"{prefix}{fmt_count(ways)}-way bank conflict: {fmt_count(a.wavefronts)} wavefronts instead of "
           f"{fmt_count(a.ideal_wavefronts)} per shared {a.kind}")
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
        others = [(const_coeffs(k, o.index), o.width_bytes) for o in res.accesses
                  if o.space == "shared" and o.index != a.index and o.arrays[:1] == a.arrays[:1]]
        fix = F.pad_shared_array(facts, decl, const_coeffs(k, a.index), k.block, a.width_bytes, ways_min, others)
        if fix is None and len(decl.dims) >= 2 and a.line is not None:
            fix = F.swizzle_snippet(facts, a.line, decl.name)
    if fix is None and facts is not None and a.line is not None:
        fix = F.sequential_snippet(facts, a.line, name)
    return Finding(Code.SHARED_BANK_CONFLICT, "warning", line, col, line, end, msg, detail=detail, fix=fix,
                   related=related, kernel=k.kernel)
