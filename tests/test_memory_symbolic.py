"""Symbolic register values, warp costs and the summary the time models read, on hand-written PTX."""

from __future__ import annotations

from hand_ptx import kernel
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms
from kerncast.analysis.dataflow.symbolic import analyze_symbolic
from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.memory import memory_findings
from kerncast.analysis.memory import MemoryAnalysis, analyze_memory
from kerncast.analysis.memory.analysis import DEFAULT_BUDGET_S
from kerncast.analysis.memory.warp import MAX_SAMPLED_WARPS, global_cost, shared_cost, warp_lanes
from kerncast.analysis.options import Thresholds


def analyse(body: str, block=(256, 1, 1), params=None) -> MemoryAnalysis:
    module, fn, cfg, loops = kernel(body)
    return analyze_memory(module, fn, cfg, loops, block, params or {}, {}, Thresholds())


def findings(res: MemoryAnalysis) -> list[Finding]:
    """The findings the memory stage makes of an analysis (no source text, no kernel line)."""
    return memory_findings(res, Thresholds(), None, None, DEFAULT_BUDGET_S)


COMMON = """
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
"""


def test_affine_address_through_mad_mul_wide_add() -> None:
    module, fn, cfg, loops = kernel(COMMON + """
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4+8];
""")
    sym = analyze_symbolic(cfg, loops)
    [addr] = sym.addresses.values()
    atoms = sym.atoms
    tid = atoms.atom(("sym", "tid.x"))
    coeff = {m: c for m, c in addr}
    assert coeff[(tid,)] == 4
    assert coeff[()] == 8


def test_unit_stride_is_coalesced_and_stride_two_is_not() -> None:
    clean = analyse(COMMON + "    mul.wide.s32 %rd3, %r5, 4;\n    add.s64 %rd4, %rd2, %rd3;\n"
                    "    ld.global.f32 %f1, [%rd4];\n")
    [a] = clean.accesses
    assert (a.sectors_per_request, a.ideal_sectors, a.lane_stride_bytes) == (4, 4, 4)
    assert not findings(clean)
    strided = analyse(COMMON + "    shl.b32 %r6, %r5, 1;\n    mul.wide.s32 %rd3, %r6, 4;\n"
                      "    add.s64 %rd4, %rd2, %rd3;\n    st.global.f32 [%rd4], %f1;\n")
    [a] = strided.accesses
    assert (a.sectors_per_request, a.ideal_sectors) == (8, 4)
    assert [f.code for f in findings(strided)] == ["uncoalesced-global"]
    assert strided.global_requests() == (0.0, 1.0)
    assert strided.average_sectors_per_request() == 8
    # what the time models read: sectors of the uncoalesced requests (MWP-CWP), traffic over the ideal (penalties)
    assert strided.uncoalesced_sectors_per_request() == 8 and strided.global_sector_factor() == 2
    assert clean.uncoalesced_sectors_per_request() is None and clean.global_sector_factor() == 1


def test_symbolic_stride_reports_the_condition_and_known_value_resolves_it() -> None:
    body = COMMON + ("    mul.lo.s32 %r6, %r5, %r1;\n    mul.wide.s32 %rd3, %r6, 4;\n"
                     "    add.s64 %rd4, %rd2, %rd3;\n    ld.global.f32 %f1, [%rd4];\n")
    res = analyse(body)
    [a] = res.accesses
    assert a.sectors_per_request == 32 and a.condition is not None and a.condition.endswith("== 1")
    assert findings(res) and "unless" in findings(res)[0].message
    one = analyse(body, params={"k_param_1": 1})
    assert one.accesses[0].sectors_per_request == 4 and not findings(one)


def test_masks_and_shifts_are_exact_once_lanes_are_numbers() -> None:
    # (tid.x & 15) * 4 : two lanes per 4-byte word pattern repeats -> 16 distinct words, shared: no conflict
    res = analyse(COMMON + """
    and.b32 %r6, %r4, 15;
    shl.b32 %r7, %r6, 2;
    mov.u32 %r8, tile;
    add.s32 %r9, %r8, %r7;
    ld.shared.f32 %f1, [%r9];
    shr.u32 %r10, %r4, 5;
    shl.b32 %r11, %r10, 2;
    add.s32 %r12, %r8, %r11;
    ld.shared.f32 %f2, [%r12];
""")
    a, b = res.accesses
    assert a.known and a.wavefronts == 1  # multicast: two lanes per word
    assert b.known and b.wavefronts == 1  # tid.x / 32 is the same word for the whole warp
    assert not findings(res)


