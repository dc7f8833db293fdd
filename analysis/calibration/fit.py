"""Regression fits of the thesis's calibration models, with their goodness of fit.

The thesis models microbenchmark results with three shapes:

- a straight line for kernel launch overhead against threads launched (section 3.4, Table 4.4);
- a piecewise straight line for global memory latency against threads launched, one independent line per
  interval (Table 3.3), whose breakpoints must be found from the data;
- an exponential growth curve ``a * (b - exp(-c * x))`` for global and shared memory throughput against the
  number of memory requests (section 4.4.5, Table 4.5).

Each fit returns the model and its coefficient of determination; `fit_quality` gives the full record the
thesis reports (Table 3.4: MSE, RMSE, R-square, RSS, RSE) so that a calibrated profile can say how well every
value it holds was fitted. Degenerate data raise `ValueError` with a message that names the problem, because a
profile built from a fit that silently failed is worse than no profile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from kerncast.analysis.calibration.models import ExpModel, Linear, PiecewiseLinear, Segment
from scipy.optimize import curve_fit

#: fewest points that determine a straight line with one degree of freedom left to measure its error
MIN_LINEAR_POINTS = 3
#: fewest points one piece of a piecewise line may hold
MIN_SEGMENT_POINTS = 2
#: fewest points for the three-parameter exponential curve
MIN_EXP_POINTS = 5


@dataclass(frozen=True, slots=True)
class FitQuality:
    """How well a model fits its data, with the measures of thesis Table 3.4.

    Only the residual sum of squares and R-square are measured; MSE, RMSE and RSE follow from RSS, the number
    of points and the number of fitted parameters, so they are derived here and cannot disagree with it.
    """

    n: int
    n_params: int
    r2: float
    rss: float

    @property
    def mse(self) -> float:
        """Mean squared error, RSS / n."""
        return self.rss / self.n

    @property
    def rmse(self) -> float:
        """Root mean squared error, in the unit of the fitted quantity."""
        return math.sqrt(self.mse)

    @property
    def rse(self) -> float:
        """Residual standard error, sqrt(RSS / (n - parameters)); NaN without a degree of freedom left."""
        dof = self.n - self.n_params
        return math.sqrt(self.rss / dof) if dof > 0 else float("nan")

    def as_dict(self) -> dict[str, float | int]:
        """Plain values, for a profile's TOML or a JSON report."""
        return {
            "n": self.n,
            "r2": self.r2,
            "rmse": self.rmse,
            "mse": self.mse,
            "rss": self.rss,
            "rse": self.rse,
        }


Model = TypeVar("Model", ExpModel, Linear, PiecewiseLinear)


@dataclass(frozen=True, slots=True)
class Fitted(Generic[Model]):
    """A fitted model with the quality of its fit, kept as one value so that no model leaves without it."""

    model: Model
    quality: FitQuality


