"""The vectorised lane evaluation gives exactly the per-lane values, or declines and leaves them to it.

Every address, guard and branch predicate of every example and corpus kernel is evaluated both ways under
several block shapes (including the unknown one, where lane symbols stay symbolic) and loop iterations.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory.analysis import _Kernel
from kerncast.analysis.memory.lanevec import GiveUp, LaneVectors, concrete_op_lanes
from kerncast.analysis.memory.warp import LaneConstants, branch_outcome, lane_offsets
from kerncast.analysis.ptx import parse_ptx

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("examples/*.cu"), *ROOT.glob("tests/kernels/*.cu")])
SHAPES = [None, (256, 1, 1), (16, 16, 1), (48, 1, 1), (8, 4, 2)]


@pytest.fixture(scope="module")
def modules(nvcc_available) -> list:
    out = []
    for path in SOURCES:
        result = compile_cuda(path, options=CompileOptions(arch="sm_75"))
        assert result.ptx is not None, path
        out.append(parse_ptx(result.ptx))
    return out


def _lane_values(modules, shape):
    """(kernel, function, value) for every address, guard and branch condition of every kernel, evaluated at
    every enumerated loop iteration of its block: the values the memory analysis reads lane by lane."""
    for module in modules:
        for fn in module.kernels:
            cfg = build_cfg(fn)
            k = _Kernel(module, fn, cfg, find_loops(cfg), shape, {}, {}, None, None)
            values = [*k.sym.addresses.values(), *k.sym.guards.values(), *k.conditions.values()]
            for ins_block in {cfg.block_of[i] for i in k.sym.addresses}:
                for assign in k.iteration_assignments(ins_block):
                    subst = {**k.base, **assign}
                    for v in values:
                        w = E.evaluate(k.atoms, v, subst, {})
                        if w is not None:
                            yield k, fn, w


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_vectorised_lane_tables_equal_the_per_lane_ones(modules, shape) -> None:
    compared = vectorised = 0
    for k, fn, w in _lane_values(modules, shape):
        compared += 1
        if k.vectors is not None and k.vectors.evaluate(w) is not None:
            vectorised += 1
        assert k._lane_table(w) == k._lane_table_per_lane(w), (fn.name, shape, w)
    assert compared > 100
    assert vectorised > 0.9 * compared  # the vectorised way is the one taken, not the exception


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lanes_kept_as_constants_equal_the_per_lane_values(modules, shape) -> None:
    """Where the lanes differ only by a constant the memory analysis keeps them as `LaneConstants` (ints);
    read lane by lane they must be the per-lane values, and so must the branch outcomes and cost groups, and
    the lanes where a predicate is not known false (read from the lane vectors' coefficients)."""
    compared = compact = 0
    for k, fn, w in _lane_values(modules, shape):
        compared += 1
        want = k._lane_table_per_lane(w)
        assert k._lanes_where(w) == [{ln for ln, x in t.items() if E.as_const(x) != 0}
                                     for t in want]
        for table, lanes in zip(k._warp_values(w), want, strict=True):
            if not isinstance(table, LaneConstants):
                assert table == lanes
                continue
            compact += 1
            listed = [lanes[ln] for ln in sorted(lanes)]
            assert [table[i] for i in range(len(table))] == listed, (fn.name, shape, w)
            assert branch_outcome(table) == branch_outcome(listed)
            assert lane_offsets(k.atoms, table) == lane_offsets(k.atoms, listed)
    assert compared > 100
    assert compact > 0.5 * compared


def test_elementwise_operations_follow_the_integer_semantics() -> None:
    a = np.array([-7, -1, 0, 1, 5, 2**31 - 1], dtype=np.int64)
    b = np.array([2, 3, 1, 4, 3, 7], dtype=np.int64)
    for name, extra in [("div", (32, True)), ("rem", (32, True)), ("div", (32, False)), ("shr", (32, False)),
                        ("shr", (32, True)), ("and", (32, False)), ("or", (16, True)), ("xor", (8, False)),
                        ("min", None), ("max", None), ("cmp", (32, True, "lt")), ("cmp", (32, False, "hs"))]:
        got = concrete_op_lanes(name, [a, b], extra).tolist()
        want = [E.concrete_op(name, [int(x), int(y)], extra) for x, y in zip(a, b, strict=True)]
        assert got == want, name


def _whole_value(lanes: LaneVectors, v: E.Value) -> dict | None:
    """`LaneVectors.evaluate` of `v` worked out term by term from its constant on, with no part of it kept."""
    lanes.symbolic = False
    try:
        vp, _ = lanes._poly(v, 0)  # noqa: SLF001 - the evaluation the kept rest stands for
    except GiveUp:
        return None
    return None if lanes.symbolic and not lanes._within_caps(vp) else vp  # noqa: SLF001


def test_a_value_shifted_by_a_constant_reads_as_its_whole_evaluation() -> None:
    """A value evaluated as its non-constant part (kept from an earlier value) plus its constant gives the lanes,
    the monomials in their order and the give-up near int64's limit of evaluating the whole value."""
    atoms = E.Atoms()
    tid = atoms.atom(("sym", "tid.x"), True)
    ctaid = atoms.sym("ctaid.x")
    t = (((tid,), 1),)
    shr = atoms.op("shr", (E.add(E.scale(t, 4), E.const(3)), E.const(5)), (32, False))
    rest = E.add(E.add(E.scale(t, 4), E.scale(ctaid, 1024)), shr)
    shared = LaneVectors(atoms, {tid: {(): np.arange(64, dtype=np.int64)}}, 64, False)
    reference = LaneVectors(atoms, {tid: {(): np.arange(64, dtype=np.int64)}}, 64, False)
    gave_up = 0
    for c in (0, 4096, -12, 8192, 1 << 61, (1 << 62) - 300, 1 << 62):
        v = E.add(rest, E.const(c))
        got, want = shared.evaluate(v), _whole_value(reference, v)
        assert (got is None) == (want is None), c
        if want is None:
            gave_up += 1
            continue
        assert list(got) == list(want), c
        assert all(np.array_equal(got[m], want[m]) for m in want), c
    assert gave_up == 2  # the two constants whose sum with the lanes' bound leaves int64's safe range


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_opaque_comparison_agreement_is_the_per_lane_branch_outcome(modules, shape) -> None:
    """A predicate that is one comparison with opaque lane results (`256 * blockIdx.x + threadIdx.x < n`, the
    block index a symbol) is read from its arguments' lane vectors: a warp's lanes agree exactly where the
    per-lane values make its outcome uniform, and the per-lane outcome is never divergent."""
    read = 0
    for k, fn, w in _lane_values(modules, shape):
        rows = k.vectors.opaque_comparison_args(w) if k.vectors is not None else None
        if rows is None:
            continue
        read += 1
        start = 0
        for lanes, table in zip(k.lanes, k._lane_table_per_lane(w), strict=True):
            seen = rows[:, start:start + len(lanes)]
            agree = not np.count_nonzero(seen != seen[:, :1])
            assert branch_outcome([table[ln] for ln in sorted(table)]) == ("uniform" if agree else "unknown"), \
                (fn.name, shape, w)
            start += len(lanes)
    assert read > 100  # the form of a bounds test on a symbolic block index: common in every kernel set


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_comparison_undecided_in_every_lane_keeps_every_lane(modules, shape) -> None:
    """`undecided_in_every_lane` holds only where the per-lane values are all non-zero polynomials (no lane's
    comparison is decided to 0), which is what a test of the lanes a guard may pass reads; and it holds for the
    values `opaque_comparison_args` reads."""
    undecided = 0
    for k, fn, w in _lane_values(modules, shape):
        if k.vectors is None or not k.vectors.undecided_in_every_lane(w):
            continue
        undecided += 1
        assert k.vectors.opaque_comparison_args(w) is not None, (fn.name, w)
        for table in k._lane_table_per_lane(w):
            assert all(v is None or E.as_const(v) != 0 for v in table.values()), (fn.name, shape, w)
    assert undecided > 100


def test_a_branch_read_from_opaque_agreement_is_the_one_read_from_its_instances(modules) -> None:
    """`_Kernel.opaque_agreement` gives, per sampled instance with an active lane, whether `branch_outcome` of
    that instance's lane values (`instances`) is uniform, and those outcomes are never divergent."""
    checked = 0
    for module in modules:
        for fn in module.kernels:
            cfg = build_cfg(fn)
            k = _Kernel(module, fn, cfg, find_loops(cfg), (256, 1, 1), {}, {}, None, None)
            for ins in fn.body:
                pred = k.sym.guards.get(ins.index)
                if ins.opcode != "bra" or pred is None:
                    continue
                fast = k.opaque_agreement(ins.index, pred)
                if fast is None:
                    continue
                checked += 1
                outcomes = [branch_outcome(vals) for active, vals in k.instances(ins.index, pred, own_guard=False)
                            if active]
                assert "divergent" not in outcomes, fn.name
                assert fast == [o == "uniform" for o in outcomes], fn.name
    assert checked > 10
