"""From a `.cu` or `.ptx` file to a `FileReport`: the one entry point the CLI and the server call.

The data flows one way (see DESIGN.md): compile -> parse -> per kernel: CFG and loops -> launch -> memory
analysis -> time -> power and energy. Each stage reads the typed `KernelContext` (kerncast.analysis.context)
and writes its typed result into it and into the kernel's `KernelReport`. Input problems (missing, empty,
binary or huge files, missing toolchain, compile errors, malformed PTX) become file-level findings, never
exceptions.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from kerncast.analysis.cfg import Cfg, build_cfg
from kerncast.analysis.compile import (
    CompileOptions,
    CompileResult,
    PtxasError,
    ToolchainError,
    compile_cuda,
    compile_fragment_copy,
    find_toolchain,
    matches_disk,
    ptxas_resources,
    system_toolkit_nvcc,
)
from kerncast.analysis.compile_db import BuildFlags, flags_for
from kerncast.analysis.context import KernelContext
from kerncast.analysis.demangle import demangle
from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.assumed_loops import assumed_loops_stage
from kerncast.analysis.findings.atomic import atomic_contention_stage
from kerncast.analysis.findings.barriers import barrier_divergence_stage
from kerncast.analysis.findings.compile import (
    compile_findings,
    input_finding,
    ptx_syntax_finding,
    toolchain_finding,
)
from kerncast.analysis.findings.fp64 import fp64_stage
from kerncast.analysis.findings.gpu_profile import load_gpu
from kerncast.analysis.findings.integer_division import slow_division_stage
from kerncast.analysis.findings.launch import launch_configuration_stage
from kerncast.analysis.findings.local_memory import local_memory_stage
from kerncast.analysis.findings.resources import resource_stage
from kerncast.analysis.findings.restrict import missing_restrict_stage
from kerncast.analysis.findings.tiling import shared_tiling_stage
from kerncast.analysis.gpus import GpuProfile
from kerncast.analysis.includes import find_includers
from kerncast.analysis.input_files import InputTooLarge, read_regular_file
from kerncast.analysis.kernel_cache import (
    KernelCache,
    digest,
    entry_spans,
    line_spans,
    ptxas_keys,
    without_debug_sections,
    without_lines,
)
from kerncast.analysis.kernel_homes import KernelHome, included_homes
from kerncast.analysis.kernel_shift import file_index, first_loc_line, moved_line, relative_loc, shifted
from kerncast.analysis.launch import split_kernel_name
from kerncast.analysis.loops import LoopForest, find_loops
from kerncast.analysis.options import DEFAULT_MAX_FILE_BYTES, AnalysisOptions, PtxasResult, Thresholds
from kerncast.analysis.ptx import PtxSyntaxError, parse_ptx
from kerncast.analysis.ptx.model import Function, Module, SourceLoc, line_in_file
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.rules import Code
from kerncast.analysis.source_model import FileScans, scanned
from kerncast.analysis.stages.gains import gain_stage
from kerncast.analysis.stages.launch import launch_stage, trip_count_stage
from kerncast.analysis.stages.memory import memory_stage
from kerncast.analysis.stages.resources import resources_stage
from kerncast.analysis.stages.structure import structure_stage
from kerncast.analysis.stages.time import occupancy_stage, time_stage
from kerncast.analysis.targets import resolve_target

__all__ = ["DEFAULT_MAX_FILE_BYTES", "STAGES", "AnalysisCancelled", "AnalysisOptions", "KernelContext", "Stage",
           "Thresholds", "analyze_file"]

#: A stage reads the kernel's typed context and adds its own typed result to it.
Stage = Callable[[KernelContext], None]


class AnalysisCancelled(Exception):
    """The caller's `cancel` signal was set: the analysis stopped between two steps and has no result."""


def check_cancel(cancel: threading.Event | None) -> None:
    """Stop the analysis here if its caller no longer wants it (a language server's document was closed): the
    pipeline looks between its steps and before each kernel's stages, so that a large file stops within one
    kernel's work instead of running for minutes, holding its parsed PTX and reports, for nobody."""
    if cancel is not None and cancel.is_set():
        raise AnalysisCancelled


