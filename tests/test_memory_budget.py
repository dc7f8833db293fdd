"""The memory stage stays near-linear in guarded branches and stops at its time budget with a clear finding.

The kernels are the guarded-branch PTX of `benchmarks/branch_speed.py` (N `if (tid >= k) out[tid] = k` in a
row, a dominator chain N deep). Work is asserted through the analysis's deterministic work counter, never
through wall-clock time; the seconds are what the benchmark prints.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.findings.memory import memory_findings
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.memory.analysis import DEFAULT_BUDGET_S
from kerncast.analysis.options import AnalysisOptions, Thresholds
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx import parse_ptx

_SPEC = importlib.util.spec_from_file_location(
    "branch_speed", Path(__file__).resolve().parent.parent / "benchmarks" / "branch_speed.py")
assert _SPEC is not None and _SPEC.loader is not None
branch_speed = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(branch_speed)


def _analyse(n: int, block=(256, 1, 1), budget_s: float | None = DEFAULT_BUDGET_S):
    module = parse_ptx(branch_speed.guarded_branches_ptx(n))
    fn = module.kernels[0]
    cfg = build_cfg(fn)
    return analyze_memory(module, fn, cfg, find_loops(cfg), block, {}, {}, Thresholds(), budget_s=budget_s)


@pytest.mark.parametrize("block", [(256, 1, 1), None], ids=["block-256", "block-unknown"])
def test_thousand_guarded_branches_within_the_default_budget(block) -> None:
    result = _analyse(1000, block)
    assert result.skipped == 0
    assert not [f for f in memory_findings(result, Thresholds(), None, None, DEFAULT_BUDGET_S)
                if f.code == "analysis-budget"]
    assert len(result.branches) == 1000 and len(result.accesses) == 1000
    if block is not None:  # `tid >= k % 64` splits the first warps of a known 256-thread block
        assert any(b.divergent for b in result.branches)


@pytest.mark.parametrize("block", [(256, 1, 1), None], ids=["block-256", "block-unknown"])
def test_work_grows_linearly_with_branches(block) -> None:
    small, large = _analyse(250, block, budget_s=None).work, _analyse(1000, block, budget_s=None).work
    assert small > 0
    assert large <= 4 * small * 1.1, (small, large)  # 4x the branches: about 4x the work, not 16x


def test_past_the_budget_the_stage_stops_with_an_information_finding() -> None:
    result = _analyse(200, budget_s=0.0)
    budget = [f for f in memory_findings(result, Thresholds(), None, None, 0.0) if f.code == "analysis-budget"]
    assert len(budget) == 1 and budget[0].severity == "information"
    assert result.skipped == 400 - len(result.accesses) - len(result.branches) > 0
    assert f"{result.skipped} memory instruction(s)" in budget[0].message
    assert budget[0].detail["stage"] == "memory"


def test_the_rest_of_the_report_stands_past_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "guarded.ptx"
    path.write_text(branch_speed.guarded_branches_ptx(50))
    report = analyze_file(path, options=AnalysisOptions(budget_s=0.0))
    kernel = report.kernels[0]
    assert [f.code for f in kernel.findings if f.code == "analysis-budget"] == ["analysis-budget"]
    assert kernel.time is not None and kernel.instruction_count > 0
    assert report.ok
