"""Score Kerncast's time models on version ladders: successive rewrites of one kernel, each measured by its author.

A developer who rewrites a kernel wants to know whether the new version is faster and by how much. Each ladder
under `validation/ladders/<id>/ladder.toml` lists the versions of one kernel (a `.cu` file each, written for
Kerncast from the published description, with the exact launches of the measurement) and the time each took on
named GPUs, with its source (repository, commit, results file, row). Nothing in Kerncast is fitted to them.

Per ladder and GPU, and over all of them, the script prints:

* pairs ordered: the share of version pairs whose predicted order matches the measured one; pairs measured
  within 10% of each other are ties and are not scored;
* Spearman's rank correlation of predicted and measured times;
* the median and worst |log2(predicted speedup / measured speedup)| over consecutive versions (0 is exact,
  1 is a factor of two);
* MAPE: the mean |predicted - measured| / measured.

A version whose measurement ran several launches (a reduction's passes) is predicted as the sum of its launches.

Further tables score the same figures on Kerncast's own measurements of the ladder versions on an NVIDIA H100 and
an H200 (`validation/<gpu>/measurements.csv`, the rows whose class is `ladder <id>`): one launch per version (the
first launch of a measurement that ran several), timed with CUDA events, predicted with that GPU's profile. They are
validation data too, and separate from the published times.

    .venv/bin/python benchmarks/validate_ladders.py [--time-model kerncast|thesis|mwp-cwp] [--format text|json]
                                                   [--ladder ID]... [--gpu ID]... [--verbose]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.estimate import TIME_MODELS, TimeEstimate

ROOT = Path(__file__).resolve().parent.parent
LADDERS = ROOT / "validation" / "ladders"
#: Kerncast's own measurements of every ladder version on one GPU (profile id, file)
#: the GPUs Kerncast measured the ladder versions on, each with its file (validation/<gpu>/measurements.csv)
OWN_MEASUREMENTS = tuple((gpu, ROOT / "validation" / gpu / "measurements.csv") for gpu in ("h100", "h200"))
#: measured times closer than this ratio are a tie: their order is not scored
TIE_RATIO = 1.10
KINDS = ("rewrites", "launch-sweep")


@dataclass(frozen=True)
class LaunchSpec:
    """One launch of a measurement: grid and block as `X[,Y[,Z]]`, dynamic shared bytes, `NAME=VALUE` params."""

    grid: str
    block: str
    smem: int
    params: tuple[str, ...]

    def overrides(self) -> LaunchOverrides:
        """The launch as the analysis takes it from the command line."""
        return LaunchOverrides.from_strings(grid=self.grid, block=self.block, smem=self.smem,
                                            params=list(self.params))


@dataclass(frozen=True)
class Version:
    """One rewrite: its kernel, the launches its measurement ran, and its measured time (us) per GPU profile."""

    id: str
    file: Path
    kernel: str
    launches: tuple[LaunchSpec, ...]
    measured_us: dict[str, float]
    what: str = ""
    row: str = ""


@dataclass(frozen=True)
class Ladder:
    """Successive versions of one kernel, measured on one or more GPUs (profile ids)."""

    id: str
    title: str
    kind: str
    gpus: tuple[str, ...]
    versions: tuple[Version, ...]
    source: dict[str, Any] = field(default_factory=dict)
    path: Path = ROOT


def _need(table: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = table.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"{where}: '{key}' must be a non-empty {kind.__name__}")
    return value


def _launch(raw: Any, where: str) -> LaunchSpec:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a launch must be a table")
    params = raw.get("params", [])
    if not isinstance(params, list) or not all(isinstance(p, str) and "=" in p for p in params):
        raise ValueError(f"{where}: 'params' must be a list of NAME=VALUE strings")
    smem = raw.get("smem", 0)
    if not isinstance(smem, int) or smem < 0:
        raise ValueError(f"{where}: 'smem' must be a non-negative integer")
    spec = LaunchSpec(_need(raw, "grid", str, where), _need(raw, "block", str, where), smem, tuple(params))
    spec.overrides()  # raises ValueError naming the bad field
    return spec


#: published time units -> microseconds
TIME_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}
#: published rates -> the amount of work per second they count (the ladder's `[source]` states the work)
RATE_UNITS = {"GB/s": ("bytes", 1e9), "GFLOP/s": ("flops", 1e9), "TFLOP/s": ("flops", 1e12)}


def _converter(source: dict[str, Any], where: str) -> Callable[[float], float]:
    """The function that turns a published figure into microseconds: a time is scaled, a rate divides the
    work the source says it counts (bytes or FLOPs per launch sequence)."""
    unit = _need(source, "unit", str, f"{where} [source]")
    if unit in TIME_UNITS:
        return lambda value: value * TIME_UNITS[unit]
    if unit in RATE_UNITS:
        key, scale = RATE_UNITS[unit]
        work = source.get(key)
        if not isinstance(work, (int, float)) or work <= 0:
            raise ValueError(f"{where} [source]: a figure in {unit} needs '{key}', the work it counts")
        return lambda value: work / (value * scale) * 1e6
    raise ValueError(f"{where} [source]: unit '{unit}' is not one of {', '.join([*TIME_UNITS, *RATE_UNITS])}")


def load_ladder(path: Path) -> Ladder:
    """Read and check one `ladder.toml`; raises ValueError with the file and field named."""
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    lid = _need(data, "id", str, where)
    kind = _need(data, "kind", str, where)
    if kind not in KINDS:
        raise ValueError(f"{where}: kind '{kind}' is not one of {', '.join(KINDS)}")
    source = _need(data, "source", dict, where)
    for key in ("repository", "commit", "url", "method"):
        _need(source, key, str, f"{where} [source]")
    to_us = _converter(source, where)
    gpus = tuple(_need(g, "profile", str, f"{where} [[gpus]]") for g in _need(data, "gpus", list, where))
    for g in _need(data, "gpus", list, where):
        for key in ("device", "results"):
            _need(g, key, str, f"{where} [[gpus]]")
    versions = []
    for i, raw in enumerate(_need(data, "versions", list, where)):
        vwhere = f"{where} version {i + 1}"
        file = (path.parent / _need(raw, "file", str, vwhere)).resolve()
        if not file.is_file():
            raise ValueError(f"{vwhere}: file {raw['file']} not found")
        launches = tuple(_launch(x, vwhere) for x in _need(raw, "launches", list, vwhere))
        if not launches:
            raise ValueError(f"{vwhere}: no launch")
        measured = _need(raw, "measured", dict, vwhere)
        if set(measured) != set(gpus):
            raise ValueError(f"{vwhere}: measured GPUs {sorted(measured)} differ from the ladder's {sorted(gpus)}")
        if not all(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0 for t in measured.values()):
            raise ValueError(f"{vwhere}: every measured time must be a positive number")
        versions.append(Version(_need(raw, "id", str, vwhere), file, _need(raw, "kernel", str, vwhere), launches,
                                {g: to_us(float(t)) for g, t in measured.items()},
                                raw.get("what", ""), _need(raw, "row", str, vwhere)))
    if len(versions) < 2:
        raise ValueError(f"{where}: a ladder needs at least two versions")
    if len({v.id for v in versions}) != len(versions):
        raise ValueError(f"{where}: version ids repeat")
    return Ladder(lid, _need(data, "title", str, where), kind, gpus, tuple(versions), source, path)


def load_ladders(root: Path = LADDERS) -> list[Ladder]:
    """Every ladder under `root`, sorted by id."""
    return sorted((load_ladder(p) for p in sorted(root.glob("*/ladder.toml"))), key=lambda lad: lad.id)


# ------------------------------------------------------------------------------------------------ predicting


class Predictor:
    """Analyses each (file, GPU, launch) once and keeps the kernel's time estimate."""

    def __init__(self, time_model: str = "kerncast") -> None:
        self._cache: dict[tuple[Path, str, str, LaunchSpec], TimeEstimate | None] = {}
        self._model = time_model  # "trace" runs the trace model too (only run when chosen)

    def estimate(self, file: Path, kernel: str, gpu: str, launch: LaunchSpec) -> TimeEstimate | None:
        """The kernel's time estimate at this launch on this GPU profile; None when it has none."""
        key = (file, kernel, gpu, launch)
        if key not in self._cache:
            report = analyze_file(file, options=AnalysisOptions(gpu=gpu, overrides=launch.overrides(), lime=False,
                                                                time_model=self._model))
            k = next((k for k in report.kernels if k.name.split("<", 1)[0] == kernel), None)
            self._cache[key] = k.time if k is not None else None
        return self._cache[key]

    def version_us(self, version: Version, gpu: str, model: str) -> float | None:
        """The version's predicted time: the sum of its launches' predictions under `model`."""
        total = 0.0
        for launch in version.launches:
            est = self.estimate(version.file, version.kernel, gpu, launch)
            if est is None or model not in est.models:
                return None
            total += est.models[model]
        return total

    def version_bounds(self, version: Version, gpu: str) -> tuple[float, float, float]:
        """The version's predicted range (low, high) and the roofline's best case, summed over its launches: a
        measurement outside the range or below the best case shows where the model's bounds do not hold."""
        lo = hi = best = 0.0
        for launch in version.launches:
            est = self.estimate(version.file, version.kernel, gpu, launch)
            if est is None:
                continue
            low_high = est.range_us or (est.us, est.us)
            lo, hi = lo + low_high[0], hi + low_high[1]
            best += est.roofline_us[0] if est.roofline_us else 0.0
        return lo, hi, best

    def version_notes(self, version: Version, gpu: str) -> tuple[str, int]:
        """The bottleneck the longest launch names, and how many values of all launches fell back to a default
        (loop trip counts, launch fields): what to look at when a version is mispredicted."""
        ests = [e for e in (self.estimate(version.file, version.kernel, gpu, x) for x in version.launches) if e]
        if not ests:
            return "", 0
        longest = max(ests, key=lambda e: e.us)
        return longest.bottleneck, sum(1 for e in ests for a in e.assumptions if "default" in a)


