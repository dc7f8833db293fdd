"""Per-kernel results kept between analyses, so a save re-analyses only the kernels that changed.

A kernel's report depends on its PTX text, the rest of the module (globals, device functions it may call),
its launch (which, with its PTX, fixes its loops' trip counts), the GPU profile, the settings, and the source
lines its findings point at.
The key hashes exactly those; any change to one of them is a miss. The launch is part of the key because a
`<<<>>>` site in host code can change without the kernel's PTX changing. A miss whose only change is where the
kernel sits (an edit above it moved its lines) is recognised by its moved key and answered with its previous
report shifted to the new lines (`kernel_shift`); any other miss is analysed again.

The cache is a bounded LRU held by a long-lived caller (the language server); one-off runs pass none. Its
counters say what was reused, for tests and benchmarks.

ptxas's numbers (registers, shared memory, spills) are kept apart, keyed by what ptxas reads: the kernel's PTX
and the rest of the module without the `.loc`/`.file` line-table directives and the debug sections. Those
only map instructions to source lines and change on every edit above a kernel, while register allocation never
looks at them. A kernel whose report must be made again (one that moved inside a `.ptx` file, whose lines
are its report's) therefore needs no new ptxas run, and the kernels that do need one are found by a text scan,
so that ptxas starts before the parse. For the same reason power predictions are kept by their feature values
(a moved kernel's features do not change).
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.kernel_shift import shifted
from kerncast.analysis.lru import BoundedLru
from kerncast.analysis.ptx.reuse import FunctionReuse, match_lines, span_end

#: kernels kept; a report is a few tens of KB, so this bounds the cache to a few tens of MB
DEFAULT_MAX_KERNELS = 512


@dataclass(slots=True)
class CacheCounters:
    """What the cache answered: kernel reports reused and computed, ptxas runs and kernels sent to ptxas."""

    hits: int = 0
    misses: int = 0
    #: of the misses, kernels that had only moved: their previous report was shifted, not made again
    shifted: int = 0
    ptxas_runs: int = 0
    ptxas_kernels: int = 0


@dataclass
class KernelCache:
    """A bounded LRU of `KernelReport`s by kernel key (see the module docstring)."""

    max_kernels: int = DEFAULT_MAX_KERNELS
    counters: CacheCounters = field(default_factory=CacheCounters)
    _reports: BoundedLru[str, Any] = field(init=False)
    #: ptxas's numbers per kernel, by the key of the text ptxas reads (see the module docstring)
    _resources: BoundedLru[str, Any] = field(init=False)
    #: per kernel name, its latest report with its moved key, first source line and first PTX line: a kernel
    #: that an edit above it only moved is shifted from it (`kernel_shift`), matched by name as the change
    #: since the last save matches kernels; also the parts of the report known to hold no line, which its
    #: shifted copies share (`kernel_shift.shifted`'s `fixed`)
    _moved: BoundedLru[str, tuple[str, int, int, Any, dict[int, Any]]] = field(init=False)
    #: parsed PTX functions, so that a save parses only the functions whose text changed (ptx/reuse.py)
    functions: FunctionReuse = field(default_factory=FunctionReuse)
    #: per kernel function of the latest analysis (by identity: `functions` hands the same object to the next
    #: analysis while its text is unchanged), the CFG and loops made of it: the launch stage that keys a kernel
    #: needs a context, which holds them, and a kernel found in the cache needs nothing more
    _structures: dict[int, tuple[Any, Any, Any]] = field(default_factory=dict)
    #: per kernel function of the latest analysis (by identity) and file, the lines of the file its instructions
    #: name (the kernel's first line and its cache key read them)
    _body_lines: dict[tuple[int, str | None], tuple[Any, tuple[int, ...]]] = field(default_factory=dict)
    #: power predictions by GPU and feature values (`stages.power.PowerMemo`), made when first needed: the
    #: power runtime is not loaded for files without kernels
    _powers: Any = None
    #: the server analyses two documents at a time in threads that share this cache and its counters
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._reports = BoundedLru(self.max_kernels)
        self._resources = BoundedLru(self.max_kernels)
        self._moved = BoundedLru(self.max_kernels)

    @property
    def powers(self) -> Any:
        """The power predictions kept (a `kerncast.analysis.stages.power.PowerMemo`)."""
        with self._lock:
            if self._powers is None:
                # lazy import: the power runtime, which files without kernels need not load
                from kerncast.analysis.stages.power import PowerMemo

                self._powers = PowerMemo(self.max_kernels)
            return self._powers

    def get(self, key: str) -> Any:
        """The report kept for a kernel key, or None; counted as a hit or a miss."""
        report = self._reports.get(key)
        with self._lock:
            if report is None:
                self.counters.misses += 1
            else:
                self.counters.hits += 1
        return report

    def put(self, key: str, report: Any) -> None:
        self._reports.put(key, report)

    def moved(self, name: str, moved_key: str, line: int, ptx_line: int) -> Any:
        """The report of the kernel `name` when its latest one was made from the same code at other lines (same
        moved key, see `kernel_shift`): that report moved to `line` (the kernel's first source line) and
        `ptx_line` (its first PTX line); else None."""
        kept = self._moved.get(name)
        if kept is None or kept[0] != moved_key:
            return None
        _, old_line, old_ptx_line, report, fixed = kept
        out = shifted(report, line - old_line, ptx_line - old_ptx_line, fixed)
        self._moved.put(name, (moved_key, line, ptx_line, out, fixed))
        with self._lock:
            self.counters.shifted += 1
        return out

    def put_moved(self, name: str, moved_key: str, report: Any, ptx_line: int) -> None:
        """Keep `report` as the latest of kernel `name`, for a later analysis in which it only moved."""
        self._moved.put(name, (moved_key, report.line, ptx_line, report, {}))

    def structure(self, function: Any) -> tuple[Any, Any] | None:
        """The CFG and loops kept for this very function object (`keep_structures`), or for the function the
        parse copied it from with its source lines moved (`FunctionReuse.origin`: the same instructions, which
        is all a CFG is made of; the launch stage, the one stage before the lookup, reads neither), or None."""
        for candidate in (function, self.functions.origin(function)):
            kept = self._structures.get(id(candidate))
            if kept is not None and kept[0] is candidate:
                return kept[1], kept[2]
        return None

    def keep_structures(self, kept: list[tuple[Any, Any, Any]]) -> None:
        """Keep these (function, CFG, loops), those of the latest analysis's kernels, in place of the ones kept
        before (each function is kept with them, so that its id stays its own)."""
        self._structures = {id(function): (function, cfg, loops) for function, cfg, loops in kept}
        self._body_lines = {key: found for key, found in self._body_lines.items() if key[0] in self._structures}

    def body_lines(self, function: Any, file: str | None) -> tuple[int, ...] | None:
        """The lines of `file` kept for this very function object (`put_body_lines`), or None."""
        kept = self._body_lines.get((id(function), file))
        return kept[1] if kept is not None and kept[0] is function else None

    def put_body_lines(self, function: Any, file: str | None, lines: tuple[int, ...]) -> None:
        """Keep the lines of `file` a kernel function's instructions name, until an analysis no longer has it."""
        self._body_lines[(id(function), file)] = (function, lines)

    def resources(self, key: str) -> Any:
        """ptxas's numbers for one kernel by its `ptxas_keys` key, or None."""
        return self._resources.get(key)

    def put_resources(self, key: str, resources: Any) -> None:
        self._resources.put(key, resources)

    def __len__(self) -> int:
        return len(self._reports)


#: a kernel's first line, from the newline before it (`match_lines`)
_ENTRY_RE = re.compile(r"\n[ \t]*(?:\.(?:visible|extern|weak)[ \t]+)*\.entry[ \t]+([A-Za-z_$%][\w$%]*)")
#: a whole `.loc`/`.file` line-table line, with its line end
_LINE_TABLE_RE = re.compile(r"^[ \t]*\.(?:loc|file)\b[^\n]*\n?", re.MULTILINE)


def entry_spans(ptx: str) -> dict[str, tuple[int, int]]:
    """Kernel name -> (first, last) line of its text, found by a scan of the text (no parse)."""
    starts = {m.group(1): line for line, m in match_lines(ptx, _ENTRY_RE)}
    return dict(zip(starts, function_spans(ptx, list(starts.values())), strict=True))


def ptxas_text(text: str) -> str:
    """The text ptxas's register allocation depends on: without the `.loc`/`.file` line-table directives."""
    return _LINE_TABLE_RE.sub("", text)


def ptxas_keys(ptx: str, spans: dict[str, tuple[int, int]], *context: Any) -> dict[str, str]:
    """Per kernel, the key of what ptxas reads for it: its text and the module's other text (the other kernels
    left out, as ptxas is run on the changed kernels only), line tables and debug sections left out, plus the
    `context` (target, toolchain)."""
    lines = ptx.splitlines()
    outside = without_debug_sections(without_lines(ptx, list(spans.values())))
    shared = digest(ptxas_text(outside), *context)
    return {name: digest(shared, ptxas_text("\n".join(lines[first - 1:last])))
            for name, (first, last) in spans.items()}


def function_spans(ptx: str, starts: list[int]) -> list[tuple[int, int]]:
    """For each function's first line (1-based), the (first, last) line of its text up to its closing brace."""
    return line_spans(ptx.splitlines(), starts)


def line_spans(lines: list[str], starts: list[int]) -> list[tuple[int, int]]:
    """`function_spans` of text already split into lines."""
    return [(start, span_end(lines, start)) for start in starts]


def without_lines(ptx: str, spans: list[tuple[int, int]]) -> str:
    """The PTX text with the given (first, last) line spans removed (for ptxas on the changed kernels only).

    Made of the slices between the spans, not line by line: the kernel keys of every analysis cut every kernel
    out of the module this way."""
    lines = ptx.splitlines()
    kept: list[str] = []
    at = 0  # 0-based index of the first line not yet kept or dropped
    for first, last in sorted(spans):
        kept += lines[at:max(at, first - 1)]
        at = max(at, last)
    kept += lines[at:]
    return "\n".join(kept) + "\n"


def without_debug_sections(ptx: str) -> str:
    """The PTX up to its first `.section` (the DWARF strings nvcc appends hold a hash of the whole source
    file, which changes with any edit and says nothing about the kernels)."""
    cut = ptx.find("\n\t.section")
    cut = ptx.find("\n.section") if cut < 0 else cut
    return ptx if cut < 0 else ptx[:cut]


def digest(*parts: Any) -> str:
    """A stable hash of the parts' text forms: a string's own characters (not its `repr`, an escaped copy of
    a whole module's text), marked as a string so that "1" and 1 differ; any other part's `repr`."""
    h = hashlib.sha256()
    for p in parts:
        if type(p) is str:
            h.update(b"\x01")
            h.update(p.encode("utf-8", "surrogatepass"))
        else:
            h.update(repr(p).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()
