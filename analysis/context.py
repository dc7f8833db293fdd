"""The typed contract between the pipeline's stages: one kernel's context.

Every stage is a function of a `KernelContext`: it reads the typed results of the stages before it and
writes its own typed result (and its part of the `KernelReport`). This module holds the types only, so that
the stage modules can name them without importing the pipeline that runs them (no import cycle); the
result types themselves live beside the model that computes them and are named here for type checking.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import KernelDataflow
from kerncast.analysis.finding import Finding
from kerncast.analysis.gpus import GpuProfile
from kerncast.analysis.launch import Sourced
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.options import AnalysisOptions, PtxasResult
from kerncast.analysis.power.inputs import PowerInputs
from kerncast.analysis.ptx.model import Function, Module
from kerncast.analysis.report import KernelReport
from kerncast.analysis.source_model import FileScans
from kerncast.analysis.timing.estimate import KernelGraphs


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
    #: (`stages.time.time_graphs`) and shared by the rest (assumed loops' bounds, gains, the trace model)
    time_graphs: KernelGraphs | None = None
    #: the analysed file's path: `#include`d `.cu` files are found beside it
    source_path: str | None = None
    #: (text, path) of the file the kernel is launched from when it is not the analysed file: a fragment's
    #: kernels are launched from the file that #includes it (`includes.find_includers`)
    launch_source: tuple[str, str] | None = None
    #: the source files' scans for the launch inference, shared by the kernels of one analysis (`FileScans`)
    scans: FileScans = field(default_factory=FileScans)
    #: the kernel's dataflow facts (reaching definitions, symbolic values, induction variables), each computed
    #: on first use and shared: trip counts (launch stage) and addresses and branches (memory stage) query it
    dataflow: KernelDataflow = field(init=False)
    #: `findings.restrict.unrestricted` of the kernel, in a 1-tuple once worked out: the missing-restrict rule
    #: and its gain both read it, and it depends only on the kernel, its name and the source
    unrestricted: tuple[object] | None = None

    def __post_init__(self) -> None:
        self.dataflow = KernelDataflow(self.function, self.cfg, self.loops)


def add_findings(ctx: KernelContext, rule: Callable[[KernelContext], Finding | list[Finding] | None]) -> None:
    """Run a rule's check on a kernel this file reports (`reported_here`) and add what it found, one finding, a
    list or none: the one place a rule's pipeline stage spells the included-kernel guard and the adding."""
    if not reported_here(ctx):
        return
    found = rule(ctx)
    if found is not None:
        ctx.report.findings.extend(found if isinstance(found, list) else [found])


def reported_here(ctx: KernelContext) -> bool:
    """Whether this file's analysis reports the kernel's findings: not for a kernel defined in a file that this
    one includes (it has no line here), which that file's own analysis reports on its own lines."""
    return ctx.report.line is not None or ctx.cuda_source is None