# -------------------------------------------------------------------------------------------------- scoring


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either side has no spread."""
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return sxy / (sx * sy) if sx > 0 and sy > 0 else float("nan")


@dataclass
class Score:
    """What one ladder on one GPU (or everything pooled) scores."""

    pairs_scored: int = 0
    pairs_ordered: int = 0
    ties: int = 0
    log2_errors: list[float] = field(default_factory=list)
    abs_pct_errors: list[float] = field(default_factory=list)
    spearman: list[float] = field(default_factory=list)

    def add(self, other: Score) -> None:
        """Pool another score into this one (pairs, errors and the per-ladder correlations)."""
        self.pairs_scored += other.pairs_scored
        self.pairs_ordered += other.pairs_ordered
        self.ties += other.ties
        self.log2_errors += other.log2_errors
        self.abs_pct_errors += other.abs_pct_errors
        self.spearman += other.spearman

    def summary(self) -> dict[str, float | int | None]:
        """The printed figures; None where nothing was scored."""
        rho = [r for r in self.spearman if not math.isnan(r)]
        return {
            "pairs_scored": self.pairs_scored, "ties": self.ties,
            "pairs_ordered": self.pairs_ordered / self.pairs_scored if self.pairs_scored else None,
            "spearman": statistics.fmean(rho) if rho else None,
            "median_abs_log2": statistics.median(self.log2_errors) if self.log2_errors else None,
            "worst_abs_log2": max(self.log2_errors) if self.log2_errors else None,
            "mape_pct": 100 * statistics.fmean(self.abs_pct_errors) if self.abs_pct_errors else None,
            "versions": len(self.abs_pct_errors),
        }


def score(measured: Sequence[float], predicted: Sequence[float]) -> Score:
    """Score one ladder on one GPU: versions in ladder order, measured and predicted times."""
    s = Score()
    n = len(measured)
    for i in range(n):
        for j in range(i + 1, n):
            lo, hi = sorted((measured[i], measured[j]))
            if hi / lo < TIE_RATIO:
                s.ties += 1
                continue
            s.pairs_scored += 1
            s.pairs_ordered += (measured[i] < measured[j]) == (predicted[i] < predicted[j]) \
                and predicted[i] != predicted[j]
    for i in range(1, n):
        s.log2_errors.append(abs(math.log2((predicted[i - 1] / predicted[i]) / (measured[i - 1] / measured[i]))))
    s.abs_pct_errors = [abs(p - m) / m for m, p in zip(measured, predicted, strict=True)]
    s.spearman = [spearman(measured, predicted)]
    return s


@dataclass
class LadderResult:
    """One ladder on one GPU: the times in version order and their score."""

    ladder: Ladder
    gpu: str
    versions: list[Version]
    measured: list[float]
    predicted: list[float]
    score: Score
    #: per version: the bottleneck the prediction names and its number of defaulted values
    notes: list[tuple[str, int]] = field(default_factory=list)
    #: per version: the predicted range and the roofline's best case (us)
    bounds: list[tuple[float, float, float]] = field(default_factory=list)


def evaluate(ladders: Iterable[Ladder], model: str, gpus: Sequence[str] = (),
             predictor: Predictor | None = None) -> tuple[list[LadderResult], list[str]]:
    """Every (ladder, GPU) result, and a line for each version that got no prediction."""
    predictor = predictor or Predictor("trace" if model == "trace" else "kerncast")
    results, missing = [], []
    for ladder in ladders:
        for gpu in ladder.gpus:
            if gpus and gpu not in gpus:
                continue
            kept, meas, pred = [], [], []
            for v in ladder.versions:
                us = predictor.version_us(v, gpu, model)
                if us is None or us <= 0:
                    missing.append(f"{ladder.id} {v.id} on {gpu}: no prediction for {v.kernel}")
                    continue
                kept.append(v)
                meas.append(v.measured_us[gpu])
                pred.append(us)
            if len(kept) >= 2:
                notes = [predictor.version_notes(v, gpu) for v in kept]
                bounds = [predictor.version_bounds(v, gpu) for v in kept]
                results.append(LadderResult(ladder, gpu, kept, meas, pred, score(meas, pred), notes, bounds))
    return results, missing


# ------------------------------------------------------------------------------------ own measurements


@dataclass(frozen=True)
class MeasuredLaunch:
    """One row of Kerncast's own measurements of a ladder version: its ladder, kernel, launch and time (us)."""

    ladder: str
    file: Path
    kernel: str
    launch: LaunchSpec
    time_us: float


