"""The pipeline's resources stage: ptxas's registers, shared memory, spills and stack for a kernel, waited for
only here, after the stages that need the PTX alone, so that ptxas runs while they do.
"""

from __future__ import annotations

from kerncast.analysis.context import KernelContext


def resources_stage(ctx: KernelContext) -> None:
    """Registers, shared memory, spills and stack from ptxas (waited for here, after the memory analysis)."""
    r = ctx.report
    table = ctx.ptxas.result().table if ctx.ptxas is not None else {}
    res = table.get(ctx.function.name)
    r.resources = res
    if res is None:
        r.notes.append("registers unknown: ptxas did not run; shared memory counted from the PTX declarations")
    elif res.shared_bytes is not None:
        r.shared_bytes = res.shared_bytes
