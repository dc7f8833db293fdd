"""Both power models against measured launches of real kernels: MAPE, share within 15%, interval coverage and
median interval width, per model, grouped by benchmark.

A launch is a kernel of a source file at a grid and block (and scalar parameters), with the board power measured
at that launch. Each launch is analysed as a user's file is (the whole pipeline, the GPU's profile), and both
models' answers are read from the report's `power.models`; the shown answer ("default") is the one the `auto`
choice gives on that GPU. Nothing is fitted here: the measurements only score.

Each scored launch also keeps the event model's parts (idle, static, idle SMs, dynamic, its drivers) and the
predicted time beside the measured one where the file gives it: the rows say which of them an error comes from.

Metrics: MAPE over launches, and over benchmarks (the mean of each benchmark's own MAPE, so that a benchmark
measured at a hundred launches weighs as much as one measured once); the share of launches within 15% of the
measurement; the share inside the model's interval; the median interval width as a share of (TDP - idle). The
same again by measured launch time where the file gives it (`by_measured_time`): a board's power reading of a
microsecond launch carries what the GPU did around it, so the short launches score the measurement as much as
the model, and their share of a file moves its totals.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides, split_kernel_name
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

WITHIN = 0.15
MODELS = ("statistical", "events", "default")
#: measured launch times (µs) the per-time scores split at
TIME_EDGES_US = (10.0, 100.0)


@dataclass(frozen=True)
class MeasuredLaunch:
    """One measured launch: `file` (a .cu path), the kernel's name, its launch, the measured power, the
    benchmark it belongs to (the grouping unit) and the measured time where known."""

    file: Path
    kernel: str
    launch: LaunchOverrides
    power_w: float
    benchmark: str
    time_us: float | None = None


@dataclass
class Scored:
    """One launch with each model's point and interval (None where the analysis gave no power)."""

    launch: MeasuredLaunch
    answers: dict[str, tuple[float, tuple[float, float]]] = field(default_factory=dict)
    why: str = ""
    events: dict[str, Any] = field(default_factory=dict)  # the event model's JSON: its parts and drivers
    time_us: float | None = None  # the predicted time the event model divided the energy by

    def row(self) -> dict[str, Any]:
        """The launch, every model's point and interval, the event model's parts and both times, for a per-launch
        table."""
        m = self.launch
        ev = self.events
        return {"kernel": m.kernel, "benchmark": m.benchmark,
                "launch": f"<<<{_dims(m.launch.grid)}, {_dims(m.launch.block)}>>>",
                "measured_w": m.power_w, "measured_us": m.time_us, "predicted_us": self.time_us,
                **{name: round(w, 1) for name, (w, _) in self.answers.items()},
                "intervals": {name: [round(lo, 1), round(hi, 1)] for name, (_, (lo, hi)) in self.answers.items()},
                **{k: round(float(ev[k]), 1) for k in ("idle_w", "static_w", "idle_sms_w", "dynamic_w") if k in ev},
                "drivers": [(d["driver"], round(d["share"], 2)) for d in ev.get("drivers", [])[:3]]}


def _dims(dims: Any) -> str:
    """A launch dimension as a measurement writes it: 64x64 for (64, 64, 1), 256 for (256, 1, 1)."""
    if not isinstance(dims, tuple):
        return str(dims)
    kept = list(dims)
    while len(kept) > 1 and kept[-1] == 1:
        kept.pop()
    return "x".join(str(d) for d in kept)


def _kernel(report: Any, name: str) -> Any:
    """The launch's kernel: by its name or mangled name (`FileReport.kernel`, which also looks at the kernels of
    the headers the file includes), else a template's instance by its base name (MatrixMulCUDA for
    MatrixMulCUDA<32>, as a measurement names it)."""
    found = report.kernel(name)
    if found is not None:
        return found
    return next((k for k in report.all_kernels() if split_kernel_name(k.name)[0] == name), None)


