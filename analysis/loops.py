"""Natural loops of a CFG: back edges, bodies, nesting, and their CUDA source lines.

A back edge is an edge `t -> h` whose target dominates its source; the natural loop of `h` is `h` plus every
block that reaches `t` without passing through `h`. Loops that share a header are merged (a `continue` makes
two back edges to one header). Retreating edges whose target does not dominate the source (irreducible flow,
rare in nvcc output) are not loops; they are reported in `irreducible_edges` so a model can say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.ptx.model import line_in_file


@dataclass(slots=True)
class Loop:
    """A natural loop: header block, all blocks of the body (header included), back-edge sources, nesting."""

    id: int
    header: int
    blocks: frozenset[int]
    latches: list[int]
    exits: list[tuple[int, int]] = field(default_factory=list)  # edges (inside, outside)
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    depth: int = 1

    def source_lines(self, cfg: Cfg, main_file: str | None = None) -> tuple[int, int] | None:
        """First and last line of `main_file` (any file when None) among the loop's instructions (None without
        line info); an intrinsic inlined from a header counts at the line that calls it."""
        lines = [
            line
            for b in self.blocks
            for ins in cfg.instructions(b)
            if (line := line_in_file(ins.loc, main_file)) is not None
        ]
        return (min(lines), max(lines)) if lines else None

    def header_line(self, cfg: Cfg, main_file: str | None = None) -> int | None:
        """The line of the loop's header block (the loop condition) in `main_file`, if known."""
        for ins in cfg.instructions(self.header):
            if (line := line_in_file(ins.loc, main_file)) is not None:
                return line
        span = self.source_lines(cfg, main_file)
        return span[0] if span else None


@dataclass(slots=True)
class LoopForest:
    """All loops of a function, innermost-first lookup by block."""

    loops: list[Loop]
    innermost: dict[int, int]  # block id -> id of the innermost loop containing it
    irreducible_edges: list[tuple[int, int]]
    #: the regions of `cfg_longest_path` by the set of blocks with a cost, made on the first walk
    path_plans: dict[frozenset[int], PathPlan] = field(default_factory=dict, repr=False, compare=False)

    def depth_of(self, block: int) -> int:
        lid = self.innermost.get(block)
        return self.loops[lid].depth if lid is not None else 0

    def enclosing(self, block: int) -> list[Loop]:
        """Loops containing `block`, innermost first."""
        out: list[Loop] = []
        lid = self.innermost.get(block)
        while lid is not None:
            out.append(self.loops[lid])
            lid = self.loops[lid].parent
        return out


def find_loops(cfg: Cfg) -> LoopForest:
    """Find every natural loop of `cfg` with its nesting."""
    bodies: dict[int, set[int]] = {}
    latches: dict[int, list[int]] = {}
    irreducible: list[tuple[int, int]] = []
    order = {b: i for i, b in enumerate(cfg.rpo)}
    for b in cfg.rpo:
        for s in cfg.blocks[b].succs:
            if cfg.dominates(s, b):
                body = bodies.setdefault(s, {s})
                latches.setdefault(s, []).append(b)
                _collect_body(cfg, s, b, body)
            elif s in order and order[s] <= order[b]:
                irreducible.append((b, s))
    # Outer loops are larger: sort by size so parents come first.
    headers = sorted(bodies, key=lambda h: (-len(bodies[h]), order.get(h, 0)))
    loops = [Loop(i, h, frozenset(bodies[h]), latches[h]) for i, h in enumerate(headers)]
    for lp in loops:
        lp.exits = [(b, s) for b in sorted(lp.blocks) for s in cfg.blocks[b].succs if s not in lp.blocks]
    for i, inner in enumerate(loops):
        for j in range(i - 1, -1, -1):
            outer = loops[j]
            contains = inner.header in outer.blocks and inner.blocks <= outer.blocks
            if contains and (inner.parent is None or len(outer.blocks) < len(loops[inner.parent].blocks)):
                inner.parent = j
    for lp in loops:
        if lp.parent is not None:
            loops[lp.parent].children.append(lp.id)
    for lp in loops:  # parents precede children in `loops`
        lp.depth = loops[lp.parent].depth + 1 if lp.parent is not None else 1
    innermost: dict[int, int] = {}
    for lp in loops:  # later loops are smaller (inner), so they overwrite
        for b in lp.blocks:
            innermost[b] = lp.id
    return LoopForest(loops, innermost, irreducible)


