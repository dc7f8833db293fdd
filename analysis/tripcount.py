"""Loop trip counts from PTX induction variables, with the launch's `loops` value as the stated fallback.

A loop's count is read from its exit test when the test compares an induction variable against a bound and
init, bound and step are all known: immediates, kernel parameters whose value the launch knows, or launch
sizes (`%ntid`, `%nctaid`). Anything else leaves the count unknown with the reason, and the count falls back
to the launch's `loops` value (annotation, setting, CLI or default), which says where it came from.

The trip count is the number of times the loop's header block runs per entry into the loop. nvcc rotates
loops so that the test sits at the bottom, where this is the number of times the body runs. A loop whose very
first test fails is counted once: the zero-trip guard nvcc places in front of a rotated loop is not followed.
A bound that depends on the block or thread index (`%ctaid`, `%tid`) is read for several of them: the first,
one step along each axis, the middle and the last of the grid (and of the block). When every sample gets the
same count, the index terms cancel (CUDA's matrixMul runs `a` from `wA * BLOCK_SIZE * by` to
`aBegin + wA - 1`: `wA / BLOCK_SIZE` for every block; a grid-stride loop over exactly as many elements as
threads runs once in every thread) and that count is reported as such; otherwise the count stays unknown.
For affine bounds, agreement at the first index and one step along each axis is a proof; the other samples
guard the rest.
A `!=` loop whose counter starts at its exit value (`n & 3` remainder loops of an unrolled loop when the count
is a multiple of the unroll factor) is skipped by nvcc's zero-trip guard and counted 0.

Counting never iterates an additive loop (a closed-form search is used), so its cost does not grow with the
trip count; geometric loops (`s *= 2`, `s >>= 1`) are stepped, which ends within a few dozen steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kerncast.analysis.cexpr import Unknown
from kerncast.analysis.cfg import Cfg
from kerncast.analysis.intops import COMPARISONS, NoValue, int_op, wrap
from kerncast.analysis.launch import DEFAULT_LOOPS, Launch, Sourced
from kerncast.analysis.loops import Loop, LoopForest
from kerncast.analysis.ptx.model import Addr, Function, Imm, Instruction, PredPair, Reg, Sym, Vec

_ADDITIVE = {"add": 1, "sub": -1}
_GEOMETRIC = ("mul", "shl", "shr", "div")
_CMP = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "lo": "hi", "ls": "hs", "hi": "lo", "hs": "ls",
         "eq": "eq", "ne": "ne"}
_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "lo": "hs", "ls": "hi", "hi": "ls", "hs": "lo",
           "eq": "ne", "ne": "eq"}
_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<", "ls": "<=",
           "hi": ">", "hs": ">="}
MAX_GEOMETRIC_STEPS = 256
_SPECIAL_LAUNCH = {"ntid": "block", "nctaid": "grid"}


@dataclass(frozen=True)
class ExitTest:
    """The loop keeps running while `iv <cmp> bound`; `after_update` says the test sees the updated iv."""

    iv: str
    cmp: str
    bound: int
    init: int
    op: str
    step: int
    after_update: bool
    bits: int
    signed: bool
    line: int | None
    inputs: tuple[str, ...] = ()  # the parameter values read, e.g. "wA = 1024 from the launch-site"


def trip_counts(function: Function, cfg: Cfg, loops: LoopForest | Iterable[Loop],
                launch: Launch | None) -> dict[int, Sourced]:
    """Trip count per loop, keyed by the loop's header block id; every value says where it came from.

    `loops` is a `LoopForest` or any iterable of `Loop`s. Never raises: a loop that cannot be read gets the
    fallback count with the reason in its detail.
    """
    fallback = launch.loops if launch is not None else Sourced(DEFAULT_LOOPS, "default", None,
                                                               "default trip count for loops of unknown count")
    out: dict[int, Sourced] = {}
    loop_list = list(_loop_list(loops))
    defs = _definitions(function)
    reaching = _ReachingDefs(function, cfg, defs)
    for loop in loop_list:
        line = _header_line(cfg, loop.header)
        try:
            try:
                test = _exit_test(function, cfg, loop, loop_list, launch, defs, reaching)
                count = _count(test)
                detail = _describe(test, count)
            except _BlockDependent:
                count, detail = _count_per_block(function, cfg, loop, loop_list, launch, defs, reaching)
        except Unknown as exc:
            out[loop.header] = _fallback(fallback, exc.reason, line)
            continue
        except (IndexError, KeyError, ValueError, RecursionError) as exc:
            out[loop.header] = _fallback(fallback, f"the loop could not be read: {exc!r}", line)
            continue
        out[loop.header] = Sourced(count, "ptx", line, detail)
    return out


class _BlockDependent(Unknown):
    """The exit test's init or bound reads `%ctaid` or `%tid`: the count must be read per block and thread."""


