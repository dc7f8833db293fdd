"""Global atomics that many threads aim at few addresses: the time their serialisation takes.

The kerncast model charges an atomic like a store (issue, traffic); the memory system does not run them so.
Three limits, each physical and each with its rates in `data/atomics.toml` (a profile's `[atomics]` section,
measured by `kerncast calibrate`, takes their place):

* One address: updates to one address are performed one after another by the L2's atomic unit, at
  `updates_per_clock`. The busiest address's updates over the launch bound the time: one lane's update per warp
  instruction where ptxas combines the warp's lanes into one atomic (warp aggregation: an integer add, min,
  max, and, or or xor whose address the compiler sees is the same in every lane: no threadIdx, no loaded data),
  every same-address lane otherwise; times the warps that share the address (every warp of the grid when the
  address holds no blockIdx, every warp of a block when it holds no threadIdx); times the executions that hit
  the same address (an address that moves with a loop's iteration spreads them).
* Same-address lanes of one warp instruction that ptxas did not combine are replayed one by one, each after the
  previous update is performed: a warp waits one L2 round trip per further lane. Warps wait side by side, but
  an SM runs at most its resident blocks at once, so the launch takes whole waves of those waits.
* Distinct addresses: each atomic sector is a read and a write of an L2 slice's data (and a return where the
  old value comes back), at the L2's measured bandwidth.

The limit is a floor under the kerncast model's kernel time (`with_contention`): when the atomics bind, the
rest of the kernel's work hides behind them. Shared-memory atomics are left to the shared-memory model (the SM
combines same-address lanes of an increment itself: `ATOMS.POPC.INC`).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from kerncast.analysis.memory.analysis import AccessInfo, MemoryAnalysis
from kerncast.analysis.timing.constants import capability
from kerncast.analysis.timing.launch_cost import launch_cost
from kerncast.analysis.timing.pipelined import PipelinedResult, l2_hit_cycles, l2_partitions

_ATOMIC_OPCODES = frozenset({"atom", "red"})


@cache
def atomic_rates() -> dict[str, Any]:
    """The parsed `data/atomics.toml`."""
    text = resources.files("kerncast.analysis").joinpath("data/atomics.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@dataclass(frozen=True, slots=True)
class Rates:
    """One GPU's atomic rates: same-address updates per core clock (point, low, high), the cycles one further
    same-address lane of a warp instruction holds the warp (point, low), the L2's atomic bandwidth in GB/s (None
    where unknown), and whether each came from a measurement of this GPU."""

    per_clock: float
    per_clock_low: float
    per_clock_high: float
    lane_cycles: float | None
    lane_cycles_low: float
    l2_gbs: float | None
    measured: tuple[str, ...] = ()


def gpu_rates(profile: Any) -> Rates:
    """The rates for `profile`: its own `[atomics]` section where `kerncast calibrate` measured one, else the
    data file's figures (the L2 round trip from the profile's architecture)."""
    data = atomic_rates()
    same, lanes, l2 = data["same_address"], data["warp_lanes"], data["l2_throughput"]
    own = getattr(profile, "atomics", None) or {}
    measured: list[str] = []
    per_clock, low, high = (float(same["updates_per_clock"]), float(same["low"]), float(same["high"]))
    if isinstance(own.get("same_address_per_clock"), int | float) and own["same_address_per_clock"] > 0:
        per_clock = low = high = float(own["same_address_per_clock"])
        measured.append("same-address rate")
    trip = l2_hit_cycles(profile)  # SM to the address's L2 slice and back
    lane = trip * float(lanes["round_trips_per_lane"]) if trip is not None else None
    lane_low = float(lanes["low_cycles_per_lane"])
    if isinstance(own.get("lane_replay_cycles"), int | float) and own["lane_replay_cycles"] > 0:
        lane = lane_low = float(own["lane_replay_cycles"])
        measured.append("same-address lane replay")
    gbs = l2.get("gbs", {}).get(profile.id)
    return Rates(per_clock, min(low, per_clock), max(high, per_clock), lane, min(lane_low, lane or lane_low),
                 float(gbs) if isinstance(gbs, int | float) else None, tuple(measured))


@dataclass(frozen=True, slots=True)
class AtomicSite:
    """One global atomic instruction as the contention model counts it (per warp instruction unless named)."""

    index: int
    line: int | None
    aggregated: bool  # ptxas combines the warp's lanes into one update
    lanes_on_address: float  # same-address lanes of one warp instruction that the L2 performs one by one
    warps_on_address: float  # warps of the launch whose updates land on the busiest address
    executions_on_address: float  # executions of one thread that hit one address
    executions: float
    l2_sectors: float  # sectors the L2 updates per warp instruction
    returning: bool
    warp_share: float = 1.0  # share of the launch's warps that run it (one of a block's for a leader's atomic)
    warps_on_address_high: float = 0.0  # the most warps on that address the sample allows (the range's top)
    upper_bound: bool = False  # its lanes pass a test on data first: at most `lanes_on_address` share an address


@dataclass(slots=True)
class Contention:
    """The atomics' floor under the kernel time (microseconds, point and range) and what set it."""

    us: float
    low_us: float
    high_us: float
    limit: str
    sites: list[AtomicSite]
    notes: list[str] = dataclasses.field(default_factory=list)