def _collect_body(cfg: Cfg, header: int, latch: int, body: set[int]) -> None:
    stack = [latch]
    while stack:
        b = stack.pop()
        if b in body:
            continue
        body.add(b)
        stack.extend(p for p in cfg.blocks[b].preds if p not in body)


def block_weights(cfg: Cfg, loops: LoopForest, trips: Mapping[int, float],
                  dead: frozenset[int] = frozenset()) -> dict[int, float]:
    """How often each reachable block runs per thread: the product of the trip counts of the loops around it.

    `trips` is keyed by loop header block id; a loop missing from it counts once. `dead` holds the blocks no
    thread of the analysed launch reaches (`MemoryAnalysis.dead_blocks`): like unreachable and cold blocks
    (`Cfg.never_runs`) they run 0 times, so every count made from these weights leaves them out alike.
    """
    out: dict[int, float] = {}
    for b in cfg.blocks:
        if cfg.never_runs(b.id) or b.id in dead:
            continue
        w = 1.0
        for lp in loops.enclosing(b.id):
            w *= trips.get(lp.header, 1.0)
        out[b.id] = w
    return out


#: A node of a region of the longest-path walk: (loop id for a folded inner loop else None, block id,
#: indices of its forward successors in the region's node list, which is sorted by reverse post-order)
_RegionNode = tuple[int | None, int, tuple[int, ...]]


@dataclass(slots=True)
class PathPlan:
    """The cost-independent part of `cfg_longest_path` for one loop forest and one set of costed blocks: each
    loop's region (innermost first) and the whole function's, their nodes in reverse post-order."""

    folds: list[tuple[int, int, list[_RegionNode]]]  # (loop id, header block, region), innermost first
    whole: list[_RegionNode]
    #: per region (by identity), each node's immediate post-dominator in it; made when a walk first needs it
    post_dominators: dict[int, list[int | None]] = field(default_factory=dict)


def cfg_longest_path(cfg: Cfg, loops: LoopForest, cost: Mapping[int, float], trips: Mapping[int, float],
                     divergent: Mapping[int, float] | None = None) -> float:
    """The longest path of block costs through the CFG, each natural loop folded to body path x trip count
    (thesis Algorithm 7's walk; `loops` is the CFG's loop forest).

    `divergent` maps a block whose branch splits a warp's lanes to the share of warps it splits: such a warp runs
    the branch's sides one after the other before its lanes meet again (`_region_serial`), so the walk adds them
    up for that share instead of taking the longer.

    The regions (which blocks and folded loops are nodes, and their forward edges) depend on the CFG, its loops
    and which blocks have a cost only, so they are worked out once and kept by the loop forest; each call only
    adds up costs (the thesis scheduler walks once per wave, the kerncast model once more)."""
    blocks = frozenset(cost)
    plan = loops.path_plans.get(blocks)
    if plan is None:
        plan = loops.path_plans[blocks] = _path_plan(cfg, loops, blocks)
    folded: dict[int, float] = {}  # loop id -> cost of the whole loop

    def walk(nodes: list[_RegionNode]) -> float:
        if divergent and any(loop_id is None and block in divergent and len(succs) > 1
                             for loop_id, block, succs in nodes):
            ipdom = plan.post_dominators.get(id(nodes))
            if ipdom is None:
                ipdom = plan.post_dominators[id(nodes)] = _post_dominators(nodes)
            return _region_serial(nodes, ipdom, cost, folded, divergent)
        return _region_longest(nodes, cost, folded)

    for loop_id, header, nodes in plan.folds:
        folded[loop_id] = walk(nodes) * trips.get(header, 1.0)
    return walk(plan.whole)


