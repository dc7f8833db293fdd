"""C floating-point arithmetic for the host-code constant folder (`cexpr`), rounded as the GPU's host would.

Launch sizes are often computed through floats: `dim3 grid(ceil(n / (float)block.x))`, `(int)ceil(n / 256.0)`.
Folding them needs C's rules, not Python's: `float` operations round to IEEE single precision after every
step, `double` ones to double; an integer operand is converted to the floating type first; converting back
to an integer truncates toward zero, and a value out of the target's range has no defined result. Only the
four arithmetic operators, comparisons and `ceil`/`floor` are modelled; anything else stays unknown.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass

#: the floating types the folder knows, by their C names, with their width in bits
FLOAT_TYPES: dict[str, int] = {"float": 32, "double": 64}
#: functions of one floating argument the folder evaluates; the `f` forms take and return `float`
ROUNDING_FUNCTIONS: dict[str, tuple[Callable[[float], int], int | None]] = {
    "ceil": (math.ceil, None), "floor": (math.floor, None), "std::ceil": (math.ceil, None),
    "std::floor": (math.floor, None), "ceilf": (math.ceil, 32), "floorf": (math.floor, 32),
}


class FloatError(ValueError):
    """An operation C leaves without a value here (an operator floats do not have, a value out of range)."""


@dataclass(frozen=True, slots=True)
class CFloat:
    """A folded floating-point value and the width of its C type (32: `float`, 64: `double`)."""

    value: float
    bits: int

    @staticmethod
    def of(value: float, bits: int) -> CFloat:
        """The value rounded to the type (an overflow to infinity is an error, not a value)."""
        rounded = struct.unpack("f", struct.pack("f", value))[0] if bits == 32 else float(value)
        if not math.isfinite(rounded):
            raise FloatError(f"{value} does not fit a {bits}-bit float")
        return CFloat(rounded, bits)


def float_literal(text: str) -> CFloat:
    """`1.5f` (a float), `2.0`, `1e3` (doubles); a `long double` (`L`) is not modelled."""
    body = text.replace("'", "")
    if body[-1] in "lL":
        raise FloatError(f"long double literal {text}")
    if body[-1] in "fF" and not body.lower().startswith("0x"):
        return CFloat.of(float(body[:-1]), 32)
    return CFloat.of(float(body), 64)


def float_binary(op: str, a: CFloat, b: CFloat) -> CFloat | int:
    """`a op b` for two operands already converted to one floating type; comparisons give 0 or 1."""
    bits = max(a.bits, b.bits)
    if op == "+":
        return CFloat.of(a.value + b.value, bits)
    if op == "-":
        return CFloat.of(a.value - b.value, bits)
    if op == "*":
        return CFloat.of(a.value * b.value, bits)
    if op == "/":
        if b.value == 0:
            raise FloatError("floating-point division by zero")
        return CFloat.of(a.value / b.value, bits)
    compare = {"<": a.value < b.value, ">": a.value > b.value, "<=": a.value <= b.value,
               ">=": a.value >= b.value, "==": a.value == b.value, "!=": a.value != b.value}
    if op in compare:
        return int(compare[op])
    raise FloatError(f"operator {op} on a floating-point value")


def to_integer(v: CFloat, bits: int, signed: bool) -> int:
    """C's conversion to an integer type: truncate toward zero; out of the type's range has no value."""
    whole = math.trunc(v.value)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not low <= whole <= high:
        raise FloatError(f"{v.value} does not fit the integer type it is converted to")
    return whole
