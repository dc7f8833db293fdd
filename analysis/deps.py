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
from kerncast.analysis.ptx.model import Addr, Instruction, Operand, PredPair, Reg, Vec

#: Barriers and fences: each orders the memory accesses before it against those after it.
SYNC_OPCODES = frozenset({"bar", "barrier", "membar", "fence"})


@dataclass(slots=True)
class DepGraph:
    """Dependence DAG of one basic block; `nodes` are in program order, which is a topological order."""

    block: int
    nodes: list[int]
    preds: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    succs: dict[int, list[tuple[int, str]]] = field(default_factory=dict)

    def add_edge(self, a: int, b: int, kind: str) -> None:
        if a == b or any(p == a for p, _ in self.preds[b]):
            return
        self.preds[b].append((a, kind))
        self.succs[a].append((b, kind))

    def roots(self) -> list[int]:
        """Instructions with no predecessor in the block (they may start at once)."""
        return [n for n in self.nodes if not self.preds[n]]


def registers_read(ins: Instruction) -> list[str]:
    """Names of registers an instruction reads: source operands, address bases and its guard predicate."""
    names: list[str] = []
    for op in ins.srcs:
        _collect_regs(op, names)
    if ins.has_dest and ins.dests:
        dest = ins.dests[0]
        if isinstance(dest, Addr) and isinstance(dest.base, Reg):
            names.append(dest.base.name)
    if ins.guard is not None:
        names.append(ins.guard.reg)
    return names


def registers_written(ins: Instruction) -> list[str]:
    """Names of registers an instruction writes (its destination, each element of a vector or pair).

    Special registers (`%tid.x`) are read-only in PTX, so they never appear here.
    """
    names: list[str] = []
    for op in ins.dests:
        if isinstance(op, Addr):
            continue
        _collect_regs(op, names)
    return names


def _collect_regs(op: Operand, out: list[str]) -> None:
    if isinstance(op, Reg):
        out.append(op.name)
    elif isinstance(op, Addr):
        if isinstance(op.base, Reg):
            out.append(op.base.name)
    elif isinstance(op, Vec):
        for item in op.items:
            _collect_regs(item, out)
    elif isinstance(op, PredPair):
        out.extend((op.first.name, op.second.name))


def block_dependences(cfg: Cfg, block_id: int) -> DepGraph:
    """Build the dependence DAG of one block."""
    b = cfg.blocks[block_id]
    nodes = list(range(b.start, b.end))
    g = DepGraph(block_id, nodes, {n: [] for n in nodes}, {n: [] for n in nodes})
    last_writer: dict[str, int] = {}
    last_sync: int | None = None
    since_sync: list[int] = []
    body = cfg.function.body
    for n in nodes:
        ins = body[n]
        if ins.opcode in SYNC_OPCODES:
            for m in since_sync:
                g.add_edge(m, n, "sync")
            last_sync = n
            since_sync = []
        elif last_sync is not None:
            g.add_edge(last_sync, n, "sync")
        for r in registers_read(ins):
            w = last_writer.get(r)
            if w is not None:
                g.add_edge(w, n, "raw")
        for r in registers_written(ins):
            w = last_writer.get(r)
            if w is not None:
                g.add_edge(w, n, "waw")
            last_writer[r] = n
        if ins.opcode not in SYNC_OPCODES:
            since_sync.append(n)
    return g


def all_dependences(cfg: Cfg) -> list[DepGraph]:
    """The dependence DAG of every block, indexed by block id."""
    return [block_dependences(cfg, b.id) for b in cfg.blocks]
