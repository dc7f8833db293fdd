"""From harness output to a written GPU profile, with synthetic harness output (no GPU needed)."""

from __future__ import annotations

import datetime as dt
import json
import math
import resource
import sys

import numpy as np
import pytest
from kerncast.analysis.calibration.analyze import analyze, peak_warps
from kerncast.analysis.calibration.errors import CalibrationError, NoGpuError
from kerncast.analysis.calibration.harness import check_run, parse_output, run_harness
from kerncast.analysis.calibration.profile_writer import PowerReadings, build_profile, profile_id, write_profile
from kerncast.analysis.gpus import latency_rows, load_profile
from kerncast.analysis.timing.atomics import gpu_rates

DEVICE = {
    "kind": "device", "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:19:00.0", "major": 9, "minor": 0,
    "sm_count": 132, "warp_size": 32, "max_threads_per_sm": 2048, "max_threads_per_block": 1024,
    "max_blocks_per_sm": 32, "regs_per_sm": 65536, "regs_per_block": 65536, "shared_per_sm": 233472,
    "shared_per_block": 49152, "shared_per_block_optin": 232448, "l2_bytes": 52428800,
    "global_bytes": 85045231616, "bus_width_bits": 5120, "clock_khz": 1980000, "memory_clock_khz": 2619000,
    "driver_version": 12080, "runtime_version": 13000,
}
MEASURED_ROWS = {
    "addf": 4.1, "subf": 4.0, "mulf": 4.0, "adds": 4.0, "subs": 4.0, "mul": 4.2, "and": 4.0, "logic": 4.0,
    "fma": 4.1, "mads": 4.3, "divf": 520.0, "divs": 70.0, "sqrt": 210.0, "sfu": 18.0, "mov": 0.1, "cvt": 6.0,
    "setp": 10.0, "shfl": 28.0, "mma": 33.0, "atom": 600.0, "sync": 20.0, "shared": 29.0, "param": 40.0,
}


#: the synthetic GPU's same-address atomic rate (updates per clock) and cycles per further same-address lane
ATOMIC_RATE, LANE_REPLAY = 0.72, 190.0


def _global_latency(threads: float) -> float:
    if threads < 50000:
        return 480 + 0.005 * threads
    if threads < 300000:
        return 550 + 0.0008 * threads
    return 700 + 0.00003 * threads


