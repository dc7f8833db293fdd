"""One kernel's predicted time: the thesis scheduler (Eq. 4.8-4.9), with MWP-CWP and the roofline range beside it.

`predict_time` takes plain inputs (CFG, loops, profile, launch sizes, trip counts, occupancy, and the memory
analysis when there is one) so that it can be called without the pipeline; `time_stage` in
`kerncast.analysis.stages.time` feeds it from a `KernelContext`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from kerncast.analysis.cfg import TRIG_REDUCTION_BOUND, Cfg
from kerncast.analysis.deps import DepGraph, block_dependences
from kerncast.analysis.isa import InstrClass, classify
from kerncast.analysis.memory.analysis import VECTOR_BYTES, MemoryAnalysis
from kerncast.analysis.ptx.model import Addr, Reg
from kerncast.analysis.timing.atomics import contention, with_contention
from kerncast.analysis.timing.cache_model import L1Reuse, block_reuse, l1_hit_latency, l1_per_block
from kerncast.analysis.timing.constants import capability, timing_constants
from kerncast.analysis.timing.counts import dynamic_counts
from kerncast.analysis.timing.datapaths import folded_instructions, has_datapaths
from kerncast.analysis.timing.footprint import (
    Footprint,
    data_path_passes,
    footprint,
    footprint_key,
    memoised,
    requested_bytes,
    sector_passes,
    wave_extent,
)
from kerncast.analysis.timing.local_memory import local_traffic
from kerncast.analysis.timing.mwp_cwp import departure_scale, mwp_cwp, mwp_cwp_params
from kerncast.analysis.timing.partitions import camping_factor, dram_partitions
from kerncast.analysis.timing.penalties import thesis_penalties
from kerncast.analysis.timing.pipelined import PipelinedResult, predict_pipelined
from kerncast.analysis.timing.roofline import roofline_inputs, roofline_range, tensor_notes
from kerncast.analysis.timing.scheduler import (
    CfgSchedule,
    PlannedNode,
    plan_waves,
    profile_latency,
    schedule_cfg,
    thesis_blocks_per_sm,
)

MODEL = "thesis-scheduler"
#: the models a user can choose (`--time-model`, setting `kerncast.timeModel`) -> the name a report shows
TIME_MODELS = {"kerncast": "kerncast", "thesis": MODEL, "mwp-cwp": "mwp-cwp", "trace": "trace"}
DEFAULT_TIME_MODEL = "kerncast"
BREAKDOWN_KEYS = ("schedule_us", "launch_overhead_us", "global_penalty_us", "shared_penalty_us",
                  "cache_penalty_us")
_BOTTLENECK_NAMES = {
    "schedule_us": "instruction schedule",
    "launch_overhead_us": "launch overhead",
    "global_penalty_us": "global memory",
    "shared_penalty_us": "shared memory",
    "cache_penalty_us": "L2 cache misses",
}


@dataclass(slots=True)
class TimeEstimate:
    """A kernel's predicted time. `us`/`cycles` are the chosen model's (core-clock cycles) and `range_us` its
    (low, high) range; `models` every model's point for the same launch; `breakdown` the thesis's Eq. 4.8
    terms in microseconds (keys end in `_us`); `mwp_cwp_us` and `roofline_us` the two other models' answers;
    `assumptions` says everything that was assumed to get here."""

    us: float
    cycles: float
    model: str
    breakdown: dict[str, float]
    waves: int
    occupancy: float | None
    bottleneck: str
    mwp_cwp_us: float | None = None
    mwp_cwp_class: str | None = None
    roofline_us: tuple[float, float] | None = None
    assumptions: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    range_us: tuple[float, float] | None = None
    range_basis: str = ""
    models: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "us": self.us, "cycles": self.cycles, "model": self.model, "breakdown": dict(self.breakdown),
            "waves": self.waves, "occupancy": self.occupancy, "bottleneck": self.bottleneck,
            "mwp_cwp_us": self.mwp_cwp_us, "mwp_cwp_class": self.mwp_cwp_class,
            "roofline_us": list(self.roofline_us) if self.roofline_us is not None else None,
            "range_us": list(self.range_us) if self.range_us is not None else None,
            "range_basis": self.range_basis, "models": dict(self.models),
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True, slots=True)
class KernelGraphs:
    """What every time prediction of one kernel reads and no launch, trip count or memory analysis changes: each
    reachable basic block's dependence DAG and each instruction's class. Built once per kernel so that its
    several predictions (the time stage's, the two bounds of assumed loop counts, each gain's re-prediction, the
    trace model) share them instead of rebuilding them each."""

    dags: dict[int, DepGraph]
    classes: dict[int, InstrClass]
    #: results of pure functions of the kernel's predictions, each under a key that holds all its inputs but the
    #: memory analysis's atom table, which the entry keeps and a hit must match by identity (`footprint.memoised`),
    #: or, for what depends on the kernel's code alone (`"folded"`), under its name; no entry depends on
    #: `classes`, so a gain's graphs with other classes share it. It lives as long as these graphs: one analysis.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


def kernel_graphs(cfg: Cfg) -> KernelGraphs:
    """The kernel's dependence DAGs and instruction classes (see `KernelGraphs`)."""
    return KernelGraphs({b.id: block_dependences(cfg, b.id) for b in cfg.blocks if not cfg.never_runs(b.id)},
                        {i: classify(ins) for i, ins in enumerate(cfg.function.body)})


