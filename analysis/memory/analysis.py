"""Warp-level behaviour of every global/shared access and every conditional branch of a kernel.

For each memory instruction the symbolic byte address (the kernel's dataflow layer, `dataflow.symbolic`) is
instantiated for the 32 lanes of the sampled warps (see `warp`; all lanes at once, see `lanevec`, and kept as
plain ints where the lanes differ only by a constant), restricted to the lanes that reach it (the conditions
of the branches that dominate its block, and its own guard). Loops whose variable is geometric (`s *= 2`,
`s >>= 1`) and whose start and bound are known are enumerated iteration by iteration, because both the bank
conflicts of a strided reduction and the divergence of an interleaved one change with `s`. The per-request costs are
averaged over the sampled (warp, iteration) instances; how often an instruction runs per thread comes from
the loop trip counts.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product
from math import gcd
from typing import Any, ClassVar

import numpy as np
from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import KernelDataflow
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, Value
from kerncast.analysis.dataflow.induction import geometric_step
from kerncast.analysis.dataflow.reaching import LOADED
from kerncast.analysis.dataflow.symbolic import SymbolicResult
from kerncast.analysis.isa import MemoryTouch, memory_touch
from kerncast.analysis.json_form import FieldsJson
from kerncast.analysis.launch import LaunchOverrides, infer_launch
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.memory.lanevec import (
    LaneVectors,
    VecPoly,
    lane_varying,
    lane_vectors,
    op_has_lane,
)
from kerncast.analysis.memory.render import Renderer, kernel_param_names
from kerncast.analysis.memory.warp import (
    FIRST_WARPS,
    SECTOR,
    WARP,
    Lane,
    LaneConstants,
    RequestCost,
    address_alignment,
    branch_outcome,
    divided_index_cost,
    first_warps_lanes,
    global_cost,
    lane_ints,
    lanes_taken,
    local_cost,
    shared_cost,
    warp_lanes,
)
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx.model import Function, Imm, MatrixTile, Module, loc_in_file, matrix_tile
from kerncast.analysis.sampling import evenly_spread, spread_combinations
from kerncast.analysis.tripcount import leave_value
from kerncast.analysis.tripcount import trip_counts as ptx_trip_counts

MAX_ENUMERATED_ITERATIONS = 64
#: values of a loop counter (spread over its trip count) and block indices (the first ones) at which an address
#: is read when its lanes can be related only at concrete values of them (see `_Kernel.sampled_assignments`)
SAMPLED_ITERATIONS = 8
SAMPLED_BLOCKS = 4
_BLOCK_INDICES = frozenset({"ctaid.x", "ctaid.y", "ctaid.z"})
#: A branch is divergent when at least this share of the sampled (warp, iteration) instances split the warp.
DIVERGENT_SHARE = 0.25
_ALIGN_PARAM_POINTER = 256
#: the widest load a thread issues (PTX ISA, ld: `.v4` of 32-bit elements; data/timing.toml [kerncast.shared_vector])
VECTOR_BYTES = 16


@dataclass(slots=True)
class AccessInfo(FieldsJson):
    """One global, shared or local load, store or atomic, as a warp sees it (averages over sampled warps).

    `sectors_per_request`/`ideal_sectors` are for global accesses (32-byte sectors), `wavefronts`/
    `ideal_wavefronts` for shared ones. `lane_stride_bytes` is the address step from one lane to the next
    (a string when it is symbolic, e.g. `4*cols`). `executions` is how often one thread runs the instruction.
    `known` is False when the lanes' addresses could not be related (a gather through loaded indices).
    `condition` says under which parameter values a symbolic-stride access would be coalesced. The fields
    after it are for findings and fixes, not the JSON form.
    """

    JSON_LAST: ClassVar[str] = "condition"

    index: int
    line: int | None
    space: str
    kind: str
    width_bytes: int
    sectors_per_request: float | None = None
    ideal_sectors: float | None = None
    wavefronts: float | None = None
    ideal_wavefronts: float | None = None
    lane_stride_bytes: int | str | None = None
    executions: float = 1.0
    known: bool = False
    condition: str | None = None
    column: int = 0
    file: str | None = None
    arrays: list[str] = field(default_factory=list)
    active_lanes: float | None = None
    symbolic: bool = False
    #: for an unknown access, whether a loaded value is in its address (a gather) or only a value the analysis
    #: cannot compute per lane (an unknown block size, a data-dependent branch before it)
    gather: bool = True
    #: for an atomic: the most lanes of a sampled warp that hit one address (averaged over the instances), and
    #: whether its address is the same in every block of the grid (no blockIdx in it)
    lanes_per_address: float | None = None
    grid_uniform: bool = False
    #: the lanes per address counts lanes behind a condition on data: at most that many
    lanes_upper_bound: bool = False
    #: the share of sampled warp instances with any lane active at the instruction (a `threadIdx.x == 0` leader's
    #: atomic runs in one warp of the block), None when nothing was sampled
    warp_share: float | None = None
    #: for a global access: the distinct 128-byte lines one warp request touches (the passes of the L1's tag
    #: stage), averaged over the sampled instances; None where some instance has no count
    lines_per_request: float | None = None
    #: the largest power of two up to 128 that divides the address in every thread (its array's alignment and
    #: the constant and index terms): what tells whether ptxas may merge neighbouring loads into a vector load
    align: int | None = None
    #: for a 32-bit shared load aligned to 16 bytes: the wavefronts of a 16-byte load at its lanes' addresses,
    #: what the vector load ptxas may make of it and its three neighbours costs (`estimate.vector_merged`)
    vector_wavefronts: float | None = None

    @property
    def excess_percent(self) -> float:
        """Share of sectors (global) or wavefronts (shared) above the ideal, in percent."""
        if self.space == "shared":
            a, i = self.wavefronts, self.ideal_wavefronts
        else:
            a, i = self.sectors_per_request, self.ideal_sectors
        if not a or i is None:
            return 0.0
        return max(0.0, (a - i) / a * 100.0)


@dataclass(slots=True)
class BranchInfo(FieldsJson):
    """A conditional branch: the share of sampled warp instances whose lanes disagree, and why (the JSON form
    ends at `executions`; the position and the instance count serve findings)."""

    JSON_LAST: ClassVar[str] = "executions"

    index: int
    line: int | None
    divergent: bool
    share: float | None
    depends_on: list[str]
    condition: str
    executions: float = 1.0
    column: int = 0
    file: str | None = None
    instances: int = 0


@dataclass(frozen=True, slots=True)
class WarpFacts:
    """What the memory findings and their fixes read of one kernel's analysis besides its accesses and branches:
    its name, the block shape it was analysed under, its symbolic register values (the accesses' addresses and
    the loops' iteration atoms), the launch's known values substituted into them, and the lane index atoms."""

    kernel: str
    block: tuple[int, int, int] | None
    sym: SymbolicResult
    atoms: Atoms
    base: dict[int, Value]
    lane_atoms: dict[str, int]
    #: each access's address with the launch's values substituted, and the evaluation cache they share
    _at_launch: dict[int, Value] = field(default_factory=dict, repr=False, compare=False)
    _evaluated: dict[int, Value] = field(default_factory=dict, repr=False, compare=False)

    def at_launch(self, index: int) -> Value:
        """The address of access `index` with the launch's known values substituted (None where it is not
        known), worked out once per access: the findings and their fixes ask for it several times each."""
        if index not in self._at_launch:
            self._at_launch[index] = E.evaluate(self.atoms, self.sym.addresses.get(index), self.base,
                                                self._evaluated)
        return self._at_launch[index]


@dataclass(slots=True)
class MemoryAnalysis:
    """The memory and divergence facts of one kernel, plus the summary the time models consume."""

    accesses: list[AccessInfo] = field(default_factory=list)
    branches: list[BranchInfo] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    block: tuple[int, int, int] | None = None
    uncoalesced_percent: float = 25.0
    #: byte address of each global access (instruction index -> polynomial, launch values substituted), the
    #: atom table and each loop's iteration atom (loop header -> atom): the time model's footprint reads them
    addresses: dict[int, Value] = field(default_factory=dict)
    atoms: Atoms | None = None
    iteration_atoms: dict[int, int] = field(default_factory=dict)
    #: warp-level work units spent (see `_Kernel.work`); deterministic for a given kernel and launch
    work: int = 0
    #: memory instructions and branches left unanalysed because the time budget ran out
    skipped: int = 0
    #: what the findings and their fixes read of the kernel's symbolic values (None: not analysed)
    facts: WarpFacts | None = None
    #: basic blocks no thread of the launch reaches: a branch condition decided by the launch's values alone
    #: (parameters, block size) excludes them, as it does the remainder of a loop nvcc unrolled by 4 when the
    #: count is a multiple of 4, or a loop's skip path when the count is known to be positive
    dead_blocks: frozenset[int] = frozenset()
    #: basic block -> the share of the sampled (iteration, warp) instances in which some lane runs it, for the
    #: blocks a lane-dependent guard makes some warps skip entirely (absent: every warp runs it); such a warp
    #: issues none of the block's instructions, so its issue cost scales by the share
    warp_share: dict[int, float] = field(default_factory=dict)
    #: for the same blocks: the share of warps that would run it if the lanes passing its guards were packed
    #: into whole warps (`ceil(passing threads / 32)` warps per block and iteration), what a divergent guard's
    #: fix, which makes the condition uniform per warp, leaves to run (`stages.gains`)
    packed_share: dict[int, float] = field(default_factory=dict)

    def _global(self) -> list[AccessInfo]:
        return [a for a in self.accesses if a.space == "global"]

    def global_requests(self) -> tuple[float, float]:
        """(coalesced, uncoalesced) global warp-level requests per warp, i.e. dynamic executions per thread.

        Each warp issues one request per execution of the instruction, so the per-thread execution counts
        summed over global accesses are the requests one warp makes. An access counts as uncoalesced when
        its sectors exceed the ideal by more than the threshold; unknown ones (gathers) count as coalesced,
        see `unknown_requests`.
        """
        coal = unc = 0.0
        for a in self._global():
            if a.known and a.excess_percent > self.uncoalesced_percent:
                unc += a.executions
            else:
                coal += a.executions
        return coal, unc

    def unknown_requests(self) -> float:
        """Global requests per warp whose addresses could not be related (counted as coalesced above)."""
        return sum(a.executions for a in self._global() if not a.known)

    def average_sectors_per_request(self) -> float | None:
        """32-byte sectors per global request, weighted by executions; None when no access is known."""
        known = [a for a in self._global() if a.known and a.sectors_per_request is not None]
        w = sum(a.executions for a in known)
        if not known or w <= 0:
            return None
        return sum(a.sectors_per_request * a.executions for a in known) / w  # type: ignore[operator]

    def uncoalesced_sectors_per_request(self) -> float | None:
        """32-byte sectors per request of the uncoalesced global accesses only, weighted by executions.

        This is Hong & Kim's #Uncoal_per_mw (transactions per uncoalesced memory warp) for MWP-CWP; None when no
        access is uncoalesced.
        """
        unc = [a for a in self._global() if a.known and a.sectors_per_request is not None
               and a.excess_percent > self.uncoalesced_percent]
        w = sum(a.executions for a in unc)
        if not unc or w <= 0:
            return None
        return sum(a.sectors_per_request * a.executions for a in unc) / w  # type: ignore[operator]

    def global_sector_factor(self) -> float | None:
        """Sectors moved per sector needed, over known global accesses weighted by executions (1 = ideal).

        This is how many times the DRAM/L2 traffic of the kernel's global accesses exceeds what coalesced
        access would move; the thesis's global memory penalty (Eq. 4.10) is scaled by it.
        """
        known = [a for a in self._global() if a.known and a.sectors_per_request and a.ideal_sectors]
        ideal = sum(a.ideal_sectors * a.executions for a in known)  # type: ignore[operator]
        if ideal <= 0:
            return None
        return sum(a.sectors_per_request * a.executions for a in known) / ideal  # type: ignore[operator]

    def shared_wavefronts_per_request(self) -> float | None:
        """Wavefronts per shared request (1 = conflict-free 32-bit), weighted by executions."""
        known = [a for a in self.accesses if a.space == "shared" and a.known and a.wavefronts is not None]
        w = sum(a.executions for a in known)
        if not known or w <= 0:
            return None
        return sum(a.wavefronts * a.executions for a in known) / w  # type: ignore[operator]

    def shared_requests(self) -> float:
        """Shared warp-level requests per warp (dynamic executions per thread)."""
        return sum(a.executions for a in self.accesses if a.space == "shared")

    def to_json(self) -> dict[str, Any]:
        return {"accesses": [a.to_json() for a in self.accesses], "branches": [b.to_json() for b in self.branches],
                "assumptions": self.assumptions, "block": list(self.block) if self.block else None,
                "global_requests": list(self.global_requests()),
                "average_sectors_per_request": self.average_sectors_per_request(),
                "shared_wavefronts_per_request": self.shared_wavefronts_per_request()}


class _Kernel:
    """State for analysing one kernel; built once, queried per instruction."""

    def __init__(self, module: Module, fn: Function, cfg: Cfg, loops: LoopForest,
                 block: tuple[int, int, int] | None, params: dict[str, int], trip_counts: dict[int, int],
                 main_file: str | None, cuda_source: str | None,
                 dataflow: KernelDataflow | None = None, first_warps: bool = False) -> None:
        self.module, self.fn, self.cfg, self.loops = module, fn, cfg, loops
        self.block = _shape(block)
        self.main_file = main_file
        if dataflow is None:
            dataflow = KernelDataflow(fn, cfg, loops)
        self.dataflow = dataflow
        self.sym: SymbolicResult = dataflow.symbolic
        self.atoms: Atoms = self.sym.atoms
        self.assumptions: list[str] = []
        self.trip_counts: dict[int, int | None] = {int(k): int(v) for k, v in trip_counts.items()
                                                   if v is not None and int(v) >= 0}
        self.params = params
        cuda_names = kernel_param_names(cuda_source, fn.display_name)
        self.param_names: dict[str, str] = {}
        for i, p in enumerate(fn.params):
            if i < len(cuda_names):
                self.param_names[p.name] = cuda_names[i]
        self.base = self._base_subst(params)
        self.align_of, self.space_of = self._symbols()
        self.lanes = first_warps_lanes(self.atoms) if first_warps and self.block is None else \
            warp_lanes(self.atoms, self.block)
        self.lane_atoms = {n: self.atoms.atom(("sym", n), True) for n in ("tid.x", "tid.y", "tid.z", "laneid")}
        self.lane_atom_ids = frozenset(self.lane_atoms.values())
        #: what the findings read of this analysis; its addresses at the launch's values serve the analysis too
        self.facts = WarpFacts(fn.display_name, self.block, self.sym, self.atoms, self.base, self.lane_atoms)
        self._lane_maps: list[list[tuple[int, dict[int, Value], dict[int, int] | None]]] | None = None
        #: whether each sampled warp lists its lanes as 0, 1, 2, ... (then a lane's id is its position)
        self.lanes_by_position = all(ln.lane == i for lanes in self.lanes for i, ln in enumerate(lanes))
        #: each sampled warp's lanes with where they begin in the lane vectors (the warps one after another)
        self.warp_spans: list[tuple[int, list[Lane]]] = []
        start = 0
        for lanes in self.lanes:
            self.warp_spans.append((start, lanes))
            start += len(lanes)
        self.conditions = self._edge_conditions()
        self.vectors = lane_vectors(self.atoms, self.lanes, self.lane_atoms, lane_ints(self.block))
        self._stage1: dict[tuple, tuple[dict[int, Value], dict[int, Value]]] = {}
        self._masks: dict[tuple, list[list[int]]] = {}
        self._values: dict[Value, list[LaneConstants] | list[dict[int, Value]]] = {}
        self._where: dict[Value, list[set[int]]] = {}
        self._all_lanes: tuple[LaneVectors, int] | None = None
        #: (guarded block, iteration key) -> which threads of the whole block pass that block's condition (None:
        #: not readable as vectors); the blocks below one guard share it
        self._passes: dict[tuple[int, tuple], np.ndarray | None] = {}
        self._geo_cache: dict[int, list[int] | None] = {}
        self._exits: dict[int, dict[int, Value]] | None = None
        self._after_cache: dict[int, dict[int, Value]] = {}
        self._guard_samples: dict[int, tuple[list[dict[int, Value]], set[str]] | None] = {}
        #: request costs by what they are a function of (see `request_cost`)
        self._costs: dict[tuple, RequestCost | None] = {}
        self.dead = self._dead_blocks()
        #: deterministic count of the warp-level work done (lane tables, reach masks, instances): what the
        #: time budget bounds, and what a test can check grows linearly with the kernel
        self.work = 0
        #: lines of the accesses read at sampled loop counters or block indices, by what was assumed there
        self.sampled_lines: dict[str, set[int]] = {"blocks": set(), "iterations": set()}
        loop_lines = {lp.id: lp.header_line(cfg, main_file) for lp in loops.loops}
        self.render = Renderer(self.atoms, self.param_names, loop_lines, self.sym.resolution)

    # ----------------------------------------------------------------------------------------- set-up
    @property
    def lane_maps(self) -> list[list[tuple[int, dict[int, Value], dict[int, int] | None]]]:
        """Per sampled warp, each lane's (lane, {lane atom: value}, {lane atom: int} or None when a value is
        symbolic): the substitutions of the lane-by-lane evaluation, built when it is first needed."""
        if self._lane_maps is None:
            self._lane_maps = []
            for lanes in self.lanes:
                warp: list[tuple[int, dict[int, Value], dict[int, int] | None]] = []
                for ln in lanes:
                    lsub = {self.lane_atoms[n]: v for n, v in ln.subst.items()}
                    ints = {a: E.as_const(v) for a, v in lsub.items()}
                    warp.append((ln.lane, lsub, ints if all(x is not None for x in ints.values()) else None))  # type: ignore[misc]
                self._lane_maps.append(warp)
        return self._lane_maps

    def _base_subst(self, params: dict[str, int]) -> dict[int, Value]:
        atoms = self.atoms
        subst: dict[int, Value] = dict(self.sym.resolution)
        if self.block is not None:
            for axis, n in zip("xyz", self.block, strict=True):
                subst[atoms.atom(("sym", f"ntid.{axis}"))] = E.const(int(n))
        by_cuda = {v: k for k, v in self.param_names.items()}
        for name, value in params.items():
            if value is None:
                continue
            ptx = by_cuda.get(name, name)
            for key in (ptx, *(p.name for p in self.fn.params if p.name.endswith(f"_{name}"))):
                if key in self.sym.params:
                    subst[self.sym.params[key]] = E.const(int(value))
        return subst

    def _symbols(self) -> tuple[dict[int, int], dict[int, str]]:
        """Known alignment and state space of address symbols: pointer parameters (cudaMalloc: 256 B; the host
        passes device memory, so global) and declared arrays (their own alignment and space)."""
        align: dict[int, int] = {}
        space: dict[int, str] = {}
        decls = {d.name: d for d in (*self.module.globals, *self.fn.decls)}
        pointers = {p.name for p in self.fn.params if p.type in ("u64", "b64")}
        for i, key in enumerate(self.atoms.keys):
            if key[0] != "sym":
                continue
            name = key[1]
            if name.startswith("param:") and name[6:] in pointers:
                align[i], space[i] = _ALIGN_PARAM_POINTER, "global"
            elif name.startswith("&") and name[1:] in decls:
                d = decls[name[1:]]
                align[i] = max(d.align or 16, 16) if d.space == "shared" else (d.align or 1)
                space[i] = d.space
        return align, space

    def generic_space(self, addr: Value | None) -> str | None:
        """The state space a generic address points into, told by the symbols it is built on: a kernel's
        pointer parameter (global) or a declared array (its space); None when nothing or both are found (a
        pointer loaded from memory, a select between a shared and a global array)."""
        if addr is None:
            return None
        # a pointer stepped by a loop is a recurrence; its start (the launch's values substituted) names the base
        start = E.evaluate(self.atoms, addr, self.base, {})
        found = {self.space_of[a] for a in self.atoms.atoms_of(start if start is not None else addr)
                 if a in self.space_of}
        return found.pop() if len(found) == 1 and found <= {"global", "shared"} else None

    def _edge_conditions(self) -> dict[int, Value]:
        """For each block entered only from a guarded branch that decides it, the predicate of that edge.

        A lane reaches a block when it reaches the block's immediate dominator and, where that dominator ends
        in a guarded two-way branch whose successor this block is (its only predecessor), takes that edge.
        Chained over the dominator tree this is every condition of the dominating branches, found in one
        pass over the blocks instead of one walk up the tree (with a dominance test per step) per block.
        """
        cfg = self.cfg
        body = self.fn.body
        out: dict[int, Value] = {}
        label_block = {lab: b.id for b in cfg.blocks for lab in b.labels}
        for b in cfg.rpo:
            d = cfg.idom[b] if b < len(cfg.idom) else b
            if d == b or d < 0 or cfg.blocks[b].preds != [d]:
                continue
            blk = cfg.blocks[d]
            last = body[blk.end - 1] if blk.end > blk.start else None
            if last is None or last.opcode != "bra" or last.guard is None or len(blk.succs) != 2:
                continue
            g = self.sym.guards.get(last.index)
            out[b] = g if b == label_block.get(last.branch_target or "") else E.sub(E.const(1), g)
        return out

    def _dead_blocks(self) -> frozenset[int]:
        """Blocks that no thread of the launch reaches: the condition of the edge into one (or into a block
        that dominates it) is false under the launch's values alone, whatever the thread, block and loop
        iteration. Such code is in the PTX for other launches (an unrolled loop's remainder, a loop's skip
        path), and a count of what the launch executes leaves it out."""
        cfg = self.cfg
        dead: set[int] = set()
        cache: dict[int, Value] = {}
        for b in cfg.rpo:
            d = cfg.idom[b] if b < len(cfg.idom) else b
            if 0 <= d != b and d in dead:
                dead.add(b)
                continue
            cond = self.conditions.get(b)
            if cond is None:
                continue
            known = E.evaluate(self.atoms, cond, self.base, cache)
            if E.as_const(known) == 0 or self._false_at_sampled_iterations(b, known):
                dead.add(b)
        return frozenset(dead)

    def _false_at_sampled_iterations(self, block: int, cond: Value) -> bool:
        """Whether an edge condition that the launch's values leave holding only the counters of loops around
        `block` (the same in every lane) is false at every sampled iteration of those loops: the first, the last
        and `SAMPLED_ITERATIONS` in all spread evenly over each count (at most `MAX_ENUMERATED_ITERATIONS`
        combinations where several loops hold it, spread over them all). nvcc tests an unrolled loop's remainder
        (`count & 3`) once per iteration of the loop around it, where `count = min(blockDim.x, n - base)` moves
        with that loop's counter; with `blockDim.x` a multiple of the unroll factor the remainder runs in no
        iteration, and a loop's remainder that only the last iteration runs is still seen. The iterations not
        sampled are taken to agree with the sampled ones, which `assumptions` says."""
        if cond is None:
            return False
        counters = {a: lid for lid, a in self.sym.iteration_atom.items()}
        enclosing = {lp.id for lp in self.loops.enclosing(block)}
        free = {a for a in self.atoms.deep_atoms_of(cond) if self.atoms.keys[a][0] != "op"}
        if not free or any(counters.get(a) not in enclosing for a in free):
            return False
        choices = []
        for a in sorted(free):
            n = self.trip(counters[a])
            if n is None or n <= 0:
                return False
            choices.append([(a, E.const(x)) for x in evenly_spread(n, SAMPLED_ITERATIONS)])
        for digits in spread_combinations([len(c) for c in choices], MAX_ENUMERATED_ITERATIONS):
            combo = dict(c[d] for c, d in zip(choices, digits, strict=True))
            if E.as_const(E.evaluate(self.atoms, cond, combo, {})) != 0:
                return False
        blk = self.cfg.blocks[block]
        lines = sorted({line for ins in self.fn.body[blk.start:blk.end]
                        if (line := _line(ins, self.main_file)[0]) is not None})
        where = f"line {lines[0]}" if lines else f"basic block {block}"
        self.assumptions.append(f"the code at {where} is taken as never run: the condition that leads to it, "
                                "which the loops around it move, is false at every sampled iteration (the first, "
                                "the last and others spread evenly)")
        return True

    # ---------------------------------------------------------------------------------- loop handling
    def trip(self, loop_id: int) -> int | None:
        """Iterations of a loop's body: from the caller's trip counts, else as `tripcount` reads it from the
        PTX under the block and parameters this analysis knows (None: unknown)."""
        header = self.loops.loops[loop_id].header
        if header not in self.trip_counts:
            for h, count in self._ptx_trip_counts().items():
                self.trip_counts.setdefault(h, count)
        return self.trip_counts.get(header)

    def _ptx_trip_counts(self) -> dict[int, int | None]:
        """Every loop's count read from its exit test (the one trip-count query, on the shared dataflow facts)
        under the known block and parameters only: no default grid or block is assumed, and a loop it cannot
        read is None."""
        by_index = {}
        for name, value in self.params.items():
            for i, p in enumerate(self.fn.params):
                if name in (p.name, self.param_names.get(p.name)) or p.name.endswith(f"_{name}"):
                    by_index[str(i)] = int(value)
        launch = infer_launch(self.fn.display_name, None, LaunchOverrides(block=self.block, params=by_index),
                              default_block=None, default_grid=None)
        counts = ptx_trip_counts(self.fn, self.cfg, self.loops, launch, self.dataflow)
        out: dict[int, int | None] = {lp.header: None for lp in self.loops.loops}
        for header, count in counts.items():
            if count.source == "ptx" and isinstance(count.value, int) and count.value >= 0:
                out[header] = count.value
        return out

    def _geo_of(self, loop_id: int) -> dict[int, Any]:
        return {g: rc for g, rc in self.sym.geo.items() if rc.loop == loop_id}

    def _geo_sequence(self, g: int, n: int, before: dict[int, Value] | None = None) -> list[int] | None:
        """The first `n` values of geometric atom `g`, its start read under the launch's values and `before`
        (what the loops ahead of its own left behind); None when the start is not a number."""
        rc = self.sym.geo[g]
        init = E.as_const(E.evaluate(self.atoms, rc.init, {**self.base, **(before or {})}, {}))
        if init is None:
            return None
        vals, v = [], init
        for _ in range(n):
            vals.append(v)
            v = geometric_step(rc.op, v, rc.factor)  # type: ignore[arg-type]
            if abs(v) > 1 << 62:
                break
        return vals

    def _loop_exits(self) -> dict[int, dict[int, Value]]:
        """Per loop, the values its atoms hold once it has finished (see `_exit_of`), computed once, loops in
        program order so that a loop's start may be what an earlier loop left."""
        if self._exits is None:
            self._exits = {}
            rank = {b: i for i, b in enumerate(self.cfg.rpo)}
            for lp in sorted(self.loops.loops, key=lambda lp: rank.get(lp.header, 0)):
                found = self._exit_of(lp, self._after(lp.blocks))
                if found:
                    self._exits[lp.id] = found
        return self._exits

    def _after(self, blocks: frozenset[int] | set[int]) -> dict[int, Value]:
        """The exit values of the finished loops that hold in code of `blocks`: those of every loop whose
        exit values are known and which contains none of those blocks (it has finished before them)."""
        out: dict[int, Value] = {}
        for lid, values in (self._exits or {}).items():
            if not any(b in self.loops.loops[lid].blocks for b in blocks):
                out.update(values)
        return out

    def _exit_of(self, lp: Any, before: dict[int, Value]) -> dict[int, Value]:
        """What loop `lp`'s iteration number and geometric atoms are once it has left, and which value each
        join after it holds (`SymbolicResult.after_loop`): the loop leaves in the iteration `c` (n - 1 when
        its test follows the body, n when it precedes it) where its only exit test is first true, both read
        as numbers under the launch's values; empty when the count or that test is not known. Code after a
        loop reads its variables at their last value this way: a Blelloch scan's down-sweep starts from the
        stride its up-sweep ended with."""
        n = self.trip(lp.id)
        if n is None:
            return {}
        joins = [(phi, leaving, skipped) for phi, (lid, leaving, skipped) in self.sym.after_loop.items()
                 if lid == lp.id]
        if n == 0:
            return {phi: skipped for phi, _, skipped in joins}
        leave = leave_value(self.dataflow, lp)
        if leave is None:
            return {}
        seqs = {g: self._geo_sequence(g, n + 1, before) for g in self._geo_of(lp.id)}
        k_atom = self.sym.iteration_atom[lp.id]

        def at(c: int) -> dict[int, Value]:
            own: dict[int, Value] = {k_atom: E.const(c)}
            own.update({g: E.const(s[c]) for g, s in seqs.items() if s is not None and c < len(s)})
            return own

        def leaves(c: int) -> int | None:
            return E.as_const(E.evaluate(self.atoms, leave, {**self.base, **before, **at(c)}, {}))

        for c in (n - 1, n):
            if c >= 0 and leaves(c) == 1 and (c == 0 or leaves(c - 1) == 0):
                out = at(c)
                subst = {**self.base, **before, **out}
                for phi, leaving, _ in joins:
                    value = E.evaluate(self.atoms, leaving, subst, {})
                    if value is not None:
                        out[phi] = value
                return out
        return {}

    def after_loops(self, block: int) -> dict[int, Value]:
        """The values the loops finished before `block` left behind (`_after` of the loops' exit values),
        worked out once per block: the iteration substitutions and the published addresses both read them."""
        after = self._after_cache.get(block)
        if after is None:
            self._loop_exits()
            after = self._after_cache[block] = self._after({block})
        return after

    def iteration_assignments(self, block: int) -> list[dict[int, Value]]:
        """Substitutions for the enumerated iterations of the geometric loops around `block` (≥ one entry), each
        with the values the loops finished before `block` left behind (`_exit_of`)."""
        after = self.after_loops(block)
        per_loop: list[list[dict[int, Value]]] = []
        for lp in self.loops.enclosing(block):
            geos = self._geo_of(lp.id)
            if not geos:
                continue
            n = self.trip(lp.id)
            if n is None or n <= 0 or n > MAX_ENUMERATED_ITERATIONS:
                continue
            # the atoms whose start is known are enumerated; one left unknown (a count down from an unknown
            # blockDim.x beside a stride that doubles from 1) stays a symbol the warp shares
            seqs = {g: s for g in geos if (s := self._geo_sequence(g, n, self._after(lp.blocks))) is not None
                    and len(s) >= n}
            if not seqs:
                continue
            k_atom = self.sym.iteration_atom[lp.id]
            per_loop.append([{k_atom: E.const(k), **{g: E.const(s[k]) for g, s in seqs.items()}}
                             for k in range(n)])
        if not per_loop:
            return [dict(after)]
        combos: list[dict[int, Value]] = []
        for parts in product(*per_loop):
            merged: dict[int, Value] = dict(after)
            for p in parts:
                merged.update(p)
            combos.append(merged)
            if len(combos) >= MAX_ENUMERATED_ITERATIONS:
                break
        return combos

    def sampled_assignments(self, block: int, value: Value) -> tuple[list[dict[int, Value]], set[str]] | None:
        """The iterations of `iteration_assignments`, each read again at concrete values of the loop counters
        and block indices that a lane-dependent operation in `value` still holds, and what of that is assumed
        (`blocks`: the first blocks stand for all; `iterations`: a count not known, its first iterations);
        None when it holds none, or holds a value that cannot be sampled (a parameter not known).

        An index that is not affine in the lane, `(32 * lane + k) % 1056` (nvcc's multiply-high and shift
        for the division, the remainder `x - 1056 * q`), relates its lanes only once the loop counter `k` is a
        number: which lanes wrap around depends on it. So the address is read at `SAMPLED_ITERATIONS` values
        of each such counter, spread evenly over its trip count (the first ones when the count is not known),
        and at the first `SAMPLED_BLOCKS` blocks for a block index inside such an operation; the request's
        cost is then the mean over those instances, as it is over the iterations of a geometric loop."""
        plain = self.iteration_assignments(block)
        v = E.evaluate(self.atoms, value, {**self.base, **plain[0]}, {})
        needed = self._uniform_in_lane_operations(v)
        if not needed:
            return None
        # a value an earlier loop left behind with its count not known (where an unrolled loop's remainder
        # starts) is read as that loop's counter at its exit, the counter then sampled like the others
        left = {a: leaving for a in needed if a in self.sym.after_loop
                and (leaving := self.sym.after_loop[a][1]) is not None}
        if left:
            v = E.evaluate(self.atoms, value, {**self.base, **plain[0], **left}, {})
            needed = self._uniform_in_lane_operations(v)
            if not needed:
                return None
        enclosing = {lp.id for lp in self.loops.enclosing(block)}
        counters = {a: lid for lid, a in self.sym.iteration_atom.items()}
        choices: list[list[tuple[int, int]]] = []
        assumed: set[str] = set()
        for a in sorted(needed):
            key = self.atoms.keys[a]
            if a in counters:
                n = self.trip(counters[a]) if counters[a] in enclosing else None
                values = evenly_spread(n, SAMPLED_ITERATIONS) if n is not None else list(range(SAMPLED_ITERATIONS))
                if n is None:
                    assumed.add("iterations")
            elif key[0] == "sym" and key[1] in _BLOCK_INDICES:
                values = list(range(SAMPLED_BLOCKS))
                assumed.add("blocks")
            else:
                return None
            if not values:
                return None
            choices.append([(a, x) for x in values])
        # every combination of the enumerated iterations and the sampled values, or as many of them as the cap
        # allows spread evenly over all (numbered in mixed radix, the plain iterations the slowest digit)
        out: list[dict[int, Value]] = []
        for digits in spread_combinations([len(plain), *map(len, choices)], MAX_ENUMERATED_ITERATIONS):
            merged = dict(plain[digits[0]])
            merged.update(left)
            merged.update({a: E.const(x) for a, x in (c[d] for c, d in zip(choices, digits[1:], strict=True))})
            out.append(merged)
        return out, assumed

    def _uniform_in_lane_operations(self, v: Value) -> set[int] | None:
        """The symbols, the same in every lane, that the arguments of `v`'s lane-dependent operations hold
        (through nested operations); None for an unknown value."""
        if v is None:
            return None
        atoms = self.atoms
        found: set[int] = set()
        for a in atoms.atoms_of(v):
            key = atoms.keys[a]
            if key[0] != "op" or not (atoms.lane[a] or op_has_lane(atoms, a, self.lane_atom_ids)):
                continue
            for arg in key[2]:
                if arg is None:
                    return None
                found.update(x for x in atoms.deep_atoms_of(arg)
                             if atoms.keys[x][0] != "op" and x not in self.lane_atom_ids)
        return found

    def executions(self, block: int) -> float:
        """How often one thread runs the instructions of `block`: the product of its loops' trip counts (an
        unknown one counted once and said so), 0 in a block the launch never reaches."""
        if block in self.dead:
            return 0.0
        n = 1.0
        for lp in self.loops.enclosing(block):
            t = self.trip(lp.id)
            if t is None:
                line = lp.header_line(self.cfg, self.main_file)
                note = f"trip count of the loop at line {line} unknown: counted once"
                if note not in self.assumptions:
                    self.assumptions.append(note)
                continue
            n *= t
        return n

    # ------------------------------------------------------------------------------------- instances
    def instances(self, ins_index: int, value: Value, own_guard: bool = True,
                  assignments: list[dict[int, Value]] | None = None) -> list[tuple[list[int], list[Value]]]:
        """For each sampled (iteration, warp): the active lanes and `value` in each of them. `assignments`
        replaces the iterations `iteration_assignments` enumerates (see `sampled_assignments`)."""
        block = self.cfg.block_of[ins_index]
        ins = self.fn.body[ins_index]
        guard = None
        if own_guard and ins.guard is not None and ins.opcode in ("ld", "ldu", "st", "atom", "red"):
            guard = self.sym.guards.get(ins_index)
        out: list[tuple[list[int], list[Value]]] = []
        atoms = self.atoms
        for assign in assignments if assignments is not None else self.iteration_assignments(block):
            key, subst, cache = self._stage(assign)
            masks = self._active(block, key, subst, cache)
            if guard is not None:
                masks = [[ln for ln in m if ln in g] for m, g in
                         zip(masks, self._lanes_where(E.evaluate(atoms, guard, subst, cache)), strict=True)]
            v1 = E.evaluate(atoms, value, subst, cache)
            # The whole value, constant offset included, in every lane at once (cached per value: iterations
            # where it does not change, and other instructions computing the same value, reuse its lanes).
            per_warp = self._values.get(v1)
            if per_warp is None:
                per_warp = self._values[v1] = self._warp_values(v1)
            self.work += len(masks)
            for mask, table in zip(masks, per_warp, strict=True):
                out.append((mask, table.take(mask) if isinstance(table, LaneConstants) else [table[ln] for ln in mask]))
        return out

    def opaque_agreement(self, ins_index: int, value: Value) -> list[bool] | None:
        """For a branch predicate that is, at every sampled iteration, one comparison whose lane results are
        opaque nodes (`LaneVectors.opaque_comparison_args`): per sampled (iteration, warp) with an active lane,
        whether those lanes hold the same node. Such a warp's outcome is uniform where they do and not known
        where they do not, never divergent: what `branch_outcome` reads from `instances`, without a node made
        per lane. None where some iteration's predicate is not of that form (then `instances` it is)."""
        if self.vectors is None or not self.lanes_by_position:
            return None
        block = self.cfg.block_of[ins_index]
        out: list[bool] = []
        for assign in self.iteration_assignments(block):
            key, subst, cache = self._stage(assign)
            masks = self._active(block, key, subst, cache)
            rows = self.vectors.opaque_comparison_args(E.evaluate(self.atoms, value, subst, cache))
            if rows is None:
                return None
            self.work += len(masks) + 1
            for (start, _), mask in zip(self.warp_spans, masks, strict=True):
                if mask:
                    seen = rows[:, [start + ln for ln in mask]]
                    out.append(not np.count_nonzero(seen != seen[:, :1]))
        return out

    def _stage(self, assign: dict[int, Value]) -> tuple[tuple, dict[int, Value], dict[int, Value]]:
        """The cache key of one iteration assignment, its substitution (the kernel's base values and the
        assignment) and its evaluation cache, made once per assignment."""
        key = tuple(sorted((a, E.as_const(v) if E.as_const(v) is not None else v) for a, v in assign.items()))
        cached = self._stage1.get(key)
        if cached is None:
            subst = dict(self.base)
            subst.update(assign)
            cached = self._stage1[key] = (subst, {})
        return key, cached[0], cached[1]

    def request_cost(self, space: str, active: list[int], vals: Sequence[Value], width: int) -> RequestCost | None:
        """The cost of one warp instance's request (`global_cost`, or `divided_index_cost` where it gives up, for a
        global access; `local_cost` and `shared_cost` for a local and a shared one), worked out once per distinct
        input within the kernel.

        Sampled warps and iterations mostly repeat one pattern: lanes `base + 4 * lane` in every warp, the base
        128 bytes further each time. The key holds all that the cost reads (the atoms' keys and alignments are
        fixed for the kernel): for lanes apart by constants (`LaneConstants`) their common symbolic part, the
        offsets from the first lane and, for a global request, the first lane's constant modulo 128 (the only
        way it enters: sectors and lines are counted at residues modulo a power of two up to 128); a shared
        request's banks and phases, and a local request's interleaved words, read only the offsets and the lane
        numbers. Other values are keyed whole.
        """
        if isinstance(vals, LaneConstants):
            c0 = vals.consts[0]
            offsets = tuple([c - c0 for c in vals.consts])
            key: tuple = (space, width, vals.rest, offsets, c0 % 128) if space == "global" else \
                (space, width, vals.rest, offsets, tuple(active))
        else:
            key = (space, width, None, tuple(vals), tuple(active) if space != "global" else None)
        if key in self._costs:
            return self._costs[key]
        if space == "global":
            c = global_cost(self.atoms, vals, width, self.align_of)
            if c is None and not isinstance(vals, LaneConstants):
                c = divided_index_cost(self.atoms, vals, width, self.align_of)
        elif space == "local":
            c = local_cost(self.atoms, active, vals, width)
        else:
            c = shared_cost(self.atoms, active, vals, width)
        self._costs[key] = c
        return c

    def reach_shares(self, block: int) -> tuple[float, float] | None:
        """(the share of (sampled iteration, warp) instances in which at least one lane reaches `block`, over
        every warp of a known block; the share of warps that would run it were the lanes that reach it packed
        into whole warps, `ceil(reaching threads / 32)` per block and instance); None where no branch condition
        guards it (every warp that reaches its dominators runs it) or where a guard's lanes cannot be read as
        vectors.

        A warp none of whose lanes passes a guard skips the guarded block: it issues none of its instructions.
        Every warp is read, not only the sampled ones: which warps skip (`tid < 128 / s`, `tid == 0`) is what
        matters here, and three sampled warps of eight would say it in thirds. A lane test that is not decided
        (a loaded value, an unknown bound) keeps the lane, so the share errs towards the warp running the block.
        """
        guards = self._guard_chain(block)
        whole = self._whole_block()
        if not guards or whole is None:
            return None
        vectors, threads = whole
        warps = -(-threads // WARP)
        padded = warps * WARP
        active = packed = total = 0
        sampled = self.guard_samples(block)
        for assign in sampled[0] if sampled is not None else self.iteration_assignments(block):
            key, subst, cache = self._stage(assign)
            reach = np.ones(threads, dtype=bool)
            for b in guards:
                passes = self._passes.get((b, key), False)
                if passes is False:
                    passes = self._passes[(b, key)] = vectors.nonzero_lanes(
                        E.evaluate(self.atoms, self.conditions[b], subst, cache))
                if passes is None:
                    return None
                reach &= passes
            per_warp = np.zeros(padded, dtype=bool)
            per_warp[:threads] = reach
            active += int(per_warp.reshape(warps, WARP).any(axis=1).sum())
            packed += -(-int(reach.sum()) // WARP)
            total += warps
        return (active / total, packed / total) if total else None

    def guard_samples(self, block: int) -> tuple[list[dict[int, Value]], set[str]] | None:
        """The iterations at which the lanes reaching `block` are read where a guard on its dominator chain
        compares a lane's value with a loop counter or a block index (a convolution's halo test `k >= tile_start`
        with `k = i - half + j`), and what of them is assumed: `sampled_assignments` of the guards' conditions,
        once per block. None where no guard needs them (then `iteration_assignments`): with the counter left a
        symbol such a comparison is not decided, and every lane is taken to pass it."""
        if block in self._guard_samples:
            return self._guard_samples[block]
        guards = self._guard_chain(block)
        found = None
        if guards:
            joined = self.conditions[guards[0]]
            for b in guards[1:]:
                joined = E.add(joined, self.conditions[b])
            found = self.sampled_assignments(block, joined)
        self._guard_samples[block] = found
        return found

    def _guard_chain(self, block: int) -> list[int]:
        """The blocks on `block`'s dominator chain (itself included) entered through a branch condition, up to
        the header of the innermost loop around `block`: a guard ahead of the loop decides whether a warp runs
        the loop at all, and the loop's count already says that (`tripcount` counts such a loop per warp, 0 in
        the warps its guard skips), so it is not counted twice."""
        cfg = self.cfg
        around = self.loops.enclosing(block)
        inside = around[0].blocks if around else None
        out: list[int] = []
        b = block
        while inside is None or b in inside:
            if b in self.conditions and b not in cfg.unreachable:
                out.append(b)
            parent = cfg.idom[b] if b < len(cfg.idom) else b
            if parent == b or parent < 0 or b in cfg.unreachable:
                break
            b = parent
        return out

    def _whole_block(self) -> tuple[LaneVectors, int] | None:
        """Lane vectors over every thread of the (known) block, warps in order, and the thread count."""
        if self.block is None:
            return None
        if self._all_lanes is None:
            bx, by, bz = (max(1, int(d)) for d in self.block)
            t = np.arange(bx * by * bz, dtype=np.int64)
            ints = {"tid.x": t % bx, "tid.y": (t // bx) % by, "tid.z": t // (bx * by), "laneid": t % WARP}
            self._all_lanes = (LaneVectors(self.atoms, {atom: {(): ints[name]} for name, atom in
                                                        self.lane_atoms.items()}, len(t), False), len(t))
        return self._all_lanes

    def _warp_values(self, v: Value) -> list[LaneConstants] | list[dict[int, Value]]:
        """`v` in every lane of every sampled warp: as `LaneConstants` (indexed by lane) where the lanes differ
        only by a constant, else as `_lane_table` gives it."""
        if self.vectors is None or not self.lanes_by_position:
            return self._lane_table(v)
        self.work += 1
        vp = self.vectors.evaluate(v)
        if vp is None:
            return self._tables(v, vp)
        if any(lane_varying(arr) for m, arr in vp.items() if m):
            return self._tables(v, vp)
        rest = tuple((m, c) for m in sorted(m for m in vp if m) if (c := int(vp[m][0])))
        consts = vp[()].tolist() if () in vp else [0] * self.vectors.size  # type: ignore[union-attr]
        return [LaneConstants(rest, consts[i:i + len(lanes)]) for i, lanes in self.warp_spans]

    def _lane_table(self, v: Value) -> list[dict[int, Value]]:
        """`v` in every lane of every sampled warp (lane index -> value): all lanes at once where the
        vectorised evaluation applies, else lane by lane."""
        self.work += 1
        return self._tables(v, self.vectors.evaluate(v) if self.vectors is not None else None)

    def _tables(self, v: Value, vp: VecPoly | None) -> list[dict[int, Value]]:
        """`_lane_table` from `v`'s lane vectors `vp` when there are some."""
        if vp is not None:
            flat = self.vectors.to_values(vp)  # type: ignore[union-attr]
            return [{ln.lane: flat[i + j] for j, ln in enumerate(lanes)} for i, lanes in self.warp_spans]
        return self._lane_table_per_lane(v)

    def _lane_table_per_lane(self, v: Value) -> list[dict[int, Value]]:
        """`v` lane by lane (substitution and simplification per lane): the reference the vectorised way
        must equal, used where it gives up."""
        atoms = self.atoms
        fast = _decompose(atoms, v, self.lane_atom_ids)
        tables: list[dict[int, Value]] = []
        for lanes in self.lane_maps:
            t: dict[int, Value] = {}
            for lane, lsub, ints in lanes:
                t[lane] = fast(ints) if fast is not None and ints is not None else E.evaluate(atoms, v, lsub, {})
            tables.append(t)
        return tables

    def _lanes_where(self, pred: Value) -> list[set[int]]:
        """`_lanes_where_uncached`, once per predicate value (the result is only read)."""
        hit = self._where.get(pred)
        if hit is None:
            hit = self._where[pred] = self._lanes_where_uncached(pred)
        return hit

    def _lanes_where_uncached(self, pred: Value) -> list[set[int]]:
        """Per sampled warp, the lanes where a predicate is not known to be false: those whose value is not
        the zero polynomial (a constant other than 0, or anything symbolic), read from the lane vectors'
        coefficients without building a value per lane where the vectorised evaluation applies."""
        if self.vectors is None or not self.lanes_by_position:
            return [{ln for ln, v in t.items() if E.as_const(v) != 0} for t in self._lane_table(pred)]
        self.work += 1
        kept = self.vectors.nonzero_lanes(pred)
        if kept is None:
            return [{ln for ln, v in t.items() if E.as_const(v) != 0} for t in self._tables(pred, None)]
        nonzero = kept.tolist()
        return [{ln for ln in range(len(lanes)) if nonzero[i + ln]} for i, lanes in self.warp_spans]

    def _active(self, block: int, key: tuple, subst: dict[int, Value], cache: dict[int, Value]) -> list[list[int]]:
        """Per sampled warp, the lanes that reach `block` (cached per block and iteration assignment).

        The lanes reaching a block are those reaching its immediate dominator, narrowed by the condition of
        the edge into it, so each block costs one predicate however deep it is nested.
        """
        cfg = self.cfg
        chain: list[int] = []
        b = block
        masks: list[list[int]] | None = None
        while True:
            hit = self._masks.get((b, key))
            if hit is not None:
                masks = hit
                break
            chain.append(b)
            self.work += 1
            parent = cfg.idom[b] if b < len(cfg.idom) else b
            if parent == b or parent < 0 or b in cfg.unreachable:
                break
            b = parent
        if masks is None:
            masks = [[ln.lane for ln in lanes] for lanes in self.lanes]
        for b in reversed(chain):
            if b in self.conditions and b not in cfg.unreachable:
                allowed = self._lanes_where(E.evaluate(self.atoms, self.conditions[b], subst, cache))
                masks = [[ln for ln in m if ln in a] for m, a in zip(masks, allowed, strict=True)]
            self._masks[(b, key)] = masks
        return masks


_Term = tuple[tuple[int, ...], int, tuple[int, ...], tuple[Any, ...]]


class _Compiled:
    """A value prepared for fast evaluation lane by lane: per term, the uniform monomial, the coefficient,
    the lane atoms to multiply in, and lane-dependent operation nodes (whose arguments are compiled too)."""

    __slots__ = ("atoms", "terms")

    def __init__(self, atoms: Atoms, terms: list[_Term]) -> None:
        self.atoms = atoms
        self.terms = terms

    def __call__(self, ints: dict[int, int]) -> Value:
        v = self.int_value(ints)
        if v is not None:
            return E.const(v)
        acc: dict[tuple[int, ...], int] = {}
        extra_terms: Value = E.ZERO
        for other, c, lanes, ops in self.terms:
            for a in lanes:
                c *= ints[a]
            if not c:
                continue
            if ops:
                k = self._concrete_ops(c, ops, ints)
                if k is None:  # an operation without an integer value here: the generic, symbolic way
                    term = self._symbolic_ops(other, c, ops, ints)
                    extra_terms = E.add(extra_terms, term) if term is not None else None
                    if extra_terms is None:
                        return None
                    continue
                c = k
            if c:
                acc[other] = acc.get(other, 0) + c
        base = tuple(sorted((m, c) for m, c in acc.items() if c))
        return E.add(base, extra_terms) if extra_terms else base

    def int_value(self, ints: dict[int, int]) -> int | None:
        """The value in this lane when it is an integer with no uniform symbol left, computed without building
        polynomials; None otherwise (then `__call__` gives the symbolic value)."""
        total = 0
        for other, c, lanes, ops in self.terms:
            if other:
                return None
            for a in lanes:
                c *= ints[a]
            if c and ops:
                c = self._concrete_ops(c, ops, ints)
                if c is None:
                    return None
            total += c
        return total

    @staticmethod
    def _concrete_ops(c: int, ops: tuple[Any, ...], ints: dict[int, int]) -> int | None:
        """`c` times every operation's integer value when all operands are integers in this lane (the common
        case, kept free of polynomial arithmetic); None when one is not."""
        for name, args, ex in ops:
            vals = []
            for f in args:
                v = f.int_value(ints)
                if v is None:
                    v = E.as_const(f(ints))
                    if v is None:
                        return None
                vals.append(v)
            r = E.concrete_op(name, vals, ex)
            if r is None:
                return None
            c *= r
            if not c:
                return 0
        return c

    def _symbolic_ops(self, other: tuple[int, ...], c: int, ops: tuple[Any, ...], ints: dict[int, int]) -> Value:
        term: Value = E.const(c)
        for name, args, ex in ops:
            vals = tuple(f(ints) for f in args)
            term = E.mul(term, E.apply_op(self.atoms, name, vals, ex))
            if term is None:
                return None
        if other:
            term = E.mul(term, ((other, 1),))
        return term


def _decompose(atoms: Atoms, v: Value, lane_ids: frozenset[int], depth: int = 0) -> _Compiled | None:
    """Compile a value for fast per-lane evaluation; None when it cannot be (TOP, or nesting too deep)."""
    if v is None or depth > 6:
        return None
    terms: list[_Term] = []
    keys, lane = atoms.keys, atoms.lane
    for m, c in v:
        other: list[int] = []
        lanes: list[int] = []
        ops: list[Any] = []
        for a in m:
            if a in lane_ids:
                lanes.append(a)
            elif keys[a][0] == "op" and (lane[a] or op_has_lane(atoms, a, lane_ids)):
                args = [_decompose(atoms, x, lane_ids, depth + 1) for x in keys[a][2]]
                if any(f is None for f in args):
                    return None
                ops.append((keys[a][1], tuple(args), keys[a][3]))
            elif lane[a]:
                return None
            else:
                other.append(a)
        terms.append((tuple(other), c, tuple(lanes), tuple(ops)))
    return _Compiled(atoms, terms)


def _lane_value(d: _Compiled, ints: dict[int, int]) -> Value:
    return d(ints)


def _shape(block: Any) -> tuple[int, int, int] | None:
    """A (x, y, z) block shape from a tuple of one to three positive ints; None if it is not one."""
    if block is None:
        return None
    try:
        dims = [int(d) for d in block][:3]
    except (TypeError, ValueError):
        return None
    if not dims or any(d <= 0 for d in dims):
        return None
    while len(dims) < 3:
        dims.append(1)
    return dims[0], dims[1], dims[2]


def _line(ins: Any, main_file: str | None) -> tuple[int | None, int, str | None]:
    """(line, column, file) of an instruction; line None when it is not a line of the analysed file."""
    loc = ins.loc
    if loc is None:  # PTX without line info: a PTX input's own lines are the analysed file's lines
        return (ins.ptx_line or None, ins.ptx_column, None) if main_file is None else (None, 0, None)
    here = loc_in_file(loc, main_file)
    return (here.line, here.column, here.file) if here is not None else (None, loc.column, loc.file)


def _opaque_access(k: _Kernel, ins: Any, touch: MemoryTouch) -> AccessInfo:
    """A texture, surface, bulk-copy, barrier or tensor-core access: counted as a request of its space, its
    lanes' addresses not related (a texture handle or a descriptor is no address), so no coalescing claim."""
    line, column, file = _line(ins, k.main_file)
    width = ins.access_bytes
    if ins.opcode == "cp" and len(ins.operands) > 2 and isinstance(ins.operands[2], Imm):
        width = int(ins.operands[2].value)  # cp.async's cp-size
    info = AccessInfo(ins.index, line, touch.space, touch.access, width, column=column, file=file)
    info.executions = k.executions(k.cfg.block_of[ins.index])
    return info


def _arrays(k: _Kernel, addr: Value | None) -> list[str]:
    """The declared arrays an address is built on, by name (what a finding says the access touches)."""
    if addr is None:
        return []
    return [k.atoms.keys[a][1][1:] for a in k.atoms.atoms_of(addr)
            if k.atoms.keys[a][0] == "sym" and k.atoms.keys[a][1].startswith("&")]


def _tile_access(k: _Kernel, ins: Any, tile: MatrixTile) -> AccessInfo | None:
    """A `wmma.load`/`wmma.store` tile: one request of the whole warp, its lanes' share of the tile each.

    All lanes name the tile's start, so the lane-by-lane reading of `_access` does not apply; the tile's
    geometry does. Its rows (or columns) are contiguous runs a leading dimension apart; the CUDA programming
    guide requires a tile to start 256-bit aligned and its leading dimension to be a multiple of 16 bytes.
    Taking it a multiple of 32 (as GEMM sizes are), a run of whole sectors moves exactly its own sectors and
    the request is as coalesced as a request can be. Shorter runs (8-bit tiles) and shared-memory tiles (whose
    bank conflicts depend on the leading dimension) stay without a claim.
    """
    addr = k.sym.addresses.get(ins.index)
    space = ins.space or "generic"
    if space == "generic":
        space = k.generic_space(addr) or space
    if space not in ("global", "shared"):
        return None
    line, column, file = _line(ins, k.main_file)
    kind = "load" if ins.modifiers[0] == "load" else "store"
    info = AccessInfo(ins.index, line, space, kind, ins.access_bytes, column=column, file=file)
    info.executions = k.executions(k.cfg.block_of[ins.index])
    info.arrays = _arrays(k, addr)
    if space == "global" and (tile.run_elements * tile.element_bytes) % SECTOR == 0:
        info.known = True
        info.sectors_per_request = info.ideal_sectors = tile.bytes / SECTOR
    return info


def _access(k: _Kernel, ins: Any) -> AccessInfo | None:
    space = ins.space or "generic"
    if space in ("param", "const", "tex"):
        return None
    addr = k.sym.addresses.get(ins.index)
    if space == "generic":
        space = k.generic_space(addr) or space
    kind = "load" if ins.opcode in ("ld", "ldu") else "store" if ins.opcode == "st" else "atomic"
    line, column, file = _line(ins, k.main_file)
    info = AccessInfo(ins.index, line, space, kind, ins.access_bytes, column=column, file=file)
    block = k.cfg.block_of[ins.index]
    info.executions = k.executions(block)
    atoms = k.atoms
    info.arrays = _arrays(k, addr)
    if space not in ("global", "shared", "local") or info.width_bytes <= 0:
        return info
    if space == "shared":
        info.align = _address_alignment(k, addr)
    guarded = k.guard_samples(block)
    seen = _request_costs(k, info, k.instances(ins.index, addr, assignments=guarded[0] if guarded else None))
    if guarded is not None and line is not None:
        for what in guarded[1]:
            k.sampled_lines[what].add(line)
    if not seen.costs or seen.unknown:
        info.gather = k.dataflow.reaching.loaded_into(ins)
        sampled = None if info.gather else k.sampled_assignments(block, addr)
        if sampled is not None:
            again = _request_costs(k, info, k.instances(ins.index, addr, assignments=sampled[0]))
            if again.costs and not again.unknown:
                seen = again
                for what in sampled[1]:
                    if line is not None:
                        k.sampled_lines[what].add(line)
    costs, shared_lanes, stride = seen.costs, seen.shared_lanes, seen.stride
    info.lane_stride_bytes = stride
    if seen.reached:
        info.warp_share = sum(seen.reached) / len(seen.reached)
    if seen.lanes_active:
        info.active_lanes = sum(seen.lanes_active) / len(seen.lanes_active)
    if not costs or seen.unknown:
        info.known = False
        return info
    info.known = True
    still_open = _open_conditions(k, ins) if shared_lanes else None
    decided = still_open == []
    data_only = still_open is not None and not any(_tests_lane_rank(atoms, c) for c in still_open)
    if shared_lanes and (decided or (k.block is not None and data_only)):
        # with the block shape known, a leader test on threadIdx is decided: a condition left open tests loaded
        # data or a bound of unknown value, and the lanes that pass it share the address (up to the count)
        info.lanes_per_address = sum(shared_lanes) / len(shared_lanes)
        info.lanes_upper_bound = not decided
        info.grid_uniform = addr is not None and not _block_symbols(atoms, addr)
    actual = sum(c.actual for c in costs) / len(costs)
    ideal = sum(c.ideal for c in costs) / len(costs)
    info.symbolic = any(c.symbolic for c in costs)
    if space in ("global", "local"):
        info.sectors_per_request, info.ideal_sectors = actual, ideal
        if all(c.lines is not None for c in costs):
            info.lines_per_request = sum(c.lines for c in costs) / len(costs)  # type: ignore[misc]
        if info.symbolic and isinstance(stride, str):
            info.condition = _coalesced_condition(k, ins.index, info.width_bytes)
    else:
        info.wavefronts, info.ideal_wavefronts = actual, ideal
        if seen.vector and len(seen.vector) == len(costs):
            info.vector_wavefronts = sum(seen.vector) / len(seen.vector)
    return info


@dataclass(slots=True)
class _Seen:
    """What the sampled instances of one access showed: each instance's request cost, whether some instance's
    lanes could not be related, the active lanes per instance, the most lanes per address (atomics) and the
    address step between the first two neighbouring lanes."""

    costs: list[RequestCost] = field(default_factory=list)
    unknown: bool = False
    lanes_active: list[int] = field(default_factory=list)
    shared_lanes: list[int] = field(default_factory=list)
    stride: int | str | None = None
    #: per instance, whether any lane is active at the access
    reached: list[bool] = field(default_factory=list)
    #: per instance of a 32-bit shared load aligned to 16 bytes, the wavefronts of a 16-byte load at its lanes
    vector: list[float] = field(default_factory=list)


def _one_lane_cost(info: AccessInfo) -> RequestCost:
    """The request of a warp with one active lane (`if (threadIdx.x == 0) out[blockIdx.x] = ...`): the sectors of
    its own element (global; an element no wider than a sector, aligned to its width, lies in one), one line, one
    wavefront (shared); in local memory, whose words are interleaved across the lanes (`local_cost`), a sector
    and a line per word."""
    if info.space == "local":
        words = float(max(1, -(-info.width_bytes // 4)))
        return RequestCost(words, 1.0, lines=words)
    units = float(max(1, -(-info.width_bytes // 32))) if info.space == "global" else 1.0
    return RequestCost(units, units, lines=1.0)


def _may_lead_a_vector(info: AccessInfo) -> bool:
    """Whether a shared access could be the first of the scalar loads ptxas merges into one 16-byte vector load:
    a 32-bit load whose address is a multiple of 16 in every thread."""
    return (info.space == "shared" and info.kind == "load" and info.width_bytes == 4
            and info.align is not None and info.align % VECTOR_BYTES == 0)


def _request_costs(k: _Kernel, info: AccessInfo, instances: list[tuple[list[int], list[Value]]]) -> _Seen:
    """The cost of each instance's warp-wide request (sectors for global, wavefronts for shared)."""
    seen = _Seen()
    for active, vals in instances:
        seen.reached.append(bool(active))
        if len(active) == 1:
            seen.costs.append(_one_lane_cost(info))  # a leader's access: its own bytes, no neighbour to relate
        if len(active) < 2:
            continue
        seen.lanes_active.append(len(active))
        c = k.request_cost(info.space, active, vals, info.width_bytes)
        if c is None:
            seen.unknown = True
            continue
        seen.costs.append(c)
        if _may_lead_a_vector(info):
            wide = k.request_cost("shared", active, vals, VECTOR_BYTES)
            if wide is not None:
                seen.vector.append(wide.actual)
        if info.kind == "atomic":
            seen.shared_lanes.append(_most_lanes_per_address(vals))
        if seen.stride is None and active[1] == active[0] + 1 and vals[0] is not None and vals[1] is not None:
            d = E.sub(vals[1], vals[0])
            seen.stride = E.as_const(d) if E.as_const(d) is not None else k.render.poly(d)
    return seen


def _address_alignment(k: _Kernel, addr: Value) -> int | None:
    """The largest power of two up to 128 that divides an address in every thread: the common divisor of its
    constant and of each term's coefficient times its symbols' known alignment (a declared array's own); None
    when the address is not a sum of such terms.

    Only what the code itself fixes counts, not the launch's values: ptxas decides from it whether neighbouring
    loads may become one vector load, so a row of `blockDim.x` elements (`ta[ty * blockDim.x + k]`) has the
    alignment of one element, although the launch's 16 threads would make each row start 64 bytes apart (the
    SASS of such a loop keeps its scalar LDS; with a constant row width it has LDS.128)."""
    v = E.evaluate(k.atoms, addr, k.sym.resolution, {}) if addr is not None else None
    if not isinstance(v, tuple):
        return None
    const = 0
    rest = []
    for mono, coef in v:
        if int(coef) != coef:
            return None
        if mono:
            rest.append((mono, int(coef)))
        else:
            const = int(coef)
    period = address_alignment(k.atoms, tuple(rest), k.align_of)
    return gcd(period, const) if const else period


def _most_lanes_per_address(vals: Any) -> int:
    """The most active lanes of one warp instance whose addresses are equal (an atomic's serialisation)."""
    keys = vals.consts if isinstance(vals, LaneConstants) else vals
    return max(Counter(keys).values())


def _open_conditions(k: _Kernel, ins: Any) -> list[Value] | None:
    """The conditions deciding which lanes reach the instruction (the edges into the blocks that dominate it,
    and its own guard) that are not known true or false in each sampled lane; None when its guard is unread.
    The active lanes are those where no condition is known false, so an open condition (`threadIdx.x == 0` in
    a block of unknown shape, a loaded flag) leaves lanes counted that may not reach it."""
    conds = []
    b = k.cfg.block_of[ins.index]
    while True:
        if b in k.conditions:
            conds.append(k.conditions[b])
        parent = k.cfg.idom[b] if b < len(k.cfg.idom) else b
        if parent == b or parent < 0 or b in k.cfg.unreachable:
            break
        b = parent
    guard = k.sym.guards.get(ins.index) if ins.guard is not None else None
    if ins.guard is not None and guard is None:
        return None
    conds.extend([guard] if guard is not None else [])
    cache: dict[int, Value] = {}
    out = []
    for c in conds:
        v = E.evaluate(k.atoms, c, k.base, cache)
        if v is None or any(E.as_const(x) is None for table in k._lane_table(v) for x in table.values()):
            out.append(c)
    return out


def _tests_lane_rank(atoms: Atoms, cond: Value) -> bool:
    """Whether a condition reads the lane id or a lane mask other than through a loaded value: a rank within
    the active lanes (cooperative groups' `thread_rank() == 0` on a coalesced group), which may hold in a
    single lane (a leader test), unlike a test on data or a bound on the thread index."""
    if cond is None:
        return False
    return any(key[0] == "sym" and (key[1] == "laneid" or str(key[1]).startswith("lanemask"))
               for key in map(atoms.keys.__getitem__, atoms.deep_atoms_of(cond, opaque=LOADED)))


def _block_symbols(atoms: Atoms, addr: Value) -> bool:
    """Whether an address depends on blockIdx (through operation arguments too)."""
    if addr is None:
        return False
    return any(key[0] == "sym" and str(key[1]).startswith("ctaid.")
               for key in map(atoms.keys.__getitem__, atoms.deep_atoms_of(addr)))


def _coalesced_condition(k: _Kernel, index: int, width: int) -> str | None:
    """`cols == 1` for a lane stride of `4*cols` bytes on 4-byte elements (the value making it unit-stride)."""
    v = k.facts.at_launch(index)
    if v is None:
        return None
    tx = k.lane_atoms["tid.x"]
    coeff: dict = {}
    for m, c in v:
        if tx in m:
            rest = list(m)
            rest.remove(tx)
            if tx in rest:
                return None
            coeff[tuple(rest)] = coeff.get(tuple(rest), 0) + c
    if not coeff:
        return None
    stride = tuple(sorted((m, c) for m, c in coeff.items() if c))
    if all(c % width == 0 for _, c in stride):
        elems = tuple((m, c // width) for m, c in stride)
        if len(elems) == 1 and elems[0][0]:
            m, c = elems[0]
            names = "*".join(k.render.atom(a) for a in m)
            return f"{names} == 1" if c == 1 else f"{c}*{names} == 1"
        return f"{k.render.poly(elems)} == 1"
    return f"{k.render.poly(stride)} == {width}"


def _branch(k: _Kernel, ins: Any) -> BranchInfo | None:
    block = k.cfg.block_of[ins.index]
    if ins.opcode == "bra" and len(k.cfg.blocks[block].succs) != 2:
        return None
    pred = k.sym.guards.get(ins.index)
    line, column, file = _line(ins, k.main_file)
    atoms = k.atoms
    depends = _lane_symbols(atoms, pred)
    info = BranchInfo(ins.index, line, False, None, depends, k.render.poly(pred) if pred is not None else "unknown",
                      executions=k.executions(block), column=column, file=file)
    if pred is not None and not atoms.is_lane(pred):
        info.share = 0.0
        return info
    agreement = k.opaque_agreement(ins.index, pred)
    if agreement is not None:  # lanes that agree are uniform, the others not known: no warp found divergent
        info.instances = len(agreement)
        info.share = 0.0 if any(agreement) else None
        return info
    divergent = known = 0
    total = 0
    for active, vals in k.instances(ins.index, pred, own_guard=False):
        if not active:
            continue
        total += 1
        outcome = branch_outcome(vals)
        if outcome == "unknown":
            continue
        known += 1
        if outcome == "divergent":
            taken = lanes_taken(vals)
            if min(taken, len(vals) - taken) > 1:  # one lane apart (`if (tid == 0)`) costs little: not counted
                divergent += 1
    info.instances = total
    if known == 0:
        return info
    info.share = divergent / total
    info.divergent = info.share >= DIVERGENT_SHARE
    return info


def _lane_symbols(atoms: Atoms, p: Value) -> list[str]:
    """Which of threadIdx.x/y/z and the lane id a value depends on (through operation arguments too)."""
    if p is None:
        return []
    found = {key[1] for key in map(atoms.keys.__getitem__, atoms.deep_atoms_of(p))
             if key[0] == "sym" and key[1] in E.LANE_SYMBOLS}
    names = {"tid.x": "threadIdx.x", "tid.y": "threadIdx.y", "tid.z": "threadIdx.z", "laneid": "the lane id"}
    return [names[s] for s in sorted(found)]


#: Seconds the memory analysis of one kernel may take before it stops and says what it skipped.
DEFAULT_BUDGET_S = 2.0
_MEMORY_OPCODES = ("ld", "ldu", "st", "atom", "red")
#: Work units (`_Kernel.work`) between two reads of the thread's CPU clock against the budget: a read is a system
#: call, as costly as a cheap access's analysis, and a few units take well under a millisecond.
_WORK_BETWEEN_CLOCK_READS = 8


def analyze_memory(module: Module, function: Function, cfg: Cfg, loops: LoopForest,
                   block: tuple[int, int, int] | None, params: dict[str, int], trip_counts: dict[int, int],
                   thresholds: Thresholds, main_file: str | None = None, *, cuda_source: str | None = None,
                   budget_s: float | None = DEFAULT_BUDGET_S,
                   dataflow: KernelDataflow | None = None) -> MemoryAnalysis:
    """Analyse the global/shared accesses and conditional branches of one kernel.

    `block` is the block shape (None: assume blockDim.x is a multiple of 32 and say so), `params` known
    parameter values by CUDA or PTX name, `trip_counts` loop trip counts by loop header block id.
    `cuda_source` (the analysed file's text) gives parameter names, exact ranges and fix hints.
    `dataflow` is the kernel's shared dataflow facts (the launch stage's trip counts read the same object);
    without it they are computed here.
    `budget_s` bounds the time spent (None: no bound): past it the remaining instructions are skipped, an
    information finding says how many, and what was analysed stands. The time is this thread's CPU time,
    so a busy machine (or the server's other analysis thread) does not make a kernel hit its budget.
    """
    deadline = None if budget_s is None else time.thread_time() + max(0.0, float(budget_s))
    result = MemoryAnalysis(block=_shape(block))
    result.uncoalesced_percent = float(thresholds.uncoalesced_excess_percent)
    k = _Kernel(module, function, cfg, loops, block, params or {}, trip_counts or {}, main_file, cuda_source,
                dataflow)
    if k.block is None:
        k.assumptions.append("block shape unknown: assumed blockDim.x is a multiple of 32 (one warp = 32 "
                             "consecutive threadIdx.x)")
    todo = [ins for ins in function.body
            if not (cfg.block_of and cfg.block_of[ins.index] in cfg.unreachable)
            and (ins.guard is not None and ins.opcode in ("bra", *_MEMORY_OPCODES)
                 or ins.opcode in _MEMORY_OPCODES and ins.space not in ("param", "const", "tex")
                 or ins.opcode not in _MEMORY_OPCODES and memory_touch(ins) is not None
                 or matrix_tile(ins.opcode, ins.modifiers) is not None)]
    clock_read_at = -_WORK_BETWEEN_CLOCK_READS  # the work done when the thread's clock was last read
    for n, ins in enumerate(todo):
        if deadline is not None and k.work - clock_read_at >= _WORK_BETWEEN_CLOCK_READS:
            clock_read_at = k.work
            if time.thread_time() >= deadline:
                result.skipped = len(todo) - n
                break
        if ins.opcode in _MEMORY_OPCODES:
            info = _access(k, ins)
            if info is not None:
                result.accesses.append(info)
        elif (tile := matrix_tile(ins.opcode, ins.modifiers)) is not None:
            info = _tile_access(k, ins, tile)
            if info is not None:
                result.accesses.append(info)
        elif (touch := memory_touch(ins)) is not None:
            result.accesses.append(_opaque_access(k, ins, touch))
        if ins.guard is not None:
            b = _branch(k, ins)
            if b is not None:
                result.branches.append(b)
    if k.block is None:
        _read_at_first_warps(k, result, cuda_source)
    _note_sampled(k)
    result.assumptions = k.assumptions
    _publish_addresses(k, result)
    result.work = k.work
    result.dead_blocks = k.dead
    if k.block is not None and (deadline is None or time.thread_time() < deadline):
        result.warp_share, result.packed_share = _warp_shares(k)
    result.facts = k.facts
    return result


def _warp_shares(k: _Kernel) -> tuple[dict[int, float], dict[int, float]]:
    """`_Kernel.reach_shares` of each basic block that runs and that some warps skip (share below 1) or that
    fewer warps would run with its lanes packed: the warp shares and the packed shares."""
    out: dict[int, float] = {}
    packed: dict[int, float] = {}
    for b in range(len(k.cfg.blocks)):
        if b in k.dead or b in k.cfg.unreachable or k.cfg.never_runs(b):
            continue
        shares = k.reach_shares(b)
        if shares is None:
            continue
        if shares[0] < 1.0:
            out[b] = shares[0]
        if shares[1] < shares[0]:
            packed[b] = shares[1]
    return out, packed


def _read_at_first_warps(k: _Kernel, result: MemoryAnalysis, cuda_source: str | None) -> None:
    """With the block shape unknown, an access the symbolic warp cannot place (its address needs the warp's
    own `threadIdx.x`: `tid + (tid >> 4)`, a scan's padding) is read again at the first warps of a block
    (`FIRST_WARPS`), and their pattern is taken as every warp's; the assumption names the lines."""
    unknown = [n for n, a in enumerate(result.accesses)
               if not a.known and a.active_lanes and a.space in ("global", "shared")
               and k.fn.body[a.index].opcode in _MEMORY_OPCODES]
    if not unknown:
        return
    first = _Kernel(k.module, k.fn, k.cfg, k.loops, None, k.params, k.trip_counts, k.main_file, cuda_source,
                    k.dataflow, first_warps=True)
    lines: list[int] = []
    for n in unknown:
        info = _access(first, k.fn.body[result.accesses[n].index])
        if info is not None and info.known:
            result.accesses[n] = info
            if info.line is not None and info.line not in lines:
                lines.append(info.line)
    k.work += first.work
    for what, lines_read in first.sampled_lines.items():
        k.sampled_lines[what].update(lines_read)
    if lines:
        k.assumptions.append(f"block shape unknown: the accesses at line{'s' if len(lines) > 1 else ''} "
                             f"{', '.join(map(str, sorted(lines)))} were read at threadIdx.x "
                             f"{', '.join(f'{32 * w}-{32 * w + 31}' for w in FIRST_WARPS)} (warps "
                             f"{', '.join(map(str, FIRST_WARPS))}), taken as every warp's pattern")


def _note_sampled(k: _Kernel) -> None:
    """Say which accesses were read at sampled values that stand for others (see `_Kernel.sampled_assignments`):
    the first blocks of the grid, or the first iterations of a loop whose count is not known."""
    notes = {"blocks": f"were read in blocks 0-{SAMPLED_BLOCKS - 1}, taken as every block's pattern (their lanes "
                       "relate, or their guards decide which lanes run them, only once the block index is a number)",
             "iterations": f"were read at the first {SAMPLED_ITERATIONS} iterations of a loop whose count is not "
                           "known (their lanes relate, or their guards decide which lanes run them, only once its "
                           "counter is a number)"}
    for what, lines in k.sampled_lines.items():
        if lines:
            k.assumptions.append(f"the accesses at line{'s' if len(lines) > 1 else ''} "
                                 f"{', '.join(map(str, sorted(lines)))} {notes[what]}")


def _publish_addresses(k: _Kernel, result: MemoryAnalysis) -> None:
    """Hand the global accesses' symbolic addresses to the time model (its distinct-bytes footprint). A
    `wmma` tile's address is only its first element, not the bytes it spans: its requests count in full."""
    for a in result.accesses:
        if a.space == "global" and a.index in k.sym.addresses and k.fn.body[a.index].opcode != "wmma":
            # the values that loops finished before the access left behind are numbers too (the index where
            # an unrolled loop's remainder starts): the address stays affine in what still varies
            after = k.after_loops(k.cfg.block_of[a.index])
            result.addresses[a.index] = E.evaluate(k.atoms, k.sym.addresses[a.index], {**k.base, **after}, {})
    result.atoms = k.atoms
    result.iteration_atoms = {lp.header: k.sym.iteration_atom[lp.id] for lp in k.loops.loops
                              if lp.id in k.sym.iteration_atom}
