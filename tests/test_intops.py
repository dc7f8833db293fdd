"""One integer semantics for every evaluator: PTX widths and signedness honoured, scalars and lanes alike."""

from __future__ import annotations

import numpy as np
import pytest
from kerncast.analysis.cexpr import ConstEnv
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, concrete_op
from kerncast.analysis.dataflow.symbolic import instruction_value
from kerncast.analysis.intops import (
    C_CHAR,
    C_INT,
    C_LLONG,
    C_LONG,
    C_SHORT,
    C_UINT,
    C_ULLONG,
    C_ULONG,
    LANES,
    OPERATIONS,
    SCALAR,
    NoValue,
    c_common,
    compare,
    int_op,
    wrap,
)
from kerncast.analysis.memory.lanevec import GiveUp, concrete_op_lanes
from kerncast.analysis.ptx.model import Instruction, Reg


def test_shr_is_logical_on_unsigned_and_arithmetic_on_signed():
    assert int_op("shr", -16, 2, 32, signed=True) == -4
    assert int_op("shr", -16, 2, 32, signed=False) == (2**32 - 16) >> 2
    assert int_op("shr", -16, 2, 16, signed=False) == (2**16 - 16) >> 2


def test_division_truncates_toward_zero_and_reads_unsigned_operands_modulo_the_width():
    assert int_op("div", -7, 2, 32, signed=True) == -3
    assert int_op("rem", -7, 2, 32, signed=True) == -1
    assert int_op("div", -7, 2, 32, signed=False) == (2**32 - 7) // 2
    with pytest.raises(NoValue):
        int_op("div", 5, 2**32, 32, signed=False)  # the divisor wraps to zero


def test_bitwise_results_keep_the_width():
    assert int_op("not", 0, 0, 8, signed=False) == 255
    assert int_op("not", 0, 0, 8, signed=True) == -1
    assert wrap(0x1_0000_0005, 32, False) == 5


@pytest.mark.parametrize("name", sorted(OPERATIONS))
@pytest.mark.parametrize("bits,signed", [(32, False), (32, True), (16, False), (64, True)])
def test_scalars_and_lanes_agree(name, bits, signed):
    a = np.array([-9, -1, 0, 3, 77, 1 << 20], dtype=np.int64)
    b = np.array([2, 3, 1, 5, 4, 7], dtype=np.int64)
    lanes = int_op(name, a, b, bits, signed, LANES)
    scalars = [int_op(name, int(x), int(y), bits, signed, SCALAR) for x, y in zip(a, b, strict=True)]
    assert [int(x) for x in lanes] == scalars


def test_the_memory_and_trip_count_evaluators_use_it():
    shr_u32 = (32, False, "eq")
    assert concrete_op("shr", [-16, 2], shr_u32) == int_op("shr", -16, 2, 32, False)
    lanes = concrete_op_lanes("shr", [np.array([-16]), np.array([2])], shr_u32)
    assert int(lanes[0]) == int_op("shr", -16, 2, 32, False)
    shr = Instruction("shr", ("u32",), (Reg("%r1"), Reg("%r2"), Reg("%r3")), None, 1, 1, None)
    assert concrete_op("shr", [-16, 2], shr_u32) == E.as_const(instruction_value(Atoms(), shr, [E.const(-16),
                                                                                                 E.const(2)]))
    assert concrete_op("div", [1, 0], shr_u32) is None
    with pytest.raises(GiveUp):
        concrete_op_lanes("div", [np.array([1]), np.array([0])], shr_u32)


def test_comparisons_read_unsigned_operands_at_the_width():
    assert compare("lt", -1, 0, 32, signed=True) == 1
    assert compare("lt", -1, 0, 32, signed=False) == 0  # 0xffffffff < 0 is false
    assert compare("lo", -1, 0, 32, signed=True) == 0  # lo compares unsigned whatever the type
    lanes = compare("lt", np.array([-1, 1]), np.array([0, 2]), 32, False, LANES)
    assert [int(x) for x in lanes] == [0, 1]
    with pytest.raises(NoValue):
        compare("nan", 1, 2, 32, True)


C_SOURCE = "const unsigned n = 0;\nconst int k = 7;\nconst short s = 70000;\n"


@pytest.mark.parametrize(("expr", "value"), [
    ("-1 < 1u", 0),  # -1 converts to unsigned int first
    ("(unsigned)-1 + 1", 0),  # unsigned arithmetic wraps
    ("1 << 31", -(1 << 31)),  # a left shift into the sign bit wraps (C++14 and later)
    ("n - 1", (1 << 32) - 1),  # the declared type of n is unsigned int
    ("k - 8", -1),
    ("s", 70000 - (1 << 16)),  # initialisation converts to short
    ("sizeof(int) - 8", (1 << 64) - 4),  # sizeof is a size_t
    ("min(-1, 2u)", 2),  # the usual arithmetic conversions apply to min's arguments too
    ("(char)300", 44),
    ("2147483648 - 1", 2147483647),  # a decimal literal too big for int is a long
    ("0xFFFFFFFF + 1", 0),  # a hexadecimal one is an unsigned int
    ("-7 / 2", -3),
])
def test_launch_expressions_follow_c_integer_types(expr: str, value: int) -> None:
    from_source = ConstEnv(C_SOURCE).fold(expr, len(C_SOURCE) - 1)
    assert from_source.value == value, (expr, from_source.reason)


@pytest.mark.parametrize(("expr", "reason"), [
    ("65536 * 65536", "signed overflow"),
    ("1 << 32", "shift by 32"),
    ("1 / 0", "division by zero"),
])
def test_launch_expressions_c_leaves_undefined_are_unknown(expr: str, reason: str) -> None:
    folded = ConstEnv("").fold(expr, 0)
    assert folded.value is None and reason in folded.reason


def test_usual_arithmetic_conversions() -> None:
    assert c_common(C_CHAR, C_SHORT) == C_INT  # both promoted
    assert c_common(C_INT, C_UINT) == C_UINT
    assert c_common(C_UINT, C_LONG) == C_LONG  # long holds every unsigned int
    assert c_common(C_LONG, C_ULLONG) == C_ULLONG
    assert c_common(C_LLONG, C_ULONG) == C_ULLONG  # same width: the unsigned type of the signed one's rank
