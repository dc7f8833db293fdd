"""When to stop repeating a measurement: repeat until the times are stable, for long enough to read power.

Kernel times on a GPU drift at first (clocks ramping up, caches and TLBs warming) and then settle; a fixed
repetition count either wastes time or stops too early. The rule here repeats until the robust coefficient of
variation (1.4826 x median absolute deviation / median, which a few preempted launches do not inflate) is
below a target, and until enough wall time has passed for the board power sensor (NVML updates it a few
times a second) to give a meaningful average.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: scales the median absolute deviation to the standard deviation of a normal distribution
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True, slots=True)
class SampleSummary:
    """Centre and spread of a set of timings."""

    n: int
    median: float
    mean: float
    stdev: float
    robust_cv: float


def summarize(samples: list[float]) -> SampleSummary:
    """Median, mean, standard deviation and robust CV of `samples` (ValueError when empty or not positive)."""
    if not samples:
        raise ValueError("no samples to summarize")
    if min(samples) <= 0:
        raise ValueError("timings must be positive")
    med = statistics.median(samples)
    mad = statistics.median(abs(s - med) for s in samples)
    stdev = statistics.stdev(samples) if len(samples) > 1 else 0.0
    return SampleSummary(len(samples), med, statistics.fmean(samples), stdev, MAD_TO_SIGMA * mad / med)


@dataclass(frozen=True, slots=True)
class StopRule:
    """Stop when stable and long enough, or at the repetition / time limits."""

    #: the times are stable once their robust CV is at most this
    cv_target: float = 0.02
    #: fewest launches whose CV is trusted (a median absolute deviation of a handful of times means little)
    min_reps: int = 20
    #: most launches; a run that reaches this limit before it is stable is reported as not stable
    max_reps: int = 100_000
    #: least wall time repeating, so that the board power sensor gives several readings
    min_seconds: float = 1.0
    #: most wall time repeating, for a kernel whose times never settle
    max_seconds: float = 60.0

    def verdict(self, samples: list[float], elapsed_s: float) -> tuple[bool, bool]:
        """(stop now?, stable?) for the samples so far and the wall time spent repeating."""
        n = len(samples)
        stable = n >= self.min_reps and summarize(samples).robust_cv <= self.cv_target
        if stable and elapsed_s >= self.min_seconds:
            return True, True
        if n >= self.max_reps or elapsed_s >= self.max_seconds:
            return True, stable
        return False, stable

    def next_batch(self, samples: list[float], target_batch_s: float = 0.2) -> int:
        """Launches in the next batch: about `target_batch_s` of work, within the repetition limit."""
        if not samples:
            return min(10, self.max_reps)
        per_launch_s = statistics.median(samples) * 1e-6
        want = int(target_batch_s / max(per_launch_s, 1e-7))
        return max(1, min(want, 10_000, self.max_reps - len(samples)))
