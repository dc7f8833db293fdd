"""The `missing-restrict` finding: a pointer parameter the kernel only reads, loaded through the ordinary path.

Without `__restrict__` nvcc cannot rule out that a pointer the kernel reads aliases one it writes, so it keeps
the loads in order with the stores and does not send them through the read-only data path (`ld.global.nc`,
what `__ldg` asks for). The PTX shows both facts: each global access is traced back to the kernel parameter
its address is computed from (a register holding `param + offset` keeps the parameter's name through moves,
conversions and 64-bit arithmetic), and a parameter is reported when it is loaded with plain `ld.global` and
never stored through, atomically updated, read as volatile, or handed on as a value (stored, passed to a
call), and its
declaration in the source has no `__restrict__` yet. A loaded pointer (an array of pointers) belongs to no
parameter. The fix adds `__restrict__` after the declaration's `*`: nvcc then emits `ld.global.nc` for those
loads. It is a promise that no other pointer of the launch reaches the same memory, which the compiler does
not check, so the fix is unsafe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.csyntax import split_parameters
from kerncast.analysis.finding import Finding, Fix, TextEdit, line_related
from kerncast.analysis.ptx.model import Addr, Function, Instruction, Reg, Sym, Vec, line_in_file
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import KernelDefinition, SourceFacts, scanned

_PARAM_RE = re.compile(r"_param_(\d+)$")
#: instructions that write memory through their address operand
_WRITES = frozenset({"st", "atom", "red", "cp", "prefetchu"})
#: how a parameter's `__restrict__` may be spelled in the source
_RESTRICT = frozenset({"__restrict__", "__restrict", "restrict"})
#: loads that must see another agent's writes (a volatile pointer, a memory-ordered load)
_SHARED_WITH_OTHERS = frozenset({"volatile", "relaxed", "acquire"})
#: 64-bit types, and `.wide` (a 64-bit result): a register of one of them can hold a pointer
_WIDE = frozenset({"u64", "s64", "b64", "wide"})
#: the opcodes `pointer_uses` reads: loads, writes, and those that can hand a pointer on as a value
_USES = frozenset({"ld", "call"}) | _WRITES
#: the parameters of a value computed from none
_NONE: frozenset[int] = frozenset()


@dataclass(slots=True)
class PointerUse:
    """How the kernel uses one pointer parameter: its global loads on the ordinary path and on the read-only
    one, and whether it writes through it or lets it escape."""

    plain_loads: list[Instruction] = field(default_factory=list)
    nc_loads: int = 0
    written: bool = False


def _param_index(name: str) -> int | None:
    found = _PARAM_RE.search(name)
    return int(found.group(1)) if found else None


def _registers(op: object) -> list[str]:
    """The registers an operand reads (an address's base, a vector's items)."""
    if isinstance(op, Reg):
        return [op.name]
    if isinstance(op, Addr) and isinstance(op.base, Reg):
        return [op.base.name]
    if isinstance(op, Vec):
        return [r for item in op.items for r in _registers(item)]
    return []


def _address(ins: Instruction) -> Addr | None:
    return next((o for o in ins.operands if isinstance(o, Addr)), None)


def provenance(function: Function) -> dict[str, frozenset[int]]:
    """Register -> the pointer parameters (by index) its value is computed from. A fixed point over the body,
    so that a pointer advanced in a loop keeps its parameter; the instructions that can carry a pointer are
    read once, and the passes go over those alone."""
    steps: list[tuple[str, frozenset[int] | None, tuple[str, ...]]] = []  # (dest, a parameter's, or the sources)
    for ins in function.body:
        if ins.opcode != "ld" and (ins.opcode in ("atom", "call") or _WIDE.isdisjoint(ins.modifiers)):
            continue  # a pointer is 64 bits wide: a narrower result holds none
        if not ins.has_dest or not ins.dests:
            continue
        dest = ins.dests[0]
        if not isinstance(dest, Reg):
            continue
        if ins.opcode == "ld":
            addr = _address(ins)
            if ins.space != "param" or addr is None or not isinstance(addr.base, Sym):
                continue  # a loaded value belongs to no parameter
            index = _param_index(addr.base.name)
            steps.append((dest.name, frozenset({index}) if index is not None else frozenset(), ()))
        else:
            steps.append((dest.name, None, tuple(r for op in ins.srcs for r in _registers(op))))
    origin: dict[str, frozenset[int]] = {}
    changed = True
    while changed:
        changed = False
        for dest_name, fixed, sources in steps:
            found = fixed
            if found is None:
                found = _NONE
                for r in sources:
                    found = found | origin.get(r, _NONE)
            if found:
                held = origin.get(dest_name, _NONE)
                if not found <= held:
                    origin[dest_name] = held | found
                    changed = True
    return origin


def pointer_uses(function: Function) -> dict[int, PointerUse]:
    """Per pointer parameter index, its loads, read-only loads and writes (see `PointerUse`)."""
    origin = provenance(function)
    uses: dict[int, PointerUse] = {}

    def use(index: int) -> PointerUse:
        return uses.setdefault(index, PointerUse())

    for ins in function.body:
        if ins.opcode not in _USES:
            continue  # nothing another opcode does to a pointer's memory matters here
        addr = _address(ins)
        through = origin.get(addr.base.name, frozenset()) if addr is not None and isinstance(addr.base, Reg) \
            else frozenset()
        if ins.opcode == "ld" and ins.space == "global" and _SHARED_WITH_OTHERS & set(ins.modifiers):
            for p in through:  # another thread or the host writes it while the kernel runs: never read-only
                use(p).written = True
        elif ins.opcode == "ld" and ins.space == "global":
            for p in through:
                if "nc" in ins.modifiers:
                    use(p).nc_loads += 1
                else:
                    use(p).plain_loads.append(ins)
        elif ins.opcode in _WRITES or (ins.opcode == "ld" and ins.space not in ("global", "param")):
            for p in through:
                use(p).written |= ins.opcode in _WRITES  # a write, or (ld.local/shared of it) nothing to say
        # a parameter's pointer used as a value, not an address: stored, passed on, compared into memory
        if ins.opcode in ("st", "atom", "red", "call"):
            for r in [r for op in ins.operands if not isinstance(op, Addr) for r in _registers(op)]:
                for p in origin.get(r, frozenset()):
                    use(p).written = True
    return uses


def _definition(facts: SourceFacts, kernel: str) -> KernelDefinition | None:
    base = re.split(r"[<(]", kernel, maxsplit=1)[0].rsplit("::", 1)[-1]
    found = facts.kernel(base, included=False)
    return found if found is not None and found.is_definition else None


def _parameter_tokens(facts: SourceFacts, kernel: KernelDefinition) -> list[list]:
    """The definition's parameter list, one token run per parameter."""
    env = facts.env
    first = env.token_index(kernel.name_offset) + 2  # past the name and its `(`
    return split_parameters(env.tokens[first:env.token_index(kernel.params_end_offset)])


