"""The one timer of the speed scripts: the median wall time of a call over several runs, in milliseconds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(fn: Callable[[], object], repeat: int, warm_up: bool = False) -> float:
    """Median milliseconds of `fn()` over `repeat` runs; `warm_up` runs it once untimed first (a model that
    a long-lived process loads once, for example)."""
    if warm_up:
        fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(runs)