def loop_trips(loops: Any, trips: Mapping[int, float] | None, notes: list[str]) -> dict[int, float]:
    """Loop header -> the trip count a prediction runs: the given one (never below 0), else the timing data's
    default, which is added to `notes`."""
    default = timing_constants()["thesis"]["default_trip_count"]
    trip_map: dict[int, float] = {}
    for lp in loops.loops:
        if trips is not None and lp.header in trips:
            trip_map[lp.header] = max(0.0, float(trips[lp.header]))
        else:
            trip_map[lp.header] = float(default)
            notes.append(f"loop with header block {lp.header}: trip count unknown, {default} assumed")
    return trip_map


@dataclass(slots=True)
class MemoryFacts:
    """What the time models take from the memory analysis; `known` is False when there was none."""

    known: bool = False
    all_addresses_known: bool = False  # no global request of unknown pattern (a gather may be scattered)
    uncoalesced_fraction: float = 0.0
    sectors_per_request: float | None = None  # of the uncoalesced requests (Hong & Kim's #Uncoal_per_mw)
    sector_factor: float = 1.0  # sectors moved per sector needed (global), 1 when coalesced or unknown
    shared_wavefronts: float = 1.0


class RequestCounts(Protocol):
    """What the time models read from a memory analysis (`MemoryAnalysis` has it all): request counts by kind.
    Only a full `MemoryAnalysis` also gives the addresses the footprint and partition camping need."""

    def global_requests(self) -> tuple[float, float]: ...
    def unknown_requests(self) -> float: ...
    def uncoalesced_sectors_per_request(self) -> float | None: ...
    def global_sector_factor(self) -> float: ...
    def shared_wavefronts_per_request(self) -> float | None: ...


def memory_facts(memory: RequestCounts | None) -> MemoryFacts:
    """Read request counts from a memory analysis (`global_requests()`, `uncoalesced_sectors_per_request()`,
    `shared_wavefronts_per_request()`); anything missing or failing leaves the coalesced default."""
    if memory is None:
        return MemoryFacts()
    facts = MemoryFacts(known=True)
    try:
        coal, uncoal = memory.global_requests()
        if coal + uncoal > 0:
            facts.uncoalesced_fraction = uncoal / (coal + uncoal)
        facts.all_addresses_known = not memory.unknown_requests()
    except Exception:  # noqa: BLE001 - a partial analysis must not stop the prediction
        facts.known = False
    try:
        s = memory.uncoalesced_sectors_per_request()
        facts.sectors_per_request = float(s) if s else None
    except Exception:  # noqa: BLE001
        pass
    try:
        f = memory.global_sector_factor()
        facts.sector_factor = max(1.0, float(f)) if f else 1.0
    except Exception:  # noqa: BLE001
        pass
    try:
        w = memory.shared_wavefronts_per_request()
        facts.shared_wavefronts = max(1.0, float(w)) if w else 1.0
    except Exception:  # noqa: BLE001
        pass
    return facts


