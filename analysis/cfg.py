"""Basic blocks, the control-flow graph and dominators of a PTX function.

A block starts at the function entry, at every label and after every terminator; a guarded branch has two
successors (target and fall-through), an unguarded one only its target, and an unguarded `ret`/`exit` none.
Dominators use the iterative algorithm of Cooper, Harvey and Kennedy over reverse post-order, which is fast
for the small, mostly reducible graphs nvcc emits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerncast.analysis.ptx.model import Function, Imm, Instruction, Reg, Sym


@dataclass(slots=True)
class BasicBlock:
    """Instructions `body[start:end]` of the function, with CFG edges by block id."""

    id: int
    start: int
    end: int
    labels: list[str] = field(default_factory=list)
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(slots=True)
class Cfg:
    """The control-flow graph of one function. `block_of[i]` is the block of instruction `i`."""

    function: Function
    blocks: list[BasicBlock]
    block_of: list[int]
    idom: list[int] = field(default_factory=list)
    rpo: list[int] = field(default_factory=list)
    unreachable: set[int] = field(default_factory=set)
    #: blocks of the CUDA math library's out-of-line slow paths, which typical data never runs (see
    #: `library_slow_paths`): the time models leave them out as they leave unreachable blocks out
    cold: frozenset[int] = frozenset()
    #: dominator-tree numbering (block -> (preorder, last preorder below it)), built on the first query
    _dom_span: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def entry(self) -> int:
        return 0

    def never_runs(self, block_id: int) -> bool:
        """Whether a block is left out of the time models: unreachable, or a library slow path."""
        return block_id in self.unreachable or block_id in self.cold

    def instructions(self, block_id: int) -> list[Instruction]:
        """The instructions of one block."""
        b = self.blocks[block_id]
        return self.function.body[b.start:b.end]

    def dominates(self, a: int, b: int) -> bool:
        """Whether block `a` dominates block `b` (every path from the entry to `b` passes through `a`).

        Answered in constant time from a preorder numbering of the dominator tree (`a` dominates `b` when
        `b`'s number falls in `a`'s subtree span), so callers may ask it for every pair of an edge list
        without walking a long chain of dominators each time.
        """
        if b in self.unreachable:
            return False
        if a == b:
            return True
        if not self._dom_span:
            self._number_dominator_tree()
        sa, sb = self._dom_span.get(a), self._dom_span.get(b)
        if sa is None or sb is None:
            return False
        return sa[0] <= sb[0] <= sa[1]

    def _number_dominator_tree(self) -> None:
        children: dict[int, list[int]] = {}
        for b, d in enumerate(self.idom):
            if d >= 0 and d != b and b not in self.unreachable:
                children.setdefault(d, []).append(b)
        if not self.idom:
            return
        span: dict[int, tuple[int, int]] = {}
        pre: dict[int, int] = {}
        counter = 0
        stack: list[tuple[int, bool]] = [(0, False)]
        while stack:
            node, done = stack.pop()
            if done:
                span[node] = (pre[node], counter - 1)
                continue
            pre[node] = counter
            counter += 1
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children.get(node, [])))
        self._dom_span = span


def _leaders(fn: Function) -> list[int]:
    n = len(fn.body)
    starts = {0} if n else set()
    starts.update(i for i in fn.labels.values() if i < n)
    for ins in fn.body:
        if ins.is_terminator and ins.index + 1 < n:
            starts.add(ins.index + 1)
    return sorted(starts)


def _successors(fn: Function, last: Instruction, next_block: int | None, block_at: dict[int, int]) -> list[int]:
    out: list[int] = []
    op = last.opcode
    conditional = last.guard is not None
    if op == "bra":
        target = last.branch_target
        tgt_index = fn.labels.get(target) if target else None
        if tgt_index is not None and tgt_index in block_at:
            out.append(block_at[tgt_index])
        if conditional and next_block is not None:
            out.append(next_block)
    elif op == "brx":
        for operand in last.operands:
            if isinstance(operand, Sym) and operand.name in fn.labels:
                idx = fn.labels[operand.name]
                if idx in block_at:
                    out.append(block_at[idx])
        if not out and next_block is not None:
            out.append(next_block)
    elif op in ("ret", "exit", "trap"):
        if conditional and next_block is not None:
            out.append(next_block)
    elif next_block is not None:
        out.append(next_block)
    return list(dict.fromkeys(out))


def build_cfg(fn: Function) -> Cfg:
    """Split a function into basic blocks, link them, and compute dominators."""
    leaders = _leaders(fn)
    n = len(fn.body)
    blocks: list[BasicBlock] = []
    block_at: dict[int, int] = {}
    for bid, start in enumerate(leaders):
        end = leaders[bid + 1] if bid + 1 < len(leaders) else n
        blocks.append(BasicBlock(bid, start, end))
        block_at[start] = bid
    for label, idx in fn.labels.items():
        if idx in block_at:
            blocks[block_at[idx]].labels.append(label)
    block_of = [0] * n
    for b in blocks:
        for i in range(b.start, b.end):
            block_of[i] = b.id
        nxt = b.id + 1 if b.id + 1 < len(blocks) else None
        b.succs = _successors(fn, fn.body[b.end - 1], nxt, block_at)
    for b in blocks:
        for s in b.succs:
            blocks[s].preds.append(b.id)
    cfg = Cfg(fn, blocks, block_of)
    _compute_dominators(cfg)
    cfg.cold = library_slow_paths(cfg)
    return cfg


#: the argument bound of the CUDA math library's single-precision sinf, cosf, tanf and sincosf, 105615.0f
#: (`0f47CE4780` in PTX): a larger argument is reduced by the Payne-Hanek method, an out-of-line path of
#: about 60 instructions with a local-memory buffer, where a smaller one takes a few fused multiply-adds
#: (CUDA Math API, "Single Precision Mathematical Functions": the functions' slow path for large arguments)
TRIG_REDUCTION_BOUND = 105615.0
_BELOW = frozenset({"lt", "ltu", "le", "leu"})
_ABOVE = frozenset({"gt", "gtu", "ge", "geu"})


def library_slow_paths(cfg: Cfg) -> frozenset[int]:
    """Blocks only the math library's large-argument trig reduction runs.

    The path starts at the successor of a branch on `|x| < 105615.0f` (a `setp` on an `abs.f32` value against
    that constant, in the branch's block) that the argument takes when it is at least the bound; its blocks are
    those that successor dominates (the join after it is reached from the fast side too). Typical kernel data
    (angles, phases, normalised values) stays far below the bound, so counting both sides, as every other
    data-dependent branch is counted, made a sinf loop several times slower than measured."""
    cold: set[int] = set()
    for b in cfg.blocks:
        slow = _slow_successor(cfg, b)
        if slow is not None and slow not in cfg.unreachable and len(cfg.blocks[slow].preds) == 1:
            cold.update(d for d in range(len(cfg.blocks)) if cfg.dominates(slow, d))
    return frozenset(cold)


def _slow_successor(cfg: Cfg, b: BasicBlock) -> int | None:
    """The successor a trig-reduction guard ending block `b` sends large arguments to, or None."""
    body = cfg.function.body
    last = body[b.end - 1]
    if last.opcode != "bra" or last.guard is None or len(b.succs) != 2:
        return None
    setp = next((ins for ins in reversed(body[b.start:b.end - 1]) if ins.opcode == "setp"
                 and ins.operands and isinstance(ins.operands[0], Reg) and ins.operands[0].name == last.guard.reg),
                None)
    if setp is None or len(setp.operands) < 3 or not setp.modifiers or setp.modifiers[-1] != "f32":
        return None
    bound = setp.operands[2]
    if not (isinstance(bound, Imm) and bound.value == TRIG_REDUCTION_BOUND and _is_abs(body[b.start:b.end], setp)):
        return None
    cmp = setp.modifiers[0]
    if cmp not in _BELOW and cmp not in _ABOVE:
        return None
    taken_when_large = (cmp in _ABOVE) != last.guard.negated
    target = b.succs[0]  # the branch target comes first in `succs`, the fall-through second
    return target if taken_when_large else b.succs[1]


def _is_abs(block: list[Instruction], setp: Instruction) -> bool:
    """Whether the compared register is written by an `abs.f32` in the same block."""
    src = setp.operands[1]
    return isinstance(src, Reg) and any(ins.opcode == "abs" and ins.operands and isinstance(ins.operands[0], Reg)
                                        and ins.operands[0].name == src.name for ins in block)


def _reverse_postorder(blocks: list[BasicBlock]) -> list[int]:
    if not blocks:
        return []
    seen = {0}
    order: list[int] = []
    stack: list[tuple[int, int]] = [(0, 0)]
    while stack:
        node, k = stack[-1]
        succs = blocks[node].succs
        if k < len(succs):
            stack[-1] = (node, k + 1)
            s = succs[k]
            if s not in seen:
                seen.add(s)
                stack.append((s, 0))
        else:
            order.append(node)
            stack.pop()
    order.reverse()
    return order


def _compute_dominators(cfg: Cfg) -> None:
    blocks = cfg.blocks
    rpo = _reverse_postorder(blocks)
    cfg.rpo = rpo
    position = {b: i for i, b in enumerate(rpo)}
    cfg.unreachable = {b.id for b in blocks if b.id not in position}
    idom = [-1] * len(blocks)
    if not blocks:
        cfg.idom = idom
        return
    idom[0] = 0

    def intersect(a: int, b: int) -> int:
        while a != b:
            while position[a] > position[b]:
                a = idom[a]
            while position[b] > position[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            preds = [p for p in blocks[b].preds if idom[p] != -1 and p in position]
            if not preds:
                continue
            new = preds[0]
            for p in preds[1:]:
                new = intersect(p, new)
            if idom[b] != new:
                idom[b] = new
                changed = True
    for b in cfg.unreachable:
        idom[b] = b
    cfg.idom = idom
