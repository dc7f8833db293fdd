"""Headers and toolkit choice: the `cuda` extra's header wheels, the preference for a full CUDA toolkit, and the
report naming the nvcc that compiled the file."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from kerncast.analysis.compile import header_wheel_dirs, system_toolkit_nvcc
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.toolchain import Toolchain
from kerncast.server import hover

PROFILED = Path(__file__).resolve().parent / "ptx_constructs" / "profiled.cu"


def test_profiler_api_header_compiles_with_the_cuda_extra_alone(nvcc_available):
    proc = subprocess.run([sys.executable, "-m", "kerncast.server.cli", "analyze", "--gpu", "a100", str(PROFILED)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kernel profiled_scale" in proc.stdout and "target sm_80" in proc.stdout


def test_report_names_the_compiler(nvcc_available):
    report = analyze_file(PROFILED, options=AnalysisOptions(gpu="a100"))
    where = {"cuda-pathfinder": "pip wheels", "CUDA_HOME": "CUDA toolkit"}.get(nvcc_available.origin,
                                                                               nvcc_available.origin)
    assert report.ok and report.compiler == f"nvcc {nvcc_available.version} ({where}: {nvcc_available.nvcc})"
    text = hover.kernel_markdown(report.kernels[0], report.gpu, report.arch, compiler=report.compiler)
    assert f"_compiled by {report.compiler} for sm_80_" in text


def _fake_tool(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_cuda12_style_header_wheels_are_added(tmp_path: Path):
    nvidia = tmp_path / "lib" / "site-packages" / "nvidia"
    nvcc = nvidia / "cuda_nvcc" / "bin" / "nvcc"
    _fake_tool(nvcc)
    (nvidia / "cuda_nvcc" / "include").mkdir()
    for pkg in ("cuda_profiler_api", "curand"):
        (nvidia / pkg / "include").mkdir(parents=True)
    tc = Toolchain(nvcc=nvcc, ptxas=nvcc, version="12.8", origin="cuda-pathfinder")
    assert header_wheel_dirs(tc) == [nvidia / "cuda_profiler_api" / "include", nvidia / "curand" / "include"]
    system = Toolchain(nvcc=tmp_path / "cuda" / "bin" / "nvcc", ptxas=nvcc, version="12.8", origin="CUDA_HOME")
    assert header_wheel_dirs(system) == []


def test_system_toolkit_is_found_in_cuda_home(tmp_path: Path, monkeypatch):
    _fake_tool(tmp_path / "cuda" / "bin" / "nvcc")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert system_toolkit_nvcc() == str(tmp_path / "cuda" / "bin" / "nvcc")


def test_prefer_system_toolkit_uses_it_or_says_there_is_none(nvcc_available, monkeypatch, tmp_path: Path):
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    system = system_toolkit_nvcc()  # /usr/local/cuda when installed
    report = analyze_file(PROFILED, options=AnalysisOptions(gpu="a100", prefer_system_toolkit=True))
    if system is None:
        assert report.ok and any("no CUDA toolkit in CUDA_HOME" in n for n in report.notes)
        assert report.compiler and str(nvcc_available.nvcc) in report.compiler
    else:
        assert report.compiler and report.compiler.endswith(f"(chosen: {system})"), report.compiler
        assert any(f"installed CUDA toolkit's nvcc {system}" in n for n in report.notes)
    plain = analyze_file(PROFILED, options=AnalysisOptions(gpu="a100"))
    assert plain.compiler and str(nvcc_available.nvcc) in plain.compiler
