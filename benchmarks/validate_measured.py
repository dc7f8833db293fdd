"""Compare Kerncast's predictions with the times and powers measured on a real GPU (`validation/<gpu>/`).

Reads `validation/<gpu>/measurements.csv` (written by `benchmarks/measure_gpu.py`, or by `gpu_campaign.py`, whose
rows carry their own params), predicts every row at its launch with the GPU's profile, and prints, for each
time model and for the power model, the MAPE and the share of rows within 25 % of the measurement, per kernel
family and per launch size (each kernel is measured at a small launch, where latency and launch overhead
dominate, and a large one), plus how often the measurement lies inside the shown time range and the power
interval. `--write` also writes the tables to `validation/<gpu>/REPORT.md`. No constant is fitted to these rows.

    .venv/bin/python benchmarks/validate_measured.py --gpu h100 [--write] [--write-error-band] [--with-trace]

What the comparison can and cannot say: `kerncast measure` times a launch with CUDA events around it, so the
launch's own latency (a few microseconds) is inside every measured time; the predictions use the profile's
constants (`calibrated = false` sections are vendor figures and estimates, said in each prediction).
"""

from __future__ import annotations

import argparse
import csv
import runpy
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import error_spread
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

#: the measurement script's names (a sibling script, not a package: run by path)
_MEASURE = runpy.run_path(str(Path(__file__).with_name("measure_gpu.py")))
CASES, ROOT, Case = _MEASURE["CASES"], _MEASURE["ROOT"], _MEASURE["Case"]

TIME_MODELS: tuple[str, ...] = ("kerncast", "thesis", "mwp-cwp")
#: the model each analysis chooses: "trace" also runs the trace model, whose time joins the others in `models`
CHOSEN = {"model": "kerncast"}
WITHIN = 0.25

#: kernel -> family, for the per-family tables
FAMILIES = {
    "vectorAdd": "streaming", "saxpy": "streaming", "copy": "streaming", "copyFloat": "streaming",
    "copyDouble": "streaming", "gridStride": "streaming", "moveSoa": "streaming",
    "moveAos": "strided / uncoalesced", "strideTwo": "strided / uncoalesced",
    "strideTwoDouble": "strided / uncoalesced", "strideParam": "strided / uncoalesced",
    "transposeNaive": "strided / uncoalesced",
    "transposeTiled": "shared memory", "transposePadded": "shared memory", "MatrixMulCUDA<32>": "shared memory",
    "reduceInterleaved": "reduction", "reduceStrided": "reduction", "reduceSequential": "reduction",
    "timedReduction": "reduction", "treeSum": "reduction", "fixedSum": "reduction", "rowSum": "reduction",
    "matmulNaive": "compute / cache", "rowDot": "compute / cache", "fmaLoop": "compute / cache",
    "evenOdd": "divergent", "uniformBranches": "divergent",
}


@dataclass
class Row:
    """One measured launch with every model's prediction."""

    case: Case
    size: str
    time_us: float
    power_w: float | None
    models: dict[str, float]
    time_range: tuple[float, float]
    power_pred: float | None
    power_interval: tuple[float, float] | None
    family: str = ""  # the CSV's class column, where it has one (else FAMILIES)


def _case_for(rec: dict[str, str]) -> tuple[Case, str] | None:
    """The measured case of a CSV row: a case of `measure_gpu.CASES` (its params and buffer sizes live there), or,
    in a GPU campaign's file, whose rows carry their own params and launch size, the row itself."""
    src = Path(rec["source_file"])
    rel = src.relative_to(ROOT).as_posix() if src.is_absolute() and src.is_relative_to(ROOT) else src.as_posix()
    dims = {"grid": rec["grid"], "block": rec["block"]}
    same = [c for c in CASES if c.file == rel and c.kernel == rec["kernel"]]
    for i, c in enumerate(same):
        if all(launch_dims(getattr(c, k)) == launch_dims(v) for k, v in dims.items()):
            return c, "small" if i == 0 and len(same) > 1 else "large" if len(same) > 1 else "single"
    if rec.get("params") is None:
        return None
    grid, block = (",".join(map(str, launch_dims(rec[k]))) for k in ("grid", "block"))
    params = tuple(p for p in rec["params"].split(";") if p)
    return Case(rel, rec["kernel"], grid, block, params, int(rec.get("dynamic_shared_bytes") or 0)), \
        rec.get("size") or "single"


