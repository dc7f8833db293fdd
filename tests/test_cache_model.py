"""The L1 serves a thread's walk through its own row: the share of a load's executions that hit, and its latency."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.cache_model import L1Reuse, l1_hit_latency, load_latency

ROOT = Path(__file__).resolve().parent.parent


def test_only_gpus_whose_l1_caches_global_loads_have_an_l1_hit_latency():
    assert l1_hit_latency(load_profile("h100")) is not None
    assert l1_hit_latency(load_profile("v100")) is not None
    assert l1_hit_latency(load_profile("k20")) is None  # Kepler: global loads bypass L1
    assert l1_hit_latency(load_profile("gtx1050")) is None  # Pascal: L1 caching of global loads is opt-in


def test_a_load_waits_the_l1_for_its_hits_and_the_l2_for_the_rest():
    lat = load_latency([L1Reuse(7, 4, 0.875)], 34.0, 266.0)
    assert lat == {7: pytest.approx(0.875 * 34 + 0.125 * 266)}


def _row_sum(gpu: str):
    launch = LaunchOverrides.from_strings(grid="4", block="256", params=["n=1000"])
    report = analyze_file(ROOT / "examples/loops.cu", options=AnalysisOptions(gpu=gpu, lime=False, overrides=launch))
    return next(k for k in report.kernels if k.name.split("(")[0] == "rowSum").time


def test_a_row_walk_finds_seven_of_eight_elements_in_l1(nvcc_available):
    """rowSum's thread reads `in[row * n + k]`, 4 bytes further each iteration: 7 of the 8 floats of each
    sector were brought in by the iteration before, so the loop's chain is far shorter than with every load
    waiting for the L2, and Kepler, whose L1 does not cache global loads, keeps the L2 latency."""
    h100 = _row_sum("h100")
    notes = [a for a in h100.assumptions if a.startswith("L1 reuse")]
    assert notes and "88%" in notes[0], h100.assumptions
    k20 = _row_sum("k20")
    assert not any(a.startswith("L1 reuse") for a in k20.assumptions)
    # the loop's latency chain: 1000 iterations of mostly L1 hits, against over 250 cycles per iteration for
    # an L2 hit on every one
    assert h100.detail["latency_chain_cycles"] < 1000 * 150