def read_input(path: Path, text: str | bytes | None,
               max_bytes: int) -> tuple[str | None, Finding | None, str | None]:
    """Read the file (or take the editor's text, or the bytes of another version of it) and refuse empty,
    binary and oversized input clearly.

    The third value is a note on how the text was read: a CUDA file that is not UTF-8 (an author's name or a
    typographic apostrophe in a comment, saved by an older editor) is read as Windows-1252, as nvcc itself
    takes its bytes as they are; compilers write PTX in ASCII, so a PTX file that is not UTF-8 is refused.
    """
    if text is None:
        try:
            raw = read_regular_file(path, max_bytes)
        except InputTooLarge as exc:
            raw, size = b"", exc.size
        except OSError as exc:  # InputRefused too: a device, a FIFO, a socket (also behind a link)
            return None, input_finding(f"cannot read {path}: {exc.strerror or exc}"), None
        else:
            size = len(raw)
    else:
        raw = text if isinstance(text, bytes) else text.encode("utf-8", errors="surrogatepass")
        size = len(raw)
    if size > max_bytes:
        return None, input_finding(
            f"{path.name} is {size / 1e6:.1f} MB, above the {max_bytes / 1e6:.1f} MB analysis limit "
            "(setting maxFileBytes); Kerncast skipped it"), None
    if b"\x00" in raw:
        return None, input_finding(f"{path.name} looks like a binary file (it contains NUL bytes); "
                                    "Kerncast analyses CUDA C++ (.cu) and PTX (.ptx) text"), None
    note = None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if path.suffix.lower() == ".ptx":
            return None, input_finding(f"{path.name} is not UTF-8 text (byte {exc.start}); Kerncast analyses "
                                        "CUDA C++ (.cu) and PTX (.ptx) text"), None
        decoded = raw.decode("cp1252", errors="replace")  # its five undefined bytes: one U+FFFD each
        note = (f"{path.name} is not UTF-8 text (byte {exc.start}): it was read as Windows-1252; a column on a "
                "line with such a character may be off by its encoding")
    if not decoded.strip():
        return None, input_finding(f"{path.name} is empty: there is no kernel to analyse"), None
    return decoded, None, note


def analyze_file(path: str | os.PathLike[str], text: str | bytes | None = None,
                 options: AnalysisOptions | None = None, cache: KernelCache | None = None,
                 cancel: threading.Event | None = None) -> FileReport:
    """Analyse a `.cu`/`.cuh` or `.ptx` file (or the editor's unsaved `text` for it, or the bytes of another
    version of it, read as the file's own bytes are: `kerncast diff`'s version at a git revision).

    With a `cache` (a long-lived caller's), kernels whose key is unchanged are taken from it and only the
    others are analysed (and sent to ptxas); see `kernel_cache`. With `cancel`, the analysis raises
    AnalysisCancelled soon after the signal is set (`check_cancel`; at once when it is set already: the compile
    is not started), and the ptxas it runs is killed.
    """
    check_cancel(cancel)
    options = options or AnalysisOptions()
    p = Path(path)
    report = FileReport(file=str(p), gpu=options.gpu, arch=options.arch)
    source, problem, how_read = read_input(p, text, options.max_file_bytes)
    if problem is not None:
        report.findings.append(problem)
        return report
    assert source is not None
    if how_read:
        report.notes.append(how_read)
    options = _with_toolkit(report, options)
    if p.suffix.lower() == ".ptx":
        options = _with_target(report, options, [])
        return _analyze_ptx(report, source, options, cuda_source=None, cache=cache, cancel=cancel)
    return _analyze_cuda(report, p, source, options, cache, cancel)


def _with_toolkit(report: FileReport, options: AnalysisOptions) -> AnalysisOptions:
    """With `prefer_system_toolkit` (and no explicit nvcc), the installed CUDA toolkit's nvcc when there is one."""
    if not options.prefer_system_toolkit or options.nvcc_path:
        return options
    nvcc = system_toolkit_nvcc()
    if nvcc is None:
        report.notes.append("no CUDA toolkit in CUDA_HOME, CUDA_PATH or /usr/local/cuda: using the nvcc found "
                            "by the usual search")
        return options
    report.notes.append(f"using the installed CUDA toolkit's nvcc {nvcc} (preferSystemToolkit)")
    return replace(options, nvcc_path=nvcc)


def _compiler_label(nvcc_path: str | None) -> str | None:
    """`nvcc 13.5.37 (pip wheels: /…/nvcc)`: the hover and the report say which compiler produced the PTX."""
    try:
        tc = find_toolchain(nvcc_path)
    except ToolchainError:
        return None
    where = {"cuda-pathfinder": "pip wheels", "CUDA_HOME": "CUDA toolkit", "setting": "chosen"}.get(tc.origin,
                                                                                                   tc.origin)
    return f"nvcc {tc.version} ({where}: {tc.nvcc})"


def _with_target(report: FileReport, options: AnalysisOptions, build_archs: list[str]) -> AnalysisOptions:
    """Options whose `arch` is decided (setting, build, GPU profile), the report saying which and why."""
    target = resolve_target(options.arch, build_archs, options.gpu, options.nvcc_path)
    report.arch = target.arch
    if target.note:
        report.notes.append(target.note)
    return replace(options, arch=target.arch)


