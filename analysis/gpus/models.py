"""The small curve models a GPU profile holds: a line, a piecewise line and an exponential growth curve.

They are the shapes the thesis fits per GPU: kernel launch overhead is a line in the number of
threads launched (section 3.4), global-memory latency is a piecewise line in the number of threads (Table 3.3)
and global/shared memory throughput grows as ``a * (b - exp(-c * x))`` (Table 4.5). Each model evaluates with
``model(x)`` and converts to and from the plain dictionary a profile's TOML file holds, so the profile loader
and `kerncast calibrate` (which writes profiles) share one representation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class ModelError(ValueError):
    """A model's parameters are missing, of the wrong type or inconsistent; the message names the field."""


def _number(data: dict[str, Any], key: str) -> float:
    if key not in data:
        raise ModelError(f"missing field '{key}'")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelError(f"field '{key}' must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ModelError(f"field '{key}' must be finite, got {value}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Linear:
    """``slope * x + intercept``; the profile says what x and the result measure (`x`, `unit`)."""

    slope: float
    intercept: float
    x: str = ""
    unit: str = ""

    def __call__(self, x: float) -> float:
        return self.slope * x + self.intercept

    def to_toml_dict(self) -> dict[str, Any]:
        """Plain values for a profile's TOML table."""
        return {"slope": self.slope, "intercept": self.intercept, "x": self.x, "unit": self.unit}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Linear:
        """Build from a TOML table; raises ModelError naming the bad field."""
        return cls(_number(data, "slope"), _number(data, "intercept"), _text(data, "x"), _text(data, "unit"))


@dataclass(frozen=True, slots=True)
class ExpModel:
    """``a * (b - exp(-c * x))``: the exponential growth model of thesis Table 4.5."""

    a: float
    b: float
    c: float
    x: str = ""
    unit: str = ""

    def __call__(self, x: float) -> float:
        return self.a * (self.b - math.exp(-self.c * x))

    def to_toml_dict(self) -> dict[str, Any]:
        """Plain values for a profile's TOML table."""
        return {"a": self.a, "b": self.b, "c": self.c, "x": self.x, "unit": self.unit}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExpModel:
        """Build from a TOML table; raises ModelError naming the bad field."""
        a, b, c = _number(data, "a"), _number(data, "b"), _number(data, "c")
        if a <= 0 or c <= 0:
            raise ModelError("fields 'a' and 'c' must be positive (a throughput that grows with x)")
        return cls(a, b, c, _text(data, "x"), _text(data, "unit"))


@dataclass(frozen=True, slots=True)
class PiecewiseLinear:
    """Straight lines on consecutive intervals of x: ``segments = ((t_lo, t_hi, slope, intercept), ...)``.

    Thesis Table 3.3 gives the pieces on open intervals whose ends touch; a value at a shared end uses the
    later piece. Outside the fitted range the model does not extrapolate a slope it never saw: below the first
    interval it uses the first piece, above the last it holds the last piece's value at its upper end (the
    K20's last piece has a negative slope, so extrapolating it would eventually give a negative latency).
    """

    segments: tuple[tuple[float, float, float, float], ...]
    x: str = ""
    unit: str = ""

    def __post_init__(self) -> None:
        if not self.segments:
            raise ModelError("field 'segments' needs at least one segment")
        for i, (lo, hi, _s, _b) in enumerate(self.segments):
            if not lo < hi:
                raise ModelError(f"field 'segments[{i}]': t_lo ({lo}) must be below t_hi ({hi})")
            if i and lo != self.segments[i - 1][1]:
                raise ModelError(
                    f"field 'segments[{i}]': t_lo ({lo}) must equal the previous segment's t_hi "
                    f"({self.segments[i - 1][1]})"
                )

    def __call__(self, x: float) -> float:
        for _lo, hi, slope, intercept in self.segments:
            if x < hi:
                return slope * x + intercept
        _lo, hi, slope, intercept = self.segments[-1]
        return slope * hi + intercept

    def to_toml_dict(self) -> dict[str, Any]:
        """Plain values for a profile's TOML table."""
        return {"segments": [list(s) for s in self.segments], "x": self.x, "unit": self.unit}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PiecewiseLinear:
        """Build from a TOML table; raises ModelError naming the bad field."""
        raw = data.get("segments")
        if not isinstance(raw, list):
            raise ModelError("field 'segments' must be a list of [t_lo, t_hi, slope, intercept]")
        segments = []
        for i, seg in enumerate(raw):
            ok = isinstance(seg, list) and len(seg) == 4
            ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in seg)
            if not ok or not all(math.isfinite(v) for v in seg):
                raise ModelError(f"field 'segments[{i}]' must be [t_lo, t_hi, slope, intercept], all finite")
            segments.append(tuple(float(v) for v in seg))
        return cls(tuple(segments), _text(data, "x"), _text(data, "unit"))


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ModelError(f"field '{key}' must be a string, got {type(value).__name__}")
    return value
