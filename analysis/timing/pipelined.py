"""Kerncast's default time model: pipelined units, overlapped waves, a DRAM floor and an overlapped launch.

The thesis scheduler (`scheduler.py`) reserves a unit for the whole latency of every instruction and adds the
waves, the launch overhead and the memory penalties one after the other; measured kernels do not behave so.
This model keeps the thesis's abstract GPU (instruction classes, unit lane counts, resident blocks) and
changes how the parts combine, each change a physical property of the hardware:

* Parameter and constant-bank loads (`ld.param`, `ld.const`) are operands the SM reads from its constant
  cache: no load/store slot, no latency.
* A unit is held for its issue cycles only, ``ceil(threads / lanes)`` per instruction for the threads of a
  wave on one SM (times the replays of an uncoalesced or bank-conflicted access: sectors moved per sector
  needed, wavefronts per request); the SM issues at most `dispatch_units` warp instructions per clock.
  A tensor-core instruction holds the SM's tensor cores for its warp's product at the profile's rate
  (`matrix_ops.tensor_cycles`: FLOPs / FLOPs per SM per clock for its input type), not one lane-pass.
  From Volta on, integer work has pipes of its own beside the FP32 lanes (`datapaths.py`: an ALU pipe, integer
  multiply-adds on the FP32 pipe, adds and moves on either), and the logic ptxas merges into one LOP3 or into
  a compare issues nothing.
  Dependants wait for the latency: the longest dependence chain of one warp, with native (SASS) latencies
  from microbenchmark papers (`data/timing.toml` [kerncast.latency]). With many warps resident the
  schedulers hide that chain behind other warps' work, so a wave takes the larger of the two, not their sum.
* Waves overlap: the first wave on an SM pays its latency chain; the blocks after it start as blocks retire,
  so they add only their busiest resource's cycles, or, when that is shorter, their latency chain shared by
  the resident blocks (Little's law: `resident` blocks in flight per chain). Global loads wait the loaded
  latency the thesis measured against the threads launched (its Table 3.3 microbenchmark).
* Barriers hold a block's warps together: each waits at a barrier until the block's other warps have issued
  what comes before it, so a basic block a barrier follows takes the longer of its chain and the issue of
  all the block's warps through it, and a block stays resident for the sum of those along its longest path
  (basic blocks with no barrier after them add their chain only: their warps drift apart and hide each
  other's latency). The Little's-law and whole-wave rules below take that stay for the chain.
* Waves are whole: an SM runs at most `resident` blocks at once and none finishes before its chain, so
  ``blocks`` blocks take at least ``ceil(blocks / resident)`` chains (the tail effect of a last, partial wave;
  Little's law alone would let a partial wave cost a fraction of a chain).
* A barrier waits for the stores before it: `__syncthreads()` returns only once every global and shared
  memory access made before it is visible to the block's threads (CUDA C++ Programming Guide, synchronization
  functions), so a block from which a barrier or fence is reachable ends, for the chain, when its stores are
  performed (their latency), not when they are issued. Elsewhere a store costs its issue only.
* A memory floor: DRAM bytes / achievable bandwidth (on a GPU whose read-only, half-written and write-only
  streams were measured, that of the launch's share of written bytes, `loaded_latency.stream_bandwidth_gbs`). The
  bytes are the distinct bytes the launch touches (`footprint.py`) when a wave's working set fits in L2; when it
  does not, the share of the wave's re-reads that the L2 cannot hold goes to DRAM too; a load the L1 serves
  (`cache_model.py`) is no re-read of the L2. Never more than the requested sectors (no reuse at all). Each SM
  draws at most its even share of the bandwidth (Hong & Kim's per-SM memory queue), so a launch with fewer blocks
  than SMs pulls ``busy SMs / SMs`` of it: one SM's requests leave it one after another, and an idle SM issues
  none.
* DRAM latency under load: a block holds its DRAM bytes in flight only for its loads' share of its stay (a
  reduction loads, then runs a tree of barriers without loads), and the latency grows as the bandwidth fills. On a
  GPU whose bandwidth against bytes in flight per SM was measured (`loaded_latency.py`), every SM busy, the loads
  wait the latency at which the resident blocks' bytes in flight and their stay agree, and the stay is taken at
  that latency where it is longer: blocks that keep too few bytes in flight stay below the bandwidth floor.
* The launch: its fixed cost is paid once (`launch_cost.py`: the GPU's launch latency and the host's launch
  time that a short kernel cannot hide, or the thesis's event-timed intercept on its GPUs); its per-thread
  part (block dispatch) overlaps the kernel, so the time is ``fixed + max(kernel, dispatch)``.

Every call is O(instructions): loops multiply per-iteration costs, waves multiply per-wave costs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.deps import SYNC_OPCODES, DepGraph
from kerncast.analysis.isa import InstrClass, division_costs, ieee_expansion, is_runtime_division
from kerncast.analysis.loops import block_weights, cfg_longest_path
from kerncast.analysis.matrix_ops import matrix_op, tensor_cycles
from kerncast.analysis.ptx.model import Instruction
from kerncast.analysis.timing.cache_model import L1Reuse, l1_hit_latency, load_latency, reuse_note
from kerncast.analysis.timing.constants import gpu_error_band, time_error_band, timing_constants
from kerncast.analysis.timing.datapaths import busy_cycles, pipe_slot
from kerncast.analysis.timing.deferred import DeferredLoads, deferred_loads
from kerncast.analysis.timing.footprint import Footprint, reuse_extents
from kerncast.analysis.timing.launch_cost import block_dispatch_us, launch_cost
from kerncast.analysis.timing.loaded_latency import LoadCurve, consistent_latency, load_curve, stream_bandwidth_gbs
from kerncast.analysis.timing.local_memory import LocalTraffic

MODEL = "kerncast"
_FREE_SPACES = frozenset({"param", "const"})
_STORES = frozenset({"st", "red"})
#: the latency classes of global loads, whose latency the loaded DRAM latency sets
_GLOBAL_LATENCY = frozenset({"global", "memory"})


@dataclass(slots=True)
class PipelinedResult:
    """The kerncast model's answer and its parts (microseconds unless named otherwise)."""

    us: float
    low_us: float
    high_us: float
    compute_us: float
    memory_us: float
    launch_us: float
    first_wave_cycles: float
    per_block_cycles: float
    latency_chain_cycles: float
    dram_bytes: float
    dram_bytes_cold: float
    bottleneck: str
    busy: dict[str, float] = field(default_factory=dict)
    dispatch_us: float = 0.0  # the launch's per-thread part (block dispatch), overlapped with the kernel
    host_us: float = 0.0  # the part of `launch_us` that is the host's launch call, not the GPU's time
    notes: list[str] = field(default_factory=list)