def _build_flags(report: FileReport, path: Path, options: AnalysisOptions) -> BuildFlags | None:
    """The project's flags for this file from compile_commands.json, noted in the report; None without one."""
    if not options.compile_commands:
        return None
    build = flags_for(path, options.compile_commands_dir)
    if build is not None:
        report.notes.append(build.describe())
        if build.dropped:
            report.notes.append("ignored build flag values that failed the checks: " + ", ".join(build.dropped[:5]))
    return build


def _analyze_cuda(report: FileReport, path: Path, source: str, options: AnalysisOptions,
                  cache: KernelCache | None = None, cancel: threading.Event | None = None) -> FileReport:
    build = _build_flags(report, path, options)
    options = _with_target(report, options, build.archs if build else [])
    if build is not None:  # the settings add to the project's own include directories, which launch inference
        # reads headers from as nvcc does
        options = replace(options, include_dirs=[*build.include_dirs, *options.include_dirs])
    copts = CompileOptions(arch=options.arch or "", include_dirs=list(options.include_dirs),
                           defines=list(options.defines), nvcc_path=options.nvcc_path,
                           timeout_s=options.timeout_s, memory_mb=options.compile_memory_mb)
    if build is not None:  # the settings add to the project's own flags
        copts.defines = [*build.defines, *copts.defines]
        copts.extra_flags = [*build.flags, *(f"-U{u}" for u in build.undefines)]
    # the launch sites are scanned from the source (with its headers' macros) while nvcc runs (its wait frees
    # the interpreter); the scan is cached by text and macros, so the launch stage finds it done. It starts once
    # nvcc's process exists: started before, its thread would hold the interpreter while this one starts nvcc
    # (a 5 ms switch interval at least, on the path the save waits on)
    include_dirs = list(options.include_dirs)
    scans = FileScans()  # the launch stage takes the scan from here (a later save makes its own)
    scan = functools.partial(_SCAN_POOL.submit, scans.scan, source, str(path), include_dirs)
    try:
        result = compile_cuda(path, text=source, options=copts, with_resources=False, started=scan)
    except ToolchainError as exc:
        report.findings.append(toolchain_finding(str(exc)))
        return report
    check_cancel(cancel)
    report.toolkit = result.toolkit
    report.compiler = _compiler_label(copts.nvcc_path)
    report.notes.extend(result.notes)
    if result.nearby_dirs:  # launch inference reads the headers nvcc found there too
        options = replace(options, include_dirs=[*options.include_dirs, *map(str, result.nearby_dirs)])
    through = None if result.ok else _compile_through_includer(path, source, copts)
    if through is not None:
        includer, included = through
        report.includer = str(includer)
        first = next((d.message for d in result.diagnostics if d.severity == "error"), "nvcc failed")
        report.notes.append(f"{path.name} does not compile on its own ({first}): it was compiled as part of "
                            f"{includer.name}, which #includes it")
        report.notes.extend(included.notes)
        assert included.ptx is not None
        return _analyze_ptx(report, included.ptx, options, cuda_source=source, cache=cache,
                            includer=(includer, includer.read_text(encoding="utf-8", errors="replace")),
                            cancel=cancel, scans=scans)
    report.findings.extend(compile_findings(result.diagnostics, source, path.parent))
    if not result.ok or result.ptx is None:
        if not any(f.severity == "error" for f in report.findings):
            report.findings.append(input_finding("nvcc produced no PTX", code=Code.COMPILE_ERROR))
        return report
    return _analyze_ptx(report, result.ptx, options, cuda_source=source, cache=cache, cancel=cancel, scans=scans)


#: includers compiled at most for one fragment (each is an nvcc run)
MAX_INCLUDERS_TRIED = 4


def _compile_through_includer(path: Path, source: str, copts: CompileOptions) -> tuple[Path, CompileResult] | None:
    """A fragment that does not compile alone, compiled as part of a file that `#include`s it
    (`includes.find_includers`), nearest first; an includer that is itself a fragment is compiled through its
    own includers.

    An unsaved fragment (an editor's buffer, a trial fix) is compiled through a copy of a file that includes it
    directly, which includes a copy of its text (`compile_fragment_copy`): neither file on disk is written."""
    saved = matches_disk(path, source)
    queue, seen = find_includers(path), {path}
    for _ in range(MAX_INCLUDERS_TRIED):
        if not queue:
            return None
        includer = queue.pop(0)
        seen.add(includer)
        try:
            result = (compile_cuda(includer, options=copts, with_resources=False) if saved
                      else compile_fragment_copy(includer, path, source, copts))
        except ToolchainError:
            return None
        if result.ok and result.ptx is not None:
            return includer, result
        if saved:  # an includer of an includer reads the fragment from disk
            queue += [p for p in find_includers(includer) if p not in seen and p not in queue]
    return None