def _samples(launch: Launch | None, field: str) -> list[tuple[int, int, int]]:
    """Indices to read an index-dependent count at: first, one step along each axis, middle, last."""
    dim = _launch_dim(launch, field)
    dims = tuple(dim.value) if dim is not None and dim.value is not None else (1 << 10, 1 << 10, 1 << 6)
    last = tuple(max(0, int(d) - 1) for d in dims)
    picks = {(0, 0, 0), last, tuple(d // 2 for d in last)}
    for axis in range(3):
        step = [0, 0, 0]
        step[axis] = min(1, last[axis])
        picks.add(tuple(step))
    return sorted(picks)  # type: ignore[arg-type]


def _count_per_block(function: Function, cfg: Cfg, loop: Any, loop_list: list[Any], launch: Launch | None,
                     defs: dict[str, list[Instruction]], reaching: _ReachingDefs) -> tuple[int, str]:
    """The count of a loop whose bounds read the block index, when it is the same for every sampled block."""
    counts: dict[int, ExitTest] = {}
    for block in _samples(launch, "grid"):
        for thread in _samples(launch, "block"):
            test = _exit_test(function, cfg, loop, loop_list, launch, defs, reaching, (block, thread))
            counts.setdefault(_count(test), test)
    if len(counts) != 1:
        raise Unknown(f"the count differs between blocks or threads "
                      f"({', '.join(str(c) for c in sorted(counts))})")
    count, test = next(iter(counts.items()))
    distance = test.bound - test.init
    return count, (f"induction variable {test.iv} runs {distance:+d} from its block-dependent start, step "
                   f"{_ADDITIVE.get(test.op, 0) * test.step:+d} while {_SYMBOL[test.cmp]} its bound: {count} "
                   f"iterations in every block and thread (the index terms cancel"
                   f"{''.join('; ' + i for i in test.inputs)})"
                   if test.op in _ADDITIVE else _describe(test, count) + " in every block and thread")


def trip_count_assumptions(counts: dict[int, Sourced]) -> list[str]:
    """One sentence per loop whose count was not read from the PTX, for a report's assumptions."""
    return [f"loop at line {c.line if c.line is not None else '?'}: {c.detail}"
            for _, c in sorted(counts.items()) if c.source != "ptx"]


def trip_values(counts: dict[int, Sourced]) -> dict[int, float]:
    """The numeric trip counts by loop header, fallbacks included: the one form memory, time and power weigh
    instructions with (a fallback is stated once, in the time assumptions)."""
    return {h: float(s.value) for h, s in counts.items()
            if isinstance(s.value, int | float) and not isinstance(s.value, bool)}


def _launch_dim(launch: Launch | None, field: str) -> Sourced | None:
    """The launch's `grid` or `block` size."""
    if launch is None:
        return None
    return launch.grid if field == "grid" else launch.block


def _loop_list(loops: LoopForest | Iterable[Loop]) -> Iterable[Loop]:
    return loops.loops if isinstance(loops, LoopForest) else loops


def _header_line(cfg: Cfg, header: int) -> int | None:
    for ins in cfg.instructions(header):
        if ins.loc is not None:
            return ins.loc.line
    return None


def _fallback(fallback: Sourced, reason: str, line: int | None) -> Sourced:
    where = {"default": "the default", "annotation": "the // kerncast: loops= annotation",
             "setting": "the loops setting", "cli": "--loops"}.get(fallback.source, fallback.source)
    return Sourced(fallback.value, fallback.source, line,
                   f"trip count unknown ({reason}); assumed {fallback.value} from {where}")


def _describe(t: ExitTest, count: int) -> str:
    delta = _ADDITIVE.get(t.op, 0) * t.step
    step = {"add": f"{delta:+d}", "sub": f"{delta:+d}", "mul": f"*{t.step}", "shl": f"<<{t.step}",
            "shr": f">>{t.step}", "div": f"/{t.step}"}[t.op]
    return (f"induction variable {t.iv} from {t.init} step {step} while {_SYMBOL[t.cmp]} {t.bound}: "
            f"{count} iterations{_inputs(t)}")


def _inputs(t: ExitTest) -> str:
    return f" ({', '.join(t.inputs)})" if t.inputs else ""


# ------------------------------------------------------------------------------------------ reading the test


def _exit_test(fn: Function, cfg: Cfg, loop: Any, all_loops: list[Any], launch: Launch | None,
               defs: dict[str, list[Instruction]], reaching: _ReachingDefs,
               index: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None) -> ExitTest:
    """Find the loop's single exit branch, its `setp`, and the induction variable it compares."""
    exits = list(loop.exits)
    if not exits:
        raise Unknown("the loop has no exit")
    if len(exits) != 1:
        raise Unknown(f"the loop has {len(exits)} exits (break or return)")
    block, outside = exits[0]
    body = cfg.instructions(block)
    branch = body[-1] if body else None
    if branch is None or branch.opcode != "bra" or branch.guard is None:
        raise Unknown("the loop exit is not a conditional branch")
    target_block = _block_of_label(fn, cfg, branch.branch_target)
    continue_if_true = target_block != outside
    setp = _defining_setp(body, branch.guard.reg)
    cmp, a, b = _setp_parts(setp, branch.guard.reg)
    if branch.guard.negated != (not continue_if_true):
        cmp = _NEGATE[cmp]
    in_loop = set(loop.blocks)
    nested = [set(other.blocks) for other in all_loops
              if other.header != loop.header and other.header in in_loop and set(other.blocks) <= in_loop]
    reader = _Values(fn, cfg, defs, reaching, loop, launch, index)
    for iv_op, bound_op, rel in ((a, b, cmp), (b, a, _FLIP[cmp])):
        if not isinstance(iv_op, Reg) or iv_op.is_special:
            continue
        iv, update = iv_op.name, _update_in_loop(defs, cfg, iv_op.name, in_loop)
        after = None
        if update is None:
            carried = _carried_update(defs, cfg, iv_op.name, in_loop)
            if carried is None:
                continue
            # `t = s << 1; test t; s = t`: the test sees the carried variable's next value
            iv, update, after = carried[0], carried[1], True
            _check_once_per_iteration(cfg, loop, carried[2], nested)
        _check_once_per_iteration(cfg, loop, update, nested)
        if after is None:
            after = _after_update(cfg, update, setp, block)
        elif not _after_update(cfg, update, setp, block):
            raise Unknown("the compared value is computed after the test")
        bits, signed = _type_of(setp)
        op, step = _step(update, iv, reader)
        init = reader.outside(iv)
        bound = reader.invariant(bound_op)
        return ExitTest(iv, rel, bound, init, op, step, after, bits, signed, setp.loc.line if setp.loc else None,
                        tuple(dict.fromkeys(reader.inputs)))
    raise Unknown("the exit test does not compare an induction variable updated once per iteration")


def _block_of_label(fn: Function, cfg: Cfg, label: str | None) -> int | None:
    if label is None or label not in fn.labels:
        return None
    index = fn.labels[label]
    return cfg.block_of[index] if index < len(cfg.block_of) else None


def _defining_setp(body: list[Instruction], pred: str) -> Instruction:
    for ins in reversed(body[:-1]):
        if any(pred in _dest_names(d) for d in ins.dests):
            if ins.opcode != "setp":
                raise Unknown(f"the exit predicate comes from {ins.full_opcode}")
            return ins
    raise Unknown("the exit predicate is not computed in the exiting block")


def _setp_parts(setp: Instruction, pred: str) -> tuple[str, Any, Any]:
    cmp = next((m for m in setp.modifiers if m in _CMP), None)
    if cmp is None:
        raise Unknown(f"{setp.full_opcode} is not an integer comparison")
    if any(m in ("and", "or", "xor") for m in setp.modifiers) or len(setp.operands) != 3:
        raise Unknown(f"{setp.full_opcode} combines predicates")
    if (setp.dtype or "").startswith("f"):
        raise Unknown("the exit test compares floating-point values")
    dest = setp.operands[0]
    if isinstance(dest, PredPair) and dest.second.name == pred:
        cmp = _NEGATE[cmp]
    return cmp, setp.operands[1], setp.operands[2]


def _type_of(ins: Instruction) -> tuple[int, bool]:
    t = ins.dtype or "s32"
    return (64 if t.endswith("64") else 16 if t.endswith("16") else 32), t.startswith("s")


def _dest_names(op: Any) -> set[str]:
    if isinstance(op, Reg):
        return {op.name}
    if isinstance(op, PredPair):
        return {op.first.name, op.second.name}
    items = op.items if isinstance(op, Vec) else ()
    return {i.name for i in items if isinstance(i, Reg)}


def _definitions(fn: Function) -> dict[str, list[Instruction]]:
    defs: dict[str, list[Instruction]] = {}
    for ins in fn.body:
        for d in ins.dests:
            for name in _dest_names(d):
                defs.setdefault(name, []).append(ins)
    return defs


def _update_in_loop(defs: dict[str, list[Instruction]], cfg: Cfg, reg: str,
                    in_loop: set[int]) -> Instruction | None:
    """The single instruction of the loop that writes `reg` from itself (`add r, r, x`), else None."""
    inside = [i for i in defs.get(reg, []) if cfg.block_of[i.index] in in_loop]
    if len(inside) != 1:
        return None
    ins = inside[0]
    srcs = [s for s in ins.srcs if isinstance(s, Reg) and s.name == reg]
    ok = ins.opcode in _ADDITIVE or ins.opcode in _GEOMETRIC
    return ins if srcs and ok and ins.guard is None else None


def _carried_update(defs: dict[str, list[Instruction]], cfg: Cfg, reg: str,
                    in_loop: set[int]) -> tuple[str, Instruction, Instruction] | None:
    """For `t = s op c; ...; s = t` loops that compare `t`: (s, the `op` instruction, the copy `s = t`)."""
    inside = [i for i in defs.get(reg, []) if cfg.block_of[i.index] in in_loop]
    if len(inside) != 1 or inside[0].guard is not None:
        return None
    ins = inside[0]
    if ins.opcode not in _ADDITIVE and ins.opcode not in _GEOMETRIC:
        return None
    for src in ins.srcs:
        if not isinstance(src, Reg) or src.is_special or src.name == reg:
            continue
        copies = [i for i in defs.get(src.name, []) if cfg.block_of[i.index] in in_loop]
        if len(copies) == 1 and copies[0].opcode == "mov" and copies[0].guard is None \
                and [s.name for s in copies[0].srcs if isinstance(s, Reg)] == [reg]:
            return src.name, ins, copies[0]
    return None


def _step(update: Instruction, reg: str, reader: _Values) -> tuple[str, int]:
    srcs = list(update.srcs)
    if len(srcs) != 2:
        raise Unknown(f"the induction update {update.full_opcode} is not a two-operand step")
    first_is_iv = isinstance(srcs[0], Reg) and srcs[0].name == reg
    other = srcs[1] if first_is_iv else srcs[0]
    if not first_is_iv and update.opcode in ("sub", "shl", "shr", "div"):
        raise Unknown(f"the induction update {update.full_opcode} has the variable on the right")
    step = reader.invariant(other)
    if update.opcode in _ADDITIVE:
        return update.opcode, step
    if step <= (1 if update.opcode in ("mul", "div") else 0):
        raise Unknown(f"the induction update {update.full_opcode} by {step} does not move the variable")
    return update.opcode, step


def _check_once_per_iteration(cfg: Cfg, loop: Any, update: Instruction, nested: list[set[int]]) -> None:
    """The induction update must run exactly once per iteration: on every path to a latch, not nested."""
    ub = cfg.block_of[update.index]
    if any(ub in inner for inner in nested):
        raise Unknown("the induction variable is updated inside a nested loop")
    if not all(cfg.dominates(ub, latch) for latch in loop.latches):
        raise Unknown("the induction variable is updated on only some paths")


def _after_update(cfg: Cfg, update: Instruction, setp: Instruction, test_block: int) -> bool:
    """Whether, in each iteration, the test sees the induction variable after its update."""
    ub = cfg.block_of[update.index]
    if ub == test_block:
        return update.index < setp.index
    if cfg.dominates(ub, test_block):
        return True
    if cfg.dominates(test_block, ub):
        return False
    raise Unknown("the induction variable is updated on only some paths")


class _ReachingDefs:
    """Which definitions reach each block entry (iterative data flow over bit sets of instruction indices)."""

    def __init__(self, fn: Function, cfg: Cfg, defs: dict[str, list[Instruction]]) -> None:
        self.fn, self.cfg = fn, cfg
        self.mask = {reg: sum(1 << i.index for i in ins) for reg, ins in defs.items()}
        n = len(cfg.blocks)
        gen, kill = [0] * n, [0] * n
        for b in range(n):
            for ins in cfg.instructions(b):
                for reg in {r for d in ins.dests for r in _dest_names(d)}:
                    kill[b] |= self.mask[reg]
                    gen[b] = (gen[b] & ~self.mask[reg]) | (1 << ins.index)
        self.reach_in, self.reach_out = [0] * n, list(gen)
        order = cfg.rpo or list(range(n))
        changed = True
        while changed:
            changed = False
            for b in order:
                inn = 0
                for p in cfg.blocks[b].preds:
                    inn |= self.reach_out[p]
                out = gen[b] | (inn & ~kill[b])
                if inn != self.reach_in[b] or out != self.reach_out[b]:
                    self.reach_in[b], self.reach_out[b] = inn, out
                    changed = True

    def _instructions(self, bits: int) -> list[Instruction]:
        out = []
        while bits:
            low = bits & -bits
            out.append(self.fn.body[low.bit_length() - 1])
            bits ^= low
        return out

    def at(self, reg: str, ins: Instruction) -> list[Instruction]:
        """The definitions of `reg` that reach instruction `ins`."""
        block = self.cfg.block_of[ins.index]
        for prev in reversed(self.fn.body[self.cfg.blocks[block].start:ins.index]):
            if any(reg in _dest_names(d) for d in prev.dests):
                return [prev]
        return self._instructions(self.reach_in[block] & self.mask.get(reg, 0))

    def entering(self, reg: str, header: int, in_loop: set[int]) -> list[Instruction]:
        """The definitions of `reg` that reach the loop header from outside the loop."""
        bits = 0
        for p in self.cfg.blocks[header].preds:
            if p not in in_loop:
                bits |= self.reach_out[p]
        return self._instructions(bits & self.mask.get(reg, 0))


class _Values:
    """Values of registers the loop does not change, from the definitions that reach the loop's entry."""

    MAX_DEPTH = 32

    def __init__(self, fn: Function, cfg: Cfg, defs: dict[str, list[Instruction]], reaching: _ReachingDefs,
                 loop: Any, launch: Launch | None,
                 index: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None) -> None:
        self.fn, self.cfg, self.defs, self.launch = fn, cfg, defs, launch
        self.index = index
        self.inputs: list[str] = []
        self.reaching, self.header, self.in_loop = reaching, loop.header, set(loop.blocks)
        self.params = {p.name: i for i, p in enumerate(fn.params)}
        self._active: set[int] = set()

    def invariant(self, op: Any) -> int:
        """The value of an operand that the loop does not change."""
        if isinstance(op, Reg) and not op.is_special:
            if any(self.cfg.block_of[i.index] in self.in_loop for i in self.defs.get(op.name, [])):
                raise Unknown(f"the bound {op.name} changes inside the loop")
            return self.outside(op.name)
        return self.operand(op, None, 0)

    def outside(self, reg: str) -> int:
        """The value a register holds on entry to the loop."""
        return self._agree(reg, self.reaching.entering(reg, self.header, self.in_loop), 0)

    def _agree(self, reg: str, defs: list[Instruction], depth: int) -> int:
        if depth > self.MAX_DEPTH:
            raise Unknown(f"{reg} is computed too indirectly")
        if not defs:
            raise Unknown(f"{reg} has no value on entry to the loop")
        values = {self._evaluate(d, depth + 1) for d in defs}
        if len(values) != 1:
            raise Unknown(f"{reg} has different values on the paths into the loop")
        return values.pop()

    def _evaluate(self, ins: Instruction, depth: int) -> int:
        if ins.index in self._active:
            raise Unknown(f"{ins.full_opcode} at PTX line {ins.ptx_line} changes in an enclosing loop")
        self._active.add(ins.index)
        try:
            return self.instruction(ins, depth)
        finally:
            self._active.discard(ins.index)

    def operand(self, op: Any, at: Instruction | None, depth: int) -> int:
        if isinstance(op, Imm):
            if not isinstance(op.value, int):
                raise Unknown(f"the floating-point operand {op.text}")
            return op.value
        if isinstance(op, Reg):
            if op.is_special:
                return self.special(op.name)
            if at is None:
                return self.outside(op.name)
            return self._agree(op.name, self.reaching.at(op.name, at), depth)
        raise Unknown(f"the operand {op!r} is not a register or an immediate")

    def special(self, name: str) -> int:
        base, _, axis = name.lstrip("%").partition(".")
        if base in ("ctaid", "tid") and axis in ("x", "y", "z"):
            if self.index is None:
                raise _BlockDependent(f"the value depends on {name}, which differs between "
                                      f"{'blocks' if base == 'ctaid' else 'threads'}")
            return self.index[0 if base == "ctaid" else 1]["xyz".index(axis)]
        field = _SPECIAL_LAUNCH.get(base)
        if field is None or axis not in ("x", "y", "z"):
            raise Unknown(f"the value depends on {name}, which differs between threads")
        sourced = _launch_dim(self.launch, field)
        if sourced is None or sourced.value is None:
            raise Unknown(f"{name} needs the launch {field} size, which is unknown")
        return sourced.value["xyz".index(axis)]

    def instruction(self, ins: Instruction, depth: int) -> int:
        if ins.guard is not None:
            raise Unknown(f"{ins.full_opcode} at PTX line {ins.ptx_line} is predicated")
        srcs = list(ins.srcs)
        if ins.opcode == "ld" and "param" in ins.modifiers:
            return self.param(srcs[0] if srcs else None)
        if ins.opcode in ("ld", "ldu", "atom"):
            where = f" (source line {ins.loc.line})" if ins.loc else ""
            raise Unknown(f"the value is loaded from {ins.space} memory at PTX line {ins.ptx_line}{where}")
        if ins.opcode in ("mov", "cvt") and len(srcs) == 1:
            return self.operand(srcs[0], ins, depth)
        vals = [self.operand(s, ins, depth) for s in srcs]
        result = _arith(ins.opcode, vals, *_type_of(ins))
        if result is None:
            raise Unknown(f"{ins.full_opcode} at PTX line {ins.ptx_line} is not folded")
        return result

    def param(self, addr: Any) -> int:
        if not isinstance(addr, Addr) or not isinstance(addr.base, Sym) or addr.offset != 0:
            raise Unknown("a load from a parameter field")
        index = self.params.get(addr.base.name)
        if index is None:
            raise Unknown(f"{addr.base.name} is not a parameter of {self.fn.name}")
        names = self.launch.param_names if self.launch is not None else []
        name = names[index] if index < len(names) and names[index] else f"#{index}"
        known = self.launch.param(index) if self.launch is not None else None
        if known is None or not isinstance(known.value, int):
            raise Unknown(f"parameter {name} has no known value (set it with --param {name if names else index}"
                          f"=VALUE or a // kerncast: annotation)")
        self.inputs.append(f"{name} = {known.value} from the {known.source}")
        return known.value


def _arith(opcode: str, v: list[int], bits: int = 64, signed: bool = True) -> int | None:
    """Integer semantics of the PTX opcodes that compute bounds, at the instruction's width and signedness
    (`kerncast.analysis.intops`: C truncating division, logical `shr` on unsigned operands)."""
    if opcode in ("add", "sub", "mul", "min", "max", "and", "or", "xor", "shl", "shr", "div", "rem") \
            and len(v) == 2:
        a, b = v
        if opcode in ("add", "sub", "mul"):
            return {"add": a + b, "sub": a - b, "mul": a * b}[opcode]
        if opcode in ("shl", "shr") and not 0 <= b < 64:
            raise Unknown(f"shift by {b}")
        if opcode == "shl":
            return a << b
        try:
            return int_op(opcode, a, b, bits, signed)
        except NoValue as exc:
            raise Unknown(str(exc)) from exc
    if opcode == "mad" and len(v) == 3:
        return v[0] * v[1] + v[2]
    if opcode == "neg" and len(v) == 1:
        return -v[0]
    return None


# ------------------------------------------------------------------------------------------ counting


def _holds(cmp: str, a: int, b: int) -> bool:
    """The exit test on values already read at its width and signedness."""
    return bool(COMPARISONS[cmp](a, b))


def _count(t: ExitTest) -> int:
    """Number of header executions: one more than the index of the first test that fails."""
    unsigned_cmp = t.cmp in ("lo", "ls", "hi", "hs")
    signed = t.signed and not unsigned_cmp
    bound = wrap(t.bound, t.bits, signed)
    shift = 1 if t.after_update else 0
    if t.cmp == "ne" and t.op in _ADDITIVE and t.after_update and t.init == t.bound:
        return 0  # starts at its exit value: nvcc's zero-trip guard in front of the loop skips it

    def value(i: int) -> int:
        return wrap(_advance(t, t.init, i + shift), t.bits, signed)

    if not _holds(t.cmp, value(0), bound):
        return 1
    if t.op in _ADDITIVE:
        # searched without wrap-around, which would break the monotonic order the search relies on
        return _first_failure_additive(t, lambda i: _advance(t, t.init, i + shift), bound) + 1
    for i in range(1, MAX_GEOMETRIC_STEPS):
        if not _holds(t.cmp, value(i), bound):
            return i + 1
    raise Unknown(f"the loop does not end within {MAX_GEOMETRIC_STEPS} steps of {t.iv}")


def _advance(t: ExitTest, start: int, n: int) -> int:
    if t.op in _ADDITIVE:
        return start + _ADDITIVE[t.op] * t.step * n
    v = start
    for _ in range(n):
        v = _geometric_step(t.op, v, t.step)
        if v == 0 or abs(v) > 1 << 70:
            break
    return v


def _geometric_step(op: str, v: int, step: int) -> int:
    """One step of a geometric induction variable, in PTX's integer semantics (only the op asked for is
    computed: a huge shift amount from the text is clamped to 64 as PTX clamps it to the width)."""
    if op == "mul":
        return v * step
    if op in ("shl", "shr"):
        amount = 64 if step < 0 else min(step, 64)
        return v << amount if op == "shl" else v >> amount
    if step == 0:
        raise Unknown("division by zero")
    q = abs(v) // abs(step)
    return q if (v < 0) == (step < 0) else -q


def _first_failure_additive(t: ExitTest, value: Any, bound: int) -> int:
    """Smallest i > 0 whose test fails, without iterating: exact for ==/!=, a binary search otherwise."""
    delta = _ADDITIVE[t.op] * t.step
    if delta == 0:
        raise Unknown(f"{t.iv} does not change, so the loop never ends")
    if t.cmp in ("ne", "eq"):
        if t.cmp == "eq":
            return 1
        distance = bound - value(0)
        if distance % delta or distance // delta < 0:
            raise Unknown(f"{t.iv} steps past {bound} without equalling it (wraps around)")
        return distance // delta
    if (t.cmp in ("lt", "le", "lo", "ls") and delta < 0) or (t.cmp in ("gt", "ge", "hi", "hs") and delta > 0):
        raise Unknown(f"{t.iv} moves away from the bound {bound}")
    limit = 1 << t.bits
    hi = 1
    while _holds(t.cmp, value(hi), bound):
        if hi > limit:
            raise Unknown(f"{t.iv} moves away from the bound {bound}")
        hi *= 2
    lo = hi // 2  # value(lo) holds, value(hi) fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _holds(t.cmp, value(mid), bound):
            lo = mid
        else:
            hi = mid
    return hi
