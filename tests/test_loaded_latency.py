"""The DRAM latency under load (timing/loaded_latency.py): a GPU's measured bandwidth against bytes in flight per SM
read as round trips, the latency at which a launch's bytes in flight and its blocks' stay agree, and what that does
to a reduction whose blocks load once and then run a tree of barriers without loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.gpus.profile import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.constants import timing_constants
from kerncast.analysis.timing.loaded_latency import consistent_latency, load_curve, stream_bandwidth_gbs

ROOT = Path(__file__).resolve().parent.parent
SEQUENTIAL = ROOT / "validation" / "ladders" / "v100-double-sum" / "v3_sequential.cu"


@pytest.fixture(scope="module")
def v100_curve():
    curve = load_curve(load_profile("v100"))
    assert curve is not None
    return curve


def test_the_curve_is_the_benchmarks_round_trips(v100_curve):
    """Each point's round trip is its bytes in flight over all SMs divided by the bandwidth they reached, the
    curve interpolates between points, and past the last point the spent bandwidth makes the latency grow with
    the bytes in flight (a queue)."""
    row = timing_constants()["kerncast"]["loaded_latency"]["v100"]
    first = row["threads_per_sm"][0] * row["bytes_per_thread"] * row["sms"] / row["gbs"][0]
    last = row["threads_per_sm"][-1] * row["bytes_per_thread"] * row["sms"] / row["gbs"][-1]
    c = v100_curve
    assert c.latency_ns(0.0) == pytest.approx(first)
    assert c.latency_ns(c.in_flight[-1]) == pytest.approx(last)
    assert 300.0 < first < last < 3000.0  # an idle HBM2 round trip of a few hundred ns, loaded well above
    mid = 0.5 * (c.in_flight[3] + c.in_flight[4])
    assert c.latency_ns(mid) == pytest.approx(0.5 * (c.round_ns[3] + c.round_ns[4]))
    assert c.latency_ns(2.0 * c.in_flight[-1]) == pytest.approx(2.0 * last)
    assert load_curve(load_profile("k20")) is None  # no curve measured: the model keeps its fixed latency


def test_the_fixed_point_agrees_with_the_curve_and_the_stay(v100_curve):
    """A block that does nothing but load holds its bytes for its whole stay: the latency is the benchmark's own
    at every resident block's bytes in flight. A block that then works 1 us without loads holds them for part of
    its stay only, so the latency is lower, and at the answer the curve returns the latency the stay assumed."""
    c = v100_curve
    blocks, nbytes = 8, 2048.0
    alone = consistent_latency(c, lambda lat: lat, blocks, nbytes)
    assert alone == pytest.approx(c.latency_ns(blocks * nbytes), rel=1e-6)
    with_tree = consistent_latency(c, lambda lat: lat + 1000.0, blocks, nbytes)
    assert with_tree < alone
    held = blocks * nbytes * with_tree / (with_tree + 1000.0)
    assert c.latency_ns(held) == pytest.approx(with_tree, rel=1e-6)


def test_the_floor_bandwidth_follows_the_mix_of_reads_and_writes():
    """The measured read-only, half-written and write-only streams at their points, the time per byte linear in
    the written share between them; a GPU with no such measurement keeps its single achievable bandwidth."""
    row = timing_constants()["kerncast"]["loaded_latency"]["v100"]
    v100 = load_profile("v100")
    assert stream_bandwidth_gbs(v100, 0.0) == pytest.approx(row["gbs"][-1])
    assert stream_bandwidth_gbs(v100, 0.5) == pytest.approx(row["read_write_gbs"])
    assert stream_bandwidth_gbs(v100, 1.0) == pytest.approx(row["write_gbs"])
    quarter = 1.0 / (0.5 / row["gbs"][-1] + 0.5 / row["read_write_gbs"])
    assert stream_bandwidth_gbs(v100, 0.25) == pytest.approx(quarter)
    assert stream_bandwidth_gbs(load_profile("k20"), 0.0) is None


def test_a_reduction_that_loads_then_runs_its_tree_stays_below_the_bandwidth(nvcc_available):
    """Harris's sequential-addressing reduction of 2^25 doubles on a V100: each block loads 2 kB and then runs
    eight barrier steps without loads, so its SMs keep too few bytes in flight to draw the DRAM bandwidth. The time
    is above the DRAM floor and the prediction says why."""
    launch = LaunchOverrides.from_strings(grid="131072", block="256", smem=2048, params=["size=33554432"])
    report = analyze_file(SEQUENTIAL, options=AnalysisOptions(gpu="v100", overrides=launch, lime=False))
    est = report.kernels[0].time
    memory_us = est.detail["kerncast_memory_us"]
    assert est.models["kerncast"] > 1.01 * memory_us, (est.models["kerncast"], memory_us)
    assert est.bottleneck.startswith("DRAM latency under load"), est.bottleneck
    assert any(a.startswith("DRAM latency under load") for a in est.assumptions), est.assumptions