_PTXAS_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kerncast-ptxas")
_SCAN_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kerncast-scan")
_TARGET_RE = re.compile(r"^\s*\.target\s+(sm_\d+[a-z]?)", re.MULTILINE)


def _ptxas_target(ptx: str, options: AnalysisOptions) -> str:
    """The PTX's own `.target` (ptxas refuses an older -arch), else the configured arch."""
    m = _TARGET_RE.search(ptx)
    return m.group(1) if m else (options.arch or "sm_75")


def _ptxas_resources(ptx: str, options: AnalysisOptions, cancel: threading.Event | None = None,
                     started: Callable[[], object] | None = None) -> PtxasResult:
    """Registers, shared memory and spills per kernel from ptxas, or none and why not; `started` is called once
    ptxas's process exists."""
    try:
        toolchain = find_toolchain(options.nvcc_path)
        return PtxasResult(ptxas_resources(ptx, _ptxas_target(ptx, options), toolchain, timeout_s=options.timeout_s,
                                           memory_mb=options.compile_memory_mb, cancel=cancel, started=started))
    except ToolchainError as exc:
        return PtxasResult({}, f"registers unknown: {exc}")
    except PtxasError as exc:
        if exc.timed_out:
            return PtxasResult({}, PTXAS_STOPPED + str(exc), stopped=True)
        return PtxasResult({}, f"registers unknown: {exc}")
    except Exception as exc:  # noqa: BLE001 - ptxas failing on odd PTX must not stop the analysis
        return PtxasResult({}, f"registers unknown: ptxas failed ({exc})")


#: how the note of a ptxas run that was stopped (timeout, signal, memory limit) begins (`PtxasResult.stopped`)
PTXAS_STOPPED = "registers unknown for now (ptxas was stopped; the next analysis runs it again): "


#: seconds `start_ptxas` waits at most for ptxas's process to exist (it exists within a few ms when a worker and
#: a compile slot are free)
PTXAS_START_WAIT_S = 0.02


def start_ptxas(ptx: str, options: AnalysisOptions, cancel: threading.Event | None = None) -> Future[PtxasResult]:
    """Run ptxas in the background: the parse and the stages that need no register numbers run meanwhile.

    Returns once ptxas's process exists (or the job ended, or after PTXAS_START_WAIT_S): the worker needs the
    interpreter for a few ms to start it, and the analysis thread, which goes on at once with the parse, would
    hold it for a switch interval (5 ms) at a time, while ptxas, and the stages waiting for it, have not begun."""
    running = threading.Event()
    job = _PTXAS_POOL.submit(_ptxas_resources, ptx, options, cancel, running.set)
    job.add_done_callback(lambda _: running.set())
    running.wait(PTXAS_START_WAIT_S)
    return job


def start_ptxas_cached(ptx: str, options: AnalysisOptions, cache: KernelCache,
                       cancel: threading.Event | None = None
                       ) -> tuple[Future[PtxasResult], dict[str, tuple[int, int]]]:
    """ptxas on the kernels whose assembled text is new to the cache, started at once (before the parse; the
    kernels are found by a text scan), and the others' numbers from the cache; also the kernels scanned, with
    the (first, last) line of each one's text."""
    spans = entry_spans(ptx)
    keys = ptxas_keys(ptx, spans, _ptxas_target(ptx, options), options.nvcc_path)
    table = {name: found for name, key in keys.items() if (found := cache.resources(key)) is not None}
    missing = [name for name in keys if name not in table]
    out: Future[PtxasResult] = Future()
    if not missing:
        out.set_result(PtxasResult(table))
        return out, spans
    cache.counters.ptxas_runs += 1
    cache.counters.ptxas_kernels += len(missing)
    fresh = start_ptxas(without_lines(ptx, [spans[n] for n in table]) if table else ptx, options, cancel)

    def merge(done: Future[PtxasResult]) -> None:
        try:
            new = done.result()
        except BaseException as exc:  # noqa: BLE001 - cancelled at shutdown: the waiting analysis must go on
            out.set_result(PtxasResult(table, f"registers unknown: ptxas did not run ({exc!r})"))
            return
        for name in missing:
            if name in new.table:
                cache.put_resources(keys[name], new.table[name])
        out.set_result(new._replace(table={**table, **new.table}))

    fresh.add_done_callback(merge)
    return out, spans


