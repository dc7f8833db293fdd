"""The baseline of the latency benchmarks: how long a bare `nvcc -ptx` of the same file takes."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from kerncast.analysis.compile import find_toolchain


def nvcc_times(path: Path, arch: str, repeat: int) -> list[float]:
    """Seconds of `repeat` runs of `nvcc -ptx -arch=<arch> <path>`, the PTX written to a removed temp folder."""
    nvcc = find_toolchain().nvcc
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([str(nvcc), "-ptx", f"-arch={arch}", str(path), "-o", str(Path(tmp) / "out.ptx")],
                           check=True, capture_output=True, timeout=300)
            out.append(time.perf_counter() - start)
    return out
