"""Algorithms 6-8 of the thesis's resource-allocation scheduler, starting with its worked example.

Thesis section 4.4.4.2 and Figure 4.6 (vectorAdd on a Tesla K20): L(ld) = 315, L(add) = 9, L(cvta) = 33,
R[SP] = 192, R[LSU] = 32, nTW = 256. The figure's DAG is not in the text; the snippet below is vectorAdd's
address arithmetic and loads as nvcc writes them, named as the thesis names the nodes: C8 = add (address of
a[i]), C9 = cvta (b's pointer), C10 = add (address of b[i]), M1/M2 = the two loads, C11 = the float add.
"""

from __future__ import annotations

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.deps import block_dependences
from kerncast.analysis.isa import InstrClass
from kerncast.analysis.loops import find_loops
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.ptx.model import Instruction
from kerncast.analysis.timing.scheduler import (
    _Reservations,
    cfg_longest_path,
    plan_waves,
    schedule_block,
    schedule_cfg,
)

HEADER = ".version 7.0\n.target sm_35\n.address_size 64\n"

FIG_4_6 = HEADER + """
.visible .entry vadd(.param .u64 p)
{
    .reg .f32 %f<4>;
    .reg .b64 %rd<9>;
    add.s64 %rd6, %rd4, %rd5;
    cvta.to.global.u64 %rd7, %rd2;
    add.s64 %rd8, %rd7, %rd5;
    ld.global.f32 %f1, [%rd6];
    ld.global.f32 %f2, [%rd8];
    add.f32 %f3, %f1, %f2;
    ret;
}
"""

THESIS_LATENCY = {"ld": 315.0, "add": 9.0, "cvta": 33.0, "ret": 0.0}
K20_UNITS = {"SP": 192, "LSU": 32, "BRANCH": 128}
C8, C9, C10, M1, M2, C11 = range(6)


def _latency(ins: Instruction, _cls: InstrClass) -> float:
    return THESIS_LATENCY[ins.opcode]


@pytest.fixture(scope="module")
def figure_schedule():
    fn = parse_ptx(FIG_4_6).kernels[0]
    cfg = build_cfg(fn)
    dag = block_dependences(cfg, 0)
    return dag, schedule_block(dag, fn.body, n_threads=256, latency=_latency, units=K20_UNITS)


def test_figure_4_6_dag_matches_the_text(figure_schedule):
    dag, _ = figure_schedule
    preds = {n: sorted(p for p, _ in dag.preds[n]) for n in dag.nodes}
    assert preds[C8] == [] and preds[C9] == []  # both may start at t = 0 (step 6 computes t = 0 for C9)
    assert preds[M1] == [C8] and preds[M2] == [C10]
    assert preds[C11] == [M1, M2]


def test_figure_4_6_c8_starts_at_0_and_takes_10_cycles(figure_schedule):
    _, s = figure_schedule
    assert s.start[C8] == 0
    # 9 + 1 * (ceil(256 / 192) - 1) = 10 cycles on SP
    assert s.duration[C8] == 10
    assert s.resource[C8] == "SP"


def test_figure_4_6_c9_waits_for_the_sp_reservation(figure_schedule):
    _, s = figure_schedule
    assert s.start[C9] == 10  # Rsv[0..9, SP] = 1 from C8


def test_figure_4_6_m1_starts_at_10_concurrently_with_c9(figure_schedule):
    _, s = figure_schedule
    assert s.start[M1] == 10  # Sch[C8] + 9 + 1
    assert s.duration[M1] == 315 + 7  # ceil(256 / 32) = 8 batches
    assert s.resource[M1] == "LSU"


def test_figure_4_6_c11_edge_terms_and_schedule(figure_schedule):
    """C11 is scheduled at the max of its two edge terms ``Sch[u] + L(u) + L_pipe(ceil(nTW/R) - 1)``.

    M1's term is 332, as printed. M2 waits for the LSU that M1 holds for 322 cycles: under Algorithm 6 as
    printed (reservation ``Rsv[t1] .. Rsv[t1 + d - 1]``, the rule that gives ``Sch[C9] = 10`` right when C8's
    10 cycles end), M2 starts at 332 and its term is 332 + 322 = 654. The thesis prints 655, i.e. M2 at 333.
    No single reservation rule gives both ``Sch[C9] = 10`` and ``Sch[M2] = 333``; this test follows the
    printed algorithm (the thesis's own equations), so C11 lands one cycle before the printed 655.
    """
    _, s = figure_schedule
    assert s.finish(M1) == 332
    assert s.start[M2] == 332
    assert s.finish(M2) == 654
    assert s.start[C11] == max(s.finish(M1), s.finish(M2)) == 654
    assert abs(s.start[C11] - 655) <= 1  # the thesis's printed value, to its one-cycle inconsistency


