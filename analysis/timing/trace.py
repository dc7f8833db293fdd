"""The trace model (`--time-model trace`): per-warp traces run through a warp-pipeline simulation, after the
hybrid source-analysis and trace-based simulation approach to GPU performance estimation.

Where the three other models are closed-form, this one follows each warp of one round of resident blocks
through its own sequence of basic blocks (`trace_paths.py`) and simulates the round on one SM event by
event (`trace_sim.py`); the kernel's time is one round's time x the rounds of the busiest SM (the last,
partial round simulated on its own), plus the launch's fixed cost (`launch_cost.py`, as the kerncast model).

Built on what the pipeline has already worked out, not a second copy of it: the CFG and loop nest, the
trip counts, the dataflow layer's symbolic branch predicates, the memory analysis's sectors and wavefronts
per request (replays of the load/store unit), the kerncast model's DRAM bytes (the footprint's
L2-versus-DRAM split) and the cache model's L1 reuse (`cache_model.py`). Memory latency: a global access
waits the L2 hit latency (the kerncast model's: on a partitioned L2 the mean of its near and far halves')
plus the DRAM share of the launch's requested bytes times the extra latency of DRAM (the loaded latency of
the profile's `global_latency`), or, for a load the cache model finds in L1
for part of its executions, that share at the L1 hit latency; it holds the SM's share of the achievable
DRAM bandwidth for the DRAM share of its sectors. The share is one figure for the whole launch (an
average over its accesses), not a per-access reuse-distance simulation.
"""

from __future__ import annotations

import heapq
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow.symbolic import SymbolicResult
from kerncast.analysis.deps import DepGraph
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.timing.cache_model import l1_hit_latency, l1_reuse, load_latency, reuse_note
from kerncast.analysis.timing.estimate import KernelGraphs, loop_trips, requested_sectors, unit_replays
from kerncast.analysis.timing.launch_cost import launch_cost
from kerncast.analysis.timing.pipelined import achievable_bandwidth_gbs, l2_hit_cycles, native_latencies, tensor_slots
from kerncast.analysis.timing.trace_paths import ASSUMED, DIVERGENT, BranchResolver, Item, WarpTrace, build_trace
from kerncast.analysis.timing.trace_sim import Op, simulate_round

MODEL = "trace"
_FREE_SPACES = frozenset({"param", "const"})
_BARRIERS = frozenset({"bar", "barrier"})
_MEMORY_OPS = frozenset({"ld", "ldu", "st", "atom", "red", "tex", "cp"})


