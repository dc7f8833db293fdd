"""`kerncast measure`: run one kernel on the local NVIDIA GPU; print its median time and average power.

This is the ground truth the predictions are compared with. It needs a GPU, its driver and nvcc; without a
GPU it prints one line saying so and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.calibration.measure import LaunchSpec, Measurement, parse_dims
from kerncast.analysis.calibration.runs import append_csv, measure_kernel
from kerncast.analysis.calibration.stats import StopRule
from kerncast.server.gpu_command import run_on_gpu


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


def run_measurement(args: argparse.Namespace) -> Measurement:
    """Measure the kernel the arguments name."""
    return measure_kernel(args.file, _spec(args), _rule(args), args.nvcc)


def format_text(m: Measurement) -> str:
    """One line per fact, for people."""
    power = f"{m.power_w:.1f} W average board power ({m.power_samples} samples)" if m.power_w is not None \
        else "power not available (NVML cannot read this GPU's power)"
    stable = "" if m.stable else " (not stable: the repetition limit was reached first)"
    spec = m.spec
    grid, block = "x".join(map(str, spec.grid)), "x".join(map(str, spec.block))
    return (f"{spec.kernel} on {m.gpu}, grid {grid}, block {block}, {spec.dynamic_shared_bytes} B dynamic shared\n"
            f"  time:  {m.time_us:.3f} us median over {m.timing.n} launches, "
            f"robust CV {100 * m.timing.robust_cv:.2f} %{stable}\n"
            f"  power: {power}")


def run(args: argparse.Namespace) -> int:
    """Entry point; returns 0, 1 (measurement failed) or 2 (no GPU)."""
    m = run_on_gpu("measure", lambda: run_measurement(args), (CalibrationError, ValueError, OSError))
    if isinstance(m, int):
        return m
    print(json.dumps(m.as_dict(), indent=2) if args.format == "json" else format_text(m))
    if args.append_csv:
        append_csv(args.append_csv, m)
    return 0
