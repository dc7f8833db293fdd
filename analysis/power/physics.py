"""The event power model: a kernel's average board power from the events it executes, without any fit.

    P = idle + static (per busy SM) + dynamic (event energy / predicted time), at most the TDP

* idle: the profile's board power at P0 with no kernel (fans, board, memory and the clocked but idle chip; what
  AccelWattch calls constant power).
* static: the lane-activation power of the SMs the kernel keeps busy, by the unit classes it uses (integer,
  FP32, FP64, SFU, tensor cores, or memory only), from AccelWattch's Volta figures scaled to the GPU's node
  (`data/energy.toml`, [static_power]). Only the SMs the grid keeps busy pay it, averaged over the waves,
  for the share of the predicted time that is not launch overhead, and for the share of the SM's warp
  schedulers (sub-partitions) its resident warps occupy. It does not scale with the core clock: static power
  is leakage and powered-but-idle logic, which AccelWattch scales with the supply voltage alone (its DVFS
  rule: static by V, dynamic by V squared), and no profile gives a voltage, so the reference's stands.
  The SMs the grid leaves without work draw AccelWattch's idle-SM power over the same share of the time.
* dynamic: the per-event energy of events.py (executed warp instructions by class, shared wavefronts, L1/L2/DRAM
  sectors) over the predicted time.
* power capping: a GPU's clock boosts while it is under its power limit; when the demand exceeds the TDP, the
  clock (and with it the work per second) drops until the board draws the TDP, so the power is the TDP and the
  time grows by the ratio of the demanded to the available power above idle (the energy of the work is taken
  as unchanged).

The interval spans the unknowns the model states, each over its own range from `data/energy.toml`
([uncertainty]), all at their low ends for the lower bound and at their high ends for the upper one:

* energy per event: uncalibrated, within a factor `uncalibrated_factor` of the table;
* static power: within `reference_static_factor` on the generation AccelWattch measured (only the voltage at
  the GPU's clock is unknown there) and within `uncalibrated_factor` on the others (scaled by an inferred node
  factor);
* time: the time model's range, its short end no shorter than the timing stage's DRAM bytes at the GPU's peak
  bandwidth (a kernel cannot move its DRAM traffic faster, so its dynamic power has that ceiling);
* idle power: up to `idle_spread` above the profile's (boards of one model differ by that much);
* how the launch is run: launched one at a time, each waited for, the GPU idles between launches for the
  host's launch call and its wait (`launch_gap_host_calls` x the host's launch time of data/timing.toml), so a
  board reading over many launches is the kernel's power diluted by t / (t + gap): what a measurement of a
  microsecond kernel shows is mostly that gap. The lower bound takes this dilution; the point does not (it is
  the power while the kernel runs).

Every bound stays inside [idle, TDP].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kerncast.analysis.power.events import SECTOR_BYTES, EventEnergy, energy_table
from kerncast.analysis.timing.constants import timing_constants

#: unit classes in order of precedence: a kernel that uses tensor cores is priced as the tensor class, etc.
_CLASSES = (("tensor-core MMA", "int_fp_tensor"), ("FP64 arithmetic", "int_fp_dp"),
            ("special functions (SFU)", "int_fp_sfu"), ("FP32 arithmetic", "int_fp"), ("integer arithmetic", "int"))
WARP = 32


@dataclass(frozen=True)
class StaticTable:
    """The reference GPU's lane-activation static power by unit class, and what scales it to another GPU."""

    watts_by_class: dict[str, float]  # whole reference SM array, all 32 lanes active
    idle_sm_w: float  # one reference SM left without work while a kernel runs
    sm_count: int
    node_scale: float
    generation: str  # the generation whose GPU AccelWattch measured
    source: str


@dataclass(frozen=True)
class Uncertainty:
    """How far each unknown of the event model may be off ([uncertainty] of data/energy.toml)."""

    energy_factor: float  # per-event energies, and static power away from the reference generation
    reference_static_factor: float  # static power on the generation AccelWattch measured
    idle_spread: float  # board-to-board idle power, above the profile's
    launch_gap_host_calls: float  # host launch times the GPU idles between two launches waited for one by one
    host_launch_us: float  # the host's time in one launch call (data/timing.toml)

    def static_factor(self, generation: str) -> float:
        return self.reference_static_factor if generation == static_table().generation else self.energy_factor

    @property
    def launch_gap_us(self) -> float:
        return self.launch_gap_host_calls * self.host_launch_us


@cache
def static_table() -> StaticTable:
    """[static_power] of data/energy.toml."""
    table = energy_table()
    st = table["static_power"]
    ref = table["generations"][st["reference_generation"]]
    watts = {k: float(v[0]) + (WARP - 1) * float(v[1]) for k, v in st.items()
             if isinstance(v, list) and len(v) == 2}
    return StaticTable(watts, float(st["idle_sm"]), int(st["reference_sm_count"]), float(ref["node_scale"]),
                       str(st["reference_generation"]), st["source"])


