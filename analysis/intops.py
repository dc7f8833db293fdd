"""PTX integer semantics, defined once: bit width and signedness honoured, for one value or for many lanes.

PTX integer operations act on `bits`-wide two's-complement registers: a bitwise result keeps the low bits,
an unsigned operand is read modulo 2**bits, division truncates toward zero (as C does) and `shr` is arithmetic
on signed and logical on unsigned operands. The memory analysis evaluates these operations on Python ints
(`dataflow/expr.py`) and on numpy lane vectors (`memory/lanevec.py`); both call `int_op` here with the
elementwise primitives of their number kind (`SCALAR`, `LANES`), so the two can never disagree.

The host code's launch expressions (`cexpr.py`) are C, whose integers carry a type: `CType` and `c_*` below
give C's rules on the LP64 hosts nvcc supports (`int` is 32-bit signed, `long` 64-bit; the integer
promotions; the usual arithmetic conversions, under which `-1 < 1u` is false; literal types from value and
suffix) on top of the same operations.
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


# ------------------------------------------------------------------------------------------ C integers


@dataclass(frozen=True, slots=True)
class CType:
    """A C integer type on an LP64 host: width, signedness and conversion rank (bool < char < short < int <
    long < long long)."""

    bits: int
    signed: bool
    rank: int


C_BOOL = CType(1, False, 0)
C_CHAR = CType(8, True, 1)  # plain char is signed on the x86-64 and AArch64 Linux hosts nvcc targets
C_UCHAR = CType(8, False, 1)
C_SHORT = CType(16, True, 2)
C_USHORT = CType(16, False, 2)
C_INT = CType(32, True, 3)
C_UINT = CType(32, False, 3)
C_LONG = CType(64, True, 4)
C_ULONG = CType(64, False, 4)
C_LLONG = CType(64, True, 5)
C_ULLONG = CType(64, False, 5)

#: C type names (words joined by one space) and the integer type they name
C_TYPES: dict[str, CType] = {
    "int": C_INT, "signed": C_INT, "signed int": C_INT, "int32_t": C_INT,
    "unsigned": C_UINT, "unsigned int": C_UINT, "uint32_t": C_UINT,
    "short": C_SHORT, "short int": C_SHORT, "unsigned short": C_USHORT, "int16_t": C_SHORT,
    "uint16_t": C_USHORT, "char": C_CHAR, "signed char": C_CHAR, "unsigned char": C_UCHAR, "int8_t": C_CHAR,
    "uint8_t": C_UCHAR, "long": C_LONG, "long int": C_LONG, "long long": C_LLONG, "long long int": C_LLONG,
    "int64_t": C_LONG, "unsigned long": C_ULONG, "unsigned long long": C_ULLONG, "uint64_t": C_ULONG,
    "size_t": C_ULONG, "std::size_t": C_ULONG, "ptrdiff_t": C_LONG, "bool": C_BOOL,
    # the short names glibc's <sys/types.h> declares, which CUDA code uses widely (`uint n = ...`)
    "uint": C_UINT, "ushort": C_USHORT, "ulong": C_ULONG,
}


def c_convert(v: int, t: CType) -> int:
    """`v` converted to type `t`: to bool it is 0 or 1, otherwise the low bits read in `t`'s signedness."""
    if t.bits == 1:
        return int(v != 0)
    return wrap(v, t.bits, t.signed)


def c_promote(t: CType) -> CType:
    """The integer promotions: every type of lower rank than int becomes int (all their values fit)."""
    return t if t.rank >= C_INT.rank else C_INT


def c_common(a: CType, b: CType) -> CType:
    """The usual arithmetic conversions: the type both operands of a binary operator are converted to."""
    a, b = c_promote(a), c_promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.rank >= b.rank else b
    unsigned, signed = (a, b) if b.signed else (b, a)
    if unsigned.rank >= signed.rank:
        return unsigned
    if signed.bits > unsigned.bits:
        return signed
    return CType(signed.bits, False, signed.rank)


def c_literal_type(value: int, suffix: str, decimal: bool) -> CType:
    """The type of an integer literal: the first of the candidate types its value fits (C11 6.4.4.1)."""
    suffix = suffix.lower()
    unsigned = "u" in suffix
    if "z" in suffix:
        candidates = [C_ULONG] if unsigned else [C_LONG, C_ULONG]
    elif "ll" in suffix:
        candidates = [C_ULLONG] if unsigned else [C_LLONG, C_ULLONG]
    elif "l" in suffix:
        candidates = [C_ULONG, C_ULLONG] if unsigned else [C_LONG, C_ULONG, C_LLONG, C_ULLONG]
    else:
        candidates = [C_UINT, C_ULONG, C_ULLONG] if unsigned else [C_INT, C_UINT, C_LONG, C_ULONG, C_LLONG,
                                                                   C_ULLONG]
    if decimal and not unsigned:  # a decimal literal without `u` only takes signed types
        candidates = [t for t in candidates if t.signed]
    for t in candidates:
        if c_convert(value, t) == value:
            return t
    raise NoValue(f"the literal {value} fits no integer type")


#: C's binary arithmetic operators and the `int_op` that computes them in the common type
_C_INT_OPS = {"/": "div", "%": "rem", "&": "and", "|": "or", "^": "xor", ">>": "shr"}


def c_binary(op: str, a: int, ta: CType, b: int, tb: CType) -> tuple[int, CType]:
    """C's binary operator `op` (arithmetic, bitwise, shift or comparison) on typed operands: (value, type).

    Operands are converted by the usual arithmetic conversions (a shift converts only its left operand by
    the promotions); unsigned arithmetic wraps, and a left shift wraps as C++14 and later define it.
    NoValue where C gives no value: division by zero, a shift by a negative amount or the width or more,
    signed overflow of `+`, `-` and `*`.
    """
    if op in ("<<", ">>"):
        t = c_promote(ta)
        if not 0 <= b < t.bits:
            raise NoValue(f"shift by {b}")
        x = c_convert(a, t)
        return (c_convert(x << b, t) if op == "<<" else int_op("shr", x, b, t.bits, t.signed)), t
    t = c_common(ta, tb)
    x, y = c_convert(a, t), c_convert(b, t)
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return int(COMPARISONS[{"==": "eq", "!=": "ne", "<": "lt", ">": "gt", "<=": "le", ">=": "ge"}[op]](x, y)), C_INT
    if op in ("+", "-", "*"):
        exact = x + y if op == "+" else x - y if op == "-" else x * y
        if t.signed and c_convert(exact, t) != exact:
            raise NoValue(f"signed overflow in {x} {op} {y} (undefined in C)")
        return c_convert(exact, t), t
    if op in _C_INT_OPS:
        return c_convert(int_op(_C_INT_OPS[op], x, y, t.bits, t.signed), t), t
    raise ValueError(f"not a C binary operator: {op}")


def c_unary(op: str, a: int, t: CType) -> tuple[int, CType]:
    """C's unary `+`, `-`, `~` (in the promoted type) and `!` (an int)."""
    if op == "!":
        return int(a == 0), C_INT
    t = c_promote(t)
    x = c_convert(a, t)
    return c_convert({"+": x, "-": -x, "~": ~x}[op], t), t
