"""KernelReport and FileReport: the only things the server and the CLI consume.

Everything the models and analyses conclude ends up here as plain data with a stable JSON form, so that a CLI
run and an editor session show the same numbers for the same input. The findings they hold are
`finding.Finding`s; the model results they hold are each model's own type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.compile import KernelResources
from kerncast.analysis.finding import Finding
from kerncast.analysis.json_form import JsonReportable
from kerncast.analysis.launch import GUESSED_SOURCES, Launch
from kerncast.analysis.occupancy import Occupancy
from kerncast.analysis.places import Places
from kerncast.analysis.power.results import EnergyEstimate, PowerPrediction
from kerncast.analysis.timing.estimate import TimeEstimate


@dataclass(slots=True)
class LoopInfo:
    """A natural loop of a kernel, by source lines, with its nesting depth and (if known) trip count."""

    header_line: int | None
    lines: tuple[int, int] | None
    depth: int
    blocks: int
    trip_count: int | None = None
    trip_source: str | None = None
    trip_detail: str | None = None  # how the count was found (or why it is not known)

    def to_json(self) -> dict[str, Any]:
        return {"header_line": self.header_line, "lines": list(self.lines) if self.lines else None,
                "depth": self.depth, "blocks": self.blocks, "trip_count": self.trip_count,
                "trip_source": self.trip_source, "trip_detail": self.trip_detail}


@dataclass(slots=True)
class KernelReport:
    """Everything Kerncast knows about one kernel.

    `file` is None when the kernel is defined in the analysed file; for a kernel defined in a file the analysed
    one `#include`s (a header, another `.cu`) it is that file's path, and the kernel's line, its loops' lines,
    its per-line energy and its findings are lines of that file. Its launch is still read from the analysed
    file, which launches it."""

    name: str
    mangled: str
    line: int | None
    #: what ptxas reported for the kernel (registers, spills, stack); None when ptxas did not run
    resources: KernelResources | None = None
    #: static shared memory per block: ptxas's figure, else counted from the PTX declarations
    shared_bytes: int | None = None
    instruction_mix: dict[str, int] = field(default_factory=dict)
    instruction_count: int = 0
    loops: list[LoopInfo] = field(default_factory=list)
    launch: Launch | None = None
    occupancy: Occupancy | None = None
    time: TimeEstimate | None = None
    power: PowerPrediction | None = None
    energy: EnergyEstimate | None = None
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    file: str | None = None

    def assumed_loops(self) -> int:
        """Source loops whose trip count is a guess (the default or an unfilled `loops=N?` placeholder), counted
        once per source line: nvcc's unrolled copy and remainder of one loop are the user's one loop."""
        guessed = [lp for lp in self.loops if lp.trip_source in GUESSED_SOURCES]
        return len({lp.header_line for lp in guessed if lp.header_line is not None}) + \
            sum(1 for lp in guessed if lp.header_line is None)

    @property
    def registers(self) -> int | None:
        """Registers per thread from ptxas; None when unknown."""
        return self.resources.registers if self.resources is not None else None

    def to_json(self) -> dict[str, Any]:
        def opt(x: JsonReportable | None) -> dict[str, Any] | None:
            return x.to_json() if x is not None else None

        res = self.resources
        stores, loads, stack, local = (None, None, None, None) if res is None else (
            res.spill_stores, res.spill_loads, res.stack_bytes, res.local_bytes)
        return {
            "name": self.name, "mangled": self.mangled, "file": self.file, "line": self.line,
            "registers": self.registers, "shared_bytes": self.shared_bytes,
            "spill_stores": stores, "spill_loads": loads, "stack_bytes": stack, "local_bytes": local,
            "instruction_count": self.instruction_count, "instruction_mix": self.instruction_mix,
            "loops": [lp.to_json() for lp in self.loops],
            "launch": opt(self.launch), "occupancy": opt(self.occupancy),
            "time": opt(self.time), "power": opt(self.power), "energy": opt(self.energy),
            "findings": [f.to_json() for f in self.findings], "notes": self.notes,
        }


@dataclass(slots=True)
class FileReport:
    """The analysis of one `.cu` or `.ptx` file: its kernels and the file-level findings (compile errors)."""

    file: str
    gpu: str
    kernels: list[KernelReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    toolkit: str | None = None
    arch: str | None = None
    notes: list[str] = field(default_factory=list)
    compiler: str | None = None  # which nvcc compiled the file: path, where it was found, release
    #: the file that was compiled for it when it does not compile alone (a fragment it #includes)
    includer: str | None = None
    #: kernels defined in a header or `.cu` this file `#include`s and launched from this file: each has its
    #: `file`, and its lines and findings are that file's (see `KernelReport`), so they are kept apart from
    #: `kernels`, whose lines are this file's
    included_kernels: list[KernelReport] = field(default_factory=list)
    #: the GPU profile's display name ("Tesla V100-SXM2-16GB"); None when no profile loaded
    gpu_name: str | None = None
    #: where the kernels, launches and findings are written in the analysed text, once asked for
    #: (`locate.places_of`); not part of the JSON form
    places: Places | None = None

    @property
    def ok(self) -> bool:
        """False when a file-level error (compile error, unreadable input) stopped the analysis."""
        return not any(f.severity == "error" for f in self.findings)

    def all_findings(self) -> list[Finding]:
        """File-level findings followed by every kernel's findings (of `kernels`: findings on this file's lines)."""
        out = list(self.findings)
        for k in self.kernels:
            out.extend(k.findings)
        return out

    def included_by_file(self) -> dict[str, list[KernelReport]]:
        """The kernels of `included_kernels`, by the path of the file that defines them."""
        out: dict[str, list[KernelReport]] = {}
        for k in self.included_kernels:
            out.setdefault(k.file or self.file, []).append(k)
        return out

    def all_kernels(self) -> tuple[KernelReport, ...]:
        """The file's own kernels, then those defined in the files it includes (`included_kernels`): every
        kernel the analysis of this file predicted, which most consumers list alike."""
        return (*self.kernels, *self.included_kernels)

    def kernel(self, name: str) -> KernelReport | None:
        """The kernel of that name or mangled name: the file's own first, then those of the files it includes."""
        for k in self.all_kernels():
            if name in (k.name, k.mangled):
                return k
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file, "gpu": self.gpu, "toolkit": self.toolkit, "arch": self.arch,
            "compiler": self.compiler,
            "kernels": [k.to_json() for k in self.kernels],
            "findings": [f.to_json() for f in self.findings], "notes": self.notes,
            "included_kernels": [k.to_json() for k in self.included_kernels],
        }