@cache
def trace_constants() -> dict[str, Any]:
    """The parsed `data/trace.toml` (the simulation window, the branch assumption's source)."""
    text = resources.files("kerncast.analysis").joinpath("data/trace.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@dataclass(slots=True)
class TraceResult:
    """The trace model's time and how it was reached."""

    us: float
    round_cycles: float
    rounds: int
    tail_cycles: float
    warps: int
    distinct_traces: int
    divergent_branches: int
    assumed_branches: int
    issued: int  # warp instructions the simulation issued (its cost; bounded by the window, not the trips)
    notes: list[str] = field(default_factory=list)


def _sectors(memory: MemoryAnalysis | None) -> dict[int, float]:
    """Per global memory instruction: the sectors a warp request moves (unknown addresses: one sector per lane,
    a scatter)."""
    return {a.index: a.sectors_per_request if a.known and a.sectors_per_request else 32.0
            for a in (memory.accesses if memory is not None else ()) if a.space == "global"}


def _dram_share(memory: MemoryAnalysis | None, dram_bytes: float | None, warps: int, sector: int) -> float:
    """The share of the launch's requested global bytes that go to DRAM (the rest hit the L2): the kerncast
    model's DRAM bytes over the bytes the requests move with no reuse, both counted as that model counts them
    (`requested_sectors`); 1 when either is unknown."""
    if memory is None or dram_bytes is None:
        return 1.0
    requested = sum(requested_sectors(a, sector) * sector * a.executions
                    for a in memory.accesses if a.space == "global") * warps
    return min(1.0, dram_bytes / requested) if requested > 0 else 1.0


def _ops(cfg: Cfg, profile: Any, graphs: KernelGraphs, replays: Mapping[int, float], sectors: Mapping[int, float],
         global_latency: float, dram_cycles_per_sector: float, load_latencies: Mapping[int, float]) -> dict[int, Op]:
    """Each reachable instruction's unit, hold time, latency and registers for the simulator;
    `load_latencies` overrides the global latency of loads that the cache model finds partly in L1."""
    body = cfg.function.body
    units = profile.units
    warp = profile.warp_size
    latency = native_latencies(profile)
    latency["global"] = latency["memory"] = global_latency
    classes = {i: graphs.classes[i] for b in cfg.blocks if b.id not in cfg.unreachable for i in range(b.start, b.end)}
    tensor = tensor_slots(body, classes, profile)
    ops: dict[int, Op] = {}
    for i, cls in classes.items():
        ins = body[i]
        lat = load_latencies.get(i, float(latency.get(cls.latency, latency.get("misc", 1.0))))
        if cls.latency == "param" or (cls.type == "misc" and ins.space in _FREE_SPACES):
            ops[i] = Op(None, 0.0, 0.0, ins.registers_read, ins.registers_written)
            continue
        res = cls.resource if units.get(cls.resource, 0) > 0 else "SP"
        hold = tensor[i] * warp if i in tensor else warp / units[res] * replays.get(i, 1.0)
        dram = sectors.get(i, 0.0) * dram_cycles_per_sector
        ops[i] = Op(res, hold, lat, ins.registers_read, ins.registers_written,
                    barrier=ins.opcode in _BARRIERS, memory=ins.opcode in _MEMORY_OPS, dram_hold=dram)
    return ops


def _memory_order(dag: DepGraph, body: Any) -> dict[int, set[int]]:
    """Edges the dependence DAG leaves out and ptxas keeps: a store stays after the loads and stores of its
    state space before it, a load after the stores before it (they may alias)."""
    extra: dict[int, set[int]] = {}
    seen: dict[str | None, list[int]] = {}
    stores: dict[str | None, list[int]] = {}
    for v in dag.nodes:
        ins = body[v]
        if ins.opcode not in _MEMORY_OPS:
            continue
        space = ins.space
        before = seen.get(space, []) if ins.opcode in ("st", "atom", "red") else stores.get(space, [])
        if before:
            extra[v] = set(before)
        seen.setdefault(space, []).append(v)
        if ins.opcode in ("st", "atom", "red"):
            stores.setdefault(space, []).append(v)
    return extra


def issue_order(dag: DepGraph, ops: Mapping[int, Op], body: Any) -> list[int]:
    """A block's instructions in the order the warp issues them. PTX order is not the machine's: ptxas list-
    schedules each block, hoisting long-latency loads above the arithmetic that does not need them. The
    same idea here: a topological order of the block's dependence DAG (plus the memory order of
    `_memory_order`) that always takes the ready instruction with the longest latency path to the block's
    end (ties: PTX order); the terminator stays last."""
    extra = _memory_order(dag, body)
    succs: dict[int, set[int]] = {v: {s for s, _ in dag.succs[v]} for v in dag.nodes}
    for v, before in extra.items():
        for u in before:
            succs[u].add(v)
    preds: dict[int, int] = {v: 0 for v in dag.nodes}
    for v in dag.nodes:
        for s in succs[v]:
            preds[s] += 1
    height: dict[int, float] = {}
    for v in reversed(dag.nodes):
        height[v] = ops[v].latency + max((height[s] for s in succs[v]), default=0.0)
    last = dag.nodes[-1] if dag.nodes else None
    ready = [(-height[v], v) for v in dag.nodes if not preds[v] and v != last]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for s in succs[v]:
            preds[s] -= 1
            if not preds[s] and s != last:
                heapq.heappush(ready, (-height[s], s))
    if last is not None:
        order.append(last)
    return order


def _round_traces(resolver: BranchResolver, cfg: Cfg, loops: LoopForest, trips: Mapping[int, float], *,
                  blocks: int, resident: int, warps_per_block: int, sm_count: int
                  ) -> tuple[list[tuple[int, WarpTrace]], int]:
    """Every warp of one round on the first SM (blocks 0, sm_count, 2 sm_count, ...) with its trace; warps
    that decide their branches alike share one trace object. Also the number of distinct traces."""
    shared: dict[tuple[tuple[int, str], ...], WarpTrace] = {}
    out: list[tuple[int, WarpTrace]] = []
    for r in range(resident):
        cta = min(r * sm_count, blocks - 1)
        for w in range(warps_per_block):
            decisions = resolver.decide(cta, w)
            key = tuple(sorted(decisions.items()))
            trace = shared.get(key)
            if trace is None:
                trace = shared[key] = build_trace(cfg, loops, trips, decisions)
            out.append((r, trace))
    return out, len(shared)


def warp_groups(traces: list[tuple[int, WarpTrace]], most: int) -> list[tuple[int, tuple[Item, ...], int]]:
    """The simulated entries: alike warps of one block (same trace) in groups, so that no more than about
    `most` entries run (`simulate_round`'s multiplicity); one entry per warp when the round is small."""
    size = max(1, math.ceil(len(traces) / max(1, most)))
    by_class: dict[tuple[int, int], list[WarpTrace]] = {}
    for block, trace in traces:
        by_class.setdefault((block, id(trace)), []).append(trace)
    out: list[tuple[int, tuple[Item, ...], int]] = []
    for (block, _), members in by_class.items():
        for start in range(0, len(members), size):
            out.append((block, members[0].items, len(members[start:start + size])))
    return out


def predict_trace(cfg: Cfg, loops: LoopForest, profile: Any, symbolic: SymbolicResult, *, blocks: int,
                  threads_per_block: int, grid: tuple[int, int, int], block: tuple[int, int, int],
                  blocks_per_sm: int, trips: Mapping[int, float], params: Mapping[int, int],
                  memory: MemoryAnalysis | None, dram_bytes: float | None, graphs: KernelGraphs) -> TraceResult:
    """One launch's time by the trace model (module docstring). `trips` maps loop headers to trip counts
    (a loop missing from it runs the timing data's default), `params` kernel parameter index -> value,
    `graphs` the kernel's dependence DAGs and instruction classes, as the closed-form models read them."""
    const = trace_constants()
    window = (int(const["window"]["iterations"]), int(const["window"]["full_window_depth"]))
    trip_map = loop_trips(loops, trips, [])  # the closed-form models' notes already name the defaults
    warp = profile.warp_size
    warps_per_block = math.ceil(threads_per_block / warp)
    blocks_on_sm = math.ceil(blocks / profile.sm_count)
    resident = max(1, min(blocks_per_sm, blocks_on_sm))
    clock = profile.core_clock_mhz
    sector = int(profile.sector_bytes or 32)
    share = _dram_share(memory, dram_bytes, blocks * warps_per_block, sector)
    dram_latency = float(profile.global_latency(blocks * threads_per_block))
    l2_hit = l2_hit_cycles(profile)
    l2_latency = l2_hit if l2_hit is not None else dram_latency
    global_latency = l2_latency + share * max(0.0, dram_latency - l2_latency)
    bw, bw_note = achievable_bandwidth_gbs(profile)
    bytes_per_cycle_sm = bw * 1e3 / clock / profile.sm_count
    replays, sectors = unit_replays(memory), _sectors(memory)
    l1 = l1_hit_latency(profile)
    reuse = l1_reuse(memory, cfg, loops, sector) if l1 is not None else []
    own = load_latency(reuse, l1, global_latency) if l1 is not None else {}
    ops = _ops(cfg, profile, graphs, replays, sectors, global_latency, share * sector / bytes_per_cycle_sm, own)
    spans = {b: issue_order(dag, ops, cfg.function.body) for b, dag in graphs.dags.items()}
    resolver = BranchResolver(cfg, loops, symbolic, params, block, grid, warp)
    traces, distinct = _round_traces(resolver, cfg, loops, trip_map, blocks=blocks, resident=resident,
                                     warps_per_block=warps_per_block, sm_count=profile.sm_count)
    dispatch = float(profile.units.get("dispatch_units") or profile.units.get("warp_schedulers") or 1)
    full_rounds, tail_blocks = divmod(blocks_on_sm, resident)
    most = int(const["window"]["simulated_warps"])
    round_sim = simulate_round(warp_groups(traces, most), ops, spans, dispatch=dispatch, window=window)
    tail = 0.0
    if tail_blocks:
        tail = simulate_round(warp_groups([(r, t) for r, t in traces if r < tail_blocks], most), ops, spans,
                              dispatch=dispatch, window=window).cycles
    cycles = round_sim.cycles * full_rounds + tail
    cost = launch_cost(profile, cycles / clock)
    divergent = len({i for _, t in traces for i, d in t.decisions.items() if d == DIVERGENT})
    assumed = len({i for _, t in traces for i, d in t.decisions.items() if d == ASSUMED})
    notes = [
        f"trace model: {len(traces)} warps of one round ({resident} blocks on one SM) simulated event by event "
        f"with {distinct} distinct trace(s); loops simulate a window of {window[0]} iterations "
        f"({window[0] - 1} measured after one warm-up; 2 in loops nested deeper than {window[1]}) and extrapolate "
        f"the rest at the measured pace; {full_rounds} full round(s) plus "
        + (f"a tail of {tail_blocks} block(s)" if tail_blocks else "no tail"),
        f"trace model branches: {divergent} divergent (both paths run), {assumed} not decidable from thread/block "
        "indices and launch parameters (loaded data, loop iterations, unknown parameters): both paths assumed run",
        f"trace model memory: a global access waits {global_latency:.0f} cycles ({l2_latency:g}-cycle L2 hit plus "
        f"{share:.0%} of the launch's requested bytes from DRAM at {dram_latency:.0f} cycles; the share is the "
        f"kerncast model's DRAM bytes) and holds the SM's share of {bw:.4g} GB/s ({bw_note}) for that share",
        *([reuse_note(reuse, l1, global_latency, profile)] if reuse and l1 is not None else []),
        cost.note,
    ]
    return TraceResult(us=cost.fixed_us + cycles / clock, round_cycles=round_sim.cycles, rounds=full_rounds,
                       tail_cycles=tail, warps=len(traces), distinct_traces=distinct, divergent_branches=divergent,
                       assumed_branches=assumed, issued=round_sim.issued, notes=notes)
