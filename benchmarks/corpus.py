"""How much real-world CUDA Kerncast's PTX front end and analyses accept: a corpus run over code bases on disk.

Fetches nothing. Give it directories (checkouts of public CUDA code, e.g. NVIDIA's cuda-samples, Rodinia,
CUTLASS examples); it compiles every `.cu` file below each with the project's nvcc (`-ptx`) at each target
architecture, then parses every PTX nvcc produced and runs the per-kernel analyses that need no GPU profile
(CFG, loops, instruction classes, memory analysis). It prints, per directory: files, PTX files, kernels, PTX
files with a syntax error (a whole file, or single functions), failures grouped by construct (the mnemonic or
directive where parsing stopped), analysis crashes, files nvcc could not compile (grouped by first reason),
and the time spent compiling and analysing.

    nice .venv/bin/python benchmarks/corpus.py /tmp/corpus/cuda-samples /tmp/corpus/rodinia \\
        [--arch sm_80,sm_90] [--max-files N] [--jobs 2] [--cache /tmp/kerncast-corpus] [-I DIR] [-D NAME=VALUE]
        [--std c++17] [--glob 'examples/cute/**/*.cu']

Include directories: each file's own directory, plus every directory named `common`, `Common`, `inc` or
`include` within three levels of the code base root (cuda-samples' `Common/`, CUTLASS's `include/`), plus `-I`.
With `--cache`, PTX files are kept there and reused by later runs (their compile time is then not counted).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.isa import classify
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import PtxSyntaxError, parse_ptx
from kerncast.analysis.toolchain import find_toolchain, run_tool

_INCLUDE_DIR_NAMES = frozenset({"common", "Common", "inc", "include"})
_MNEMONIC_RE = re.compile(r"^\s*(?:@!?%?\w+\s+)?([A-Za-z_.][\w.:]*)")
_TYPE_SUFFIX_RE = re.compile(r"\.(?:[subf](?:8|16|32|64)|b128|pred|v[248]|f16x2|bf16x2?|tf32)\b")
_MISSING_HEADER_RE = re.compile(r"fatal error: ([^:]+): No such file or directory|cannot open source file \"([^\"]+)\"")


@dataclass
class BaseStats:
    """Figures of one code base."""

    name: str
    cu_files: int = 0
    attempted: int = 0
    ptx_files: int = 0
    kernels: int = 0
    functions: int = 0
    file_errors: int = 0  # PTX files rejected whole
    files_with_function_errors: int = 0  # PTX files where some functions were skipped
    skipped_functions: int = 0
    constructs: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    crashes: Counter[str] = field(default_factory=Counter)
    compile_failures: Counter[str] = field(default_factory=Counter)
    compile_s: float = 0.0
    analyse_s: float = 0.0

    @property
    def clean(self) -> int:
        return self.ptx_files - self.file_errors - self.files_with_function_errors


def include_dirs(root: Path) -> list[Path]:
    """Directories a code base's sources include from without saying so (shared `common`/`include` dirs)."""
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        if depth >= 3:
            dirnames[:] = []
        for d in dirnames:
            if d in _INCLUDE_DIR_NAMES:
                found.append(Path(dirpath) / d)
    return sorted(found)


def cu_files(root: Path, globs: list[str]) -> list[Path]:
    """The `.cu` files below `root` (or only those matching the `--glob` patterns, relative to it)."""
    found = {p for g in (globs or ["**/*.cu"]) for p in root.glob(g) if p.is_file() and p.suffix == ".cu"}
    return sorted(found)