def _analyze_ptx(report: FileReport, ptx: str, options: AnalysisOptions, cuda_source: str | None,
                 cache: KernelCache | None = None, includer: tuple[Path, str] | None = None,
                 cancel: threading.Event | None = None, scans: FileScans | None = None) -> FileReport:
    """The stages on every kernel of `ptx`; with an `includer` (path, text), the PTX is that file's and only
    the kernels defined in the analysed file are reported, with their launches read from the includer. `scans`
    holds the source scans made for this analysis so far (the one made while nvcc ran)."""
    # ptxas starts at once, overlapping the parse and the analysis; with a cache, on the new kernels only.
    if cache is None:
        resources, seen = start_ptxas(ptx, options, cancel), {}
    else:
        resources, seen = start_ptxas_cached(ptx, options, cache, cancel)
    try:
        module = parse_ptx(ptx, report.file, reuse=cache.functions if cache is not None else None)
    except PtxSyntaxError as exc:
        line = exc.line if cuda_source is None else 1
        report.findings.append(ptx_syntax_finding(line, exc.column, f"malformed PTX: {exc.message}"))
        return report
    _report_function_errors(report, module, cuda_source is not None)
    if not module.kernels:
        report.notes.append("no kernel (.entry) in this file")
        return report
    if cache is not None and not {fn.name for fn in module.kernels} <= seen.keys():  # the scan missed a kernel
        resources = start_ptxas(ptx, options, cancel)
    check_cancel(cancel)
    names = _display_names(module)
    if cuda_source is None:
        _locate_in_ptx(module, report.file)
    main_file = _main_file(module, report.file) if cuda_source is not None else None
    gpu, gpu_problem = load_gpu(options.gpu)
    report.gpu_name = gpu.name if gpu is not None else None
    if gpu_problem is not None:
        report.findings.append(gpu_problem)
    for fn in module.kernels:
        fn.demangled = names.get(fn.name, fn.name)
    kernels = module.kernels if includer is None else [fn for fn in module.kernels
                                                       if cuda_source and _definition_spans(fn, cuda_source)]
    if not kernels:
        report.notes.append(f"no kernel is defined in {Path(report.file).name}")
        return report
    homes = _homes(kernels, cuda_source, report.file, options) if includer is None else {}
    scans = FileScans() if scans is None else scans  # each source file scanned once for all the kernels' launches

    def context(fn: Function, structure: tuple[Cfg, LoopForest] | None = None) -> KernelContext:
        home = homes.get(fn.name)
        ctx = _kernel_context(module, fn, options, home.text if home else cuda_source,
                              home.ptx_file if home else main_file, resources, structure, cache)
        ctx.gpu = gpu
        ctx.source_path = home.path if home else report.file
        ctx.scans = scans
        if includer is not None:
            ctx.launch_source = (includer[1], str(includer[0]))
        elif home is not None:  # defined in a file the analysed one includes, launched from the analysed one
            ctx.launch_source = (cuda_source or "", report.file)
            ctx.report.file = home.path
        return ctx

    # Every kernel's stages that need no ptxas numbers run first, while ptxas works in the background.
    split = STAGES.index(resources_stage) if resources_stage in STAGES else 0
    if cache is None:
        todo = contexts = [context(fn) for fn in kernels]
        keys: dict[int, str] = {}
        moved_keys: dict[int, str] = {}
    else:
        contexts, todo, keys, moved_keys = _from_cache(cache, kernels, context, split, cancel,
                                                       lambda contexts: _KernelKeys(ptx, contexts, options, gpu,
                                                                                    cuda_source, report.file,
                                                                                    main_file, seen, cache))
    _run_stages(todo, STAGES[:split], cancel)
    _run_stages(todo, STAGES[split:], cancel)
    check_cancel(cancel)
    finish_power(todo, cache)  # every analysed kernel's power in one batched prediction
    for ctx in todo:
        _mark_file(ctx.report)
    if cache is not None:
        stopped = resources is not None and resources.result().stopped
        for ctx in todo:
            if not (stopped and ctx.report.resources is None):
                cache.put(keys[id(ctx)], ctx.report)
                if id(ctx) in moved_keys:
                    cache.put_moved(ctx.function.name, moved_keys[id(ctx)], ctx.report, ctx.function.ptx_line)
    report.kernels.extend(ctx.report for ctx in contexts if ctx.report.file is None)
    report.included_kernels.extend(ctx.report for ctx in contexts if ctx.report.file is not None)
    if resources is not None:
        why_not = resources.result().why_not
        if why_not:
            report.notes.append(why_not)
    return report


def _run_stages(contexts: list[KernelContext], stages: list[Stage], cancel: threading.Event | None) -> None:
    """The stages on every kernel in turn, each kernel's only once the caller still wants the analysis."""
    for ctx in contexts:
        check_cancel(cancel)
        for stage in stages:
            stage(ctx)