def score_launch(m: MeasuredLaunch, gpu: str, include_dirs: list[str] | None = None,
                 reports: dict[str, Any] | None = None) -> Scored:
    """Analyse one measured launch and keep both models' answers and the shown one. `reports` (optional)
    keeps each analysed file's report by file, GPU and launch: the launches of one file's kernels share it."""
    out = Scored(m)
    key = repr((str(m.file), gpu, m.launch, include_dirs))
    report = reports.get(key) if reports is not None else None
    if report is None:
        report = analyze_file(m.file, options=AnalysisOptions(gpu=gpu, overrides=m.launch, lime=False,
                                                              include_dirs=list(include_dirs or [])))
        if reports is not None:
            reports[key] = report
    k = _kernel(report, m.kernel)
    if k is None or k.power is None:
        out.why = "kernel not found" if k is None else "; ".join(k.notes) or "no power"
        return out
    p = k.power
    for name in ("statistical", "events"):
        entry = p.models.get(name)
        if entry:
            out.answers[name] = (float(entry["watts"]), (float(entry["interval"][0]), float(entry["interval"][1])))
    out.answers["default"] = (float(p.watts), (float(p.interval[0]), float(p.interval[1])))
    out.events = dict(p.models.get("events") or {})
    out.time_us = float(k.time.us) if k.time is not None else None
    return out


def metrics(rows: Iterable[Scored], model: str, idle_w: float, tdp_w: float) -> dict[str, float]:
    """MAPE (%), MAPE over benchmarks (%), share within 15%, coverage and median width / (TDP - idle)."""
    pts = [(r.launch, *r.answers[model]) for r in rows if model in r.answers]
    if not pts:
        return {"rows": 0}
    errs = [abs(w - m.power_w) / m.power_w for m, w, _ in pts]
    by_bench: dict[str, list[float]] = defaultdict(list)
    for (m, _, _), e in zip(pts, errs, strict=True):
        by_bench[m.benchmark].append(e)
    return {"rows": len(pts), "benchmarks": len(by_bench),
            "mape": 100 * statistics.fmean(errs),
            "mape_by_benchmark": 100 * statistics.fmean(statistics.fmean(v) for v in by_bench.values()),
            "within_15": sum(e <= WITHIN for e in errs) / len(errs),
            "coverage": sum(iv[0] <= m.power_w <= iv[1] for m, _, iv in pts) / len(pts),
            "median_width_share": statistics.median((iv[1] - iv[0]) / (tdp_w - idle_w) for _, _, iv in pts)}


def by_measured_time(rows: list[Scored], idle_w: float, tdp_w: float) -> list[dict[str, Any]]:
    """Every model's metrics over the launches of each measured-time range (TIME_EDGES_US), shortest first,
    as `range_us` [low, high) (high None: no upper end); launches without a measured time are in none, a range
    without launches is left out."""
    edges = (0.0, *TIME_EDGES_US, float("inf"))
    out = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        part = [r for r in rows if r.launch.time_us is not None and lo <= r.launch.time_us < hi]
        if part:
            out.append({"range_us": [lo, hi if hi != float("inf") else None],
                        "models": {name: metrics(part, name, idle_w, tdp_w) for name in MODELS}})
    return out


def evaluate_launches(launches: list[MeasuredLaunch], gpu: str) -> dict[str, Any]:
    """Every model's metrics on `launches` measured on `gpu`, and the launches that could not be analysed."""
    profile = load_profile(gpu)
    reports: dict[str, Any] = {}
    scored = [score_launch(m, gpu, reports=reports) for m in launches]
    usable = [s for s in scored if s.answers]
    return {"gpu": gpu, "idle_w": profile.idle_w, "tdp_w": profile.tdp_w, "launches": len(launches),
            "models": {name: metrics(usable, name, profile.idle_w, profile.tdp_w) for name in MODELS},
            "by_measured_time": by_measured_time(usable, profile.idle_w, profile.tdp_w),
            "rows": [s.row() for s in usable],
            "skipped": [f"{s.launch.kernel} in {s.launch.file.name}: {s.why}" for s in scored if not s.answers]}


