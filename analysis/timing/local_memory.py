"""Local memory: where a kernel's per-thread arrays are served, and what their requests cost.

A local array indexed at run time (`float t[128]; ... t[i % 128]`) lives in device memory, in a frame per
resident thread slot, and is cached like global data. The device interleaves the frames of a warp's lanes word
by word (`memory.warp.local_cost`), so lanes that read one index touch one line per word and lanes whose
indices differ touch a line per distinct word. Whether that traffic stays on chip depends on the frames of the
threads resident at once, not on the launch: a block that retires leaves its slots, and their frames, to the
next one.

- The L1 serves the share of the requests that the frames of one SM's resident threads fit in its L1 (all of
  them when they fit; an LRU cache keeps the rest in that proportion when the indices reach the whole frame).
  A hit costs the load/store unit the request's sectors over the ideal (the L1's data path returns 128 bytes
  a clock); a miss, as for global data, one pass per 128-byte line (`estimate.unit_replays`).
- What the L1 does not serve reaches the L2; the frames of every busy SM's resident threads that do not fit in
  the L2 are missed in the same proportion, and those bytes are DRAM traffic: reads of the sectors and, since
  the L2 is write-back, the stores' sectors written back when their lines are evicted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.ptx.model import Function
from kerncast.analysis.timing.footprint import line_passes, requested_bytes, sector_passes


@dataclass(frozen=True, slots=True)
class LocalTraffic:
    """The local accesses of one launch: their unit passes and the bytes that reach DRAM."""

    #: local access index -> the load/store unit's passes per warp request
    replays: dict[int, float]
    #: bytes the local requests the L1 does not serve move to DRAM, past the L2
    dram: float
    note: str


def frame_bytes(function: Function) -> int:
    """The local bytes one thread's frame holds: the kernel's `.local` declarations (nvcc's `__local_depot`)."""
    return sum(d.size_bytes for d in function.decls if d.space == "local")


def _shares(frame: int, threads_per_sm: int, busy_sms: int, l1_per_sm: float | None,
            l2_bytes: float) -> tuple[float, float]:
    """(the share of the local requests the L1 serves, the share of the rest the L2 misses)."""
    per_sm = float(frame * threads_per_sm)
    l1_hit = 0.0 if l1_per_sm is None or per_sm <= 0.0 else min(1.0, l1_per_sm / per_sm)
    whole = per_sm * busy_sms
    l2_miss = 0.0 if whole <= l2_bytes or whole <= 0.0 else 1.0 - l2_bytes / whole
    return l1_hit, l2_miss


def _passes(a: Any, l1_hit: float, sector: int) -> float | None:
    """Unit passes per request of one known local access: its sector passes on an L1 hit, its line passes on a
    miss (as a global request's), in the proportion of the L1's share."""
    if not (a.known and a.sectors_per_request and a.ideal_sectors):
        return None
    return l1_hit * sector_passes(a) + (1.0 - l1_hit) * line_passes(a, sector)


def local_traffic(memory: Any, cfg: Any, profile: Any, *, warps: int, threads_per_sm: int, busy_sms: int,
                  l1_per_sm: float | None) -> LocalTraffic | None:
    """The local accesses' cost for one launch; None when the kernel makes none. `warps` are the launch's,
    `threads_per_sm` those one SM holds at once, `busy_sms` the SMs the launch keeps busy, `l1_per_sm` the L1
    bytes an SM has beside its blocks' shared memory (None where the L1 does not cache such data)."""
    if not isinstance(memory, MemoryAnalysis):
        return None
    local = [a for a in memory.accesses if a.space == "local" and a.executions > 0.0]
    frame = frame_bytes(cfg.function)
    if not local or frame <= 0:
        return None
    sector = int(profile.sector_bytes or 32)
    l1_hit, l2_miss = _shares(frame, threads_per_sm, busy_sms, l1_per_sm, float(profile.l2_bytes))
    replays = {a.index: p for a in local if (p := _passes(a, l1_hit, sector)) is not None}
    dram = sum(requested_bytes(a, sector, warps) for a in local) * (1.0 - l1_hit) * l2_miss
    note = (f"local memory: a {frame}-byte frame per thread, {frame * threads_per_sm / 1e3:.4g} kB for an SM's "
            f"{threads_per_sm} resident threads; the L1 serves {l1_hit:.0%} of the local requests and the L2, "
            f"holding the frames of {busy_sms} SMs, {1.0 - l2_miss:.0%} of the rest: {dram / 1e6:.4g} MB of "
            "DRAM traffic")
    return LocalTraffic(replays, dram, note)