def restrict_edit(facts: SourceFacts, param: list) -> TextEdit | None:
    """`__restrict__` inserted after the last `*` of a pointer declaration (`const float *a`, `const float *const
    *rows`: the parameter's own pointer); None for a declaration of another shape (a reference, an array, a
    function pointer, a pointer hidden in a typedef)."""
    texts = [t.text for t in param]
    if "*" not in texts or any(t in ("&", "&&", "[", "(") for t in texts):
        return None
    star = param[len(texts) - 1 - texts[::-1].index("*")]
    line, column = facts.position(star.offset + 1)
    after = facts.text[star.offset + 1:star.offset + 2]
    return TextEdit(line, column, line, column, "__restrict__" + ("" if after.isspace() else " "))


def unrestricted(ctx: KernelContext) -> tuple[KernelDefinition, list[tuple[int, PointerUse, list]]] | None:
    """The kernel's definition and its read-only pointer parameters loaded on the ordinary path whose declaration
    has no `__restrict__`: (index, uses, declaration tokens) each; None without a source that declares them.
    Worked out once per kernel context (the finding and its gain both ask); callers only read it."""
    if ctx.unrestricted is None:
        ctx.unrestricted = (_unrestricted(ctx),)
    return ctx.unrestricted[0]  # type: ignore[return-value]


def _unrestricted(ctx: KernelContext) -> tuple[KernelDefinition, list[tuple[int, PointerUse, list]]] | None:
    facts = scanned(ctx.cuda_source)
    if facts is None:
        return None  # no source to read the declarations from, nor to edit
    kernel = _definition(facts, ctx.report.name)
    if kernel is None:
        return None
    params = _parameter_tokens(facts, kernel)
    if len(params) != len(ctx.function.params):
        return None  # a parameter list that does not match the PTX's (a macro, a variadic pack)
    found = []
    for index, use in sorted(pointer_uses(ctx.function).items()):
        if use.written or not use.plain_loads or index >= len(params):
            continue
        tokens = params[index]
        if any(t.text in _RESTRICT or t.text == "volatile" for t in tokens) or not any(t.text == "*" for t in tokens):
            continue
        found.append((index, use, tokens))
    return kernel, found


def missing_restrict(ctx: KernelContext) -> Finding | None:
    """The kernel's `missing-restrict` finding, on its first read-only pointer parameter without `__restrict__`."""
    facts = scanned(ctx.cuda_source)
    read = unrestricted(ctx)
    if facts is None or read is None or not read[1]:
        return None
    kernel, found = read
    names = [kernel.params[i] or f"#{i + 1}" for i, _, _ in found]
    loads = sum(len(use.plain_loads) for _, use, _ in found)
    start_line, start_col = facts.position(found[0][2][0].offset)
    last = found[0][2][-1]
    end_line, end_col = facts.position(last.offset + len(last.text))
    listed = ", ".join(f"'{n}'" for n in names)
    message = (f"pointer parameter{'s' if len(names) > 1 else ''} {listed} only read, by {loads} ld.global on the "
               "ordinary path: without __restrict__ nvcc cannot rule out that the kernel's writes reach the same "
               "memory, so it keeps these loads in order with them and off the read-only path (ld.global.nc)")
    detail = {"parameters": names, "plain_loads": loads,
              "advice": "declare the pointers const T *__restrict__ when no other pointer of the launch reaches "
                        "their memory (or load through __ldg)"}
    edits = [restrict_edit(facts, tokens) for _, _, tokens in found]
    fix = None
    if edits and all(e is not None for e in edits):
        spec = rule(Code.MISSING_RESTRICT).fix(FixKind.ADD_RESTRICT)
        fix = Fix(FixKind.ADD_RESTRICT, f"declare {listed} __restrict__ (a promise that nothing else aliases "
                  f"{'them' if len(names) > 1 else 'it'})", {"parameters": names},
                  [e for e in edits if e is not None], spec.applicability)
    lines = sorted({n for _, use, _ in found for ins in use.plain_loads
                    if (n := line_in_file(ins.loc, ctx.main_file)) is not None and n != start_line})
    related = [line_related(ctx.cuda_source, n, "a load on the ordinary path") for n in lines[:5]]
    return Finding(Code.MISSING_RESTRICT, "information", start_line, start_col, end_line, end_col, message,
                   detail=detail, fix=fix, related=related, kernel=ctx.report.name)


def missing_restrict_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add the kernel's `missing-restrict` finding."""
    add_findings(ctx, missing_restrict)
