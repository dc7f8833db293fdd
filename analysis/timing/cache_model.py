"""Which global loads the L1 serves: reuse of a sector by the same thread on the next iteration of its loop.

A thread that walks an array in steps smaller than a sector (`s += in[row * n + k]`, 4 bytes per iteration)
finds its next element in the sector its previous iteration brought in: on GPUs whose L1 caches global loads
by default (`data/timing.toml` [kerncast.l1_cache], compute capability 7.0 on), that load waits the L1 hit
latency for ``1 - step / sector`` of its iterations and the L2 or DRAM latency for the rest. The reuse distance
is one iteration of one warp, a few sectors per lane, which no L1 of these GPUs evicts in between; the
assumption is stated with every prediction it changes.

The module answers per access (`l1_reuse`): the share of its executions that hit in L1. The time model turns
it into the load's latency (`load_latency`); the DRAM footprint is unaffected (the distinct bytes are moved
once either way).

The L2 is judged by reuse distance, the method of CGPredict's temporal-conflict sets and of the trace-based
model's LRU analysis, made symbolic: a sector that is used again hits when few enough distinct lines came in
between (`hit_share`, smooth in the distance against the capacity). The distances come from the launch's
structure, not a trace (`wave_rereads`): a re-read that a loop carries (the loop's index is not in the address,
so each of its iterations reads the same sectors) is as far as the bytes the resident blocks touch in one
iteration of that loop; a re-read by the other threads and blocks of the same wave at the same point of their
loops (a matrix row that every block of a tile row reads, a vector every thread reads) is as far as what the
wave touches in one iteration of its innermost loops, for the blocks of a wave start together and run the same
code; a re-read by a later wave is one wave's working set away; the next launch's re-read (the warm cache) is
the whole footprint away. Each is O(instructions x loops), whatever the grid and the trip counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kerncast.analysis.timing.constants import timing_constants
from kerncast.analysis.timing.footprint import Footprint, access_bytes, affine_extents, footprint, wave_extent


@dataclass(frozen=True, slots=True)
class L1Reuse:
    """One global load's L1 hits: `share` of its executions, from its `step` in bytes per loop iteration."""

    index: int
    step: int
    share: float


def l1_hit_latency(profile: Any) -> float | None:
    """The L1 hit latency (cycles) of a GPU whose L1 caches global loads by default, else None."""
    row = timing_constants()["kerncast"].get("l1_cache", {}).get("hit_latency", {}).get(profile.arch)
    return float(row) if isinstance(row, int | float) else None


def _innermost_loop(cfg: Any, loops: Any) -> dict[int, int]:
    """Instruction index -> the header of the innermost loop that holds it."""
    depth: dict[int, tuple[int, int]] = {}
    for lp in loops.loops:
        for b in lp.blocks:
            if b not in depth or depth[b][0] < lp.depth:
                depth[b] = (lp.depth, lp.header)
    out: dict[int, int] = {}
    for b, (_, header) in depth.items():
        block = cfg.blocks[b]
        for i in range(block.start, block.end):
            out[i] = header
    return out


def _step(poly: Any, atom: int) -> int | None:
    """Bytes the address moves per iteration of the loop whose iteration atom is `atom`: its coefficient when
    the atom appears alone (linearly), None when it multiplies anything else."""
    step = 0
    for mono, coef in poly:
        if atom in mono:
            if len(mono) != 1 or int(coef) != coef:
                return None
            step += int(coef)
    return step


def l1_reuse(memory: Any, cfg: Any, loops: Any, sector: int) -> list[L1Reuse]:
    """The global loads that find part of their sectors in L1 from their own previous iteration."""
    if memory is None or getattr(memory, "atoms", None) is None:
        return []
    inner = _innermost_loop(cfg, loops)
    out: list[L1Reuse] = []
    for a in memory.accesses:
        if a.space != "global" or a.kind != "load" or a.index not in inner:
            continue
        poly = memory.addresses.get(a.index)
        atom = memory.iteration_atoms.get(inner[a.index])
        if poly is None or atom is None:
            continue
        step = _step(poly, atom)
        if step is not None and 0 < abs(step) < sector:
            out.append(L1Reuse(a.index, abs(step), 1.0 - abs(step) / sector))
    return out


