"""The stop rule of `kerncast measure` on synthetic timings."""

from __future__ import annotations

import numpy as np
import pytest
from kerncast.analysis.calibration.stats import StopRule, summarize


def test_summary_of_known_samples() -> None:
    s = summarize([10.0, 11.0, 9.0, 10.0, 30.0])
    assert s.median == 10.0
    assert s.mean == pytest.approx(14.0)
    # MAD = median(|0|,1,1,0,20) = 1 -> robust CV = 1.4826 / 10; the outlier does not inflate it
    assert s.robust_cv == pytest.approx(0.14826)
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([1.0, 0.0])


def test_stable_samples_stop_once_enough_time_has_passed() -> None:
    rng = np.random.default_rng(3)
    samples = list(100.0 * (1 + rng.normal(0, 0.005, 50)))
    rule = StopRule(cv_target=0.02, min_reps=20, min_seconds=1.0)
    assert rule.verdict(samples, elapsed_s=0.5) == (False, True)  # stable, but too short for power
    assert rule.verdict(samples, elapsed_s=1.2) == (True, True)
    assert rule.verdict(samples[:10], elapsed_s=5.0) == (False, False)  # too few repetitions


def test_noisy_samples_run_to_the_limit_and_say_so() -> None:
    rng = np.random.default_rng(4)
    noisy = list(100.0 * np.exp(rng.normal(0, 0.3, 200)))
    rule = StopRule(cv_target=0.02, max_reps=200, max_seconds=30.0)
    assert rule.verdict(noisy[:100], elapsed_s=2.0) == (False, False)
    assert rule.verdict(noisy, elapsed_s=2.0) == (True, False)
    assert rule.verdict(noisy[:100], elapsed_s=31.0) == (True, False)


def test_batch_size_targets_a_fixed_duration() -> None:
    rule = StopRule(max_reps=1000)
    assert rule.next_batch([]) == 10
    assert rule.next_batch([1000.0] * 10) == 200  # 1 ms launches -> 0.2 s
    assert rule.next_batch([0.001] * 10) == 990  # capped by the repetitions left