@cache
def uncertainty() -> Uncertainty:
    """[uncertainty] of data/energy.toml, with the host's launch time of data/timing.toml."""
    u = energy_table()["uncertainty"]
    host = float(timing_constants()["kerncast"]["launch"]["host_us"])
    return Uncertainty(float(u["uncalibrated_factor"]), float(u["reference_static_factor"]),
                       float(u["idle_spread"]), float(u["launch_gap_host_calls"]), host)


def unit_class(event: EventEnergy) -> str:
    """The static-power class of a kernel: the costliest unit class it executes (memory only when none)."""
    for category, name in _CLASSES:
        if event.by_event.get(category, 0.0) > 0.0:
            return name
    return "memory_only"


def static_per_sm_w(event: EventEnergy) -> float:
    """Lane-activation static power of one busy SM of the event table's generation, all lanes active: the
    reference figure per SM scaled by the node alone (static power follows the voltage, not the clock)."""
    t = static_table()
    return t.watts_by_class[unit_class(event)] / t.sm_count * event.constants.node_scale / t.node_scale


def idle_sm_w(event: EventEnergy) -> float:
    """Power of one SM of the event table's generation that has no work while a kernel runs, scaled from the
    reference as the lane-activation power is (by the node)."""
    t = static_table()
    return t.idle_sm_w * event.constants.node_scale / t.node_scale


def busy_sms(blocks: int, blocks_per_sm: int, sm_count: int) -> float:
    """SMs the grid keeps busy, averaged over its waves (a last partial wave fills fewer SMs)."""
    if blocks <= 0 or sm_count <= 0:
        return 0.0
    per_wave = max(1, blocks_per_sm) * sm_count
    waves = math.ceil(blocks / per_wave)
    last = blocks - (waves - 1) * per_wave
    return ((waves - 1) * sm_count + min(sm_count, last)) / waves


def busy_share(time: Any) -> float:
    """Share of the predicted time in which the SMs work: all of it but the launch's fixed overhead."""
    us = float(time.us)
    fixed = time.detail.get("kerncast_launch_us") if time.model == "kerncast" else None
    if fixed is None:
        fixed = time.breakdown.get("launch_overhead_us", 0.0)
    return min(1.0, max(0.0, (us - float(fixed)) / us)) if us > 0 else 0.0


@dataclass
class EventPower:
    """Average board power by the event model, its parts and its interval."""

    watts: float
    interval: tuple[float, float]
    idle_w: float
    static_w: float  # busy SMs' lane-activation power plus the idle SMs' power
    dynamic_w: float
    demand_w: float  # before power capping
    time_factor: float  # the time's growth under power capping (1: not capped)
    busy_sms: float
    unit_class: str
    idle_sms_w: float = 0.0  # the part of static_w drawn by the SMs the grid leaves idle
    drivers: list[tuple[str, float]] = field(default_factory=list)  # (driver, share of dynamic power)
    assumptions: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"watts": self.watts, "interval": list(self.interval), "model": "events",
                "idle_w": self.idle_w, "static_w": self.static_w, "dynamic_w": self.dynamic_w,
                "demand_w": self.demand_w, "time_factor": self.time_factor, "busy_sms": self.busy_sms,
                "unit_class": self.unit_class, "idle_sms_w": self.idle_sms_w,
                "drivers": [{"driver": d, "share": s} for d, s in self.drivers],
                "assumptions": list(self.assumptions)}


def _capped(idle: float, tdp: float, static: float, dynamic: float) -> tuple[float, float]:
    """(power, time factor) of a demand of idle + static + dynamic under the TDP."""
    demand = idle + static + dynamic
    if demand <= tdp:
        return demand, 1.0
    return tdp, (static + dynamic) / max(tdp - idle, 1e-9)


def drivers(by_driver: dict[str, float]) -> list[tuple[str, float]]:
    """Physical drivers of the dynamic power, largest first, with their shares."""
    total = sum(by_driver.values())
    if total <= 0:
        return []
    return sorted(((k, v / total) for k, v in by_driver.items() if v > 0), key=lambda kv: -kv[1])


def dram_adjusted(event: EventEnergy, dram_bytes: float | None) -> tuple[float, dict[str, float]]:
    """(dynamic µJ, µJ by driver) with the DRAM traffic the timing stage counts in place of the event count.

    The per-event split prices every loaded L2 sector as a DRAM sector too (it has no cache model); the timing
    stage's DRAM bytes take the reuse in the L2 into account (the distinct bytes, a working set against the L2
    size, the write-back of written lines), which is what the DRAM actually moves. None: no such count (no
    memory analysis), the event count stands."""
    by_driver = dict(event.by_driver)
    if dram_bytes is None:
        return event.dynamic_uj, by_driver
    counted = by_driver.get("DRAM traffic", 0.0)
    moved = dram_bytes / SECTOR_BYTES * event.constants.pj["dram_sector"] * 1e-6
    by_driver["DRAM traffic"] = moved
    return max(0.0, event.dynamic_uj - counted + moved), by_driver


