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
    return list(_registers(ins)[0])


def registers_written(ins: Instruction) -> list[str]:
    """Names of registers an instruction writes (its destination, each element of a vector or pair).

    Special registers (`%tid.x`) are read-only in PTX, so they never appear here.
    """
    return list(_registers(ins)[1])


def _registers(ins: Instruction) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(read, written) register names of an instruction, worked out once and kept on it (`registers`)."""
    found = ins.registers
    if found is None:
        found = ins.registers = _read_and_written(ins)
    return found


def _read_and_written(ins: Instruction) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The registers read (sources, address bases, the guard) and written (a destination that is no address).

    A destination operand is never an address (`has_dest` is false for a bracketed first operand), so the
    written names are those of the first operand when the instruction has a destination."""
    read: list[str] = []
    written: list[str] = []
    if ins.has_dest:
        _collect_regs(ins.operands[0], written)
        sources = ins.operands[1:]
    else:
        sources = ins.operands
    for op in sources:
        _collect_regs(op, read)
    if ins.guard is not None:
        read.append(ins.guard.reg)
    return tuple(read), tuple(written)


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
    """Build the dependence DAG of one block.

    The edges into an instruction are all found while it is visited, so they are gathered first and kept
    once per predecessor (the first kind found wins, as `DepGraph.add_edge` does) with a set instead of a
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
        read, written = _registers(ins)
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
