"""Which architecture nvcc compiles for: the `arch` setting, else the build's own flags, else the GPU profile.

Register counts, occupancy and the instructions nvcc may use depend on the target, so a prediction for an H100
made from sm_75 code would be for the wrong machine. A GPU older than the oldest architecture the installed
nvcc still supports (CUDA 13 dropped everything below sm_75) is compiled for that oldest one, and the report
says so: the code is then not what that GPU would run.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from kerncast.analysis.gpus import ProfileError, list_profiles, load_profile
from kerncast.analysis.toolchain import Toolchain, ToolchainError, find_toolchain, run_tool

#: Oldest real architecture of each CUDA major release, for when `nvcc --list-gpu-arch` cannot be asked
#: (CUDA 12 release notes: Kepler dropped, sm_50 oldest; CUDA 13 release notes: sm_75 oldest).
_OLDEST_BY_MAJOR = {11: 35, 12: 50, 13: 75}
_ARCH_RE = re.compile(r"^(?:sm|compute)_(\d+)([a-z]?)$")
_LIST_RE = re.compile(r"compute_(\d+)")
_cache: dict[str, tuple[int, ...]] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Target:
    """The chosen architecture, where it came from, and a note when it is not the GPU's own."""

    arch: str
    source: str  # "setting", "compile_commands.json", "GPU profile"
    note: str | None = None


def arch_number(arch: str) -> int | None:
    """80 for `sm_80`/`compute_80`/`sm_90a`; None for anything else."""
    m = _ARCH_RE.match(arch.strip())
    return int(m.group(1)) if m else None


def supported_archs(toolchain: Toolchain, timeout_s: float = 30) -> tuple[int, ...]:
    """The architectures this nvcc compiles for (`nvcc --list-gpu-arch`), oldest first; asked once per nvcc."""
    key = str(toolchain.nvcc)
    with _lock:
        if key in _cache:
            return _cache[key]
    found: tuple[int, ...] = ()
    try:
        run = run_tool([key, "--list-gpu-arch"], timeout_s)
        if run.returncode == 0 and not run.timed_out:
            found = tuple(sorted({int(n) for n in _LIST_RE.findall(run.output)}))
    except Exception:  # noqa: BLE001 - an nvcc that cannot list its targets still compiles; use the table
        found = ()
    if not found:
        major = _major(toolchain.version)
        oldest = _OLDEST_BY_MAJOR.get(major or 0, 75)
        found = (oldest,)
    with _lock:
        _cache[key] = found
    return found


def _major(version: str) -> int | None:
    m = re.match(r"(\d+)", version or "")
    return int(m.group(1)) if m else None


def arch_for_gpu(compute_capability: tuple[int, int], supported: tuple[int, ...], gpu: str) -> Target:
    """`sm_XY` for compute capability X.Y, or the oldest supported architecture (with a note) when older."""
    wanted = compute_capability[0] * 10 + compute_capability[1]
    oldest = min(supported) if supported else wanted
    if wanted < oldest:
        note = (f"compiled for sm_{oldest}, the oldest architecture this nvcc supports: the {gpu} profile is "
                f"compute capability {compute_capability[0]}.{compute_capability[1]}, so registers and "
                f"instructions are those of sm_{oldest} code")
        return Target(f"sm_{oldest}", "GPU profile", note)
    return Target(f"sm_{wanted}", "GPU profile")


def choose_arch(build_archs: list[str], compute_capability: tuple[int, int] | None) -> str | None:
    """Of the architectures a build compiles for (`-arch`/`-gencode`), the GPU's own if listed, else the newest."""
    usable = [a for a in build_archs if arch_number(a) is not None]
    if not usable:
        return None
    if compute_capability is not None:
        wanted = compute_capability[0] * 10 + compute_capability[1]
        for a in usable:
            if arch_number(a) == wanted:
                return _real(a)
    return _real(max(usable, key=lambda a: arch_number(a) or 0))


def _real(arch: str) -> str:
    """`compute_80` -> `sm_80`: ptxas needs a real architecture and nvcc -ptx accepts both."""
    return "sm_" + arch.split("_", 1)[1] if arch.startswith("compute_") else arch


#: The architecture when neither a setting, nor the build, nor a loadable GPU profile says (nvcc 13's oldest).
FALLBACK_ARCH = "sm_75"


def resolve_target(arch_setting: str | None, build_archs: list[str], gpu: str, nvcc_path: str | None) -> Target:
    """The target of one compilation: the `arch` setting, else the build's architectures (the GPU's own if
    listed), else the GPU profile's compute capability clamped to what this nvcc supports."""
    if arch_setting:
        return Target(arch_setting, "setting")
    cc = _profile_capability(gpu)
    chosen = choose_arch(build_archs, cc)
    if chosen is not None:
        return Target(chosen, "compile_commands.json")
    if cc is None:
        return Target(FALLBACK_ARCH, "default", f"compiled for {FALLBACK_ARCH}: the GPU profile {gpu!r} could not "
                                                "be loaded to choose its architecture")
    try:
        supported = supported_archs(find_toolchain(nvcc_path))
    except ToolchainError:
        supported = ()
    return arch_for_gpu(cc, supported, gpu)


def _profile_capability(gpu: str) -> tuple[int, int] | None:
    try:
        return tuple(load_profile(gpu).compute_capability)  # type: ignore[return-value]
    except ProfileError:
        return None


_NAME_TOKEN_RE = re.compile(r"[a-z]+\d*|\d+")
_local_gpu: list[str | None] = []


def profile_for_device(device_name: str, profile_ids: list[str]) -> str | None:
    """The profile id a device name denotes (`NVIDIA H100 80GB HBM3` -> h100, `NVIDIA GeForce RTX 4090` ->
    rtx4090), matching whole name tokens or two adjacent ones, so that `L40S` is not taken for `l4`."""
    tokens = _NAME_TOKEN_RE.findall(device_name.lower())
    words = set(tokens) | {a + b for a, b in zip(tokens, tokens[1:], strict=False)}
    for pid in sorted(profile_ids, key=len, reverse=True):
        if pid.lower() in words:
            return pid
    return None


def local_gpu_profile(nvml: object | None = None) -> str | None:
    """The profile of the first NVIDIA GPU of this machine, through NVML (the optional `gpu` extra), or None.

    The real NVML is asked once per process; `nvml` stands in for the `pynvml` module (tests). No NVML, no
    driver, no GPU, or a GPU without a profile all give None.
    """
    if nvml is not None:
        return _ask_nvml(nvml)
    if not _local_gpu:
        try:
            # lazy import: NVML is the optional `gpu` extra, asked only when no profile was chosen
            import pynvml  # type: ignore[import-not-found]
        except ImportError:
            _local_gpu.append(None)
        else:
            _local_gpu.append(_ask_nvml(pynvml))
    return _local_gpu[0]


def _ask_nvml(nvml: Any) -> str | None:
    try:
        nvml.nvmlInit()
        try:
            if nvml.nvmlDeviceGetCount() < 1:
                return None
            name = nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(0))
        finally:
            nvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML failing (no driver, no GPU) means "no local GPU", never an error
        return None
    name = name.decode() if isinstance(name, bytes) else str(name)
    return profile_for_device(name, list(list_profiles()))


def default_gpu(fallback: str) -> str:
    """The local GPU's profile when NVML finds one, else `fallback` (the library's default profile)."""
    return local_gpu_profile() or fallback
