"""`kerncast calibrate`: measure the local NVIDIA GPU with the thesis microbenchmarks and write its profile.

Needs a GPU, its driver and nvcc. Without a GPU the command prints one line saying so and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kerncast.analysis import gpus
from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.calibration.runs import CalibrationRequest, calibrate_gpu
from kerncast.server.gpu_command import run_on_gpu


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `kerncast calibrate`."""
    parser.add_argument("--out", required=True, type=Path, help="profile file to write (TOML)")
    parser.add_argument("--gpu-name", help="name to store in the profile (default: the driver's device name)")
    parser.add_argument("--id", dest="profile_id", help="profile id (default: derived from the name)")
    parser.add_argument("--base", help="shipped profile id supplying values no benchmark measures "
                                       "(default: the shipped profile of the same compute capability)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    parser.add_argument("--quick", action="store_true", help="fewer points per sweep (a smoke test, minutes)")
    parser.add_argument("--raw", type=Path, help="also save the raw microbenchmark records (JSON lines)")
    parser.add_argument("--nvcc", help="nvcc to use (file, bin folder or toolkit root)")


def calibrate(args: argparse.Namespace) -> str:
    """Run the calibration the arguments ask for and return the profile's TOML text."""
    return calibrate_gpu(CalibrationRequest(device=args.device, base=args.base, quick=args.quick, nvcc=args.nvcc,
                                            gpu_name=args.gpu_name, profile_id=args.profile_id, raw=args.raw),
                         progress=lambda message: print(message, file=sys.stderr))


def run(args: argparse.Namespace) -> int:
    """Entry point; returns 0, 1 (calibration failed) or 2 (no GPU)."""
    text = run_on_gpu("calibrate", lambda: calibrate(args), (CalibrationError, gpus.ProfileError))
    if isinstance(text, int):
        return text
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0
