"""The nvcc pipeline: a `.cu` file (or an unsaved editor buffer) to PTX plus per-kernel ptxas resources.

Compile errors never raise: they come back as structured diagnostics on lines of the analysed file, so that
the editor can underline them and the CLI can print them. Only a missing or broken toolchain raises
(`ToolchainError`), because no diagnostic on the user's code could explain it. Results are cached in memory
by a hash of everything that can change them, since the language server recompiles on every save.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kerncast.analysis.compile_hints import legacy_header_text, missing_include, project_header, removed_api
from kerncast.analysis.includes import (
    INCLUDE_RE,
    MAX_INCLUDE_DEPTH,
    header_text,
    includes_of,
    real_path,
    resolve_include,
    walk_headers,
)
from kerncast.analysis.input_files import read_regular_file, read_regular_text
from kerncast.analysis.lru import BoundedLru
from kerncast.analysis.preflight import check_source
from kerncast.analysis.toolchain import (
    DEFAULT_CUDA_ROOTS,
    HOST_COMPILER_HINT,
    Toolchain,
    ToolchainError,
    ToolRun,
    check_define,
    check_include_dir,
    check_memory_mb,
    check_timeout,
    find_toolchain,
    is_shell_safe_path,
    run_tool,
    tool_temp_dir,
)

__all__ = [
    "CompileDiagnostic", "CompileOptions", "CompileResult", "KernelResources", "PtxasError", "SourceContext",
    "Toolchain", "ToolchainError", "compile_cuda", "find_toolchain", "parse_nvcc_output",
    "parse_ptxas_output", "ptxas_resources", "validate_options",
]

_CACHE_SIZE = 32
#: the largest source compile_cuda reads from disk itself (an includer; the pipeline passes the text it read)
MAX_SOURCE_BYTES = 16 << 20


@dataclass
class CompileOptions:
    """How to compile: target architecture, user include dirs and defines, toolchain choice, limits."""

    arch: str = "sm_75"
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)  # "NAME" or "NAME=VALUE"
    nvcc_path: str | None = None
    timeout_s: float = 120
    extra_flags: list[str] = field(default_factory=list)
    #: memory of all the compiles this process runs at once, in MiB (each gets its share as address space);
    #: None: `default_compile_memory_mb()`
    memory_mb: int | None = None


def validate_options(options: CompileOptions) -> list[str]:
    """Why these options must not reach nvcc: one message per rejected define, include dir or timeout.

    Settings and flags are data: a define or path that the compiler's shell would interpret is refused
    here, in the library, so the CLI and the editor refuse the same values.
    """
    problems: list[str] = []
    for define in options.defines:
        try:
            check_define(define)
        except ValueError as exc:
            problems.append(str(exc))
    for directory in options.include_dirs:
        try:
            check_include_dir(directory)
        except ValueError as exc:
            problems.append(str(exc))
    for flag in options.extra_flags:
        if set(flag) & {"$", "`", '"', "\n", "\r", "\0"}:
            problems.append(f"compiler flag {flag[:80]!r} rejected: it contains a shell character")
    try:
        check_timeout(options.timeout_s)
    except ValueError as exc:
        problems.append(str(exc))
    if options.memory_mb is not None:
        try:
            check_memory_mb(options.memory_mb)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


@dataclass
class KernelResources:
    """What ptxas reports for one kernel; None where this ptxas release did not print the field.

    `shared_bytes` is 0 (not None) when the summary line was printed without an smem entry, because ptxas
    omits zero-sized fields. `local_bytes` is the old "lmem" figure or, on newer releases, the cumulative
    stack size; `const_bytes` sums every cmem bank printed for the kernel.
    """

    mangled: str
    registers: int | None = None
    shared_bytes: int | None = None
    stack_bytes: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    local_bytes: int | None = None
    const_bytes: int | None = None
    barriers: int | None = None

    def spill_text(self) -> str:
        """"spills S B stored / L B loaded" when ptxas spilled, else "" (for hovers and the text report)."""
        if not (self.spill_stores or self.spill_loads):
            return ""
        return f"spills {self.spill_stores or 0} B stored / {self.spill_loads or 0} B loaded"


@dataclass
class CompileDiagnostic:
    """One compiler message on the analysed file (1-based line and column)."""

    file: str
    line: int
    column: int
    severity: str  # "error" | "warning"
    message: str
    in_header: bool = False  # attributed from an included header to its #include line
    #: a use of a removed API that compiled with Kerncast's stand-in (a warning now; see compile_hints)
    stood_in: bool = False


@dataclass
class CompileResult:
    """PTX text (None when compilation failed), resources by mangled kernel name, and diagnostics."""

    ok: bool
    ptx: str | None
    resources: dict[str, KernelResources]
    diagnostics: list[CompileDiagnostic]
    toolkit: str
    arch: str
    #: how the file was compiled where Kerncast chose a flag of its own (relocatable device code)
    notes: list[str] = field(default_factory=list)
    #: folders near the file that Kerncast added to the include path for headers nvcc did not find
    nearby_dirs: list[Path] = field(default_factory=list)
    #: the (path, mtime, size) of the user headers the source reaches, through the include path and the nearby
    #: folders alike: a cached result is used only while they are unchanged
    header_stamps: list[tuple[str, int, int]] = field(default_factory=list)


class PtxasError(RuntimeError):
    """ptxas rejected the PTX or did not finish; the message carries its output. `timed_out` is set for every
    failure that says nothing lasting about the PTX (a timeout, a signal, the memory limit): never cached."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


# --------------------------------------------------------------------------------------------------- ptxas

