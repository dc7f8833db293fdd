"""The trace model's warp-pipeline simulation on hand-made traces (no nvcc): grouped alike warps issue as the
warps they stand for, and posted stores' DRAM work bounds the SM's time after their warps retired."""

from __future__ import annotations

import pytest
from kerncast.analysis.timing.trace import sm_cycles
from kerncast.analysis.timing.trace_sim import Op, simulate_round

WINDOW = (4, 2)


def _independent(count: int) -> tuple[dict[int, Op], dict[int, list[int]]]:
    """One basic block of `count` independent one-lane-cycle instructions on the SP lanes (no operands)."""
    ops = {i: Op("SP", 0.25, 6.0, (), (f"r{i}",)) for i in range(count)}
    return ops, {0: list(range(count))}


def test_an_entry_of_alike_warps_issues_as_fast_as_the_warps_it_stands_for():
    """Four warps with 20 independent instructions each, on an SM that issues 4 per cycle: 20 cycles of issue,
    whether the warps are simulated one by one or as one entry of multiplicity 4 (not 4 cycles per instruction)."""
    ops, blocks = _independent(20)
    apart = simulate_round([(0, (0,), 1)] * 4, ops, blocks, dispatch=4.0, window=WINDOW)
    grouped = simulate_round([(0, (0,), 4)], ops, blocks, dispatch=4.0, window=WINDOW)
    assert apart.last_retire == pytest.approx(grouped.last_retire, rel=0.1), (apart, grouped)
    assert grouped.last_retire < 2 * 20 + 6, grouped


def test_posted_stores_hold_the_dram_share_after_their_warps_retired():
    """Warps that only store retire as soon as the stores are handed over; the DRAM share they hold is still
    busy after that, and the SM's time is at least that work, in the simulated blocks and the extrapolated."""
    store = Op("LSU", 1.0, 200.0, (), (), memory=True, dram_hold=50.0)
    sim = simulate_round([(b, (0,), 1) for b in range(8)], {0: store}, {0: [0]}, dispatch=1.0, window=WINDOW,
                         slots=2)
    assert sim.busy == pytest.approx(8 * 50.0)
    assert sim.last_retire < sim.busy
    assert sm_cycles(sim.retired, sim.last_retire, sim.busy, resident=2, blocks_on_sm=8)[0] >= 8 * 50.0
    cycles, pace = sm_cycles(sim.retired, sim.last_retire, sim.busy, resident=2, blocks_on_sm=80)
    assert pace >= 50.0 and cycles >= 80 * 50.0 - 50.0, (cycles, pace)
