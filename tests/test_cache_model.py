"""The L1 serves a thread's walk through its own row: the share of a load's executions that hit, and its latency."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.cache_model import L1Reuse, dram_traffic, hit_share, l1_hit_latency, load_latency
from kerncast.analysis.timing.footprint import Footprint

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


def test_the_l2_hit_share_falls_smoothly_with_the_reuse_distance():
    """No cliff at the capacity: nearly every re-use hits well inside it, about half at it, few at 1.5 times it,
    and no 1% step of the distance moves the share by more than a few percent."""
    c = 26.2e6
    shares = [hit_share(c * k / 100, c) for k in range(0, 201)]
    assert shares[0] == 1.0 and shares[50] > 0.99
    assert 0.35 < shares[100] < 0.65 and shares[150] < 0.1
    assert all(b <= a + 1e-12 for a, b in zip(shares, shares[1:], strict=False))
    assert max(a - b for a, b in zip(shares, shares[1:], strict=False)) < 0.05


def test_a_warm_launch_finds_the_share_of_its_inputs_the_l2_keeps():
    """vectorAdd's 400 KB of inputs on a 512 KB L2: most are found there; the 200 KB it writes are evicted by
    the 600 KB it touches in part; 8 MB of inputs stream from DRAM nearly in full; a small footprint costs none."""
    k4200 = load_profile("k4200")
    small = dram_traffic(k4200, Footprint(total=600e3, per_wave=150e3, written=200e3, distinct=600e3),
                         (600e3, 0.0), 196, 8)
    assert 150e3 < small.warm < 400e3 and small.cold == pytest.approx(600e3)
    big = dram_traffic(k4200, Footprint(total=8e6, per_wave=2e6, written=4e6, distinct=8e6), (8e6, 0.0), 196, 8)
    assert big.warm > 0.95 * 8e6
    tiny = dram_traffic(k4200, Footprint(total=1e5, per_wave=25e3, written=5e4, distinct=1e5), (1e5, 0.0), 196, 8)
    assert tiny.warm < 1e3


def _sweep(n: int, reps: int):
    launch = LaunchOverrides.from_strings(grid="264", block="512", params=[f"n={n}", f"reps={reps}"])
    report = analyze_file(ROOT / "tests/kernels/sweep.cu",
                          options=AnalysisOptions(gpu="h100", lime=False, overrides=launch))
    return report.kernels[0].time


def test_a_sweep_slightly_larger_than_the_l2_gets_partial_reuse(nvcc_available):
    """28.8 MB swept 40 times against the 26.2 MB an H100 L2 partition holds: part of each repetition's re-reads
    hit, so the DRAM bytes lie well between one pass (no re-read misses) and every repetition from DRAM."""
    t = _sweep(7_200_000, 40)
    one_pass, every = 28.8e6, 40 * 28.8e6
    assert 2 * one_pass < t.detail["dram_bytes"] < 0.9 * every, t.detail["dram_bytes"]
    assert any(a.startswith("cache state: warm") for a in t.assumptions)


def test_a_4x_shorter_repeat_loop_is_about_4x_faster(nvcc_available):
    """The repeat loop carries the re-reads; its trip count scales the work and the traffic alike."""
    ratio = _sweep(7_200_000, 40).us / _sweep(7_200_000, 10).us
    assert 3.5 < ratio < 4.5, ratio


def test_the_time_grows_smoothly_with_a_sweep_across_the_l2_size(nvcc_available):
    """20 MB, 28.8 MB: 1.44x the data; the time grows by less than twice that (the whole-launch judgement made a
    cliff here: 2.5x), and the smaller sweep still pays some DRAM traffic."""
    small, large = _sweep(5_000_000, 40), _sweep(7_200_000, 40)
    assert small.detail["dram_bytes"] > 0
    assert large.us / small.us < 2.0, (small.us, large.us)