_ENTRY_RE = re.compile(r"Compiling entry function\s+'([^']+)'")
_PROPS_RE = re.compile(r"Function properties for\s+'?([^'\s:]+)'?")
_INT_FIELDS: dict[str, re.Pattern[str]] = {
    "registers": re.compile(r"\bused\s+(\d+)\s+registers", re.IGNORECASE),
    "barriers": re.compile(r"\bused\s+(\d+)\s+barriers", re.IGNORECASE),
    "stack_bytes": re.compile(r"(\d+)\s+bytes\s+stack\s+frame", re.IGNORECASE),
    "spill_stores": re.compile(r"(\d+)\s+bytes\s+spill\s+stores", re.IGNORECASE),
    "spill_loads": re.compile(r"(\d+)\s+bytes\s+spill\s+loads", re.IGNORECASE),
}
_SMEM_RE = re.compile(r"(\d+)(?:\+(\d+))?\s+bytes\s+smem", re.IGNORECASE)
_LMEM_RE = re.compile(r"(\d+)(?:\+(\d+))?\s+bytes\s+lmem", re.IGNORECASE)
_CUMULATIVE_STACK_RE = re.compile(r"(\d+)\s+bytes\s+cumulative\s+stack\s+size", re.IGNORECASE)
_CMEM_RE = re.compile(r"(\d+)\s+bytes\s+cmem\[\d+\]", re.IGNORECASE)


def parse_ptxas_output(stderr: str) -> dict[str, KernelResources]:
    """Per-kernel resources from `ptxas -v` output, each field found by its own pattern.

    Lines are attributed to the entry named by the latest "Compiling entry function" or "Function
    properties for" line; properties of non-entry functions and module-level totals are ignored.
    """
    kernels: dict[str, KernelResources] = {}
    current: KernelResources | None = None
    for line in stderr.splitlines():
        entry = _ENTRY_RE.search(line)
        if entry:
            current = kernels.setdefault(entry.group(1), KernelResources(mangled=entry.group(1)))
            continue
        props = _PROPS_RE.search(line)
        if props:
            current = kernels.get(props.group(1))
            continue
        if current is not None:
            _apply_fields(current, line)
    return kernels


def _apply_fields(res: KernelResources, line: str) -> None:
    """Fill every field that this line mentions."""
    for name, pattern in _INT_FIELDS.items():
        match = pattern.search(line)
        if match:
            setattr(res, name, int(match.group(1)))
    smem = _SMEM_RE.search(line)
    if smem:
        res.shared_bytes = int(smem.group(1)) + int(smem.group(2) or 0)
    elif _INT_FIELDS["registers"].search(line) and res.shared_bytes is None:
        res.shared_bytes = 0
    lmem = _LMEM_RE.search(line)
    if lmem:
        res.local_bytes = int(lmem.group(1)) + int(lmem.group(2) or 0)
    else:
        stack = _CUMULATIVE_STACK_RE.search(line)
        if stack:
            res.local_bytes = int(stack.group(1))
    banks = _CMEM_RE.findall(line)
    if banks:
        res.const_bytes = sum(int(b) for b in banks)


def _ptxas_arch(arch: str) -> str:
    """ptxas wants a real architecture; `compute_80` (a virtual one nvcc accepts for -ptx) maps to sm_80."""
    return "sm_" + arch[len("compute_"):] if arch.startswith("compute_") else arch


#: the constant bank a module's `.const` data must fit (64 KB on every architecture)
CONST_BANK_BYTES = 64 * 1024
_CONST_DECL_RE = re.compile(
    r"^\s*\.const\b(?P<mods>[^;\[]*?)\.[bsuf](?P<bits>8|16|32|64)\s+[\w$%]+(?P<dims>(?:\s*\[\s*\d+\s*\])+)",
    re.MULTILINE)


#: virtual registers a PTX text may declare before ptxas is not run: ptxas reserves memory for every one
#: (about 8 bytes each: 16 GB for one `%r<2147483647>`); nvcc's largest kernels declare a few thousand
MAX_PTXAS_REGISTERS = 1 << 20
_REG_COUNT_RE = re.compile(r"^\s*\.reg\b[^;<]*<\s*(\d+)\s*>", re.MULTILINE)


def declared_registers(ptx: str) -> int:
    """Virtual registers declared with `.reg ... %name<N>` (a quick scan of the declarations, no parse)."""
    return sum(int(n) for n in _REG_COUNT_RE.findall(ptx))


def declared_const_bytes(ptx: str) -> int:
    """Bytes of the `.const` arrays a PTX text declares (a quick scan of the declarations, no parse)."""
    total = 0
    for m in _CONST_DECL_RE.finditer(ptx):
        count = int(m.group("bits")) // 8
        vec = re.search(r"\.v(2|4|8)\b", m.group("mods"))
        count *= int(vec.group(1)) if vec else 1
        for dim in re.findall(r"\d+", m.group("dims")):
            count *= int(dim)
        total += count
    return total


#: a function declared and defined elsewhere: device-side kernel launches (dynamic parallelism) and device
#: functions of other files, in PTX compiled as relocatable device code
_EXTERN_FUNC_RE = re.compile(r"^[ \t]*\.extern[ \t]+\.func\b", re.MULTILINE)
#: nvcc's refusal of a device-side launch in whole-program mode
_NEEDS_RDC_RE = re.compile(r"requires separate compilation mode")
#: nvcc flags that already ask for relocatable device code
_RDC_FLAGS = ("-rdc", "--relocatable-device-code", "-dc", "--device-c")
RDC_NOTE = ("compiled with -rdc=true (relocatable device code): the file launches kernels from device code "
            "(dynamic parallelism), which nvcc compiles only that way")


