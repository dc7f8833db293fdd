"""`kerncast calibrate`: measure the local NVIDIA GPU with the thesis microbenchmarks and write its profile.

Needs a GPU, its driver and nvcc. Without a GPU the command prints one line saying so and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

from kerncast.analysis import gpus
from kerncast.analysis.calibration.analyze import analyze
from kerncast.analysis.calibration.build import build_executable, copy_calibration_sources
from kerncast.analysis.calibration.errors import CalibrationError, NoGpuError
from kerncast.analysis.calibration.harness import run_harness
from kerncast.analysis.calibration.nvml import GpuInfo, PowerSampler, idle_power_w, probe_gpu
from kerncast.analysis.calibration.profile_writer import PowerReadings, build_profile, write_profile

EXIT_NO_GPU = 2
EXIT_FAILED = 1


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


def choose_base(requested: str | None, info: GpuInfo | None) -> gpus.GpuProfile:
    """The base profile: the requested id, else the shipped profile with the GPU's compute capability whose
    name shares most words with the device name."""
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


def _probe(device: int) -> GpuInfo | None:
    """NVML's view of the GPU; None when nvidia-ml-py is absent (the harness then finds out itself)."""
    if importlib.util.find_spec("pynvml") is None:
        return None
    return probe_gpu(device)


def calibrate(args: argparse.Namespace) -> str:
    """Build and run the harness, fit, and return the profile's TOML text."""
    info = _probe(args.device)
    base = choose_base(args.base, info)
    with tempfile.TemporaryDirectory(prefix="kerncast-calibrate-") as tmp:
        source = copy_calibration_sources(Path(tmp))
        print(f"building the microbenchmarks with nvcc in {tmp} ...", file=sys.stderr)
        exe = build_executable(source, Path(tmp), info.compute_capability if info else None, args.nvcc)
        pci = info.pci_bus_id if info else None
        idle = idle_power_w(pci, seconds=3.0)
        sampler = PowerSampler.open(pci, index=args.device)
        print("running the microbenchmarks (this takes a while) ...", file=sys.stderr)
        if sampler:
            sampler.start()
        try:
            raw = run_harness(exe, device=args.device, quick=args.quick)
        finally:
            if sampler:
                sampler.stop()
    if args.raw:
        args.raw.write_text("\n".join(raw.lines()) + "\n", encoding="utf-8")
    power = PowerReadings(idle_w=idle, sustained_w=sampler.peak_window_w() if sampler else None,
                          limit_w=info.power_limit_w if info else None)
    profile = build_profile(analyze(raw), base, power, name=args.gpu_name, pid=args.profile_id)
    return write_profile(profile)


def run(args: argparse.Namespace) -> int:
    """Entry point; returns 0, 1 (calibration failed) or 2 (no GPU)."""
    try:
        text = calibrate(args)
    except NoGpuError as exc:
        print(f"kerncast calibrate: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    except (CalibrationError, gpus.ProfileError) as exc:
        print(f"kerncast calibrate: {exc}", file=sys.stderr)
        return EXIT_FAILED
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0