def _region_longest(nodes: list[_RegionNode], cost: Mapping[int, float], folded: Mapping[int, float]) -> float:
    """The longest path through one region's nodes (a DAG in node order)."""
    dist = [0.0] * len(nodes)
    best = 0.0
    for i, (loop_id, block, succs) in enumerate(nodes):
        d = dist[i] + (folded[loop_id] if loop_id is not None else cost[block])
        best = max(best, d)
        for j in succs:
            if dist[j] < d:
                dist[j] = d
    return best


def _post_dominators(nodes: list[_RegionNode]) -> list[int | None]:
    """Each node's immediate post-dominator in its region (None when its paths end apart): the nodes on every
    path from it to the region's end form a chain, and the nearest comes first in node order."""
    after: list[frozenset[int]] = [frozenset()] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):
        succs = nodes[i][2]
        common = frozenset.intersection(*(after[j] for j in succs)) if succs else frozenset()
        after[i] = common | {i}
    return [min(a - {i}, default=None) for i, a in enumerate(after)]


def _region_serial(nodes: list[_RegionNode], ipdom: list[int | None], cost: Mapping[int, float],
                   folded: Mapping[int, float], divergent: Mapping[int, float]) -> float:
    """The longest path through one region when some branches split a warp (SIMT: the warp runs one side's
    lanes, then the other's, and they meet again at the branch's immediate post-dominator `J`).

    Walked from the end: `L(n)` is the longest cost from `n` on. Every path from a successor `s` passes `J`, so
    the part of it before `J` is `L(s) - L(J)`; a split warp runs each successor's part and then `J`'s:
    `cost(n) + sum L(s) - (k - 1) L(J)` for `k` successors, against `cost(n) + max L(s)` for a warp whose lanes
    agree, weighted by the share of warps the branch splits."""
    longest = [0.0] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):
        loop_id, block, succs = nodes[i]
        own = folded[loop_id] if loop_id is not None else cost[block]
        best = max((longest[j] for j in succs), default=0.0)
        share = divergent.get(block, 0.0) if loop_id is None and len(succs) > 1 else 0.0
        if share > 0.0:
            j = ipdom[i]
            meet = longest[j] if j is not None else 0.0
            serial = sum(longest[s] for s in succs) - (len(succs) - 1) * meet
            best = share * serial + (1.0 - share) * best
        longest[i] = own + best
    return max(longest, default=0.0)


def _path_plan(cfg: Cfg, loops: LoopForest, costed: frozenset[int]) -> PathPlan:
    """Every region of the walk: a loop's region has its own blocks and its directly nested loops as nodes."""
    order = {b: i for i, b in enumerate(cfg.rpo)}
    loop_list = list(loops.loops)

    def rep(block: int, inside: int | None) -> tuple[str, int]:
        """The node standing for `block` in the region of loop `inside` (None: the whole function)."""
        top = None
        for lp in loops.enclosing(block):
            if lp.id == inside:
                break
            top = lp
        return ("loop", top.id) if top is not None else ("block", block)

    def region(blocks: frozenset[int] | set[int], inside: int | None) -> list[_RegionNode]:
        key: dict[tuple[str, int], int] = {}
        for b in blocks:
            if b not in costed:
                continue
            n = rep(b, inside)
            if n not in key:
                key[n] = order[loop_list[n[1]].header] if n[0] == "loop" else order[b]
        succ: dict[tuple[str, int], set[tuple[str, int]]] = {n: set() for n in key}
        for b in blocks:
            if b not in costed:
                continue
            nb = rep(b, inside)
            for s in cfg.blocks[b].succs:
                if s not in blocks or s not in costed:
                    continue
                ns = rep(s, inside)
                if ns != nb and key[ns] > key[nb]:
                    succ[nb].add(ns)
        ranked = sorted(key, key=lambda x: key[x])
        index = {n: i for i, n in enumerate(ranked)}
        return [(n[1] if n[0] == "loop" else None, n[1], tuple(sorted(index[s] for s in succ[n]))) for n in ranked]

    folds = [(lp.id, lp.header, region(lp.blocks, lp.id)) for lp in sorted(loop_list, key=lambda x: -x.depth)]
    return PathPlan(folds, region({b.id for b in cfg.blocks}, None))