def test_latency_hiding_c9_c10_hidden_under_m1(figure_schedule):
    _, s = figure_schedule
    assert s.finish(C10) < s.finish(M1)
    assert s.delay == s.finish(C11) == 654 + 10


def test_block_counts_memory_instructions(figure_schedule):
    _, s = figure_schedule
    assert s.global_count == 2 and s.shared_count == 0


def test_reservation_finds_gaps_and_merges():
    r = _Reservations()
    r.reserve(10, 322)
    assert r.earliest(0, 10) == 0  # fits before the reservation
    assert r.earliest(0, 11) == 332  # does not fit in [0, 10)
    r.reserve(0, 10)
    assert r.starts == [0] and r.ends == [332]
    assert r.earliest(5, 1) == 332


LOOP_PTX = HEADER + """
.visible .entry loopk(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    mov.u32 %r1, 0;
    mov.f32 %f1, 0f00000000;
$L_loop:
    add.f32 %f1, %f1, 0f3F800000;
    add.s32 %r1, %r1, 1;
    setp.lt.s32 %p1, %r1, 100;
    @%p1 bra $L_loop;
    mov.f32 %f2, %f1;
    ret;
}
"""


def _opcode_latency(ins: Instruction, _cls: InstrClass) -> float:
    return {"mov": 2.0, "add": 9.0, "setp": 22.0, "bra": 10.0, "ret": 10.0}[ins.opcode]


def test_loops_are_multiplied_not_iterated():
    fn = parse_ptx(LOOP_PTX).kernels[0]
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    header = loops.loops[0].header
    units = {"SP": 192, "BRANCH": 128, "LSU": 32}
    one = schedule_cfg(cfg, loops, 32, {header: 1}, latency=_opcode_latency, units=units)
    big = schedule_cfg(cfg, loops, 32, {header: 10_000}, latency=_opcode_latency, units=units)
    body = one.blocks[header].delay
    assert big.delay - one.delay == pytest.approx(body * 9_999)


def test_branches_take_the_longest_path():
    fn = parse_ptx(LOOP_PTX).kernels[0]
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    # diamond-free CFG here: longest path = sum of block costs with the loop counted once per trip
    cost = {b.id: 1.0 for b in cfg.blocks}
    assert cfg_longest_path(cfg, loops, cost, {}) == len(cfg.blocks)
    assert cfg_longest_path(cfg, loops, cost, {loops.loops[0].header: 5}) == len(cfg.blocks) - 1 + 5


DIAMOND_PTX = HEADER + """
.visible .entry diamond(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    mov.u32 %r1, %tid.x;
    setp.lt.s32 %p1, %r1, 16;
    @%p1 bra $L_short;
    add.s32 %r2, %r1, 1;
    add.s32 %r2, %r2, 1;
    add.s32 %r2, %r2, 1;
    bra.uni $L_end;
$L_short:
    add.s32 %r2, %r1, 2;
$L_end:
    ret;
}
"""


def test_diamond_takes_the_longer_side():
    fn = parse_ptx(DIAMOND_PTX).kernels[0]
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    sizes = {b.id: float(b.size) for b in cfg.blocks}
    long_side = max(sizes[s] for s in cfg.blocks[0].succs)
    assert cfg_longest_path(cfg, loops, sizes, {}) == sizes[0] + long_side + sizes[len(cfg.blocks) - 1]


@pytest.mark.parametrize(("blocks", "sms", "per_wave", "expected"), [
    (13, 13, 8, (1, 1, 0, 1)),  # thesis example: one block per SM, one wave
    (15, 13, 8, (2, 1, 0, 1)),  # SM0 and SM1 get two blocks, in one wave (Figure 4.5 discussion)
    (104, 13, 8, (8, 1, 0, 1)),  # exact division: no extra wave (Algorithm 8's `>= 0` fixed)
    (105, 13, 8, (9, 1, 1, 2)),
    (10**6, 13, 8, (76924, 9615, 4, 9616)),
])
def test_plan_waves(blocks, sms, per_wave, expected):
    w = plan_waves(blocks, sms, per_wave)
    per_sm, full, last, waves = expected
    assert (w.blocks_per_sm, w.full_waves, w.last_wave_blocks, w.waves) == (per_sm, full, last, waves)