def ptxas_resources(ptx: str, arch: str, toolchain: Toolchain, timeout_s: float = 60,
                    memory_mb: int | None = None, cancel: threading.Event | None = None,
                    started: Callable[[], object] | None = None) -> dict[str, KernelResources]:
    """Assemble `ptx` with `ptxas -v` into a throw-away cubin and parse the per-kernel report (ptxas is killed
    when `cancel` is set, and `started` is called once its process exists: see `run_tool`).

    PTX whose `.const` data cannot fit the constant bank, or that declares more than MAX_PTXAS_REGISTERS
    virtual registers, is refused before ptxas sees it: ptxas would allocate for all of it first
    (gigabytes for a `[2147483647]` array or a `%r<2147483647>` declaration).
    """
    registers = declared_registers(ptx)
    if registers > MAX_PTXAS_REGISTERS:
        raise PtxasError(f"ptxas not run: the PTX declares {registers} virtual registers, more than "
                         f"{MAX_PTXAS_REGISTERS}")
    const_bytes = declared_const_bytes(ptx)
    if const_bytes > CONST_BANK_BYTES:
        raise PtxasError(f"ptxas not run: the .const data ({const_bytes} bytes) exceeds the "
                         f"{CONST_BANK_BYTES // 1024} KB constant bank")
    with tool_temp_dir("kerncast-ptxas-", remove_later=True) as tmp:
        src = tmp / "kernel.ptx"
        src.write_text(ptx, encoding="utf-8")
        cubin = tmp / "kernel.cubin"
        args = [str(toolchain.ptxas), "-v", f"-arch={_ptxas_arch(arch)}", str(src), "-o", str(cubin)]
        if _EXTERN_FUNC_RE.search(ptx):
            args.insert(1, "-c")  # relocatable code: its callees are linked later, ptxas refuses them otherwise
        run = run_tool(args, timeout_s, cwd=tmp, temp_dir=tmp, memory_mb=memory_mb, cancel=cancel, started=started)
    if run.timed_out:
        raise PtxasError(f"ptxas did not finish within {timeout_s:g} s", timed_out=True)
    if run.transient:
        raise PtxasError(f"ptxas {_stopped_how(run, timeout_s)}", timed_out=True)
    if run.returncode != 0:
        lines = [ln for ln in run.output.splitlines() if "info" not in ln] or ["no output"]
        raise PtxasError("ptxas failed: " + " / ".join(ln.strip() for ln in lines[:5]))
    return parse_ptxas_output(run.output)


# --------------------------------------------------------------------------------------------- nvcc output

_EDG_RE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|fatal error|error|warning|remark)"
    r"(?: #(?P<code>[\w-]+))?\s*: (?P<msg>.*)$")
_GCC_RE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning)\s*: (?P<msg>.*)$")
_NVCC_RE = re.compile(r"^nvcc (?P<sev>fatal|error|warning)\s*: (?P<msg>.*)$")
_INCLUDED_FROM_RE = re.compile(
    r"^(?:In file included from|\s+from) (?P<file>.+?):(?P<line>\d+)(?::\d+)?[:,]$")
_CARET_RE = re.compile(r"^\s*\^\s*$")
_EDG_INDENT = 2  # EDG indents the echoed source line by two spaces
_HOST_COMPILER_RE = re.compile(
    r"Failed to preprocess host compiler properties|Cannot find compiler|cl\.exe|"
    r"\b(?:gcc|g\+\+|cc|c\+\+|clang\+\+|clang)(?:-\d+)?: "
    r"(?:No such file or directory|not found|command not found)")
_UNSUPPORTED_HOST_RE = re.compile(r"unsupported (?:GNU|clang|Microsoft Visual Studio) version", re.IGNORECASE)


@dataclass
class SourceContext:
    """What diagnostic mapping needs to know about the analysed file."""

    compiled: Path  # the file nvcc actually compiled (a temp copy for unsaved buffers)
    original: Path  # the file the user sees
    text: str
    search_dirs: list[Path]  # quoted-include search order after the including file's own directory
    cwd: Path

    def is_source(self, printed: str) -> bool:
        return _same_file(self.cwd / printed, self.compiled) or _same_file(self.cwd / printed, self.original)


def parse_nvcc_output(output: str, ctx: SourceContext) -> list[CompileDiagnostic]:
    """Structured diagnostics from nvcc's combined output (EDG, gcc and driver formats)."""
    lines = output.splitlines()
    diags: list[CompileDiagnostic] = []
    include_chain: list[tuple[str, int]] = []
    for i, line in enumerate(lines):
        included = _INCLUDED_FROM_RE.match(line)
        if included:
            include_chain.append((included.group("file"), int(included.group("line"))))
            continue
        diag = _parse_line(line, lines, i, ctx, include_chain)
        if diag is not None:
            diags.append(diag)
        if not line.startswith(" "):
            include_chain = []
    return diags


def _parse_line(line: str, lines: list[str], i: int, ctx: SourceContext,
                chain: list[tuple[str, int]]) -> CompileDiagnostic | None:
    """One diagnostic from the line at index `i`, or None when it is not a message header."""
    edg = _EDG_RE.match(line)
    if edg and edg.group("sev") != "remark":
        printed, line_no = edg.group("file"), int(edg.group("line"))
        column = _edg_column(lines, i, ctx, printed, line_no)
        message = edg.group("msg").strip() + _instantiation_note(lines, i)
        return _locate(ctx, printed, line_no, column, edg.group("sev"), message, chain)
    gcc = _GCC_RE.match(line)
    if gcc:
        return _locate(ctx, gcc.group("file"), int(gcc.group("line")), int(gcc.group("col") or 1),
                       gcc.group("sev"), gcc.group("msg").strip(), chain)
    driver = _NVCC_RE.match(line)
    if driver:
        severity = "warning" if driver.group("sev") == "warning" else "error"
        return CompileDiagnostic(str(ctx.original), 1, 1, severity, "nvcc: " + driver.group("msg").strip())
    return None


def _severity(word: str) -> str:
    return "warning" if word == "warning" else "error"


def _locate(ctx: SourceContext, printed: str, line: int, column: int, sev: str, message: str,
            chain: list[tuple[str, int]]) -> CompileDiagnostic:
    """Place a message on the analysed file, moving header messages to the #include line behind them."""
    if ctx.is_source(printed):
        return CompileDiagnostic(str(ctx.original), line, column, _severity(sev), message)
    header = Path(os.path.normpath(ctx.cwd / printed))
    inc_line, inc_col = _include_site(header, ctx, chain)
    shown = _display_path(header, ctx)
    return CompileDiagnostic(str(ctx.original), inc_line, inc_col, _severity(sev),
                             f"in included file {shown}, line {line}: {message}", in_header=True)


