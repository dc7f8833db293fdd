"""A clipped additive spline model (GAM): the default power model's core (docs/power-model.md s8).

Recipe: winsorise each feature to the training 1st-99th percentile (bounds kept with the model), impute the
training median, expand each feature into quadratic B-splines on 4 uniform knots spanning the clip bounds, and
fit a ridge regression (alpha 100) on the expansion. Additive by construction, so it cannot memorise a benchmark
as a conjunction of feature values, and the clipping bounds every prediction for out-of-range kernels. The
per-feature terms are the exact contributions shown in explanations.

Written in plain numpy so that the shipped model is a small JSON document (no pickle, no scikit-learn at run time).
Because inputs are clipped to the knot span, the spline never extrapolates; that is equivalent to scikit-learn's
`SplineTransformer(n_knots=4, degree=2, extrapolation="constant")` on the clipped data, and a standard scaler in
front of it would not change the basis, so none is used.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

CLIP_PERCENTILES = (1.0, 99.0)  # docs/power-model.md s8, step (2)
N_KNOTS = 4  # section 8, step (5)
DEGREE = 2  # quadratic B-splines; the basis below is the uniform quadratic one
N_BASIS = N_KNOTS + DEGREE - 1  # 5 basis functions per feature (as SplineTransformer)
DEFAULT_ALPHA = 100.0  # section 8, step (6)


def spline_basis(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """(n, N_BASIS) quadratic B-spline basis of x (already clipped to [lo, hi]); zeros for a constant feature.

    The uniform quadratic basis on N_KNOTS knots over [lo, hi] (extended by DEGREE knots on each side), as
    scikit-learn's SplineTransformer builds it.
    """
    return spline_basis_all(np.asarray(x, dtype=float)[:, None], np.array([lo], float), np.array([hi], float))[:, 0]


def spline_basis_all(X: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """`spline_basis` of every column of X (n, k) in one vectorised pass: (n, k, N_BASIS)."""
    live = hi > lo
    span = np.where(live, hi - lo, 1.0)
    h = span / (N_KNOTS - 1)
    xe = np.where(hi <= X, hi - 1e-12 * span, X)
    starts = (lo - DEGREE * h)[None, :, None] + np.arange(N_BASIS)[None, None, :] * h[None, :, None]
    u = (xe[:, :, None] - starts) / h[None, :, None]
    out = np.where((u >= 0) & (u < 1), 0.5 * u**2, 0.0)
    out = np.where((u >= 1) & (u < 2), 0.5 * (-2 * u**2 + 6 * u - 3), out)
    out = np.where((u >= 2) & (u < 3), 0.5 * (3 - u) ** 2, out)
    return np.where(live[None, :, None], out, 0.0)


@dataclass
class SplineGAM:
    """Additive spline + ridge regressor with per-feature clip, impute and knot tables."""

    alpha: float = DEFAULT_ALPHA
    lo: np.ndarray = field(default_factory=lambda: np.empty(0))
    hi: np.ndarray = field(default_factory=lambda: np.empty(0))
    median: np.ndarray = field(default_factory=lambda: np.empty(0))
    basis_mean: np.ndarray = field(default_factory=lambda: np.empty((0, N_BASIS)))
    coef: np.ndarray = field(default_factory=lambda: np.empty((0, N_BASIS)))
    intercept: float = 0.0

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        Xc = np.clip(X, self.lo, self.hi)
        return np.where(np.isnan(Xc), self.median, Xc)

    def _basis(self, X: np.ndarray) -> np.ndarray:
        """(n, k, N_BASIS) basis of every feature at once (the same numbers as `spline_basis` per column)."""
        return spline_basis_all(self._prepare(X), self.lo, self.hi)

    def fit(self, X: np.ndarray, y: np.ndarray) -> SplineGAM:
        """Fit on (n, k) features X (NaN allowed) and target y."""
        X = np.asarray(X, dtype=float)
        with warnings.catch_warnings():  # an all-NaN column is legal: it becomes a constant, dropped feature
            warnings.simplefilter("ignore", RuntimeWarning)
            self.lo = np.nan_to_num(np.nanpercentile(X, CLIP_PERCENTILES[0], axis=0), nan=0.0)
            self.hi = np.nan_to_num(np.nanpercentile(X, CLIP_PERCENTILES[1], axis=0), nan=0.0)
            self.median = np.nan_to_num(np.nanmedian(np.clip(X, self.lo, self.hi), axis=0), nan=0.0)
        B = self._basis(X)  # (n, k, N_BASIS)
        self.basis_mean = B.mean(axis=0)
        Z = (B - self.basis_mean).reshape(X.shape[0], -1)
        ym = float(np.mean(y))
        A = Z.T @ Z + self.alpha * np.eye(Z.shape[1])
        beta = np.linalg.solve(A, Z.T @ (np.asarray(y, dtype=float) - ym))
        self.coef = beta.reshape(X.shape[1], N_BASIS)
        self.intercept = ym
        return self

    def contributions(self, X: np.ndarray) -> tuple[float, np.ndarray]:
        """(base, (n, k) per-feature terms); base + terms.sum(1) is the prediction. Base = training mean."""
        B = self._basis(np.asarray(X, dtype=float))
        return self.intercept, np.einsum("nkb,kb->nk", B - self.basis_mean, self.coef)

    def predict(self, X: np.ndarray) -> np.ndarray:
        base, c = self.contributions(X)
        return base + c.sum(axis=1)

    def to_dict(self) -> dict:
        return {"kind": "spline-gam", "alpha": self.alpha, "n_knots": N_KNOTS, "degree": DEGREE,
                "clip_percentiles": list(CLIP_PERCENTILES), "lo": self.lo.tolist(), "hi": self.hi.tolist(),
                "median": self.median.tolist(), "basis_mean": self.basis_mean.tolist(), "coef": self.coef.tolist(),
                "intercept": self.intercept}

    @classmethod
    def from_dict(cls, d: dict) -> SplineGAM:
        if d.get("kind") != "spline-gam" or d.get("n_knots") != N_KNOTS or d.get("degree") != DEGREE:
            raise ValueError("not a spline-gam model document of this version")
        return cls(alpha=float(d["alpha"]), lo=np.array(d["lo"], float), hi=np.array(d["hi"], float),
                   median=np.array(d["median"], float), basis_mean=np.array(d["basis_mean"], float),
                   coef=np.array(d["coef"], float), intercept=float(d["intercept"]))
