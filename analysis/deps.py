"""The per-block dependence DAG (the thesis's data-flow graph of a basic block, section 4.2).

Nodes are instruction indices of one block. An edge `a -> b` means `b` cannot start before `a` completes:
`raw` when `b` reads a register or predicate (guards included) that `a` wrote last, `waw` when both write it,
and `sync` around barriers and fences (`bar`, `barrier`, `membar`, `fence`), which order every instruction
before them against every instruction after them. Register names are exact (`%r3`); vector operands
contribute each element; special registers (`%tid.x`) are never written so they add no edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerncast.analysis.cfg import Cfg

#: Barriers and fences: each orders the memory accesses before it against those after it.
SYNC_OPCODES = frozenset({"bar", "barrier", "membar", "fence"})


@dataclass(slots=True)
class DepGraph:
    """Dependence DAG of one basic block; `nodes` are in program order, which is a topological order."""

    block: int
    nodes: list[int]
    preds: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    succs: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    #: each node's predecessors without the edge kinds (`pred_ids`), made on first use
    _pred_ids: dict[int, tuple[int, ...]] | None = field(default=None, repr=False, compare=False)

    def pred_ids(self) -> dict[int, tuple[int, ...]]:
        """Node -> its predecessors' ids: what the time models read of an edge, for every block of every
        prediction (the same DAG serves them all)."""
        if self._pred_ids is None:
            self._pred_ids = {v: tuple(u for u, _ in edges) for v, edges in self.preds.items()}
        return self._pred_ids

    def roots(self) -> list[int]:
        """Instructions with no predecessor in the block (they may start at once)."""
        return [n for n in self.nodes if not self.preds[n]]


def block_dependences(cfg: Cfg, block_id: int) -> DepGraph:
    """Build the dependence DAG of one block.

    The edges into an instruction are all found while it is visited, so they are gathered first and kept
    once per predecessor (the first kind found wins) with a set instead of a
    scan of the predecessor list for every edge."""
    b = cfg.blocks[block_id]
    nodes = list(range(b.start, b.end))
    preds: dict[int, list[tuple[int, str]]] = {n: [] for n in nodes}
    succs: dict[int, list[tuple[int, str]]] = {n: [] for n in nodes}
    last_writer: dict[str, int] = {}
    last_sync: int | None = None
    since_sync: list[int] = []
    body = cfg.function.body
    for n in nodes:
        ins = body[n]
        found: list[tuple[int, str]] = []
        sync = ins.opcode in SYNC_OPCODES
        if sync:
            found.extend((m, "sync") for m in since_sync)
            last_sync = n
            since_sync = []
        elif last_sync is not None:
            found.append((last_sync, "sync"))
        read, written = ins.registers_read, ins.registers_written
        for r in read:
            w = last_writer.get(r)
            if w is not None:
                found.append((w, "raw"))
        for r in written:
            w = last_writer.get(r)
            if w is not None:
                found.append((w, "waw"))
            last_writer[r] = n
        if found:
            into = preds[n]
            linked = {n}
            for a, kind in found:
                if a not in linked:
                    linked.add(a)
                    into.append((a, kind))
                    succs[a].append((n, kind))
        if not sync:
            since_sync.append(n)
    return DepGraph(block_id, nodes, preds, succs)


def all_dependences(cfg: Cfg) -> list[DepGraph]:
    """The dependence DAG of every block, indexed by block id."""
    return [block_dependences(cfg, b.id) for b in cfg.blocks]