def predict_time(cfg: Cfg, loops: Any, profile: Any, *, blocks: int, threads_per_block: int,
                 trips: Mapping[int, float] | None = None, blocks_per_sm: int | None = None,
                 occupancy: float | None = None, registers: int | None = None, shared_bytes: int = 0,
                 memory: RequestCounts | None = None, assumptions: list[str] | None = None,
                 model: str = DEFAULT_TIME_MODEL, grid: tuple[int, int, int] | None = None,
                 block: tuple[int, int, int] | None = None, graphs: KernelGraphs | None = None,
                 dynamic_shared: int = 0) -> TimeEstimate:
    """Predict one launch with every model (kerncast, thesis Algorithms 6-8 plus Eqs. 4.8-4.12, MWP-CWP) and
    the roofline range; `model` picks the one whose time is `us` ("kerncast", "thesis" or "mwp-cwp").

    `trips` maps loop header block ids to trip counts (a loop missing from it runs the data file's default);
    `blocks_per_sm` is the occupancy calculator's resident blocks (else thesis Algorithm 8 lines 4-8);
    `grid`/`block` the launch's shapes (default: 1-D), which the distinct-bytes footprint needs; `graphs` the
    kernel's `kernel_graphs` when the caller keeps them for several predictions; `dynamic_shared` the launch's
    dynamic shared memory per block, which with `shared_bytes` decides what is left of the SM's storage for L1.
    """
    if model not in TIME_MODELS or model == "trace":  # the trace model needs the pipeline (stages.py)
        raise ValueError(f"unknown time model {model!r}: choose one of {', '.join(TIME_MODELS)}")
    notes = list(assumptions or [])
    blocks = max(1, int(blocks))
    threads_per_block = max(1, int(threads_per_block))
    total = blocks * threads_per_block
    trip_map = loop_trips(loops, trips, notes)
    if not blocks_per_sm:
        blocks_per_sm = thesis_blocks_per_sm(profile, threads_per_block, registers, shared_bytes)
        notes.append(f"resident blocks per SM from the thesis's limits (Algorithm 8): {blocks_per_sm}")
    plan = plan_waves(blocks, profile.sm_count, blocks_per_sm)
    latency = profile_latency(profile, total)
    graphs = graphs or kernel_graphs(cfg)
    dags, classes = graphs.dags, graphs.classes
    scheds: list[tuple[CfgSchedule, int]] = []
    plans: dict[int, list[PlannedNode]] = {}  # the full and the last wave share each block's plan
    if plan.full_waves:
        scheds.append((schedule_cfg(cfg, loops, plan.blocks_per_wave * threads_per_block, trip_map,
                                    latency=latency, units=profile.units, dags=dags, classes=classes,
                                    plans=plans),
                       plan.full_waves))
    if plan.last_wave_blocks:
        scheds.append((schedule_cfg(cfg, loops, plan.last_wave_blocks * threads_per_block, trip_map,
                                    latency=latency, units=profile.units, dags=dags, classes=classes,
                                    plans=plans), 1))
    d_kernel = sum(s.delay * n for s, n in scheds)
    first = scheds[0][0]
    mem = memory_facts(memory)
    pen = thesis_penalties(profile, total_threads=total, n_global=first.global_count,
                           n_shared=first.shared_count, waves=plan.waves, shared_wavefronts=mem.shared_wavefronts,
                           global_sector_factor=mem.sector_factor)
    clock = profile.core_clock_mhz  # cycles per microsecond
    breakdown = {
        "schedule_us": d_kernel / clock,
        "launch_overhead_us": pen.launch_overhead_us,
        "global_penalty_us": pen.global_us,
        "shared_penalty_us": pen.shared_us,
        "cache_penalty_us": pen.cache_cycles / clock,
    }
    us = sum(breakdown.values())
    top = max(breakdown, key=lambda k: breakdown[k])
    bottleneck = _BOTTLENECK_NAMES[top]
    if top == "schedule_us" and first.busy:
        unit = max(first.busy, key=lambda r: first.busy[r])
        bottleneck = f"{bottleneck} ({unit})"
    counts = dynamic_counts(cfg, loops, trip_map, float(timing_constants()["roofline"]["fma_ops"]),
                            _dead(memory), _folded(cfg, graphs, profile))
    notes.extend(tensor_notes(profile, counts))
    if not mem.known:
        notes.append("no memory analysis: every global access assumed coalesced for MWP-CWP and the best "
                     "roofline time; the worst roofline time assumes scattered access")
    else:
        notes.append("memory analysis request counts used: coalesced/uncoalesced split for MWP-CWP and the "
                     "roofline range, sectors moved per sector needed "
                     f"({mem.sector_factor:.2f}x) for the global memory and cache penalties, shared wavefronts "
                     f"per request ({mem.shared_wavefronts:.2f}) for the shared penalty")
    notes.append(f"MWP-CWP: Hong & Kim's GTX280 departure delays scaled by DRAM bytes per SM cycle "
                 f"(x{departure_scale(profile):.2f} on {profile.name})")
    hk = mwp_cwp(mwp_cwp_params(profile, counts, blocks=blocks, threads_per_block=threads_per_block,
                                active_blocks_per_sm=blocks_per_sm, uncoalesced_fraction=mem.uncoalesced_fraction,
                                uncoal_per_mw=mem.sectors_per_request))
    grid = grid or (blocks, 1, 1)
    block = block or (threads_per_block, 1, 1)
    kc, fp, requested, replays = _kerncast(cfg, loops, profile, blocks=blocks, threads_per_block=threads_per_block,
                                           trip_map=trip_map, resident=plan.blocks_per_wave, grid=grid, block=block,
                                           memory=memory, graphs=graphs, shared=shared_bytes + dynamic_shared)
    # the roofline's best memory line: the DRAM traffic the kerncast model counts with a warm L2 (the distinct
    # bytes, and the requests of addresses with no footprint in full unless the L2 holds them)
    compulsory = min(fp.total + requested[1], kc.dram_bytes) if fp is not None and requested is not None else None
    roof = roofline_range(roofline_inputs(profile, counts, total, uncoalesced_fraction=mem.uncoalesced_fraction,
                                          coalescing_known=mem.known and mem.all_addresses_known,
                                          compulsory_bytes=compulsory,
                                          requested_bytes=sum(requested) * fp.camping
                                          if requested is not None and fp is not None else None,
                                          fixed_us=kc.launch_us, dispatch_us=kc.dispatch_us,
                                          latency_us=plan.waves * kc.latency_chain_cycles / profile.core_clock_mhz,
                                          lsu_replays=max([1.0, *replays.values()]),
                                          quantization=math.ceil(blocks / profile.sm_count)
                                          / (blocks / profile.sm_count)))
    if not profile.is_calibrated("latency"):
        notes.append(f"{profile.name}: instruction latencies are estimated, not measured on this GPU")
    notes.append("branches: the thesis's longest path through the CFG; memory instruction counts include "
                 "both sides of every branch")
    if cfg.cold:
        left = sum(cfg.blocks[b].size for b in cfg.cold)
        notes.append(f"the math library's slow path for trig arguments of magnitude {TRIG_REDUCTION_BOUND:g} or "
                     f"more (Payne-Hanek reduction, {left} instructions) is assumed not to run: typical arguments "
                     "stay below it")
    detail = {
        "d_kernel_cycles": d_kernel, "n_global_per_thread": first.global_count,
        "n_shared_per_thread": first.shared_count, "blocks_per_sm": plan.blocks_per_wave,
        "blocks_on_busiest_sm": plan.blocks_per_sm, "mwp": hk.mwp, "cwp": hk.cwp, "mwp_limit": hk.mwp_limit,
    }
    detail.update({"kerncast_compute_us": kc.compute_us, "kerncast_memory_us": kc.memory_us,
                   "kerncast_launch_us": kc.launch_us, "kerncast_host_launch_us": kc.host_us,
                   "kerncast_kernel_duration_us": kc.us - kc.host_us, "dram_bytes": kc.dram_bytes,
                   "latency_chain_cycles": kc.latency_chain_cycles, "cycles_per_block": kc.per_block_cycles,
                   "compute_ops": total * counts.alu_ops})  # the roofline's work (FMA twice), for its chart
    models = {"kerncast": kc.us, "thesis": us, "mwp-cwp": hk.us}
    spread = (min(models.values()), max(models.values()))
    if model == "kerncast":
        chosen, rng, basis = kc.us, (kc.low_us, kc.high_us), kc.notes[-1]
        bottleneck = kc.bottleneck
        notes = notes + kc.notes[:-1]
    else:
        chosen = models[model]
        rng = (min(spread[0], chosen), max(spread[1], chosen))
        basis = "range: the spread of the three models' predictions for this launch"
    notes.append(basis)
    return TimeEstimate(us=chosen, cycles=chosen * clock, model=TIME_MODELS[model], breakdown=breakdown,
                        waves=plan.waves, occupancy=occupancy, bottleneck=bottleneck if model != "mwp-cwp"
                        else f"MWP-CWP {hk.cls}", mwp_cwp_us=hk.us, mwp_cwp_class=hk.cls, roofline_us=roof,
                        assumptions=notes, detail=detail, range_us=rng, range_basis=basis, models=models)


