"""The `gpu-profile-error` finding: the analysis's GPU profile is loaded once per file, and a bad profile becomes a
finding rather than an error."""

from __future__ import annotations

from kerncast.analysis.finding import Finding
from kerncast.analysis.gpus.profile import GpuProfile, ProfileError, load_profile
from kerncast.analysis.rules import Code


def load_gpu(gpu: str) -> tuple[GpuProfile | None, Finding | None]:
    """The GPU profile, or None and a file-level error when it cannot be loaded (unknown id, broken file).

    The pipeline calls this once per file and hands the profile to every kernel's context.
    """
    try:
        return load_profile(gpu), None
    except ProfileError as exc:
        return None, Finding(Code.GPU_PROFILE_ERROR, "error", 1, 1, 1, 1,
                             f"GPU profile: {exc}; the kernels are analysed without a time prediction")
