"""The thesis's resource-allocation scheduler (the thesis, section 4.4.4): Algorithms 6, 7 and 8.

Algorithm 6 list-schedules one basic block's dependence DAG under resource reservation: every instruction is
executed by all `nTW` threads of a wave on the `R[R_map(v)]` lanes of its unit, in `ceil(nTW / R)` pipelined
batches, so it occupies its unit for ``d(v) = L(v) + L_pipeline * (ceil(nTW / R) - 1)`` cycles and its
successors may start ``d(v)`` cycles after it started. Algorithm 7 walks the CFG, Algorithm 8 the waves.

Choices where the thesis text is ambiguous or inconsistent (each one is tested):

* **Reservation intervals are half-open.** Algorithm 6 line 12 reserves ``Rsv[t1] .. Rsv[t1 + d - 1]``, so an
  instruction may take a unit at the very cycle the previous reservation ends; this is what makes
  ``Sch[C9] = 10`` after C8's 10 cycles in the worked example (section 4.4.4.2). The same rule starts M2 when
  M1 frees the load/store unit at cycle 332, so M2's edge to C11 is 332 + 322 = 654; the thesis prints 655,
  one cycle later, which no single reservation rule reconciles with ``Sch[C9] = 10`` (see the tests).
* **A block's delay is the latest finish** of any of its instructions (the dummy end node EB depends on every
  sink), not the finish of the last node in topological order that line 13 literally assigns: the last node
  is usually a `bra` that finishes long before a pending load.
* **A unit the GPU lacks** (a profile count of 0, e.g. tensor cores before Volta) runs on the SP lanes.
* **Loops (Algorithm 7).** The thesis multiplies a block "that has a back edge" by nLoop; nvcc's loops span
  several blocks, so each natural loop (innermost first) is collapsed into one node whose delay is the
  longest path through one iteration of its body times its trip count. Branches follow the thesis's longest
  path through the CFG (section 4.4.1): ``delay[G] = max over predecessors + d_G``. Edges that do not go
  forward in reverse post-order (back edges, irreducible retreating edges) are not followed.
* **Memory instruction counts** (nGM, nShM of section 4.4.4.1) are counted "while scheduling each
  instruction", and every block is scheduled, so they count every block (both sides of a branch, as the
  thesis's assumption that every branch is taken by some thread of each warp), times its loops' trip counts.
* **Waves (Algorithm 8).** Blocks are dealt to SMs round-robin (section 4.4.3), so the busiest SM runs
  ``ceil(nB / nSM)`` blocks, in waves of as many blocks as occupancy allows. Three printed bugs are fixed:
  the loop condition ``nTh_sched >= 0`` adds a wave when the division is exact, line 12 subtracts the
  hardware maximum ``nTh_sm^M`` instead of the occupancy-limited ``nTh_sm``, and line 7 compares shared memory
  with a block count. The last, partial wave is scheduled with the threads it really has (the thesis
  schedules every wave with ``nTh_sm``). Full waves are identical, so the CFG is scheduled at most twice
  whatever the grid size, and the cost does not grow with the grid or with trip counts.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.deps import DepGraph, block_dependences
from kerncast.analysis.isa import InstrClass, classify
from kerncast.analysis.loops import block_weights, cfg_longest_path
from kerncast.analysis.ptx.model import Instruction

#: Thesis section 4.4.4.2: "We assume the latency of v is 1 when it is perfectly pipelined."
PIPELINE_LATENCY = 1.0

LatencyFn = Callable[[Instruction, InstrClass], float]


@dataclass(slots=True)
class BlockSchedule:
    """Algorithm 6's result for one block: start cycle and unit occupancy of every instruction.

    `start` and `duration` are keyed by instruction index (the DAG's node ids); `delay` is the block's length
    in cycles; `busy` sums the reserved cycles per unit; `global_count` / `shared_count` are the block's global
    and shared memory instructions (thesis nGM, nShM for this block).
    """

    delay: float
    start: dict[int, float]
    duration: dict[int, float]
    resource: dict[int, str]
    busy: dict[str, float]
    global_count: int
    shared_count: int

    def finish(self, node: int) -> float:
        """The cycle at which a successor of `node` may start (``Sch[u] + d(u)``, Algorithm 6 line 6)."""
        return self.start[node] + self.duration[node]


class _Reservations:
    """One unit's reservation table as sorted, non-overlapping half-open intervals [start, end)."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def earliest(self, t: float, d: float) -> float:
        """The first t1 >= t with [t1, t1 + d) free (Algorithm 6 line 9)."""
        ends = self.ends
        if not ends or t >= ends[-1]:  # after every reservation (what the search below finds at once)
            return t
        i = bisect.bisect_right(ends, t)
        cand = t
        while i < len(self.starts):
            if self.starts[i] >= cand + d:
                break
            cand = max(cand, self.ends[i])
            i += 1
        return cand

    def reserve(self, t1: float, d: float) -> None:
        """Mark [t1, t1 + d) busy (Algorithm 6 lines 11-12), merging touching intervals."""
        end = t1 + d
        starts, ends = self.starts, self.ends
        if not starts or t1 > starts[-1]:  # after every start: the general case below, without its searches
            if starts and ends[-1] >= t1:
                ends[-1] = max(end, ends[-1])
            else:
                starts.append(t1)
                ends.append(end)
            return
        i = bisect.bisect_left(self.starts, t1)
        if i > 0 and self.ends[i - 1] >= t1:
            i -= 1
            t1 = self.starts[i]
            end = max(end, self.ends[i])
            del self.starts[i], self.ends[i]
        while i < len(self.starts) and self.starts[i] <= end:
            end = max(end, self.ends[i])
            del self.starts[i], self.ends[i]
        self.starts.insert(i, t1)
        self.ends.insert(i, end)


def profile_latency(profile: Any, total_threads: int | None) -> LatencyFn:
    """Latency of an instruction from a GPU profile: its latency row, and for global memory the thesis's
    piecewise model of the threads launched (Table 3.3), which is what section 4.4.5.4 calls L(gm)."""
    table = profile.latency

    def latency(_ins: Instruction, cls: InstrClass) -> float:
        if cls.type == "global" and cls.latency in ("global", "memory") and total_threads:
            return float(profile.global_latency(total_threads))
        return float(table[cls.latency])

    return latency


#: One instruction of a block as Algorithm 6 sees it whatever the wave's size: (node id, unit, latency L(v),
#: the unit's lanes, predecessor node ids, thesis instruction type)
PlannedNode = tuple[int, str, float, int, tuple[int, ...], str]


def plan_block(dag: DepGraph, instructions: Sequence[Instruction], *, latency: LatencyFn,
               units: Mapping[str, int], classes: Mapping[int, InstrClass] | None = None) -> list[PlannedNode]:
    """The part of Algorithm 6 that does not depend on the wave's thread count: each node's unit (SP for a
    unit the GPU lacks), latency, lanes and predecessors. A kernel with a partial last wave is scheduled
    twice; the plan is made once (`schedule_cfg`'s `plans`)."""
    out: list[PlannedNode] = []
    preds = dag.pred_ids()
    for v in dag.nodes:
        ins = instructions[v]
        cls = classes[v] if classes is not None else classify(ins)
        res = cls.resource if units.get(cls.resource, 0) > 0 else "SP"
        out.append((v, res, latency(ins, cls), units[res], preds[v], cls.type))
    return out


def schedule_block(dag: DepGraph, instructions: Sequence[Instruction], profile: Any = None, *,
                   n_threads: int, latency: LatencyFn | None = None, units: Mapping[str, int] | None = None,
                   pipeline_latency: float = PIPELINE_LATENCY,
                   classes: Mapping[int, InstrClass] | None = None,
                   plan: list[PlannedNode] | None = None) -> BlockSchedule:
    """Algorithm 6: list-schedule one block's DAG for a wave of `n_threads` threads (thesis nTW) on one SM.

    `instructions` is indexable by the DAG's node ids (the function body). Latencies come from `latency` or the
    profile's latency rows; unit lane counts from `units` or the profile's units. Nodes are taken in the DAG's
    node order, which is program order and so a topological order (Algorithm 6 line 2). A `plan` from
    `plan_block` (for these latencies and units) stands for all of that.
    """
    if plan is None:
        if latency is None:
            if profile is None:
                raise ValueError("schedule_block needs a profile or a latency function")
            latency = profile_latency(profile, None)
        if units is None:
            if profile is None:
                raise ValueError("schedule_block needs a profile or the unit counts")
            units = profile.units
        plan = plan_block(dag, instructions, latency=latency, units=units, classes=classes)
    tables: dict[str, _Reservations] = {}
    start: dict[int, float] = {}
    duration: dict[int, float] = {}
    finish: dict[int, float] = {}
    resource: dict[int, str] = {}
    busy: dict[str, float] = {}
    n_global = n_shared = 0
    delay = 0.0
    batches: dict[int, float] = {}  # lanes -> the pipelined batches' extra cycles, L_pipeline * (ceil(nTW/R) - 1)
    for v, res, lat, lanes, preds, kind in plan:
        extra = batches.get(lanes)
        if extra is None:
            extra = batches[lanes] = pipeline_latency * (math.ceil(n_threads / lanes) - 1)
        d = lat + extra
        t = 0.0
        for u in preds:
            t = max(t, finish[u])
        table = tables.get(res)
        if table is None:
            table = tables[res] = _Reservations()
        t1 = table.earliest(t, d)
        table.reserve(t1, d)
        start[v], duration[v], resource[v] = t1, d, res
        finish[v] = t1 + d
        busy[res] = busy.get(res, 0.0) + d
        delay = max(delay, t1 + d)
        if kind == "global":
            n_global += 1
        elif kind == "shared":
            n_shared += 1
    return BlockSchedule(delay, start, duration, resource, busy, n_global, n_shared)


# ------------------------------------------------------------------------------------------ Algorithm 7


@dataclass(slots=True)
class CfgSchedule:
    """Algorithm 7's result: the kernel's delay for one wave and the dynamic counts per thread.

    `delay` is the longest path through the CFG in cycles (loops multiplied); `global_count`/`shared_count` are
    nGM and nShM per thread (every block, times its loops' trip counts); `busy` the reserved cycles per unit
    weighted the same way (used to name the bottleneck unit).
    """

    delay: float
    global_count: float
    shared_count: float
    busy: dict[str, float] = field(default_factory=dict)
    blocks: dict[int, BlockSchedule] = field(default_factory=dict)


def schedule_cfg(cfg: Cfg, loops: Any, n_threads: int, trips: Mapping[int, float], *, latency: LatencyFn,
                 units: Mapping[str, int], dags: Mapping[int, DepGraph] | None = None,
                 classes: Mapping[int, InstrClass] | None = None,
                 plans: dict[int, list[PlannedNode]] | None = None) -> CfgSchedule:
    """Algorithm 7: schedule every block for a wave of `n_threads`, then the longest path with loops folded.

    `plans` (block id -> `plan_block`), when given, is filled on first use and read after: a caller that
    schedules a full and a partial wave with the same latencies and units shares it between the two."""
    body = cfg.function.body
    scheds: dict[int, BlockSchedule] = {}
    for b in cfg.blocks:
        if cfg.never_runs(b.id):
            continue
        dag = dags[b.id] if dags is not None else block_dependences(cfg, b.id)
        plan = plans.get(b.id) if plans is not None else None
        if plan is None:
            plan = plan_block(dag, body, latency=latency, units=units, classes=classes)
            if plans is not None:
                plans[b.id] = plan
        scheds[b.id] = schedule_block(dag, body, n_threads=n_threads, latency=latency, units=units,
                                      classes=classes, plan=plan)
    weights = block_weights(cfg, loops, trips)
    n_global = sum(s.global_count * weights[b] for b, s in scheds.items())
    n_shared = sum(s.shared_count * weights[b] for b, s in scheds.items())
    busy: dict[str, float] = {}
    for b, s in scheds.items():
        for r, c in s.busy.items():
            busy[r] = busy.get(r, 0.0) + c * weights[b]
    delay = cfg_longest_path(cfg, loops, {b: s.delay for b, s in scheds.items()}, trips)
    return CfgSchedule(delay, n_global, n_shared, busy, scheds)


# ------------------------------------------------------------------------------------------ Algorithm 8


@dataclass(slots=True)
class Waves:
    """Algorithm 8's wave plan for the busiest SM: full waves of `blocks_per_wave` blocks and a last wave."""

    blocks_per_sm: int  # blocks the busiest SM runs, ceil(nB / nSM)
    blocks_per_wave: int  # resident blocks per SM (occupancy)
    full_waves: int
    last_wave_blocks: int  # 0 when the last wave is full

    @property
    def waves(self) -> int:
        return self.full_waves + (1 if self.last_wave_blocks else 0)


def plan_waves(n_blocks: int, sm_count: int, blocks_per_wave: int) -> Waves:
    """Deal `n_blocks` round-robin over `sm_count` SMs and split the busiest SM's share into waves."""
    per_sm = max(1, math.ceil(n_blocks / sm_count))
    per_wave = max(1, min(blocks_per_wave, per_sm))
    full, last = divmod(per_sm, per_wave)
    return Waves(per_sm, per_wave, full, last)


def thesis_blocks_per_sm(profile: Any, threads_per_block: int, registers: int | None, shared_bytes: int) -> int:
    """Resident blocks per SM from Algorithm 8 lines 4-8 (threads, registers, shared memory, block limits);
    used only when no occupancy calculation is available. Allocation granularities are ignored here."""
    lim = profile.limits
    counts = [lim.max_blocks_per_sm, lim.max_threads_per_sm // max(1, threads_per_block)]
    if registers:
        counts.append(lim.regs_per_sm // max(1, registers * threads_per_block))
    if shared_bytes:
        counts.append(lim.shared_per_sm // shared_bytes)
    return max(1, min(counts))
