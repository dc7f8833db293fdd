"""Fitting code of `kerncast calibrate`: known curves plus noise are recovered; bad data is refused."""

from __future__ import annotations

import numpy as np
import pytest
from kerncast.analysis.calibration.fit import (
    fit_exponential,
    fit_linear,
    fit_piecewise_linear,
    fit_quality,
)
from kerncast.analysis.calibration.models import PiecewiseLinear, Segment


def _rng() -> np.random.Generator:
    return np.random.default_rng(20240607)


def test_linear_recovers_launch_overhead_line() -> None:
    # thesis section 3.4 (K20): 0.00002 * threads + 1.4489 microseconds
    rng = _rng()
    x = np.linspace(32, 2_000_000, 120)
    y = 0.00002 * x + 1.4489 + rng.normal(0, 0.2, x.size)
    model, r2 = fit_linear(x, y)
    assert model.slope == pytest.approx(0.00002, rel=0.03)
    assert model.intercept == pytest.approx(1.4489, abs=0.1)
    assert 0.98 < r2 <= 1.0


def test_linear_exact_data_gives_r2_one() -> None:
    model, r2 = fit_linear([1, 2, 3, 4], [3, 5, 7, 9])
    assert (model.slope, model.intercept) == pytest.approx((2.0, 1.0))
    assert r2 == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        ([1, 2], [1, 2], "at least 3 points"),
        ([5, 5, 5, 5], [1, 2, 3, 4], "x is constant"),
        ([1, 2, 3], [1, 2], "differ in length"),
        ([1, 2, float("nan")], [1, 2, 3], "finite"),
    ],
)
def test_linear_refuses_degenerate_data(x, y, message) -> None:
    with pytest.raises(ValueError, match=message):
        fit_linear(x, y)


K20_GLOBAL = PiecewiseLinear(
    breakpoints=(4096.0, 24576.0, 991232.0),
    segments=(
        Segment(0.02828, 220.0),
        Segment(0.004780, 251.7),
        Segment(0.0001679, 307.8),
        Segment(-0.00002529, 501.8),
    ),
)