def native_latencies(profile: Any) -> dict[str, float]:
    """The latency rows for the dependence chain: the architecture's native rows over the profile's own."""
    table = dict(profile.latency)
    arch_rows = timing_constants()["kerncast"].get("latency", {}).get(profile.arch, {})
    for name, value in arch_rows.items():
        if name != "source":
            table[name] = float(value)
    table["param"] = 0.0
    return table


def achievable_bandwidth_gbs(profile: Any) -> tuple[float, str]:
    """DRAM bandwidth a streaming kernel reaches: a measurement of this GPU, else peak x the measured share."""
    const = timing_constants()["kerncast"]
    measured = const.get("bandwidth", {}).get(profile.id)
    if isinstance(measured, int | float):
        return float(measured), f"{measured:g} GB/s measured ({const['bandwidth']['source'].split(',')[0]})"
    share = float(const["achievable_bandwidth_fraction"])
    return profile.mem_bandwidth_gbs * share, (f"{share:.0%} of the {profile.mem_bandwidth_gbs:g} GB/s peak "
                                               "(median measured share of four GPUs)")


def _is_free(ins: Instruction, cls: InstrClass) -> bool:
    return cls.latency == "param" or (cls.type == "misc" and ins.space in _FREE_SPACES)


@dataclass(slots=True)
class _BlockCost:
    """Per basic block: unit cycles per thread of a wave (`per_thread`), warp issues, and one warp's chain."""

    per_thread: dict[str, float]
    warp_instructions: float
    chain: float
    drained: float  # the chain until the block's stores are performed, for blocks a barrier follows


def tensor_slots(body: Any, classes: Mapping[int, InstrClass], profile: Any) -> dict[int, float]:
    """Instruction index -> the SM cycles per thread a matrix instruction holds its unit: its product at the
    profile's tensor-core rate, or, where the GPU has no rate for its input type, on the SP lanes at one
    multiply-add each per clock (as the roofline counts it)."""
    out: dict[int, float] = {}
    for i, cls in classes.items():
        op = matrix_op(body[i]) if cls.resource == "TENSOR" else None
        if op is not None:
            cycles = tensor_cycles(profile, op)
            if cycles is None:
                cycles = op.flops_per_warp / (2.0 * profile.units["SP"])
            out[i] = cycles / profile.warp_size
    return out


def expansion_slots(body: Any, classes: Mapping[int, InstrClass]) -> dict[int, dict[str, int]]:
    """Instruction index -> the issue slots per unit of an instruction ptxas expands into several: an integer
    `div`/`rem` by a run-time value (`data/int_division.toml`: no GPU has an integer divider, the reciprocal
    estimate and correction steps issue on the integer and FP32 lanes), and an IEEE-rounded float divide, square
    root or reciprocal (`data/ieee_expansion.toml`: an SFU estimate and refinement steps, FP64 ones on the FP64
    lanes). An instruction a gain re-charges as a cheaper class (a shift or mask) is not expanded."""
    n, _ = division_costs()
    out: dict[int, dict[str, int]] = {}
    for i, cls in classes.items():
        if cls.latency == "divs" and is_runtime_division(body[i]):
            out[i] = {"SP": n}
        elif cls.type == "compute" and (slots := ieee_expansion(body[i])) is not None:
            out[i] = slots
    return out


