"""Whole calibration and measurement runs on the local GPU: build the harness, run it, sample power, fit.

These are the library's entry points for `kerncast calibrate` and `kerncast measure`; the command-line modules
only turn arguments into the values taken here and print the results, so the GPU drivers and the measurement
procedure live in one place, beside the harness and the fitting code they drive.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kerncast.analysis import gpus
from kerncast.analysis.calibration.analyze import analyze
from kerncast.analysis.calibration.build import build_executable, copy_calibration_sources
from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.calibration.harness import run_harness
from kerncast.analysis.calibration.measure import (
    HarnessSession,
    LaunchSpec,
    Measurement,
    harness_flags,
    kernel_parameter_names,
    measure,
    summarize_run,
    write_harness,
)
from kerncast.analysis.calibration.nvml import GpuInfo, PowerSampler, idle_power_w, probe_gpu
from kerncast.analysis.calibration.profile_writer import PowerReadings, build_profile, write_profile
from kerncast.analysis.calibration.stats import StopRule

#: columns of validation/<gpu>/measurements.csv (see validation/README.md)
CSV_COLUMNS = ("gpu", "kernel", "source_file", "grid", "block", "dynamic_shared_bytes", "time_us", "power_w",
               "repetitions", "date", "driver")
#: seconds the measurement harness may take to answer before it is stopped
HARNESS_TIMEOUT_S = 120.0


def probe(device: int) -> GpuInfo | None:
    """NVML's view of the GPU; None when nvidia-ml-py is absent (the harness then finds out itself)."""
    if importlib.util.find_spec("pynvml") is None:
        return None
    return probe_gpu(device)


def build_measure_harness(source_file: Path, kernel: str, out_dir: Path, compute_capability: tuple[int, int] | None,
                          nvcc: str | None = None) -> Path:
    """Build the measurement harness of one kernel into `out_dir` (no GPU needed); returns the executable.

    A harness takes its launch (grid, block, buffers, scalars) on its command line, so one build serves every
    launch of the kernel: a campaign builds all its kernels in parallel once, then measures launch after launch.
    """
    harness = write_harness(source_file, kernel, out_dir)
    return build_executable(harness, out_dir, compute_capability, nvcc, extra=["-DKERNCAST_MEASURE", "-lineinfo"])


def measure_built(executable: Path, source_file: Path, spec: LaunchSpec, rule: StopRule) -> Measurement:
    """Run a built harness at one launch until stable, sampling NVML power, and return the measurement."""
    source = source_file.read_text(encoding="utf-8", errors="replace")
    flags = harness_flags(spec, kernel_parameter_names(source, spec.kernel))
    session = HarnessSession(executable, flags, timeout_s=HARNESS_TIMEOUT_S)
    try:
        ready = session.read("ready")
        sampler = PowerSampler.open(str(ready.get("pci_bus_id", "")) or None, index=spec.device)
        samples, stable = measure(session, rule, sampler)
    finally:
        session.close()
    return summarize_run(ready, spec, str(source_file), samples, stable, sampler)


def measure_kernel(source_file: Path, spec: LaunchSpec, rule: StopRule, nvcc: str | None = None) -> Measurement:
    """Build the harness for `spec.kernel` of `source_file`, run it until stable and return the measurement."""
    info = probe(spec.device)
    with tempfile.TemporaryDirectory(prefix="kerncast-measure-") as tmp:
        exe = build_measure_harness(source_file, spec.kernel, Path(tmp), info.compute_capability if info else None,
                                    nvcc)
        return measure_built(exe, source_file, spec, rule)


def append_csv(path: Path, m: Measurement, today: dt.date | None = None, extra: dict[str, object] | None = None,
               columns: Sequence[str] = CSV_COLUMNS) -> None:
    """Append one row to a measurements.csv, writing the header when the file is new or empty.

    `extra` adds or overrides fields of the row and `columns` names the file's columns, so a caller with more
    columns (the GPU campaign) writes the standard ones the same way `kerncast measure` does.
    """
    row = m.as_dict()
    row["date"] = (today or dt.date.today()).isoformat()
    row["power_w"] = "" if m.power_w is None else f"{m.power_w:.2f}"
    row["time_us"] = f"{m.time_us:.4f}"
    row.update(extra or {})
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(row)


def choose_base(requested: str | None, info: GpuInfo | None) -> gpus.GpuProfile:
    """The base profile: the requested id, else the shipped profile with the GPU's compute capability whose
    name shares most words with the device name (it supplies what no microbenchmark measures)."""
    if requested:
        return gpus.load_profile(requested)
    if info is None:
        raise CalibrationError("cannot tell which shipped profile to start from: pass --base ID")
    words = set(info.name.lower().split())
    candidates = [p for p in map(gpus.load_profile, gpus.list_profiles())
                  if p.compute_capability == info.compute_capability]
    if not candidates:
        raise CalibrationError(
            f"no shipped profile has compute capability {info.compute_capability[0]}.{info.compute_capability[1]}"
            f"; pass --base ID with the closest of: {', '.join(gpus.list_profiles())}"
        )
    return max(candidates, key=lambda p: (len(words & set(p.name.lower().split())), p.id))


@dataclass(frozen=True)
class CalibrationRequest:
    """What a calibration run is asked to do; every field has the command line's meaning."""

    device: int = 0
    base: str | None = None
    quick: bool = False
    nvcc: str | None = None
    gpu_name: str | None = None
    profile_id: str | None = None
    raw: Path | None = None


def calibrate_gpu(request: CalibrationRequest, progress: Callable[[str], None] | None = None) -> str:
    """Build and run the microbenchmarks, sample idle and sustained power, fit, and return the profile's TOML.

    `progress` receives one line per long step (the library prints nothing itself; the command line sends them
    to stderr so that a profile written to stdout stays clean)."""
    progress = progress or (lambda _message: None)
    info = probe(request.device)
    base = choose_base(request.base, info)
    with tempfile.TemporaryDirectory(prefix="kerncast-calibrate-") as tmp:
        source = copy_calibration_sources(Path(tmp))
        progress(f"building the microbenchmarks with nvcc in {tmp} ...")
        exe = build_executable(source, Path(tmp), info.compute_capability if info else None, request.nvcc)
        pci = info.pci_bus_id if info else None
        idle = idle_power_w(pci, seconds=3.0)
        sampler = PowerSampler.open(pci, index=request.device)
        progress("running the microbenchmarks (this takes a while) ...")
        if sampler:
            sampler.start()
        try:
            raw = run_harness(exe, device=request.device, quick=request.quick)
        finally:
            if sampler:
                sampler.stop()
    if request.raw:
        request.raw.write_text("\n".join(raw.lines()) + "\n", encoding="utf-8")
    power = PowerReadings(idle_w=idle, sustained_w=sampler.peak_window_w() if sampler else None,
                          limit_w=info.power_limit_w if info else None)
    profile = build_profile(analyze(raw), base, power, name=request.gpu_name, pid=request.profile_id)
    return write_profile(profile)
