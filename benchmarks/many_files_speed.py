"""`kerncast analyze DIR -j 2 --format sarif` over 100+ PTX files, against one `kerncast` process per file.

The PTX files are the project's own kernels (`examples/`, `tests/kernels/`, `benchmarks/data/`) compiled by
nvcc at several architectures into a cache folder (compiled once; nvcc time is not part of either figure).
Then the same files are analysed twice: one `kerncast analyze FILE --format sarif` process per file, one after
the other, and one `kerncast analyze DIR -j 2 --format sarif`. Prints both wall times and their ratio.

    .venv/bin/python benchmarks/many_files_speed.py [--out DIR] [--jobs 2] [--baseline-sample N]

`--baseline-sample N` times the one-process-per-file way on every k-th file only (N files) and scales it to
all files, for a quick run; the default times every file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kerncast.analysis.compile import CompileOptions, compile_cuda

ROOT = Path(__file__).resolve().parent.parent
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
SOURCES = sorted([*ROOT.glob("examples/*.cu"), *ROOT.glob("tests/kernels/*.cu"), *ROOT.glob("benchmarks/data/*.cu")])
KERNCAST = [sys.executable, "-m", "kerncast.server"]


def generate(out: Path) -> list[Path]:
    """Compile every source at every architecture into `out` (skipping files already there)."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for src in SOURCES:
        for arch in ARCHS:
            target = out / f"{src.parent.name}-{src.stem}.{arch}.ptx"
            if not target.exists():
                result = compile_cuda(src, options=CompileOptions(arch=arch), with_resources=False)
                if result.ptx is None:
                    print(f"{src.name} at {arch}: did not compile", file=sys.stderr)
                    continue
                target.write_text(result.ptx)
            files.append(target)
    return files


def one_process_per_file(files: list[Path]) -> float:
    start = time.perf_counter()
    for f in files:
        subprocess.run([*KERNCAST, "analyze", str(f), "--format", "sarif"], check=False, capture_output=True,
                       timeout=600)
    return time.perf_counter() - start


def pooled(folder: Path, jobs: int) -> tuple[float, int]:
    start = time.perf_counter()
    run = subprocess.run([*KERNCAST, "analyze", str(folder), "-j", str(jobs), "--format", "sarif"], check=False,
                         capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - start
    log = json.loads(run.stdout)
    return elapsed, len(log["runs"][0]["artifacts"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "kerncast-many-ptx")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--baseline-sample", type=int, default=0, metavar="N")
    args = parser.parse_args()
    files = generate(args.out)
    print(f"{len(files)} PTX files from {len(SOURCES)} sources at {len(ARCHS)} architectures in {args.out}")
    sample = files
    if args.baseline_sample and args.baseline_sample < len(files):
        step = len(files) / args.baseline_sample
        sample = [files[int(i * step)] for i in range(args.baseline_sample)]
    base = one_process_per_file(sample) * len(files) / len(sample)
    pool_s, artifacts = pooled(args.out, args.jobs)
    note = f" (timed on {len(sample)} files, scaled)" if sample is not files else ""
    print(f"one process per file: {base:8.1f} s{note}")
    print(f"analyze DIR -j {args.jobs}:     {pool_s:8.1f} s   ({artifacts} SARIF artifacts)")
    print(f"ratio: {pool_s / base:.3f} (target <= 0.25)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
