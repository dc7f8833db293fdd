"""The compile target follows the GPU profile unless `arch` is set or the project's build names one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.targets import (
    arch_for_gpu,
    choose_arch,
    local_gpu_profile,
    profile_for_device,
    resolve_target,
    supported_archs,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "vector_add.cu"


@pytest.mark.parametrize(("gpu", "arch"), [("h100", "sm_90"), ("a100", "sm_80"), ("l4", "sm_89"),
                                          ("rtx4090", "sm_89"), ("t4", "sm_75")])
def test_profile_gives_its_architecture(nvcc_available, gpu, arch):
    target = resolve_target(None, [], gpu, None)
    assert (target.arch, target.source, target.note) == (arch, "GPU profile", None)


def test_gpu_older_than_nvcc_supports_gets_the_oldest_with_a_note(nvcc_available):
    oldest = min(supported_archs(nvcc_available))
    assert oldest >= 50  # nvcc 12 dropped Kepler, 13 dropped Maxwell to Volta
    target = resolve_target(None, [], "k20", None)
    assert target.arch == f"sm_{oldest}" and "compute capability 3.5" in target.note


def test_oldest_supported_rule_without_nvcc():
    assert arch_for_gpu((7, 0), (75, 80, 90), "v100").arch == "sm_75"
    assert arch_for_gpu((9, 0), (75, 80, 90), "h100") == arch_for_gpu((9, 0), (), "h100")


def test_setting_wins_over_build_and_profile():
    assert resolve_target("sm_86", ["sm_80"], "h100", None).arch == "sm_86"
    assert resolve_target(None, ["compute_80", "sm_90"], "h100", None).arch == "sm_90"
    assert resolve_target(None, ["sm_80", "sm_86"], "h100", None).arch == "sm_86"  # newest when not listed
    assert choose_arch(["native"], (9, 0)) is None


def test_analysis_report_target_follows_gpu(nvcc_available):
    report = analyze_file(EXAMPLE, options=AnalysisOptions(gpu="h100"))
    assert report.ok and report.arch == "sm_90"
    assert report.kernels and report.kernels[0].registers


def test_cli_gpu_h100_reports_target_sm_90(nvcc_available):
    proc = subprocess.run([sys.executable, "-m", "kerncast.server.cli", "analyze", "--gpu", "h100", str(EXAMPLE)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith("GPU h100, target sm_90, " + nvcc_available.version)


class FakeNvml:
    """Stands in for the `pynvml` module: one device with the given name, or an NVML that cannot start."""

    def __init__(self, name: str | bytes | None) -> None:
        self.name = name
        self.shut = False

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        if self.name is None:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetName(self, handle: int) -> str | bytes:  # noqa: N802
        return self.name

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shut = True


@pytest.mark.parametrize(("name", "profile"), [
    ("NVIDIA H100 80GB HBM3", "h100"), (b"NVIDIA A100-SXM4-40GB", "a100"), ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("NVIDIA L4", "l4"), ("Tesla T4", "t4"), ("Tesla V100-SXM2-16GB", "v100"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA H100 PCIe", "h100pcie"), ("NVIDIA H200", "h200"), ("NVIDIA GeForce RTX 3080", "rtx3080"),
    ("NVIDIA GeForce GTX 1050", "gtx1050"), ("NVIDIA B200", None),
])
def test_local_gpu_is_offered_as_the_profile(name, profile):
    nvml = FakeNvml(name)
    assert local_gpu_profile(nvml) == profile and nvml.shut


def test_no_nvml_means_no_local_gpu():
    assert local_gpu_profile(FakeNvml(None)) is None
    assert profile_for_device("Tesla T4", ["t4", "l4"]) == "t4"
