"""Per-warp execution traces for the trace model: the basic blocks one warp runs, in order, loops folded.

The hybrid trace-based estimation this model follows walks the CFG once per warp with a bidirectional
branch search; a structured walk over the loop-nest tree gives the same traces more simply:

* a loop becomes one `LoopRun` item holding its body's items and its trip count (from the trip-count stage),
  so a trace is O(blocks), never O(iterations); the simulator expands a window of the iterations;
* a two-way branch is decided per warp from its symbolic predicate (the dataflow layer's guards) with the
  warp's thread indices, its block index and the launch's known parameters substituted, lane by lane:
  every lane agrees -> that path only; lanes disagree -> both paths, one after the other (divergence);
* a predicate that stays symbolic (it reads loaded data or a loop's iteration) runs both paths: the paper's
  "always hit" assumption, reported in the model's assumptions.

Warps whose decisions are the same share one trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.symbolic import SymbolicResult
from kerncast.analysis.loops import LoopForest

TAKEN, FALL, DIVERGENT, ASSUMED = "taken", "fall", "divergent", "assumed"


@dataclass(frozen=True, slots=True)
class LoopRun:
    """One loop in a trace: its id, how many times its body runs for this warp, and the body's items."""

    loop: int
    trips: float
    body: tuple[int | LoopRun, ...]


Item = int | LoopRun


@dataclass(slots=True)
class WarpTrace:
    """A warp's trace (basic block ids and loops, in execution order) and how its branches were decided."""

    items: tuple[Item, ...]
    decisions: dict[int, str] = field(default_factory=dict)  # branch instruction index -> TAKEN/FALL/...


