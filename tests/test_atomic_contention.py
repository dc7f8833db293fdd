"""Global atomics many threads aim at few addresses: the kerncast model counts their serialisation.

tests/kernels/atomics.cu (the rule corpus, analysed for an H100 as the rule tests do, so its compilation is
shared) holds the address shapes: one counter for the whole grid (`countAll`, an integer add ptxas aggregates
per warp; `globalMax`, an integer max it reduces per warp; `laneZeroOnly`, lane 0 of every warp after a
shuffle reduction), one float per block (`perBlockSum`: every lane of
a warp on one address, which ptxas cannot combine for a float add), and one element per thread (`ownElement`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from kerncast.analysis.calibration.sass import compile_sass
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing import estimate
from kerncast.analysis.timing.atomics import aggregated_by_compiler, gpu_rates
from kerncast.analysis.timing.pipelined import l2_hit_cycles

KERNELS = Path(__file__).resolve().parent / "kernels"
H100 = AnalysisOptions(gpu="h100", lime=False)
#: the launches of tests/kernels/atomics.cu: n / 256 blocks of 256 threads, n = 2^20
BLOCKS, WARPS_PER_BLOCK = 4096, 8


def _times(report) -> dict:
    return {k.name.split("(")[0]: k.time for k in report.kernels if k.time is not None}


@pytest.fixture(scope="module")
def times(nvcc_available) -> dict:
    return _times(analyze_file(KERNELS / "atomics.cu", options=H100))


@pytest.fixture(scope="module")
def times_without_contention(nvcc_available) -> dict:
    """The same analysis with the atomics' floor left out, to see what it adds."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(estimate, "contention", lambda *args, **kwargs: None)
        return _times(analyze_file(KERNELS / "atomics.cu", options=H100))


def _note(time) -> str:
    return next(a for a in time.assumptions if a.startswith("atomics:"))


def test_one_counter_for_the_grid_serialises_one_update_per_warp(times, times_without_contention):
    """countAll's `atomicAdd(&counter[0], 1u)`: ptxas makes one update per warp, and every warp of the grid
    queues on that one word at the L2's same-address rate."""
    profile = load_profile("h100")
    rate = gpu_rates(profile).per_clock
    floor_us = BLOCKS * WARPS_PER_BLOCK / rate / profile.core_clock_mhz
    for kernel in ("countAll", "globalMax"):
        t = times[kernel]
        assert t.bottleneck == "atomics (one address)", kernel
        assert "one update per warp (the compiler aggregates its lanes)" in _note(t)
        assert _note(t).endswith("it sets the time.")
        assert f"{BLOCKS * WARPS_PER_BLOCK:.4g} updates" in _note(t)
        assert t.us >= floor_us > 2 * times_without_contention[kernel].us
        assert t.range_us[0] <= t.us <= t.range_us[1]
    # one lane of every warp (after a warp reduction by shuffles) on one address: the same queue
    lane_zero = times["laneZeroOnly"]
    assert lane_zero.bottleneck == "atomics (one address)"
    assert f"{BLOCKS * WARPS_PER_BLOCK:.4g} updates (1 same-address lane(s)" in _note(lane_zero)


def test_same_address_lanes_a_compiler_cannot_combine_hold_each_warp(times, times_without_contention):
    """perBlockSum's `atomicAdd(&blockSums[blockIdx.x], in[i])` is a float add: its 32 lanes hit one address
    and are replayed one by one, each waiting the L2 round trip; the SMs run the grid in whole waves of
    resident blocks (8 of 256 threads on an H100), 4 waves of 31 blocks per SM."""
    profile = load_profile("h100")
    t = times["perBlockSum"]
    assert t.bottleneck == "atomics (same-address lanes of a warp)"
    assert "32 same-address lane(s) per warp instruction" in _note(t)
    waves = math.ceil(math.ceil(BLOCKS / profile.sm_count) / 8)
    floor_us = waves * 31 * l2_hit_cycles(profile) / profile.core_clock_mhz
    assert t.us >= floor_us > 2 * times_without_contention["perBlockSum"].us


