"""Compare Kerncast's time predictions with the thesis's measured times (Tables 4.2, 4.8, 6.1, 6.2).

The measured times are validation data: nothing in Kerncast is fitted to them. Only the kernels that
`examples/` has an equivalent of can be compared, at the launch each measurement most likely used (the
thesis states the launch only for Table 6.1); each launch below says where it comes from. The script prints,
per table, the MAPE of Kerncast's thesis-scheduler prediction, of its MWP-CWP estimate, and of the thesis's
own published predictions on the same rows, so the three can be read side by side.

    .venv/bin/python benchmarks/validate_time.py [--verbose]
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.pipeline import AnalysisOptions, analyze_file

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "thesis_times.csv"


@dataclass(frozen=True)
class Case:
    """An example kernel and the launch assumed for the thesis's measurement of it."""

    file: str
    kernel: str
    grid: str
    block: str
    params: tuple[str, ...]
    source: str
    loops: int | None = None


VECTOR_ADD = Case("vector_add.cu", "vectorAdd", "196", "256", ("n=50000",),
                  "CUDA samples vectorAdd: numElements = 50000, 256 threads per block")
SAXPY = Case("saxpy.cu", "saxpy", "2000", "512", ("n=1024000",),
             "thesis power dataset row 'saxpy 2000 x 512' (shared docs/energymodel.md section 2); its "
             "1,024,000 threads cover n exactly, so the grid-stride loop runs once", loops=1)
MATMUL = Case("matmul.cu", "MatrixMulCUDA", "32,32", "32,32", ("wA=1024", "wB=1024"),
              "thesis Table 6.1: 1024 blocks of 1024 threads, i.e. 1024 x 1024 matrices")
_T = ("width=1024", "height=1024")
_TS = "assumed: 1024 x 1024 matrix, 32 x 8 threads per 32 x 32 tile (the CUDA transpose sample's layout)"
T_NAIVE = Case("transpose.cu", "transposeNaive", "32,32", "32,8", _T, _TS)
T_TILED = Case("transpose.cu", "transposeTiled", "32,32", "32,8", _T, _TS)
T_PADDED = Case("transpose.cu", "transposePadded", "32,32", "32,8", _T, _TS)

#: (table, thesis kernel name) -> example kernel. Table 6.2 names are matched as printed.
CASES = {
    ("4.2", "VectAdd"): VECTOR_ADD, ("4.2", "Saxpy"): SAXPY, ("4.2", "Tpose2_Naive"): T_NAIVE,
    ("4.2", "Tpose3_coalesced"): T_TILED,
    ("4.8", "vectorAdd"): VECTOR_ADD, ("4.8", "saxpy"): SAXPY, ("4.8", "matrixMulCUDA"): MATMUL,
    ("4.8", "transposeNaive"): T_NAIVE, ("4.8", "transposeCoalesced"): T_TILED,
    ("4.8", "NoBankConflicts"): T_PADDED,
    ("6.1", "matrixMulCUDA"): MATMUL,
    ("6.2", "MatrixMul"): MATMUL, ("6.2", "Tpose_Naive"): T_NAIVE, ("6.2", "Tpose_coalesced"): T_TILED,
    ("6.2", "Tpose_optimized"): T_PADDED,
}


def _rows() -> list[dict[str, str]]:
    with DATA.open(encoding="utf-8") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _predict(case: Case, gpu: str, cache: dict) -> tuple[float | None, float | None]:
    key = (case, gpu)
    if key not in cache:
        overrides = LaunchOverrides.from_strings(grid=case.grid, block=case.block, params=list(case.params),
                                                 loops=case.loops)
        report = analyze_file(ROOT / "examples" / case.file,
                              options=AnalysisOptions(gpu=gpu, arch="sm_75", overrides=overrides))
        k = next((k for k in report.kernels if k.name.split("<", 1)[0] == case.kernel), None)
        t = k.time if k is not None else None
        cache[key] = (t.us, t.mwp_cwp_us) if t is not None else (None, None)
    return cache[key]


def _mape(pairs: list[tuple[float, float]]) -> float:
    return 100.0 * sum(abs(p - a) / a for a, p in pairs) / len(pairs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true", help="print every compared row")
    args = ap.parse_args(argv)
    cache: dict = {}
    by_table: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for row in _rows():
        case = CASES.get((row["table"], row["kernel"]))
        if case is None:
            continue
        actual, thesis = float(row["actual_us"]), float(row["thesis_predicted_us"])
        ours, hk = _predict(case, row["gpu"], cache)
        if ours is None:
            print(f"  no prediction for {case.kernel} on {row['gpu']} (did it compile?)")
            continue
        t = by_table.setdefault(row["table"], {"kerncast": [], "mwp_cwp": [], "thesis": []})
        t["kerncast"].append((actual, ours))
        t["thesis"].append((actual, thesis))
        if hk is not None:
            t["mwp_cwp"].append((actual, hk))
        if args.verbose:
            print(f"  {row['table']:4s} {row['kernel']:22s} {row['gpu']:8s} actual {actual:10.2f}  kerncast "
                  f"{ours:10.2f}  mwp-cwp {hk or 0:10.2f}  thesis {thesis:10.2f}  [{case.source}]")
    print("MAPE against the thesis's measured times (rows with an example kernel only)")
    print(f"  {'table':6s} {'rows':>4s} {'kerncast':>9s} {'mwp-cwp':>9s} {'thesis':>9s}")
    for table in sorted(by_table):
        t = by_table[table]
        hk = f"{_mape(t['mwp_cwp']):8.1f}%" if t["mwp_cwp"] else "      n/a"
        print(f"  {table:6s} {len(t['kerncast']):4d} {_mape(t['kerncast']):8.1f}% {hk} {_mape(t['thesis']):8.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
