"""The launch's cost beside the kernel's work: the GPU's launch latency and the host time a short kernel exposes."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.constants import timing_constants
from kerncast.analysis.timing.launch_cost import block_dispatch_us, device_launch_us, exposed_host_us, launch_cost

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_a_short_kernel_waits_for_the_whole_host_launch_and_a_long_one_hides_it():
    assert exposed_host_us(2.76, 0.5) == pytest.approx(2.76)
    assert exposed_host_us(2.76, 2.76) == pytest.approx(2.76)
    # between one and two host times the host's lead grows: the exposed part shrinks linearly ...
    assert exposed_host_us(2.76, 4.14) == pytest.approx(1.38)
    # ... and the time with it never falls as the kernel grows
    times = [k + exposed_host_us(2.76, k) for k in (0.0, 1.0, 2.76, 3.5, 4.5, 5.52, 6.0, 50.0)]
    assert times == sorted(times)
    assert exposed_host_us(2.76, 5.52) == 0.0 and exposed_host_us(2.76, 100.0) == 0.0


def test_modern_gpus_pay_their_device_latency_and_thesis_gpus_keep_their_intercept():
    h100, k20 = load_profile("h100"), load_profile("k20")
    listed = timing_constants()["kerncast"]["launch"]["device_us"]
    assert device_launch_us(h100) == pytest.approx(float(listed["9.0"]))
    assert device_launch_us(k20) is None
    short = launch_cost(h100, 0.2)
    assert short.fixed_us == pytest.approx(float(listed["9.0"]) + 2.76)
    assert launch_cost(h100, 500.0).host_us == 0.0
    assert launch_cost(k20, 0.2).fixed_us == pytest.approx(k20.launch_overhead.intercept)


def test_a_block_smaller_than_the_swept_one_costs_the_dispatch_of_a_swept_block():
    """The launch-overhead line was swept with blocks of `sweep_block_threads` threads: its cost per thread is a
    block's dispatch shared over those threads. The same threads in blocks of 32 are eight times the blocks, and
    each is charged a swept block's dispatch; blocks at least that large keep the line's cost per thread."""
    h100 = load_profile("h100")
    swept = int(timing_constants()["kerncast"]["launch"]["sweep_block_threads"])
    assert swept == 256
    threads = 1 << 26
    per_thread = block_dispatch_us(h100, threads // 256, 256)
    assert per_thread == pytest.approx(threads * h100.launch_overhead.slope)
    assert block_dispatch_us(h100, threads // 1024, 1024) == pytest.approx(per_thread)
    assert block_dispatch_us(h100, threads // 32, 32) == pytest.approx(8 * per_thread)
    assert block_dispatch_us(h100, threads // 64, 64) == pytest.approx(4 * per_thread)


def test_a_small_launch_on_an_h100_is_predicted_at_the_event_timed_launch_cost(nvcc_available):
    small = LaunchOverrides.from_strings(grid="196", block="256", params=["n=50000"])
    report = analyze_file(EXAMPLES / "vector_add.cu", options=AnalysisOptions(gpu="h100", overrides=small))
    t = report.kernels[0].time
    assert t is not None
    # the GPU's launch latency plus the host's launch call: above 4 us for a kernel of a fraction of one
    assert t.us > 1.26 + 2.76
    assert any("host's 2.76 us launch call" in a for a in t.assumptions)
    # the kernel's own duration on the GPU (what a profiler's kernel row shows) leaves the host's part out
    assert t.detail["kerncast_host_launch_us"] == pytest.approx(2.76)
    assert t.detail["kerncast_kernel_duration_us"] == pytest.approx(t.us - 2.76)
    k20 = analyze_file(EXAMPLES / "vector_add.cu", options=AnalysisOptions(gpu="k20", overrides=small))
    assert k20.kernels[0].time.detail["kerncast_launch_us"] == pytest.approx(1.4489)
