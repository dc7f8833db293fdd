"""Compare Kerncast's time models with the thesis's measured times (Tables 4.2, 4.8, 6.1, 6.2).

The measured times are validation data: nothing in Kerncast is fitted to them. Only the kernels that
`examples/` (or `benchmarks/data/timed_reduction.cu`) has an equivalent of are compared, at the launch each
measurement most likely used; each case says where its launch comes from. Loop trip counts are the ones the
tool infers from the launch (no `--loops`). Rows that are copies of other rows are left out, with the reason
printed. The script prints the MAPE of every model (kerncast, the literal thesis scheduler, MWP-CWP) and of the
thesis's own published predictions, per table, per GPU and per kernel, and the acceptance subset: Table 4.8's
CUDA-sample rows (transposes, matrixMul, vectorAdd, timedReduction on K20, K4200, M60 and GTX 1050).

    .venv/bin/python benchmarks/validate_time.py [--verbose] [--with-trace]

`--with-trace` runs the trace model too (it runs only when chosen) and adds its column.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import error_spread
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.estimate import TimeEstimate
from launch_case import LaunchCase

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "thesis_times.csv"
MODELS: tuple[str, ...] = ("kerncast", "thesis", "mwp-cwp")
#: the model each analysis chooses: "trace" also runs the trace model, whose time joins the others in `models`
CHOSEN = {"model": "kerncast"}


@dataclass(frozen=True)
class Case(LaunchCase):
    """A kernel and the launch assumed for the thesis's measurement of it; `defines` rewrite `#define`s."""

    source: str = ""
    defines: tuple[tuple[str, str], ...] = ()


VECTOR_ADD = Case("examples/vector_add.cu", "vectorAdd", "196", "256", ("n=50000",),
                  source="CUDA samples vectorAdd: numElements = 50000, 256 threads per block")
SAXPY = Case("examples/saxpy.cu", "saxpy", "2000", "512", ("n=1024000",),
             source="thesis power dataset row 'saxpy 2000 x 512': 1,024,000 threads cover n exactly")
MATMUL = Case("examples/matmul.cu", "MatrixMulCUDA", "32,32", "32,32", ("wA=1024", "wB=1024"),
              source="thesis Table 6.1: 1024 blocks of 1024 threads, i.e. 1024 x 1024 matrices")
_T = ("width=1024", "height=1024")
_TS = ("thesis-era CUDA transpose sample: TILE_DIM 16, BLOCK_ROWS 16, 1024 x 1024 matrix, grid 64 x 64 of "
       "16 x 16 threads (one element per thread)")
_TD = (("TILE_DIM", "16"), ("BLOCK_ROWS", "16"))
T_NAIVE = Case("examples/transpose.cu", "transposeNaive", "64,64", "16,16", _T, source=_TS, defines=_TD)
T_TILED = Case("examples/transpose.cu", "transposeTiled", "64,64", "16,16", _T, source=_TS, defines=_TD)
T_PADDED = Case("examples/transpose.cu", "transposePadded", "64,64", "16,16", _T, source=_TS, defines=_TD)
TIMED = Case("benchmarks/data/timed_reduction.cu", "timedReduction", "64", "256", (),
             source="CUDA samples clock: 64 blocks of 256 threads, 2 x 256 floats of dynamic shared memory", smem=2048)

#: (table, thesis kernel name) -> case. Table 6.2 names are matched as printed.
CASES = {
    ("4.2", "VectAdd"): VECTOR_ADD, ("4.2", "Saxpy"): SAXPY, ("4.2", "Tpose2_Naive"): T_NAIVE,
    ("4.2", "Tpose3_coalesced"): T_TILED, ("4.2", "Tpose4_optimized"): T_PADDED,
    ("4.8", "vectorAdd"): VECTOR_ADD, ("4.8", "saxpy"): SAXPY, ("4.8", "matrixMulCUDA"): MATMUL,
    ("4.8", "transposeNaive"): T_NAIVE, ("4.8", "transposeCoalesced"): T_TILED,
    ("4.8", "NoBankConflicts"): T_PADDED, ("4.8", "timedReduction"): TIMED,
    ("6.1", "matrixMulCUDA"): MATMUL,
    ("6.2", "MatrixMul"): MATMUL, ("6.2", "Tpose_Naive"): T_NAIVE, ("6.2", "Tpose_coalesced"): T_TILED,
    ("6.2", "Tpose_optimized"): T_PADDED,
}

#: rows that repeat another row's measurement, so they cannot validate anything: (table, kernel, gpu) -> why
EXCLUDED = {
    ("6.1", "matrixMulCUDA", "v100"): "its 'measured' 8514.9 us is Table 4.8's GTX 1050 matrixMulCUDA value",
    ("6.2", "Tpose_Naive", "k20"): "its values (62.15 / 53.03 us) are Table 4.8's K20 'copy' row, not transposeNaive",
}

#: the acceptance subset: Table 4.8's CUDA-sample rows
SAMPLE_KERNELS = ("transposeNaive", "transposeCoalesced", "NoBankConflicts", "matrixMulCUDA", "vectorAdd",
                  "timedReduction")


@dataclass(frozen=True)
class Measured:
    """One row of the thesis's time tables: its measured time and the thesis's own published prediction (us)."""

    table: str
    kernel: str
    gpu: str
    actual: float
    thesis: float


@dataclass(frozen=True)
class Row:
    """A measured row beside Kerncast's time prediction of the same kernel and launch."""

    measured: Measured
    time: TimeEstimate


