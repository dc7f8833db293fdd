"""The DRAM latency a launch's loads wait when the bytes its SMs keep in flight load the memory system.

A block that loads and then works without loads (a reduction's tree between barriers) keeps its bytes in flight
only for the load's share of its stay. The DRAM bandwidth is reached only when the resident blocks together keep
enough bytes in flight (Little's law: bytes in flight = bandwidth x latency), and the latency itself grows as the
bandwidth fills: requests queue. Neither the pure bandwidth floor nor the latency chain at a fixed latency sees
this; a measured curve of bandwidth against bytes in flight per SM does (`data/timing.toml`
[kerncast.loaded_latency], a streaming read benchmark: blocks that load one element per thread and exit).

Its round trip at a given level of bytes in flight, ``bytes in flight x SMs / bandwidth``, is the latency a load
waits there (the benchmark's block launch and exit included, as a kernel's blocks pay them too). A launch's
blocks hold, per SM, ``resident x bytes per block x latency / stay`` bytes in flight on average (each holds its
bytes for the latency of the loads that bring them, out of its stay), and the stay grows with the latency; the
latency the curve gives at that level and the latency the stay was computed with must agree. `consistent_latency`
finds that fixed point. Beyond the curve's last point the bandwidth is spent: the queue, and so the latency, grows
with the bytes in flight at the last point's bandwidth.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kerncast.analysis.timing.constants import timing_constants

_STEPS = 60  # bisection steps: the latency to within 2^-60 of its bracket


@dataclass(frozen=True, slots=True)
class LoadCurve:
    """Bytes in flight per SM (ascending) and the round trip of a load at that level, in nanoseconds."""

    in_flight: tuple[float, ...]
    round_ns: tuple[float, ...]
    sms: int
    peak_gbs: float  # the bandwidth at the last point, where it stops growing

    def latency_ns(self, in_flight: float) -> float:
        """A load's round trip with `in_flight` bytes per SM: the curve between its points, its first point below
        it (an idle memory system's latency), and past its last point the queue of a spent bandwidth."""
        if in_flight <= self.in_flight[0]:
            return self.round_ns[0]
        if in_flight >= self.in_flight[-1]:
            return in_flight * self.sms / self.peak_gbs
        i = bisect.bisect_left(self.in_flight, in_flight)
        x0, x1 = self.in_flight[i - 1], self.in_flight[i]
        y0, y1 = self.round_ns[i - 1], self.round_ns[i]
        return y0 + (y1 - y0) * (in_flight - x0) / (x1 - x0)


def load_curve(profile: Any) -> LoadCurve | None:
    """The GPU's measured bandwidth-against-bytes-in-flight curve as round trips, None where none is listed."""
    row = timing_constants()["kerncast"].get("loaded_latency", {}).get(profile.id)
    if not isinstance(row, dict):
        return None
    sms, width = int(row["sms"]), float(row["bytes_per_thread"])
    flight = tuple(float(t) * width for t in row["threads_per_sm"])
    gbs = tuple(float(g) for g in row["gbs"])
    # bytes / (GB/s) = ns: the round trip that keeps `sms x flight` bytes moving at that bandwidth
    return LoadCurve(flight, tuple(f * sms / g for f, g in zip(flight, gbs, strict=True)), sms, gbs[-1])


def consistent_latency(curve: LoadCurve, stay_ns: Callable[[float], float], resident: int,
                       bytes_per_block: float) -> float:
    """The load latency (ns) at which the curve and the blocks' own stay agree.

    `stay_ns(latency)` is one block's stay when its DRAM loads wait `latency`; `resident` blocks per SM each move
    `bytes_per_block` DRAM bytes, holding them in flight for the latency out of their stay. The curve's latency
    falls as the guess rises past the fixed point (more latency, more bytes in flight per stay, but a longer stay
    limits them), so bisection between the idle latency and the curve's answer with every block's bytes in flight
    at once finds it."""
    def gap(latency: float) -> float:
        stay = max(stay_ns(latency), latency)
        return curve.latency_ns(resident * bytes_per_block * latency / stay) - latency

    lo = curve.round_ns[0]
    hi = max(lo, curve.latency_ns(resident * bytes_per_block))
    if gap(lo) <= 0.0:
        return lo
    for _ in range(_STEPS):
        mid = 0.5 * (lo + hi)
        if gap(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def stream_bandwidth_gbs(profile: Any, write_share: float) -> float | None:
    """The DRAM bandwidth a streaming launch reaches when `write_share` of its DRAM bytes are written: the
    benchmark's read-only, half-written and write-only streams at full occupancy, with the time per byte linear in
    the share between them (reads and writes share the bus, and turning it round costs time: the half-written
    stream is the slowest of the three). None where the GPU lists none."""
    row = timing_constants()["kerncast"].get("loaded_latency", {}).get(profile.id)
    if not isinstance(row, dict) or "read_write_gbs" not in row or "write_gbs" not in row:
        return None
    share = min(1.0, max(0.0, write_share))
    points = ((0.0, float(row["gbs"][-1])), (0.5, float(row["read_write_gbs"])), (1.0, float(row["write_gbs"])))
    (x0, g0), (x1, g1) = points[:2] if share <= 0.5 else points[1:]
    per_byte = 1.0 / g0 + (1.0 / g1 - 1.0 / g0) * (share - x0) / (x1 - x0)
    return 1.0 / per_byte

