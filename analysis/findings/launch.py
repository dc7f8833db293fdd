"""The `launch-configuration` finding: a known launch that leaves the GPU partly idle, or that cannot run.

What Nsight Compute's LaunchStatistics and Occupancy rules say after a run can be said before it from the
launch (grid, block, dynamic shared memory) and the occupancy calculator: idle lanes in a block that is not a
multiple of the warp size, SMs without a block when the grid is smaller than the GPU, a last wave of blocks
under half full, and (as an error) a launch the driver refuses. A refused launch gets no time prediction: the
time and the occupancy the earlier stages computed for it are withdrawn, since neither describes a run.
Nothing is reported for a launch that is only the tool's default: a warning must rest on the user's numbers.
A kernel file compiled through the file that #includes and launches it gets the finding on its kernel's line,
naming the launch's line in that file.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kerncast.analysis.context import KernelContext, reported_here
from kerncast.analysis.finding import Finding, line_range
from kerncast.analysis.launch import GUESSED_SOURCES, Launch, Sourced, split_kernel_name
from kerncast.analysis.report import KernelReport
from kerncast.analysis.rules import Code
from kerncast.analysis.source_model import scanned

#: the host call that lets a kernel use more than 48 KB of dynamic shared memory
_OPT_IN_RE = re.compile(r"\bcudaFuncSetAttribute\s*\(\s*([^,]*?)\s*,\s*cudaFuncAttributeMaxDynamicSharedMemorySize\b")
_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_AXES = ("x", "y", "z")


@dataclass(frozen=True, slots=True)
class LaunchLimits:
    """The limits every profiled GPU shares and the finding's thresholds (`data/launch_limits.toml`)."""

    grid_max: tuple[int, int, int]
    block_max: tuple[int, int, int]
    tail_wave_fill: float
    tail_wave_max_waves: int


@cache
def launch_limits() -> LaunchLimits:
    text = resources.files("kerncast.analysis").joinpath("data/launch_limits.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return LaunchLimits(tuple(data["grid"]["max_dims"]), tuple(data["block"]["max_dims"]),
                        float(data["thresholds"]["tail_wave_fill"]), int(data["thresholds"]["tail_wave_max_waves"]))


def _occ(report: KernelReport, key: str) -> Any:
    """A value of the report's occupancy (an `Occupancy`, or its JSON when the report came from the cache)."""
    occ = report.occupancy
    if occ is None:
        return None
    return occ.get(key) if isinstance(occ, dict) else getattr(occ, key, None)


def _known(s: Sourced) -> bool:
    return s.value is not None and s.source not in GUESSED_SOURCES


def _dims_text(dims: tuple[int, ...]) -> str:
    shown = list(dims)
    while len(shown) > 1 and shown[-1] == 1:
        shown.pop()
    return "x".join(str(v) for v in shown)


def opted_in(cuda_source: str | None, kernel: str) -> bool:
    """Whether the host code raises the kernel's dynamic shared-memory limit: a cudaFuncSetAttribute call with
    cudaFuncAttributeMaxDynamicSharedMemorySize on the kernel by name, or on something that is not a plain
    name (a function pointer, a template instance: it may be this kernel, so no error rests on it)."""
    if cuda_source is None:
        return False
    for m in _OPT_IN_RE.finditer(cuda_source):
        target = m.group(1).lstrip("&(* ").rstrip(") ")
        if not _IDENT_RE.fullmatch(target) or target == kernel:
            return True
        if target.split("::")[-1] == kernel:
            return True
    return False


def launch_errors(launch: Launch, report: KernelReport, gpu: Any, cuda_source: str | None) -> list[str]:
    """Why the launch fails at run time, one sentence per reason (empty when it can run or is unknown)."""
    lim = launch_limits()
    out: list[str] = []
    block, grid = launch.block_dims(), launch.grid_dims()
    if _known(launch.block) and block is not None:
        tpb = math.prod(block)
        if tpb > gpu.limits.max_threads_per_block:
            out.append(f"{tpb} threads per block, above the {gpu.limits.max_threads_per_block} that "
                       f"{gpu.name} allows")
        for axis, value, most in zip(_AXES, block, lim.block_max, strict=True):
            if value > most:
                out.append(f"block dimension {axis} is {value}, above its limit of {most}")
    if _known(launch.grid) and grid is not None:
        for axis, value, most in zip(_AXES, grid, lim.grid_max, strict=True):
            if value > most:
                out.append(f"grid dimension {axis} is {value}, above its limit of {most}")
    dyn = launch.dynamic_shared_bytes
    if _known(dyn) and isinstance(dyn.value, int) and dyn.value > 0:
        static = report.shared_bytes or 0
        total = static + dyn.value
        base = split_kernel_name(report.name)[0].split("::")[-1]
        if total > gpu.limits.max_shared_per_block:
            out.append(f"{total} bytes of shared memory per block ({dyn.value} dynamic), above the "
                       f"{gpu.limits.max_shared_per_block} that one block of {gpu.name} can have")
        elif total > gpu.limits.static_shared_per_block and not opted_in(cuda_source, base):
            out.append(f"{dyn.value} bytes of dynamic shared memory ({total} per block with the static), above "
                       f"{gpu.limits.static_shared_per_block} without cudaFuncSetAttribute(kernel, "
                       "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) in the host code")
    if not out and _known(launch.block) and _occ(report, "active_blocks_per_sm") == 0:
        out.append(f"one block needs more {_occ(report, 'limiter')} than an SM of {gpu.name} holds "
                   f"({report.registers} registers per thread, {report.shared_bytes or 0} bytes of shared memory)")
    return out


