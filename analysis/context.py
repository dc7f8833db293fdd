"""The typed contract between the pipeline's stages: the options of one analysis and one kernel's context.

Every stage is a function of a `KernelContext`: it reads the typed results of the stages before it and
writes its own typed result (and its part of the `KernelReport`). This module holds the types only, so that
the stage modules can name them without importing the pipeline that runs them (no import cycle); the
result types themselves live beside the model that computes them and are named here for type checking.
"""

from __future__ import annotations

import math
from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, NamedTuple

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import KernelDataflow
from kerncast.analysis.launch import LaunchOverrides, Sourced
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.ptx.model import Function, Module
from kerncast.analysis.report import KernelReport

if TYPE_CHECKING:
    from kerncast.analysis.compile import KernelResources
    from kerncast.analysis.gpus import GpuProfile
    from kerncast.analysis.memory.analysis import MemoryAnalysis
    from kerncast.analysis.power.stage import PowerInputs
    from kerncast.analysis.timing.estimate import KernelGraphs

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
    #: the power model whose answer is the kernel's power: "auto" (the event model on GPUs without a measured
    #: power dataset, else the statistical one), "statistical" or "events"; both are always in the JSON
    power_model: str = "auto"
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: LIME weights in power explanations (exact contributions are always there); the server adds them lazily
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


@dataclass(slots=True)
class KernelContext:
    """What the stages know about one kernel while it is analysed. A stage's user-facing result (launch,
    occupancy, time, power, energy) goes into `report`, the one place later stages read it from; the context
    holds only what the report does not show (ptxas's raw numbers, the memory analysis, the power inputs)."""

    module: Module
    function: Function
    report: KernelReport
    options: AnalysisOptions
    cuda_source: str | None
    main_file: str | None
    cfg: Cfg
    loops: LoopForest
    #: ptxas running in the background; see `resources_stage`
    ptxas: Future[PtxasResult] | None = None
    gpu: GpuProfile | None = None
    #: loop header block -> trip count per thread, with its source
    trip_counts: dict[int, Sourced] = field(default_factory=dict)
    memory: MemoryAnalysis | None = None
    #: the power stage's features and per-event energy, waiting for the file's batched power prediction
    power_inputs: PowerInputs | None = None
    #: what the time prediction assumes beyond the launch and the trip counts (e.g. no register limit)
    time_assumptions: list[str] = field(default_factory=list)
    #: the dependence DAGs and instruction classes every time prediction of the kernel reads, built by its first
    #: (`timing.stages.time_graphs`) and shared by the rest (assumed loops' bounds, gains, the trace model)
    time_graphs: KernelGraphs | None = None
    #: the analysed file's path: `#include`d `.cu` files are found beside it
    source_path: str | None = None
    #: (text, path) of the file the kernel is launched from when it is not the analysed file: a fragment's
    #: kernels are launched from the file that #includes it (`includes.find_includers`)
    launch_source: tuple[str, str] | None = None
    #: the kernel's dataflow facts (reaching definitions, symbolic values, induction variables), each computed
    #: on first use and shared: trip counts (launch stage) and addresses and branches (memory stage) query it
    dataflow: KernelDataflow = field(init=False)

    def __post_init__(self) -> None:
        self.dataflow = KernelDataflow(self.function, self.cfg, self.loops)


def reported_here(ctx: KernelContext) -> bool:
    """Whether this file's analysis reports the kernel's findings: not for a kernel defined in a file that this
    one includes (it has no line here), which that file's own analysis reports on its own lines."""
    return ctx.report.line is not None or ctx.cuda_source is None