def synthetic_output(seed: int = 7) -> str:
    """Harness output a GPU with known curves would print, with a little noise."""
    rng = np.random.default_rng(seed)
    lines = [DEVICE, {"kind": "clock", "sm_mhz": 1755.0}]
    lines += [{"kind": "latency", "row": r, "cycles": c} for r, c in MEASURED_ROWS.items()]
    for row, peak in (("addf", 125.0), ("sfu", 15.6), ("fma", 120.0)):
        for ilp in (1, 2, 3):
            for w in (1, 2, 4, 8, 16, 24, 32, 48, 64):
                tp = peak * ilp / 3 * min(1.0, w / (12 / ilp)) * (1 + rng.normal(0, 0.005))
                lines.append({"kind": "throughput", "row": row, "ilp": ilp, "warps_per_sm": w,
                              "per_cycle_per_sm": tp})
    for t in np.unique(np.geomspace(32, 2203648, 48).astype(int) // 32 * 32):
        lines.append({"kind": "global_latency", "threads": int(t), "blocks": max(1, int(t) // 256),
                      "block": min(256, int(t)), "cycles": _global_latency(t) + rng.normal(0, 2)})
    for space, a, b, c in (("global", 2.6e6, 1.02, 2.0e-5), ("shared", 2.0e7, 1.0, 2.5e-6)):
        for req in np.geomspace(1, 2e6, 30):
            mbs = a * (b - math.exp(-c * req)) * (1 + rng.normal(0, 0.01))
            threads = req * 32
            nbytes = threads * 4
            lines.append({"kind": "memory_throughput", "space": space, "threads": threads, "loads_per_thread": 1,
                          "requests": req, "bytes": nbytes, "time_us": nbytes / mbs})
    for t in np.geomspace(32, 2**24, 30):
        lines.append({"kind": "launch", "threads": t, "blocks": t / 256, "block": 256,
                      "time_us": 2.1 + 3e-7 * t + rng.normal(0, 0.02)})
    # atomics: one word takes ATOMIC_RATE updates per clock however many warps queue on it (the fewest warps
    # fall short of it); a warp's instruction takes 6 cycles plus LANE_REPLAY per further same-address lane
    for warps, short in ((1056, 0.8), (4224, 1.0), (8448, 1.0)):
        updates = warps * 256
        lines.append({"kind": "atomic_same_address", "warps": warps, "updates": updates,
                      "time_us": updates / (ATOMIC_RATE * short * 1755.0) * (1 + rng.normal(0, 0.005))})
    for lanes in (1, 2, 4, 8, 16, 32):
        cycles = 6.0 + LANE_REPLAY * (lanes - 1)
        lines.append({"kind": "atomic_lanes", "lanes_per_address": lanes, "warps": 132, "instructions_per_warp": 512,
                      "time_us": 512 * cycles / 1755.0 * (1 + rng.normal(0, 0.005))})
    lines.append({"kind": "done"})
    return "compiling...\n" + "\n".join(json.dumps(x) for x in lines) + "\n"


@pytest.fixture(scope="module")
def calibration():
    return analyze(parse_output(synthetic_output()))


def test_peak_warps_is_the_fewest_warps_near_the_best() -> None:
    assert peak_warps([1, 2, 4, 8, 16, 32], [10, 20, 40, 78, 80, 79]) == (80.0, 8.0)
    assert peak_warps([32, 1, 16], [5, 1, 5]) == (5.0, 16.0)
    with pytest.raises(ValueError):
        peak_warps([], [])


def test_analysis_recovers_the_synthetic_gpu(calibration) -> None:
    assert calibration.latency["divf"] == 520.0
    row = calibration.throughput["addf"]
    assert row.ilp == (1, 2, 3)
    assert row.tp[2] == pytest.approx(125.0, rel=0.02)
    assert row.peak_warps[2] == 4.0  # ILP 3 saturates at 12 / 3 warps
    assert calibration.global_latency.model.evaluate(100000.0) == pytest.approx(_global_latency(100000.0), abs=10)
    assert calibration.global_latency.quality.r2 > 0.98
    throughput = calibration.global_throughput.model
    assert throughput.a * throughput.b == pytest.approx(2.652e6, rel=0.03)
    assert calibration.launch_overhead.model.intercept == pytest.approx(2.1, abs=0.05)
    assert calibration.launch_overhead.model.slope == pytest.approx(3e-7, rel=0.05)
    # 20e6 MB/s = 5e6 4-byte loads per microsecond, / (1755 MHz x 132 SMs)
    assert calibration.shared_loads_per_cycle_per_sm == pytest.approx(2.0e7 / 4 / 1755 / 132, rel=0.05)


def test_written_profile_loads_back_with_measured_sections(calibration, tmp_path) -> None:
    base = load_profile("h100")
    power = PowerReadings(idle_w=68.5, sustained_w=450.0, limit_w=700.0)
    profile = build_profile(calibration, base, power, when=dt.date(2025, 1, 2))
    path = tmp_path / "mine.toml"
    path.write_text(write_profile(profile), encoding="utf-8")
    loaded = load_profile(path)
    assert loaded.id == "h100-80gb-hbm3"
    assert loaded.arch == "Hopper"
    assert loaded.latency_basis == "ptx-thesis"
    assert set(loaded.latency) == set(latency_rows())
    assert loaded.latency["divf"] == 520.0
    assert loaded.latency["mov"] == 1.0  # floored, and the source says so
    assert "floor" in loaded.source_of("latency.mov")
    assert loaded.latency["misc"] == base.latency["misc"]
    assert not loaded.is_calibrated("latency.misc")
    assert loaded.units["SP"] == 125
    assert loaded.is_calibrated("units.SP")
    assert loaded.mem_bandwidth_gbs == pytest.approx(3352.3, abs=0.1)
    assert loaded.idle_w == 68.5 and loaded.tdp_w == 700.0
    assert loaded.is_calibrated("power") and loaded.is_calibrated("global_latency")
    n_points = len(parse_output(synthetic_output()).of("global_latency"))
    assert "R2 = 0.99" in loaded.source_of("global_latency")
    assert f"n = {n_points}" in loaded.source_of("global_latency")
    assert loaded.global_latency(100000.0) == pytest.approx(_global_latency(100000.0), abs=10)
    assert loaded.throughput["addf"]["peak_warps"] == [16.0, 8.0, 4.0]  # saturation at 12, 6, 4 warps
    assert "450.0 W" in loaded.source_of("power")
    summary = loaded.calibration_summary()
    for section in ("latency", "throughput", "global_latency", "global_throughput", "shared_throughput",
                    "launch_overhead", "limits"):
        assert loaded.is_calibrated(section), section
    assert summary["throughput"]


def test_the_atomic_rates_are_fitted_and_written_as_measured(calibration, tmp_path) -> None:
    """The same-address rate is the best launch's (the L2 serialises; more warps cannot go faster), the lane
    replay the slope over lanes per address; both land in the profile's [atomics] section, marked measured,
    and the time model takes them over the data file's estimates. A run without the atomics records leaves
    the section unmeasured and empty."""
    assert calibration.atomics["same_address_per_clock"] == pytest.approx(ATOMIC_RATE, rel=0.02)
    assert calibration.atomics["lane_replay_cycles"] == pytest.approx(LANE_REPLAY, rel=0.02)
    assert calibration.atomic_lanes is not None and calibration.atomic_lanes.quality.r2 > 0.99
    path = tmp_path / "mine.toml"
    path.write_text(write_profile(build_profile(calibration, load_profile("h100"), PowerReadings())),
                    encoding="utf-8")
    loaded = load_profile(path)
    assert loaded.atomics == calibration.atomics
    assert loaded.is_calibrated("atomics") and "R2 = " in loaded.source_of("atomics.lane_replay_cycles")
    rates = gpu_rates(loaded)
    assert (rates.per_clock, rates.lane_cycles) == (calibration.atomics["same_address_per_clock"],
                                                   calibration.atomics["lane_replay_cycles"])
    kept = [line for line in synthetic_output().splitlines() if '"atomic_' not in line]
    without = build_profile(analyze(parse_output("\n".join(kept))), load_profile("h100"), PowerReadings())
    assert without.atomics == {} and not without.is_calibrated("atomics")


def test_without_power_readings_the_base_power_is_kept_as_the_base_marks_it(calibration) -> None:
    base = load_profile("h100")
    profile = build_profile(calibration, base, PowerReadings())
    assert profile.tdp_w == base.tdp_w
    assert profile.is_calibrated("power.idle_w") == base.is_calibrated("power.idle_w")
    assert "from the h100 profile" in profile.source_of("power.idle_w")


def test_the_tensor_rates_carry_over_from_the_base(calibration) -> None:
    base = load_profile("rtx4090")
    profile = build_profile(calibration, base, PowerReadings())
    assert profile.tensor == base.tensor and profile.tensor["f16_f32"] == 512.0
    assert "from the rtx4090 profile" in profile.source_of("tensor")
    assert "half the FP16-accumulate rate" in profile.source_of("tensor.e4m3_f32")


def test_profile_id_from_device_name() -> None:
    assert profile_id("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"
    assert profile_id("NVIDIA GeForce RTX 4090") == "rtx-4090"
    assert profile_id("!!!") == "gpu"


def test_harness_exit_status_maps_to_errors() -> None:
    no_driver = parse_output('{"kind":"error","where":"cudaGetDeviceCount","code":35,'
                             '"message":"CUDA driver version is insufficient for CUDA runtime version"}\n')
    with pytest.raises(NoGpuError, match="no NVIDIA GPU/driver found: CUDA driver version is insufficient"):
        check_run(2, no_driver, "")
    failed = parse_output('{"kind":"device"}\n{"kind":"error","where":"cudaMalloc","message":"out of memory"}\n')
    with pytest.raises(CalibrationError, match="cudaMalloc: out of memory"):
        check_run(3, failed, "")
    with pytest.raises(CalibrationError, match="no 'done' record"):
        check_run(0, parse_output('{"kind":"device"}\n'), "")
    check_run(0, parse_output('{"kind":"done"}\n'), "")


def test_harness_runs_without_the_compile_address_space_limit(tmp_path) -> None:
    """The harness is a GPU program: the CUDA driver reserves address space for all of the GPU's and the host's
    memory at context creation, and under the compiles' RLIMIT_AS its first CUDA call failed with "out of
    memory" (read by Kerncast as "no NVIDIA GPU/driver found"). A stand-in harness reports the limit it got."""
    fake = tmp_path / "kerncast_calibrate"
    fake.write_text(f"#!{sys.executable}\nimport json, resource\n"
                    "print(json.dumps({'kind': 'limit', 'as': resource.getrlimit(resource.RLIMIT_AS)[0]}))\n"
                    "print(json.dumps({'kind': 'done'}))\n", encoding="utf-8")
    fake.chmod(0o755)
    got = run_harness(fake).of("limit")[0]["as"]
    assert got == resource.getrlimit(resource.RLIMIT_AS)[0]


def test_analysis_reports_missing_records() -> None:
    with pytest.raises(CalibrationError, match="no 'device' record"):
        analyze(parse_output('{"kind":"done"}\n'))
