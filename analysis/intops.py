"""PTX integer semantics, defined once: bit width and signedness honoured, for one value or for many lanes.

PTX integer operations act on `bits`-wide two's-complement registers: a bitwise result keeps the low bits,
an unsigned operand is read modulo 2**bits, division truncates toward zero (as C does) and `shr` is arithmetic
on signed and logical on unsigned operands. The memory analysis evaluates these operations on Python ints
(`dataflow/expr.py`) and on numpy lane vectors (`memory/lanevec.py`); both call `int_op` here with the
elementwise primitives of their number kind (`SCALAR`, `LANES`), so the two can never disagree.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class NoValue(ArithmeticError):
    """The operation has no integer value here (division by zero, negative shift, out of the number range)."""


def wrap(v: int, bits: int, signed: bool) -> int:
    """Keep the low `bits` bits of `v`, read as two's complement when `signed`."""
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def wrap_lanes(v: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """`wrap` over int64 lanes; NoValue where an unsigned 64-bit value does not fit int64."""
    if bits >= 63:
        if not signed and (v < 0).any():
            raise NoValue("an unsigned 64-bit value above the int64 range")
        return v
    if bits <= 0:
        raise NoValue(f"a {bits}-bit integer")
    w = v & ((1 << bits) - 1)
    if signed:
        w = np.where(w >> (bits - 1) != 0, w - (1 << bits), w)
    return w


@dataclass(frozen=True)
class Kind:
    """The elementwise primitives of one kind of number (Python ints, or numpy int64 lane vectors)."""

    wrap: Callable[[Any, int, bool], Any]
    minimum: Callable[[Any, Any], Any]
    maximum: Callable[[Any, Any], Any]
    absolute: Callable[[Any], Any]
    select: Callable[[Any, Any, Any], Any]
    any_true: Callable[[Any], bool]
    #: the largest shift the kind can do (int64 lanes: 63)
    max_shift: int
    #: raises NoValue when a product of these magnitudes would leave the kind's range
    check_product: Callable[[Any, Any], None]
    #: a truth value (or lanes of them) as the integer 1 or 0
    to_int: Callable[[Any], Any]


def _no_check(a: Any, b: Any) -> None:
    """Python ints do not overflow."""


def _check_lanes(a: np.ndarray, b: np.ndarray) -> None:
    if int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0)) >= 1 << 62:
        raise NoValue("a product above the int64 range")


SCALAR = Kind(wrap, min, max, abs, lambda c, x, y: x if c else y, bool, 1 << 30, _no_check, int)
LANES = Kind(wrap_lanes, np.minimum, np.maximum, np.abs, np.where, lambda c: bool(np.any(c)), 63, _check_lanes,
             lambda c: c.astype(np.int64))

#: PTX comparison operators (`setp.<cmp>`); lo/ls/hi/hs compare unsigned
COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "lo": operator.lt, "ls": operator.le, "hi": operator.gt, "hs": operator.ge,
}

#: the operations `int_op` knows
OPERATIONS = frozenset({"shr", "div", "rem", "and", "or", "xor", "not", "min", "max", "abs", "mulhi"})


def int_op(name: str, a: Any, b: Any, bits: int, signed: bool, kind: Kind = SCALAR) -> Any:
    """The PTX integer operation `name` on `a` (and `b`) of width `bits`; NoValue where it has no value.

    `name` must be one of `OPERATIONS`.
    """
    if name == "shr":
        if kind.any_true(b < 0):
            raise NoValue("a negative shift")
        return (a if signed else kind.wrap(a, bits, False)) >> kind.minimum(b, min(bits, kind.max_shift))
    if name in ("div", "rem"):
        if not signed:
            a, b = kind.wrap(a, bits, False), kind.wrap(b, bits, False)
        if kind.any_true(b == 0):
            raise NoValue("division by zero")
        q = kind.absolute(a) // kind.absolute(b)
        q = kind.select((a < 0) != (b < 0), -q, q)
        return q if name == "div" else a - q * b
    if name in ("and", "or", "xor", "not"):
        raw = {"and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b, "not": lambda: ~a}[name]()
        return kind.wrap(raw, bits, signed)
    if name in ("min", "max"):
        return (kind.minimum if name == "min" else kind.maximum)(a, b)
    if name == "abs":
        return kind.absolute(a)
    if name == "mulhi":
        ua = a if signed else kind.wrap(a, bits, False)
        ub = b if signed else kind.wrap(b, bits, False)
        kind.check_product(ua, ub)
        return (ua * ub) >> min(bits, kind.max_shift)
    raise ValueError(f"not an integer operation: {name}")


def compare(cmp: str, a: Any, b: Any, bits: int, signed: bool, kind: Kind = SCALAR) -> Any:
    """`setp.<cmp>` at width `bits` as 1 or 0; unsigned operands (and lo/ls/hi/hs) are read modulo 2**bits.
    NoValue for an unknown comparison."""
    fn = COMPARISONS.get(cmp)
    if fn is None:
        raise NoValue(f"the comparison {cmp!r}")
    if cmp in ("lo", "ls", "hi", "hs") or not signed:
        a, b = kind.wrap(a, bits, False), kind.wrap(b, bits, False)
    return kind.to_int(fn(a, b))
