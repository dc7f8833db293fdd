"""Thesis Eqs. 4.8-4.12: launch overhead and the global, shared and cache-miss penalties.

Units, which the thesis does not state and the profiles record as inferred: the launch overhead model gives
microseconds, the throughput models give MB/s (= bytes per microsecond), so Eqs. 4.10-4.11 give microseconds;
Eq. 4.12 multiplies a miss count by L(gm) in cycles and so gives cycles. Eq. 4.8 adds them all in cycles, the
microsecond terms converted at the core clock.

Choices where the text is ambiguous:

* The throughput models' x, "the number of global (shared) memory requests ngM (nsM)", is taken as the
  warp-level requests of the whole launch: per-thread instructions x threads / warp size.
* ``access_sz`` is the profile's `access_size` (bytes one thread moves per memory instruction, 4 B as the
  thesis authors computed it).
* Eq. 4.10 divides by R[LSU] only and Eq. 4.11 by R[LSU] x nSM, as printed.
* When the memory analysis knows the shared-memory wavefronts per request (bank conflicts), nShM is
  multiplied by it: the thesis's shared penalty exists to charge bank conflicts (section 4.4.5.3), which it
  could not count from PTX. Without it each request is one wavefront.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerncast.analysis.timing.launch_cost import overhead_us


@dataclass(slots=True)
class Penalties:
    """The Eq. 4.8 terms other than the schedule: three in microseconds, the cache penalty in cycles."""

    launch_overhead_us: float
    global_us: float
    shared_us: float
    cache_cycles: float


def thesis_penalties(profile: Any, *, total_threads: int, n_global: float, n_shared: float, waves: int,
                     shared_wavefronts: float = 1.0, global_sector_factor: float = 1.0) -> Penalties:
    """Eqs. 4.10-4.12 and the launch overhead of section 3.4 for one launch.

    The thesis leaves coalescing out of its penalties (future work). Kerncast scales the global memory and
    cache penalties by `global_sector_factor` (sectors moved per sector needed, from the memory analysis) and
    the shared penalty by `shared_wavefronts` (wavefronts per request): an uncoalesced or bank-conflicted
    access costs that many more transactions. Both default to 1, the thesis's own model.
    """
    warp = profile.warp_size
    lsu = profile.units["LSU"]
    access = profile.access_size
    overhead = overhead_us(profile, profile.launch_overhead(total_threads))
    gm = 0.0
    n_gl = n_global * global_sector_factor
    if n_gl > 0:
        tp = profile.global_throughput(n_gl * total_threads / warp)
        gm = total_threads / lsu * access / tp * n_gl if tp > 0 else 0.0
    sm = 0.0
    n_sh = n_shared * shared_wavefronts
    if n_sh > 0:
        tp = profile.shared_throughput(n_sh * total_threads / warp)
        sm = total_threads / (lsu * profile.sm_count) * access / tp * n_sh if tp > 0 else 0.0
    cm = 0.0
    if n_global > 0 and waves > 0:
        misses = total_threads * n_gl / (waves * profile.l2_bytes / access)
        cm = misses * profile.global_latency(total_threads)
    return Penalties(max(0.0, overhead), max(0.0, gm), max(0.0, sm), max(0.0, cm))