def test_distinct_per_thread_addresses_are_not_slowed(times, times_without_contention):
    """ownElement's `atomicAdd(&out[i], in[i])`: one update per address, coalesced; its atomic traffic is far
    below what the kernel's other work takes, so the time does not move."""
    t = times["ownElement"]
    assert not t.bottleneck.startswith("atomics")
    assert t.us == pytest.approx(times_without_contention["ownElement"].us)
    assert "1 same-address lane(s) per warp instruction" in _note(t) and "the time is unchanged" in _note(t)


def _atomic(modifiers: tuple[str, ...]) -> SimpleNamespace:
    return SimpleNamespace(opcode="red", modifiers=modifiers)


def test_the_aggregation_rule_follows_what_ptxas_does(nvcc_available):
    """The data file's rule (integer add/min/max/..., an address the same in every lane as the compiler sees
    it) against the SASS ptxas writes for sm_90: a vote and a population count or warp reduction before the
    atomic in countAll and globalMax, none in perBlockSum (a float add) or ownElement (a per-thread address)."""
    sass = compile_sass(KERNELS / "atomics.cu", "sm_90")
    combined = {name: any(re.fullmatch(r"VOTEU?\..*|U?POPC|REDUX(\..*)?", i.opcode) for i in fn.instructions)
                for name, fn in sass.items()}
    by_kernel = {k: next(v for n, v in combined.items() if k in n) for k in
                 ("countAll", "globalMax", "perBlockSum", "ownElement")}
    assert by_kernel == {"countAll": True, "globalMax": True, "perBlockSum": False, "ownElement": False}
    cc = (9, 0)
    assert aggregated_by_compiler(_atomic(("global", "add", "u32")), False, cc)
    assert aggregated_by_compiler(_atomic(("global", "max", "s32")), False, cc)
    assert not aggregated_by_compiler(_atomic(("global", "add", "f32")), False, cc)
    assert not aggregated_by_compiler(_atomic(("global", "add", "u32")), True, cc)
    assert not aggregated_by_compiler(_atomic(("global", "add", "u32")), False, (2, 0))


def test_measured_rates_replace_the_estimates():
    """A profile whose [atomics] section `kerncast calibrate` wrote: its rates, said to be measured; without
    one, the data file's estimates and the architecture's L2 round trip."""
    h100 = load_profile("h100")
    estimated = gpu_rates(h100)
    assert estimated.measured == () and estimated.lane_cycles == l2_hit_cycles(h100)
    assert estimated.per_clock_low < estimated.per_clock
    measured = gpu_rates(dataclasses.replace(h100, atomics={"same_address_per_clock": 0.7,
                                                            "lane_replay_cycles": 180.0}))
    assert (measured.per_clock, measured.per_clock_low, measured.per_clock_high) == (0.7, 0.7, 0.7)
    assert measured.lane_cycles == measured.lane_cycles_low == 180.0
    assert set(measured.measured) == {"same-address rate", "same-address lane replay"}


def test_a_block_leaders_atomic_counts_one_warp_per_block(nvcc_available):
    """The vector-sum ladder's atomic version: thread 0 of each of 2^21 blocks adds its block's sum to one
    counter. Only the first of the sampled warps reaches the atomic, so one update per block is counted (the
    sampled share of the warps only widens the range), and the counter's 2^21 updates stay below the time the
    kernel takes to read its 4 GiB."""
    path = KERNELS.parent.parent / "validation" / "ladders" / "h100-vector-sum" / "k2_atomic.cu"
    t = _times(analyze_file(path, options=H100))["vsum_atomic"]
    assert f"{2**21:.4g} updates" in _note(t) and "the time is unchanged" in _note(t)
    assert any("one warp per block is counted" in a for a in t.assumptions)
    assert not t.bottleneck.startswith("atomics")