def load_own_measurements(path: Path) -> list[MeasuredLaunch]:
    """The rows of a `validation/<gpu>/measurements.csv` whose class is `ladder <id>`, in the file's order (the
    ladder's version order); empty when the file is missing."""
    if not path.is_file():
        return []
    out = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            kind = (row.get("class") or "").split()
            if len(kind) != 2 or kind[0] != "ladder":
                continue
            params = tuple(x for x in (row.get("params") or "").split(";") if x)
            launch = LaunchSpec(row["grid"].replace("x", ","), row["block"].replace("x", ","),
                                int(row.get("dynamic_shared_bytes") or 0), params)
            out.append(MeasuredLaunch(kind[1], ROOT / row["source_file"], row["kernel"], launch,
                                      float(row["time_us"])))
    return out


def evaluate_own(rows: Sequence[MeasuredLaunch], gpu: str, predictor: Predictor,
                 ladders: Sequence[str] = ()) -> list[tuple[str, Score]]:
    """Per ladder (in the file's order), the score of the kerncast predictions against the measured rows."""
    by_ladder: dict[str, list[MeasuredLaunch]] = {}
    for r in rows:
        if not ladders or r.ladder in ladders:
            by_ladder.setdefault(r.ladder, []).append(r)
    out = []
    for lid, launches in by_ladder.items():
        meas, pred = [], []
        for r in launches:
            est = predictor.estimate(r.file, r.kernel, gpu, r.launch)
            if est is not None and est.models.get("kerncast", 0.0) > 0:
                meas.append(r.time_us)
                pred.append(est.models["kerncast"])
        if len(meas) >= 2:
            out.append((lid, score(meas, pred)))
    return out