def read_launches(path: Path, root: Path | None = None) -> list[MeasuredLaunch]:
    """Measured launches from a CSV with columns source_file, kernel, grid, block, power_w and optionally
    dynamic_shared_bytes, params ("NAME=VALUE NAME=VALUE", or ';'-separated as a GPU campaign writes them),
    benchmark (default: the source file's name) and time_us (the measured time, shown beside the predicted one).
    Relative source paths are taken from `root` (default: the CSV's folder)."""
    base = root or path.parent
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        for rec in csv.DictReader(fh):
            if not rec.get("power_w"):
                continue
            src = Path(rec["source_file"])
            smem = rec.get("dynamic_shared_bytes") or None
            launch = LaunchOverrides.from_strings(grid=rec["grid"].replace("x", ","),
                                                  block=rec["block"].replace("x", ","),
                                                  params=_params(rec.get("params") or ""),
                                                  smem=int(smem) if smem is not None else None)
            time_us = rec.get("time_us") or None
            out.append(MeasuredLaunch(src if src.is_absolute() else base / src, rec["kernel"], launch,
                                      float(rec["power_w"]), rec.get("benchmark") or src.stem,
                                      float(time_us) if time_us is not None else None))
    return out


def _params(text: str) -> list[str]:
    """NAME=VALUE items separated by blanks or semicolons."""
    return [item for item in re.split(r"[;\s]+", text) if item]


def format_rows(result: dict[str, Any]) -> str:
    """A line per launch: measured and predicted power and time, the event model's parts and its drivers."""
    lines = [f"  {'kernel':20s} {'launch':26s} {'meas W':>7s} {'events':>7s} {'err':>6s} {'idle':>5s} "
             f"{'static':>6s} {'(idle SMs)':>10s} {'dynamic':>7s} {'meas us':>9s} {'pred us':>9s}  drivers"]
    for r in result.get("rows", []):
        if "events" not in r:
            continue
        err = (r["events"] - r["measured_w"]) / r["measured_w"]
        times = "".join(f" {t:9.4g}" if t is not None else f" {'-':>9s}" for t in (r["measured_us"], r["predicted_us"]))
        drivers = ", ".join(f"{d} {s:.0%}" for d, s in r["drivers"])
        parts = f"{r.get('idle_w', 0):5.0f} {r.get('static_w', 0):6.1f} {r.get('idle_sms_w', 0):10.1f}"
        lines.append(f"  {r['kernel'][:20]:20s} {r['launch'][:26]:26s} {r['measured_w']:7.1f} {r['events']:7.1f} "
                     f"{err:+6.0%} {parts} {r.get('dynamic_w', 0):7.1f}{times}  {drivers}")
    return "\n".join(lines)


def format_text(result: dict[str, Any]) -> str:
    """One table: a line per model."""
    lines = [f"{result['gpu']}: {result['launches']} measured launches (idle {result['idle_w']:g} W, TDP "
             f"{result['tdp_w']:g} W)",
             f"  {'model':12s} {'rows':>5s} {'MAPE':>7s} {'by bench':>9s} {'within 15%':>11s} {'coverage':>9s} "
             f"{'median width':>13s}"]
    for name, m in result["models"].items():
        if not m.get("rows"):
            lines.append(f"  {name:12s} {0:5d}")
            continue
        lines.append(f"  {name:12s} {m['rows']:5d} {m['mape']:6.1f}% {m['mape_by_benchmark']:8.1f}% "
                     f"{m['within_15']:10.0%} {m['coverage']:9.0%} {m['median_width_share']:12.2f}")
    for part in result.get("by_measured_time", []):
        lo, hi = part["range_us"]
        m = part["models"]["default"]
        span = f"{lo:g}-{hi:g} µs" if hi is not None else f">= {lo:g} µs"
        lines.append(f"  shown, measured {span:12s} {m['rows']:4d} launches  MAPE {m['mape']:5.1f}%  coverage "
                     f"{m['coverage']:4.0%}  median width {m['median_width_share']:.2f}")
    lines += [f"  skipped: {s}" for s in result["skipped"]]
    return "\n".join(lines)
