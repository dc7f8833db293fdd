"""How many `unknown-access` findings on public code bases hold an address with no loaded value in it.

Fetches nothing. Give it directories (checkouts of public CUDA code: HeCBench, PolyBench-ACC, Parboil, ...);
it compiles a deterministic sample of the `.cu` files below each (every file, or every k-th of the sorted list
with `--sample N`) through Kerncast's own compile (`compile_cuda`, the stand-ins a user's file gets included),
keeps the PTX in `--cache` so a second run (e.g. on another commit) reads the same PTX, and analyses each
kernel as the pipeline does: the launch read from the file's `<<<>>>` sites, the trip counts under it, then
the memory analysis. For each source line with an `unknown-access` finding it reads whether the address
has an indirection, as the memory analysis decided for each unknown access (`AccessInfo.gather`): the
backward slice of the address register over the kernel's reaching definitions reaches a load, atomic,
shuffle, texture fetch or call result (a parameter load does not count). A line with no such value in any
of its unknown accesses is an affine-looking index the analysis should have read; those are the lines this
script exists to count. It prints, per code base and overall: files, kernels, unknown-access lines, and how
many of them have no indirection.

    nice .venv/bin/python benchmarks/unknown_access.py /tmp/corpus/PolyBench-ACC/CUDA \\
        /tmp/corpus/Parboil/benchmarks /tmp/corpus/HeCBench/src --sample 100 [--arch sm_80] \\
        [--cache /tmp/kerncast-unknown-access] [--list]

With `--list` every unknown-access line is printed with its verdict, so a regression can be read at its line.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.dataflow import ODD_PTX_ERRORS, KernelDataflow
from kerncast.analysis.demangle import demangle
from kerncast.analysis.findings.memory import memory_findings
from kerncast.analysis.launch import infer_launch
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import AccessInfo, analyze_memory
from kerncast.analysis.memory.analysis import DEFAULT_BUDGET_S
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import PtxSyntaxError, parse_ptx
from kerncast.analysis.ptx.model import Function, Module
from kerncast.analysis.rules import Code
from kerncast.analysis.toolchain import ToolchainError
from kerncast.analysis.tripcount import trip_counts, trip_values

_INCLUDE_DIR_NAMES = frozenset({"common", "Common", "inc", "include"})


@dataclass
class Tally:
    """The figures of one code base."""

    name: str
    files: int = 0
    compiled: int = 0
    kernels: int = 0
    lines: int = 0
    affine: int = 0
    crashes: int = 0
    listing: list[str] = field(default_factory=list)


def sample(files: list[Path], n: int | None) -> list[Path]:
    """Every k-th file of the sorted list, about `n` of them (all when n is None or larger)."""
    if n is None or n >= len(files):
        return files
    stride = len(files) / n
    return [files[int(i * stride)] for i in range(n)]


def include_dirs(root: Path) -> list[str]:
    """Shared header folders of a code base (`common`, `include`, ...) within three levels of its root."""
    found: list[str] = []
    for dirpath, dirnames, _ in os.walk(root):
        if len(Path(dirpath).relative_to(root).parts) >= 3:
            dirnames[:] = []
        found += [str(Path(dirpath) / d) for d in dirnames if d in _INCLUDE_DIR_NAMES]
    for parent in root.parents[:2]:  # PolyBench-ACC's common/ sits beside CUDA/
        found += [str(parent / d) for d in _INCLUDE_DIR_NAMES if (parent / d).is_dir()]
    return sorted(set(found))


def compiled_ptx(cu: Path, arch: str, incs: list[str], cache: Path) -> str | None:
    """The PTX of one file from Kerncast's compile, kept in `cache` (None when it does not compile)."""
    key = hashlib.sha256(f"{cu.resolve()}|{arch}|{incs}".encode()).hexdigest()[:16]
    out = cache / f"{cu.stem}-{arch}-{key}.ptx"
    failed = out.with_suffix(".failed")
    if out.is_file():
        return out.read_text(encoding="utf-8", errors="replace")
    if failed.is_file():
        return None
    try:
        result = compile_cuda(cu, options=CompileOptions(arch=arch, include_dirs=[str(cu.parent), *incs]),
                              with_resources=False)
    except ToolchainError:
        result = None
    if result is None or not result.ok or not result.ptx:
        failed.write_text("")
        return None
    out.write_text(result.ptx)
    return result.ptx


