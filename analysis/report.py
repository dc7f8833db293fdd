"""KernelReport and Finding: the only things the server and the CLI consume.

Everything the models and analyses conclude ends up here as plain data with a stable JSON form, so that a CLI
run and an editor session show the same numbers for the same input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from kerncast.analysis.launch import GUESSED_SOURCES
from kerncast.analysis.rules import is_code

if TYPE_CHECKING:  # the stages' result types; they import this module, so only their names are used here
    from kerncast.analysis.compile import KernelResources
    from kerncast.analysis.launch import Launch
    from kerncast.analysis.occupancy import Occupancy
    from kerncast.analysis.power.energy import EnergyEstimate
    from kerncast.analysis.power.model import PowerPrediction
    from kerncast.analysis.timing.estimate import TimeEstimate

SEVERITIES = ("error", "warning", "information", "hint")


class JsonReportable(Protocol):
    """A model result (time, power, energy, launch) that knows its own JSON form."""

    def to_json(self) -> dict[str, Any]: ...


class FieldsJson:
    """Mixin for a dataclass whose JSON form is its own fields, by name and in declaration order, up to and
    including `JSON_LAST` (every field when it is empty): the fields after it serve the analyses only.

    Values are taken as they are (no copy, no conversion), so such a class's JSON keys, order and value types
    follow its field list and cannot drift from it.
    """

    __slots__ = ()
    JSON_LAST: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            out[f.name] = getattr(self, f.name)
            if f.name == self.JSON_LAST:
                break
        return out


@lru_cache(maxsize=4)
def source_lines(text: str) -> tuple[str, ...]:
    """The lines of a source text, split once per text: every kernel of a file places its findings on the
    same text."""
    return tuple(text.splitlines())


def source_line_range(lines: Sequence[str], line: int, column: int = 0) -> tuple[int, int]:
    """(start, end) columns, 1-based and end exclusive, of a finding on `line` of the analysed source: from
    `column` (or the first non-blank character when 0) to the end of the line's text."""
    if 1 <= line <= len(lines):
        text = lines[line - 1]
        start = column if column > 0 else len(text) - len(text.lstrip()) + 1
        end = len(text.rstrip()) + 1
        return start, max(end, start + 1)
    col = max(column, 1)
    return col, col + 1


def char_column(text: str, byte_column: int) -> int:
    """The 1-based column, in characters of `text`, of a 1-based column counted in UTF-8 bytes.

    nvcc's `.loc` columns count bytes of the source line, while findings count characters (as their end
    columns and every edit do): on a line with non-ASCII text before the access the two differ. A byte inside
    a character gives that character's column; a column past the end keeps its excess.
    """
    if byte_column <= 1 or text.isascii():
        return byte_column
    data = text.encode("utf-8", "surrogatepass")
    head = data[: byte_column - 1].decode("utf-8", "ignore")
    return len(head) + 1 + max(0, byte_column - 1 - len(data))


def line_range(source: str | None, line: int, byte_column: int = 0) -> tuple[int, int]:
    """(start, end) columns of a finding on `line` of the analysed source text: from an instruction's `.loc`
    column (counted in bytes; 0 for the line's first non-blank character) to the end of the line's text, as
    `source_line_range`; (1, 1) without a source text. The one place the findings turn a line into a range."""
    if not source:
        return 1, 1
    lines = source_lines(source)
    if byte_column > 0 and 1 <= line <= len(lines):
        byte_column = char_column(lines[line - 1], byte_column)
    return source_line_range(lines, line, byte_column)


@dataclass(frozen=True, slots=True)
class TextEdit(FieldsJson):
    """Replace the text from (line, column) to (end_line, end_column) of the analysed file by `new_text`.

    1-based lines and columns, end exclusive, as findings use them; an empty range inserts. Edits are built
    by the rule that found the problem (clangd's fix-its), so the server only converts them.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


@dataclass(slots=True)
class Fix:
    """A fix attached to a finding: its kind (a `rules.FixKind`), a title, the concrete edits and their
    applicability (`safe`, `unsafe`, or `snippet` for a template that is offered as text, never as a fix).

    `data` keeps facts a reader may want (the array, the padding chosen); the edits alone say what changes.
    A fix without edits is advice only and no code action is offered for it.
    """

    kind: str
    description: str
    data: dict[str, Any] = field(default_factory=dict)
    edits: list[TextEdit] = field(default_factory=list)
    applicability: str = "safe"

    def to_json(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "description": self.description, "data": self.data,
                "applicability": self.applicability, "edits": [e.to_json() for e in self.edits]}


@dataclass(slots=True)
class Related(FieldsJson):
    """A location that explains a finding (e.g. the shared array declaration behind a bank conflict)."""

    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    file: str | None = None


def line_related(source: str | None, line: int, message: str) -> Related:
    """A related location spanning the text of one line of the analysed source (see `line_range`)."""
    start, end = line_range(source, line)
    return Related(line, start, line, end, message)


@dataclass(slots=True)
class Finding:
    """One finding at a source range (1-based lines and columns, end exclusive) of the analysed file, or of
    `file` when it is set: the header or included `.cu` that defines the kernel it is about (its fix's edits
    and related locations without a file of their own are that file's too)."""

    code: str
    severity: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    detail: dict[str, Any] = field(default_factory=dict)
    fix: Fix | None = None
    related: list[Related] = field(default_factory=list)
    kernel: str | None = None
    #: further fixes besides `fix` (e.g. a snippet beside a rewrite); see `fixes()`
    extra_fixes: list[Fix] = field(default_factory=list)
    file: str | None = None

    def fixes(self) -> list[Fix]:
        """Every fix of the finding, the first (`fix`) first."""
        return ([self.fix] if self.fix is not None else []) + list(self.extra_fixes)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")
        if not is_code(self.code):
            raise ValueError(f"finding code {self.code!r} has no rule in kerncast.analysis.rules")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": str(self.code), "severity": self.severity, "line": self.line, "column": self.column,
            "end_line": self.end_line, "end_column": self.end_column, "message": self.message,
        }
        if self.detail:
            out["detail"] = self.detail
        if self.fix is not None:
            out["fix"] = self.fix.to_json()
        if self.extra_fixes:
            out["fixes"] = [f.to_json() for f in self.fixes()]
        if self.related:
            out["related"] = [r.to_json() for r in self.related]
        if self.kernel is not None:
            out["kernel"] = self.kernel
        if self.file is not None:
            out["file"] = self.file
        return out


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
