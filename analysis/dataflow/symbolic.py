"""Symbolic values of every PTX register: a forward pass over the CFG that builds polynomials (see `expr`).

PTX from nvcc is not in SSA form: a loop counter is one register rewritten in the loop body. At a loop
header every register the loop writes is therefore given a *recurrence* atom; after the pass, the value on
the back edges tells what the recurrence is: unchanged (invariant), `r + step` with a loop-invariant step
(affine: `init + step * K` with K the iteration number), `r * c`, `r << c`, `r >> c` or `r / c` (geometric,
e.g. the `s *= 2` of a tree reduction, enumerated once the start and bound are known), or unknown.

Other joins keep a value when all paths agree; where a loop's exit meets the path that skips it, a register
leaves with its recurrence at the loop's last iteration when the count has a closed form (see `_LoopExit`);
when they differ otherwise the value becomes a uniform unknown if every incoming value and every branch
deciding the path is warp-uniform, and TOP otherwise. Loads through
per-lane addresses, atomics and shuffles are TOP. Nothing here raises on PTX the parser accepts: an opcode
we do not model becomes an opaque operation over its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, Poly, Value, int_type
from kerncast.analysis.dataflow.induction import Recurrence, classify
from kerncast.analysis.loops import Loop, LoopForest
from kerncast.analysis.ptx.model import Addr, Imm, Instruction, Operand, PredPair, Reg, Sym, Vec

MEMORY_OPCODES = frozenset({"ld", "ldu", "st", "atom", "red", "wmma"})
_FLOAT_TYPES = frozenset({"f16", "f32", "f64", "bf16", "f16x2", "bf16x2", "tf32", "e4m3", "e5m2"})
_CMP_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu",
                      "gtu", "geu", "num", "nan"})
_BOOL_OPS = ("and", "or", "xor")
_MISSING = object()
_NONLINEAR = frozenset({"shr", "div", "rem", "and", "or", "xor", "min", "max", "abs"})


@dataclass(slots=True)
class SymbolicResult:
    """The symbolic facts the warp-level analyses need."""

    atoms: Atoms
    addresses: dict[int, Value] = field(default_factory=dict)  # memory instruction index -> byte address
    guards: dict[int, Value] = field(default_factory=dict)  # guarded instruction -> 0/1 predicate (negation applied)
    recurrences: dict[int, Recurrence] = field(default_factory=dict)  # rec atom -> recurrence
    resolution: dict[int, Value] = field(default_factory=dict)  # rec atom -> value in terms of K / geo atoms
    geo: dict[int, Recurrence] = field(default_factory=dict)  # geo atom -> its geometric recurrence
    iteration_atom: dict[int, int] = field(default_factory=dict)  # loop id -> K atom
    params: dict[str, int] = field(default_factory=dict)  # param symbol name -> atom
    undefined: set[str] = field(default_factory=set)
    #: a uniform join after a loop -> (loop id, the value leaving the loop, the value on the paths that skip it)
    after_loop: dict[int, tuple[int, Value, Value]] = field(default_factory=dict)

    def recurrence(self, loop_id: int, reg: str) -> Recurrence | None:
        """How register `reg` evolves over the iterations of loop `loop_id`; None if the loop does not write it."""
        return next((rc for rc in self.recurrences.values() if rc.loop == loop_id and rc.reg == reg), None)


@cache
def _special(name: str) -> bool:
    """Whether a register name is a hardware special register (`%tid.x`, ...), once per name: the pass asks
    for every operand it reads."""
    return Reg(name).is_special


def _is_float(ins: Instruction) -> bool:
    return any(m in _FLOAT_TYPES for m in ins.modifiers)


class _Pass:
    """One forward pass; `rec_lane` says which recurrences are (believed) lane-dependent."""

    def __init__(self, cfg: Cfg, loops: LoopForest, written: dict[int, set[str]],
                 rec_lane: dict[tuple[int, str], bool]) -> None:
        self.cfg = cfg
        self.loops = loops
        self.fn = cfg.function
        self.rec_lane = rec_lane
        self.res = SymbolicResult(Atoms())
        self.env_out: dict[int, dict[str, Value]] = {}
        self.header_of: dict[int, Loop] = {lp.header: lp for lp in loops.loops}
        self.written = written
        #: the lane-dependence each recurrence was given: `rec_lane`'s, else guessed from its start
        self.lane_used: dict[tuple[int, str], bool] = {}
        self.rec_atoms: dict[tuple[int, str], int] = {}

    # ------------------------------------------------------------------------------------------- driver
    def run(self) -> SymbolicResult:
        cfg = self.cfg
        for b in cfg.rpo:
            env = self._entry_env(b)
            for ins in cfg.instructions(b):
                try:
                    self._transfer(ins, env)
                except (ArithmeticError, ValueError, TypeError, IndexError, RecursionError):
                    for r in ins.registers_written:
                        env[r] = None
            self.env_out[b] = env
        self._resolve()
        return self.res

    def _entry_env(self, b: int) -> dict[str, Value]:
        preds = [p for p in self.cfg.blocks[b].preds if p in self.env_out]
        lp = self.header_of.get(b)
        if lp is not None:
            preds = [p for p in preds if p not in lp.blocks]
        if not preds:
            env: dict[str, Value] = {}
        elif len(preds) == 1:
            env = dict(self.env_out[preds[0]])
        else:
            env = self._join(b, preds)
        unprocessed = [p for p in self.cfg.blocks[b].preds if p not in self.env_out
                       and not (lp is not None and p in lp.blocks)]
        if unprocessed:  # irreducible flow: every register may come from elsewhere
            for k in list(env):
                env[k] = None
        if lp is not None:
            atoms = self.res.atoms
            for r in self.written[lp.id]:
                key = (lp.id, r)
                lane = self.rec_lane.get(key)
                if lane is None:  # a lane-dependent start makes a lane-dependent recurrence, whatever its step
                    lane = self._start_is_lane(b, lp, r)
                self.lane_used[key] = lane
                a = atoms.atom(("rec", lp.id, r), lane)
                self.rec_atoms[key] = a
                env[r] = (((a,), 1),)
        return env

    def _start_is_lane(self, header: int, lp: Loop, reg: str) -> bool:
        """Whether the start of `reg`'s recurrence (see `_resolve`) is TOP or lane-dependent, read from the
        values entering the loop without creating an atom."""
        starts = [self.env_out[p].get(reg) for p in self.cfg.blocks[header].preds
                  if p not in lp.blocks and p in self.env_out]
        atoms = self.res.atoms
        return not starts or any(v is None or atoms.is_lane(v) for v in starts)

    def _join(self, b: int, preds: list[int]) -> dict[str, Value]:
        envs = [self.env_out[p] for p in preds]
        # Start from the first path's values; only registers whose values differ between paths need work.
        # (Values copied along paths are the same objects, so the identity test settles most registers.)
        out: dict[str, Value] = dict(envs[0])
        differ: set[str] = set()
        for e in envs[1:]:
            for k, v in e.items():
                cur = out.get(k, _MISSING)
                if cur is _MISSING:
                    out[k] = v
                elif cur is not v and cur != v:
                    differ.add(k)
        uniform_control: bool | None = None
        atoms = self.res.atoms
        after = _LoopExit.find(self, b, preds) if differ else None
        for k in sorted(differ):
            exit_value = after.value(k) if after is not None else None
            if exit_value is not None:  # the loop's exit and the path that skips it agree on a closed form
                out[k] = exit_value
                continue
            vals = [e[k] for e in envs if k in e]
            wide = _one_division(atoms, vals)
            if wide is not None:
                out[k] = wide
                continue
            if uniform_control is None:
                uniform_control = self._control_uniform(b, preds)
            if uniform_control and all(v is not None and not atoms.is_lane(v) for v in vals):
                phi = atoms.atom(("phi", b, k))
                out[k] = (((phi,), 1),)
                self._note_after_loop(phi, b, preds, k)
            else:
                out[k] = None
        return out

    def _note_after_loop(self, phi: int, b: int, preds: list[int], reg: str) -> None:
        """Where the join `b` meets a loop's only exit and paths that skip the loop, and those paths agree on
        `reg`, record both values: with the loop's count known (the launch's sizes, which this pass does not
        see), the memory analysis reads which one holds and at which iteration the loop left (a Blelloch scan's
        down-sweep starts from the stride its up-sweep ended with)."""
        found = _exited_loop(self, b, preds)
        if found is None:
            return
        lp, exit_pred = found
        skipped = [self.env_out[p].get(reg) for p in preds if p != exit_pred]
        if skipped and all(v == skipped[0] for v in skipped[1:]):
            self.res.after_loop[phi] = (lp.id, self.env_out[exit_pred].get(reg), skipped[0])

    def _control_uniform(self, b: int, preds: list[int]) -> bool:
        """Whether the branches that choose between the paths into `b` are warp-uniform."""
        cfg = self.cfg
        deciders = set(preds)
        idom = cfg.idom[b] if b < len(cfg.idom) else -1
        if idom >= 0:
            deciders.add(idom)
        atoms = self.res.atoms
        for d in deciders:
            blk = cfg.blocks[d]
            if blk.end <= blk.start:
                continue
            last = self.fn.body[blk.end - 1]
            if last.guard is not None and last.is_terminator:
                g = self.res.guards.get(last.index)
                if g is None or atoms.is_lane(g):
                    return False
        return True

    # --------------------------------------------------------------------------------------- operands
    def _value(self, op: Operand, env: dict[str, Value]) -> Value:
        atoms = self.res.atoms
        if isinstance(op, Imm):
            if isinstance(op.value, int):
                return E.const(op.value)
            return atoms.sym(f"float:{op.text}")
        if isinstance(op, Reg):
            name = op.name
            if _special(name):
                return atoms.sym(name.lstrip("%"))
            if name in env:
                v = env[name]
            else:
                self.res.undefined.add(name)
                v = atoms.sym(f"undef:{name}")
            if op.negated:
                return E.sub(E.const(1), v)
            return v
        if isinstance(op, Sym):
            return atoms.sym(f"&{op.name}")
        if isinstance(op, Addr):
            if op.base is None:
                base: Value = E.ZERO
            else:
                base = self._value(op.base, env)
            return E.add(base, E.const(op.offset))
        return None

    # --------------------------------------------------------------------------------------- transfer
    def _transfer(self, ins: Instruction, env: dict[str, Value]) -> None:
        res = self.res
        atoms = res.atoms
        guard: Value = None
        if ins.guard is not None:
            g = self._value(Reg(ins.guard.reg), env)
            guard = E.sub(E.const(1), g) if ins.guard.negated else g
            res.guards[ins.index] = guard
        op = ins.opcode
        srcs = [self._value(s, env) for s in ins.srcs]
        values: list[tuple[str, Value]] = []  # register -> new value

        if op in MEMORY_OPCODES:
            self._memory(ins, env, values)
        elif op == "setp":
            self._setp(ins, env, values)
        else:
            dest_regs = self._dest_regs(ins)
            if len(dest_regs) == 1:
                values.append((dest_regs[0], self._compute(ins, srcs)))
            else:
                for k, r in enumerate(dest_regs):
                    values.append((r, atoms.op(f"{ins.full_opcode}#{k}", tuple(srcs), ins.index)
                                   if op not in ("shfl", "call") else None))
        for r, v in values:
            if _special(r):
                continue
            if ins.guard is not None:
                old = env.get(r, atoms.sym(f"undef:{r}"))
                v = v if v == old else E.apply_op(atoms, "sel", (guard, v, old), None)
            env[r] = v

    def _dest_regs(self, ins: Instruction) -> tuple[str, ...]:
        return ins.registers_written

    def _compute(self, ins: Instruction, s: list[Value]) -> Value:
        return instruction_value(self.res.atoms, ins, s)

    def _memory(self, ins: Instruction, env: dict[str, Value], values: list[tuple[str, Value]]) -> None:
        res = self.res
        atoms = res.atoms
        addr_op = next((o for o in ins.operands if isinstance(o, Addr)), None)
        space = ins.space
        if addr_op is None:
            for r in self._dest_regs(ins):
                values.append((r, None))
            return
        if space == "param" and isinstance(addr_op.base, Sym):
            name = addr_op.base.name + (f"+{addr_op.offset}" if addr_op.offset else "")
            v = atoms.sym(f"param:{name}")
            res.params[name] = v[0][0][0]
            for r in self._dest_regs(ins):
                values.append((r, v))
            return
        addr = self._value(addr_op, env)
        res.addresses[ins.index] = addr
        if not ins.has_dest:
            return
        dests = self._dest_regs(ins)
        lane_addr = atoms.is_lane(addr)
        for k, r in enumerate(dests):
            if ins.opcode == "atom" or lane_addr:
                values.append((r, None))
            else:
                values.append((r, atoms.op("ld", (addr,), (ins.index, k))))

    def _setp(self, ins: Instruction, env: dict[str, Value], values: list[tuple[str, Value]]) -> None:
        atoms = self.res.atoms
        ops = ins.operands
        if not ops:
            return
        dest = ops[0]
        srcs = [self._value(o, env) for o in ops[1:]]
        cmp = next((m for m in ins.modifiers if m in _CMP_OPS), "eq")
        bits, signed = int_type(ins)
        if _is_float(ins):
            v = atoms.op("fcmp", tuple(srcs[:2]), cmp)
        elif len(srcs) >= 2:
            v = E.apply_op(atoms, "cmp", (srcs[0], srcs[1]), (bits, signed, cmp))
        else:
            v = None
        boolop = next((m for m in ins.modifiers if m in _BOOL_OPS), None)
        if boolop is not None and len(srcs) >= 3:
            v = E.apply_op(atoms, boolop, (v, srcs[2]), (1, False))
        if isinstance(dest, PredPair):
            values.append((dest.first.name, v))
            values.append((dest.second.name, E.sub(E.const(1), v)))
        elif isinstance(dest, Reg):
            values.append((dest.name, v))
        elif isinstance(dest, Vec):
            for item in dest.items:
                if isinstance(item, Reg):
                    values.append((item.name, None))

    # -------------------------------------------------------------------------------------- recurrences
    def _resolve(self) -> None:
        res = self.res
        atoms = res.atoms
        for lp in self.loops.loops:
            k_atom = atoms.atom(("sym", f"K{lp.id}"))
            res.iteration_atom[lp.id] = k_atom
            preds = self.cfg.blocks[lp.header].preds
            entry = [p for p in preds if p not in lp.blocks and p in self.env_out]
            back = [p for p in preds if p in lp.blocks and p in self.env_out]
            recs: dict[str, Recurrence] = {}
            backs: dict[str, Value] = {}
            for r in sorted(self.written[lp.id]):
                a = self.rec_atoms.get((lp.id, r))
                if a is None:
                    continue
                init = _agree([self.env_out[p].get(r) for p in entry], atoms, f"init:{lp.id}:{r}")
                bval = _agree([self.env_out[p].get(r) for p in back], atoms, None)
                recs[r] = classify(lp.id, r, a, init, bval, atoms)
                backs[r] = bval
            invariant = {rc.atom for rc in recs.values() if rc.kind == "invariant"}
            loop_recs = {rc.atom for rc in recs.values()}
            for rc in recs.values():
                if rc.kind == "affine" and rc.step is not None:
                    others = atoms.deep_atoms_of(rc.step) & loop_recs
                    if others - invariant:
                        rc.kind, rc.step = "unknown", None
            _derived(atoms, recs, backs, k_atom)
            for rc in recs.values():
                res.recurrences[rc.atom] = rc
                if rc.kind == "invariant":
                    res.resolution[rc.atom] = rc.init
                elif rc.kind == "affine":
                    res.resolution[rc.atom] = E.add(rc.init, E.mul(rc.step, (((k_atom,), 1),)))
                elif rc.kind == "geometric":
                    g = atoms.atom(("geo", lp.id, rc.reg), atoms.is_lane(rc.init))
                    res.geo[g] = rc
                    res.resolution[rc.atom] = (((g,), 1),)
                else:
                    lane = rc.init is None or atoms.is_lane(rc.init) or atoms.lane[rc.atom]
                    res.resolution[rc.atom] = None if lane else (((atoms.atom(("u", "rec", rc.atom)),), 1),)


class _LoopExit:
    """A join of a loop's exit with the paths that skip the loop (its zero-trip guard): nvcc's remainder loop
    ahead of an unrolled lane-strided loop runs `((C - 1 - lane) / 32 + 1) % 4` times, a different number in
    each lane, and hands over where it stopped. Where the loop's exit test is `D != 0` on a difference `D`
    that moves by one per iteration, the loop runs `n` times, a closed form in its entry values; a register
    then leaves it with its recurrence taken at iteration `n - 1`, which for `n = 0` must be what the paths
    that skip the loop carry. That value holds on every path, lane by lane, instead of TOP."""

    def __init__(self, run: _Pass, loop: Loop, exit_pred: int, skip: list[int], subst: dict[int, Value],
                 before: dict[int, Value]) -> None:
        self.run, self.loop, self.exit_pred, self.skip = run, loop, exit_pred, skip
        self.subst, self.before = subst, before

    @staticmethod
    def find(run: _Pass, b: int, preds: list[int]) -> _LoopExit | None:
        """The loop whose exit `b` joins with the paths that skip it, with its count read; else None."""
        cfg, atoms = run.cfg, run.res.atoms
        found = _exited_loop(run, b, preds)
        if found is None:
            return None
        lp, exit_pred = found
        header_preds = cfg.blocks[lp.header].preds
        entry = [q for q in header_preds if q not in lp.blocks and q in run.env_out]
        back = [q for q in header_preds if q in lp.blocks and q in run.env_out]
        if not entry or not back:
            return None
        m = (((atoms.atom(("sym", f"M{lp.id}")),), 1),)  # the 0-based iteration
        steps: dict[int, tuple[Value, Value]] = {}  # rec atom -> (init, step per iteration)
        for r in run.written[lp.id]:
            a = run.rec_atoms.get((lp.id, r))
            if a is None:
                continue
            init = _agree([run.env_out[q].get(r) for q in entry], atoms, None)
            rc = classify(lp.id, r, a, init, _agree([run.env_out[q].get(r) for q in back], atoms, None), atoms)
            if rc.kind == "invariant":
                steps[a] = (init, E.ZERO)
            elif rc.kind == "affine" and init is not None:
                steps[a] = (init, rc.step)

        def at(iteration: Value) -> dict[int, Value]:
            return {a: E.add(i, E.mul(st, iteration)) for a, (i, st) in steps.items()}

        n = _LoopExit._count(run, lp, exit_pred, at(m), m)
        if n is None:
            return None
        last = E.sub(n, E.const(1))
        return _LoopExit(run, lp, exit_pred, [p for p in preds if p != exit_pred], at(last),
                         at(E.const(-1)))

    @staticmethod
    def _count(run: _Pass, lp: Loop, exit_pred: int, at_m: dict[int, Value], m: Poly) -> Value:
        """The loop's count `n` from its exit test `D != 0`, `D` read at iteration M as `D0 + s * M` with
        s = +-1: the loop leaves at M = -s * D0, so n = 1 - s * D0; None for any other test."""
        blk = run.cfg.blocks[exit_pred]
        last = run.fn.body[blk.end - 1] if blk.end > blk.start else None
        if last is None or last.opcode != "bra" or last.guard is None:
            return None
        g = run.res.guards.get(last.index)
        target = next((x for x in blk.succs if run.fn.labels.get(last.branch_target or "") is not None
                       and run.cfg.blocks[x].start == run.fn.labels[last.branch_target or ""]), None)
        stay = g if target is not None and target in lp.blocks else E.sub(E.const(1), g)
        atoms = run.res.atoms
        cmp = _single_comparison(atoms, stay)
        if cmp is None:
            return None
        d = E.evaluate(atoms, E.sub(cmp[0], cmp[1]), at_m, {})
        if d is None:
            return None
        m_atom = m[0][0][0]
        moving = [(mono, c) for mono, c in d if m_atom in mono]
        if len(moving) != 1 or moving[0][0] != (m_atom,) or moving[0][1] not in (1, -1):
            return None
        s = moving[0][1]
        d0 = tuple(t for t in d if t not in moving)
        return E.sub(E.const(1), E.scale(d0, s))

    def value(self, reg: str) -> Value:
        """`reg` after the loop on every path into the join, or None when the paths do not agree on it."""
        run = self.run
        atoms = run.res.atoms
        leaving = run.env_out[self.exit_pred].get(reg)
        if leaving is None:
            return None
        out = E.evaluate(atoms, leaving, self.subst, {})
        skipped = E.evaluate(atoms, leaving, self.before, {})
        if out is None or skipped is None:
            return None
        if any(run.env_out[p].get(reg) != skipped for p in self.skip):
            return None
        return out


def _derived(atoms: Atoms, recs: dict[str, Recurrence], backs: dict[str, Value], k_atom: int) -> None:
    """Make affine the recurrences that each iteration recomputes from the loop's affine ones instead of from
    themselves (nvcc's unrolled `col + 3 * blockDim.x`, rewritten as `col' + 3 * blockDim.x` after `col` moved):
    the back-edge value, with the affine recurrences taken at the previous iteration, is the register at
    iteration K >= 1; when it gives the start at K = 0 too and moves by a fixed step, it is the register's
    closed form."""
    moving = {rc.atom: rc for rc in recs.values() if rc.kind in ("affine", "invariant")}
    k: Poly = (((k_atom,), 1),)
    previous = {a: rc.init if rc.kind == "invariant" else E.add(rc.init, E.mul(rc.step, E.sub(k, E.const(1))))
                for a, rc in moving.items()}
    for r, rc in recs.items():
        back = backs.get(r)
        if rc.kind != "unknown" or back is None or rc.init is None:
            continue
        deep = atoms.deep_atoms_of(back)
        if rc.atom in deep or not deep & set(previous) or deep & {x.atom for x in recs.values()} - set(previous):
            continue
        closed = E.evaluate(atoms, back, previous, {})
        if closed is None or E.evaluate(atoms, closed, {k_atom: E.ZERO}, {}) != rc.init:
            continue
        step = E.sub(E.evaluate(atoms, closed, {k_atom: E.const(1)}, {}), rc.init)
        if step is not None and E.add(rc.init, E.mul(step, k)) == closed:
            rc.kind, rc.step = "affine", step


def _exited_loop(run: _Pass, b: int, preds: list[int]) -> tuple[Loop, int] | None:
    """(the loop, its exiting block) when the join `b` is entered from exactly one loop's only exit and from
    paths outside it; None otherwise (a break leaves elsewhere: the exit test is not the only way out)."""
    candidates = [lp for lp in run.loops.loops if b not in lp.blocks and sum(p in lp.blocks for p in preds) == 1]
    if len(candidates) != 1 or len(candidates[0].exits) != 1:
        return None
    lp = candidates[0]
    return lp, next(p for p in preds if p in lp.blocks)


_WIDE = (64, True)


def _one_division(atoms: Atoms, vals: list[Value]) -> Value:
    """The 64-bit value when the paths differ only in the width of a division or remainder: nvcc divides a
    64-bit `i / n` in 32 bits when both operands fit (`(i | n) & 0xffffffff00000000 == 0`), where the quotient
    is the same, so the 64-bit one holds on both paths; None otherwise."""
    if len(vals) < 2 or any(v is None for v in vals):
        return None
    divisions = {x for v in vals for x in atoms.deep_atoms_of(v)  # type: ignore[arg-type]
                 if atoms.keys[x][0] == "op" and atoms.keys[x][1] in ("div", "rem") and atoms.keys[x][3] != _WIDE}
    if not divisions:
        return None
    subst: dict[int, Value] = {x: atoms.op(atoms.keys[x][1], atoms.keys[x][2], _WIDE) for x in divisions}
    wide = [E.evaluate(atoms, v, subst, {}) for v in vals]
    return wide[0] if wide[0] is not None and all(w == wide[0] for w in wide[1:]) else None


def _single_comparison(atoms: Atoms, stay: Value) -> tuple[Value, Value] | None:
    """(X, Y) when staying in the loop is `X != Y`: a `ne` comparison, or one minus an `eq` comparison."""
    if stay is None:
        return None
    if len(stay) == 1 and stay[0][1] == 1 and len(stay[0][0]) == 1:
        key, want = atoms.keys[stay[0][0][0]], "ne"
    elif len(stay) == 2 and stay[0] == ((), 1) and stay[1][1] == -1 and len(stay[1][0]) == 1:
        key, want = atoms.keys[stay[1][0][0]], "eq"
    else:
        return None
    if key[0] != "op" or key[1] != "cmp" or len(key[2]) != 2:
        return None
    extra = key[3]
    if not (isinstance(extra, tuple) and len(extra) > 2 and extra[2] == want):
        return None
    return key[2][0], key[2][1]


def _agree(vals: list[Value], atoms: Atoms, tag: str | None) -> Value:
    if not vals:
        return None
    first = vals[0]
    if all(v == first for v in vals[1:]):
        return first
    if tag is not None and all(v is not None and not atoms.is_lane(v) for v in vals):
        return (((atoms.atom(("u", tag)),), 1),)
    return None


def instruction_value(atoms: Atoms, ins: Instruction, s: list[Value]) -> Value:
    """What a PTX instruction that is not a memory access or a comparison writes, from its operands' values
    `s`: the one reading of PTX arithmetic for the symbolic pass and for the loop-entry values of trip counts
    (`values`), which give it constants. Widths and signedness follow the instruction's type (`intops`); an
    opcode not modelled is an opaque operation over its arguments."""
    op = ins.opcode
    mods = ins.modifiers
    bits, signed = int_type(ins)
    extra = (bits, signed)
    is_float = _is_float(ins)
    a = s[0] if s else None
    b = s[1] if len(s) > 1 else None
    if op in ("mov", "cvta") and len(s) == 1:
        return a
    if op == "cvt" and not is_float and len(s) == 1:
        return a
    if op in ("vote", "activemask"):
        return atoms.fresh("vote")
    if op in ("shfl", "atom", "call", "tex", "tld4", "suld", "ldmatrix", "wmma", "mma", "redux"):
        return None if op != "redux" else atoms.fresh("redux")
    if not is_float:
        if op == "add" and len(s) == 2:
            return E.add(a, b)
        if op == "sub" and len(s) == 2:
            return E.sub(a, b)
        if op in ("mul", "mul24") and len(s) == 2:
            if "hi" in mods:
                return atoms.op("mulhi", (a, b), extra)
            return E.mul(a, b)
        if op in ("mad", "mad24") and len(s) == 3:
            if "hi" in mods and "sat" not in mods:  # the high half plus the addend (nvcc's division magic)
                return E.add(atoms.op("mulhi", (a, b), extra), s[2])
            if "hi" in mods:  # `mad.hi.sat` clamps the sum: no closed form
                return atoms.op(f"mad.hi#{ins.index}", tuple(s), extra)
            return E.add(E.mul(a, b), s[2])
        if op == "shl" and len(s) == 2:
            k = E.as_const(b)
            if k is not None and 0 <= k < 64:
                return E.scale(a, 1 << k)
            return atoms.op("shl", (a, b), extra)
        if op == "neg" and len(s) == 1:
            return E.scale(a, -1)
        if op == "not" and len(s) == 1:
            if ins.dtype == "pred":
                return E.sub(E.const(1), a)
            return E.apply_op(atoms, "not", (a,), extra)
        if op in ("or", "xor") and len(s) == 2 and ins.dtype != "pred" and E.disjoint_bits(atoms, a, b):
            return E.add(a, b)  # no carry: nvcc's `or` of an aligned base and a small offset is their sum
        if op in _NONLINEAR and len(s) in (1, 2):
            if ins.dtype == "pred":
                extra = (1, False)
            return E.apply_op(atoms, op, tuple(s), extra)
    if op == "bfi" and len(s) == 4 and not is_float:
        inserted = _bit_field_insert(atoms, s, bits)
        if inserted is not None:
            return inserted
    if op in ("selp", "slct") and len(s) == 3:
        if op == "selp":
            return E.apply_op(atoms, "sel", (s[2], s[0], s[1]), None)
        return atoms.op(f"{ins.full_opcode}", tuple(s), None)
    return atoms.op(ins.full_opcode, tuple(s), None)


def _bit_field_insert(atoms: Atoms, s: list[Value], bits: int) -> Value:
    """`bfi f, a, b, pos, len` (the low `len` bits of `a` put into `b` at bit `pos`) as a sum, for a constant
    field: `(b & ~field) + ((a & (2**len - 1)) << pos)`; where the field reaches the top bit, the mask on `a` is
    the wrap-around of the shift and is left out: `(b & (2**pos - 1)) + a * 2**pos`. nvcc writes `4 * y + (x & 3)`
    that way. None for a field that is not constant."""
    a, b, pos, length = s
    p, n = E.as_const(pos), E.as_const(length)
    if p is None or n is None or not (0 <= p < bits and n > 0):
        return None
    n = min(n, bits - p)
    field = ((1 << n) - 1) << p
    kept = E.apply_op(atoms, "and", (b, E.const(~field & ((1 << bits) - 1))), (bits, False))
    part = a if p + n == bits else E.apply_op(atoms, "and", (a, E.const((1 << n) - 1)), (bits, False))
    return E.add(kept, E.scale(part, 1 << p))


def written_in_loops(cfg: Cfg, loops: LoopForest) -> dict[int, set[str]]:
    """The registers each loop writes (loop id -> names): the ones that get a recurrence at its header."""
    written: dict[int, set[str]] = {}
    for lp in loops.loops:
        regs: set[str] = set()
        for b in lp.blocks:
            for ins in cfg.instructions(b):
                regs.update(ins.registers_written)
        written[lp.id] = regs
    return written


def analyze_symbolic(cfg: Cfg, loops: LoopForest) -> SymbolicResult:
    """Symbolic values for a function; reruns while the lane-dependence of recurrences changes (≤ 3 passes).

    The first pass takes a recurrence as lane-dependent when its start is (then so is every value it takes),
    which settles most kernels in one pass; a recurrence whose step alone depends on the lane is found by
    the next pass.
    """
    written = written_in_loops(cfg, loops)
    run = _Pass(cfg, loops, written, {})
    result = run.run()
    for _ in range(2):
        new = {(rc.loop, rc.reg): result.atoms.is_lane(result.resolution.get(a)) or rc.kind == "unknown"
               and result.resolution.get(a) is None
               for a, rc in result.recurrences.items()}
        used = run.lane_used
        if all(new.get(k, False) == used.get(k, False) for k in set(new) | set(used)):
            break
        run = _Pass(cfg, loops, written, new)
        result = run.run()
    return result
