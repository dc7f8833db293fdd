"""Findings from the resource numbers: `low-occupancy` (occupancy calculator) and `register-spill` (ptxas).

Both sit on the kernel's first line. They read only what earlier stages wrote into the `KernelReport`
(`occupancy`, `spill_stores`, `spill_loads`, `registers`) and the launch the occupancy was computed for.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.context import KernelContext
from kerncast.analysis.finding import Finding, source_line_range, source_lines
from kerncast.analysis.report import KernelReport
from kerncast.analysis.rules import Code

_ADVICE = {
    "registers": "registers limit the resident warps: lower the registers per thread with "
                 "__launch_bounds__(threads, minBlocks) or -maxrregcount, or keep fewer values live at once",
    "shared": "shared memory limits the resident blocks: use less shared memory per block (smaller tiles, "
              "narrower types) or fewer, larger blocks",
    "blocks": "the per-SM block limit is reached with small blocks: launch more threads per block "
              "(a multiple of 32, e.g. 128-256)",
    "warps": "raise the threads per block or the blocks per SM",
}


def _json(x: Any) -> dict[str, Any] | None:
    if x is None:
        return None
    return x.to_json() if hasattr(x, "to_json") else x if isinstance(x, dict) else None


def low_occupancy(report: KernelReport, threshold: float) -> Finding | None:
    """A warning when the predicted occupancy is below `threshold` (0-1)."""
    occ = _json(report.occupancy)
    if not occ or not isinstance(occ.get("occupancy"), int | float):
        return None
    value = float(occ["occupancy"])
    if value >= threshold or occ.get("active_blocks_per_sm", 1) <= 0:
        return None
    limiter = str(occ.get("limiter") or "?")
    launch = _json(report.launch) or {}
    block = launch.get("block")
    assumed = (launch.get("source") or {}).get("block") == "default"
    dims = list(block) if isinstance(block, list | tuple) else []
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    block_text = "x".join(str(v) for v in dims) or "?"
    message = (f"low occupancy: {value:.0%} ({occ.get('active_warps_per_sm')} of {occ.get('max_warps_per_sm')} "
               f"warps per SM, {occ.get('active_blocks_per_sm')} blocks of {block_text} threads"
               f"{', assumed block size' if assumed else ''}), limited by {limiter}")
    line = report.line or 1
    detail = {"occupancy": round(value, 4), "threshold": threshold, "limiter": limiter,
              "active_warps_per_sm": occ.get("active_warps_per_sm"), "max_warps_per_sm": occ.get("max_warps_per_sm"),
              "active_blocks_per_sm": occ.get("active_blocks_per_sm"), "registers_per_thread": report.registers,
              "shared_bytes_per_block": report.shared_bytes, "block": block_text,
              "advice": _ADVICE.get(limiter, _ADVICE["warps"])}
    return Finding(Code.LOW_OCCUPANCY, "warning", line, 1, line, 1, message, detail=detail, kernel=report.name)


def register_spill(report: KernelReport) -> Finding | None:
    """A warning when ptxas spilled registers to local memory."""
    res = report.resources
    stores, loads = (res.spill_stores or 0, res.spill_loads or 0) if res is not None else (0, 0)
    if stores <= 0 and loads <= 0:
        return None
    line = report.line or 1
    message = (f"register spill: ptxas moved {stores} bytes of stores and {loads} bytes of loads to local memory "
               f"({report.registers if report.registers is not None else '?'} registers per thread)")
    detail = {"spill_store_bytes": stores, "spill_load_bytes": loads, "registers_per_thread": report.registers,
              "stack_bytes": res.stack_bytes if res is not None else None,
              "advice": "keep fewer values live (split the kernel, recompute cheap values, avoid dynamically "
                        "indexed local arrays), or allow more registers (__launch_bounds__ with fewer threads)"}
    return Finding(Code.REGISTER_SPILL, "warning", line, 1, line, 1, message, detail=detail, kernel=report.name)


def resource_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add `low-occupancy` and `register-spill` findings to the kernel's report, on its line
    in the analysed file."""
    report = ctx.report
    if report.line is None and ctx.cuda_source is not None:
        return  # defined in a file this one #includes: that file's own analysis places them, as memory findings
    threshold = ctx.options.thresholds.low_occupancy
    lines = source_lines(ctx.cuda_source) if ctx.cuda_source else ()
    for finding in (low_occupancy(report, threshold), register_spill(report)):
        if finding is not None:
            if lines:  # the whole kernel definition line, as the CLI and the editor both show it
                finding.column, finding.end_column = source_line_range(lines, finding.line)
            report.findings.append(finding)
