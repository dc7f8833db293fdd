"""The `local-memory` finding: a per-thread array that the compiler placed in local memory.

A thread's array indexed with a value known only at run time cannot live in registers, so nvcc declares it in
the kernel's `.local` depot and reads and writes it with `ld.local`/`st.local`: device memory holds a frame per
resident thread slot, cached in L1 and L2 like global data, so the accesses stay on chip only while the frames
of the threads resident at once fit there (the time model counts that traffic, `timing/local_memory.py`). This
is the source's own choice, visible in the PTX before ptxas runs, and so distinct from `register-spill` (ptxas
moving live values out of registers).
Reported when the kernel both writes and reads its depot (a depot only written is the argument buffer of a
`printf`), ptxas, when it ran, kept a stack frame (ptxas may still promote a small array to registers), and a
load sits on a line that indexes an array and calls no trig function (sinf's slow path has a buffer of its own).
"""

from __future__ import annotations

import re

from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.finding import Finding, line_range, line_related
from kerncast.analysis.ptx.model import WARP_THREADS, Instruction, line_in_file
from kerncast.analysis.rules import Code
from kerncast.analysis.source_model import SourceFacts, scanned
from kerncast.analysis.timing.local_memory import frame_bytes

#: sinf/cosf/tanf/sincosf and their double twins reduce a large argument through a local buffer of their own
_TRIG_RE = re.compile(r"(?:__)?(?:sin|cos|tan|sincos|sinpi|cospi)f?")


def local_accesses(ctx: KernelContext) -> tuple[list[Instruction], list[Instruction]]:
    """The kernel's `ld.local` and `st.local` instructions."""
    loads = [i for i in ctx.function.body if i.opcode == "ld" and "local" in i.modifiers]
    stores = [i for i in ctx.function.body if i.opcode == "st" and "local" in i.modifiers]
    return loads, stores


def _indexes_without_trig(facts: SourceFacts, line: int) -> bool:
    """Whether the code of a line indexes an array (`[`) and calls no trig function."""
    tokens = facts.env.tokens
    found = facts.line_tokens(line)
    trig = any(_TRIG_RE.fullmatch(tokens[k].text) and k + 1 < len(tokens) and tokens[k + 1].text == "("
               for k in found if tokens[k].kind == "id")
    return not trig and any(tokens[k].text == "[" for k in found)


def local_memory(ctx: KernelContext) -> Finding | None:
    """The kernel's `local-memory` finding, on the line of its first local load in the analysed file."""
    size = frame_bytes(ctx.function)
    loads, stores = local_accesses(ctx)
    if size <= 0 or not loads or not stores:
        return None
    res = ctx.report.resources
    if res is not None and not (res.stack_bytes or res.local_bytes):
        return None  # ptxas kept the array in registers after all
    facts = scanned(ctx.cuda_source)
    load_lines = sorted({n for i in loads if (n := line_in_file(i.loc, ctx.main_file)) is not None})
    if ctx.cuda_source:  # an array the source indexes; the trig functions' own buffer (their slow reduction)
        load_lines = [n for n in load_lines if facts is not None and _indexes_without_trig(facts, n)]
    if not load_lines:
        return None
    lines = load_lines + sorted({n for i in stores if (n := line_in_file(i.loc, ctx.main_file)) is not None}
                              - set(load_lines))
    line = lines[0]  # the first read: where the run-time index is
    start, end = line_range(ctx.cuda_source, line)
    load_bytes = sum(i.access_bytes for i in loads)
    store_bytes = sum(i.access_bytes for i in stores)
    launch = ctx.report.launch
    threads = launch.total_threads if launch is not None and launch.known["grid"] and launch.known["block"] else None
    occ = ctx.report.occupancy
    resident = occ.active_warps_per_sm * WARP_THREADS if occ is not None else 0
    footprint = (f", {size * resident / 1024:.4g} KiB for the {resident} threads an SM holds at once"
                 if resident else "")
    message = (f"per-thread array in local memory: {size} bytes per thread{footprint}; its {len(loads)} ld.local and "
               f"{len(stores)} st.local instructions ({load_bytes} and {store_bytes} bytes) are cached in L1 and L2 "
               "like global data and reach DRAM when the resident threads' arrays do not fit there, because the "
               "array is indexed at run time")
    related = [line_related(ctx.cuda_source, n, "another access of the local array") for n in lines[1:6]]
    detail = {"local_bytes_per_thread": size, "load_instructions": len(loads), "store_instructions": len(stores),
              "load_bytes_of_instructions": load_bytes, "store_bytes_of_instructions": store_bytes,
              "stack_bytes": res.stack_bytes if res is not None else None, "launch_local_bytes": size * threads
              if threads else None, "resident_local_bytes_per_sm": size * resident if resident else None,
              "advice": "index the array with compile-time constants (unroll the loop that indexes it with "
                        "#pragma unroll), keep it in shared memory, or use a few scalar variables"}
    return Finding(Code.LOCAL_MEMORY, "warning", line, start, line, end, message, detail=detail, related=related,
                   kernel=ctx.report.name)


def local_memory_stage(ctx: KernelContext) -> None:
    """Pipeline stage (after ptxas's resources): add the kernel's `local-memory` finding."""
    add_findings(ctx, local_memory)
