"""From raw microbenchmark records to the values and fitted models of a GPU profile.

Each step follows the thesis: latency rows are the dependent-chain cycles per instruction (Table 3.2); each
instruction class gets its peak throughput and peak warps per ILP (Table 3.1, with the thesis's epsilon-argmax
definition of peak warps); global load latency is a four-piece linear model of threads launched (Table 3.3);
memory throughput is an exponential growth curve of memory requests (Table 4.5); launch overhead is a line in
threads launched (section 3.4). Beyond the thesis, the atomics benchmarks give the same-address update rate
(the best of the launches: the L2 serialises them, so more warps cannot go faster) and the cycles a further
same-address lane of one warp instruction adds (the slope of cycles per instruction against lanes per address).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.calibration.fit import (
    Fitted,
    fit_exponential,
    fit_linear,
    fit_piecewise_linear,
    fit_quality,
)
from kerncast.analysis.calibration.harness import RawResults
from kerncast.analysis.calibration.models import ExpModel, Linear, PiecewiseLinear

#: relative distance from the best throughput within which a warp count counts as reaching the peak
PEAK_EPSILON = 0.05
#: pieces of the global latency model (thesis Table 3.3 has four)
GLOBAL_LATENCY_SEGMENTS = 4


@dataclass(frozen=True, slots=True)
class ThroughputRow:
    """Thesis Table 3.1 for one instruction class: per ILP, the peak throughput and the warps that reach it."""

    ilp: tuple[int, ...]
    tp: tuple[float, ...]
    peak_warps: tuple[float, ...]


@dataclass(frozen=True)
class Calibration:
    """Everything a calibration run measured and fitted, ready to be written into a profile."""

    device: dict
    sm_clock_mhz: float | None
    latency: dict[str, float]
    throughput: dict[str, ThroughputRow]
    global_latency: Fitted[PiecewiseLinear]
    global_latency_max_threads: float
    global_throughput: Fitted[ExpModel]
    shared_throughput: Fitted[ExpModel]
    launch_overhead: Fitted[Linear]
    shared_loads_per_cycle_per_sm: float | None
    #: `same_address_per_clock`, `lane_replay_cycles` where the run had the atomics benchmarks
    atomics: dict[str, float] = field(default_factory=dict)
    atomic_lanes: Fitted[Linear] | None = None


def peak_warps(warps, throughput, epsilon: float = PEAK_EPSILON) -> tuple[float, float]:
    """(peak throughput, peak warps): the fewest warps whose throughput is within `epsilon` of the best.

    This is the thesis's PW (section 3.2): an argmax that ignores variations smaller than epsilon, so that the
    oscillation after saturation does not move the peak to a needlessly large warp count.
    """
    w = np.asarray(warps, dtype=float)
    tp = np.asarray(throughput, dtype=float)
    if w.size == 0 or w.size != tp.size:
        raise ValueError("peak_warps needs equally many (non-zero) warp counts and throughputs")
    best = float(np.max(tp))
    order = np.argsort(w, kind="stable")
    for i in order:
        if tp[i] >= (1.0 - epsilon) * best:
            return best, float(w[i])
    raise AssertionError("unreachable: the maximum always qualifies")


def _latencies(raw: RawResults) -> dict[str, float]:
    return {str(r["row"]): float(r["cycles"]) for r in raw.of("latency")}


def _throughput_rows(raw: RawResults) -> dict[str, ThroughputRow]:
    series: dict[str, dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in raw.of("throughput"):
        if float(r["per_cycle_per_sm"]) > 0:
            series[str(r["row"])][int(r["ilp"])].append((float(r["warps_per_sm"]), float(r["per_cycle_per_sm"])))
    out: dict[str, ThroughputRow] = {}
    for row, per_ilp in series.items():
        ilps = sorted(per_ilp)
        peaks = [peak_warps([p[0] for p in per_ilp[i]], [p[1] for p in per_ilp[i]]) for i in ilps]
        out[row] = ThroughputRow(tuple(ilps), tuple(p[0] for p in peaks), tuple(p[1] for p in peaks))
    return out


def _xy(records: list[dict], x_key: str, y_of) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([float(r[x_key]) for r in records])
    y = np.array([float(y_of(r)) for r in records])
    return x, y


def _fit_global_latency(raw: RawResults) -> Fitted[PiecewiseLinear]:
    x, y = _xy(raw.of("global_latency"), "threads", lambda r: r["cycles"])
    segments = max(1, min(GLOBAL_LATENCY_SEGMENTS, x.size // 4))
    model, _ = fit_piecewise_linear(x, y, segments=segments)
    n_params = 3 * len(model.segments) - 1
    return Fitted(model, fit_quality(y, model.evaluate(x), n_params))


def _fit_memory_throughput(raw: RawResults, space: str) -> Fitted[ExpModel]:
    records = [r for r in raw.of("memory_throughput") if r.get("space") == space and float(r["time_us"]) > 0]
    x, y = _xy(records, "requests", lambda r: float(r["bytes"]) / float(r["time_us"]))  # bytes/us = MB/s
    a, b, c, _ = fit_exponential(x, y)
    model = ExpModel(a, b, c)
    return Fitted(model, fit_quality(y, model.evaluate(x), 3))


def _fit_launch(raw: RawResults) -> Fitted[Linear]:
    x, y = _xy(raw.of("launch"), "threads", lambda r: r["time_us"])
    model, _ = fit_linear(x, y)
    return Fitted(model, fit_quality(y, model.evaluate(x), 2))


def _shared_loads_per_cycle(raw: RawResults, sm_count: int, clock_mhz: float | None) -> float | None:
    """Peak shared-memory loads (thread loads) per cycle per SM seen in the shared throughput sweep."""
    if not clock_mhz:
        return None
    rates = [
        float(r["threads"]) * float(r["loads_per_thread"]) / (float(r["time_us"]) * clock_mhz) / sm_count
        for r in raw.of("memory_throughput")
        if r.get("space") == "shared" and float(r["time_us"]) > 0
    ]
    return max(rates) if rates else None


def same_address_rate(raw: RawResults, clock_mhz: float | None) -> float | None:
    """Updates per SM clock to one address: the best launch of the same-address benchmark (None without one)."""
    rates = [float(r["updates"]) / (float(r["time_us"]) * clock_mhz) for r in raw.of("atomic_same_address")
             if clock_mhz and float(r["time_us"]) > 0]
    return max(rates) if rates else None


def fit_lane_replay(raw: RawResults, clock_mhz: float | None) -> Fitted[Linear] | None:
    """Cycles per atomic instruction of one warp against its same-address lanes less one: the slope is what a
    further lane costs, the intercept the instruction's issue. None without two lane counts to fit."""
    records = [r for r in raw.of("atomic_lanes") if clock_mhz and float(r["time_us"]) > 0]
    if len({int(r["lanes_per_address"]) for r in records}) < 2:
        return None
    x, y = _xy(records, "lanes_per_address",
               lambda r: float(r["time_us"]) * clock_mhz / float(r["instructions_per_warp"]))
    model, _ = fit_linear(x - 1.0, y)
    return Fitted(model, fit_quality(y, model.evaluate(x - 1.0), 2))


