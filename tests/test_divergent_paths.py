"""A branch that splits a warp's lanes runs both its sides (`loops.cfg_longest_path` with `divergent`).

Under SIMT a warp whose lanes disagree at a branch runs one side with those lanes active, then the other, and the
lanes meet again where the sides join. `tests/kernels/divergence.cu`'s `evenOdd` splits every warp by lane
parity: even lanes run a 16-step loop, odd lanes one square root. The latency chain of such a warp is both sides,
not the longer one; the thesis's walk (every branch taken the longer way) stays the default where no branch is
known to split.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.loops import block_weights, cfg_longest_path, find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx

KERNELS = Path(__file__).resolve().parent / "kernels"


@pytest.fixture(scope="module")
def even_odd(nvcc_available):
    """evenOdd's CFG, loops and memory analysis at 128 threads per block, with 16 loop steps."""
    result = compile_cuda(KERNELS / "divergence.cu", options=CompileOptions(arch="sm_90"))
    assert result.ok, result.diagnostics
    module = parse_ptx(result.ptx)
    fn = next(f for f in module.kernels if "evenOdd" in f.name)
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    memory = analyze_memory(module, fn, cfg, loops, (128, 1, 1), {"steps": 16}, {}, Thresholds(), budget_s=None)
    return cfg, loops, memory


def test_a_split_warp_runs_both_sides_of_its_branch(even_odd) -> None:
    cfg, loops, memory = even_odd
    split = [b for b in memory.branches if b.divergent]
    assert len(split) == 1 and split[0].share == 1.0  # lane parity splits every warp
    branch = cfg.block_of[split[0].index]
    trips = {lp.header: 16.0 for lp in loops.loops}
    cost = {b.id: 1.0 for b in cfg.blocks if not cfg.never_runs(b.id)}
    longer_side = cfg_longest_path(cfg, loops, cost, trips)
    both_sides = cfg_longest_path(cfg, loops, cost, trips, {branch: 1.0})
    # every block runs once per warp and per step of its loops: the warp's walk is their sum
    assert both_sides == pytest.approx(sum(block_weights(cfg, loops, trips).values()))
    assert both_sides > longer_side
    # a branch that splits half the warps costs the mean of the two walks
    half = cfg_longest_path(cfg, loops, cost, trips, {branch: 0.5})
    assert half == pytest.approx((longer_side + both_sides) / 2)


def test_no_split_branch_leaves_the_longest_path(even_odd) -> None:
    """A map that names no branch block of the CFG (or is empty) walks the thesis's longest path unchanged."""
    cfg, loops, _ = even_odd
    trips = {lp.header: 16.0 for lp in loops.loops}
    cost = {b.id: float(b.id + 1) for b in cfg.blocks if not cfg.never_runs(b.id)}
    plain = cfg_longest_path(cfg, loops, cost, trips)
    assert cfg_longest_path(cfg, loops, cost, trips, {}) == plain
    entry_only = {cfg.rpo[-1]: 1.0}  # the last block in order ends the function: it has no branch to split
    assert cfg_longest_path(cfg, loops, cost, trips, entry_only) == plain