def _block_cost(dag: DepGraph, body: Any, classes: Mapping[int, InstrClass], units: Mapping[str, int],
                latency: Mapping[str, float], replays: Mapping[int, float], warp: int,
                tensor: Mapping[int, float], own: Mapping[int, float] | None = None,
                expand: Mapping[int, Mapping[str, int]] | None = None,
                deferred: DeferredLoads | None = None, folded: frozenset[int] = frozenset()) -> _BlockCost:
    """One basic block's cost; `own` holds the latencies of single instructions that differ from their class's
    (loads that hit in L1 for part of their executions, `cache_model.py`), `expand` the instructions that issue
    as several, per unit (`expansion_slots`), `deferred` the loads whose value a later block waits for and the
    instructions that wait (`deferred.py`), `folded` those ptxas merges into a neighbour (`datapaths.py`): they
    take no slot and pass their inputs' times on."""
    per_thread: dict[str, float] = {}
    ready: dict[int, float] = {}
    chain = drained = 0.0
    count = 0.0
    # class (by identity: `classify` hands out one object per mnemonic) -> (unit, its lanes, latency)
    per_class: dict[int, tuple[str, int, float]] = {}
    preds = dag.pred_ids()
    ready_at = ready.get
    for v in dag.nodes:
        ins, cls = body[v], classes[v]
        if _is_free(ins, cls):
            ready[v] = 0.0
            continue
        if v in folded:
            ready[v] = _latest(preds[v], ready_at)
            continue
        found = per_class.get(id(cls))
        if found is None:
            slot = pipe_slot(cls, units)
            if slot is None:
                res = cls.resource if units.get(cls.resource, 0) > 0 else "SP"
                slot = (res, float(units[res]))
            found = per_class[id(cls)] = (*slot, float(latency.get(cls.latency, latency.get("misc", 1.0))))
        res, lanes, cycles = found
        if own and v in own:
            cycles = own[v]
        slot = tensor.get(v)
        steps = expand.get(v) if expand else None
        if steps:
            for unit, k in steps.items():
                unit = unit if units.get(unit, 0) > 0 else "SP"
                per_thread[unit] = per_thread.get(unit, 0.0) + k / units[unit]
                count += k
        else:
            per_thread[res] = per_thread.get(res, 0.0) + (replays.get(v, 1.0) / lanes if slot is None else slot)
            count += 1.0
        # the latest of the predecessors' results (all earlier in the block, so all in `ready`), else 0
        start = _latest(preds[v], ready_at)
        if deferred is not None and v in deferred.waits:
            start = max(start, deferred.waits[v])  # an operand loaded in an earlier block
        ready[v] = start + cycles
        # a store has no result to wait for, nor a load whose value a later block reads: the warp goes on once
        # it is issued
        later = deferred is not None and v in deferred.loads
        chain = max(chain, ready[v] if ins.opcode not in _STORES and not later else start + 1.0)
        drained = max(drained, start + 1.0 if later else ready[v])  # its wait is the using block's
    return _BlockCost(per_thread, count, chain, max(chain, drained))


def _latest(preds: tuple[int, ...], ready_at: Callable[[int, float], float]) -> float:
    """The latest of the predecessors' results, 0 without one (every result is a time from the block's start,
    never negative, so a predecessor with none yet counts as 0)."""
    if len(preds) == 1:
        return ready_at(preds[0], 0.0)
    return max([ready_at(u, 0.0) for u in preds], default=0.0)


def _skipped_by_warps(cost: _BlockCost, share: float) -> _BlockCost:
    """A basic block's cost when only `share` of the warps run it (the others' lanes all fail its guard and
    the warp branches past it): its issue slots and warp instructions per warp shrink by that share, averaged
    over the warps; the chain of a warp that does run it is unchanged."""
    share = min(1.0, max(0.0, share))
    return _BlockCost({r: x * share for r, x in cost.per_thread.items()}, cost.warp_instructions * share,
                      cost.chain, cost.drained)


def _block_issue(cost: _BlockCost, threads: int, warps: int, dispatch: float, units: Mapping[str, int]) -> float:
    """Cycles the busiest unit of one SM (or its dispatch, counted as the model's busy line counts it) takes
    to issue one basic block for the `threads` (`warps`) of a block."""
    return max([x * threads for x in busy_cycles(cost.per_thread, units).values()]
               + [cost.warp_instructions * warps / dispatch])


def _chain_and_stay(cfg: Cfg, loops: Any, costs: Mapping[int, _BlockCost], waits: set[int],
                    trips: Mapping[int, float], warps_per_block: int, warp: int, dispatch: float,
                    units: Mapping[str, int], divergent: Mapping[int, float] | None = None) -> tuple[float, float]:
    """(one warp's latency chain, the block's stay) along the longest path, where a branch that splits a warp's
    lanes (`divergent`: block -> the share of warps it splits) runs both its sides one after the other. A barrier
    makes every warp of a block wait for the others: a basic block a barrier follows takes the longer of its
    chain and the issue of all the block's warps through it, one basic block after another."""
    chain = cfg_longest_path(cfg, loops, {b: c.drained if b in waits else c.chain for b, c in costs.items()}, trips,
                             divergent)
    stay = max(chain, cfg_longest_path(
        cfg, loops, {b: max(c.drained, _block_issue(c, warps_per_block * warp, warps_per_block, dispatch, units))
                     if b in waits else c.chain for b, c in costs.items()}, trips, divergent))
    return chain, stay