def _from_cache(cache: KernelCache, kernels: list[Function], context: Callable[..., KernelContext], split: int,
                cancel: threading.Event | None, keying: Callable[[list[KernelContext]], _KernelKeys]
                ) -> tuple[list[KernelContext], list[KernelContext], dict[int, str], dict[int, str]]:
    """Every kernel's context, the kernels found in the cache given their reports; also the contexts to analyse
    and their keys and moved keys (by context id).

    A kernel's key needs its launch, so the launch stage runs on every kernel first, and nothing else: no other
    stage before it feeds the key. A kernel whose parsed function is the one an earlier analysis had (its text
    and place unchanged) takes that analysis's CFG and loops for this, instead of building them again, since the
    launch stage reads neither. A kernel to analyse gets a context of its own (its CFG its own, never an earlier
    analysis's) and a fresh report, on which every stage runs in order, as without a cache."""
    built: set[int] = set()  # contexts whose CFG and loops were made now
    contexts = []
    for fn in kernels:
        kept = cache.structure(fn)
        ctx = context(fn, kept)
        if kept is None:
            built.add(id(ctx))
        contexts.append(ctx)
    cache.keep_structures([(ctx.function, ctx.cfg, ctx.loops) for ctx in contexts])
    _run_stages(contexts, [launch_stage] if launch_stage in STAGES[:split] else [], cancel)
    keys, moved_keys = _look_up(cache, keying(contexts), contexts)
    todo = []
    for i, ctx in enumerate(contexts):
        if id(ctx) not in keys:
            continue
        fresh = context(ctx.function, (ctx.cfg, ctx.loops) if id(ctx) in built else None)
        keys[id(fresh)] = keys.pop(id(ctx))
        if id(ctx) in moved_keys:
            moved_keys[id(fresh)] = moved_keys.pop(id(ctx))
        contexts[i] = fresh
        todo.append(fresh)
    return contexts, todo, keys, moved_keys


def _look_up(cache: KernelCache, keying: _KernelKeys, contexts: list[KernelContext]
              ) -> tuple[dict[int, str], dict[int, str]]:
    """Give each kernel found in the cache, by its key or as moved, its report; the keys and moved keys (by
    context id) of the others, which are to be analysed and kept under them.

    A kernel found by its key needs no moved key: only the others' are made (a save that changed one kernel
    makes one)."""
    keys = {id(ctx): keying.key(ctx) for ctx in contexts}
    missed: dict[int, str] = {}
    moved_keys: dict[int, str] = {}
    for ctx in contexts:
        found = cache.get(keys[id(ctx)])
        moved = keying.moved_key(ctx) if found is None else None
        if moved is not None:  # a kernel that only moved: its previous report on its new lines
            found = cache.moved(ctx.function.name, moved, ctx.report.line, ctx.function.ptx_line)
            if found is not None:
                cache.put(keys[id(ctx)], found)
        if found is not None:
            ctx.report = found
            continue
        missed[id(ctx)] = keys[id(ctx)]
        if moved is not None:
            moved_keys[id(ctx)] = moved
    return missed, moved_keys


