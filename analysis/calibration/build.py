"""Building the calibration and measurement harnesses into executables with nvcc.

Both harnesses are host programs (C++ with CUDA kernels): nvcc compiles and links them against the static CUDA
runtime, which the PyPI nvcc wheels ship, so no CUDA toolkit installation is needed beyond the `cuda` extra.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.toolchain import ToolchainError, find_toolchain, run_tool

#: the harness source that `kerncast calibrate` builds; it includes the other kernels/*.cu files
CALIBRATE_SOURCE = "calibrate.cu"
BUILD_TIMEOUT_S = 900.0


#: target when the GPU is not known beforehand (no NVML): the oldest architecture CUDA 13 supports; the
#: embedded PTX is compiled by the driver for whatever GPU is present (-arch=native would need one at build time)
PORTABLE_ARCH = "-arch=sm_75"


def arch_flag(compute_capability: tuple[int, int] | None) -> str:
    """`-arch=sm_XY` for a known GPU, else the portable target."""
    if compute_capability is None:
        return PORTABLE_ARCH
    major, minor = compute_capability
    suffix = "a" if (major, minor) in ((9, 0), (10, 0), (10, 3)) else ""
    # the "a" targets enable the architecture-specific instructions (wgmma etc.) a user kernel may contain
    return f"-arch=sm_{major}{minor}{suffix}"


def nvcc_command(nvcc: Path, source: Path, output: Path, arch: str, extra: list[str] | None = None) -> list[str]:
    """The nvcc argument list that compiles and links one harness source into an executable."""
    return [str(nvcc), "-O3", "-std=c++17", arch, "-o", str(output), str(source), *(extra or [])]


def build_executable(
    source: Path,
    out_dir: Path,
    compute_capability: tuple[int, int] | None,
    nvcc_path: str | None = None,
    extra: list[str] | None = None,
    timeout_s: float = BUILD_TIMEOUT_S,
) -> Path:
    """Compile `source` into `out_dir`; raises CalibrationError with nvcc's messages when it fails."""
    try:
        toolchain = find_toolchain(nvcc_path)
    except ToolchainError as exc:
        raise CalibrationError(str(exc)) from exc
    output = out_dir / source.stem
    args = nvcc_command(toolchain.nvcc, source, output, arch_flag(compute_capability), extra)
    run = run_tool(args, timeout_s, cwd=out_dir, temp_dir=out_dir)  # nvcc's tmpxft_* files go with out_dir
    if run.timed_out:
        raise CalibrationError(f"nvcc did not finish building {source.name} within {timeout_s:.0f} s")
    if run.returncode != 0 or not output.is_file():
        tail = "\n".join(run.output.strip().splitlines()[-20:])
        raise CalibrationError(f"nvcc failed to build {source.name} (exit {run.returncode}):\n{tail}")
    return output


def copy_calibration_sources(out_dir: Path) -> Path:
    """Copy the packaged microbenchmark sources into `out_dir`; returns the path of the harness main file."""
    kernels = resources.files("kerncast.analysis.calibration").joinpath("kernels")
    for entry in kernels.iterdir():
        if entry.name.endswith(".cu"):
            with resources.as_file(entry) as src:
                shutil.copyfile(src, out_dir / entry.name)
    return out_dir / CALIBRATE_SOURCE