def _kerncast(cfg: Cfg, loops: Any, profile: Any, *, blocks: int, threads_per_block: int,
              trip_map: Mapping[int, float], resident: int, grid: tuple[int, int, int], block: tuple[int, int, int],
              memory: RequestCounts | None, graphs: KernelGraphs, shared: int = 0
              ) -> tuple[PipelinedResult, Footprint | None, tuple[float, float] | None, dict[int, float]]:
    """The kerncast model's prediction, with the global traffic it was made from (footprint, requested bytes,
    replays), which the roofline reads too. `resident` is the blocks per SM of one wave, `shared` the shared
    memory of one block (static and dynamic)."""
    warps = blocks * -(-threads_per_block // profile.warp_size)
    fp, requested, replays = global_traffic(memory, cfg, block, grid, resident * profile.sm_count, trip_map,
                                            warps, profile, graphs.memo)
    sector = int(profile.sector_bytes or 32)
    capacity = l1_per_block(profile, resident, shared)
    local = local_traffic(memory, cfg, profile, warps=warps, threads_per_sm=resident * threads_per_block,
                          busy_sms=min(profile.sm_count, blocks),
                          l1_per_sm=capacity * resident if capacity is not None else None)
    if local is not None:
        replays = {**replays, **local.replays}
    reuse = (block_reuse(memory, cfg, loops, trip_map, block, grid, sector, capacity, graphs.memo)
             if isinstance(memory, MemoryAnalysis) and l1_hit_latency(profile) is not None else [])
    kc = predict_pipelined(cfg, loops, profile, dags=graphs.dags, classes=graphs.classes, trips=trip_map,
                           blocks=blocks, threads_per_block=threads_per_block, blocks_per_sm=resident, grid=grid,
                           replays=replays, footprint=fp, requested=requested, l1=reuse,
                           l1_hit_bytes=l1_hit_bytes(memory, reuse, fp, warps, sector)
                           if fp is not None and reuse else 0.0, l1_capacity=capacity,
                           dead=_dead(memory), local=local, divergent=_divergent(memory, cfg),
                           warp_share=memory.warp_share
                           if isinstance(memory, MemoryAnalysis) else None,
                           folded=_folded(cfg, graphs, profile))
    kc = with_contention(kc, contention(memory, cfg, profile, blocks=blocks, threads_per_block=threads_per_block,
                                        resident=resident, trips=trip_map), profile)
    return kc, fp, requested, replays


def _folded(cfg: Cfg, graphs: KernelGraphs, profile: Any) -> frozenset[int]:
    """The instructions ptxas merges into a neighbour on this GPU (`datapaths.folded_instructions`; none on a GPU
    without integer pipes, whose model counts PTX as written), found once per kernel: they depend on its code
    alone."""
    if not has_datapaths(profile.units):
        return frozenset()
    found = graphs.memo.get("folded")
    if found is None:
        found = graphs.memo["folded"] = folded_instructions(cfg.function.body, graphs.dags)
    return found


def _divergent(memory: RequestCounts | None, cfg: Cfg) -> dict[int, float]:
    """Basic block -> the share of sampled warp instances whose lanes its branch splits, for the branches the
    memory analysis found divergent (a branch with no share measured splits every warp it is found to split)."""
    if not isinstance(memory, MemoryAnalysis):
        return {}
    return {cfg.block_of[b.index]: b.share if b.share is not None else 1.0 for b in memory.branches
            if b.divergent and 0 <= b.index < len(cfg.block_of)}


def _dead(memory: RequestCounts | None) -> frozenset[int]:
    """The blocks the analysed launch never reaches, where a memory analysis of that launch says which."""
    return memory.dead_blocks if isinstance(memory, MemoryAnalysis) else frozenset()


def kerncast_us(cfg: Cfg, loops: Any, profile: Any, *, blocks: int, threads_per_block: int,
                trips: Mapping[int, float] | None = None, blocks_per_sm: int | None = None,
                registers: int | None = None, shared_bytes: int = 0, memory: RequestCounts | None = None,
                grid: tuple[int, int, int] | None = None, block: tuple[int, int, int] | None = None,
                graphs: KernelGraphs | None = None, dynamic_shared: int = 0) -> float:
    """The kerncast model's time alone: `predict_time(...).models["kerncast"]` for the same inputs without the
    thesis scheduler, MWP-CWP and the roofline, for a re-prediction that compares one model's time with itself
    (a gain's, an assumed loop count's bound)."""
    blocks = max(1, int(blocks))
    threads_per_block = max(1, int(threads_per_block))
    trip_map = loop_trips(loops, trips, [])
    blocks_per_sm = blocks_per_sm or thesis_blocks_per_sm(profile, threads_per_block, registers, shared_bytes)
    plan = plan_waves(blocks, profile.sm_count, blocks_per_sm)
    kc, *_ = _kerncast(cfg, loops, profile, blocks=blocks, threads_per_block=threads_per_block, trip_map=trip_map,
                       resident=plan.blocks_per_wave, grid=grid or (blocks, 1, 1),
                       block=block or (threads_per_block, 1, 1), memory=memory, graphs=graphs or kernel_graphs(cfg),
                       shared=shared_bytes + dynamic_shared)
    return kc.us


def global_traffic(memory: RequestCounts | None, cfg: Cfg, block: tuple[int, int, int], grid: tuple[int, int, int],
                   wave_blocks: int, trips: Mapping[int, float], warps: int, profile: Any,
                   memo: dict[Any, Any] | None = None
                   ) -> tuple[Footprint | None, tuple[float, float] | None, dict[int, float]]:
    """From the memory analysis: the distinct-bytes footprint, the bytes requested with no reuse (of accesses
    with and without a footprint) and each access's unit passes per warp (replays). Nones without one. `memo`
    (`KernelGraphs.memo`) keeps footprints for the kernel's other predictions at the same launch."""
    if not isinstance(memory, MemoryAnalysis) or not memory.accesses:
        return None, None, {}
    accesses = memory.accesses
    sector = int(profile.sector_bytes or 32)
    fp = _footprint(memory, block, grid, wave_blocks, trips, sector, memo)
    layout = dram_partitions(profile)
    if layout is not None:
        fp.camping = camping_factor(memory, block, wave_extent(grid, wave_blocks), *layout, sector=sector,
                                    launch_grid=grid)
    covered = uncovered = 0.0
    for a in accesses:
        if a.space == "global":
            moved = requested_bytes(a, sector, warps)
            if fp.covered is not None and a.index in fp.covered:
                covered += moved
            else:
                uncovered += moved
    return fp, (covered, uncovered), unit_replays(memory, cfg, profile)


def _footprint(memory: MemoryAnalysis, block: tuple[int, int, int], grid: tuple[int, int, int], wave_blocks: int,
               trips: Mapping[int, float], sector: int, memo: dict[Any, Any] | None) -> Footprint:
    """`footprint(...)`, a fresh copy of the one `memo` holds for the same inputs where it holds one (the caller
    sets its partition camping)."""
    if memo is None:
        return footprint(memory, block, grid, wave_blocks, trips, sector)
    fp = memoised(memo, ("footprint", footprint_key(memory, block, grid, wave_blocks, trips, sector)), memory.atoms,
                  lambda: footprint(memory, block, grid, wave_blocks, trips, sector))
    return replace(fp, covered=set(fp.covered) if fp.covered is not None else None)


def l1_hit_bytes(memory: MemoryAnalysis, reuse: list[L1Reuse], fp: Footprint, warps: int, sector: int) -> float:
    """The requested bytes of accesses in the footprint that the L1 serves: each reused load's requested sectors
    times the share of its executions that find their sector there (`cache_model.l1_reuse`)."""
    share = {r.index: r.share for r in reuse}
    return sum(requested_bytes(a, sector, warps) * share[a.index]
               for a in memory.accesses
               if a.index in share and fp.covered is not None and a.index in fp.covered)


def unit_replays(memory: MemoryAnalysis | None, cfg: Cfg | None = None, profile: Any = None) -> dict[int, float]:
    """Memory instruction index -> the load/store unit's passes per warp request, in units of the cycles the
    unit takes to accept a warp's lanes (warp size / `LSU`): the L1's lines and bytes (global; sectors over the
    ideal where the L1 does not cache global loads) or wavefronts (shared) against those cycles; accesses of
    unknown pattern and ideal ones are left out (one pass). Broadcast shared loads that ptxas merges into one
    vector load share its passes (`vector_merged`). Without a profile, a shared request's passes are its
    wavefronts over the ideal (the trace model's reading).

    On a GPU whose L1 caches global loads (`cache_model.l1_hit_latency`), a global request passes the L1's tag
    stage once per distinct 128-byte line it touches, hit or miss, and its data crosses the L1's 128 bytes per
    clock: lanes a row apart touch 32 lines, 32 cycles, where sectors over the ideal say 8; a coalesced 16-byte
    load moves 512 bytes, 4 cycles. Those stages overlap the unit's taking of the lanes, so a request costs the
    longest of the three (`data_path_passes`); shared requests likewise take a wavefront per clock."""
    replays: dict[int, float] = {}
    by_line = profile is not None and l1_hit_latency(profile) is not None
    lanes = lane_cycles(profile)
    for a in memory.accesses if memory is not None else ():
        if a.space == "global" and a.known and a.sectors_per_request and a.ideal_sectors:
            replays[a.index] = (data_path_passes(a, int(profile.sector_bytes or 32), lanes) if by_line
                                else sector_passes(a))
        elif a.space == "shared" and a.known and a.wavefronts and a.ideal_wavefronts:
            replays[a.index] = (max(1.0, a.wavefronts / lanes) if profile is not None
                                else max(1.0, a.wavefronts / a.ideal_wavefronts))
    if memory is not None and cfg is not None and profile is not None:
        replays.update(vector_merged(memory, cfg, profile))
    return replays


def lane_cycles(profile: Any) -> float:
    """The clocks the load/store unit takes to accept one warp's lanes: warp size over its `LSU` lanes per SM
    (1 on the GPUs with 32, 2 on Turing, GA10x and AD10x with 16); 1 without a profile."""
    if profile is None:
        return 1.0
    lsu = float(profile.units.get("LSU", 0) or 0)
    return max(1.0, float(profile.warp_size or 32) / lsu) if lsu > 0 else 1.0


def vector_merged(memory: MemoryAnalysis, cfg: Cfg, profile: Any) -> dict[int, float]:
    """Shared load index -> its share of the passes of the vector load ptxas makes of it and its neighbours, where
    that share is below one pass.

    Scalar loads of one basic block from one base register at consecutive offsets that fill an aligned window of
    the widest vector load (`data/timing.toml` [kerncast.shared_vector]: `As[ty][k]`, `As[ty][k + 1]`, ... of an
    unrolled loop), whose address is aligned to that size in every thread, are one vector load in the machine
    code. It returns one register per pass, as the scalar loads did, unless every lane reads one address (a
    broadcast) on a GPU that packs such returns: then its passes are fewer than its registers. Lanes at other
    addresses share the passes of the vector load's own wavefronts (`AccessInfo.vector_wavefronts`, its lanes'
    banks compared a quarter-warp at a time): `Bs[k][8 * (t % 16) + i]` for i = 0..7 is two 16-byte loads of
    8 wavefronts each, 2 per scalar load, where each scalar load alone would take 4 (its lanes 32 bytes apart
    meet in a bank four times). Both kinds are judged only from the capability the packing row names (7.0):
    the bank rule the wavefronts come from is the 32-bank, 4-byte one of those GPUs, so older ones keep their
    scalar loads' passes."""
    row = timing_constants()["kerncast"].get("shared_vector", {})
    size, packing = int(row.get("bytes", 0)), float(row.get("uniform_packing", 1))
    if packing <= 1.0 or tuple(profile.compute_capability) < capability(float(row.get("packing_from_cc", 0.0))):
        return {}
    body, lanes = cfg.function.body, lane_cycles(profile)
    by_base: dict[tuple[int, str, int], dict[int, Any]] = {}
    for a in memory.accesses:
        if a.space != "shared" or a.kind != "load" or not a.known or a.executions <= 0.0:
            continue
        ins = body[a.index]
        addr = next((o for o in ins.operands if isinstance(o, Addr)), None)
        if addr is None or not isinstance(addr.base, Reg) or any(m in ("v2", "v4") for m in ins.modifiers):
            continue
        by_base.setdefault((cfg.block_of[a.index], addr.base.name, a.width_bytes), {})[addr.offset] = a
    out: dict[int, float] = {}
    for (_, _, width), by_offset in by_base.items():
        n = size // width if width > 0 else 0
        if n < 2:
            continue
        registers = size / 4  # 32-bit registers one lane receives
        for offset, first in by_offset.items():
            if offset % size or not first.align or first.align % size:
                continue
            members = [by_offset.get(offset + j * width) for j in range(n)]
            if all(m is not None and m.lane_stride_bytes == 0 and m.wavefronts == 1.0 for m in members):
                share = registers / packing / n
                out.update({m.index: share for m in members if m is not None and share < 1.0})
            elif size == VECTOR_BYTES and first.vector_wavefronts and all(m is not None for m in members):
                share = max(1.0, first.vector_wavefronts / lanes) / n
                out.update({m.index: share for m in members if share < max(1.0, (m.wavefronts or 1.0) / lanes)})
    return out
