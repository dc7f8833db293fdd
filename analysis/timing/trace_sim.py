"""The trace model's warp-pipeline simulation: the blocks of one SM, event by event.

The semantics of the trace-based estimation's simulator (the one-round warp pipeline of its Fig. 2), on
Kerncast's abstract SM:

* each warp runs its own trace in order; before an instruction it waits for its operands (a per-warp
  scoreboard of register ready times: a result is ready `latency` cycles after issue), then for the unit the
  instruction needs, first come first served among the warps whose operands are ready (a unit is held
  `warp / lanes x replays` cycles per warp instruction, the replays being
  the memory analysis's sectors or wavefronts per request over the ideal); the SM issues at most
  `dispatch` warp instructions per cycle and a warp at most one per cycle;
* the clock always jumps to the earliest time some warp can act (a heap of warps keyed by that time);
* a barrier holds a warp until every warp of its block has arrived (a warp that ended counts as arrived);
  a warp arrives once the memory accesses it issued are performed (the barrier's visibility guarantee);
* global accesses also hold the SM's share of DRAM bandwidth for the bytes that go to DRAM;
* at most `slots` blocks are resident at once (the occupancy); when every warp of a block has retired, the
  block scheduler starts the SM's next block in the freed slot at that time, so the blocks of successive
  rounds overlap as they do on the hardware instead of waiting for the whole round to end;
* a warp retires once it has issued its last instruction and its loaded registers are written; a store
  writes no register and holds no slot (stores are posted: the SM hands the data to the memory system and
  goes on), so a store's latency holds no block; the SM's work ends at its last retirement (`last_retire`;
  the drain of the stores still in flight then is in the launch's completion) or when its busiest resource
  has served every access (`busy`: posted stores go on holding the DRAM share after their warp retired);
* a loop visit simulates at most `window` iterations; when the loop runs more, the warp measures the
  time of its iterations after the first (the steady state, with the other warps contending) and is then
  held for the remaining iterations at that pace, so the cost is O(window) whatever the trip count.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kerncast.analysis.timing.trace_paths import Item, LoopRun


@dataclass(frozen=True, slots=True)
class Op:
    """What the simulator needs of one instruction: the unit it holds and for how long (cycles, 0 and no
    unit for a free operand read), its result latency, registers, and whether it is a barrier or memory."""

    unit: str | None
    hold: float
    latency: float
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    barrier: bool = False
    memory: bool = False
    dram_hold: float = 0.0  # cycles of the SM's DRAM bandwidth share this access holds


@dataclass(frozen=True, slots=True)
class _Mark:
    """Generator token: a loop's steady-state window starts (`start`) or ends with `rest` iterations left."""

    key: int
    start: bool
    rest: float = 0.0
    measured: int = 0


@dataclass(slots=True)
class SimResult:
    """The instructions issued, loop iterations fast-forwarded, each simulated block's retire time (the cycle
    its slot freed), in block order, the last warp's retirement, and the cycles the busiest resource (a unit,
    the issue slots or the DRAM share) was held in all: posted stores hold the DRAM share after their warp
    retired, so the retirements alone can run ahead of the work they leave behind."""

    issued: int
    extrapolated: float
    retired: list[float] = field(default_factory=list)
    last_retire: float = 0.0
    busy: float = 0.0


def _expand(items: Sequence[Item], blocks: Mapping[int, Sequence[int]], window: tuple[int, int],
            counter: list[int], depth: int = 1) -> Iterator[int | _Mark]:
    """Instruction indices of a trace, each loop run for at most its window of iterations, plus window marks.
    `window` is (iterations, deepest loop level that gets them); deeper loops run two (warm-up, measured)."""
    for it in items:
        if isinstance(it, LoopRun):
            n = it.trips
            run = min(window[0] if depth <= window[1] else 2, math.ceil(n)) if n > 0 else 0
            rest = n - run if n > run else 0.0
            counter[0] += 1
            key = counter[0]
            for k in range(run):
                if rest and k == 1:
                    yield _Mark(key, True)
                yield from _expand(it.body, blocks, window, counter, depth + 1)
            if rest and run >= 2:
                yield _Mark(key, False, rest, run - 1)
        else:
            yield from blocks[it]


