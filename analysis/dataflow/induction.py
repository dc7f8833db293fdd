"""Loop induction variables, at the two levels the analyses ask about them.

A trip count needs the *instruction* that moves the compared register once per iteration (`add r, r, 4`,
`shl r, r, 1`, `t = s << 1; ...; s = t` where the test reads `t`, or a signed `s /= 2` that nvcc computes into
a temporary and copies back after the test), to prove it runs on every path to the latch and to know whether
the test sees the value before or after it (`update_in_loop`, `carried_update`, `copied_back`,
`check_once_per_iteration`, `after_update`, `step`). An address needs the *value* of every register a loop
rewrites as a closed form in the iteration number: the symbolic pass (`symbolic`) gives each such register a
recurrence atom at the loop header and `classify` reads what flows back along the back edges (unchanged,
`init + step * K`, geometric `* c`, `>> c`, `/ c`, or unknown). Both are read from the one set of reaching
definitions and symbolic values of a kernel (`KernelDataflow`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerncast.analysis.cexpr import Unknown
from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, Poly, Value, op_type
from kerncast.analysis.intops import NoValue, int_op
from kerncast.analysis.loops import Loop
from kerncast.analysis.ptx.model import Instruction, Reg

#: additive updates and the sign they give the step
ADDITIVE = {"add": 1, "sub": -1}
#: updates that scale the variable (a geometric induction variable)
GEOMETRIC = ("mul", "shl", "shr", "div")


# ------------------------------------------------------------------------------ the update instruction

def _inside(defs: dict[str, list[Instruction]], cfg: Cfg, reg: str, in_loop: set[int]) -> list[Instruction]:
    return [i for i in defs.get(reg, []) if cfg.block_of[i.index] in in_loop]


def update_in_loop(defs: dict[str, list[Instruction]], cfg: Cfg, reg: str,
                   in_loop: set[int]) -> Instruction | None:
    """The single instruction of the loop that writes `reg` from itself (`add r, r, x`), else None."""
    inside = _inside(defs, cfg, reg, in_loop)
    if len(inside) != 1:
        return None
    ins = inside[0]
    srcs = [s for s in ins.srcs if isinstance(s, Reg) and s.name == reg]
    ok = ins.opcode in ADDITIVE or ins.opcode in GEOMETRIC
    return ins if srcs and ok and ins.guard is None else None


def carried_update(defs: dict[str, list[Instruction]], cfg: Cfg, reg: str,
                   in_loop: set[int]) -> tuple[str, Instruction, Instruction] | None:
    """For `t = s op c; ...; s = t` loops that compare `t`: (s, the `op` instruction, the copy `s = t`)."""
    inside = _inside(defs, cfg, reg, in_loop)
    if len(inside) != 1 or inside[0].guard is not None:
        return None
    ins = inside[0]
    if ins.opcode not in ADDITIVE and ins.opcode not in GEOMETRIC:
        return None
    for src in ins.srcs:
        if not isinstance(src, Reg) or src.is_special or src.name == reg:
            continue
        copies = _inside(defs, cfg, src.name, in_loop)
        if len(copies) == 1 and copies[0].opcode == "mov" and copies[0].guard is None \
                and [s.name for s in copies[0].srcs if isinstance(s, Reg)] == [reg]:
            return src.name, ins, copies[0]
    return None


def copied_back(defs: dict[str, list[Instruction]], cfg: Cfg, reg: str, in_loop: set[int],
                recurrence: Recurrence | None) -> Instruction | None:
    """For a loop whose only write of `reg` is a copy `mov reg, t` and whose symbolic recurrence for `reg` is
    geometric (nvcc's signed `s /= 2`, computed into `t` and copied back after the exit test has read `s`):
    the copy, where `reg` moves once per iteration. Else None."""
    inside = _inside(defs, cfg, reg, in_loop)
    if recurrence is None or recurrence.kind != "geometric" or len(inside) != 1:
        return None
    copy = inside[0]
    sources = [s for s in copy.srcs if isinstance(s, Reg)]
    return copy if copy.opcode == "mov" and copy.guard is None and len(sources) == 1 else None


def offset_induction(defs: dict[str, list[Instruction]], cfg: Cfg, reg: str,
                     in_loop: set[int]) -> tuple[str, Instruction, Any, int] | None:
    """For a compared register that is an induction variable plus or minus something, `t = k + c` (nvcc's
    test of an unrolled loop, `k + (n & 3) - n != 0`), or the variable widened, `t = (s64) k` (an `int`
    counter against a `size_t` bound): (the induction variable, the instruction writing `t`, the other
    operand or None, +1 or -1 for how it counts in `t`, 0 for a copy). Else None. The other operand's
    invariance is the caller's to check."""
    inside = _inside(defs, cfg, reg, in_loop)
    if len(inside) != 1 or inside[0].guard is not None:
        return None
    ins = inside[0]
    srcs = list(ins.srcs)
    if ins.opcode in ("cvt", "mov") and len(srcs) == 1 and isinstance(srcs[0], Reg) and not srcs[0].is_special \
            and not (ins.dtype or "").startswith("f") and update_in_loop(defs, cfg, srcs[0].name, in_loop):
        return srcs[0].name, ins, None, 0  # `(size_t) i < n`: the 32-bit counter widened for a 64-bit bound
    if ins.opcode not in ADDITIVE:
        return None
    if len(srcs) != 2:
        return None
    for k, src in enumerate(srcs):
        if k == 1 and ins.opcode == "sub":
            break  # `c - k` moves the other way: not read here
        if isinstance(src, Reg) and not src.is_special and src.name != reg \
                and update_in_loop(defs, cfg, src.name, in_loop) is not None:
            sign = -1 if ins.opcode == "sub" else 1
            return src.name, ins, srcs[1 - k], sign
    return None


def step(update: Instruction, reg: str, invariant: Any) -> tuple[str, int]:
    """(opcode, step) of an induction update; `invariant(operand)` gives the loop-invariant step's value."""
    srcs = list(update.srcs)
    if len(srcs) != 2:
        raise Unknown(f"the induction update {update.full_opcode} is not a two-operand step")
    first_is_iv = isinstance(srcs[0], Reg) and srcs[0].name == reg
    other = srcs[1] if first_is_iv else srcs[0]
    if not first_is_iv and update.opcode in ("sub", "shl", "shr", "div"):
        raise Unknown(f"the induction update {update.full_opcode} has the variable on the right")
    amount = invariant(other)
    if update.opcode in ADDITIVE:
        return update.opcode, amount
    if amount <= (1 if update.opcode in ("mul", "div") else 0):
        raise Unknown(f"the induction update {update.full_opcode} by {amount} does not move the variable")
    return update.opcode, amount


def geometric_step(op: str, v: int, step: int) -> int:
    """One step `v <op>= step` of a geometric induction variable (`mul`, `shl`, `shr`, `div`) on unbounded
    ints, in PTX's semantics: a huge shift amount from the text is clamped to 64 as PTX clamps it to the
    width, and division truncates toward zero. Unknown for a division by zero."""
    if op == "mul":
        return v * step
    if op in ("shl", "shr"):
        amount = 64 if step < 0 else min(step, 64)
        return v << amount if op == "shl" else v >> amount
    try:
        return int_op("div", v, step, 64, True)
    except NoValue as exc:
        raise Unknown(str(exc)) from exc


def check_once_per_iteration(cfg: Cfg, loop: Loop, update: Instruction, nested: list[set[int]]) -> None:
    """The induction update must run exactly once per iteration: on every path to a latch, not nested."""
    ub = cfg.block_of[update.index]
    if any(ub in inner for inner in nested):
        raise Unknown("the induction variable is updated inside a nested loop")
    if not all(cfg.dominates(ub, latch) for latch in loop.latches):
        raise Unknown("the induction variable is updated on only some paths")


def after_update(cfg: Cfg, update: Instruction, test: Instruction, test_block: int) -> bool:
    """Whether, in each iteration, the test sees the induction variable after its update."""
    ub = cfg.block_of[update.index]
    if ub == test_block:
        return update.index < test.index
    if cfg.dominates(ub, test_block):
        return True
    if cfg.dominates(test_block, ub):
        return False
    raise Unknown("the induction variable is updated on only some paths")


# ------------------------------------------------------------------------------ the closed-form value

@dataclass(slots=True)
class Recurrence:
    """How a register rewritten in a loop evolves: `kind` is invariant, affine, geometric or unknown."""

    loop: int
    reg: str
    atom: int
    init: Value
    kind: str
    step: Value = None  # affine: added per iteration
    op: str | None = None  # geometric: "mul", "shl", "shr", "div"
    factor: int = 0
    back: Value = None  # the value the back edges carry, in the header's atoms (a loop can be stepped with it)


def classify(loop: int, reg: str, a: int, init: Value, back: Value, atoms: Atoms) -> Recurrence:
    """The recurrence of register `reg` (header atom `a`) from its entry value and its back-edge value."""
    rc = Recurrence(loop, reg, a, init, "unknown", back=back)
    if back is None:
        return rc
    me: Poly = (((a,), 1),)
    if back == me:
        rc.kind = "invariant"
        return rc
    d = E.sub(back, me)
    if d is not None and a not in atoms.deep_atoms_of(d):
        rc.kind, rc.step = "affine", d
        return rc
    if len(back) == 1 and back[0][0] == (a,) and back[0][1] > 1:
        rc.kind, rc.op, rc.factor = "geometric", "mul", back[0][1]
        return rc
    if len(back) == 1 and back[0][1] == 1 and len(back[0][0]) == 1:
        key = atoms.keys[back[0][0][0]]
        if key[0] == "op" and key[1] in ("shr", "div") and len(key[2]) == 2 and key[2][0] == me:
            c = E.as_const(key[2][1])
            if c is not None and c > 0:
                rc.kind, rc.op, rc.factor = "geometric", key[1], c
    k = _rounded_signed_shift(back, me, atoms)
    if k is not None:
        rc.kind, rc.op, rc.factor = "geometric", "div", 1 << k
    return rc


def _shift_node(p: Value, atoms: Atoms) -> tuple[Value, int | None, tuple[int, bool]] | None:
    """(value shifted, constant amount or None, (bits, signed)) when `p` is exactly one `shr` node."""
    if p is None or len(p) != 1 or p[0][1] != 1 or len(p[0][0]) != 1:
        return None
    key = atoms.keys[p[0][0][0]]
    if key[0] != "op" or key[1] != "shr" or len(key[2]) != 2:
        return None
    return key[2][0], E.as_const(key[2][1]), op_type(key[3])


def _rounded_signed_shift(back: Value, me: Poly, atoms: Atoms) -> int | None:
    """k when `back` is `me / 2**k` on a signed `me` as nvcc writes it when it cannot prove `me` positive
    (`for (int offset = warpSize / 2; offset > 0; offset /= 2)`, `k = n / 2; k /= 2`): a rounding bias `b`
    is added before the arithmetic shift, `(me + b) >> k`, so that the quotient truncates toward zero; `b` is
    the sign bit, `me >>> (bits - 1)`, for k = 1 and the sign spread over k bits,
    `(me >> (bits - 1)) >>> (bits - k)`, otherwise."""
    quotient = _shift_node(back, atoms)
    if quotient is None or quotient[0] is None or not quotient[2][1]:
        return None
    numerator, k, (bits, _) = quotient
    if k is None or not 0 < k < bits:
        return None
    bias = _shift_node(E.sub(numerator, me), atoms)
    if bias is None or bias[1:] != (bits - k, (bits, False)):
        return None
    if bias[0] == me:
        return k if k == 1 else None
    sign = _shift_node(bias[0], atoms)
    return k if sign == (me, bits - 1, (bits, True)) else None