def load_latency(reuse: list[L1Reuse], l1: float, other: float) -> dict[int, float]:
    """Instruction index -> the mean latency of a load that hits in L1 for its `share` and waits `other` (the
    L2 or DRAM latency) for the rest."""
    return {r.index: r.share * l1 + (1.0 - r.share) * other for r in reuse}


def reuse_note(reuse: list[L1Reuse], l1: float, other: float, profile: Any) -> str:
    """The assumption a prediction that used L1 reuse states."""
    steps = sorted({r.step for r in reuse})
    return (f"L1 reuse: {len(reuse)} global load(s) advance {', '.join(map(str, steps))} bytes per iteration of "
            f"their loop, so {', '.join(f'{r.share:.0%}' for r in reuse[:4])} of their executions find the sector "
            f"their previous iteration brought into L1 ({profile.arch} L1 caches global loads, {l1:g}-cycle hit, "
            f"data/timing.toml [kerncast.l1_cache]); the rest wait {other:g} cycles")



# ---------------------------------------------------------------------------------------------------- the L2


def l2_ways() -> int:
    """Lines per set of the L2's reuse curve (`data/timing.toml` [kerncast.l2_reuse])."""
    return int(timing_constants()["kerncast"].get("l2_reuse", {}).get("ways", 16))


def hit_share(distance: float, capacity: float, ways: int | None = None) -> float:
    """The share of re-uses at reuse distance `distance` (distinct bytes in between) that a set-associative LRU
    cache of `capacity` bytes still holds: fewer than `ways` lines of the reused line's set came in between, the
    lines spread evenly over the sets, so their count is Poisson with mean ``ways * distance / capacity``.
    Smooth: 1 for short distances, about 1/2 at the capacity, small beyond 1.5 times it."""
    if distance <= 0.0:
        return 1.0
    if capacity <= 0.0:
        return 0.0
    k = ways or l2_ways()
    lam = k * distance / capacity
    term = math.exp(-lam)
    total = term
    for i in range(1, k):
        term *= lam / i
        total += term
    return min(1.0, total)


def l2_partitions(profile: Any) -> tuple[int, float | None]:
    """(L2 partitions, far-partition hit latency in cycles) of the GPU: (1, None) for a unified L2."""
    table = timing_constants()["kerncast"].get("l2_partitions", {})
    count = table.get("count", {}).get(profile.cc)
    far = table.get("far_latency", {}).get(profile.cc)
    if not isinstance(count, int) or count < 2:
        return 1, None
    return count, float(far) if isinstance(far, int | float) else None


def l2_capacity(profile: Any) -> float:
    """The L2 bytes that hold data the whole launch reads: all of it, or on a partitioned L2, whose halves each
    cache what their own SMs use, one partition's share (data every SM reads is held twice)."""
    count, _ = l2_partitions(profile)
    return float(profile.l2_bytes) / count


def l2_hit_cycles(profile: Any) -> float | None:
    """The mean load-to-use latency (cycles) of an L2 hit: the architecture's pointer-chase figure
    (`data/timing.toml` [kerncast.l2_hit_latency]), on a partitioned L2 averaged with the far partition's, where
    a line is as often as in the near one; None where the data lists no figure."""
    row = timing_constants()["kerncast"].get("l2_hit_latency", {}).get(profile.arch)
    if not isinstance(row, int | float):
        return None
    _, far = l2_partitions(profile)
    return float(row) if far is None else (float(row) + far) / 2.0


@dataclass(frozen=True, slots=True)
class Reread:
    """Bytes one wave's requests of a global access move beyond the distinct bytes it touches (`bytes`), and the
    distinct bytes the wave touches between two uses of them (`distance`). `index` is the instruction (-1 for
    the sectors that neighbouring accesses of one array share)."""

    index: int
    bytes: float
    distance: float