def simulate_round(traces: Sequence[tuple[int, Sequence[Item], int]], ops: Mapping[int, Op],
                   blocks: Mapping[int, Sequence[int]], *, dispatch: float, window: tuple[int, int],
                   slots: int | None = None) -> SimResult:
    """Simulate warps `(block, trace, multiplicity)` sharing one SM until all have ended. Blocks start in the
    order of their ids, at most `slots` at a time (None: all at once, one round); a block retiring starts the
    next. `blocks` gives each basic block's instructions in issue order. An entry of multiplicity k stands
    for k alike warps of one block issuing in lockstep: each instruction holds its unit, the issue slots and
    the DRAM share k times as long (one warp with k independent copies of its work, issued back to back)."""
    n = len(traces)
    gens = [_expand(items, blocks, window, [0]) for _, items, _ in traces]
    mult = [float(k) for _, _, k in traces]
    regs: list[dict[str, float]] = [{} for _ in range(n)]
    mem_done = [0.0] * n
    marks: list[dict[int, float]] = [{} for _ in range(n)]
    current: list[int | None] = [None] * n
    unit_free: dict[str, float] = {}
    held: dict[str, float] = {}  # cycles each resource was held in all ("issue", "dram", the units)
    dram_free = 0.0
    issue_free = 0.0
    issue_step = 1.0 / max(dispatch, 1e-9)
    block_of = [b for b, _, _ in traces]
    members: dict[int, int] = {}
    warps_of: dict[int, list[int]] = {}
    for w, b in enumerate(block_of):
        members[b] = members.get(b, 0) + 1
        warps_of.setdefault(b, []).append(w)
    queue = sorted(warps_of)
    retire = [0.0] * n
    retired: dict[int, float] = {}
    waiting: dict[int, list[tuple[int, float]]] = {}
    finished: dict[int, int] = {}
    heap: list[tuple[float, int]] = []
    issued = 0
    extrapolated = 0.0

    def advance(w: int, t: float) -> None:
        """Move warp `w` to its next instruction (handling window marks) and queue it at time `t`."""
        nonlocal extrapolated
        for x in gens[w]:
            if isinstance(x, _Mark):
                if x.start:
                    marks[w][x.key] = t
                    continue
                began = marks[w].pop(x.key, t)
                per_iter = (t - began) / x.measured
                t += per_iter * x.rest
                extrapolated += x.rest
                continue
            current[w] = x
            heapq.heappush(heap, (t, w))
            return
        current[w] = None
        retire[w] = max(t, max(regs[w].values(), default=0.0))
        b = block_of[w]
        finished[b] = finished.get(b, 0) + 1
        release(b)
        if finished[b] == members[b]:
            retired[b] = max(retire[v] for v in warps_of[b])
            start_next(retired[b])

    def start_next(t: float) -> None:
        """Start the next block waiting for a slot at time `t`."""
        if queue:
            for v in warps_of[queue.pop(0)]:
                advance(v, t)

    def release(b: int) -> None:
        """Let a block's barrier go once every warp of the block has arrived or ended."""
        wait = waiting.get(b)
        if wait and len(wait) + finished.get(b, 0) >= members[b]:
            t = max(at for _, at in wait)
            waiting[b] = []
            for w, _ in wait:
                advance(w, t)

    for _ in range(len(queue) if slots is None else min(slots, len(queue))):
        start_next(0.0)
    while heap:
        t, w = heapq.heappop(heap)
        op = ops[current[w]]  # type: ignore[index]
        ready = t
        for r in op.reads:
            ready = max(ready, regs[w].get(r, 0.0))
        if op.barrier:
            arrive = max(ready, mem_done[w]) + op.latency
            issued += 1
            waiting.setdefault(block_of[w], []).append((w, arrive))
            release(block_of[w])
            continue
        if ready > t:
            heapq.heappush(heap, (ready, w))
            continue
        start = t
        # an entry of k alike warps issues its k copies back to back, k issue slots (k / dispatch cycles, as k
        # warps of their own would issue them); the entry's next instruction follows no sooner than that, and
        # no sooner than one cycle (a warp issues at most one instruction per cycle)
        k = mult[w]
        spread = (k - 1.0) * issue_step
        if op.unit is not None:
            # reserve the unit and an issue slot now, first come first served among the warps ready by now:
            # a warp that finds them busy issues when they free up, without polling for them
            start = max(t, unit_free.get(op.unit, 0.0), issue_free, dram_free if op.dram_hold else 0.0)
            unit_free[op.unit] = start + op.hold * k
            issue_free = start + issue_step * k
            held[op.unit] = held.get(op.unit, 0.0) + op.hold * k
            held["issue"] = held.get("issue", 0.0) + issue_step * k
            if op.dram_hold:
                dram_free = start + op.dram_hold * k
                held["dram"] = held.get("dram", 0.0) + op.dram_hold * k
        done = start + spread + op.latency  # the last copy's result
        for r in op.writes:
            regs[w][r] = done
        if op.memory:
            mem_done[w] = max(mem_done[w], done)
        issued += 1
        advance(w, start + max(1.0, k * issue_step))
    return SimResult(issued, extrapolated, [retired[b] for b in sorted(retired)],
                     max(retire, default=0.0), max(held.values(), default=0.0))
