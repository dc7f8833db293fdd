"""Concrete values of the registers a loop does not change, from the definitions that reach the loop's entry.

A trip count needs numbers: the start, bound and step of an induction variable under what the launch knows
(kernel parameters, `%ntid`, `%nctaid`, and for a block-dependent bound one sampled block and thread index).
This query walks the reaching definitions (`reaching`) back from the loop's entry and computes each defining
instruction on constants with the symbolic pass's own reading of it (`symbolic.instruction_value`, over
`intops`), so a trip count and an address never read an instruction differently; it raises `Unknown` with
the first reason a value cannot be known (a load from memory, a predicated definition, paths that disagree, a
parameter the launch does not give), and it records which launch facts it read, so that a count can say what
it rests on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kerncast.analysis.cexpr import Unknown
from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, Poly, int_type
from kerncast.analysis.dataflow.reaching import ReachingDefs
from kerncast.analysis.dataflow.symbolic import instruction_value
from kerncast.analysis.intops import COMPARISONS, wrap
from kerncast.analysis.launch import Launch, Sourced
from kerncast.analysis.loops import Loop
from kerncast.analysis.ptx.model import Addr, Function, Imm, Instruction, Operand, PredPair, Reg, Sym

_SPECIAL_LAUNCH = {"ntid": "block", "nctaid": "grid"}

#: a sampled (block index, thread index) at which to read a value that depends on them
Index = tuple[tuple[int, int, int], tuple[int, int, int]]


#: `after_loop(loop, reg, index)`: the (entry, exit) values of register `reg` around an earlier `loop`, at the
#: sampled index; Unknown when they cannot be read
AfterLoop = Callable[[Loop, str, "Index | None"], tuple[int, int]]


class IndexDependent(Unknown):
    """The value reads `%ctaid` or `%tid`: it must be read per sampled block and thread."""


#: an integer comparison and the one that holds when it does not (the second predicate of `setp p|q`)
NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "lo": "hs", "ls": "hi", "hi": "ls", "hs": "lo",
           "eq": "ne", "ne": "eq"}


def setp_parts(setp: Instruction, pred: str) -> tuple[str, Operand, Operand]:
    """(comparison, left, right) of the plain integer `setp` that writes predicate `pred`, the comparison
    negated where `pred` is its second destination; Unknown for a float or a combining comparison."""
    cmp = next((m for m in setp.modifiers if m in NEGATED), None)
    if cmp is None:
        raise Unknown(f"{setp.full_opcode} is not an integer comparison")
    if any(m in ("and", "or", "xor") for m in setp.modifiers) or len(setp.operands) != 3:
        raise Unknown(f"{setp.full_opcode} combines predicates")
    if (setp.dtype or "").startswith("f"):
        raise Unknown("the comparison is of floating-point values")
    dest = setp.operands[0]
    if isinstance(dest, PredPair) and dest.second.name == pred:
        cmp = NEGATED[cmp]
    return cmp, setp.operands[1], setp.operands[2]


class UnknownParameter(Unknown):
    """The value reads a kernel parameter whose value the launch does not give (`key`: its name in the
    launch's parameters, else its index as text)."""

    def __init__(self, reason: str, key: str) -> None:
        super().__init__(reason)
        self.key = key


def launch_dim(launch: Launch | None, field: str) -> Sourced | None:
    """The launch's `grid` or `block` size."""
    if launch is None:
        return None
    return launch.grid if field == "grid" else launch.block


#: instruction index -> (the value it writes, the depth its reading took, the launch facts it read): the values
#: one loop's exit test read at one sampled index that no index enters, for the readers at its other indices
SharedReads = dict[int, tuple[int, int, tuple[str, ...]]]


class EntryValues:
    """Values of registers the loop does not change, from the definitions that reach the loop's entry."""

    MAX_DEPTH = 32
    #: blocks a walk along the path into a loop may pass (nvcc's peeled remainders take a handful)
    MAX_PATH_BLOCKS = 64

    def __init__(self, fn: Function, cfg: Cfg, defs: dict[str, list[Instruction]], reaching: ReachingDefs,
                 loop: Loop, launch: Launch | None, index: Index | None = None,
                 after_loop: AfterLoop | None = None, loops: Sequence[Loop] = (),
                 in_outer: Callable[[Loop, str], int] | None = None,
                 shared: SharedReads | None = None) -> None:
        self.fn, self.cfg, self.defs, self.launch = fn, cfg, defs, launch
        self.index = index
        #: the (entry, exit) values of a register a loop before this one moves (see `AfterLoop`)
        self.after_loop = after_loop
        self.loops = [lp for lp in loops if loop.header not in lp.blocks]  # the loops this one may follow
        #: `in_outer(loop, reg)`: the value `reg` holds in this loop's entry at the sampled iteration of an
        #: enclosing `loop` that moves it (None: such a value changes in the enclosing loop and is unknown)
        self.in_outer = in_outer
        self.enclosing = [lp for lp in loops if loop.header in lp.blocks and lp.header != loop.header]
        #: the launch facts read, e.g. "wA = 1024 from the launch-site"
        self.inputs: list[str] = []
        self.reaching, self.header, self.in_loop = reaching, loop.header, set(loop.blocks)
        self.params = {p.name: i for i, p in enumerate(fn.params)}
        self._active: set[int] = set()
        self._atoms = Atoms()  # for `instruction_value`, which folds constants and names what it cannot
        #: the values no sampled index enters, shared by the readers of one loop's exit test (`tripcount._ReadOnce`)
        self._shared = shared
        #: reads of what differs between indices: a block or thread index, a loop left earlier, an enclosing
        #: loop's sampled iteration (a value read after none of them is the same at every index)
        self._index_reads = 0
        #: the deepest `_agree` depth reached so far by the instruction being evaluated
        self._deepest = 0

    def invariant(self, op: Operand) -> int:
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
        self._deepest = max(self._deepest, depth)
        if not defs:
            raise Unknown(f"{reg} has no value on entry to the loop")
        if self.in_outer is not None:
            self._index_reads += 1  # the enclosing loops are read at the sampled iteration
            blocks = [self.cfg.block_of[d.index] for d in defs]
            around = [lp for lp in self.enclosing if any(b in lp.blocks for b in blocks)
                      and not all(b in lp.blocks for b in blocks)]
            if around:  # carried around an enclosing loop: its value at that loop's sampled iteration
                return self.in_outer(min(around, key=lambda lp: len(lp.blocks)), reg)
            heads = [lp for lp in self.enclosing if len(defs) == 1 and defs[0].opcode == "mov"
                     and self.cfg.block_of[defs[0].index] == lp.header]
            if heads:  # a copy of the enclosing loop's counter taken at the top of its body (`i = s; s = i + 1`)
                try:
                    return self.in_outer(heads[0], reg)
                except Unknown:
                    pass  # not such a copy: read it as any other value
        before = self._preceding_loop(defs)
        if before is not None:
            return self._after(reg, before, defs, depth)
        values = {self._evaluate(d, depth + 1) for d in defs}
        if len(values) != 1:
            taken = self._on_path(reg, defs, depth)
            if taken is None:
                raise Unknown(f"{reg} has different values on the paths into the loop")
            return self._evaluate(taken, depth + 1)
        return values.pop()

    def _on_path(self, reg: str, defs: list[Instruction], depth: int) -> Instruction | None:
        """Of definitions that disagree, the one on the path the branches take at the sampled index: nvcc
        peels a loop's remainder into straight code ahead of the unrolled loop (`if (r == 0) ...; if (r == 1)
        ...`) and hands the counter over on one of several paths, chosen by values the index and the launch
        fix. The path is walked forward from the nearest block that dominates the loop's header and every
        definition, deciding each branch from its predicate; None where a branch cannot be decided, a block
        comes round again, the walk leaves before the loop, or no definition lies on it."""
        blocks = {self.cfg.block_of[d.index] for d in defs}
        start = self.cfg.idom[self.header] if self.header < len(self.cfg.idom) else -1
        while start >= 0 and not all(self.cfg.dominates(start, b) for b in blocks):
            parent = self.cfg.idom[start]
            start = parent if parent != start else -1
        if start < 0:
            return None
        by_index = {d.index: d for d in defs}
        taken: Instruction | None = None
        seen: set[int] = set()
        block = start
        while block != self.header:
            if block in seen or len(seen) > self.MAX_PATH_BLOCKS:
                return None
            seen.add(block)
            blk = self.cfg.blocks[block]
            for i in range(blk.start, blk.end):
                if i in by_index:
                    taken = by_index[i]
                elif reg in self.fn.body[i].registers_written:
                    taken = None  # redefined by a write that does not reach the loop: off the path
            nxt = self._next_block(block, depth)
            if nxt is None:
                return None
            block = nxt
        return taken

    def _next_block(self, block: int, depth: int) -> int | None:
        """The block control reaches after `block` at the sampled index (None where its branch cannot be
        decided, or it leaves the function)."""
        blk = self.cfg.blocks[block]
        last = self.fn.body[blk.end - 1] if blk.end > blk.start else None
        fall = self.cfg.block_of[blk.end] if blk.end < len(self.cfg.block_of) else None
        if last is None or last.opcode != "bra":
            return fall if len(blk.succs) == 1 and fall in blk.succs else None
        label = last.branch_target
        target = self.fn.labels.get(label) if label else None
        jump = self.cfg.block_of[target] if target is not None and target < len(self.cfg.block_of) else None
        if last.guard is None:
            return jump
        try:
            holds = self._predicate(last.guard.reg, last, depth)
        except Unknown:
            return None
        return jump if holds != last.guard.negated else fall

    def _predicate(self, pred: str, at: Instruction, depth: int) -> bool:
        """A predicate register's value at `at`, from the integer `setp` that writes it."""
        defs = self.reaching.at(pred, at)
        if len(defs) != 1 or defs[0].opcode != "setp" or defs[0].guard is not None:
            raise Unknown(f"the predicate {pred} is not one integer comparison")
        setp = defs[0]
        cmp, x, y = setp_parts(setp, pred)
        bits, signed = int_type(setp)
        signed = signed and cmp not in ("lo", "ls", "hi", "hs")
        a, b = (wrap(self.operand(op, setp, depth + 1), bits, signed) for op in (x, y))
        return bool(COMPARISONS[cmp](a, b))

    def _preceding_loop(self, defs: list[Instruction]) -> Loop | None:
        """The innermost loop, not around this one, that holds one of `defs`: the register leaves it with the
        value its last iteration gave it (nvcc's remainder loop ahead of an unrolled one passes its counter)."""
        inner: Loop | None = None
        for d in defs:
            block = self.cfg.block_of[d.index]
            for lp in self.loops:
                if block in lp.blocks and (inner is None or len(lp.blocks) < len(inner.blocks)):
                    inner = lp
        return inner

    def _after(self, reg: str, loop: Loop, defs: list[Instruction], depth: int) -> int:
        """`reg` after `loop`, which runs before the loop read: its exit value, from the loop's own count at
        the same index. A definition outside `loop` reaching too is the path that skips it (its zero-trip
        guard), which must give the value the loop starts from."""
        if self.after_loop is None:
            raise Unknown(f"{reg} is changed by the loop at block {loop.header}, before this one")
        self._index_reads += 1
        entry, exit_value = self.after_loop(loop, reg, self.index)
        for d in defs:
            if self.cfg.block_of[d.index] not in loop.blocks and self._evaluate(d, depth + 1) != entry:
                raise Unknown(f"{reg} has different values on the paths into the loop")
        return exit_value

    def _evaluate(self, ins: Instruction, depth: int) -> int:
        if ins.index in self._active:
            raise Unknown(f"{ins.full_opcode} at PTX line {ins.ptx_line} changes in an enclosing loop")
        shared = self._shared
        if shared is not None:
            hit = shared.get(ins.index)
            # read again only where a reading this deep would have stopped (too indirect) where the first did not
            if hit is not None and depth + hit[1] <= self.MAX_DEPTH:
                self._deepest = max(self._deepest, depth + hit[1])
                self.inputs.extend(hit[2])
                return hit[0]
        reads, deepest, inputs = self._index_reads, self._deepest, len(self.inputs)
        self._deepest = depth
        self._active.add(ins.index)
        try:
            value = self.instruction(ins, depth)
        finally:
            self._active.discard(ins.index)
            height = self._deepest - depth
            self._deepest = max(deepest, self._deepest)
        if shared is not None and self._index_reads == reads:
            shared[ins.index] = (value, height, tuple(self.inputs[inputs:]))
        return value

    def operand(self, op: Operand, at: Instruction | None, depth: int) -> int:
        """An operand's value: at instruction `at`, or on entry to the loop when `at` is None."""
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
        """A special register: a launch size, or the sampled block/thread index."""
        base, _, axis = name.lstrip("%").partition(".")
        if base in ("ctaid", "tid") and axis in ("x", "y", "z"):
            self._index_reads += 1
            if self.index is None:
                raise IndexDependent(f"the value depends on {name}, which differs between "
                                     f"{'blocks' if base == 'ctaid' else 'threads'}")
            return self.index[0 if base == "ctaid" else 1]["xyz".index(axis)]
        field = _SPECIAL_LAUNCH.get(base)
        if field is None or axis not in ("x", "y", "z"):
            raise Unknown(f"the value depends on {name}, which differs between threads")
        sourced = launch_dim(self.launch, field)
        if sourced is None or sourced.value is None:
            raise Unknown(f"{name} needs the launch {field} size, which is unknown")
        return sourced.value["xyz".index(axis)]

    def instruction(self, ins: Instruction, depth: int) -> int:
        """The value one defining instruction writes."""
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
        result = E.as_const(instruction_value(self._atoms, ins, [E.const(v) for v in vals]))
        if result is None:
            raise Unknown(f"{ins.full_opcode} at PTX line {ins.ptx_line} is not folded")
        return result

    def polynomial(self, atoms: Atoms, p: Poly) -> int:
        """The value of a symbolic value over launch sizes and parameters (a recurrence's step `4 * blockDim.x`);
        Unknown for any other atom."""
        total = 0
        for mono, coefficient in p:
            term = coefficient
            for a in mono:
                key = atoms.keys[a]
                if key[0] != "sym":
                    raise Unknown("the step is not a polynomial in the launch's sizes and parameters")
                name = str(key[1])
                term *= self.param(Addr(Sym(name[6:]))) if name.startswith("param:") else self.special(f"%{name}")
            total += term
        return total

    def param(self, addr: Operand | None) -> int:
        """A kernel parameter's value, when the launch knows it."""
        if not isinstance(addr, Addr) or not isinstance(addr.base, Sym) or addr.offset != 0:
            raise Unknown("a load from a parameter field")
        index = self.params.get(addr.base.name)
        if index is None:
            raise Unknown(f"{addr.base.name} is not a parameter of {self.fn.name}")
        names = self.launch.param_names if self.launch is not None else []
        name = names[index] if index < len(names) and names[index] else f"#{index}"
        known = self.launch.param(index) if self.launch is not None else None
        if known is None or not isinstance(known.value, int):
            key = names[index] if index < len(names) and names[index] else str(index)
            raise UnknownParameter(f"parameter {name} has no known value (set it with --param "
                                   f"{name if names else index}=VALUE or a // kerncast: annotation)", str(key))
        self.inputs.append(f"{name} = {known.value} from the {known.source}")
        return known.value