def _instantiation_note(lines: list[str], i: int) -> str:
    """EDG's indented "detected during instantiation ..." follow-up, which names the offending use."""
    for follow in lines[i + 1:i + 6]:
        stripped = follow.strip()
        if stripped.startswith("detected during"):
            return " (" + stripped + ")"
        if follow and not follow.startswith(" "):
            break
    return ""


def _edg_column(lines: list[str], i: int, ctx: SourceContext, printed: str, line_no: int) -> int:
    """Column from the caret line beneath EDG's echo of the source line, mapped onto the real line.

    EDG echoes the line after macro expansion (`__global__` becomes `__attribute__((global))`), so the caret
    offset is located in the real line by the text that follows the caret.
    """
    if i + 2 >= len(lines) or not _CARET_RE.match(lines[i + 2]):
        return 1
    echoed = lines[i + 1][_EDG_INDENT:] if lines[i + 1].startswith(" " * _EDG_INDENT) else lines[i + 1]
    caret = max(lines[i + 2].index("^") - _EDG_INDENT, 0)
    real = _source_line(ctx, printed, line_no)
    if real is None or real == echoed:
        return caret + 1
    return _align_column(echoed, caret, real) + 1


def _align_column(echoed: str, caret: int, real: str) -> int:
    """0-based column in `real` of the text that sits under the caret in `echoed`."""
    tail = echoed[caret:]
    for length in range(len(tail), 0, -1):
        probe = tail[:length]
        hits = [m.start() for m in re.finditer(re.escape(probe), real)]
        if hits:
            return min(hits, key=lambda pos: abs(pos - caret))
        if length <= 1:
            break
    return min(caret, max(len(real) - 1, 0))


def _source_line(ctx: SourceContext, printed: str, line_no: int) -> str | None:
    """The text of a line of the analysed file (the only file whose columns are reported)."""
    if not ctx.is_source(printed):
        return None
    source_lines = ctx.text.splitlines()
    return source_lines[line_no - 1] if 0 < line_no <= len(source_lines) else None


def _display_path(header: Path, ctx: SourceContext) -> str:
    """A header path relative to the analysed file's directory when it lies below it."""
    try:
        return str(header.relative_to(ctx.original.parent))
    except ValueError:
        return str(header)


def _include_site(header: Path, ctx: SourceContext, chain: list[tuple[str, int]]) -> tuple[int, int]:
    """(line, column) of the analysed file's #include that led to `header`; (1, 1) when unknown."""
    for printed, line in reversed(chain):
        if ctx.is_source(printed):
            return line, _include_column(ctx.text, line)
    target = real_path(header)
    visited: set[Path] = set()
    for line_no, line in enumerate(ctx.text.splitlines(), 1):
        match = INCLUDE_RE.match(line)
        if match and _reaches(match.group("name"), match.group("open") == '"', ctx.original.parent,
                              ctx.search_dirs, target, visited, 0):
            return line_no, match.start("open") + 1
    return 1, 1


def _include_column(text: str, line_no: int) -> int:
    lines = text.splitlines()
    match = INCLUDE_RE.match(lines[line_no - 1]) if 0 < line_no <= len(lines) else None
    return match.start("open") + 1 if match else 1


def _reaches(spelled: str, quoted: bool, from_dir: Path, dirs: list[Path], target: Path,
             visited: set[Path], depth: int) -> bool:
    """Whether `#include spelled` (seen in `from_dir`) is, or transitively includes, the `target` header."""
    if str(target).replace(os.sep, "/").endswith("/" + spelled.lstrip("./")):
        return True
    resolved = resolve_include(spelled, quoted, from_dir, dirs)
    if resolved is None:
        return False
    real = real_path(resolved)
    if real == target:
        return True
    if real in visited or depth >= MAX_INCLUDE_DEPTH:
        return False
    visited.add(real)
    for name, is_quoted in includes_of(resolved):
        if _reaches(name, is_quoted, resolved.parent, dirs, target, visited, depth + 1):
            return True
    return False


def _same_file(a: Path, b: Path) -> bool:
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


#: the host compilers nvcc looks for on PATH (Linux, macOS); one of them present means a failed probe was not for
#: want of a compiler
_HOST_COMPILERS = ("g++", "gcc", "c++", "clang++")


def _check_host_compiler(output: str, options: CompileOptions) -> str | None:
    """Raise ToolchainError when nvcc failed because the host compiler is missing or unsupported; the reason
    when its probe of a host compiler that is there failed anyway (a child killed while it ran: the next compile
    may well work, so the failure is not cached and the user is not told to install g++); else None."""
    if _UNSUPPORTED_HOST_RE.search(output):
        raise ToolchainError("nvcc does not support the installed host compiler version; install a g++ this "
                             "CUDA release supports, or add -allow-unsupported-compiler to the extra flags")
    if not _HOST_COMPILER_RE.search(output):
        return None
    detail = next((ln.strip() for ln in output.splitlines() if _HOST_COMPILER_RE.search(ln)), "")
    chosen = any(f.startswith(("-ccbin", "--compiler-bindir")) for f in options.extra_flags)
    installed = None if chosen or os.name == "nt" else _installed_host_compiler()
    if installed is None:
        raise ToolchainError(f"nvcc needs a host C++ compiler even to produce PTX, and none was found "
                             f"({detail}); {HOST_COMPILER_HINT}")
    return (f"nvcc's run of the host compiler failed ({detail}) although one is installed ({installed}): it was "
            "probably stopped (memory, a signal); nothing is cached, the next analysis compiles again")


def _installed_host_compiler() -> str | None:
    """The first host compiler on PATH (the PATH nvcc gets), or None."""
    return next((found for name in _HOST_COMPILERS if (found := shutil.which(name))), None)


# ------------------------------------------------------------------------------------------------- compile