def _loaded_stay(curve: LoadCurve, chain_and_stay_at: Callable[[float], tuple[float, float]], latency: float,
                 stay: float, resident: int, bytes_per_block: float,
                 clock_mhz: float) -> tuple[float, tuple[float, float]]:
    """(the DRAM load latency in ns the bytes in flight imply, (one warp's chain, the block's stay) in cycles at
    that latency).

    The stay is linear in the load latency along its longest path (each load on it adds the latency once), so two
    evaluations give its slope and the fixed point is searched on that line (`loaded_latency.consistent_latency`);
    the stay is then computed once more at the fixed point, where the longest path may be another."""
    step = max(latency, 1.0)
    slope = (chain_and_stay_at(latency + step)[1] - stay) / step
    ns = 1e3 / clock_mhz  # nanoseconds per cycle
    found = consistent_latency(curve, lambda lat_ns: (stay + slope * (lat_ns / ns - latency)) * ns, resident,
                               bytes_per_block)
    return found, chain_and_stay_at(found / ns)


def blocks_before_a_barrier(cfg: Cfg) -> set[int]:
    """Basic blocks from which a barrier or fence is reachable through their successors: the stores such a
    block issues must be performed before that barrier lets the warp go on."""
    body = cfg.function.body
    preds: dict[int, list[int]] = {}
    for i, b in enumerate(cfg.blocks):
        for s in b.succs:
            preds.setdefault(s, []).append(i)
    todo = [p for i, b in enumerate(cfg.blocks)
            if any(ins.opcode in SYNC_OPCODES for ins in body[b.start:b.end]) for p in preds.get(i, [])]
    found: set[int] = set()
    while todo:
        b = todo.pop()
        if b not in found:
            found.add(b)
            todo.extend(preds.get(b, []))
    return found


