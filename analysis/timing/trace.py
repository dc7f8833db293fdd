"""The trace model (`--time-model trace`): per-warp traces run through a warp-pipeline simulation, after the
hybrid source-analysis and trace-based simulation approach to GPU performance estimation.

Where the three other models are closed-form, this one follows each warp of one round of resident blocks
through its own sequence of basic blocks (`trace_paths.py`) and simulates the round on one SM event by
event (`trace_sim.py`); the kernel's time is one round's time x the rounds of the busiest SM (the last,
partial round simulated on its own), plus the launch's fixed cost (`launch_cost.py`, as the kerncast model).
The SM's work ends with its last warp's retirement, or later where its busiest resource (a unit, the issue
slots, its DRAM share) is still serving the accesses: the stores still in flight at the end drain in the
launch's completion, which every launch pays, an empty kernel's too, so the fixed cost (an event-timed empty
kernel, or graph launches of a tiny one) already holds that drain.

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
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.symbolic import SymbolicResult
from kerncast.analysis.deps import DepGraph
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.timing.cache_model import l1_hit_latency, l1_reuse, load_latency, reuse_note
from kerncast.analysis.timing.estimate import KernelGraphs, loop_trips, unit_replays
from kerncast.analysis.timing.footprint import requested_sectors, wave_extent
from kerncast.analysis.timing.launch_cost import block_dispatch_us, launch_cost
from kerncast.analysis.timing.partitions import camping_factor, dram_partitions
from kerncast.analysis.timing.pipelined import achievable_bandwidth_gbs, l2_hit_cycles, native_latencies, tensor_slots
from kerncast.analysis.timing.trace_paths import ASSUMED, DIVERGENT, BranchResolver, Item, WarpTrace, build_trace
from kerncast.analysis.timing.trace_sim import Op, simulate_round

MODEL = "trace"
_FREE_SPACES = frozenset({"param", "const"})
_BARRIERS = frozenset({"bar", "barrier"})
_MEMORY_OPS = frozenset({"ld", "ldu", "st", "atom", "red", "tex", "cp"})
_POSTED = frozenset({"st", "red"})
_VECTOR_BYTES = 16  # the widest shared load a thread issues (LDS.128)
_BANK_ROW_BYTES = 128  # one shared-memory wavefront: 32 banks x 4 bytes


@dataclass(frozen=True, slots=True)
class VectorLoad:
    """Scalar shared loads that ptxas issues as one vector load: the members (PTX order; the first issues
    it), and the wavefronts the vector load takes (the bytes the warp's distinct addresses span / 128)."""

    members: tuple[int, ...]
    wavefronts: float


def _shared_symbol(atoms: E.Atoms, mono: tuple[int, ...]) -> bool:
    return len(mono) == 1 and str(atoms.keys[mono[0]][1]).startswith("&")


def vector_shared_loads(cfg: Cfg, symbolic: SymbolicResult, resolver: BranchResolver) -> list[VectorLoad]:
    """Groups of scalar `ld.shared` that ptxas merges into one vector load (LDS.64/LDS.128): in one basic
    block, with no shared store between them, the same address but for a constant that steps by the access
    width from a multiple of the vector's width (As[ty][k..k+3] in an unrolled loop), the address's other
    terms known to be multiples of that width. The shared variable's own address counts as aligned: ptxas
    lays out shared memory and aligns a variable it accesses with vectors (the SASS of such loops shows
    LDS.128 for them). Cost: one pass over the loads."""
    body = cfg.function.body
    atoms = symbolic.atoms
    out: list[VectorLoad] = []
    for blk in cfg.blocks:
        if cfg.never_runs(blk.id):
            continue
        groups: dict[tuple, dict[int, int]] = {}  # address less its constant -> constant -> instruction
        epoch = 0  # a shared store starts a new epoch: loads do not merge across it
        for i in range(blk.start, blk.end):
            ins = body[i]
            if ins.space != "shared":
                continue
            if ins.opcode != "ld":
                epoch += 1
                continue
            addr = symbolic.addresses.get(i)
            width = ins.access_bytes
            if addr is None or ins.vector_width != 1 or width not in (4, 8) or ins.guard is not None:
                continue
            const, rest = E.split_const(addr)
            groups.setdefault((epoch, width, rest), {}).setdefault(const, i)
        for (_, width, rest), by_offset in groups.items():
            aligned = tuple((m, c) for m, c in rest if not _shared_symbol(atoms, m))
            zero_bits = E.low_zero_bits(atoms, aligned) if aligned else 64
            taken: set[int] = set()
            for k in (_VECTOR_BYTES // width, 2):
                if k < 2 or (1 << zero_bits) < k * width:
                    continue
                for start in sorted(by_offset):
                    run = [start + j * width for j in range(k)]
                    if start % (k * width) or any(c not in by_offset or c in taken for c in run):
                        continue
                    taken.update(run)
                    lanes = resolver.distinct_lane_values(aligned) if aligned else 1
                    span = (lanes if lanes is not None else resolver.warp_size) * k * width
                    out.append(VectorLoad(tuple(by_offset[c] for c in run), max(1.0, span / _BANK_ROW_BYTES)))
    return out


@cache
def trace_constants() -> dict[str, Any]:
    """The parsed `data/trace.toml` (the simulation window, the branch assumption's source)."""
    text = resources.files("kerncast.analysis").joinpath("data/trace.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@dataclass(slots=True)
class TraceResult:
    """The trace model's time and how it was reached."""

    us: float
    round_cycles: float  # when the first round's blocks had all retired
    rounds: int
    block_pace_cycles: float  # cycles per block of the blocks beyond the simulated ones (0: all simulated)
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


def _camping(memory: MemoryAnalysis | None, profile: Any, block: tuple[int, int, int], grid: tuple[int, int, int],
             wave_blocks: int) -> float:
    """Partition camping of one wave's concurrent accesses (`partitions.py`, as the kerncast model counts it):
    the busiest DRAM partition's load over the even share, so the SM's share of the bandwidth shrinks by it."""
    layout = dram_partitions(profile)
    if layout is None or memory is None or not memory.accesses:
        return 1.0
    return camping_factor(memory, block, wave_extent(grid, wave_blocks), *layout,
                          sector=int(profile.sector_bytes or 32), launch_grid=grid)


def _ops(cfg: Cfg, profile: Any, graphs: KernelGraphs, replays: Mapping[int, float], sectors: Mapping[int, float],
         global_latency: float, dram_cycles_per_sector: float, load_latencies: Mapping[int, float],
         vectors: list[VectorLoad], store_latency: float | None) -> dict[int, Op]:
    """Each reachable instruction's unit, hold time, latency and registers for the simulator;
    `load_latencies` overrides the global latency of loads that the cache model finds partly in L1; of
    each group of `vectors`, the first issues the vector load and the others cost no unit; a global store
    (or reduction, which returns nothing) is performed after `store_latency`, the L2's (None: as a load)."""
    body = cfg.function.body
    units = profile.units
    warp = profile.warp_size
    latency = native_latencies(profile)
    latency["global"] = latency["memory"] = global_latency
    classes = {i: graphs.classes[i] for b in cfg.blocks if not cfg.never_runs(b.id) for i in range(b.start, b.end)}
    tensor = tensor_slots(body, classes, profile)
    leaders = {v.members[0]: v.wavefronts for v in vectors}
    followers = {m for v in vectors for m in v.members[1:]}
    ops: dict[int, Op] = {}
    for i, cls in classes.items():
        ins = body[i]
        lat = load_latencies.get(i, float(latency.get(cls.latency, latency.get("misc", 1.0))))
        if store_latency is not None and ins.opcode in _POSTED and ins.space == "global":
            lat = store_latency  # performed once the write-back L2 holds it; DRAM sees it at eviction
        if cls.latency == "param" or (cls.type == "misc" and ins.space in _FREE_SPACES):
            ops[i] = Op(None, 0.0, 0.0, ins.registers_read, ins.registers_written)
            continue
        if i in followers:  # its data comes with its group's vector load
            ops[i] = Op(None, 0.0, lat, ins.registers_read, ins.registers_written, memory=True)
            continue
        res = cls.resource if units.get(cls.resource, 0) > 0 else "SP"
        hold = tensor[i] * warp if i in tensor else warp / units[res] * leaders.get(i, replays.get(i, 1.0))
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


def _sm_traces(resolver: BranchResolver, cfg: Cfg, loops: LoopForest, trips: Mapping[int, float], *,
               blocks: int, simulated: int, warps_per_block: int, sm_count: int
               ) -> tuple[list[tuple[int, WarpTrace]], int]:
    """Every warp of the first `simulated` blocks of the first SM (blocks 0, sm_count, 2 sm_count, ...: the
    block scheduler deals blocks to the SMs in turn) with its trace; warps that decide their branches alike
    share one trace object. Also the number of distinct traces."""
    shared: dict[tuple[tuple[int, str], ...], WarpTrace] = {}
    out: list[tuple[int, WarpTrace]] = []
    for r in range(simulated):
        cta = min(r * sm_count, blocks - 1)
        for w in range(warps_per_block):
            decisions = resolver.decide(cta, w)
            key = tuple(sorted(decisions.items()))
            trace = shared.get(key)
            if trace is None:
                trace = shared[key] = build_trace(cfg, loops, trips, decisions)
            out.append((r, trace))
    return out, len(shared)


def sm_cycles(retired: list[float], end: float, busy: float, *, resident: int, blocks_on_sm: int
              ) -> tuple[float, float]:
    """The busiest SM's cycles from a simulation of its first blocks, `end` being its last retirement and
    `busy` the cycles its busiest resource was held: where it ran them all, the later of the two (the work
    that posted stores leave behind still holds the DRAM share); else the blocks beyond them retire at the
    pace of the simulated blocks after the first round (the steady state, slots refilled as blocks retire),
    never faster than the busiest resource serves a block (`busy` per simulated block). Also that pace,
    cycles per block (0 when not needed)."""
    simulated = len(retired)
    if blocks_on_sm <= simulated or simulated <= resident:
        return max(end, busy), 0.0
    done = sorted(retired)
    pace = max((done[-1] - done[resident - 1]) / (simulated - resident), busy / simulated)
    return end + pace * (blocks_on_sm - simulated), pace


def warp_groups(traces: list[tuple[int, WarpTrace]], most: int, rounds: int = 1
                ) -> list[tuple[int, tuple[Item, ...], int]]:
    """The simulated entries: alike warps of one block (same trace) in groups, so that no more than about
    `most` entries run at a time, the `traces` being `rounds` rounds of resident blocks (`simulate_round`'s
    multiplicity); one entry per warp when the round is small."""
    size = max(1, math.ceil(len(traces) / max(1, rounds) / max(1, most)))
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
    camping = _camping(memory, profile, block, grid, resident * profile.sm_count)
    bytes_per_cycle_sm = bw * 1e3 / clock / profile.sm_count / camping
    replays, sectors = unit_replays(memory), _sectors(memory)
    l1 = l1_hit_latency(profile)
    reuse = l1_reuse(memory, cfg, loops, sector) if l1 is not None else []
    own = load_latency(reuse, l1, global_latency) if l1 is not None else {}
    resolver = BranchResolver(cfg, loops, symbolic, params, block, grid, warp)
    vectors = vector_shared_loads(cfg, symbolic, resolver)
    ops = _ops(cfg, profile, graphs, replays, sectors, global_latency, share * sector / bytes_per_cycle_sm, own,
               vectors, l2_hit)
    spans = {b: issue_order(dag, ops, cfg.function.body) for b, dag in graphs.dags.items()}
    # the simulated blocks: two rounds' worth (the first round and one in the steady state that follows it)
    simulated = min(blocks_on_sm, 2 * resident)
    traces, distinct = _sm_traces(resolver, cfg, loops, trip_map, blocks=blocks, simulated=simulated,
                                  warps_per_block=warps_per_block, sm_count=profile.sm_count)
    dispatch = float(profile.units.get("dispatch_units") or profile.units.get("warp_schedulers") or 1)
    most = int(const["window"]["simulated_warps"])
    sim = simulate_round(warp_groups(traces, most, math.ceil(simulated / resident)), ops, spans,
                         dispatch=dispatch, window=window, slots=resident)
    cycles, pace = sm_cycles(sim.retired, sim.last_retire, sim.busy, resident=resident, blocks_on_sm=blocks_on_sm)
    first_round = sorted(sim.retired)[min(resident, len(sim.retired)) - 1] if sim.retired else sim.last_retire
    rounds = math.ceil(blocks_on_sm / resident)
    by_rounds = sim.extrapolated > 0 and blocks_on_sm > resident
    if by_rounds:
        # a warp whose loop is fast-forwarded holds no unit meanwhile, so a block started beside it would find
        # the SM idle and run too fast: with fast-forwarded loops, rounds run apart (one round's time x rounds)
        first = [(r, t) for r, t in traces if r < resident]
        full, tail_blocks = divmod(blocks_on_sm, resident)
        one = simulate_round(warp_groups(first, most), ops, spans, dispatch=dispatch, window=window)
        tail = simulate_round(warp_groups([(r, t) for r, t in first if r < tail_blocks], most), ops, spans,
                              dispatch=dispatch, window=window) if tail_blocks else None
        per_round = max(one.last_retire, one.busy)
        cycles = per_round * full + (max(tail.last_retire, tail.busy) if tail is not None else 0.0)
        pace, first_round = 0.0, per_round
    dispatch_us = block_dispatch_us(profile, blocks, threads_per_block)
    kernel_us = max(cycles / clock, dispatch_us)
    cost = launch_cost(profile, kernel_us)
    divergent = len({i for _, t in traces for i, d in t.decisions.items() if d == DIVERGENT})
    assumed = len({i for _, t in traces for i, d in t.decisions.items() if d == ASSUMED})
    notes = [
        f"trace model: the busiest SM's first {simulated} of {blocks_on_sm} blocks ({resident} resident at a "
        f"time, a retiring block's slot refilled at once; {len(traces)} warps, {distinct} distinct trace(s)) "
        f"simulated event by event, the SM's work ending at its last retirement (the stores still in flight drain "
        "in the launch's completion, which the launch's fixed cost holds) or once its busiest unit or DRAM share "
        "has served every access" + (f", the other {blocks_on_sm - simulated} retiring at the pace of the "
                                       f"simulated blocks after the first round, no faster than that resource "
                                       f"serves them ({pace:.0f} cycles per block)"
                                       if blocks_on_sm > simulated and not by_rounds else "")
        + (f"; its loops being fast-forwarded, the time is one round's ({first_round:.0f} cycles) x {rounds} "
           "round(s), the last one as many blocks as are left" if by_rounds else "")
        + f"; loops simulate a window of {window[0]} iterations ({window[0] - 1} measured after one warm-up; 2 in "
        f"loops nested deeper than {window[1]}) and extrapolate the rest at the measured pace",
        f"trace model branches: {divergent} divergent (both paths run), {assumed} not decidable from thread/block "
        "indices and launch parameters (loaded data, loop iterations, unknown parameters): both paths assumed run",
        f"trace model memory: a global access waits {global_latency:.0f} cycles ({l2_latency:g}-cycle L2 hit plus "
        f"{share:.0%} of the launch's requested bytes from DRAM at {dram_latency:.0f} cycles; the share is the "
        f"kerncast model's DRAM bytes) and holds the SM's share of {bw:.4g} GB/s ({bw_note}) for that share"
        + (f", the share cut {camping:.2f}x by partition camping (one wave's concurrent accesses load the busiest "
           "DRAM partition that much over the even share; data/timing.toml [kerncast.partitions])"
           if camping > 1.0 else ""),
        *([reuse_note(reuse, l1, global_latency, profile)] if reuse and l1 is not None else []),
        *([f"trace model shared loads: {sum(len(v.members) for v in vectors)} scalar shared loads issue as "
           f"{len(vectors)} vector loads (consecutive aligned addresses in one block, merged as ptxas does)"]
          if vectors else []),
        cost.note,
        *([f"trace model launch: the blocks' dispatch ({dispatch_us:.3g} us, the launch-overhead line's growth with "
           f"the threads launched) outlasts the simulated SM's {cycles / clock:.3g} us and sets the kernel's time"]
          if dispatch_us > cycles / clock else []),
    ]
    return TraceResult(us=cost.fixed_us + kernel_us, round_cycles=first_round, rounds=rounds,
                       block_pace_cycles=pace, warps=len(traces), distinct_traces=distinct,
                       divergent_branches=divergent, assumed_branches=assumed, issued=sim.issued, notes=notes)