def print_own(scores: Sequence[tuple[str, Score]], gpu: str, path: Path) -> None:
    """The table of the own measurements, labelled apart from the published times."""
    print(f"\nKerncast's own measurements of the same versions on {gpu} ({path.relative_to(ROOT)}: one launch per "
          "version, the first of a multi-launch measurement; validation data, not the published times)")
    for lid, s in scores:
        print(_row(f"{lid} @ {gpu}", s.summary()))
    print(_row(f"overall @ {gpu}", overall_scores([s for _, s in scores]).summary()))


# ------------------------------------------------------------------------------------------------- printing


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _row(name: str, summary: dict[str, Any]) -> str:
    return (f"  {name:34s} {summary['versions']:3d} {summary['pairs_scored']:5d} "
            f"{_fmt(summary['pairs_ordered'], '8.2f')} {_fmt(summary['spearman'], '8.2f')} "
            f"{_fmt(summary['median_abs_log2'], '8.2f')} {_fmt(summary['worst_abs_log2'], '8.2f')} "
            f"{_fmt(summary['mape_pct'], '7.0f')}%")


def overall(results: Sequence[LadderResult]) -> Score:
    """Every (ladder, GPU) score pooled: pairs and errors summed, Spearman averaged over ladders."""
    total = Score()
    for r in results:
        total.add(r.score)
    return total


def per_ladder(results: Sequence[LadderResult]) -> dict[str, Score]:
    """Each ladder's score over all its GPUs: a ladder is one sequence of rewrites, and each GPU it was measured
    on gives its pairs (versions are compared on the same GPU only, never across GPUs)."""
    out: dict[str, Score] = {}
    for r in results:
        out.setdefault(r.ladder.id, Score()).add(r.score)
    return out


def bound_counts(results: Sequence[LadderResult]) -> dict[str, int]:
    """How many measured times lie inside the predicted range, and how many beat the roofline's best case."""
    pairs = [(m, b) for r in results for m, b in zip(r.measured, r.bounds, strict=True)]
    return {"measured": len(pairs), "inside_range": sum(lo <= m <= hi for m, (lo, hi, _) in pairs),
            "below_roofline_best": sum(m < best for m, (_, _, best) in pairs)}