def aggregated_by_compiler(ins: Any, address_varies_by_lane: bool, cc: tuple[int, int]) -> bool:
    """Whether ptxas turns this atomic into one update per warp (`data/atomics.toml` [aggregation]): an integer
    operation it can reduce, on an address the same in every lane as the compiler sees it."""
    rule = atomic_rates()["aggregation"]
    if address_varies_by_lane or cc < capability(float(rule["from_cc"])):
        return False
    mods = set(ins.modifiers)
    return bool(mods & set(rule["operations"])) and bool(mods & set(rule["integer_types"]))


def atomic_sites(memory: MemoryAnalysis, cfg: Any, profile: Any, *, blocks: int, threads_per_block: int,
                 trips: Mapping[int, float]) -> list[AtomicSite]:
    """The launch's global atomics (`atom`/`red` in global memory) with their address sharing."""
    atoms = memory.atoms
    if atoms is None:
        return []
    body = cfg.function.body
    warps_per_block = max(1, math.ceil(threads_per_block / profile.warp_size))
    sites = []
    for a in memory.accesses:
        ins = body[a.index] if 0 <= a.index < len(body) else None
        if a.kind != "atomic" or a.space != "global" or ins is None or ins.opcode not in _ATOMIC_OPCODES:
            continue
        if a.executions <= 0.0:
            continue
        sites.append(_site(a, ins, memory, profile, blocks=blocks, warps_per_block=warps_per_block, trips=trips))
    return sites


def _site(a: AccessInfo, ins: Any, memory: MemoryAnalysis, profile: Any, *, blocks: int, warps_per_block: int,
          trips: Mapping[int, float]) -> AtomicSite:
    """One atomic's sharing: lanes, warps and executions on its busiest address (module docstring)."""
    atoms = memory.atoms
    addr = memory.addresses.get(a.index)
    known = addr is not None  # the address as a symbolic value (its lanes need not have been compared)
    by_lane = atoms.is_lane(addr) if known else True
    by_block = _holds_block_index(atoms, addr) if known else True
    aggregated = aggregated_by_compiler(ins, by_lane, tuple(profile.compute_capability))
    lanes = float(a.lanes_per_address) if a.lanes_per_address and a.known else 1.0
    on_address = 1.0 if aggregated else max(1.0, lanes)
    # the warps of a block that reach it: all of them, or, where only some of the sampled warps do (a
    # `threadIdx.x == 0` leader), the fewest the sample allows, one; the sampled share of them is the range's top
    share = a.warp_share if a.warp_share is not None else 1.0
    reaching, reaching_high = (float(warps_per_block),) * 2 if share >= 1.0 else \
        (1.0, max(1.0, share * warps_per_block))
    warps = warps_high = 1.0
    if known and not by_lane:
        warps, warps_high = reaching, reaching_high  # every warp of a block that reaches it shares the address
    if known and not by_block:
        warps, warps_high = warps * blocks, warps_high * blocks
    executions = a.executions
    if known:
        moving = [float(trips.get(h, 1.0)) for h, atom in memory.iteration_atoms.items()
                  if atom in atoms.deep_atoms_of(addr)]
        executions = a.executions / max(1.0, math.prod(moving)) if moving else a.executions
    one_lane = a.lanes_per_address is None and a.active_lanes is None  # no sampled warp had two lanes there
    sectors = a.sectors_per_request if a.known and a.sectors_per_request else \
        (a.active_lanes or profile.warp_size) * a.width_bytes / float(profile.sector_bytes or 32)
    sectors = 1.0 if aggregated or one_lane else max(float(sectors), on_address)
    return AtomicSite(a.index, a.line, aggregated, on_address, warps, executions, a.executions, sectors,
                      ins.opcode == "atom", reaching / warps_per_block, warps_high,
                      a.lanes_upper_bound and on_address > 1.0)