def main_file(module: Module, path: Path) -> str:
    """The `.file` name of the analysed source (the one with the input's base name used most)."""
    counts: Counter[str] = Counter(ins.loc.file for fn in module.kernels for ins in fn.body if ins.loc)
    same = [f for f in counts if os.path.basename(f) == path.name]
    return max(same, key=lambda f: counts[f]) if same else str(path)


def analyse_kernel(module: Module, fn: Function, source: str, cu: Path, main: str, tally: Tally) -> None:
    """One kernel as the pipeline analyses it; its unknown-access lines counted and judged."""
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    df = KernelDataflow(fn, cfg, loops)
    launch = infer_launch(fn.display_name, source, source_path=str(cu))
    counts = trip_counts(fn, cfg, loops, launch, df, main)
    trips = {h: int(v) for h, v in trip_values(counts).items() if v >= 0}
    block = launch.block_dims(known_only=True)
    res = analyze_memory(module, fn, cfg, loops, block, launch.known_params(), trips, Thresholds(), main,
                         cuda_source=source, dataflow=df)
    unknown: dict[int, list[AccessInfo]] = {}
    for a in res.accesses:
        if a.space in ("global", "shared") and not a.known and a.active_lanes and a.line is not None:
            unknown.setdefault(a.line, []).append(a)
    for f in memory_findings(res, Thresholds(), source, None, DEFAULT_BUDGET_S):
        if f.code != Code.UNKNOWN_ACCESS:
            continue
        tally.lines += 1
        accesses = unknown.get(f.line, [])
        affine = bool(accesses) and not any(a.gather for a in accesses)
        tally.affine += affine
        text = source.splitlines()[f.line - 1].strip() if 0 < f.line <= len(source.splitlines()) else ""
        tally.listing.append(f"{'affine  ' if affine else 'indirect'} {cu}:{f.line} {fn.display_name[:40]}: "
                             f"{text[:90]}")


def run_base(root: Path, args: argparse.Namespace, cache: Path) -> Tally:
    tally = Tally(str(root))
    files = sample(sorted(p for p in root.rglob("*.cu") if p.is_file()), args.sample)
    incs = include_dirs(root)
    for cu in files:
        tally.files += 1
        ptx = compiled_ptx(cu, args.arch, incs, cache)
        if ptx is None:
            continue
        try:
            module = parse_ptx(ptx, str(cu))
        except PtxSyntaxError:
            continue
        tally.compiled += 1
        source = cu.read_text(encoding="utf-8", errors="replace")
        main = main_file(module, cu)
        names = demangle([fn.name for fn in module.kernels])  # the launch sites name kernels as the source does
        for fn in module.kernels:
            fn.demangled = names.get(fn.name, fn.name)
            tally.kernels += 1
            try:
                analyse_kernel(module, fn, source, cu, main, tally)
            except ODD_PTX_ERRORS:
                tally.crashes += 1
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("roots", nargs="+", type=Path, help="code bases on disk")
    parser.add_argument("--sample", type=int, default=None, help="about this many .cu files per code base")
    parser.add_argument("--arch", default="sm_80")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/kerncast-unknown-access"))
    parser.add_argument("--list", action="store_true", help="print every unknown-access line with its verdict")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    tallies = [run_base(root.resolve(), args, args.cache) for root in args.roots]
    print(f"{'code base':50} {'files':>6} {'built':>6} {'kernels':>8} {'unknown':>8} {'no-indir':>9}")
    for t in tallies:
        print(f"{t.name[-50:]:50} {t.files:6} {t.compiled:6} {t.kernels:8} {t.lines:8} {t.affine:9}")
        if args.list:
            for line in t.listing:
                print("   ", line)
    total = Tally("total", *(sum(getattr(t, f) for t in tallies)
                             for f in ("files", "compiled", "kernels", "lines", "affine", "crashes")))
    print(f"{'total':50} {total.files:6} {total.compiled:6} {total.kernels:8} {total.lines:8} {total.affine:9}")
    print(f"unknown-access lines with no indirection in the address: {total.affine} of {total.lines}; "
          f"kernels whose analysis raised: {total.crashes}; {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
