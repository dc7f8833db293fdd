"""The power model's 90% interval: conformal, conditional on the kernel, and inside physics.

A kernel's board power is its GPU's idle power plus a dynamic part, so the interval is normalised conformal
prediction with a scale that grows with the predicted dynamic power:

    s = max(P̂ - idle, 0) + K * (TDP - idle),       r = (P - P̂) / s

For held-out benchmarks of a grouped cross-validation the residuals r are collected, and their
benchmark-weighted lower and upper quantiles (lo, hi) define the interval

    P̂ + lo * s  ...  P̂ + hi * s,   clipped to [idle, TDP] of the GPU.

A kernel predicted near idle gets a narrow interval, a busy one a wide one; the interval is asymmetric where the
errors are, and it can never leave the GPU's physical range. Each benchmark weighs 1 in the quantiles, because
errors are correlated within a benchmark, and the tail levels get the split-conformal finite-sample correction
with the number of benchmarks as n (docs/power-model.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOMINAL = 0.90  # interval level promised by the API
#: Share of the GPU's dynamic range (TDP - idle) added to the scale, so that a prediction at idle still has an
#: interval. 0.15 was chosen among {0, 0.05, 0.15, 0.5} by grouped CV width at equal coverage (docs/power-model.md).
SCALE_FLOOR_SHARE = 0.15


@dataclass(frozen=True)
class PowerInterval:
    """Quantiles (lo, hi) of the normalised residual (P - P̂) / s; see the module docstring."""

    lo: float
    hi: float

    def apply(self, watts, idle_w, tdp_w) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) watts for predicted `watts` on a GPU with `idle_w` and `tdp_w` (arrays or floats)."""
        w, idle, tdp = (np.asarray(v, float) for v in (watts, idle_w, tdp_w))
        s = scale(w, idle, tdp)
        return np.clip(w + self.lo * s, idle, tdp), np.clip(w + self.hi * s, idle, tdp)

    def to_json(self) -> dict:
        return {"kind": "normalised-dynamic", "level": NOMINAL, "scale_floor_share": SCALE_FLOOR_SHARE,
                "lo": self.lo, "hi": self.hi}

    @classmethod
    def from_json(cls, d: dict | None) -> PowerInterval | None:
        if not d or d.get("kind") != "normalised-dynamic" or d.get("scale_floor_share") != SCALE_FLOOR_SHARE:
            return None
        return cls(float(d["lo"]), float(d["hi"]))


def scale(watts, idle_w, tdp_w) -> np.ndarray:
    """The interval's scale for a prediction: its dynamic power plus a floor share of the dynamic range."""
    w, idle, tdp = (np.asarray(v, float) for v in (watts, idle_w, tdp_w))
    return np.maximum(w - idle, 0.0) + SCALE_FLOOR_SHARE * (tdp - idle)


def _weighted_quantile(r: np.ndarray, w: np.ndarray, q: float) -> float:
    order = np.argsort(r)
    cw = np.cumsum(w[order]) / np.sum(w)
    return float(r[order][min(int(np.searchsorted(cw, q)), len(r) - 1)])


def calibrate(y, p, groups, idle_w, tdp_w, level: float = NOMINAL) -> PowerInterval:
    """The interval whose benchmark-weighted coverage of measured `y` by predictions `p` is `level`."""
    y, p = np.asarray(y, float), np.asarray(p, float)
    r = (y - p) / scale(p, idle_w, tdp_w)
    _, inv, counts = np.unique(groups, return_inverse=True, return_counts=True)
    w = 1.0 / counts[inv]
    tail = max(0.0, 1.0 - min(1.0, level * (1.0 + 1.0 / len(counts)))) / 2
    return PowerInterval(_weighted_quantile(r, w, tail), _weighted_quantile(r, w, 1.0 - tail))


def width_share(lo, hi, idle_w, tdp_w) -> np.ndarray:
    """Interval width as a share of the GPU's dynamic range (TDP - idle)."""
    return (np.asarray(hi, float) - np.asarray(lo, float)) / (np.asarray(tdp_w, float) - np.asarray(idle_w, float))