def print_text(results: Sequence[LadderResult], missing: Sequence[str], model: str, verbose: bool) -> None:
    """The per-ladder table, then the overall line."""
    print(f"time model: {model}; pairs measured within {round((TIE_RATIO - 1) * 100)}% are ties (not scored)")
    print(f"  {'ladder @ gpu':34s} {'ver':>3s} {'pairs':>5s} {'ordered':>8s} {'spearman':>8s} "
          f"{'med|lg2|':>8s} {'max|lg2|':>8s} {'MAPE':>8s}")
    for r in results:
        print(_row(f"{r.ladder.id} @ {r.gpu}", r.score.summary()))
        if verbose:
            for v, m, p, (neck, defaults) in zip(r.versions, r.measured, r.predicted, r.notes, strict=True):
                print(f"      {v.id:24s} measured {m:11.1f} us  predicted {p:11.1f} us  ratio {p / m:6.2f}  "
                      f"{neck}{f'; {defaults} default(s)' if defaults else ''}")
    print(_row("overall", overall(results).summary()))
    print("  per ladder, its GPUs together:")
    for lid, total in per_ladder(results).items():
        print(_row(lid, total.summary()))
    counts = bound_counts(results)
    print(f"  measured inside the kerncast range: {counts['inside_range']} of {counts['measured']}; "
          f"faster than the roofline's best case: {counts['below_roofline_best']}")
    for line in missing:
        print(f"  missing: {line}")


def to_json(results: Sequence[LadderResult], missing: Sequence[str], model: str) -> dict[str, Any]:
    """The same figures as the text output, with every version's times."""
    return {
        "model": model, "tie_ratio": TIE_RATIO,
        "ladders": [{
            "ladder": r.ladder.id, "gpu": r.gpu, "kind": r.ladder.kind, **r.score.summary(),
            "versions": [{"id": v.id, "kernel": v.kernel, "measured_us": m, "predicted_us": p, "bottleneck": neck,
                          "defaults": defaults}
                         for v, m, p, (neck, defaults) in zip(r.versions, r.measured, r.predicted, r.notes,
                                                               strict=True)],
        } for r in results],
        "overall": overall(results).summary(),
        "per_ladder": {lid: total.summary() for lid, total in per_ladder(results).items()},
        "bounds": bound_counts(results),
        "missing": list(missing),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-model", choices=sorted(TIME_MODELS), default="kerncast",
                    help="the model whose prediction is scored (default: kerncast)")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    ap.add_argument("--ladder", action="append", default=[], help="only this ladder id (repeatable)")
    ap.add_argument("--gpu", action="append", default=[], help="only this GPU profile id (repeatable)")
    ap.add_argument("--verbose", action="store_true", help="print every version's times")
    ap.add_argument("--no-own", dest="own", action="store_false",
                    help="leave out the tables of Kerncast's own measurements of the versions (validation/h100, h200)")
    args = ap.parse_args(argv)
    try:
        ladders = load_ladders()
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        print(f"validate_ladders: {exc}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.ladder) - {lad.id for lad in ladders})
    if unknown:
        print(f"validate_ladders: unknown ladder(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.ladder:
        ladders = [lad for lad in ladders if lad.id in args.ladder]
    predictor = Predictor("trace" if args.time_model == "trace" else "kerncast")
    results, missing = evaluate(ladders, args.time_model, args.gpu, predictor)
    own = [(gpu, path, scores) for gpu, path in OWN_MEASUREMENTS
           if args.own and args.time_model == "kerncast" and (not args.gpu or gpu in args.gpu)
           and (scores := evaluate_own(load_own_measurements(path), gpu, predictor, args.ladder))]
    if args.format == "json":
        data = to_json(results, missing, args.time_model)
        if own:
            data["own_measurements"] = [{"gpu": gpu, "file": str(path.relative_to(ROOT)),
                                         "ladders": [{"ladder": lid, **s.summary()} for lid, s in scores],
                                         "overall": overall_scores([s for _, s in scores]).summary()}
                                        for gpu, path, scores in own]
        print(json.dumps(data, indent=2))
    else:
        print_text(results, missing, args.time_model, args.verbose)
        for gpu, path, scores in own:
            print_own(scores, gpu, path)
    return 0


def overall_scores(scores: Sequence[Score]) -> Score:
    """Scores pooled as `overall` pools the results'."""
    total = Score()
    for s in scores:
        total.add(s)
    return total


if __name__ == "__main__":
    sys.exit(main())
