"""How often CPython's cyclic garbage collector runs in a process that analyses kernels.

An analysis allocates hundreds of thousands of small tuples and dicts (symbolic values, lane tables), almost
none of them in reference cycles: they are freed by reference counting as soon as a stage is done with them.
CPython still starts a generation-0 collection every 700 net container allocations, which is about a
thousand collections over the 135 kernels of `benchmarks/analysis_speed.py` and 7% of their CPU time, for
nothing found. From 5000 allocations on the collections fall to about a hundred and their cost to a third,
with the young generation still small (a few MB), so cycles that do occur are still freed soon.
"""

from __future__ import annotations

import gc

#: allocations between generation-0 collections in an analysing process (CPython's default: 700)
GEN0_THRESHOLD = 5000


def tune_collector() -> None:
    """Raise the generation-0 threshold to `GEN0_THRESHOLD`; a higher one already set (by an embedding
    program) and the older generations' thresholds are kept, and a disabled collector stays disabled."""
    gen0, gen1, gen2 = gc.get_threshold()
    if gen0 and gen0 < GEN0_THRESHOLD:
        gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
