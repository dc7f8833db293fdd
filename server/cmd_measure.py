"""`kerncast measure`: run one kernel on the local NVIDIA GPU; print its median time and average power.

This is the ground truth the predictions are compared with. It needs a GPU, its driver and nvcc; without a
GPU it prints one line saying so and exits with status 2.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

from kerncast.analysis.calibration.build import build_executable
from kerncast.analysis.calibration.errors import CalibrationError, NoGpuError
from kerncast.analysis.calibration.measure import (
    HarnessSession,
    LaunchSpec,
    Measurement,
    harness_flags,
    kernel_parameter_names,
    measure,
    parse_dims,
    summarize_run,
    write_harness,
)
from kerncast.analysis.calibration.nvml import GpuInfo, PowerSampler, probe_gpu
from kerncast.analysis.calibration.stats import StopRule

EXIT_NO_GPU = 2
EXIT_FAILED = 1
#: columns of validation/<gpu>/measurements.csv (see validation/README.md)
CSV_COLUMNS = ("gpu", "kernel", "source_file", "grid", "block", "dynamic_shared_bytes", "time_us", "power_w",
               "repetitions", "date", "driver")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `kerncast measure`."""
    parser.add_argument("file", type=Path, help="the .cu file that defines the kernel")
    parser.add_argument("--kernel", required=True, help="kernel name (with template arguments if any)")
    parser.add_argument("--grid", required=True, help="grid size: X[,Y[,Z]]")
    parser.add_argument("--block", required=True, help="block size: X[,Y[,Z]]")
    parser.add_argument("--smem", type=int, default=0, help="dynamic shared memory per block in bytes")
    parser.add_argument("--bytes", type=int, help="size of each pointer parameter's buffer in bytes "
                                                  "(default: threads launched x element size)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="value of a scalar parameter (repeatable; default: threads launched for "
                             "integers, 1 for floating point)")
    parser.add_argument("--reps", type=int, help="at most this many launches (default: until stable)")
    parser.add_argument("--cv", type=float, default=0.02, help="target robust coefficient of variation")
    parser.add_argument("--min-seconds", type=float, default=1.0, help="repeat for at least this long (power)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--append-csv", type=Path, metavar="CSV",
                        help="also append the measurement as a row of a measurements.csv (header if new)")
    parser.add_argument("--nvcc", help="nvcc to use (file, bin folder or toolkit root)")


def _spec(args: argparse.Namespace) -> LaunchSpec:
    params: dict[str, str] = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--param takes NAME=VALUE, got {item!r}")
        params[name.strip()] = value.strip()
    return LaunchSpec(kernel=args.kernel, grid=parse_dims(args.grid), block=parse_dims(args.block),
                      dynamic_shared_bytes=args.smem, buffer_bytes=args.bytes, params=params, device=args.device)


def _rule(args: argparse.Namespace) -> StopRule:
    if args.reps:
        return StopRule(cv_target=args.cv, min_reps=min(20, args.reps), max_reps=args.reps,
                        min_seconds=args.min_seconds)
    return StopRule(cv_target=args.cv, min_seconds=args.min_seconds)


def _probe(device: int) -> GpuInfo | None:
    if importlib.util.find_spec("pynvml") is None:
        return None
    return probe_gpu(device)


def run_measurement(args: argparse.Namespace) -> Measurement:
    """Build the harness for the kernel, run it until stable and return the measurement."""
    source = args.file.read_text(encoding="utf-8", errors="replace")
    spec = _spec(args)
    names = kernel_parameter_names(source, spec.kernel)
    flags = harness_flags(spec, names)
    info = _probe(args.device)
    with tempfile.TemporaryDirectory(prefix="kerncast-measure-") as tmp:
        harness = write_harness(args.file, spec.kernel, Path(tmp))
        exe = build_executable(harness, Path(tmp), info.compute_capability if info else None, args.nvcc,
                               extra=["-DKERNCAST_MEASURE", "-lineinfo"])
        session = HarnessSession(exe, flags, timeout_s=120.0)
        try:
            ready = session.read("ready")
            sampler = PowerSampler.open(str(ready.get("pci_bus_id", "")) or None, index=args.device)
            samples, stable = measure(session, _rule(args), sampler)
        finally:
            session.close()
    return summarize_run(ready, spec, str(args.file), samples, stable, sampler)


def format_text(m: Measurement) -> str:
    """One line per fact, for people."""
    power = f"{m.power_w:.1f} W average board power ({m.power_samples} samples)" if m.power_w is not None \
        else "power not available (NVML cannot read this GPU's power)"
    stable = "" if m.stable else " (not stable: the repetition limit was reached first)"
    grid, block = "x".join(map(str, m.grid)), "x".join(map(str, m.block))
    return (f"{m.kernel} on {m.gpu}, grid {grid}, block {block}, {m.dynamic_shared_bytes} B dynamic shared\n"
            f"  time:  {m.time_us:.3f} us median over {m.repetitions} launches, "
            f"robust CV {100 * m.robust_cv:.2f} %{stable}\n"
            f"  power: {power}")


def append_csv(path: Path, m: Measurement, today: dt.date | None = None) -> None:
    """Append one row to a measurements.csv, writing the header when the file is new or empty."""
    row = m.as_dict()
    row["date"] = (today or dt.date.today()).isoformat()
    row["power_w"] = "" if m.power_w is None else f"{m.power_w:.2f}"
    row["time_us"] = f"{m.time_us:.4f}"
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(row)


def run(args: argparse.Namespace) -> int:
    """Entry point; returns 0, 1 (measurement failed) or 2 (no GPU)."""
    try:
        m = run_measurement(args)
    except NoGpuError as exc:
        print(f"kerncast measure: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    except (CalibrationError, ValueError, OSError) as exc:
        print(f"kerncast measure: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(m.as_dict(), indent=2) if args.format == "json" else format_text(m))
    if args.append_csv:
        append_csv(args.append_csv, m)
    return 0