def launch_dims(text: str) -> tuple[int, int, int]:
    """A grid or block as measurements.csv writes it ("196x1x1") or a case gives it ("64,8") -> (x, y, z)."""
    parts = [int(p) for p in str(text).replace("x", ",").split(",") if p.strip()]
    return tuple((parts + [1, 1, 1])[:3])  # type: ignore[return-value]


def _predict(case: Case, gpu: str) -> tuple[dict, tuple, float | None, tuple | None] | None:
    launch = case.overrides()
    report = analyze_file(ROOT / case.file, options=AnalysisOptions(gpu=gpu, overrides=launch,
                                                                  time_model=CHOSEN["model"]))
    k = next((k for k in report.kernels if k.name == case.kernel or k.name.split("(")[0] == case.kernel), None)
    if k is None or k.time is None:
        return None
    p = k.power
    return (dict(k.time.models), tuple(k.time.range_us or (k.time.us, k.time.us)),
            p.watts if p is not None else None, tuple(p.interval) if p is not None else None)


def collect(gpu: str) -> list[Row]:
    path = ROOT / "validation" / gpu / "measurements.csv"
    rows: list[Row] = []
    with path.open(encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            found = _case_for(rec)
            if found is None:
                print(f"  skipped: {rec['kernel']} <<<{rec['grid']}, {rec['block']}>>> is not a case of measure_gpu.py "
                      "and the file gives no params")
                continue
            case, size = found
            pred = _predict(case, gpu)
            if pred is None:
                print(f"  no prediction for {case.kernel} in {case.file}")
                continue
            models, rng, pw, piv = pred
            power = float(rec["power_w"]) if rec.get("power_w") else None
            rows.append(Row(case, size, float(rec["time_us"]), power, models, rng, pw, piv, rec.get("class") or ""))
    return rows


class Scored(Protocol):
    """What the MAPE table reads of a measured row (this script's `Row`, the GPU campaign's rows)."""

    models: dict[str, float]
    time_us: float
    power_pred: float | None
    power_w: float | None


def _err(pred: float, actual: float) -> float:
    return abs(pred - actual) / actual


def _stats(pairs: list[tuple[float, float]]) -> str:
    if not pairs:
        return "- | -"
    errs = [_err(p, a) for p, a in pairs]
    return f"{100 * statistics.fmean(errs):.0f}% | {100 * sum(e <= WITHIN for e in errs) / len(errs):.0f}%"


def mape_table(rows: Sequence[Scored], group_of: Callable[[Scored], str], size_of: Callable[[Scored], str],
               models: Sequence[str]) -> list[str]:
    """MAPE and share within 25 % per time model and for power: every row, then per group, then per launch
    size ("<size> launches"); one table for both validation scripts so their reports read the same."""
    groups: dict[str, list[Scored]] = defaultdict(list)
    for r in rows:
        groups["all"].append(r)
        groups[group_of(r)].append(r)
        groups[f"{size_of(r)} launches"].append(r)
    head = "| group | rows | " + " | ".join(f"{m} MAPE | within 25%" for m in models) + \
        " | power MAPE | within 25% |"
    out = [head, "|" + " --- |" * (2 + 2 * len(models) + 2)]
    order = ["all", *sorted(k for k in groups if k != "all" and "launches" not in k),
             *sorted(k for k in groups if "launches" in k)]
    for name in order:
        g = groups[name]
        cells = [_stats([(r.models[m], r.time_us) for r in g if m in r.models]) for m in models]
        cells.append(_stats([(r.power_pred, r.power_w) for r in g if r.power_pred and r.power_w]))
        out.append(f"| {name} | {len(g)} | " + " | ".join(cells) + " |")
    return out


def tables(rows: list[Row]) -> list[str]:
    """The report's Markdown tables: time per model and power, overall, per family and per launch size."""
    out = mape_table(rows, lambda r: r.family or FAMILIES.get(r.case.kernel, "other"), lambda r: r.size,
                     TIME_MODELS)
    inside = sum(r.time_range[0] <= r.time_us <= r.time_range[1] for r in rows)
    covered = [r for r in rows if r.power_interval and r.power_w]
    pin = sum(r.power_interval[0] <= r.power_w <= r.power_interval[1] for r in covered)
    ratios = sorted(r.time_us / r.models["kerncast"] for r in rows if r.models.get("kerncast"))
    out += ["", f"Measured time inside the shown kerncast range: {inside} of {len(rows)} rows. "
            f"Measured power inside the 90% power interval: {pin} of {len(covered)} rows. "
            f"Measured / kerncast time: median {statistics.median(ratios):.2f}, "
            f"range {ratios[0]:.2f} to {ratios[-1]:.2f}."]
    return out


def per_row(rows: list[Row]) -> list[str]:
    out = ["| kernel | launch | measured µs | kerncast µs | thesis µs | MWP-CWP µs | measured W | predicted W |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        m = r.models
        out.append(f"| {r.case.kernel} | <<<{r.case.grid}, {r.case.block}>>> | {r.time_us:.4g} | "
                   f"{m.get('kerncast', float('nan')):.4g} | {m.get('thesis', float('nan')):.4g} | "
                   f"{m.get('mwp-cwp', float('nan')):.4g} | {r.power_w or float('nan'):.4g} | "
                   f"{r.power_pred or float('nan'):.4g} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", required=True, help="profile id with a validation/<gpu>/measurements.csv")
    ap.add_argument("--write", action="store_true", help="write validation/<gpu>/REPORT.md")
    ap.add_argument("--with-trace", action="store_true", help="run the trace model too and add its column")
    error_spread.add_write_flag(ap, "the kerncast model's error spread on this GPU (its shown range carries it)")
    args = ap.parse_args(argv)
    global TIME_MODELS
    if args.with_trace:
        CHOSEN["model"] = "trace"
        TIME_MODELS = (*TIME_MODELS, "trace")
    rows = collect(args.gpu)
    if not rows:
        print("no comparable rows")
        return 1
    if args.write_error_band:
        ratios = [r.time_us / r.models["kerncast"] for r in rows if r.models.get("kerncast")]
        error_spread.write(f"validation error: measured / predicted over {len(ratios)} launches of the project's "
                           f"kernels measured on this GPU (validation/{args.gpu}/measurements.csv)", ratios,
                           gpu=args.gpu)
        print(f"wrote the {args.gpu} spread to {error_spread.ERROR_BAND.relative_to(ROOT)}")
    summary = tables(rows)
    print("\n".join(summary))
    if args.write:
        report = ROOT / "validation" / args.gpu / "REPORT.md"
        report.write_text("\n".join([
            f"# Predictions against measurement: {args.gpu}", "",
            f"Generated by `benchmarks/validate_measured.py --gpu {args.gpu} --write` from `measurements.csv` "
            f"({len(rows)} launches of {len({r.case.kernel for r in rows})} kernels, measured with "
            "`benchmarks/measure_gpu.py` or `benchmarks/gpu_campaign.py`). MAPE: mean absolute percentage error; "
            "within 25%: share of rows whose "
            "prediction is within 25% of the measurement. No constant of any model was fitted to these rows.", "",
            *summary, "", "## Every row", "", *per_row(rows), ""]), encoding="utf-8")
        print(f"wrote {report.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
