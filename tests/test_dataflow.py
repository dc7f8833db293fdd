"""The PTX dataflow layer: one set of facts per kernel, shared by trip counts and the memory analysis.

Kernels come from `examples/loops.cu` compiled by nvcc (`compile_example`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.cexpr import Unknown
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.dataflow import KernelDataflow
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, int_type
from kerncast.analysis.dataflow.induction import geometric_step, update_in_loop
from kerncast.analysis.dataflow.symbolic import instruction_value
from kerncast.analysis.launch import infer_launch
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.ptx.model import Imm, Instruction, Reg
from kerncast.analysis.tripcount import trip_counts


@pytest.fixture(scope="module")
def loops_module(compile_example):
    result = compile_example("loops", arch="sm_80")
    assert result.ok and result.ptx is not None, result.diagnostics
    return parse_ptx(result.ptx)


def _kernel(module, name: str):
    fn = next(f for f in module.kernels if name in f.name)
    cfg = build_cfg(fn)
    return fn, cfg, find_loops(cfg)


def test_trip_counts_and_memory_analysis_read_one_set_of_facts(loops_module) -> None:
    fn, cfg, loops = _kernel(loops_module, "treeSum")
    dataflow = KernelDataflow(fn, cfg, loops)
    counts = trip_counts(fn, cfg, loops, infer_launch("treeSum", None), dataflow)
    reaching = dataflow.reaching
    assert [c.source for c in counts.values()] == ["ptx"]
    memory = analyze_memory(loops_module, fn, cfg, loops, (256, 1, 1), {}, {h: int(c.value) for h, c in
                            counts.items()}, Thresholds(), dataflow=dataflow)
    assert memory.atoms is dataflow.symbolic.atoms  # the memory analysis used the shared symbolic values
    assert dataflow.reaching is reaching  # and nothing was computed twice
    assert dataflow.symbolic is dataflow.symbolic


def test_reaching_definitions_into_a_loop_come_from_outside_it(loops_module) -> None:
    fn, cfg, loops = _kernel(loops_module, "fixedSum")
    dataflow = KernelDataflow(fn, cfg, loops)
    (loop,) = loops.loops
    in_loop = set(loop.blocks)
    found = 0
    for reg, defs in dataflow.definitions.items():
        update = update_in_loop(dataflow.definitions, cfg, reg, in_loop)
        if update is None:
            continue
        found += 1  # an induction variable: updated once inside, started outside
        entering = dataflow.reaching.entering(reg, loop.header, in_loop)
        assert entering and all(cfg.block_of[d.index] not in in_loop for d in entering)
        assert all(d in defs for d in entering)
        assert dataflow.reaching.at(reg, update) != []
    assert found >= 1


@pytest.mark.parametrize(("op", "v", "step", "expected"), [
    ("mul", 3, 2, 6), ("shl", 1, 3, 8), ("shr", -16, 2, -4), ("shr", 5, 1000, 0), ("div", -7, 2, -3),
])
def test_geometric_steps_follow_ptx_integer_semantics(op: str, v: int, step: int, expected: int) -> None:
    assert geometric_step(op, v, step) == expected


def test_a_geometric_division_by_zero_is_unknown() -> None:
    with pytest.raises(Unknown, match="division by zero"):
        geometric_step("div", 8, 0)


@pytest.mark.parametrize(("dtype", "expected"), [("s32", (32, True)), ("u64", (64, False)), ("b16", (16, False)),
                                                 (None, (32, False))])
def test_one_reading_of_an_instruction_integer_type(dtype: str | None, expected: tuple[int, bool]) -> None:
    ins = Instruction("add", (dtype,) if dtype else (), (Reg("%r1"),), None, 1, 1, None)
    assert int_type(ins) == expected


@pytest.fixture(scope="module")
def carry_free_module(nvcc_available):
    path = Path(__file__).resolve().parent / "kernels" / "carry_free.cu"
    result = compile_cuda(path, options=CompileOptions(arch="sm_90"))
    assert result.ok and result.ptx is not None, result.diagnostics
    return parse_ptx(result.ptx)


@pytest.mark.parametrize(("kernel", "opcode"), [("rowDots", "or.b64"), ("warpLanes", "or.b32")])
def test_an_or_of_disjoint_bits_is_read_as_the_sum(carry_free_module, kernel: str, opcode: str) -> None:
    # nvcc writes `row * 4096 * 4 + 8` as `or.b64 ..., 8` and `(warp << 5) | lane` as an `or.b32` of two masks:
    # both operands' bits are disjoint, so the address is a plain polynomial in the thread index
    fn, cfg, loops = _kernel(carry_free_module, kernel)
    ors = [i for i in fn.body if i.full_opcode == opcode]
    assert ors, f"nvcc no longer writes {opcode} in {kernel}"
    sym = KernelDataflow(fn, cfg, loops).symbolic
    global_addresses = [E.evaluate(sym.atoms, sym.addresses[i.index], sym.resolution, {})  # through the loop
                        for i in fn.body if i.opcode in ("ld", "st") and i.space == "global"]
    assert global_addresses and all(a is not None for a in global_addresses)
    assert not any(sym.atoms.keys[x][1] == "or" for a in global_addresses for m, _ in a for x in m
                   if sym.atoms.keys[x][0] == "op")


def _or_value(a_text: str, b: int) -> tuple[Atoms, object]:
    atoms = Atoms()
    tid = atoms.sym("tid.x")
    a = E.mul(tid, E.const(int(a_text)))
    ins = Instruction("or", ("b32",), (Reg("%r1"), Reg("%r2"), Imm(b, str(b))), None, 1, 0, None)
    return atoms, instruction_value(atoms, ins, [a, E.const(b)])


@pytest.mark.parametrize(("scale", "offset", "is_sum"), [("4096", 8, True), ("16", 15, True), ("16", 16, False),
                                                        ("3", 1, False)])
def test_an_or_is_a_sum_only_when_no_bit_can_meet(scale: str, offset: int, is_sum: bool) -> None:
    # `16 * t | 15` is `16 * t + 15`; `16 * t | 16` and `3 * t | 1` may share a bit and stay an operation
    atoms, value = _or_value(scale, offset)
    tid = atoms.sym("tid.x")
    summed = E.add(E.mul(tid, E.const(int(scale))), E.const(offset))
    assert (value == summed) is is_sum


def test_a_step_that_reads_its_own_variable_is_not_affine(carry_free_module) -> None:
    # j += len with len = n - j on the last chunk: the step holds j inside a select, so j is no affine
    # recurrence (taking it for one made every value built on it TOP); it is an unknown the whole warp shares,
    # and the staged load in[j + threadIdx.x] is that unknown plus the thread index
    fn, cfg, loops = _kernel(carry_free_module, "chunkedStage")
    sym = KernelDataflow(fn, cfg, loops).symbolic
    kinds = {rc.kind for rc in sym.recurrences.values() if rc.kind != "invariant"}
    assert "affine" not in kinds
    (load,) = [i for i in fn.body if i.opcode == "ld" and i.space == "global"]
    address = E.evaluate(sym.atoms, sym.addresses[load.index], sym.resolution, {})
    assert address is not None
    tid = sym.atoms.atom(("sym", "tid.x"), True)
    assert [c for m, c in address if m == (tid,)] == [4]


def test_a_64_bit_division_done_in_32_bits_when_it_fits_joins_as_one_quotient(carry_free_module) -> None:
    # r = t / cols: nvcc tests whether t and cols fit in 32 bits and divides in 32 or 64 bits; the paths'
    # quotients differ only in width, so the join keeps the 64-bit one instead of TOP, and the copy's
    # addresses r * cols + c are read
    fn, cfg, loops = _kernel(carry_free_module, "wideDivide")
    divisions = {i.full_opcode for i in fn.body if i.opcode == "div"}
    assert {"div.s64", "div.u32"} <= divisions, divisions
    sym = KernelDataflow(fn, cfg, loops).symbolic
    addresses = [sym.addresses[i.index] for i in fn.body if i.opcode in ("ld", "st") and i.space == "global"]
    assert len(addresses) == 2 and all(a is not None for a in addresses)
