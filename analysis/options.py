"""What a user sets for one analysis (`AnalysisOptions`, with its finding `Thresholds`), and ptxas's answer for
a module (`PtxasResult`): the values the pipeline hands to every stage and model.

They sit below the stages and the models that read them, so that a model can take its thresholds without
importing the stage contract (`context.py`) that names the models' own types.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from kerncast.analysis.compile import KernelResources
from kerncast.analysis.launch import LaunchOverrides

#: Files larger than this are refused with a clear message (the limit is a setting).
DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ThresholdSetting:
    """A threshold's default, the editor setting it is read from and the values that setting accepts.

    One record per threshold, so that the dataclass default, the settings reader and the VS Code manifest
    (checked by a test) take the default, the name and the range from one place.
    """

    default: float
    #: the setting's name under `kerncast.thresholds.`
    name: str
    low: float
    high: float = math.inf
    integer: bool = False


def _threshold(setting: ThresholdSetting) -> Any:
    """A `Thresholds` field whose default is the setting's, and which remembers its setting."""
    return field(default=setting.default, metadata={"setting": setting})


@dataclass(slots=True)
class Thresholds:
    """When a finding is worth a warning. Defaults follow Nsight Compute's own rule thresholds where one exists."""

    uncoalesced_excess_percent: float = _threshold(ThresholdSetting(25.0, "uncoalescedExcessPercent", 0))
    bank_conflict_ways: int = _threshold(ThresholdSetting(2, "bankConflictWays", 1, 32, integer=True))
    energy_hotspot_share: float = _threshold(ThresholdSetting(0.2, "energyHotspotShare", 0, 1))
    low_occupancy: float = _threshold(ThresholdSetting(0.25, "lowOccupancy", 0, 1))

    @classmethod
    def settings(cls) -> tuple[tuple[str, ThresholdSetting], ...]:
        """(field name, setting) of every threshold, in declaration order."""
        return tuple((f.name, f.metadata["setting"]) for f in fields(cls))


#: the power models a user can choose (`AnalysisOptions.power_model`, analysis/power/combine.py)
POWER_MODELS = ("auto", "statistical", "events")


@dataclass(slots=True)
class AnalysisOptions:
    """Everything a user can set for one analysis (CLI flags or editor settings)."""

    gpu: str = "v100"
    #: nvcc target; None follows the project's compile_commands.json, else the GPU profile (h100 -> sm_90)
    arch: str | None = None
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    nvcc_path: str | None = None
    timeout_s: float = 120.0
    #: address space each compiler process (nvcc and its stages, ptxas) may use, in MiB; None: the default share
    #: of the machine (`toolchain.default_compile_memory_mb`)
    compile_memory_mb: int | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    #: launch overrides that apply to every kernel (CLI flags)
    overrides: LaunchOverrides | None = None
    #: per-kernel launch settings from the editor: kernel name -> overrides
    kernel_settings: dict[str, LaunchOverrides] = field(default_factory=dict)
    loops: int | None = None
    #: the time model whose prediction is the kernel's time: "kerncast" (default), "thesis" or "mwp-cwp"
    time_model: str = "kerncast"
    #: the power model whose answer is the kernel's power: "auto" (the event model wherever it answers, on every
    #: GPU: analysis/power/combine.py), "statistical" or "events"; both are always in the JSON
    power_model: str = "auto"
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: the exact (TreeSHAP) contributions of the statistical power model in power explanations; the server
    #: leaves them out of the save path and adds them when a hover asks (they cost about as much as the rest of
    #: the power stage)
    power_explanation: bool = True
    #: LIME weights in power explanations (with the exact contributions); the server adds them lazily
    lime: bool = True
    #: seconds an analysis that can blow up (the memory stage) may spend on one kernel before it stops and
    #: reports what it skipped
    budget_s: float = 2.0
    #: read the project's compile_commands.json (found as clangd finds it, or in `compile_commands_dir`)
    compile_commands: bool = True
    compile_commands_dir: str | None = None
    #: use a full CUDA toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda) before the pip wheels when one is installed
    prefer_system_toolkit: bool = False


class PtxasResult(NamedTuple):
    """ptxas's answer for a module: its numbers per kernel, and why some are missing."""

    #: mangled name -> ptxas's registers, shared memory and spills
    table: dict[str, KernelResources]
    #: the note to show when ptxas did not answer for every kernel (None: it did)
    why_not: str | None = None
    #: ptxas was stopped (timeout, signal, memory limit), which says nothing lasting about the PTX: the kernels
    #: it left without numbers are not kept in the kernel cache, so that the next analysis runs it again
    stopped: bool = False
