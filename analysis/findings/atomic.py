"""The `atomic-contention` finding: an atomic whose lanes (or blocks) all hit one address.

The memory unit serialises atomics to one address: a warp whose 32 lanes `atomicAdd` the same counter makes 32
updates one after another, and when the address does not depend on blockIdx every block of the grid queues on
that one word too. The memory analysis already instantiates each atomic's address for the lanes of the sampled
warps; lanes with equal addresses are counted there. Reported when two or more active lanes share an address
on average; an atomic made by one lane per warp (the aggregated form) and an address through loaded data (a
histogram's bins: unknown) are not. The snippet shows warp aggregation for the call on the line: reduce the
value with `__shfl_down_sync` (or count the lanes with `__popc` when every lane adds the same constant), then
one lane makes the atomic.
"""

from __future__ import annotations

import re

from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.csyntax import matching_bracket, split_top
from kerncast.analysis.finding import Finding, Fix, TextEdit, line_range, source_lines
from kerncast.analysis.findings.kernel_rewrite import snippet_templates
from kerncast.analysis.memory.analysis import AccessInfo
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import SourceFacts, scanned

#: `atomicAdd(target, value)` and its siblings (`_block`/`_system` scopes included)
_NAME_RE = re.compile(r"atomic(Add|Sub|Max|Min|And|Or|Xor|Inc|Dec|Exch|CAS)(?:_block|_system)?")
#: how a warp combines two lanes' values before the one atomic, per operation (None: no aggregation applies)
_COMBINE = {"Add": "v + o", "Sub": "v + o", "Max": "max(v, o)", "Min": "min(v, o)", "And": "v & o",
            "Or": "v | o", "Xor": "v ^ o"}
#: the Nsight Compute counter of the serialisation, per memory space
_METRICS = {"global": "l1tex__t_set_conflicts_pipe_lsu_mem_global_op_atom.sum",
            "shared": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"}
_CONSTANT_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)[fFuUlL]*$")


def _template() -> dict:
    return snippet_templates()[FixKind.WARP_AGGREGATION.value]


def atomic_call(facts: SourceFacts, line: int) -> tuple[str, str, str, str] | None:
    """(function, operation, target, value) of the first atomic call on a source line, if it has two arguments
    and closes on that line; the arguments as the source writes them."""
    tokens = facts.env.tokens
    for k in facts.line_tokens(line):
        m = _NAME_RE.fullmatch(tokens[k].text)
        if m is None or k + 1 >= len(tokens) or tokens[k + 1].text != "(":
            continue
        close = matching_bracket(tokens, k + 1, 1)
        if close >= len(tokens) or facts.position(tokens[close].offset)[0] != line:
            return None
        args = split_top(tokens[k + 2:close])
        if len(args) != 2 or not all(args):
            return None
        text = [facts.text[a[0].offset:a[-1].offset + len(a[-1].text)] for a in args]
        return m.group(0), m.group(1), text[0], text[1]
    return None


def _snippet_lines(call: tuple[str, str, str, str]) -> list[str] | None:
    """The warp-aggregation template (data/snippets.toml) filled in for the call on the line."""
    fn, op, target, value = call
    t = _template()
    if op in ("Add", "Sub") and _CONSTANT_RE.match(value):
        return [s.format(fn=fn, target=target, value=value) for s in t["count_text"]]
    combine = _COMBINE.get(op)
    if combine is None:
        return None
    return [s.format(fn=fn, target=target, value=value, combine=combine) for s in t["reduce_text"]]


def _fix(lines: list[str], line: int, text: str) -> Fix:
    indent = text[:len(text) - len(text.lstrip())]
    body = "".join(f"{indent}// kerncast snippet: {s}\n" if i == 0 else f"{indent}//   {s}\n"
                   for i, s in enumerate(lines))
    kind = FixKind.WARP_AGGREGATION
    return Fix(kind, f"snippet: {_template()['title']}", {"line": line}, [TextEdit(line, 1, line, 1, body)],
               rule(Code.ATOMIC_CONTENTION).fix(kind).applicability)


def _contended(ctx: KernelContext, a: AccessInfo) -> bool:
    """An `atom`/`red` (not an mbarrier arrival or a bulk reduction, which the memory analysis also counts as
    atomics) whose active lanes share an address on average."""
    return (a.kind == "atomic" and ctx.function.body[a.index].opcode in ("atom", "red") and a.known
            and a.line is not None and a.lanes_per_address is not None and a.lanes_per_address >= 2)


def atomic_contention(ctx: KernelContext) -> list[Finding]:
    """One finding per source line with an atomic whose active lanes share an address."""
    if ctx.memory is None:
        return []
    text = source_lines(ctx.cuda_source) if ctx.cuda_source else ()
    facts = scanned(ctx.cuda_source)
    launch = ctx.report.launch
    grid_blocks = launch.blocks if launch is not None else None
    out: list[Finding] = []
    seen: set[int] = set()
    for a in ctx.memory.accesses:
        if not _contended(ctx, a) or a.line in seen:
            continue
        line = a.line
        assert line is not None and a.lanes_per_address is not None  # _contended checked both
        seen.add(line)
        lanes = a.lanes_per_address
        call = atomic_call(facts, line) if facts is not None else None
        where = f"{a.space} address ({call[2]})" if call is not None else f"{a.space} address"
        upto = "up to " if a.lanes_upper_bound else ""
        message = (f"atomic contention: {upto}{lanes:.0f} lanes of a warp update one {where}, so the atomic "
                   f"serialises {upto}{lanes:.0f}-way within each warp")
        blocks_per_address = None
        if a.space == "global":
            blocks_per_address = grid_blocks if a.grid_uniform else 1
            if a.grid_uniform:
                blocks = f"all {grid_blocks} blocks" if grid_blocks else "every block"
                message += f", and {blocks} of the grid contend on that same address"
        metric = _METRICS[a.space]
        detail = {"lanes_per_address": round(lanes, 2), "active_lanes": a.active_lanes,
                  "blocks_per_address": blocks_per_address, "grid_uniform": a.grid_uniform,
                  "lanes_upper_bound": a.lanes_upper_bound, "space": a.space,
                  "executions": a.executions, "ncu_metric": metric}
        snippet = _snippet_lines(call) if call is not None else None
        fix = _fix(snippet, line, text[line - 1]) if snippet is not None else None
        start, end = line_range(ctx.cuda_source, line, a.column)
        out.append(Finding(Code.ATOMIC_CONTENTION, "warning", line, start, line, end, message, detail=detail,
                           fix=fix, kernel=ctx.report.name))
    return out


def atomic_contention_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add the kernel's `atomic-contention` findings."""
    add_findings(ctx, atomic_contention)