def compile_one(nvcc: str, cu: Path, arch: str, incs: list[Path], std: str | None, cache: Path,
                timeout_s: float, defines: list[str]) -> tuple[Path | None, str | None, float]:
    """(PTX path or None, failure reason or None, seconds spent) for one file at one arch."""
    stamp = f"{cu.resolve()}|{arch}|{std}|{[str(i) for i in incs]}|{defines}"
    key = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    out = cache / f"{cu.stem}-{arch}-{key}.ptx"
    if out.is_file():
        return out, None, 0.0
    args = [nvcc, "-ptx", "-lineinfo", f"-arch={arch}", "--expt-relaxed-constexpr", "--expt-extended-lambda",
            "-w", f"-I{cu.parent}", *[f"-I{d}" for d in incs]]
    if std:
        args.append(f"-std={std}")
    args += [f"-D{d}" for d in defines]
    args += ["-o", str(out), str(cu)]
    start = time.perf_counter()
    run = run_tool(args, timeout_s, cwd=str(cu.parent))
    spent = time.perf_counter() - start
    if run.timed_out:
        out.unlink(missing_ok=True)
        return None, f"timeout after {timeout_s:g} s", spent
    if run.returncode != 0 or not out.is_file():
        out.unlink(missing_ok=True)
        return None, _compile_reason(run.output), spent
    return out, None, spent


def _compile_reason(output: str) -> str:
    missing = _MISSING_HEADER_RE.search(output)
    if missing:
        return "missing header " + (missing.group(1) or missing.group(2)).strip()
    for line in output.splitlines():
        if "error" in line:
            return re.sub(r"^.*?error[^:]*:\s*", "error: ", line.strip())[:100]
    return "nvcc failed"


def construct_at(text: str, line: int) -> str:
    """The construct where parsing stopped: the statement's mnemonic without type suffixes, or the directive."""
    lines = text.split("\n")
    stmt = lines[line - 1] if 0 < line <= len(lines) else ""
    m = _MNEMONIC_RE.match(stmt)
    if not m:
        return stmt.strip()[:40] or "(empty line)"
    return _TYPE_SUFFIX_RE.sub("", m.group(1))


def analyse_ptx(path: Path, stats: BaseStats, label: str) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    start = time.perf_counter()
    stats.ptx_files += 1
    try:
        module = parse_ptx(text, str(path))
    except PtxSyntaxError as exc:
        stats.file_errors += 1
        construct = construct_at(text, exc.line)
        stats.constructs[construct] += 1
        stats.failures.append(f"{label}: whole file, {construct}: {exc}")
        stats.analyse_s += time.perf_counter() - start
        return
    if module.errors:
        stats.files_with_function_errors += 1
        for err in module.errors:
            stats.skipped_functions += 1
            construct = construct_at(text, err.line)
            stats.constructs[construct] += 1
            stats.failures.append(f"{label}: function {_short(err.name or '?')}, {construct}: "
                                  f"{err.line}:{err.column} {err.message}")
    stats.functions += len(module.functions)
    for fn in module.kernels:
        stats.kernels += 1
        try:
            for ins in fn.body:
                classify(ins)
            cfg = build_cfg(fn)
            loops = find_loops(cfg)
            analyze_memory(module, fn, cfg, loops, None, {}, {}, Thresholds())
        except Exception as exc:  # noqa: BLE001 - the corpus run counts crashes instead of stopping
            stats.crashes[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
            stats.failures.append(f"{label}: kernel {_short(fn.name)}: analysis crashed: {type(exc).__name__}: {exc}")
    stats.analyse_s += time.perf_counter() - start


def _short(name: str, limit: int = 60) -> str:
    """Mangled template names run to kilobytes; the head is enough to find the kernel."""
    return name if len(name) <= limit else name[:limit] + "..."


def run_base(root: Path, args: argparse.Namespace, nvcc: str, cache: Path) -> BaseStats:
    stats = BaseStats(root.name)
    files = cu_files(root, args.glob)
    stats.cu_files = len(files)
    if args.max_files is not None:
        files = files[:args.max_files]
    stats.attempted = len(files)
    incs = include_dirs(root) + [Path(d).resolve() for d in args.include]
    jobs = [(cu, arch) for cu in files for arch in args.arch.split(",")]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda job: (job, compile_one(nvcc, job[0], job[1], incs, args.std, cache,
                                                             args.timeout, args.defines)), jobs))
    for (cu, arch), (ptx, reason, spent) in results:
        stats.compile_s += spent
        label = f"{cu.relative_to(root)} [{arch}]"
        if ptx is None:
            stats.compile_failures[reason or "nvcc failed"] += 1
            continue
        analyse_ptx(ptx, stats, label)
    return stats