def launch_warnings(launch: Launch, report: KernelReport, gpu: Any) -> tuple[list[str], dict[str, Any]]:
    """What of the GPU a runnable known launch leaves idle: sentences and their numbers."""
    lim = launch_limits()
    out: list[str] = []
    detail: dict[str, Any] = {}
    warp = gpu.warp_size
    if _known(launch.block) and launch.threads_per_block:
        tpb = launch.threads_per_block
        if tpb % warp:
            warps = -(-tpb // warp)
            idle = warps * warp - tpb
            out.append(f"block of {tpb} threads is not a multiple of {warp}: each block runs {warps} warps with "
                       f"{idle} of {warps * warp} lanes idle ({idle / (warps * warp):.0%})")
            detail.update(idle_lanes_per_block=idle, lanes_per_block=warps * warp)
    if _known(launch.grid) and launch.blocks:
        blocks = launch.blocks
        if blocks < gpu.sm_count:
            out.append(f"launch uses {blocks} of {gpu.sm_count} SMs: the grid has {blocks} block"
                       f"{'s' if blocks != 1 else ''}, so the occupancy holds on those SMs only and at most "
                       f"{blocks / gpu.sm_count:.0%} of the GPU works")
            detail.update(sms_used=blocks, sm_count=gpu.sm_count)
        else:
            per_sm = _occ(report, "active_blocks_per_sm") or 0
            if per_sm > 0:
                wave = gpu.sm_count * per_sm
                waves = blocks / wave
                fill = waves - math.floor(waves)
                if waves > 1 and 0 < fill < lim.tail_wave_fill and math.ceil(waves) <= lim.tail_wave_max_waves:
                    out.append(f"the grid of {blocks} blocks runs in {math.ceil(waves)} waves of {wave} blocks "
                               f"({per_sm} per SM); the last wave is {fill:.0%} full, so the GPU is "
                               f"{(1 - fill) / math.ceil(waves):.0%} idle over the launch")
                    detail.update(waves=round(waves, 3), blocks_per_wave=wave, tail_wave_fill=round(fill, 3))
    return out, detail


def _line(launch: Launch, report: KernelReport) -> int:
    """The launch site or annotation that gave the values (in the analysed file), else the kernel's line."""
    for s in (launch.grid, launch.block, launch.dynamic_shared_bytes):
        if s.source in ("launch-site", "annotation") and s.line:
            return s.line
    return report.line or 1


def _launched_elsewhere(ctx: KernelContext, line: int) -> str | None:
    """The name of the file whose launch gave the values, when that is not the analysed file: a kernel file
    #included by the file that launches it (Rodinia's and HeCBench's `kernels.cu`) is compiled through that
    file, and the launch's line is a line of it, not of the kernel file the finding is shown in."""
    if ctx.launch_source is None or ctx.launch_source[1] in (None, ctx.source_path):
        return None
    facts = scanned(ctx.cuda_source)
    if facts is not None and any(site.line == line for site in facts.sites):
        return None  # the kernel file launches it itself
    return Path(ctx.launch_source[1]).name


def launch_configuration(ctx: KernelContext) -> Finding | None:
    """The kernel's `launch-configuration` finding; withdraws the time of a launch that cannot run."""
    report, launch, gpu = ctx.report, ctx.report.launch, ctx.gpu
    if launch is None or gpu is None:
        return None
    errors = launch_errors(launch, report, gpu, ctx.cuda_source)
    line = _line(launch, report)
    elsewhere = _launched_elsewhere(ctx, line)
    where = ""
    if elsewhere is not None:
        where = f" (the launch at line {line} of {elsewhere})"
        line = report.line or 1
    if errors:
        report.time = None
        report.occupancy = None
        report.notes.append(f"no time prediction: the launch fails at run time on {gpu.name}")
        message = "launch fails at run time" + where + ": " + "; ".join(errors)
        detail: dict[str, Any] = {"errors": errors, "fails": True}
        return Finding(Code.LAUNCH_CONFIGURATION, "error", line, 1, line, 1, message, detail=detail,
                       kernel=report.name)
    warnings, detail = launch_warnings(launch, report, gpu)
    if not warnings:
        return None
    detail.update(fails=False, block=_dims_text(launch.block_dims() or (1,)),
                  grid=_dims_text(launch.grid_dims() or (1,)))
    return Finding(Code.LAUNCH_CONFIGURATION, "warning", line, 1, line, 1, "; ".join(warnings) + where,
                   detail=detail, kernel=report.name)


def launch_configuration_stage(ctx: KernelContext) -> None:
    """Pipeline stage (after the time): add the kernel's `launch-configuration` finding, on its launch line."""
    if not reported_here(ctx):
        return
    finding = launch_configuration(ctx)
    if finding is None:
        return
    finding.column, finding.end_column = line_range(ctx.cuda_source, finding.line)
    ctx.report.findings.append(finding)