def busiest_address(sites: list[AtomicSite], memory: MemoryAnalysis) -> tuple[AtomicSite, float, float, float]:
    """The site whose address takes the most updates over the launch, those updates, the fewest (one lane per
    warp where a test on data decides which lanes make it) and the most the sample allows: the sites of one
    address (an unrolled loop's copies of one atomic) add up."""
    per_address: dict[Any, list[float]] = {}
    first: dict[Any, AtomicSite] = {}
    for s in sites:
        addr = memory.addresses.get(s.index)
        key = addr if addr is not None else ("instruction", s.index)
        got = per_address.setdefault(key, [0.0, 0.0, 0.0])
        got[0] += s.lanes_on_address * s.warps_on_address * s.executions_on_address
        got[1] += (1.0 if s.upper_bound else s.lanes_on_address) * s.warps_on_address * s.executions_on_address
        got[2] += s.lanes_on_address * max(s.warps_on_address, s.warps_on_address_high) * s.executions_on_address
        first.setdefault(key, s)
    key = max(per_address, key=lambda k: per_address[k][0])
    return first[key], *per_address[key]  # type: ignore[return-value]


def _holds_block_index(atoms: Any, addr: Any) -> bool:
    """Whether an address depends on blockIdx (through operation arguments too)."""
    return any(key[0] == "sym" and str(key[1]).startswith("ctaid.")
               for key in map(atoms.keys.__getitem__, atoms.deep_atoms_of(addr)))


def contention(memory: Any, cfg: Any, profile: Any, *, blocks: int, threads_per_block: int, resident: int,
               trips: Mapping[int, float]) -> Contention | None:
    """The atomics' floor for one launch (module docstring), None where the launch has no global atomic that
    costs anything beyond its issue or the memory analysis is missing."""
    if not isinstance(memory, MemoryAnalysis):
        return None
    sites = atomic_sites(memory, cfg, profile, blocks=blocks, threads_per_block=threads_per_block, trips=trips)
    if not sites:
        return None
    rates = gpu_rates(profile)
    clock = profile.core_clock_mhz  # cycles per microsecond
    warps = blocks * max(1, math.ceil(threads_per_block / profile.warp_size))
    busiest, updates, fewest, most = busiest_address(sites, memory)
    address = (updates / rates.per_clock / clock, fewest / rates.per_clock_high / clock,
               most / rates.per_clock_low / clock)
    waves = math.ceil(math.ceil(blocks / profile.sm_count) / max(1, resident))
    replays = sum((s.lanes_on_address - 1.0) * s.executions for s in sites if not s.aggregated)
    lane = rates.lane_cycles
    # lanes behind a test on data may not all make the atomic: none may be replayed
    sure = sum((s.lanes_on_address - 1.0) * s.executions for s in sites if not s.aggregated and not s.upper_bound)
    warp_wait = (waves * replays * lane / clock, waves * sure * rates.lane_cycles_low / clock,
                 waves * replays * lane / clock) if lane is not None else (0.0, 0.0, 0.0)
    const = atomic_rates()["l2_throughput"]
    sector = float(profile.sector_bytes or 32)
    l2_bytes = sum(warps * s.warp_share * s.executions * s.l2_sectors * sector
                   * float(const["returning_passes"] if s.returning else const["passes"]) for s in sites)
    l2 = l2_bytes / (rates.l2_gbs * 1e3) if rates.l2_gbs else 0.0
    parts = {"one address": address, "same-address lanes of a warp": warp_wait, "L2 atomic throughput": (l2,) * 3}
    limit = max(parts, key=lambda k: parts[k][0])
    us, low, high = parts[limit][0], max(p[1] for p in parts.values()), max(p[2] for p in parts.values())
    if us <= 0.0:
        return None
    notes = [_note(busiest, updates, rates, replays, waves, l2_bytes, profile, limit, us)]
    if most > updates:
        notes.append(f"atomics: only some of the sampled warps of a block reach the atomic of line {busiest.line} "
                     f"(a leader's), so one warp per block is counted; the sampled share of the block's warps "
                     f"({most:.4g} updates) is the range's top")
    if lane is None and replays:
        notes.append(f"{profile.arch}: no L2 round trip in data/timing.toml, so same-address lanes of a warp are "
                     "not charged")
    if rates.l2_gbs is None:
        notes.append(f"{profile.name}: no measured L2 bandwidth in data/atomics.toml, so the L2's throughput "
                     "for atomics is not charged")
    return Contention(us, min(low, us), max(high, us), limit, sites, notes)


