"""The fitted curves of a calibration, as plain values that can be evaluated and written to a profile.

They mirror the model shapes a GPU profile holds (straight line, piecewise straight line, exponential growth)
but stay independent of the profile classes, so that fitting can be tested on its own and the profile writer
is the one place that knows the profile's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Linear:
    """``y = slope * x + intercept`` (thesis section 3.4: launch overhead against threads launched)."""

    slope: float
    intercept: float

    def evaluate(self, x):
        """The line at x (a number or an array)."""
        return self.slope * np.asarray(x, dtype=float) + self.intercept


@dataclass(frozen=True, slots=True)
class Segment:
    """One straight piece of a piecewise line."""

    slope: float
    intercept: float


@dataclass(frozen=True, slots=True)
class PiecewiseLinear:
    """Independent straight lines on consecutive intervals of x (thesis Table 3.3).

    `segments[k]` applies for ``breakpoints[k-1] <= x < breakpoints[k]``; the first piece extends to minus
    infinity and the last to plus infinity.
    """

    breakpoints: tuple[float, ...]
    segments: tuple[Segment, ...]

    def __post_init__(self) -> None:
        if len(self.segments) != len(self.breakpoints) + 1:
            raise ValueError("a piecewise line needs exactly one more segment than breakpoints")
        if list(self.breakpoints) != sorted(self.breakpoints):
            raise ValueError("breakpoints must be increasing")

    def evaluate(self, x):
        """The piecewise line at x (a number or an array)."""
        xa = np.asarray(x, dtype=float)
        idx = np.searchsorted(np.asarray(self.breakpoints, dtype=float), xa, side="right")
        slopes = np.array([s.slope for s in self.segments])[idx]
        intercepts = np.array([s.intercept for s in self.segments])[idx]
        return slopes * xa + intercepts


@dataclass(frozen=True, slots=True)
class ExpModel:
    """``y = a * (b - exp(-c * x))`` (thesis Table 4.5: memory throughput against memory requests)."""

    a: float
    b: float
    c: float

    def evaluate(self, x):
        """The curve at x (a number or an array)."""
        return self.a * (self.b - np.exp(-self.c * np.asarray(x, dtype=float)))