_cache: BoundedLru[str, CompileResult] = BoundedLru(_CACHE_SIZE)


def clear_cache() -> None:
    """Forget every cached compilation (tests and the server's "reload toolkit" use this)."""
    _cache.clear()


def compile_cuda(path: str | Path, text: str | None = None,
                 options: CompileOptions | None = None, with_resources: bool = True,
                 started: Callable[[], object] | None = None) -> CompileResult:
    """Compile a `.cu` file (or `text`, an unsaved buffer of it) to PTX and collect ptxas resources.

    Compile errors, timeouts and ptxas failures become diagnostics; a missing nvcc, ptxas or host compiler
    raises ToolchainError. The returned object is shared with the cache: treat it as read-only.
    `with_resources=False` skips ptxas (`resources` stays empty), for callers that run `ptxas_resources`
    themselves, concurrently with their own work on the PTX. `started` is called once, when the first nvcc
    process exists (never for a cached result or a refused source): the caller's work that overlaps the compile
    starts then (`toolchain.run_tool`).
    """
    options = options or CompileOptions()
    toolchain = find_toolchain(options.nvcc_path)
    original = Path(os.path.abspath(path))
    rejected = validate_options(options)
    if rejected:
        return _failed(toolchain, options, [CompileDiagnostic(str(original), 1, 1, "error", message)
                                            for message in rejected])
    if text is None:
        try:
            text = read_regular_text(original, MAX_SOURCE_BYTES)
        except OSError as exc:  # InputRefused too: not a regular file, or too large
            message = f"cannot read {original}: {exc.strerror or exc}"
            return CompileResult(False, None, {}, [CompileDiagnostic(str(original), 1, 1, "error", message)],
                                 toolchain.version, options.arch)
        from_buffer = False
    else:
        from_buffer = not matches_disk(original, text)
    include_dirs = [Path(os.path.abspath(d)) for d in options.include_dirs]
    key = _cache_key(original, text, options, toolchain, include_dirs) + ("" if with_resources else "-ptx")
    cached = _cache.get(key)
    # one walk of the headers per lookup, taken before any compile: it checks a cached result, screens a new
    # compile for includes of devices and FIFOs (`check_source`), and stamps a new result unless the compile
    # (or the stale result) used nearby folders, which reach other headers
    headers = walk_headers(text, original.parent, [*include_dirs, *(cached.nearby_dirs if cached else [])])
    stamps = headers.stamps
    if cached is not None and cached.header_stamps == stamps:
        return cached
    refusal = check_source(text, headers)
    if refusal is not None:  # an include of a device, a macro bomb: said now, not as "out of memory" later
        return _failed(toolchain, options, [CompileDiagnostic(str(original), refusal.line, refusal.column,
                                                              "error", refusal.message)])
    result, cacheable = _compile_uncached(original, text, from_buffer, options, toolchain, include_dirs,
                                          with_resources, started)
    if not cacheable:
        return result
    if result.nearby_dirs or (cached is not None and cached.nearby_dirs):
        stamps = walk_headers(text, original.parent, [*include_dirs, *result.nearby_dirs]).stamps
    result.header_stamps = stamps
    _cache.put(key, result)
    return result


def compile_fragment_copy(includer: Path, fragment: Path, fragment_text: str,
                          options: CompileOptions) -> CompileResult:
    """Compile `includer` with `fragment_text` standing for the `fragment` it `#include`s, writing neither file.

    A fragment (a `.cu` written to be included after its includer's typedefs) compiles only through its includer,
    and nvcc reads an included file from disk: an unsaved edit of the fragment, or a trial version of a fix, is
    written to a copy in a temporary folder, and the includer is compiled as a copy whose `#include` names that
    copy. The PTX's `.file` entry of the copy is pointed back at the fragment, so its kernels land on its lines.
    An includer that cannot be read, or whose includes do not name the fragment, compiles as it is on disk.
    """
    with tool_temp_dir("kerncast-fragment-") as tmp_dir:
        copy = tmp_dir / (fragment.name if _short_plain_name(fragment.name) else "fragment" + fragment.suffix)
        copy.write_text(fragment_text, encoding="utf-8", newline="")
        includer_text = header_text(includer)
        rewritten = None if includer_text is None else _include_copy(includer_text, includer, fragment, copy)
        if rewritten is None:
            return compile_cuda(includer, options=options, with_resources=False)
        dirs = [str(fragment.parent), *options.include_dirs]
        result = compile_cuda(includer, text=rewritten, options=replace(options, include_dirs=dirs),
                              with_resources=False)
    if result.ptx is None:
        return result
    return replace(result, ptx=_retarget_file_directives(result.ptx, copy, fragment))


def _include_copy(text: str, includer: Path, fragment: Path, copy: Path) -> str | None:
    """`text` (the includer's) with each `#include` that resolves to `fragment` naming `copy` instead, on the same
    line; None when none does."""
    target = real_path(fragment)
    lines = text.splitlines(keepends=True)
    changed = False
    for i, line in enumerate(lines):
        match = INCLUDE_RE.match(line)
        found = resolve_include(match.group("name"), True, includer.parent, []) if match else None
        if match is None or found is None or real_path(found) != target:
            continue
        close = line.index('"' if match.group("open") == '"' else ">", match.end("name"))
        lines[i] = line[:match.start("open")] + f'"{copy}"' + line[close + 1:]
        changed = True
    return "".join(lines) if changed else None


def matches_disk(path: Path, text: str) -> bool:
    """Whether a buffer equals the saved file, which is then compiled in place (no temporary copy); line ends
    are compared as they are, so a saved CRLF file equals its text as read for analysis."""
    try:  # a saved file is never longer than its text's UTF-8 (a byte decoded as U+FFFD takes three)
        raw = read_regular_file(path, len(text.encode("utf-8", errors="surrogatepass")))
    except OSError:  # InputRefused too: a FIFO or a device is never "saved text"
        return False
    return raw.decode("utf-8", errors="replace") == text