def _note(busiest: AtomicSite, updates: float, rates: Rates, replays: float, waves: int, l2_bytes: float,
          profile: Any, limit: str, us: float) -> str:
    """What the atomics cost and from which rates."""
    where = f"line {busiest.line}" if busiest.line is not None else f"instruction {busiest.index}"
    upto = "up to " if busiest.upper_bound else ""
    how = "one update per warp (the compiler aggregates its lanes)" if busiest.aggregated else \
        f"{upto}{busiest.lanes_on_address:.0f} same-address lane(s) per warp instruction"
    measured = f"; measured on this GPU: {', '.join(rates.measured)}" if rates.measured else \
        " (estimates, data/atomics.toml: calibrated = false)"
    parts, far = l2_partitions(profile)
    trip = (f"{rates.lane_cycles:.0f} cycles per further lane (the L2 round trip"
            f"{', near and far partitions averaged' if parts > 1 and far is not None else ''})"
            if rates.lane_cycles is not None else "no round trip known")
    if busiest.upper_bound:
        how += " behind a test on data, so the range's bottom takes one"
    sharing = (f"{updates:.4g} updates ({how}, {busiest.warps_on_address:.4g} warps, "
               f"{busiest.executions_on_address:.4g} executions each)")
    return (f"atomics: a floor of {us:.3g} us under the kernel, set by {limit}. Busiest address ({where}): "
            f"{sharing} at {rates.per_clock:g} per clock; same-address lanes of a warp: {replays:.4g} replays per "
            f"warp at {trip}, {waves} wave(s) of resident blocks; L2: {l2_bytes / 1e6:.3g} MB of atomic sector "
            "traffic" + (f" at {rates.l2_gbs:g} GB/s" if rates.l2_gbs else "") + measured)


def with_contention(kc: PipelinedResult, c: Contention | None, profile: Any) -> PipelinedResult:
    """The kerncast model's result with the atomics' floor under its kernel time: the launch's fixed cost again
    for the longer kernel, the range's ends raised to the floor's, the bottleneck named when it binds."""
    if c is None:
        return kc
    kernel = kc.us - kc.launch_us
    binds = c.us > kernel
    said = c.notes[0] + (" The floor is above the kernel's other work: it sets the time." if binds else
                         f" The kernel's other work ({kernel:.3g} us) takes longer: the time is unchanged.")
    notes = kc.notes[:-1] + [said, *c.notes[1:]] + kc.notes[-1:]
    if not binds:
        high = max(kc.high_us, kc.launch_us + c.high_us)
        return dataclasses.replace(kc, high_us=high, notes=notes)
    cost = launch_cost(profile, c.us)
    notes = [cost.note if n.startswith("launch:") else n for n in notes]
    us = cost.fixed_us + c.us
    # the range keeps the width the model's error spread gave it around the new point
    low = min(max(kc.low_us, cost.fixed_us + c.low_us), us * kc.low_us / kc.us if kc.us > 0 else us)
    high = max(kc.high_us, cost.fixed_us + c.high_us, us * kc.high_us / kc.us if kc.us > 0 else us)
    return dataclasses.replace(kc, us=us, low_us=min(us, low), high_us=max(us, high), launch_us=cost.fixed_us,
                               host_us=cost.host_us, bottleneck=f"atomics ({c.limit})", notes=notes)
