"""The `slow-integer-division` finding: an integer `/` or `%` by a run-time value inside a loop.

PTX's `div`/`rem` by a register looks like one instruction, but the GPUs have no integer divider: ptxas expands
each into about twenty (`data/int_division.toml`). Inside a loop that cost repeats every iteration; by a
constant, nvcc already emits a multiply and shift, so only divisors held in a register are reported. Severity
by the expanded divisions' share of the loop body's instructions: a warning from `warning_share`, else an
information.
"""

from __future__ import annotations

from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.finding import Finding, line_range
from kerncast.analysis.isa import INT_TYPES, division_costs, is_runtime_division
from kerncast.analysis.ptx.model import Instruction, line_in_file
from kerncast.analysis.rules import Code


def slow_divisions(ctx: KernelContext) -> list[Finding]:
    """One finding per source line with run-time integer divisions inside a loop."""
    cfg, forest = ctx.cfg, ctx.loops
    per_line: dict[int, list[Instruction]] = {}
    loop_of: dict[int, int] = {}
    for ins in ctx.function.body:
        if not is_runtime_division(ins):
            continue
        block = cfg.block_of[ins.index]
        if block not in forest.innermost:
            continue
        line = line_in_file(ins.loc, ctx.main_file)
        if line is None:
            continue
        per_line.setdefault(line, []).append(ins)
        loop_of.setdefault(line, forest.innermost[block])
    if not per_line:
        return []
    cost, warn_share = division_costs()
    loops = {loop.id: loop for loop in forest.loops}
    out = []
    for line, divs in sorted(per_line.items()):
        loop = loops[loop_of[line]]
        body = sum(cfg.blocks[b].end - cfg.blocks[b].start for b in loop.blocks)
        expanded = cost * len(divs)
        share = expanded / (body - len(divs) + expanded) if body else 1.0
        ops = ", ".join(sorted({f"{i.opcode}.{next(m for m in i.modifiers if m in INT_TYPES)}" for i in divs}))
        message = (f"integer division by a run-time value in a loop: {len(divs)} x {ops} (the loop's code as "
                   f"compiled, unrolled copies included) expand to about {expanded} instructions, {share:.0%} of the "
                   "loop body's, on every pass")
        start, end = line_range(ctx.cuda_source, line)
        detail = {"divisions": len(divs), "instructions_per_division": cost, "loop_body_instructions": body,
                  "share_of_loop": round(share, 3),
                  "advice": "hoist the division out of the loop (carry the quotient and remainder along), use a "
                            "power of two and shifts/masks, or divide by a compile-time constant"}
        severity = "warning" if share >= warn_share else "information"
        out.append(Finding(Code.SLOW_INTEGER_DIVISION, severity, line, start, line, end, message, detail=detail,
                           kernel=ctx.report.name))
    return out


def slow_division_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add the kernel's `slow-integer-division` findings."""
    add_findings(ctx, slow_divisions)