class _KernelKeys:
    """The cache keys of one analysis's kernels: per kernel, its PTX text and position, the rest of the module,
    its launch (which with the PTX fixes the trip counts, worked out after the lookup), the GPU profile, the
    settings and the source lines its findings may point at (in the file that defines it, which for a kernel of
    an included header is the header).

    Also, for the kernels of a `.cu` file's own text, the moved key: the same parts with the analysed file's
    lines written relative to the kernel's first line (`kernel_shift`), equal for the kernel moved by an edit
    above it. The parts every kernel shares are made once; those only moved keys need, only when a kernel
    missed its key (a save that changed one kernel makes one moved key, not one per kernel)."""

    def __init__(self, ptx: str, contexts: list[KernelContext], options: AnalysisOptions, gpu: GpuProfile | None,
                 cuda_source: str | None, file: str, main_file: str | None,
                 scanned_spans: dict[str, tuple[int, int]] | None = None, cache: KernelCache | None = None) -> None:
        kernels = [ctx.function for ctx in contexts]
        self.cache = cache
        self.lines = ptx.splitlines()
        # the text scan's spans where it found the kernel where the parser did (`start_ptxas_cached`)
        known = scanned_spans or {}
        self.spans = {fn.name: span if (span := known.get(fn.name)) is not None and span[0] == fn.ptx_line
                      else line_spans(self.lines, [fn.ptx_line])[0] for fn in kernels}
        self.outside = without_debug_sections(without_lines(ptx, list(self.spans.values())))
        self.settings = (repr(options), repr(gpu), file, main_file, cuda_source is None)
        self.shared = digest(self.outside, *self.settings)
        self.index = file_index(ptx, main_file) if cuda_source is not None else None
        #: per kernel context (by id): the source lines its findings may point at, and their text
        self._used: dict[int, tuple[list[int], list[str]]] = {}
        #: each source text's lines, split once for all the kernels that read it
        self._source_lines: dict[int, list[str]] = {}

    def used(self, ctx: KernelContext) -> tuple[list[int], list[str]]:
        """The lines of the analysed file the kernel's instructions (and its first line) name, and their text."""
        found = self._used.get(id(ctx))
        if found is None:
            used = sorted({*_body_lines(ctx.function, ctx.main_file, self.cache), ctx.report.line or 0})
            lines = self._lines_of(ctx.cuda_source)
            found = self._used[id(ctx)] = (used, [lines[ln - 1] for ln in used if 1 <= ln <= len(lines)])
        return found

    def _lines_of(self, source: str | None) -> list[str]:
        """A source text's lines, split on the first kernel's question only."""
        if source is None:
            return []
        lines = self._source_lines.get(id(source))
        if lines is None:
            lines = self._source_lines[id(source)] = source.splitlines()
        return lines

    def own(self, ctx: KernelContext) -> tuple[int, int, str]:
        """The kernel's first and last PTX line and its text."""
        first, last = self.spans[ctx.function.name]
        return first, last, "\n".join(self.lines[first - 1:last])

    def key(self, ctx: KernelContext) -> str:
        """The kernel's cache key."""
        first, last, own = self.own(ctx)
        used, text = self.used(ctx)
        return digest(self.shared, first, last, own, ctx.function.display_name, ctx.report.file, ctx.main_file,
                      ctx.report.line, repr(ctx.report.launch), used, text)

    @functools.cached_property
    def shared_moved(self) -> tuple[int | None, str]:
        """The first line the module's other code names, and the digest of that code relative to it."""
        base = first_loc_line(self.outside, self.index)
        return base, digest(relative_loc(self.outside, self.index, base or 0), *self.settings)

    def moved_key(self, ctx: KernelContext) -> str | None:
        """The kernel's moved key; None for a kernel of another file or without a line or a `.file` entry."""
        base = ctx.report.line
        if self.index is None or base is None or ctx.report.file is not None:
            return None
        first, last, own = self.own(ctx)
        used, text = self.used(ctx)
        outside_base, shared = self.shared_moved
        return digest(shared, None if outside_base is None else outside_base - base, last - first,
                      relative_loc(own, self.index, base), ctx.function.display_name, ctx.main_file,
                      repr(shifted(ctx.report.launch, -base, -first)), [moved_line(ln, -base) for ln in used], text)


def _homes(kernels: list[Function], cuda_source: str | None, file: str,
           options: AnalysisOptions) -> dict[str, KernelHome]:
    """The files that define the kernels a `.cu` compiles but does not define itself (`kernel_homes`)."""
    if cuda_source is None:
        return {}
    elsewhere = [fn for fn in kernels if not _definition_spans(fn, cuda_source)]
    return included_homes(elsewhere, cuda_source, file, list(options.include_dirs)) if elsewhere else {}


def _mark_file(report: KernelReport) -> None:
    """Give a kernel's findings, and their related locations, the file of a kernel defined in another file."""
    if report.file is None:
        return
    for f in report.findings:
        f.file = report.file
        for r in f.related:
            if r.file is None:
                r.file = report.file


def _report_function_errors(report: FileReport, module: Module, from_cuda: bool) -> None:
    """One error per function the parser had to skip; the file's other kernels are analysed as usual.

    For a `.cu` input the PTX position means nothing in the open document, so the error sits on line 1 and
    names the function and the PTX line instead.
    """
    for err in module.errors:
        who = f"function {err.name}" if err.name else f"the function at PTX line {err.function_line}"
        line = 1 if from_cuda else err.line
        where = f" (PTX line {err.line})" if from_cuda else ""
        report.findings.append(ptx_syntax_finding(line, err.column,
                                                  f"malformed PTX in {who}{where}: {err.message}; not analysed"))


def _locate_in_ptx(module: Module, path: str) -> None:
    """For a `.ptx` input the analysed file is the PTX itself: every instruction's line is its PTX line.

    nvcc's `.loc` directives point into the `.cu` file the PTX came from, which is not the document the user
    has open, so findings, loops and hotspots are placed on the PTX lines instead.
    """
    for fn in module.functions:
        for ins in fn.body:
            ins.loc = SourceLoc(path, ins.ptx_line, ins.ptx_column)


def _display_names(module: Module) -> dict[str, str]:
    return demangle([f.name for f in module.kernels])


def _main_file(module: Module, path: str) -> str:
    """The `.file` name of the analysed source: the most used one with the input's base name. Where none has
    it (every kernel is defined in a file the source #includes), the input's own path, which no instruction
    carries: those kernels then have no line in this document (their own file shows them), rather than the
    lines of another file."""
    base = os.path.basename(path)
    counts: Counter[str] = Counter()
    for fn in module.kernels:
        for ins in fn.body:
            if ins.loc is not None:
                counts[ins.loc.file] += 1
    same = [f for f in counts if os.path.basename(f) == base]
    return max(same, key=lambda f: counts[f]) if same else path