def predict_pipelined(cfg: Cfg, loops: Any, profile: Any, *, dags: Mapping[int, DepGraph],
                      classes: Mapping[int, InstrClass], trips: Mapping[int, float], blocks: int,
                      threads_per_block: int, blocks_per_sm: int, grid: tuple[int, int, int],
                      replays: Mapping[int, float], footprint: Footprint | None,
                      requested: tuple[float, float] | None, l1: list[L1Reuse] | None = None,
                      l1_hit_bytes: float = 0.0, dead: frozenset[int] = frozenset(),
                      warp_share: Mapping[int, float] | None = None,
                      l1_capacity: float | None = None, local: LocalTraffic | None = None,
                      divergent: Mapping[int, float] | None = None,
                      folded: frozenset[int] = frozenset()) -> PipelinedResult:
    """Predict one launch with the kerncast model (see the module docstring).

    `replays` maps an instruction index to its unit passes per warp (1 when ideal); `requested` is the bytes
    the launch's global requests move with no reuse at all: (of accesses in `footprint`, of the others), and
    `l1_hit_bytes` the part of the first that the L1 serves (`cache_model.py`), which never reaches the L2.
    `dead` holds the basic blocks no thread of this launch reaches (`MemoryAnalysis.dead_blocks`): they issue
    nothing and wait for nothing. `warp_share` maps a basic block to the share of warps that run it
    (`MemoryAnalysis.warp_share`): a warp none of whose lanes passes its guard skips it, so its issue cycles
    and warp instructions count only for that share of the warps; its latency chain stays whole.
    `l1_capacity` is the L1 bytes one resident block has, which the notes name; `local` the launch's local
    memory traffic (`local_memory.py`), whose DRAM bytes join the global ones; `divergent` maps a basic block
    whose branch splits a warp's lanes to the share of warps it splits (`MemoryAnalysis.branches`): such a warp
    runs the branch's sides one after the other, so its chain adds them up. `folded` holds the instructions
    ptxas merges into a neighbour on this GPU (`datapaths.folded_instructions`): they issue nothing.
    """
    const = timing_constants()["kerncast"]
    warp = profile.warp_size
    units = profile.units
    latency = native_latencies(profile)
    # global loads wait the loaded latency the thesis measured against threads launched (Table 3.3 and its
    # rescaled copies in the profiles), not the unloaded pointer-chase figure
    latency["global"] = latency["memory"] = float(profile.global_latency(blocks * threads_per_block))
    blocks_on_sm = math.ceil(blocks / profile.sm_count)
    resident = max(1, min(blocks_per_sm, blocks_on_sm))
    dram, cold, mem_notes = _dram_bytes(profile, footprint, requested, blocks, resident, const, l1_hit_bytes)
    if local is not None:
        dram, cold = dram + local.dram, cold + local.dram
        mem_notes.append(local.note)
    written = _dram_written(footprint, requested, profile, const)
    from_dram, l2_hit, reach = _l2_share(profile, dram, requested, l1_hit_bytes, written)
    dram_latency = latency["global"]
    latency["global"] = latency["memory"] = miss = _miss_at(from_dram, l2_hit, dram_latency)
    l1_hit = l1_hit_latency(profile) if l1 else None
    own = load_latency(l1 or [], l1_hit, miss) if l1_hit is not None else {}
    body = cfg.function.body
    tensor = tensor_slots(body, classes, profile)
    expand = expansion_slots(body, classes)

    deferred = deferred_loads(cfg, loops, dags, classes)

    def block_costs(lat: Mapping[str, float], own_lat: Mapping[int, float], kept: Mapping[int, _BlockCost] | None = None
                    ) -> tuple[dict[int, _BlockCost], dict[int, _BlockCost]]:
        """Every basic block's cost with these latencies (the loaded DRAM latency below recomputes them), and the
        same before the warps that skip a block are taken out of it; `kept` holds such costs of blocks that read
        no latency these latencies change (taken as they are)."""
        later_use = deferred.at(lambda v: own_lat.get(v, lat.get(classes[v].latency, lat["global"])))
        raw = {b: kept[b] if kept is not None and b in kept else
               _block_cost(dags[b], body, classes, units, lat, replays, warp, tensor, own_lat, expand, later_use,
                           folded)
               if b not in dead else _BlockCost({}, 0.0, 0.0, 0.0) for b in dags}
        out = dict(raw)
        for b, share in (warp_share or {}).items():
            if b in out:
                out[b] = _skipped_by_warps(out[b], share)
        return out, raw

    costs, first_raw = block_costs(latency, own)
    weights = block_weights(cfg, loops, trips, dead)
    per_thread: dict[str, float] = {}
    warp_insts = 0.0
    for b, c in costs.items():
        w = weights.get(b, 0.0)
        for r, x in c.per_thread.items():
            per_thread[r] = per_thread.get(r, 0.0) + x * w
        warp_insts += c.warp_instructions * w
    waits = blocks_before_a_barrier(cfg)
    dispatch = float(units.get("dispatch_units") or units.get("warp_schedulers") or 1)
    warps_per_block = math.ceil(threads_per_block / warp)
    chain, stay = _chain_and_stay(cfg, loops, costs, waits, trips, warps_per_block, warp, dispatch, units,
                                  divergent)
    busy_per_block = {r: x * warps_per_block * warp for r, x in busy_cycles(per_thread, units).items()}
    busy_per_block["dispatch"] = warp_insts * warps_per_block / dispatch
    per_block = max(busy_per_block.values(), default=0.0)
    curve = load_curve(profile) if from_dram > 0.0 and blocks >= profile.sm_count and dram > 0.0 else None
    loaded_ns = None
    if curve is not None:
        # only the blocks that read a global load's latency change with the DRAM latency: a load of that latency
        # class, a load whose L1 hits give it its own latency, a use of a deferred load; the others are kept
        kept = {b: c for b, c in first_raw.items()
                if not any(classes[v].latency in _GLOBAL_LATENCY or v in own or v in deferred.uses
                           for v in dags[b].nodes)}

        def chain_and_stay_at(dram_cycles: float) -> tuple[float, float]:
            global_latency = _miss_at(from_dram, l2_hit, dram_cycles)
            lat = dict(latency, **{"global": global_latency, "memory": global_latency})
            own_lat = load_latency(l1 or [], l1_hit, global_latency) if l1_hit is not None else {}
            return _chain_and_stay(cfg, loops, block_costs(lat, own_lat, kept)[0], waits, trips, warps_per_block,
                                   warp, dispatch, units, divergent)
        loaded_ns, (loaded_chain, loaded_stay) = _loaded_stay(curve, chain_and_stay_at, dram_latency, stay,
                                                              resident, dram / blocks, profile.core_clock_mhz)
        if loaded_stay > stay:
            chain, stay = max(chain, loaded_chain), loaded_stay
        else:
            loaded_ns = None
    first = max(per_block * resident, stay)
    # Little's law: a block's stay (its latency chain, and the issue its barriers wait for) hides only behind
    # the other resident blocks, so blocks retire at most `resident` per stay
    later = max(per_block, stay / resident)
    # ...and never less than whole waves of stays: a partial last wave still takes a full one
    compute_cycles = max(first + later * (blocks_on_sm - resident), math.ceil(blocks_on_sm / resident) * stay)
    clock = profile.core_clock_mhz
    compute_us = compute_cycles / clock

    bw, bw_note = achievable_bandwidth_gbs(profile)
    write_share = written / dram if dram > 0.0 else 0.0
    stream = stream_bandwidth_gbs(profile, write_share)
    if stream is not None:
        bw, bw_note = stream, (f"{write_share:.0%} of the bytes written: the measured streaming bandwidth of this "
                               "GPU for that mix of reads and writes, data/timing.toml [kerncast.loaded_latency]")
    camping = footprint.camping if footprint is not None else 1.0
    busy_sms = min(profile.sm_count, blocks)
    # an SM's memory pipeline draws at most its even share of the DRAM bandwidth (Hong & Kim's per-SM DRAM
    # queue, the departure delay between one SM's requests): a launch that keeps fewer SMs busy pulls less
    bw_busy = bw * busy_sms / profile.sm_count
    memory_us = dram * camping / (bw_busy * 1e3)  # GB/s = 1e3 bytes per microsecond
    memory_cold_us = cold * camping / (bw_busy * 1e3)
    if busy_sms < profile.sm_count:
        mem_notes.append(f"busy SMs: {busy_sms} of {profile.sm_count} SMs run a block, and an SM draws at most "
                         f"its even share of the DRAM bandwidth, so the launch reaches {bw_busy:.4g} GB/s")
    if camping > 1.0:
        mem_notes.append(f"partition camping: one wave's concurrent accesses load the busiest DRAM partition "
                         f"{camping:.2f}x the even share (data/timing.toml [kerncast.partitions]), so the DRAM "
                         "time grows by that factor")

    dispatch_us = block_dispatch_us(profile, blocks, threads_per_block)
    kernel = max(compute_us, memory_us, dispatch_us)
    cost = launch_cost(profile, kernel)
    fixed = cost.fixed_us
    us = fixed + kernel
    high = fixed + max(compute_us + chain / clock, memory_cold_us, dispatch_us) + dispatch_us
    low = fixed + max(per_block * blocks_on_sm / clock, memory_us)
    parts = {"compute": compute_us, "DRAM bandwidth": memory_us, "block dispatch": dispatch_us}
    bottleneck = max(parts, key=lambda k: parts[k])
    if bottleneck == "compute" and busy_per_block:
        unit = max(busy_per_block, key=lambda r: busy_per_block[r])
        latency_bound = later > per_block if blocks_on_sm > resident else chain > per_block * resident
        bottleneck = (f"compute ({unit})" if not latency_bound else
                      "DRAM latency under load (too few bytes in flight to fill the bandwidth)" if loaded_ns else
                      "latency chain (too few warps to hide it)")
    basis = ("range: best case all latency hidden and the warm-cache floor; worst case no overlap of the latency "
             "chain with the busiest unit, a cold cache and the launch's dispatch added")
    low, high, basis = _widened(us, low, high, basis, profile.id)
    waited = loaded_ns * clock / 1e3 if loaded_ns else dram_latency  # the DRAM latency the loads wait
    notes = [
        "kerncast model: parameter/constant loads cost no unit slot; units are held for their issue cycles "
        f"and dependants wait for native latencies ({profile.arch} rows of data/timing.toml); waves overlap "
        "after the first, but each SM takes at least whole waves of latency chains; a barrier waits until the "
        "stores before it are performed",
        cost.note,
        *([f"divergent branches: a warp whose lanes a branch splits runs both its sides one after the other, so "
           f"its latency chain adds them up ({len(divergent)} such branches, by the share of warps each splits)"]
          if divergent else []),
        f"DRAM floor: {dram / 1e6:.3g} MB at {bw:.4g} GB/s ({bw_note})",
        *([note] if (note := _l2_note(profile, from_dram, l2_hit, reach, max(0.0, dram - written), waited)) else []),
        *([reuse_note(l1 or [], l1_hit, _miss_at(from_dram, l2_hit, waited), profile, l1_capacity)]
          if l1 and l1_hit is not None else []),
        *([f"DRAM latency under load: {resident} resident blocks per SM, each holding its "
           f"{dram / blocks / 1e3:.3g} kB for its loads' share of its stay, keep the DRAM at the point of "
           f"{profile.id}'s measured bandwidth-against-bytes-in-flight curve where a load waits "
           f"{loaded_ns * profile.core_clock_mhz / 1e3:.0f} cycles (data/timing.toml [kerncast.loaded_latency]); "
           f"a block stays {stay:.0f} cycles"] if loaded_ns else []),
        *mem_notes,
        basis,
    ]
    return PipelinedResult(us=us, low_us=min(low, us), high_us=max(high, us), compute_us=compute_us,
                           memory_us=memory_us, launch_us=fixed, first_wave_cycles=first,
                           per_block_cycles=per_block, latency_chain_cycles=chain, dram_bytes=dram,
                           dram_bytes_cold=cold, bottleneck=bottleneck, busy=busy_per_block, notes=notes,
                           dispatch_us=dispatch_us, host_us=cost.host_us)


