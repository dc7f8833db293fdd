"""Lane addresses through division and remainder by constants, read at concrete loop counters and blocks.

nvcc writes `x % 1056` as a multiply-high (or a wide multiply and a shift) by a magic number and the remainder
`x - 1056 * q`; with a loop counter in `x` the lanes' addresses relate only once the counter is a number. The
sources are the repository's own: the shared-memory kernels of the GPU campaign
(`benchmarks/data/coverage/shared.cu`, `s[(lane * S + k) % (32 * 33)]`, whose 33 x 32 words keep each
stride's bank pattern: S-way conflicts up to 32) and `tests/kernels/int_division.cu`'s `a[(i + k) % 1000]`
(unit stride through a constant modulus: coalesced). Each file is compiled once, without ptxas.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hand_ptx import kernel
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import MemoryAnalysis, analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.ptx.model import Module

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "benchmarks" / "data" / "coverage" / "shared.cu"
INT_DIVISION = ROOT / "tests" / "kernels" / "int_division.cu"


def _module(path: Path) -> Module:
    result = compile_cuda(path, options=CompileOptions(arch="sm_90"), with_resources=False)
    assert result.ok, result.diagnostics
    module = parse_ptx(result.ptx)
    assert module.errors == []
    return module


@pytest.fixture(scope="module")
def shared_module(nvcc_available) -> Module:
    return _module(SHARED)


@pytest.fixture(scope="module")
def division_module(nvcc_available) -> Module:
    return _module(INT_DIVISION)


def _analyse(module: Module, name: str, params: dict[str, int], source: Path = SHARED) -> MemoryAnalysis:
    (fn,) = [f for f in module.kernels if f.name.startswith(f"_Z{len(name)}{name}")]
    cfg = build_cfg(fn)
    return analyze_memory(module, fn, cfg, find_loops(cfg), (256, 1, 1), params, {}, Thresholds(),
                          cuda_source=source.read_text(encoding="utf-8"), budget_s=None)


@pytest.mark.parametrize(("name", "kind", "ways"), [
    ("sharedLoadStride1", "load", 1), ("sharedLoadStride2", "load", 2), ("sharedLoadStride4", "load", 4),
    ("sharedLoadStride8", "load", 8), ("sharedLoadStride16", "load", 16), ("sharedLoadStride32", "load", 32),
    ("sharedStoreStride1", "store", 1), ("sharedStoreStride2", "store", 2), ("sharedStoreStride32", "store", 32),
])
def test_bank_conflicts_through_a_constant_modulus_of_the_loop_counter(shared_module, name, kind, ways):
    res = _analyse(shared_module, name, {"iters": 256})
    inside = [a for a in res.accesses if a.space == "shared" and a.kind == kind and a.executions == 64]
    assert len(inside) == 4, [(a.kind, a.executions) for a in res.accesses]  # nvcc unrolled the loop by 4
    for a in inside:
        assert a.known, a
        assert (a.wavefronts, a.ideal_wavefronts) == (ways, 1), a
        assert a.lane_stride_bytes == 4 * ways
    # the count is known: nothing of the reading is assumed
    assert not any("were read" in note for note in res.assumptions), res.assumptions


def test_a_count_not_known_reads_the_first_iterations_and_the_remainder_too(shared_module):
    res = _analyse(shared_module, "sharedLoadStride32", {})
    loads = [a for a in res.accesses if a.space == "shared" and a.kind == "load"]
    # the unrolled body's four loads and the remainder loop's, which starts where the unrolled loop left
    assert len(loads) == 5
    assert all(a.known and a.wavefronts == 32 for a in loads), loads
    assert any("first 8 iterations" in note for note in res.assumptions), res.assumptions


def test_unit_stride_through_a_constant_modulus_is_coalesced(division_module):
    res = _analyse(division_module, "constantDivisor", {}, INT_DIVISION)
    loads = [a for a in res.accesses if a.space == "global" and a.kind == "load"]
    assert len(loads) == 16  # the 16 iterations of `a[(i + k) % 1000]`, unrolled
    for a in loads:
        assert a.known and a.lane_stride_bytes == 4, a
        # 128 bytes in 4 sectors, 5 where `k` leaves them unaligned; the wrap at 1000 costs no more
        assert a.ideal_sectors == 4 and a.sectors_per_request in (4, 5), a
    # `i` holds blockIdx.x inside the remainder: its first blocks stand for every block, and the report says so
    assert any("blocks 0-3" in note for note in res.assumptions), res.assumptions


def test_a_logical_shift_keeps_a_negative_rest_whole() -> None:
    # nvcc's signed division by 7: q = (x + mulhi(x, -1840700269)) >> 2 (plus the sign bit). For x = 4 the sum is
    # 2; the rest without the constant, x - 4 + mulhi(x, m) = -2, must not be shifted on its own as an unsigned
    # number (it would give 2**30 instead of 0)
    atoms = Atoms()
    t = atoms.sym("tid.x")
    x = E.add(t, E.const(4))
    hi = atoms.op("mulhi", (x, E.const(-1840700269)), (32, True))
    q = E.apply_op(atoms, "shr", (E.add(x, hi), E.const(2)), (32, False))
    for lane in range(40):
        got = E.as_const(E.evaluate(atoms, q, {atoms.atom(("sym", "tid.x"), True): E.const(lane)}, {}))
        assert got == (lane + 4) // 7, (lane, got)


def test_a_multiply_high_and_add_is_a_division_step() -> None:
    # `mad.hi` (the high half plus the addend, as nvcc folds the magic number's correction) computed lane by
    # lane: q = tid / 7 picks words 32 * q, all in bank 0, five distinct ones in a warp: five wavefronts
    module, fn, cfg, loops = kernel("""
    mov.u32 %r1, %tid.x;
    mad.hi.s32 %r2, %r1, -1840700269, %r1;
    shr.u32 %r3, %r2, 2;
    shl.b32 %r4, %r3, 7;
    mov.u32 %r5, tile;
    add.s32 %r6, %r5, %r4;
    ld.shared.f32 %f1, [%r6];
""")
    res = analyze_memory(module, fn, cfg, loops, (32, 1, 1), {}, {}, Thresholds())
    [a] = res.accesses
    assert a.known and (a.wavefronts, a.ideal_wavefronts) == (5, 1), a