def _kernel_context(module: Module, fn: Function, options: AnalysisOptions, cuda_source: str | None,
                    main_file: str | None, ptxas: Future[PtxasResult] | None,
                    structure: tuple[Cfg, LoopForest] | None = None, cache: KernelCache | None = None
                    ) -> KernelContext:
    """A kernel's context before any stage, with the given CFG and loops (made now without); `cache` keeps what
    its first line is read from (`_body_lines`)."""
    if structure is None:
        cfg = build_cfg(fn)
        structure = cfg, find_loops(cfg)
    cfg, loops = structure
    line = fn.ptx_line if cuda_source is None else _kernel_line(fn, main_file, cuda_source, cache)
    report = KernelReport(name=fn.display_name, mangled=fn.name, line=line)
    return KernelContext(module, fn, report, options, cuda_source, main_file, cfg, loops, ptxas=ptxas)


def _kernel_line(fn: Function, main_file: str | None, cuda_source: str, cache: KernelCache | None = None
                 ) -> int | None:
    """The kernel's first line in the analysed file, from the instructions that lie in its own definition:
    device functions inlined into it are defined elsewhere (often above it), and their lines would move it."""
    lines = _body_lines(fn, main_file, cache)
    spans = _definition_spans(fn, cuda_source)
    own = [ln for ln in lines if any(first <= ln <= last for first, last in spans)]
    found = own or lines
    return min(found) if found else None


def _body_lines(fn: Function, main_file: str | None, cache: KernelCache | None = None) -> tuple[int, ...]:
    """The lines of `main_file` the function's instructions name, in order, each once. With a cache, made once
    per parsed function: a kernel whose text is unchanged is handed on as the same object (`ptx.reuse`), and its
    first line and its cache key read these on every save."""
    kept = cache.body_lines(fn, main_file) if cache is not None else None
    if kept is None:
        kept = tuple(sorted({ln for i in fn.body if (ln := line_in_file(i.loc, main_file)) is not None}))
        if cache is not None:
            cache.put_body_lines(fn, main_file, kept)
    return kept


def _definition_spans(fn: Function, cuda_source: str) -> tuple[tuple[int, int], ...]:
    """(first, last) line of each definition in the source of a kernel with this function's name."""
    base, _ = split_kernel_name(fn.display_name)
    return _definitions(cuda_source).get(base, ())


@functools.lru_cache(maxsize=8)
def _definitions(cuda_source: str) -> dict[str, tuple[tuple[int, int], ...]]:
    """Per kernel name (without template arguments), the (first, last) line of each of its definitions in the
    source; made once per text, not once per kernel and question (each of a file's kernels asks two or three
    times, and each answer looked through every definition). Treat as read-only: it is shared."""
    facts = scanned(cuda_source)
    if facts is None:  # unscannable source: no spans, every line counts
        return {}
    found: dict[str, list[tuple[int, int]]] = {}
    for d in facts.kernels:
        if d.body_end is not None:
            found.setdefault(d.base_name, []).append((facts.position(d.start_offset)[0],
                                                      facts.position(d.body_end)[0]))
    return {name: tuple(spans) for name, spans in found.items()}


# ------------------------------------------------------------------------------------------------ stages


def power_stage(ctx: KernelContext) -> None:
    """Features, per-event energy and energy hotspots of one kernel (`kerncast.analysis.stages.power`)."""
    # lazy import: the power runtime (its models and their tree evaluator), which `kerncast analyze --help`,
    # a file without kernels and the language server's start-up need not load (tests/test_cli_imports.py).
    from kerncast.analysis.stages.power import power_stage as power_inputs

    power_inputs(ctx)


def finish_power(contexts: list[KernelContext], cache: KernelCache | None = None) -> None:
    """Every kernel's power in one batched prediction, then its energy (`kerncast.analysis.stages.power`); with
    a cache, predictions of features seen before are reused."""
    if not contexts:
        return
    # lazy import: the power runtime, as in `power_stage`
    from kerncast.analysis.stages.power import finish_power as predict_powers

    predict_powers(contexts, cache.powers if cache is not None else None)


#: The stages, in data-flow order. Each later capability adds its stage here.
STAGES: list[Stage] = [
    structure_stage,
    launch_stage,
    trip_count_stage,
    memory_stage,
    barrier_divergence_stage,
    resources_stage,
    occupancy_stage,
    time_stage,
    launch_configuration_stage,
    power_stage,
    resource_stage,
    local_memory_stage,
    fp64_stage,
    slow_division_stage,
    atomic_contention_stage,
    missing_restrict_stage,
    shared_tiling_stage,
    assumed_loops_stage,
    gain_stage,  # last: it reads the time and the findings of every stage before it
]