class BranchResolver:
    """Decides the kernel's two-way branches for one warp from their symbolic predicates.

    `params` maps kernel parameter index -> value (the launch's known parameters); `block`/`grid` are the
    launch's shapes. Predicates that do not read a lane's thread index are evaluated once per block index.
    """

    def __init__(self, cfg: Cfg, loops: LoopForest, symbolic: SymbolicResult, params: Mapping[int, int],
                 block: tuple[int, int, int], grid: tuple[int, int, int], warp_size: int = 32) -> None:
        self.cfg, self.sym, self.block, self.grid, self.warp_size = cfg, symbolic, block, grid, warp_size
        atoms = symbolic.atoms
        base: dict[int, E.Value] = dict(symbolic.resolution)
        for axis, nb, ng in zip("xyz", block, grid, strict=True):
            base[atoms.atom(("sym", f"ntid.{axis}"))] = E.const(int(nb))
            base[atoms.atom(("sym", f"nctaid.{axis}"))] = E.const(int(ng))
        fn = cfg.function
        for i, p in enumerate(fn.params):
            atom = symbolic.params.get(p.name)
            if atom is not None and i in params:
                base[atom] = E.const(int(params[i]))
        self.base = base
        self._tid = tuple(atoms.atom(("sym", f"tid.{a}"), True) for a in "xyz")
        self._ctaid = tuple(atoms.atom(("sym", f"ctaid.{a}")) for a in "xyz")
        self._lane = atoms.atom(("sym", "laneid"), True)
        control = {b for lp in loops.loops for b, _ in lp.exits} | {b for lp in loops.loops for b in lp.latches}
        # a loop's exit and back-edge branches are the trip count's business, not the walk's
        self.branches = [last.index for b in cfg.blocks if not cfg.never_runs(b.id) and len(b.succs) == 2
                         and b.id not in control
                         and (last := fn.body[b.end - 1]).opcode == "bra" and last.guard is not None]

    def _subst(self, cta: int, thread: int | None) -> dict[int, E.Value]:
        s = dict(self.base)
        gx, gy, _ = self.grid
        for atom, v in zip(self._ctaid, (cta % gx, (cta // gx) % gy, cta // (gx * gy)), strict=True):
            s[atom] = E.const(v)
        if thread is not None:
            bx, by, _ = self.block
            for atom, v in zip(self._tid, (thread % bx, (thread // bx) % by, thread // (bx * by)), strict=True):
                s[atom] = E.const(v)
            s[self._lane] = E.const(thread % self.warp_size)
        return s

    def _value(self, pred: E.Value, subst: dict[int, E.Value]) -> int | None:
        try:
            v = E.evaluate(self.sym.atoms, pred, subst, {})
        except (ArithmeticError, ValueError, TypeError, KeyError, IndexError, RecursionError):
            return None
        return E.as_const(v) if v is not None else None

    def distinct_lane_values(self, value: E.Value, cta: int = 0, warp: int = 0) -> int | None:
        """How many different values `value` takes over the lanes of warp `warp` of block `cta` (1: the warp
        reads one address, a broadcast); None where it stays symbolic."""
        if not self.sym.atoms.is_lane(value):
            return 1
        threads = self.block[0] * self.block[1] * self.block[2]
        seen: set[int | None] = set()
        for t in range(warp * self.warp_size, min(threads, (warp + 1) * self.warp_size)):
            seen.add(self._value(value, self._subst(cta, t)))
            if None in seen:
                return None
        return len(seen)

    def decide(self, cta: int, warp: int) -> dict[int, str]:
        """Branch instruction index -> TAKEN, FALL, DIVERGENT or ASSUMED for warp `warp` of block `cta`."""
        out: dict[int, str] = {}
        threads = self.block[0] * self.block[1] * self.block[2]
        lanes = range(warp * self.warp_size, min(threads, (warp + 1) * self.warp_size))
        uniform = self._subst(cta, None)
        for idx in self.branches:
            pred = self.sym.guards.get(idx)
            if pred is None:
                out[idx] = ASSUMED
                continue
            if not self.sym.atoms.is_lane(pred):
                seen = {self._value(pred, uniform)}
            else:
                seen = set()
                for t in lanes:
                    seen.add(self._value(pred, self._subst(cta, t)))
                    if None in seen or len(seen) > 1:
                        break
            if None in seen or not seen:
                out[idx] = ASSUMED
            elif len(seen) > 1:
                out[idx] = DIVERGENT
            else:
                out[idx] = TAKEN if seen.pop() else FALL
        return out


def build_trace(cfg: Cfg, loops: LoopForest, trips: Mapping[int, float], decisions: Mapping[int, str]) -> WarpTrace:
    """The warp's trace: the CFG walked in reverse post-order region by region (the function, then each loop
    body), a block kept when an edge the warp takes reaches it and the time models count it at all (not
    `Cfg.never_runs`: the dependence graphs the simulation issues from hold no such block); a loop becomes
    one `LoopRun`."""
    children: dict[int | None, list[int]] = {}
    for lp in loops.loops:
        children.setdefault(lp.parent, []).append(lp.id)
    order = {b: i for i, b in enumerate(cfg.rpo)}
    body = cfg.function.body

    def region(blocks: Iterable[int], loop_id: int | None) -> tuple[Item, ...]:
        inside = set(blocks)
        header = loops.loops[loop_id].header if loop_id is not None else cfg.entry
        kids = {loops.loops[c].header: loops.loops[c] for c in children.get(loop_id, [])}
        reached = {header}
        consumed: set[int] = set()
        items: list[Item] = []
        for b in sorted(inside, key=lambda x: order.get(x, len(order))):
            if b in consumed or b not in reached or cfg.never_runs(b):
                continue
            child = kids.get(b)  # a loop region's own header is never a child's (loops.py merges them)
            if child is not None:
                consumed |= child.blocks
                items.append(LoopRun(child.id, max(0.0, float(trips.get(child.header, 0.0))),
                                     region(child.blocks, child.id)))
                reached.update(o for _, o in child.exits if o in inside)
                continue
            items.append(b)
            succs = [s for s in cfg.blocks[b].succs if s in inside and s != header]
            blk = cfg.blocks[b]
            last = body[blk.end - 1] if blk.end > blk.start else None
            decision = decisions.get(last.index) if last is not None else None
            if decision in (TAKEN, FALL) and len(blk.succs) == 2 and all(s in inside for s in blk.succs):
                succs = [blk.succs[0] if decision == TAKEN else blk.succs[1]]
                succs = [s for s in succs if s != header]
            reached.update(succs)
        return tuple(items)

    return WarpTrace(region(range(len(cfg.blocks)), None), dict(decisions))
