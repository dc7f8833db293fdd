"""Global loads whose value is first used in a later basic block: the warp waits at the use, not at the load.

A warp issues a load and goes on; it stalls only when an instruction needs the loaded register (the
scoreboard). Within a basic block the dependence DAG expresses that. Across blocks it does not: nvcc writes
`v = cond ? a[i] : 0` as a branch around the load, so the load ends its block and the value is used in the
join block. Charged in its own block, each such load would add its whole latency to the path, and two guarded
loads in a row (a tile's fill of A and of B) would wait one after the other although both are in flight before
either value is used. Here such a load costs its issue in its block, and the first instructions that read its
register on each path after it (before the register is written again) wait for its latency from the start of
their block: the wait is charged once, where it happens. The time between the load and the use (the rest of
the load's block, the blocks in between) is not subtracted from it: an upper bound on the wait, as the whole
latency was before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.deps import DepGraph

#: the opcodes of loads whose latency a later block may wait for
_LOADS = frozenset({"ld", "ldu"})
#: how many basic blocks after the load the search for its first use walks
_REACH = 8


@dataclass(slots=True)
class DeferredLoads:
    """`loads`: load indices that cost their issue only in their own block; `uses`: instruction index -> the
    deferred loads whose value it first reads; `waits`: instruction index -> the cycles from its block's start
    before those values are ready (`at`, for one set of load latencies)."""

    loads: frozenset[int] = frozenset()
    uses: dict[int, tuple[int, ...]] = field(default_factory=dict)
    waits: dict[int, float] = field(default_factory=dict)

    def at(self, latency_of: Callable[[int], float]) -> DeferredLoads:
        """The same loads and uses, each use waiting the longest latency of the loads it reads: the search for
        the uses depends on the code alone and is made once, the waits on the latencies of each prediction."""
        return DeferredLoads(self.loads, self.uses,
                             {u: max(latency_of(v) for v in loads) for u, loads in self.uses.items()})


def deferred_loads(cfg: Any, loops: Any, dags: Mapping[int, DepGraph], classes: Mapping[int, Any]) -> DeferredLoads:
    """The global loads of the kernel whose value leaves their block unread, and where it is first read.

    A load whose first use lies in a loop the load is not in stays charged in its own block: the use runs
    every iteration and waits only in the first (a value loaded before a loop and carried through it)."""
    body = cfg.function.body
    loads: set[int] = set()
    uses: dict[int, list[int]] = {}
    for b, dag in dags.items():
        for v in dag.nodes:
            ins, cls = body[v], classes.get(v)
            if ins.opcode not in _LOADS or cls is None or cls.latency != "global":
                continue
            if any(kind == "raw" for _, kind in dag.succs.get(v, [])):
                continue  # read in its own block: the DAG already waits for it there
            written = set(ins.registers_written)
            if not written or _rewritten_later(body, dag, v, written):
                continue
            first = _first_uses(cfg, b, written)
            around = {lp.header for lp in loops.enclosing(b)}
            if not first or any(not {lp.header for lp in loops.enclosing(cfg.block_of[u])} <= around
                                for u in first):
                continue
            loads.add(v)
            for u in first:
                uses.setdefault(u, []).append(v)
    return DeferredLoads(frozenset(loads), {u: tuple(vs) for u, vs in uses.items()})


def _rewritten_later(body: Any, dag: DepGraph, v: int, registers: set[str]) -> bool:
    """Whether an instruction after `v` in its block writes one of `registers` (the value never leaves it)."""
    after = dag.nodes[dag.nodes.index(v) + 1:]
    return any(registers & set(body[u].registers_written) for u in after)


def _first_uses(cfg: Any, block: int, registers: set[str]) -> list[int]:
    """The instructions that first read one of `registers` on the paths out of `block`, up to `_REACH` blocks
    away, each path stopping where the registers are all written again."""
    body = cfg.function.body
    found: list[int] = []
    seen: set[int] = set()
    todo = [(s, frozenset(registers), 1) for s in cfg.blocks[block].succs]
    while todo:
        b, live, depth = todo.pop()
        if b in seen or depth > _REACH:
            continue
        seen.add(b)
        left = set(live)
        blk = cfg.blocks[b]
        for i in range(blk.start, blk.end):
            ins = body[i]
            if left & set(ins.registers_read):
                found.append(i)
                left -= set(ins.registers_read)
            left -= set(ins.registers_written)
            if not left:
                break
        if left:
            todo.extend((s, frozenset(left), depth + 1) for s in blk.succs)
    return found