def _carrying_loops(memory: Any, loops: Any, block_id: int, poly: Any, extents: list[tuple[int, int]],
                    width: int, sector: int, ctx: tuple[Any, ...]) -> frozenset[int] | None:
    """The headers of the innermost enclosing loop whose index leaves the access's sectors unchanged (each of its
    iterations reads them again) and of the loops around it; None when every enclosing loop moves the access."""
    atoms, block, wave_grid, grid, loop_trips = ctx
    enclosing = loops.enclosing(block_id)
    base = access_bytes(extents, width, sector)
    for i, lp in enumerate(enclosing):
        atom = memory.iteration_atoms.get(lp.header)
        if atom is None or loop_trips.get(atom, 1.0) <= 1.0:
            continue
        one = {**loop_trips, atom: 1.0}
        cut = affine_extents(atoms, poly, block, wave_grid, one, grid)
        if cut is not None and access_bytes(cut, width, sector) == base:
            return frozenset(x.header for x in enclosing[i:])
    return None


def wave_rereads(memory: Any, cfg: Any, loops: Any, block: tuple[int, int, int], grid: tuple[int, int, int],
                 wave_blocks: int, trips: Mapping[int, float], requested: Mapping[int, float], working_set: float,
                 sector: int) -> list[Reread]:
    """Each global access's re-reads within one wave and their reuse distances (see the module docstring).

    `requested` maps the instruction index of an access with a footprint to the bytes one wave's requests of it
    move with no reuse; `working_set` is the wave's distinct bytes (`Footprint.per_wave`). The distance of a
    loop-carried re-read is the wave's footprint with that loop and the loops around it cut to one iteration;
    of a re-read by the rest of the wave, the footprint with every loop cut to one iteration."""
    if memory is None or memory.atoms is None or not requested:
        return []
    loop_trips = {atom: float(trips.get(h, 1.0)) for h, atom in memory.iteration_atoms.items()}
    wave_grid = wave_extent(grid, wave_blocks)
    ctx = (memory.atoms, block, wave_grid, grid, loop_trips)
    every_loop = frozenset(lp.header for lp in loops.loops)
    seen: dict[frozenset[int], float] = {}

    def wave_bytes(cut: frozenset[int]) -> float:
        if cut not in seen:
            one = {h: (1.0 if h in cut else float(t)) for h, t in trips.items()}
            seen[cut] = footprint(memory, block, grid, wave_blocks, one, sector).per_wave
        return seen[cut]

    out: list[Reread] = []
    apart = 0.0
    for a in memory.accesses:
        if a.space != "global" or a.index not in requested:
            continue
        poly = memory.addresses.get(a.index)
        ext = affine_extents(memory.atoms, poly, block, wave_grid, loop_trips, grid) if poly is not None else None
        if ext is None:
            continue
        own = access_bytes(ext, a.width_bytes, sector)
        apart += own
        extra = requested[a.index] - own
        if extra <= 0.0:
            continue
        carrier = _carrying_loops(memory, loops, cfg.block_of[a.index], poly, ext, a.width_bytes, sector, ctx)
        out.append(Reread(a.index, extra, wave_bytes(carrier if carrier is not None else every_loop)))
    if apart > working_set > 0.0:
        out.append(Reread(-1, apart - working_set, wave_bytes(every_loop)))
    return out


@dataclass(slots=True)
class DramTraffic:
    """What the caches leave to DRAM: bytes with the cache state the prediction assumes (`warm`) and from a cold
    cache (`cold`), the share of the launch's requested read bytes the caches serve (`served`), and notes."""

    warm: float
    cold: float
    served: float
    notes: list[str]