def print_stats(s: BaseStats, limit_note: str) -> None:
    ok_pct = 100.0 * s.clean / s.ptx_files if s.ptx_files else 0.0
    print(f"== {s.name}: {s.cu_files} .cu files{limit_note}")
    print(f"   PTX files nvcc produced: {s.ptx_files}; compile failures: {sum(s.compile_failures.values())}")
    print(f"   functions: {s.functions}, kernels analysed: {s.kernels}")
    print(f"   PTX files without a syntax error: {s.clean}/{s.ptx_files} ({ok_pct:.1f}%); rejected whole: "
          f"{s.file_errors}; with skipped functions: {s.files_with_function_errors} "
          f"({s.skipped_functions} functions)")
    if s.constructs:
        print("   syntax failures by construct:")
        for c, n in s.constructs.most_common():
            print(f"     {n:4d}  {c}")
    for line in s.failures:
        print(f"     - {line}")
    if s.crashes:
        print("   analysis crashes:")
        for c, n in s.crashes.most_common():
            print(f"     {n:4d}  {c}")
    if s.compile_failures:
        print("   nvcc failures by first reason (not PTX, not counted above):")
        for c, n in s.compile_failures.most_common(12):
            print(f"     {n:4d}  {c}")
    print(f"   time: compile {s.compile_s:.1f} s (cached PTX not counted), parse + analyses {s.analyse_s:.2f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="code base directories (already on disk)")
    ap.add_argument("--arch", default="sm_80,sm_90", help="comma-separated targets (default sm_80,sm_90)")
    ap.add_argument("--max-files", type=int, default=None, help="compile only the first N .cu files of each dir")
    ap.add_argument("--jobs", type=int, default=1, help="parallel nvcc runs (default 1: the CPU is shared)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per nvcc run")
    ap.add_argument("--cache", type=Path, default=None, help="keep PTX here and reuse it on later runs")
    ap.add_argument("-I", dest="include", action="append", default=[], help="extra include directory")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="extra define, NAME or NAME=VALUE")
    ap.add_argument("--glob", action="append", default=[],
                    help="only the .cu files matching this pattern, relative to each directory (repeatable)")
    ap.add_argument("--std", default="c++17", help="C++ standard for nvcc (default c++17)")
    args = ap.parse_args(argv)
    missing = [d for d in args.dirs if not d.is_dir()]
    if missing:
        print(f"not a directory: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    nvcc = str(find_toolchain().nvcc)
    totals = BaseStats("all")
    with tempfile.TemporaryDirectory(prefix="kerncast-corpus-") as tmp:
        cache = args.cache or Path(tmp)
        cache.mkdir(parents=True, exist_ok=True)
        for root in args.dirs:
            s = run_base(root.resolve(), args, nvcc, cache)
            note = f" (first {s.attempted} compiled)" if s.attempted < s.cu_files else ""
            print_stats(s, note)
            for name in ("ptx_files", "kernels", "functions", "file_errors", "files_with_function_errors",
                         "skipped_functions"):
                setattr(totals, name, getattr(totals, name) + getattr(s, name))
            totals.compile_s += s.compile_s
            totals.analyse_s += s.analyse_s
    pct = 100.0 * totals.clean / totals.ptx_files if totals.ptx_files else 0.0
    print(f"== total: {totals.ptx_files} PTX files, {totals.kernels} kernels, {totals.clean} without a syntax error "
          f"({pct:.1f}%), compile {totals.compile_s:.0f} s, parse + analyses {totals.analyse_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