def _as_arrays(x, y, min_points: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert the data of one fit; raise ValueError on anything a fit cannot use."""
    xa = np.asarray(x, dtype=float).ravel()
    ya = np.asarray(y, dtype=float).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"{what}: x and y differ in length ({xa.size} vs {ya.size})")
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(ya))):
        raise ValueError(f"{what}: x and y must be finite numbers (found NaN or infinity)")
    if xa.size < min_points:
        raise ValueError(f"{what}: needs at least {min_points} points, got {xa.size}")
    if np.ptp(xa) == 0.0:
        raise ValueError(f"{what}: x is constant ({xa[0]:g}), so no slope can be fitted")
    return xa, ya


def fit_quality(y, predicted, n_params: int) -> FitQuality:
    """Goodness of fit of `predicted` against observed `y` for a model with `n_params` fitted parameters.

    R-square is 1 - RSS/TSS; for constant observations (TSS = 0) it is 1 when the model reproduces them
    exactly and 0 otherwise, so that a flat measurement does not produce NaN in a profile.
    """
    ya = np.asarray(y, dtype=float).ravel()
    pa = np.asarray(predicted, dtype=float).ravel()
    n = int(ya.size)
    if n == 0 or pa.size != n:
        raise ValueError("fit_quality: y and predicted must be non-empty and of equal length")
    resid = ya - pa
    rss = float(np.dot(resid, resid))
    tss = float(np.sum((ya - ya.mean()) ** 2))
    exact = rss <= 1e-24 * max(1.0, float(np.dot(ya, ya)))
    r2 = 1.0 - rss / tss if tss > 0.0 else float(exact)
    return FitQuality(n=n, n_params=n_params, r2=r2, rss=rss)


def _least_squares_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Slope and intercept of the ordinary least-squares line through (x, y); x must not be constant."""
    xm = x.mean()
    ym = y.mean()
    sxx = float(np.sum((x - xm) ** 2))
    sxy = float(np.sum((x - xm) * (y - ym)))
    slope = sxy / sxx
    return slope, float(ym - slope * xm)


def fit_linear(x, y) -> tuple[Linear, float]:
    """Fit ``y = slope * x + intercept`` by least squares; returns the model and its R-square."""
    xa, ya = _as_arrays(x, y, MIN_LINEAR_POINTS, "linear fit")
    slope, intercept = _least_squares_line(xa, ya)
    model = Linear(slope=slope, intercept=intercept)
    return model, fit_quality(ya, model.evaluate(xa), 2).r2


class _SegmentCosts:
    """Sum of squared errors of the best line over any run of sorted points, in O(1) from prefix sums."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        # centre and scale for numerical stability of the prefix-sum formulas
        self._x = (x - x.mean()) / (np.ptp(x) or 1.0)
        self._y = (y - y.mean()) / (np.ptp(y) or 1.0)
        self._scale = (np.ptp(y) or 1.0) ** 2

        def prefix(values: np.ndarray) -> np.ndarray:
            return np.concatenate(([0.0], np.cumsum(values)))

        self._sx = prefix(self._x)
        self._sy = prefix(self._y)
        self._sxx = prefix(self._x * self._x)
        self._sxy = prefix(self._x * self._y)
        self._syy = prefix(self._y * self._y)

    def sse(self, i: int, j: int) -> float:
        """SSE (in the units of y squared) of the least-squares line through points i..j-1."""
        n = j - i
        sx = self._sx[j] - self._sx[i]
        sy = self._sy[j] - self._sy[i]
        sxx = self._sxx[j] - self._sxx[i] - sx * sx / n
        sxy = self._sxy[j] - self._sxy[i] - sx * sy / n
        syy = self._syy[j] - self._syy[i] - sy * sy / n
        cost = syy - sxy * sxy / sxx if sxx > 1e-15 else syy
        return max(cost, 0.0) * self._scale


def _split_points(x: np.ndarray) -> list[int]:
    """Indices (into sorted x) where a new piece may start: never between two points with the same x."""
    return [i for i in range(1, x.size) if x[i] > x[i - 1]]


def _best_splits(x: np.ndarray, y: np.ndarray, segments: int) -> list[int]:
    """Start indices of pieces 2..k of the piecewise line with the least total SSE (dynamic programming).

    Every piece holds at least MIN_SEGMENT_POINTS points and at least two distinct x values.
    """
    n = x.size
    costs = _SegmentCosts(x, y)
    allowed = set(_split_points(x)) | {n}
    distinct_before = np.concatenate(([0], np.cumsum(np.diff(x) > 0)))  # distinct-x index of each point

    def valid(i: int, j: int) -> bool:
        return j - i >= MIN_SEGMENT_POINTS and distinct_before[j - 1] > distinct_before[i]

    inf = float("inf")
    # best[k][j]: least SSE of points 0..j-1 cut into k pieces; back[k][j]: start of the last piece
    best = [[inf] * (n + 1) for _ in range(segments + 1)]
    back = [[-1] * (n + 1) for _ in range(segments + 1)]
    best[0][0] = 0.0
    ends = sorted(allowed)
    starts = [0, *sorted(allowed - {n})]
    for k in range(1, segments + 1):
        for j in ends:
            for i in starts:
                if i >= j or best[k - 1][i] == inf or not valid(i, j):
                    continue
                total = best[k - 1][i] + costs.sse(i, j)
                if total < best[k][j]:
                    best[k][j] = total
                    back[k][j] = i
    if best[segments][n] == inf:
        raise ValueError(
            f"piecewise linear fit: {n} points with {len(allowed)} distinct x values cannot be cut into "
            f"{segments} pieces of at least {MIN_SEGMENT_POINTS} points and two distinct x each"
        )
    splits = []
    j = n
    for k in range(segments, 0, -1):
        i = back[k][j]
        if i > 0:
            splits.append(i)
        j = i
    return sorted(splits)


def _splits_from_breakpoints(x: np.ndarray, breakpoints) -> list[int]:
    """Start indices of the pieces between user-given breakpoints (a point on a breakpoint goes right)."""
    bps = sorted(float(b) for b in breakpoints)
    return [int(np.searchsorted(x, b, side="left")) for b in bps]


def fit_piecewise_linear(x, y, segments: int = 4, breakpoints=None) -> tuple[PiecewiseLinear, float]:
    """Fit independent least-squares lines on consecutive intervals of x (thesis Table 3.3).

    With `breakpoints` the intervals are given; otherwise `segments` pieces are chosen by an exact dynamic
    programme over all cut positions that minimises the total squared error. Breakpoints are placed halfway
    between the last x of one piece and the first x of the next. Returns the model and its overall R-square.
    """
    if breakpoints is None and (not isinstance(segments, int) or segments < 1):
        raise ValueError(f"piecewise linear fit: segments must be a positive integer, got {segments!r}")
    n_pieces = segments if breakpoints is None else len(list(breakpoints)) + 1
    xa, ya = _as_arrays(x, y, max(MIN_LINEAR_POINTS, MIN_SEGMENT_POINTS * n_pieces), "piecewise linear fit")
    order = np.argsort(xa, kind="stable")
    xa, ya = xa[order], ya[order]
    splits = _best_splits(xa, ya, segments) if breakpoints is None else _splits_from_breakpoints(xa, breakpoints)
    bounds = [0, *splits, xa.size]
    pieces: list[Segment] = []
    for k, (i, j) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        xs, ys = xa[i:j], ya[i:j]
        if xs.size < MIN_SEGMENT_POINTS or np.ptp(xs) == 0.0:
            raise ValueError(
                f"piecewise linear fit: piece {k + 1} holds {xs.size} point(s) without two distinct x values"
            )
        slope, intercept = _least_squares_line(xs, ys)
        pieces.append(Segment(slope=slope, intercept=intercept))
    if breakpoints is None:
        cuts = [float((xa[s - 1] + xa[s]) / 2.0) for s in splits]
    else:
        cuts = sorted(float(b) for b in breakpoints)
    model = PiecewiseLinear(breakpoints=tuple(cuts), segments=tuple(pieces))
    n_params = 2 * len(pieces) + (len(pieces) - 1 if breakpoints is None else 0)
    return model, fit_quality(ya, model.evaluate(xa), n_params).r2


def _exp_curve(x, big_a, a, c):
    """``A - a * exp(-c x)``: the thesis curve ``a * (b - exp(-c x))`` with A = a*b, better conditioned."""
    return big_a - a * np.exp(-c * x)


def _exp_initial_guess(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Start values (A, a, c) on unit-scaled data.

    The plateau A is the mean of the largest-x fifth of the points; the rate c is the inverse of the x at
    which y first covers 63 % of the rise from the first point; a then follows from y(x0) = A - a exp(-c x0).
    """
    order = np.argsort(x)
    xs, ys = x[order], y[order]
    plateau = float(np.mean(ys[-max(1, xs.size // 5):]))
    rise = plateau - float(ys[0])
    above = np.nonzero(ys >= float(ys[0]) + 0.632 * rise)[0] if rise > 0 else np.array([], dtype=int)
    x63 = float(xs[above[0]]) if above.size else float(np.median(xs))
    c0 = 1.0 / max(x63, 1e-3)
    a0 = max(rise, 1e-6) * math.exp(min(c0 * float(xs[0]), 50.0))
    return plateau, a0, c0


def fit_exponential(x, y) -> tuple[float, float, float, float]:
    """Fit the growth curve ``a * (b - exp(-c * x))`` (thesis Table 4.5); returns (a, b, c, R-square).

    x and y are scaled to unit range before fitting, and the curve is fitted as ``A - a exp(-c x)`` with
    a > 0 and c > 0 (growth towards a plateau), which converges from the data-derived start values where
    fitting a, b, c directly often does not. Raises ValueError when the data do not determine the curve.
    """
    xa, ya = _as_arrays(x, y, MIN_EXP_POINTS, "exponential fit")
    if np.ptp(ya) == 0.0:
        raise ValueError("exponential fit: y is constant, so no growth rate can be fitted")
    x_scale = float(np.max(np.abs(xa)))
    y_scale = float(np.max(np.abs(ya)))
    xs, ys = xa / x_scale, ya / y_scale
    p0 = _exp_initial_guess(xs, ys)
    lower = (-np.inf, 1e-12, 1e-9)
    upper = (np.inf, np.inf, 1e6)
    try:
        params, _ = curve_fit(_exp_curve, xs, ys, p0=p0, bounds=(lower, upper), maxfev=20000)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"exponential fit did not converge: {exc}") from exc
    big_a, a_s, c_s = (float(p) for p in params)
    a = a_s * y_scale
    b = big_a / a_s
    c = c_s / x_scale
    model = ExpModel(a=a, b=b, c=c)
    r2 = fit_quality(ya, model.evaluate(xa), 3).r2
    if not all(math.isfinite(v) for v in (a, b, c, r2)):
        raise ValueError("exponential fit produced non-finite parameters")
    return a, b, c, r2