def test_loaded_index_is_unknown_not_a_warning() -> None:
    res = analyse(COMMON + """
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r6, [%rd4];
    mul.wide.s32 %rd5, %r6, 4;
    add.s64 %rd6, %rd2, %rd5;
    ld.global.f32 %f1, [%rd6];
""")
    assert [a.known for a in res.accesses] == [True, False]
    assert all(f.severity == "information" for f in findings(res))
    coal, unc = res.global_requests()
    assert (coal, unc) == (2.0, 0.0) and res.unknown_requests() == 1.0


def test_affine_and_geometric_recurrences() -> None:
    module, fn, cfg, loops = kernel(COMMON + """
    mov.u32 %r20, 0;
    mov.u32 %r21, 1;
$L_loop:
    add.s32 %r20, %r20, 4;
    shl.b32 %r21, %r21, 1;
    setp.lt.u32 %p1, %r21, %r3;
    @%p1 bra $L_loop;
""")
    sym = analyze_symbolic(cfg, loops)
    kinds = {rc.reg: rc.kind for rc in sym.recurrences.values()}
    assert kinds["%r20"] == "affine"
    assert kinds["%r21"] == "geometric"


def test_shared_costs_broadcast_conflict_and_wide_phases() -> None:
    atoms = Atoms()
    lanes = list(range(32))
    same = [E.const(0)] * 32
    assert shared_cost(atoms, lanes, same, 4).actual == 1
    column = [E.const(128 * lane) for lane in lanes]
    c = shared_cost(atoms, lanes, column, 4)
    assert (c.actual, c.ideal) == (32, 1)
    wide = [E.const(8 * lane) for lane in lanes]
    c = shared_cost(atoms, lanes, wide, 8)
    assert (c.actual, c.ideal) == (2, 2)  # 64-bit: two half-warp phases, no conflict
    quad = [E.const(16 * lane) for lane in lanes]
    c = shared_cost(atoms, lanes, quad, 16)
    assert (c.actual, c.ideal) == (4, 4)


def test_global_cost_float4_and_misaligned() -> None:
    atoms = Atoms()
    f4 = [E.const(16 * lane) for lane in range(32)]
    c = global_cost(atoms, f4, 16, {})
    assert (c.actual, c.ideal) == (16, 16)
    shifted = [E.const(4 * lane + 4) for lane in range(32)]
    c = global_cost(atoms, shifted, 4, {})
    assert (c.actual, c.ideal) == (5, 4)


def test_block_of_16_by_16_puts_two_rows_in_a_warp() -> None:
    atoms = Atoms()
    warps = warp_lanes(atoms, (16, 16, 1))
    assert len(warps) == MAX_SAMPLED_WARPS  # first, middle and last of the 8 warps
    first = warps[0]
    assert E.as_const(first[15].subst["tid.x"]) == 15 and E.as_const(first[16].subst["tid.x"]) == 0
    assert E.as_const(first[16].subst["tid.y"]) == 1


def test_unknown_block_is_recorded_as_an_assumption() -> None:
    res = analyse(COMMON + "    mul.wide.s32 %rd3, %r5, 4;\n    add.s64 %rd4, %rd2, %rd3;\n"
                  "    ld.global.f32 %f1, [%rd4];\n", block=None)
    assert any("blockDim.x" in a for a in res.assumptions)
    assert res.accesses[0].sectors_per_request == 4


def test_divergence_parity_versus_warp_index() -> None:
    body = COMMON + """
    and.b32 %r6, %r4, 1;
    setp.eq.s32 %p1, %r6, 0;
    @%p1 bra $L_a;
    add.s32 %r7, %r4, 1;
$L_a:
    shr.u32 %r8, %r4, 5;
    setp.eq.s32 %p2, %r8, 1;
    @%p2 bra $L_b;
    add.s32 %r9, %r4, 1;
$L_b:
"""
    res = analyse(body, block=(128, 1, 1))
    parity, warp = res.branches
    assert parity.divergent and parity.depends_on == ["threadIdx.x"]
    assert not warp.divergent
    assert [f.code for f in findings(res)] == ["divergent-branch"]