def dram_traffic(profile: Any, fp: Footprint | None, requested: tuple[float, float] | None, blocks: int,
                 resident: int) -> DramTraffic:
    """DRAM bytes of a launch from its footprint, its re-reads and their reuse distances, and the requested bytes.

    Cold: every distinct byte once, plus the re-reads of one wave the L2 no longer holds (`wave_rereads`), plus
    the bytes a later wave touches again at one wave's working set of distance; never more than every request
    from DRAM. Warm (the data file's cache state): the launch's inputs were used just before it, at a reuse
    distance of the bytes it reads, so that share of its first reads hits (the assumption of the data file:
    the lines a launch reads are judged against what it reads); the L2 is write-back, so a written line reaches
    DRAM only when evicted, at the distance of everything the launch touches.
    """
    if fp is None or requested is None:
        return DramTraffic(0.0, 0.0, 0.0, ["no memory analysis: no DRAM floor"])
    covered, uncovered = requested
    waves = max(1, math.ceil(blocks / max(1, resident * profile.sm_count)))
    capacity = l2_capacity(profile)
    ways = l2_ways()
    ws = max(fp.per_wave, 1.0)
    in_wave = sum(r.bytes * (1.0 - hit_share(r.distance, capacity, ways)) for r in fp.rereads)
    launched = blocks / max(1, resident * profile.sm_count)  # waves, the last one partial
    across = max(0.0, ws * launched - fp.distinct) * (1.0 - hit_share(ws, capacity, ways))
    cold = min(covered, fp.total + across + in_wave * waves) + uncovered
    reads = fp.total - fp.written + uncovered
    touched = fp.distinct + uncovered
    kept = hit_share(reads, capacity, ways)  # the inputs, re-read at the distance of what the launch reads
    evicted = 1.0 - hit_share(touched, capacity, ways)  # written lines, against everything it touches
    warm_l2 = bool(timing_constants()["kerncast"].get("warm_l2", False))
    repeated = across + in_wave * waves
    warm = min(cold, reads * (1.0 - kept) + fp.written * evicted + repeated) if warm_l2 else cold
    total = covered + uncovered
    dram_reads = reads * (1.0 - kept) + repeated if warm_l2 else cold - fp.written
    asked = total - fp.written  # the requests that read (a store's requests move about what it writes)
    served = 1.0 - min(1.0, max(0.0, dram_reads) / asked) if asked > 0 else 0.0
    split = ("" if capacity >= float(profile.l2_bytes) else
             f", one of the {l2_partitions(profile)[0]} partitions of a {float(profile.l2_bytes) / 1e6:.3g} MB L2, "
             "each of which holds what its own SMs read (data/timing.toml [kerncast.l2_partitions])")
    notes = [f"distinct global bytes {fp.distinct / 1e6:.3g} MB, {fp.total / 1e6:.3g} MB of DRAM traffic with no "
             f"reuse beyond them; requested with no reuse {total / 1e6:.3g} MB; L2 by reuse distance against "
             f"{capacity / 1e6:.3g} MB{split} (data/timing.toml [kerncast.l2_reuse]): a wave's working set "
             f"{ws / 1e6:.3g} MB, its re-reads {sum(r.bytes for r in fp.rereads) / 1e6:.3g} MB of which "
             f"{in_wave / 1e6:.3g} MB miss, {across / 1e6:.3g} MB re-read by later waves miss; the caches serve "
             f"{served:.0%} of the requested bytes"]
    if warm_l2:
        notes.append(f"cache state: warm (the launch's inputs were written or read just before it, as when a "
                     f"kernel is timed over repeated launches): {kept:.0%} of its {reads / 1e6:.3g} MB of inputs "
                     "are found in the L2 (an LRU cache keeps little of a cyclic sweep larger than itself), and "
                     f"the L2 being write-back, {evicted:.0%} of its {fp.written / 1e6:.3g} MB of written lines are "
                     f"evicted to DRAM by the {touched / 1e6:.3g} MB it touches; the cold-cache time, every "
                     "distinct byte from DRAM, is the top of the range")
    else:
        notes.append("cache state: cold (nothing of the launch's data in the L2 when it starts)")
    if uncovered:
        notes.append("some global addresses are not affine (or are tensor-core tiles): their requests count as "
                     "DRAM traffic in full")
    return DramTraffic(warm, cold, max(0.0, served), notes)


def l2_load_latency(profile: Any, traffic: DramTraffic, dram_latency: float) -> float | None:
    """The mean latency (cycles) of a global load when the caches serve `traffic.served` of the requested bytes
    at the L2 hit latency and DRAM the rest; None where the GPU has no L2 hit latency or nothing is served."""
    hit = l2_hit_cycles(profile)
    if hit is None or traffic.served <= 0.0:
        return None
    return traffic.served * hit + (1.0 - traffic.served) * dram_latency