def _k20_samples(noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Threads launched in each interval of thesis Table 3.3 and the latency it predicts, plus noise."""
    rng = _rng()
    x = np.concatenate(
        [
            np.linspace(64, 4000, 25),
            np.linspace(4200, 24000, 25),
            np.linspace(26000, 980000, 30),
            np.linspace(1000000, 2200000, 25),
        ]
    )
    return x, K20_GLOBAL.evaluate(x) + rng.normal(0, noise, x.size)


def test_piecewise_finds_the_k20_breakpoints_and_lines() -> None:
    x, y = _k20_samples(noise=2.0)
    model, r2 = fit_piecewise_linear(x, y, segments=4)
    assert len(model.segments) == 4
    # the two clear kinks lie in the gaps between the sampled intervals; the third kink of Table 3.3 is almost
    # continuous (472 vs 477 cycles), so noise may move it, but the fitted curve must still follow the table
    assert 4000 <= model.breakpoints[0] <= 4200
    assert 24000 <= model.breakpoints[1] <= 26000
    assert np.max(np.abs(model.evaluate(x) - K20_GLOBAL.evaluate(x))) < 8.0
    for got, want in zip(model.segments, K20_GLOBAL.segments, strict=True):
        assert got.intercept == pytest.approx(want.intercept, abs=6.0)
    assert model.segments[0].slope == pytest.approx(0.02828, rel=0.05)
    assert model.segments[2].slope == pytest.approx(0.0001679, rel=0.05)
    assert model.segments[3].slope < 0
    assert r2 > 0.99


def test_piecewise_with_given_breakpoints_uses_them() -> None:
    x, y = _k20_samples(noise=0.0)
    model, r2 = fit_piecewise_linear(x, y, breakpoints=[4096, 24576, 991232])
    assert model.breakpoints == (4096.0, 24576.0, 991232.0)
    for got, want in zip(model.segments, K20_GLOBAL.segments, strict=True):
        assert got.slope == pytest.approx(want.slope, rel=1e-6)
        assert got.intercept == pytest.approx(want.intercept, rel=1e-6)
    assert r2 == pytest.approx(1.0)


def test_piecewise_is_independent_of_point_order() -> None:
    x, y = _k20_samples(noise=1.0)
    perm = _rng().permutation(x.size)
    a, _ = fit_piecewise_linear(x, y, segments=3)
    b, _ = fit_piecewise_linear(x[perm], y[perm], segments=3)
    assert a.breakpoints == pytest.approx(b.breakpoints)


def test_piecewise_one_segment_is_the_straight_line() -> None:
    x = np.arange(10.0)
    y = 3 * x - 2
    model, r2 = fit_piecewise_linear(x, y, segments=1)
    assert model.breakpoints == ()
    assert (model.segments[0].slope, model.segments[0].intercept) == pytest.approx((3.0, -2.0))
    assert r2 == pytest.approx(1.0)


def test_piecewise_refuses_too_few_points_and_bad_cuts() -> None:
    with pytest.raises(ValueError, match="at least 8 points"):
        fit_piecewise_linear(np.arange(6.0), np.arange(6.0), segments=4)
    with pytest.raises(ValueError, match="x is constant"):
        fit_piecewise_linear(np.full(10, 3.0), np.arange(10.0), segments=2)
    with pytest.raises(ValueError, match="cannot be cut"):
        # ten points but only three distinct x values: no four pieces with two distinct x each
        fit_piecewise_linear([1, 1, 1, 2, 2, 2, 3, 3, 3, 3], np.arange(10.0), segments=4)
    with pytest.raises(ValueError, match="piece 3"):
        fit_piecewise_linear(np.arange(10.0), np.arange(10.0), breakpoints=[4, 100])
    with pytest.raises(ValueError, match="positive integer"):
        fit_piecewise_linear(np.arange(10.0), np.arange(10.0), segments=0)


@pytest.mark.parametrize(
    ("a", "b", "c", "x_max"),
    [
        (76363.8, 1.04, 0.00021342, 40000),  # K20 global memory throughput, thesis Table 4.5
        (823761.8, 1.0, 0.000013830, 600000),  # K20 shared memory throughput
        (47244.33, 1.0, 0.001223, 5000),  # GTX 1050 global memory throughput
        (71453.6, 1.22, 0.000033469, 200000),  # M60 global memory throughput
    ],
)
def test_exponential_recovers_table_4_5_curves(a, b, c, x_max) -> None:
    rng = _rng()
    x = np.linspace(x_max / 200, x_max, 80)
    clean = a * (b - np.exp(-c * x))
    y = clean + rng.normal(0, 0.01 * a, x.size)
    fa, fb, fc, r2 = fit_exponential(x, y)
    assert fc == pytest.approx(c, rel=0.1)
    assert fa * fb == pytest.approx(a * b, rel=0.02)  # the plateau
    assert fa == pytest.approx(a, rel=0.1)
    assert r2 > 0.98


def test_exponential_refuses_degenerate_data() -> None:
    with pytest.raises(ValueError, match="at least 5 points"):
        fit_exponential([1, 2, 3, 4], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="x is constant"):
        fit_exponential([2] * 6, [1, 2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match="y is constant"):
        fit_exponential([1, 2, 3, 4, 5, 6], [7] * 6)


def test_fit_quality_matches_hand_computation() -> None:
    q = fit_quality([1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 2.5, 4.0], n_params=2)
    assert q.rss == pytest.approx(0.5)
    assert q.mse == pytest.approx(0.125)
    assert q.rmse == pytest.approx(0.125**0.5)
    assert q.r2 == pytest.approx(1 - 0.5 / 5.0)
    assert q.rse == pytest.approx((0.5 / 2) ** 0.5)
    assert fit_quality([2.0, 2.0], [2.0, 2.0], 1).r2 == 1.0
    assert fit_quality([2.0, 2.0], [1.0, 3.0], 1).r2 == 0.0