def _widened(us: float, low: float, high: float, basis: str, profile_id: str) -> tuple[float, float, str]:
    """The range widened to the model's measured error spread: the one measured on this GPU where there is one
    (`validation/<id>/`), else the one over the validation tables. The point estimate stays where it is."""
    band = gpu_error_band(profile_id)
    if band:
        where = f"{band.get('rows', '?')} launches measured on this GPU, median {band.get('median_ratio', '?'):g}"
    else:
        band = time_error_band()
        where = f"{band.get('rows', '?')} validation rows"
    if not (band.get("low_ratio") and band.get("high_ratio")):
        return low, high, basis
    return (min(low, us * float(band["low_ratio"])), max(high, us * float(band["high_ratio"])),
            f"{basis}; widened to the model's measured error spread (measured/predicted {band['low_ratio']:g} to "
            f"{band['high_ratio']:g}, 10th-90th percentile over {where})")


def _dram_bytes(profile: Any, fp: Footprint | None, requested: tuple[float, float] | None, blocks: int,
                resident: int, const: Mapping[str, Any], l1_hit_bytes: float = 0.0) -> tuple[float, float, list[str]]:
    """(DRAM bytes with a warm L2, with a cold one, notes) from the footprint and the requested sectors.

    A wave's re-reads that the L2 cannot hold go to DRAM, but only those that reach the L2: the requests the L1
    serves (`l1_hit_bytes`, a thread's next element in the sector its previous iteration brought in) are not
    re-reads of the L2 at all."""
    if fp is None or requested is None:
        return 0.0, 0.0, ["no memory analysis: no DRAM floor"]
    covered, uncovered = requested
    waves = max(1, math.ceil(blocks / max(1, resident * profile.sm_count)))
    req_wave = max(0.0, covered - l1_hit_bytes) / waves
    ws = max(fp.per_wave, 1.0)
    l2 = warm_l2_bytes(profile)
    per_wave = ws + _l2_missed_rereads(fp, req_wave, ws, l2, min(blocks, resident * profile.sm_count))
    cold = min(covered, max(fp.total, per_wave * waves)) + uncovered
    warm_l2 = bool(const.get("warm_l2", False))
    warm = _warm_dram_bytes(fp, uncovered, cold, l2) if warm_l2 else cold
    split = ("" if l2 >= float(profile.l2_bytes) else
             f", the share of a {float(profile.l2_bytes) / 1e6:.3g} MB L2 in {l2_partitions(profile)[0]} partitions "
             "that holds what every SM reads (data/timing.toml [kerncast.l2_partitions])")
    notes = [f"distinct global bytes {fp.distinct / 1e6:.3g} MB, {fp.total / 1e6:.3g} MB of DRAM traffic with no "
             f"reuse beyond them (working set per wave {ws / 1e6:.3g} MB against {l2 / 1e6:.3g} MB of L2{split}); "
             f"requested with no reuse {(covered + uncovered) / 1e6:.3g} MB"]
    if warm_l2:
        notes.append("cache state: warm (inputs written or read just before the launch): inputs that fit in the "
                     "L2 are found there, inputs larger than the L2 are streamed from DRAM again (an LRU cache "
                     "keeps nothing of a cyclic sweep larger than itself); the L2 is write-back, so written bytes "
                     "stay there when the footprint fits and all reach DRAM when it does not (the dirty lines a "
                     f"launch leaves are evicted by the next) ({fp.written / 1e6:.3g} MB written); the cold-cache "
                     "time is the top of the range")
    if uncovered:
        notes.append("some global addresses are not affine (or are tensor-core tiles): their requests count as "
                     "DRAM traffic in full")
    return warm, cold, notes