def _cache_key(original: Path, text: str, options: CompileOptions, toolchain: Toolchain,
               include_dirs: list[Path]) -> str:
    """sha256 over the source, every flag and the toolkit; the headers it includes are checked on each lookup
    (`CompileResult.header_stamps`), so that an edit of one replaces the cached result."""
    blob = json.dumps([text, str(original), options.arch, [str(d) for d in include_dirs], options.defines,
                       options.extra_flags, str(toolchain.nvcc), toolchain.version])
    return hashlib.sha256(blob.encode("utf-8", errors="replace")).hexdigest()


def system_toolkit_nvcc() -> str | None:
    """nvcc of a full CUDA toolkit installation (CUDA_HOME, CUDA_PATH, /usr/local/cuda), for users who prefer
    it to the pip wheels (it has every library header); None when there is none."""
    roots = [Path(r) for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if r]
    for root in [*roots, *DEFAULT_CUDA_ROOTS]:
        nvcc = root / "bin" / ("nvcc.exe" if os.name == "nt" else "nvcc")
        if nvcc.is_file() and os.access(nvcc, os.X_OK):
            return str(nvcc)
    return None


def header_wheel_dirs(toolchain: Toolchain) -> list[Path]:
    """Include directories of NVIDIA header wheels installed beside a pip-installed nvcc.

    CUDA 13 wheels all unpack into `nvidia/cu13/include`, which nvcc searches already; CUDA 12 wheels give each
    package its own `nvidia/<package>/include` (`nvidia/cuda_profiler_api/include`, `nvidia/curand/include`),
    which nvcc does not know about. A toolkit outside site-packages needs none of this.
    """
    top = toolchain.nvcc.parent.parent  # .../nvidia/<package>/bin/nvcc -> .../nvidia/<package>
    parts = top.parts
    if top.parent.name != "nvidia" or not ({"site-packages", "dist-packages"} & set(parts)):
        return []
    own = (top / "include").resolve()
    found = [d for d in sorted(top.parent.glob("*/include")) if d.is_dir() and d.resolve() != own]
    return found


def _nvcc_args(toolchain: Toolchain, options: CompileOptions, source: Path, out: Path,
               include_dirs: list[Path], relocatable: bool = False, stand_ins: list[str] | None = None) -> list[str]:
    args = [str(toolchain.nvcc), "-ptx", "-lineinfo", f"-arch={options.arch}"]
    if relocatable:
        args.append("-rdc=true")
    args += [f"-I{d}" for d in include_dirs]
    for d in header_wheel_dirs(toolchain):
        args += ["-isystem", str(d)]
    args += [f"-D{d}" for d in options.defines if d.strip()]
    args += list(options.extra_flags)
    args += stand_ins or []
    return args + ["-o", str(out), str(source)]


@dataclass
class _NvccJob:
    """One source's nvcc runs in one temporary directory: the first, and the retries that add include folders
    (headers found near the file) or flags (Kerncast's stand-ins); each run's messages are parsed against the
    include path it had."""

    toolchain: Toolchain
    options: CompileOptions
    original: Path
    text: str
    source: Path  # what nvcc compiles: the original, or a copy of an unsaved buffer
    out: Path
    tmp_dir: Path
    include_dirs: list[Path]
    relocatable: bool = False
    #: folders found near the file and added to the include path
    nearby: list[Path] = field(default_factory=list)
    #: each include folder as nvcc is given it (a link where its path is not shell-safe), made once
    _given: dict[Path, Path] = field(default_factory=dict)
    #: a run ended by the timeout, a signal or the memory limit: a retry that stopped so leaves the result
    #: (the first run's errors) uncached, since a new compile may go further
    transient: bool = False
    #: called when the first run's nvcc process exists (`compile_cuda`), then dropped
    started: Callable[[], object] | None = None

    def run(self, folders: list[Path] | None = None, flags: list[str] | None = None) -> ToolRun:
        """nvcc with the include path (plus `folders`, else the nearby ones) and `flags`; once a run fails only
        for want of relocatable device code (a launch from device code, which nvcc may reach only after a
        retry found a header), this run and every later one are relocatable."""
        dirs = [*self.include_dirs, *(self.nearby if folders is None else folders)]
        for d in dirs:
            if d not in self._given:
                self._given[d] = _shell_safe_dir(d, self.tmp_dir / f"include-{len(self._given)}")
        given = [self._given[d] for d in dirs]
        started, self.started = self.started, None
        run = run_tool(_nvcc_args(self.toolchain, self.options, self.source, self.out, given, self.relocatable,
                                  flags), self.options.timeout_s, cwd=self.tmp_dir, temp_dir=self.tmp_dir,
                       memory_mb=self.options.memory_mb, started=started)
        if not self.relocatable and _needs_rdc(run, self.options):
            self.relocatable = True
            run = run_tool(_nvcc_args(self.toolchain, self.options, self.source, self.out, given, True, flags),
                           self.options.timeout_s, cwd=self.tmp_dir, temp_dir=self.tmp_dir,
                           memory_mb=self.options.memory_mb)
        self.transient = self.transient or run.transient
        return run

    def parse(self, run: ToolRun, folders: list[Path] | None = None) -> list[CompileDiagnostic]:
        """The run's messages, placed in the analysed file (an error in a header at its #include line)."""
        dirs = [*self.include_dirs, *(self.nearby if folders is None else folders)]
        ctx = SourceContext(compiled=self.source, original=self.original, text=self.text, search_dirs=dirs,
                            cwd=self.tmp_dir)
        return parse_nvcc_output(run.output, ctx)

    def run_parsed(self, folders: list[Path]) -> tuple[ToolRun, list[CompileDiagnostic]]:
        """nvcc with the include path plus `folders`, and its messages."""
        run = self.run(folders)
        return run, self.parse(run, folders)