def _atomic_rates(raw: RawResults, clock_mhz: float | None) -> tuple[dict[str, float], Fitted[Linear] | None]:
    """The profile's `[atomics]` rows this run measured: only the positive ones (a flat or failed benchmark
    leaves the data file's estimate in place)."""
    out: dict[str, float] = {}
    rate = same_address_rate(raw, clock_mhz)
    if rate is not None and rate > 0:
        out["same_address_per_clock"] = round(rate, 4)
    lanes = fit_lane_replay(raw, clock_mhz)
    if lanes is not None and lanes.model.slope > 0:
        out["lane_replay_cycles"] = round(lanes.model.slope, 2)
    return out, lanes


def analyze(raw: RawResults) -> Calibration:
    """Fit every model of a profile to one harness run; CalibrationError names the part that failed."""
    device = raw.one("device")
    clock = raw.of("clock")
    sm_clock = float(clock[-1]["sm_mhz"]) if clock else None
    try:
        global_latency = _fit_global_latency(raw)
        global_tp = _fit_memory_throughput(raw, "global")
        shared_tp = _fit_memory_throughput(raw, "shared")
        launch = _fit_launch(raw)
        atomics, lanes = _atomic_rates(raw, sm_clock or float(device["clock_khz"]) / 1e3)
    except ValueError as exc:
        raise CalibrationError(f"fitting the calibration data failed: {exc}") from exc
    return Calibration(
        device=device,
        sm_clock_mhz=sm_clock,
        latency=_latencies(raw),
        throughput=_throughput_rows(raw),
        global_latency=global_latency,
        global_latency_max_threads=max(float(r["threads"]) for r in raw.of("global_latency")),
        global_throughput=global_tp,
        shared_throughput=shared_tp,
        launch_overhead=launch,
        shared_loads_per_cycle_per_sm=_shared_loads_per_cycle(raw, int(device["sm_count"]), sm_clock),
        atomics=atomics,
        atomic_lanes=lanes,
    )