def _l2_missed_rereads(fp: Footprint, req_wave: float, ws: float, l2: float, wave_blocks: int) -> float:
    """The bytes a wave reads again from DRAM beyond its distinct bytes `ws`: of its re-reads (`req_wave - ws`,
    requests that reach the L2), those a block makes of what other blocks of the wave read are re-read at the
    same iteration of the same loop (the wave's blocks run the loop at one pace), within the bytes the wave
    touches in one iteration (`fp.per_step`); those a block makes of its own bytes, over its run, within what
    the wave touches over its run. Each kind misses in the L2 by the share of its distance the L2 cannot hold
    (an LRU cache keeps the last `l2` bytes)."""
    rereads = max(0.0, req_wave - ws)
    if rereads <= 0.0 or ws <= l2:
        return 0.0
    per_step, per_block = reuse_extents(fp)
    cross = min(rereads, max(0.0, wave_blocks * per_block - ws))
    own = rereads - cross
    return own * (1.0 - l2 / ws) + cross * max(0.0, 1.0 - l2 / max(per_step, 1.0))


def _dram_written(fp: Footprint | None, requested: tuple[float, float] | None, profile: Any,
                  const: Mapping[str, Any]) -> float:
    """The DRAM floor's written bytes (see `_warm_dram_bytes`): none when a warm L2 keeps the footprint."""
    if fp is None or requested is None:
        return 0.0
    if const.get("warm_l2", False) and fp.distinct + requested[1] <= warm_l2_bytes(profile):
        return 0.0
    return fp.written


