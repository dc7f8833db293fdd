"""Measure the project's own kernels on the local NVIDIA GPU into `validation/<gpu>/measurements.csv`.

Each case is one kernel of `examples/`, `tests/kernels/` or `benchmarks/data/` at one launch: a small launch
(latency and launch overhead dominate) and a large one (throughput dominates) where the kernel allows it. Every
case runs through `kerncast measure` (its own process: a harness is built with nvcc, the kernel timed with CUDA
events until stable, NVML power sampled), so a case that fails is reported and the others still run. Needs a
GPU; without one every case fails with `kerncast measure`'s one-line reason.

    python benchmarks/measure_gpu.py --gpu h100 [--only SUBSTRING] [--timeout 120]

The rows are validation data: `benchmarks/validate_measured.py` compares the predictions with them, and no
constant is fitted to them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from launch_case import LaunchCase

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20


@dataclass(frozen=True)
class Case(LaunchCase):
    """One launch to measure; `nbytes` sizes every pointer buffer (None: threads launched x element size)."""

    nbytes: int | None = None


def _case(file: str, kernel: str, grid: str, block: str, params: tuple[str, ...] = (), nbytes: int | None = None,
          smem: int | None = None) -> Case:
    return Case(file, kernel, grid, block, tuple(params), smem, nbytes)


def _pair(file: str, kernel: str, small: tuple, large: tuple) -> list[Case]:
    """The same kernel at a small and a large launch, each `(grid, block, params, nbytes[, smem])`."""
    return [_case(file, kernel, *launch) for launch in (small, large)]


_T = "examples/transpose.cu"
_TK = "tests/kernels/"
CASES: list[Case] = [
    *_pair("examples/vector_add.cu", "vectorAdd", ("196", "256", ("n=50000",), None),
           ("65536", "256", ("n=16777216",), None)),
    *_pair("examples/saxpy.cu", "saxpy", ("2000", "512", ("n=1024000",), None),
           ("32768", "512", ("n=16777216",), None)),
    *_pair("examples/matmul.cu", "MatrixMulCUDA<32>", ("32,32", "32,32", ("wA=1024", "wB=1024"), 4 * MiB),
           ("64,64", "32,32", ("wA=2048", "wB=2048"), 16 * MiB)),
    *_pair("examples/matmul.cu", "matmulNaive", ("64,64", "16,16", ("n=1024",), 4 * MiB),
           ("128,128", "16,16", ("n=2048",), 16 * MiB)),
    *[c for k in ("transposeNaive", "transposeTiled", "transposePadded")
      for c in _pair(_T, k, ("32,32", "32,8", ("width=1024", "height=1024"), 4 * MiB),
                     ("128,128", "32,8", ("width=4096", "height=4096"), 64 * MiB))],
    *[c for k in ("reduceInterleaved", "reduceStrided", "reduceSequential")
      for c in _pair("examples/reduction.cu", k, ("256", "256", ("n=65536",), 4 * MiB, 1024),
                     ("16384", "256", ("n=4194304",), 16 * MiB, 1024))],
    *_pair("examples/fma_loop.cu", "fmaLoop", ("64", "256", (), None), ("16384", "256", (), None)),
    *_pair("examples/fma_loop.cu", "copy", ("64", "256", (), None), ("16384", "256", (), None)),
    *_pair("examples/loops.cu", "fixedSum", ("4", "256", (), 4 * MiB), ("4096", "256", (), 16 * MiB)),
    *_pair("examples/loops.cu", "rowSum", ("4", "256", ("n=1000",), 4 * MiB),
           ("16", "256", ("n=4096",), 64 * MiB)),
    _case("examples/loops.cu", "treeSum", "1", "256", (), 4 * MiB),
    *_pair("benchmarks/data/timed_reduction.cu", "timedReduction", ("64", "256", (), 1 * MiB, 2048),
           ("1024", "256", (), 4 * MiB, 2048)),
    *[c for k in ("moveAos", "moveSoa")
      for c in _pair(_TK + "aos.cu", k, ("256", "128", ("n=32768",), 4 * MiB),
                     ("32768", "128", ("n=4194304",), 64 * MiB))],
    *[c for k in ("strideTwo", "strideTwoDouble")
      for c in _pair(_TK + "strided.cu", k, ("256", "256", ("n=65536",), 4 * MiB),
                     ("16384", "256", ("n=4194304",), 64 * MiB))],
    *_pair(_TK + "strided.cu", "strideParam", ("256", "256", ("n=65536", "cols=8"), 4 * MiB),
           ("16384", "256", ("n=4194304", "cols=8"), 64 * MiB)),
    *[c for k in ("copyFloat", "copyDouble")
      for c in _pair(_TK + "unit_stride.cu", k, ("256", "256", ("n=65536",), 4 * MiB),
                     ("65536", "256", ("n=16777216",), 128 * MiB))],
    *_pair(_TK + "unit_stride.cu", "gridStride", ("128", "256", ("n=65536",), 4 * MiB),
           ("1024", "256", ("n=16777216",), 128 * MiB)),
    *_pair(_TK + "divergence.cu", "evenOdd", ("1024", "128", ("steps=16",), 4 * MiB),
           ("16384", "128", ("steps=16",), 16 * MiB)),
    *_pair(_TK + "divergence.cu", "uniformBranches", ("1024", "128", ("n=131072",), 4 * MiB),
           ("16384", "128", ("n=2097152",), 16 * MiB)),
    *_pair(_TK + "broadcast.cu", "rowDot", ("64,64", "16,16", ("n=1024",), 4 * MiB),
           ("128,128", "16,16", ("n=2048",), 16 * MiB)),
]


def _command(case: Case, csv: Path, nvcc: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "kerncast.server", "measure", case.file, "--kernel", case.kernel,
           "--grid", case.grid, "--block", case.block, "--append-csv", str(csv)]
    if case.smem:
        cmd += ["--smem", str(case.smem)]
    if case.nbytes:
        cmd += ["--bytes", str(case.nbytes)]
    for p in case.params:
        cmd += ["--param", p]
    return cmd + (["--nvcc", nvcc] if nvcc else [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", required=True, help="profile id: the rows go to validation/<gpu>/measurements.csv")
    ap.add_argument("--only", help="measure only the cases whose file or kernel contains this")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per case")
    ap.add_argument("--nvcc", help="nvcc to use")
    ap.add_argument("--out", type=Path, help="CSV to append to (default validation/<gpu>/measurements.csv)")
    args = ap.parse_args(argv)
    csv = args.out or ROOT / "validation" / args.gpu / "measurements.csv"
    csv.parent.mkdir(parents=True, exist_ok=True)
    cases = [c for c in CASES if not args.only or args.only in c.file or args.only in c.kernel]
    failed = 0
    for i, case in enumerate(cases, 1):
        label = f"[{i}/{len(cases)}] {case.file} {case.kernel} <<<{case.grid}, {case.block}>>>"
        try:
            # from the repository root, so that the CSV names each source file relative to it
            run = subprocess.run(_command(case, csv.resolve(), args.nvcc), capture_output=True, text=True,
                                 timeout=args.timeout, check=False, cwd=ROOT)
        except subprocess.TimeoutExpired:
            print(f"{label}: timed out after {args.timeout:g} s", flush=True)
            failed += 1
            continue
        last = (run.stdout.strip() or run.stderr.strip()).splitlines()[-1:] or ["(no output)"]
        print(f"{label}: {'ok' if run.returncode == 0 else 'FAILED'}: {last[0]}", flush=True)
        failed += run.returncode != 0
    print(f"{len(cases) - failed} of {len(cases)} cases measured into {csv}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