def _rows() -> list[dict[str, str]]:
    with DATA.open(encoding="utf-8") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _source(case: Case) -> str:
    text = (ROOT / case.file).read_text(encoding="utf-8")
    for name, value in case.defines:
        text = text.replace(f"#define {name} ", f"#define {name} {value} //", 1)
    return text


def _predict(case: Case, gpu: str, cache: dict) -> TimeEstimate | None:
    key = (case, gpu)
    if key not in cache:
        overrides = case.overrides()
        report = analyze_file(ROOT / case.file, text=_source(case),
                              options=AnalysisOptions(gpu=gpu, arch="sm_75", overrides=overrides,
                                                      time_model=CHOSEN["model"]))
        k = next((k for k in report.kernels if k.name.split("<", 1)[0] == case.kernel), None)
        cache[key] = k.time if k is not None else None
    return cache[key]


def _mape(pairs: Iterable[tuple[float, float]]) -> float:
    pairs = list(pairs)
    return 100.0 * sum(abs(p - a) / a for a, p in pairs) / len(pairs) if pairs else float("nan")


def _table(title: str, groups: dict[str, list[Row]]) -> None:
    print(f"\n{title}")
    print(f"  {'':22s} {'rows':>4s} " + " ".join(f"{m:>9s}" for m in (*MODELS, "thesis-pub")))
    for name in sorted(groups):
        rows = groups[name]
        cells = [_mape((r.measured.actual, r.time.models[m]) for r in rows) for m in MODELS]
        cells.append(_mape((r.measured.actual, r.measured.thesis) for r in rows))
        print(f"  {name:22s} {len(rows):4d} " + " ".join(f"{c:8.1f}%" for c in cells))


def collect(verbose: bool = False) -> list[Row]:
    """Every comparable, non-excluded row with each model's prediction."""
    cache: dict = {}
    out: list[Row] = []
    for raw in _rows():
        case = CASES.get((raw["table"], raw["kernel"]))
        if case is None:
            continue
        why = EXCLUDED.get((raw["table"], raw["kernel"], raw["gpu"]))
        if why is not None:
            print(f"  excluded: Table {raw['table']} {raw['kernel']} on {raw['gpu']}: {why}")
            continue
        time = _predict(case, raw["gpu"], cache)
        if time is None:
            print(f"  no prediction for {case.kernel} on {raw['gpu']} (did it compile?)")
            continue
        m = Measured(raw["table"], raw["kernel"], raw["gpu"], float(raw["actual_us"]),
                     float(raw["thesis_predicted_us"]))
        out.append(Row(m, time))
        if verbose:
            print(f"  {m.table:4s} {m.kernel:20s} {m.gpu:8s} actual {m.actual:9.2f}  "
                  + "  ".join(f"{name} {time.models[name]:9.2f}" for name in MODELS)
                  + f"  thesis-pub {m.thesis:9.2f}  [{case.source}]")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true", help="print every compared row")
    ap.add_argument("--with-trace", action="store_true", help="run the trace model too and add its column")
    error_spread.add_write_flag(ap, "the kerncast model's validation error spread")
    args = ap.parse_args(argv)
    global MODELS
    if args.with_trace:
        CHOSEN["model"] = "trace"
        MODELS = (*MODELS, "trace")
    rows = collect(args.verbose)
    print("\nMAPE against the thesis's measured times (thesis-pub: the thesis's own published predictions)")

    def group(key) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        for r in rows:
            out.setdefault(key(r), []).append(r)
        return out

    _table("per table", group(lambda r: f"Table {r.measured.table}"))
    _table("per GPU (all tables)", group(lambda r: r.measured.gpu))
    _table("per kernel (all tables)", group(lambda r: r.measured.kernel))
    sample = [r for r in rows if r.measured.table == "4.8" and r.measured.kernel in SAMPLE_KERNELS]
    subset: dict[str, list[Row]] = {"all": sample}
    for r in sample:
        subset.setdefault(r.measured.gpu, []).append(r)
    _table("Table 4.8 CUDA-sample rows (transposes, matrixMul, vectorAdd, timedReduction)", subset)
    inside = sum(r.time.range_us[0] <= r.measured.actual <= r.time.range_us[1] for r in rows)
    roof = sum(r.time.roofline_us[0] <= r.measured.actual <= r.time.roofline_us[1] for r in rows)
    print(f"\nmeasured time inside the kerncast range: {inside} of {len(rows)} rows; "
          f"inside the roofline range: {roof} of {len(rows)}")
    low, high = error_band(rows)
    print(f"measured / kerncast prediction: 10th percentile {low:.3f}, 90th percentile {high:.3f}")
    if args.write_error_band:
        write_error_band(rows)
        print(f"wrote {error_spread.ERROR_BAND.relative_to(ROOT)}")
    return 0


def error_band(rows: list[Row]) -> tuple[float, float]:
    """10th and 90th percentiles of measured / predicted (kerncast) over the compared rows."""
    band = error_spread.spread(_ratios(rows))
    return band["low_ratio"], band["high_ratio"]


def _ratios(rows: list[Row]) -> list[float]:
    return [r.measured.actual / r.time.models["kerncast"] for r in rows]


def write_error_band(rows: list[Row]) -> None:
    """The spread the kerncast model's shown range carries: a statement of its error, never a model input."""
    error_spread.write(f"validation error: measured / predicted over {len(rows)} rows of the thesis's measured "
                       "Tables 4.2, 4.8, 6.1 and 6.2 (Kerncast examples, thesis-era launches)", _ratios(rows))


if __name__ == "__main__":
    sys.exit(main())