def _warm_dram_bytes(fp: Footprint, uncovered: float, cold: float, l2: float) -> float:
    """DRAM bytes during the kernel with the inputs warm in a write-back L2.

    Reads: an input set that fits in the L2 was left there by whatever wrote or read it last; a larger one is
    swept through an LRU cache that keeps none of it, so it costs its cold traffic. Writes: the L2 is
    write-back (the CUDA programming guide's L2 is the point where all DRAM traffic is cached; dirty lines go
    to DRAM when evicted). A footprint that fits keeps its written lines there, and a launch that runs again
    rewrites them in place: no DRAM writes. A larger footprint evicts every line it wrote but the last `l2`
    bytes' share, and those, left dirty, are evicted by the next launch's sweep: in the steady state of
    repeated launches (how kernels run and are timed) each launch pays for as many written bytes as it
    writes. On an H100, counting only the share evicted within the launch put streaming kernels 10-20% further
    below their measured times than counting them all.
    """
    reads = fp.total - fp.written + uncovered
    read_dram = 0.0 if reads <= l2 else max(0.0, cold - fp.written)
    touched = fp.distinct + uncovered
    write_dram = fp.written if touched > l2 else 0.0
    return min(cold, read_dram + write_dram)


def l2_partitions(profile: Any) -> tuple[int, float | None]:
    """(L2 partitions, far-partition hit latency in cycles) of the GPU: (1, None) for a unified L2."""
    table = timing_constants()["kerncast"].get("l2_partitions", {})
    count = table.get("count", {}).get(profile.cc)
    far = table.get("far_latency", {}).get(profile.cc)
    if not isinstance(count, int) or count < 2:
        return 1, None
    return count, float(far) if isinstance(far, int | float) else None


def warm_l2_bytes(profile: Any) -> float:
    """The bytes of a launch's data the L2 holds between launches: all of it, or on a partitioned L2, whose
    halves each cache what their own SMs use, one partition's share (data every SM reads is held twice)."""
    count, _ = l2_partitions(profile)
    return float(profile.l2_bytes) / count


def _l2_share(profile: Any, dram: float, requested: tuple[float, float] | None, l1_hit_bytes: float,
              written: float = 0.0) -> tuple[float, float | None, float]:
    """(the share of the bytes the L1 does not serve that come from DRAM, the L2 hit latency in cycles or None,
    the load bytes that reach the L2).

    A global load the L1 does not serve is served by the L2 unless its sector is one of the launch's DRAM
    bytes: of the bytes the launch's loads bring to the L2 (all it requests but what the L1 serves), the DRAM
    floor's read bytes come from DRAM, each once, and every other request finds its sector in the L2, left there
    by an earlier request of the launch or, with a warm cache, by what ran before it (`_warm_dram_bytes`). Such
    a load waits the L2 hit latency (pointer-chase microbenchmarks per architecture, `data/timing.toml`
    [kerncast.l2_hit_latency]) for the hits and the DRAM latency for the rest, in that proportion (`_miss_at`).
    The written lines' part of the DRAM bytes (`written`) is no load's miss and is left out of both sides.
    Without an L2 figure or a memory analysis every load waits the DRAM latency (share 1)."""
    hit = l2_hit_cycles(profile)
    if hit is None or requested is None:
        return 1.0, None, 0.0
    reach = sum(requested) - l1_hit_bytes - written
    share = min(1.0, max(0.0, dram - written) / reach) if reach > 0 else 1.0
    return (1.0, None, reach) if share >= 0.99 else (share, hit, reach)


def _miss_at(share: float, hit: float | None, dram_latency: float) -> float:
    """The mean latency of a global load the L1 does not serve, for a DRAM latency (`_l2_share`)."""
    return dram_latency if hit is None else share * dram_latency + (1.0 - share) * hit


def _l2_note(profile: Any, share: float, hit: float | None, reach: float, dram_read: float,
             dram_latency: float) -> str | None:
    """The assumption a prediction whose loads find part of their sectors in the L2 states."""
    if hit is None:
        return None
    return (f"global loads the L1 does not serve: {1.0 - share:.0%} of the bytes they ask of the L2 are found there "
            f"({dram_read / 1e6:.3g} MB read from DRAM for {reach / 1e6:.3g} MB of loads reaching the L2), so they "
            f"wait the {hit:g}-cycle L2 hit latency ({profile.arch} row of data/timing.toml "
            "[kerncast.l2_hit_latency], averaged with the far partition's where the L2 has two) for that share "
            f"and the DRAM latency of {dram_latency:.4g} cycles for the rest: "
            f"{_miss_at(share, hit, dram_latency):.4g} cycles")


def l2_hit_cycles(profile: Any) -> float | None:
    """The mean load-to-use latency (cycles) of an L2 hit: the architecture's pointer-chase figure
    (`data/timing.toml` [kerncast.l2_hit_latency]), on a partitioned L2 averaged with the far partition's, where
    a line is as often as in the near one; None where the data lists no figure."""
    row = timing_constants()["kerncast"].get("l2_hit_latency", {}).get(profile.arch)
    if not isinstance(row, int | float):
        return None
    _, far = l2_partitions(profile)
    return float(row) if far is None else (float(row) + far) / 2.0
