"""`kerncast measure` and `kerncast calibrate` without a GPU: harness generation, builds, and clean failures."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kerncast.analysis.calibration import nvml
from kerncast.analysis.calibration.build import arch_flag, build_executable, copy_calibration_sources
from kerncast.analysis.calibration.errors import NoGpuError
from kerncast.analysis.calibration.measure import (
    LaunchSpec,
    Measurement,
    argument_flags,
    generate_harness,
    harness_flags,
    kernel_parameter_names,
    parse_dims,
    write_harness,
)
from kerncast.analysis.calibration.runs import CSV_COLUMNS, append_csv
from kerncast.analysis.calibration.stats import SampleSummary
from kerncast.analysis.toolchain import ToolchainError, find_toolchain
from kerncast.server.cli import build_parser

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _nvcc_or_skip() -> None:
    try:
        find_toolchain()
    except ToolchainError as exc:
        pytest.skip(f"nvcc is not available here: {exc}")


def test_parse_dims() -> None:
    assert parse_dims("256") == (256, 1, 1)
    assert parse_dims("16, 16") == (16, 16, 1)
    assert parse_dims("2,3,4") == (2, 3, 4)
    for bad in ("", "0", "1,2,3,4", "a", "-1"):
        with pytest.raises(ValueError):
            parse_dims(bad)


def test_parameter_names_from_the_source() -> None:
    source = (EXAMPLES / "saxpy.cu").read_text()
    assert kernel_parameter_names(source, "saxpy") == ["n", "a", "x", "y"]
    assert kernel_parameter_names(source, "advanceParticles") == ["p", "n", "dt"]
    tricky = """
    // __global__ void fake(int nope)
    template <typename T, int B>
    __global__ void __launch_bounds__(256) scale(T *__restrict__ out, const T *in, int n,
                                                 float k = 2.0f, int tile[4]) { }
    __global__ void empty(void) {}
    """
    assert kernel_parameter_names(tricky, "scale<float, 128>") == ["out", "in", "n", "k", "tile"]
    assert kernel_parameter_names(tricky, "empty") == []
    with pytest.raises(ValueError, match="no __global__ function named 'fake'"):
        kernel_parameter_names(tricky, "fake")


def test_params_map_to_positions() -> None:
    names = ["n", "a", "x", "y"]
    assert argument_flags(names, {"a": "2.5", "n": "1024"}) == ["--arg", "1=2.5", "--arg", "0=1024"]
    assert argument_flags(names, {"3": "7"}) == ["--arg", "3=7"]
    with pytest.raises(ValueError, match="no parameter 'z'.*n, a, x, y"):
        argument_flags(names, {"z": "1"})
    spec = LaunchSpec("saxpy", (4, 1, 1), (256, 1, 1), 0, 4096, {"n": "1000"})
    assert harness_flags(spec, names) == [
        "--grid", "4,1,1", "--block", "256,1,1", "--smem", "0", "--device", "0", "--bytes", "4096",
        "--arg", "0=1000",
    ]


def test_generated_harness_renames_main_and_passes_the_kernel(tmp_path) -> None:
    text = generate_harness(EXAMPLES / "saxpy.cu", "scale<float>")
    assert "#define main kerncast_user_main\n" in text
    assert f'#include "{(EXAMPLES / "saxpy.cu").resolve()}"' in text
    assert "#undef main" in text
    assert "kc_measure::run(argc, argv, &(scale<float>))" in text
    path = write_harness(EXAMPLES / "saxpy.cu", "saxpy", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kc_common.cu", "kerncast_measure.cu",
                                                          "measure_harness.cu"]
    assert path.read_text() == generate_harness(EXAMPLES / "saxpy.cu", "saxpy")


def test_arch_flags() -> None:
    assert arch_flag((8, 0)) == "-arch=sm_80"
    assert arch_flag((9, 0)) == "-arch=sm_90a"
    assert arch_flag(None) == "-arch=sm_75"


@pytest.mark.nvcc
def test_measure_harness_builds_and_fails_cleanly_without_a_gpu(tmp_path) -> None:
    _nvcc_or_skip()
    harness = write_harness(EXAMPLES / "saxpy.cu", "saxpy", tmp_path)
    exe = build_executable(harness, tmp_path, (8, 0), extra=["-DKERNCAST_MEASURE"])
    assert exe.is_file()
    run = subprocess.run([str(exe), "--grid", "4", "--block", "256"], input="run 3\nquit\n",
                         capture_output=True, text=True, timeout=60)
    if run.returncode == 0:
        assert '"kind":"times"' in run.stdout  # a GPU is present: the protocol works end to end
    else:
        assert run.returncode == 2, run.stdout + run.stderr
        assert '"kind":"error"' in run.stdout


@pytest.mark.nvcc
def test_calibration_harness_builds(tmp_path) -> None:
    _nvcc_or_skip()
    exe = build_executable(copy_calibration_sources(tmp_path), tmp_path, (9, 0))
    assert exe.is_file() and exe.stat().st_size > 0


def test_nvml_absent_means_no_gpu_and_no_power(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError
    with pytest.raises(NoGpuError, match="^no NVIDIA GPU/driver found: the nvidia-ml-py package"):
        nvml.probe_gpu()
    assert nvml.PowerSampler.open() is None
    assert nvml.idle_power_w(None, seconds=0.01) is None


class _Board:
    """A stand-in for the pynvml module of one GPU: a board drawing `watts` now, whose power reading still
    reports `stale_w`, the one-second mean of what ran before (as NVML does on Ampere and newer GPUs), and an
    energy counter in millijoules unless `counter` is False."""

    class NVMLError(Exception):
        pass

    def __init__(self, watts: float, stale_w: float, counter: bool) -> None:
        self.watts, self.stale_w, self.t0 = watts, stale_w, time.monotonic()
        if counter:
            self.nvmlDeviceGetTotalEnergyConsumption = self._energy_mj

    def _energy_mj(self, handle: object) -> int:
        return int(self.watts * (time.monotonic() - self.t0) * 1000.0)

    def nvmlDeviceGetPowerUsage(self, handle: object) -> int:
        return int(self.stale_w * 1000)

    def nvmlShutdown(self) -> None:
        pass


@pytest.mark.parametrize(("counter", "method", "watts"), [(True, "energy-counter", 150.0),
                                                          (False, "sampled-power", 300.0)])
def test_run_power_comes_from_the_energy_counter_not_the_one_second_mean(counter, method, watts) -> None:
    board = _Board(150.0, stale_w=300.0, counter=counter)
    sampler = nvml.PowerSampler(board, handle=object(), interval_s=0.005)
    with sampler:
        time.sleep(0.2)
    assert sampler.method == method
    assert sampler.mean_w() == pytest.approx(watts, rel=0.05)
    assert sampler.sample_count > 0


def _cli(*argv: str) -> subprocess.CompletedProcess:
    kerncast = shutil.which("kerncast", path=str(Path(sys.executable).parent))
    assert kerncast, "the kerncast console script is not installed next to this Python"
    return subprocess.run([kerncast, *argv], capture_output=True, text=True, timeout=300)


def _has_gpu() -> bool:
    try:
        nvml.probe_gpu()
    except NoGpuError:
        return False
    return True


@pytest.mark.parametrize("argv", [
    ("measure", str(EXAMPLES / "saxpy.cu"), "--kernel", "saxpy", "--grid", "4", "--block", "256"),
    ("calibrate", "--out", "unused.toml", "--base", "h100"),
])
def test_commands_fail_with_one_line_without_a_gpu(argv, tmp_path) -> None:
    if _has_gpu():
        pytest.skip("a GPU is present, so the no-GPU path cannot be exercised")
    done = _cli(*argv)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith(f"kerncast {argv[0]}: no NVIDIA GPU/driver found: ")
    assert "Traceback" not in done.stderr
    assert not Path("unused.toml").exists()


def test_measure_reports_an_unknown_parameter_without_building() -> None:
    done = _cli("measure", str(EXAMPLES / "saxpy.cu"), "--kernel", "saxpy", "--grid", "1", "--block", "32",
                "--param", "bogus=1")
    assert done.returncode == 1
    assert "no parameter 'bogus'" in done.stderr


def test_cli_registers_both_commands() -> None:
    args = build_parser("measure").parse_args(["measure", "k.cu", "--kernel", "k", "--grid", "1", "--block", "32",
                              "--param", "n=3", "--param", "a=2"])
    assert args.param == ["n=3", "a=2"] and args.format == "text"
    argv = ["calibrate", "--out", "x.toml", "--gpu-name", "My GPU", "--base", "h100"]
    args = build_parser("calibrate").parse_args(argv)
    assert isinstance(args, argparse.Namespace) and args.out == Path("x.toml") and args.base == "h100"


def test_measurements_csv_rows(tmp_path) -> None:
    spec = LaunchSpec(kernel="saxpy", grid=(4, 1, 1), block=(256, 1, 1), dynamic_shared_bytes=0)
    timing = SampleSummary(n=5000, median=3.25, mean=3.26, stdev=0.05, robust_cv=0.01)
    m = Measurement(gpu="NVIDIA H100 80GB HBM3", driver="12080", source_file="examples/saxpy.cu", spec=spec,
                    timing=timing, stable=True, power_w=None, power_samples=0, params=[])
    path = tmp_path / "measurements.csv"
    append_csv(path, m, dt.date(2025, 3, 1))
    append_csv(path, m, dt.date(2025, 3, 2))
    rows = list(csv.DictReader(path.open()))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 2
    assert rows[1]["date"] == "2025-03-02"
    assert rows[0]["grid"] == "4x1x1" and rows[0]["time_us"] == "3.2500" and rows[0]["power_w"] == ""