def time_range(time: Any, dram_bytes: float | None, gpu: Any) -> tuple[float, float, float]:
    """(shortest, longest, DRAM floor) µs of the time, for the interval: the time model's range around its
    point, its short end no shorter than the DRAM bytes at the GPU's peak bandwidth (the floor, 0 when the
    traffic or the bandwidth is unknown)."""
    us = float(time.us)
    t_lo, t_hi = (float(time.range_us[0]), float(time.range_us[1])) if time.range_us else (us, us)
    t_lo, t_hi = min(t_lo, us), max(t_hi, us)
    bandwidth = float(getattr(gpu, "mem_bandwidth_gbs", 0.0) or 0.0)
    floor_us = dram_bytes / (bandwidth * 1e3) if dram_bytes and bandwidth > 0 else 0.0
    return max(t_lo, min(floor_us, us)), t_hi, floor_us


def _diluted_low(static_w: float, dynamic_uj: float, t_lo: float, t_hi: float, gap_us: float) -> tuple[float, float]:
    """(W above idle, share of the time busy) of a launch waited for on its own, at whichever end of the time
    range gives the least: over one launch and the gap after it, (static x t + dynamic energy) / (t + gap),
    which is monotonic in t, so one of the two ends is the lowest."""
    ends = [((static_w * t + dynamic_uj) / (t + gap_us), t / (t + gap_us)) for t in (t_lo, t_hi) if t > 0]
    return min(ends) if ends else (0.0, 0.0)


def event_power(event: EventEnergy, gpu: Any, time: Any, blocks: int, blocks_per_sm: int,
                warps_per_block: int, dram_bytes: float | None = None) -> EventPower:
    """The event model's power for one launch (`time`: the timing stage's estimate, its range and breakdown;
    `dram_bytes`: the timing stage's DRAM traffic, None when there is no memory analysis)."""
    idle, tdp = float(gpu.idle_w), float(gpu.tdp_w)
    dynamic_uj, by_driver = dram_adjusted(event, dram_bytes)
    us = float(time.us)
    sms = busy_sms(blocks, blocks_per_sm, gpu.sm_count)
    resident_warps = min(max(1, blocks_per_sm), math.ceil(blocks / max(sms, 1e-9))) * warps_per_block
    schedulers = max(1, int(getattr(gpu.units, "warp_schedulers", 4) or 4))
    partitions = min(1.0, resident_warps / schedulers)
    share = busy_share(time)
    per_sm = static_per_sm_w(event)
    idle_sms = idle_sm_w(event) * max(0.0, gpu.sm_count - sms) * share
    static = per_sm * sms * partitions * share + idle_sms
    dynamic = dynamic_uj / us if us > 0 else 0.0
    watts, factor = _capped(idle, tdp, static, dynamic)
    u = uncertainty()
    k, k_static = u.energy_factor, u.static_factor(event.constants.generation)
    t_lo, t_hi, floor_us = time_range(time, dram_bytes, gpu)
    lo_above, duty = _diluted_low(static / k_static, dynamic_uj / k, t_lo, t_hi, u.launch_gap_us)
    lo, _ = _capped(idle, tdp, lo_above, 0.0)
    hi, _ = _capped(idle * (1 + u.idle_spread), tdp, static * k_static, dynamic_uj * k / t_lo)
    result = EventPower(watts, (max(idle, min(lo, watts)), min(tdp, max(hi, watts))), idle, static, dynamic,
                        idle + static + dynamic, factor, sms, unit_class(event), idle_sms, drivers(by_driver))
    result.assumptions += [
        f"idle {idle:g} W and TDP {tdp:g} W from the GPU profile; the clock at its boost value unless capped",
        f"static {per_sm:.2f} W per busy SM ({result.unit_class.replace('_', '+')} units; AccelWattch's Volta "
        f"figure scaled to this node, not to the clock) x {sms:.0f} busy SMs x {partitions:.0%} of their schedulers x "
        f"{share:.0%} of the time outside the launch overhead, and {idle_sms:.1f} W for the "
        f"{max(0.0, gpu.sm_count - sms):.0f} SMs the grid leaves idle (AccelWattch's idle-SM power)",
        f"dynamic: {dynamic_uj:.3g} µJ of events (executed with the loop trip counts of the time prediction) over "
        f"the predicted {us:.3g} µs"
        + (f" (DRAM: the timing stage's {dram_bytes / 1e6:.3g} MB, with L2 reuse)" if dram_bytes is not None else
           " (DRAM: every loaded sector, no memory analysis)"),
        f"interval: energies per event within a factor {k:g} (uncalibrated), static power within {k_static:g}, "
        f"the time over {t_lo:.3g}-{t_hi:.3g} µs"
        + (f" (no shorter than the DRAM traffic at peak bandwidth, {floor_us:.3g} µs)" if floor_us > 0 else "")
        + f", the idle power up to {u.idle_spread:.0%} above the profile's (boards differ), and at its low end "
        f"the launch waited for on its own: the GPU idles {u.launch_gap_us:.3g} µs between launches, so a "
        f"reading over many launches shows {duty:.0%} of the power above idle",
    ]
    if factor > 1.0:
        result.assumptions.append(f"the demand of {result.demand_w:.0f} W exceeds the {tdp:g} W TDP: the clock "
                                  f"drops and the kernel takes about {factor:.2f}x the predicted time")
    return result

