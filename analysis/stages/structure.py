"""The pipeline's structure stage: what the PTX alone says about a kernel (its static shared memory, its
instruction mix by thesis type, its loops), and whether it launches other kernels from device code.
"""

from __future__ import annotations

import re
from collections import Counter

from kerncast.analysis.context import KernelContext
from kerncast.analysis.isa import classify
from kerncast.analysis.ptx.model import Function, Sym
from kerncast.analysis.ptx.parser import kernel_shared_bytes
from kerncast.analysis.report import LoopInfo


def structure_stage(ctx: KernelContext) -> None:
    """Static shared memory from the PTX declarations, instruction mix by thesis type, loops, and whether the
    kernel launches others from device code (its figures then leave theirs out, which a note says)."""
    r = ctx.report
    r.shared_bytes = kernel_shared_bytes(ctx.module, ctx.function)
    mix: Counter[str] = Counter(classify(i).type for i in ctx.function.body)
    r.instruction_mix = dict(sorted(mix.items()))
    r.instruction_count = len(ctx.function.body)
    r.loops = [
        LoopInfo(header_line=lp.header_line(ctx.cfg, ctx.main_file), lines=lp.source_lines(ctx.cfg, ctx.main_file),
                 depth=lp.depth,
                 blocks=len(lp.blocks))
        for lp in ctx.loops.loops
    ]
    if launches_from_device(ctx.function):
        r.notes.append(DEVICE_LAUNCH_NOTE)


#: the CUDA device runtime's launch entry points, as nvcc's PTX calls them (CUDA 11 and the CDP2 names of 12+)
_DEVICE_LAUNCH_RE = re.compile(r"^(?:__cudaCDP\d+)?(?:cuda)?LaunchDevice(?:V\d+)?$")
DEVICE_LAUNCH_NOTE = (
    "launches kernels from device code (dynamic parallelism): the time, power and energy are this kernel's own "
    "instructions; a parent grid completes only after the grids it launches, so a measurement of it includes "
    "theirs, and each launched kernel is analysed as a kernel of its own")


def launches_from_device(fn: Function) -> bool:
    """Whether the kernel calls the device runtime's launch (a `<<<...>>>` in device code)."""
    return any(isinstance(op, Sym) and _DEVICE_LAUNCH_RE.match(op.name)
               for i in fn.body if i.opcode == "call" for op in i.operands)