def _compile_uncached(original: Path, text: str, from_buffer: bool, options: CompileOptions,
                      toolchain: Toolchain, include_dirs: list[Path], with_resources: bool = True,
                      started: Callable[[], object] | None = None) -> tuple[CompileResult, bool]:
    """Run nvcc then ptxas in a temporary directory that is always removed; False: do not cache (a timeout).

    nvcc's own temporaries go there too (TMPDIR). A source whose path the compiler's shell would interpret
    (`$`, a backtick, a quote) is compiled as a copy with a plain name, and an include directory whose
    absolute path holds such characters (a hostile workspace folder name) is handed to nvcc as a link.
    """
    with tool_temp_dir("kerncast-nvcc-", remove_later=True) as tmp_dir:
        source = original
        if from_buffer or not is_shell_safe_path(original) or not _short_plain_name(original.name):
            source = tmp_dir / (original.name if _short_plain_name(original.name) else "source" + original.suffix)
            source.write_text(text, encoding="utf-8")
            include_dirs = [original.parent, *include_dirs]
        job = _NvccJob(toolchain, options, original, text, source, tmp_dir / (_safe_stem(original) + ".ptx"),
                       tmp_dir, include_dirs, started=started)
        run = job.run()
        notes: list[str] = []
        if run.transient:
            stopped = CompileDiagnostic(str(original), 1, 1, "error", f"nvcc {_stopped_how(run, options.timeout_s)}")
            return _failed(toolchain, options, [stopped]), False
        if run.returncode != 0:
            probe = _check_host_compiler(run.output, options)
            if probe is not None:
                return _failed(toolchain, options, [CompileDiagnostic(str(original), 1, 1, "error", probe)]), False
        run, diagnostics = _compile_with_fallbacks(job, run, job.parse(run), notes)
        if run.transient:  # a retry stopped: its failure is no verdict on the code either
            stopped = CompileDiagnostic(str(original), 1, 1, "error", f"nvcc {_stopped_how(run, options.timeout_s)}")
            return _failed(toolchain, options, [stopped]), False
        ptx = job.out.read_text(encoding="utf-8", errors="replace") if job.out.is_file() else None
    if job.relocatable:
        notes.insert(0, RDC_NOTE)
    cacheable = not job.transient
    if run.returncode != 0 or ptx is None:
        if not any(d.severity == "error" for d in diagnostics):
            diagnostics.append(_unparsed_failure(original, run.output, run.returncode))
        return _failed(toolchain, options, diagnostics), cacheable
    if source != original:
        ptx = _retarget_file_directives(ptx, source, original)
    resources: dict[str, KernelResources] = {}
    if with_resources:
        try:
            resources = ptxas_resources(ptx, options.arch, toolchain, timeout_s=options.timeout_s,
                                        memory_mb=options.memory_mb)
        except PtxasError as exc:
            cacheable = cacheable and not exc.timed_out
            diagnostics.append(CompileDiagnostic(str(original), 1, 1, "warning", f"no register/shared memory "
                                                 f"figures: {exc}"))
    return (CompileResult(True, ptx, resources, diagnostics, toolchain.version, options.arch, notes, job.nearby),
            cacheable)


def _compile_with_fallbacks(job: _NvccJob, run: ToolRun, diagnostics: list[CompileDiagnostic], notes: list[str]
                            ) -> tuple[ToolRun, list[CompileDiagnostic]]:
    """After a failed run: nvcc again with the folders near the file that hold headers it did not find, then
    with Kerncast's stand-ins for what the remaining errors name. The last run and its messages, the errors
    that a fallback answered first, as warnings; each fallback used adds its note."""
    if run.returncode == 0:
        return run, diagnostics
    found: list[CompileDiagnostic] = []
    nearby = _compile_with_nearby_headers(diagnostics, job.original.parent, job.run_parsed)
    if nearby is not None:
        run, found, diagnostics, job.nearby, note = nearby
        notes.append(note)
    if run.returncode != 0:
        stand_in = _compile_with_stand_ins(diagnostics, job.text, job.tmp_dir, lambda flags: job.run(flags=flags))
        if stand_in is not None:
            run, removed, stand_in_notes = stand_in
            diagnostics = [*removed, *job.parse(run)]
            notes.extend(stand_in_notes)
    return run, [*found, *diagnostics]


def _compile_with_stand_ins(diagnostics: list[CompileDiagnostic], source: str, tmp_dir: Path,
                            run_with: Callable[[list[str]], ToolRun]
                            ) -> tuple[ToolRun, list[CompileDiagnostic], list[str]] | None:
    """nvcc again with Kerncast's stand-ins for the removed APIs that the errors name and with the headers
    that declare the library names they say are undeclared (compile_hints): the run, those errors as warnings
    marked `stood_in`, and the report's notes. None where no error names either, or where the file still fails
    (its first errors are then the ones to show)."""
    removed: dict[tuple[int, str], CompileDiagnostic] = {}
    subjects: set[str] = set()
    defines: set[str] = set()
    headers: set[str] = set()
    for d in diagnostics:
        api = removed_api(d.message) if d.severity == "error" else None
        missing = (missing_include(d.message, None if d.in_header else source, (d.line, d.column))
                   if d.severity == "error" and api is None else None)
        if api is None and missing is None:
            continue
        if api is not None:
            subjects.add(api.subject)
            if api.stand_in_define:
                defines.add(api.stand_in_define)
        if missing is not None:
            headers.add(missing.header)
        removed.setdefault((d.line, d.message), CompileDiagnostic(d.file, d.line, d.column, "warning", d.message,
                                                                  d.in_header, stood_in=True))
    if not defines and not headers:
        return None
    flags = [arg for h in sorted(headers) for arg in ("-include", h)]
    if defines:
        legacy = tmp_dir / "kerncast_legacy_cuda.h"
        legacy.write_text(legacy_header_text(), encoding="utf-8")
        flags = ["-include", str(legacy), *(f"-D{d}" for d in sorted(defines)), *flags]
    run = run_with(flags)
    if run.timed_out or run.returncode != 0:
        return None
    notes = []
    if defines:
        textures = (" and texture references read through texture objects, as migrated code does"
                    if "KERNCAST_LEGACY_TEXTURES" in defines else "")
        notes.append(f"compiled with Kerncast's stand-ins for APIs this toolkit removed "
                     f"({', '.join(sorted(subjects))}): host code stands for their replacements{textures}; the "
                     "warnings name each replacement")
    if headers:
        they = "they declare" if len(headers) > 1 else "it declares"
        notes.append(f"compiled with {', '.join(f'<{h}>' for h in sorted(headers))} included before the file, "
                     f"which uses names {they} without including {'them' if len(headers) > 1 else 'it'}; the "
                     "warnings say where each is declared")
    return run, list(removed.values()), notes


#: nvcc runs at most that each add the folder of one more header it did not find (it stops at the first one)
MAX_NEARBY_HEADER_RUNS = 4


def _compile_with_nearby_headers(diagnostics: list[CompileDiagnostic], source_dir: Path,
                                 run_with: Callable[[list[Path]], tuple[ToolRun, list[CompileDiagnostic]]]
                                 ) -> tuple[ToolRun, list[CompileDiagnostic], list[CompileDiagnostic], list[Path],
                                            str] | None:
    """nvcc again (`run_with` the folders added) with -I for each header it did not find that exactly one
    folder near the source holds (the build's `-I ../inc`), again for the next such header while those are its
    errors: the last run, the missing headers' errors as warnings marked `stood_in`, the last run's
    diagnostics, the folders added and the report's note. None where the first run's errors name no such
    header; the last run may still fail on other errors, which then show."""
    folders: list[Path] = []
    names: list[str] = []
    found: list[CompileDiagnostic] = []
    run: ToolRun | None = None
    for _ in range(MAX_NEARBY_HEADER_RUNS):
        new = [(d, h) for d in diagnostics if d.severity == "error"
               and (h := project_header(d.message, source_dir)) is not None and len(h.folders) == 1
               and h.folders[0] not in folders]
        if not new:
            break
        for d, header in new:
            if header.folders[0] not in folders:
                folders.append(header.folders[0])
                names.append(header.spelled)
            found.append(CompileDiagnostic(d.file, d.line, d.column, "warning", d.message, d.in_header,
                                           stood_in=True))
        run, diagnostics = run_with(folders)
        if run.timed_out or run.returncode == 0:
            break
    if run is None or run.timed_out:
        return None
    added = " ".join(f"-I {os.path.relpath(f, source_dir)}" for f in folders)
    note = (f"compiled with {added}, found near the file, for {', '.join(names)}, which nvcc did not find on the "
            "include path; set includeDirs (or give Kerncast the build's compile_commands.json) to use the build's "
            "own")
    return run, found, diagnostics, folders, note


def _needs_rdc(run: ToolRun, options: CompileOptions) -> bool:
    """Whether nvcc failed only for want of relocatable device code, which the user's flags did not ask for."""
    if run.timed_out or run.returncode == 0 or not _NEEDS_RDC_RE.search(run.output):
        return False
    return not any(flag.startswith(_RDC_FLAGS) for flag in options.extra_flags)


def _shell_safe_dir(directory: Path, link: Path) -> Path:
    """`directory`, or `link` made to point at it when its path holds characters the shell would interpret."""
    if is_shell_safe_path(directory):
        return directory
    try:
        link.symlink_to(directory, target_is_directory=True)
    except OSError:
        return link.parent  # no links here: headers in that directory are then not found, and nothing runs
    return link


def _safe_stem(original: Path) -> str:
    return original.stem if _short_plain_name(original.stem) else "source"


#: the longest file name (in bytes) handed to nvcc as it is: nvcc names its temporaries after the source
#: (`tmpxft_0000a1b2_00000000-6_<name>.cpp1.ii`), and those must stay under the 255-byte limit of a name
MAX_PLAIN_NAME_BYTES = 100


def _short_plain_name(name: str) -> bool:
    """Whether a file name can be nvcc's as it is: no shell character, and short enough for its temporaries."""
    return is_shell_safe_path(name) and len(name.encode("utf-8", "surrogateescape")) <= MAX_PLAIN_NAME_BYTES


def _stopped_how(run: ToolRun, timeout_s: float) -> str:
    """How a transient failure ended, for its message: the timeout, the memory limit, or a signal."""
    if run.timed_out:
        return f"did not finish within {timeout_s:g} s; simplify the file or raise the timeout"
    if run.out_of_memory:
        return (f"ran out of its {run.memory_mb} MiB share of the {run.budget_mb} MiB compile memory limit "
                "(compileMemoryMB, --compile-memory-mb; each of the compiles that may run at once gets an equal "
                "share); the file, or a header or macro it uses, needs more than that")
    if run.returncode < 0:
        return (f"was stopped by {_signal_name(-run.returncode)} before it finished (nothing is cached: the next "
                "analysis compiles again)")
    stage = next((ln.strip() for ln in run.output.splitlines() if "signal" in ln), "a stage was stopped")
    return f"did not finish: {stage} (nothing is cached: the next analysis compiles again)"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _failed(toolchain: Toolchain, options: CompileOptions,
            diagnostics: list[CompileDiagnostic]) -> CompileResult:
    return CompileResult(False, None, {}, diagnostics, toolchain.version, options.arch)


def _unparsed_failure(original: Path, output: str, returncode: int) -> CompileDiagnostic:
    """A failure whose output matched no known message format still reaches the user, verbatim."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    detail = " / ".join(lines[-5:]) if lines else f"exit status {returncode}, no output"
    return CompileDiagnostic(str(original), 1, 1, "error", f"nvcc failed: {detail}")


def _retarget_file_directives(ptx: str, compiled: Path, original: Path) -> str:
    """Point the PTX `.file` entries of a buffer's temp copy back at the file the user edits."""
    return ptx.replace(f'"{compiled}"', f'"{original}"')
