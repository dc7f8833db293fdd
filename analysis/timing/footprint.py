"""Distinct bytes a launch touches in global memory: the compulsory DRAM traffic and its share per wave.

Each global access's byte address is a polynomial over the thread index, the block index, the loops' iteration
counts and kernel parameters (from the memory analysis, launch values substituted; the block and grid sizes
are the modelled launch's even where it is assumed). When the address is affine in the varying symbols
(`tid.*`, `ctaid.*`, iteration counts) with everything else constant, the set of addresses it touches spans
``sum |c_i| (n_i - 1)`` bytes in steps of the coefficients' common divisor, so it holds at most ``min(prod
n_i, span / step + 1)`` distinct elements. Each element costs at least its own width and, when the step is
wider, the part of a 32-byte sector the hardware moves with it. A quotient or remainder of an index by a constant
(`threadIdx.x / 32`, `threadIdx.x % 32`) is an index of its own, with as many values as it takes. An address
that is not affine (a gather) has no footprint here and counts as no reuse.

Accesses of the same array with the same varying terms (a load and a store of `x[i]`, `g[2*t]` beside
`g[2*t+1]`, a stencil's shifted neighbours) are merged: their distinct sectors are counted once, not once per
instruction. Accesses of different arrays or strides are added (an upper bound where they overlap).

The same count with the block-index extents cut to the blocks of one wave gives the wave's working set,
which the time model holds against the L2 size. The written part is kept apart: the L2 is write-back, so
written bytes reach DRAM during the kernel only when they are evicted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from math import ceil, gcd, prod
from typing import Any

from kerncast.analysis.dataflow.expr import as_const
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.memory.warp import LINE

_LANE = {"tid.x": 0, "tid.y": 1, "tid.z": 2}
_BLOCK = {"ctaid.x": 0, "ctaid.y": 1, "ctaid.z": 2}


@dataclass(slots=True)
class Footprint:
    """Global bytes of a launch: `distinct` the bytes it touches, `total` the DRAM traffic they cost with no
    reuse beyond them (each distinct line read in once and, where written, written back once: a read-modify-
    write of `x[i]` costs its bytes twice), `written` the part of `total` that stores and atomics write,
    `per_wave` the distinct bytes of its first wave, `per_step` those of its first wave in one iteration of its
    loops (of the accesses whose address moves with a loop; all of `per_wave` where none does) and `per_block`
    those of one block over its run (what the L2 must hold for a byte another block of the wave reads at the
    same iteration, and what a block reads itself); `complete` is False when some access had no affine address
    and was left out (its requests then count in full elsewhere)."""

    total: float = 0.0
    per_wave: float = 0.0
    per_step: float | None = None  # the first wave's distinct bytes in one iteration of every loop
    per_block: float | None = None  # one block's distinct bytes over its run
    reuse_inputs: Any = None  # what `reuse_extents` reads to fill the two above on demand
    written: float = 0.0
    distinct: float = 0.0
    camping: float = 1.0  # DRAM time multiplier from partition camping (`partitions.py`)
    complete: bool = True
    covered: set[int] | None = None  # instruction indices whose footprint is in the totals


#: integer operations on a varying index that the footprint reads as a new index of known extent: a quotient
#: (`threadIdx.x / 32`, `>> 5`, nvcc's multiply-and-shift for other divisors) or a remainder (`% 32`, `& 31`,
#: `& -32` for 32 times the quotient) of an affine index by a constant
_DERIVED = frozenset({"shr", "div", "rem", "and"})
_WORD = 1 << 32
#: the smallest magnitude read as a magic multiplier when negative: nvcc's multipliers for dividing by a 32-bit
#: constant are near 2^32 / d, and a difference of indices has small factors
_MAGIC = 1 << 24


@dataclass(frozen=True, slots=True)
class _Index:
    """How an address term varies: `extent` values, times `scale`; `source` and `divisor` name the index it is
    the quotient of (None for any other), so that the index itself can be rewritten as divisor x quotient +
    remainder where both appear (nvcc computes `i % d` as `i - d * (i / d)`)."""

    extent: int
    scale: int = 1
    source: int | None = None
    divisor: int = 1


def _symbol_extent(atoms: Any, a: int, block: tuple[int, int, int], grid: tuple[int, int, int],
                   loop_trips: Mapping[int, float], dims: Mapping[str, int]) -> tuple[str, Any] | None:
    """How one atom of an address varies: ("dim", value) for a launch constant, ("var", _Index) for an index
    (a thread, block or loop index, or a quotient or remainder of one by a constant), ("uniform", 0) for a
    parameter, None for anything else (a loaded value, an unknown)."""
    key = atoms.keys[a]
    if key[0] == "sym" and key[1] in dims:
        return "dim", dims[key[1]]
    if key[0] == "sym" and key[1] in _LANE:
        return "var", _Index(block[_LANE[key[1]]], source=a)
    if key[0] == "sym" and key[1] in _BLOCK:
        return "var", _Index(grid[_BLOCK[key[1]]], source=a)
    if a in loop_trips:
        return "var", _Index(max(1, int(loop_trips[a])), source=a)
    if key[0] == "sym":
        return "uniform", 0
    if key[0] == "op" and key[1] in _DERIVED and len(key[2]) == 2:
        got = _derived_index(atoms, key[1], key[2], block, grid, loop_trips, dims)
        return ("var", got) if got is not None else None
    return None


def _operand_range(atoms: Any, operand: Any, block: tuple[int, int, int], grid: tuple[int, int, int],
                   loop_trips: Mapping[int, float], dims: Mapping[str, int]) -> tuple[int, int, int | None, int] | None:
    """(lowest value, span, the index when the operand is one index times a factor, that factor) of an affine,
    non-negative operand; None otherwise. A large negative 32-bit factor is nvcc's unsigned magic multiplier; a
    small one is a difference, such as the `~lane` (-lane - 1) of the remainder count nvcc computes for a loop
    it unrolled, `((C - 1 - lane) / 32 + 1) & 3`."""
    low = high = 0
    only, factor, terms = None, 1, 0
    for mono, coef in _without_nots(atoms, operand):
        if not mono:
            low, high = low + int(coef), high + int(coef)
            continue
        scale, index = 1, None
        for a in mono:
            got = _symbol_extent(atoms, a, block, grid, loop_trips, dims)
            if got is None or got[0] == "uniform" or (got[0] == "var" and index is not None):
                return None
            if got[0] == "dim":
                scale *= got[1]
            else:
                index = got[1]
        c = int(coef * scale)
        if -_WORD // 2 <= c <= -_MAGIC:
            c += _WORD
        if c == 0 or index is None:
            return None
        reach = c * index.scale * (index.extent - 1)
        low, high = (low + reach, high) if c < 0 else (low, high + reach)
        terms += 1
        only, factor = (index.source if c > 0 and index.scale == 1 and index.divisor == 1 else None), c
    if low < 0:
        return None
    return low, high - low, only if terms == 1 else None, factor


def _without_nots(atoms: Any, operand: Any) -> list[tuple[Any, int]]:
    """The operand's terms with each `not` of a value written out as the value's negation less one (~x = -x - 1,
    the two's complement identity), so that its index terms are read through it."""
    out: list[tuple[Any, int]] = []
    for mono, coef in operand:
        key = atoms.keys[mono[0]] if len(mono) == 1 else None
        if key is not None and key[0] == "op" and key[1] == "not" and len(key[2]) == 1 and key[2][0] is not None:
            out.append(((), -coef))
            out.extend((m, -coef * c) for m, c in key[2][0])
        else:
            out.append((mono, coef))
    return out


def _bit_run(mask: int) -> tuple[int, int] | None:
    """(lowest bit, number of bits) of a positive mask whose set bits are contiguous; None otherwise."""
    low = (mask & -mask).bit_length() - 1
    run = mask >> low
    return (low, run.bit_length()) if not run & (run + 1) else None


def _derived_index(atoms: Any, name: str, args: tuple, block: tuple[int, int, int], grid: tuple[int, int, int],
                   loop_trips: Mapping[int, float], dims: Mapping[str, int]) -> _Index | None:
    """The values a quotient or remainder by a constant takes when its operand is an affine, non-negative
    index: ``(c0 + R) // d - c0 // d + 1`` quotients of an operand spanning `R` from `c0`, ``min(d, R + 1)``
    remainders. A GEMM tile's `threadIdx.x / 32` and `threadIdx.x % 32` become two indices of 8 and 32 values
    for 256 threads, whose product is the block again."""
    k = as_const(args[1])
    if k is None or args[0] is None:
        return None
    found = _operand_range(atoms, args[0], block, grid, loop_trips, dims)
    if found is None:
        return None
    base, span, only, factor = found
    if name == "shr":
        if not 0 <= k < 64:
            return None
        divisor, multiple = 1 << k, 1
    elif name == "div" and k > 0:
        divisor, multiple = k, 1
    elif name == "rem" and k > 0:
        return _Index(min(k, span + 1))
    elif name == "and" and k > 0 and (run := _bit_run(k)) is not None:
        # a run of bits from bit s: 2^s times the quotient by 2^s, kept below 2^n; from bit 0 a remainder
        # (`& 31`), higher up nvcc's form of a byte offset of unsigned indices (`(t * 8) & 120` is 8 * (t % 16))
        low, bits = run
        quotients = (base + span) // (1 << low) - base // (1 << low) + 1
        return _Index(min(1 << bits, quotients), 1 << low)
    elif name == "and" and k < 0 and not -k & (-k - 1):
        divisor, multiple = -k, -k  # `x & -2^k` is 2^k times the quotient by 2^k
    else:
        return None
    extent = (base + span) // divisor - base // divisor + 1
    if only is not None and factor > 1 and name == "shr":
        # nvcc's division by a constant d: (x * m) >> s with m = ceil(2^s / d); the quotient of the index by d
        d = round((1 << k) / factor)
        if d >= 1 and abs(d * factor - (1 << k)) * (span // factor + 1) * d < (1 << k):
            return _Index(extent, multiple, only, d)
        return _Index(extent, multiple)
    return _Index(extent, multiple, only if factor == 1 else None, divisor)


def affine_extents(atoms: Any, poly: Any, block: tuple[int, int, int], grid: tuple[int, int, int],
                   loop_trips: Mapping[int, float], launch_grid: tuple[int, int, int] | None = None
                   ) -> list[tuple[int, int]] | None:
    """(coefficient, extent) of every varying symbol of an affine address; None when not affine.

    `grid` bounds the block indices (the launch's, or one wave's); the block and grid dimensions (`ntid.*`,
    `nctaid.*`), which the memory analysis leaves symbolic when the launch is assumed, are the launch's
    constants (`launch_grid`, the whole launch's grid, defaults to `grid`), so `blockIdx.x * blockDim.x * 48`
    has the coefficient 48 * blockDim.x. A quotient or remainder of an index by a constant (`threadIdx.x / 32`,
    `i % 8`) is an index of its own (`_derived_index`); where an index and its quotient by `d` both appear,
    the index is rewritten as ``d * quotient + remainder``, so that `4 * t + 3904 * (t / 24)` (nvcc's form of
    `1000 * (t / 24) + t % 24`, in bytes) spans 24 x 10 elements, not 240 x 10.
    """
    dims = {**{f"ntid.{c}": block[i] for i, c in enumerate("xyz")},
            **{f"nctaid.{c}": (launch_grid or grid)[i] for i, c in enumerate("xyz")}}
    terms: list[tuple[int, _Index]] = []
    for mono, coef in poly:
        if not mono:
            continue
        scale, varying = 1, []
        for a in mono:
            got = _symbol_extent(atoms, a, block, grid, loop_trips, dims)
            if got is None:
                return None  # an operation node or an unknown: not affine
            if got[0] == "dim":
                scale *= got[1]
            else:
                varying.append(got[1])  # 0: a uniform parameter (an array's base), constant over the launch
        live = [v for v in varying if v]
        if not live and len(varying) <= 1:
            continue  # the base pointer, or an offset of launch constants
        if len(live) != 1 or len(varying) != 1:
            return None
        terms.append((int(coef * scale), live[0]))
    return [(abs(c * x.scale), x.extent) for c, x in _split_quotients(terms)]


def _split_quotients(terms: list[tuple[int, _Index]]) -> list[tuple[int, _Index]]:
    """`a * t + b * (t / d)` as `a * (t % d) + (a * d + b) * (t / d)` where `t` is an index with one quotient."""
    out = list(terms)
    for i, (b, q) in enumerate(terms):
        if q.source is None or q.divisor <= 1:
            continue
        raw = [j for j, (_, x) in enumerate(out) if x.source == q.source and x.divisor == 1 and x.scale == 1]
        others = [x for _, x in terms if x.source == q.source and x.divisor > 1]
        if len(raw) != 1 or len(others) != 1:
            continue
        j = raw[0]
        a, t = out[j]
        out[j] = (a, _Index(min(q.divisor, t.extent)))
        out[i] = (a * q.divisor + b * q.scale, _Index(q.extent))
    return out


def lattice_terms(extents: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """An address's (coefficient, extent) terms in one form: indices that take one value dropped (they move
    nothing), and indices with the same coefficient summed into one: a stencil's `row + u` over 16 rows and 5
    taps is 20 rows, not 80 (the values `c * i + c * j` for i < n1, j < n2 are the `c * k` for k < n1 + n2 - 1).
    Two accesses with the same terms address one lattice, whatever loops of one iteration they sit in."""
    merged: dict[int, int] = {}
    for c, n in extents:
        if n > 1 and c:
            merged[c] = merged[c] + n - 1 if c in merged else n
    return tuple(sorted(merged.items()))


def access_bytes(extents: list[tuple[int, int]], width: int, sector: int) -> float:
    """Distinct bytes one access touches, sector-rounded, from its (coefficient, extent) pairs."""
    terms = [(c, n) for c, n in extents if c and n > 1]
    if not terms:
        return float(min(width, sector) if width < sector else width)
    span = sum(c * (n - 1) for c, n in terms)
    step = 0
    for c, _ in terms:
        step = gcd(step, c)
    elements = min(prod(n for _, n in terms), span // step + 1)
    return float(elements * max(width, min(sector, step)))


def wave_extent(grid: tuple[int, int, int], wave_blocks: int) -> tuple[int, int, int]:
    """The block-index extents of the first wave: blocks are dispatched x first, then y, then z."""
    wx = max(1, min(grid[0], wave_blocks))
    wy = max(1, min(grid[1], -(-wave_blocks // wx)))
    wz = max(1, min(grid[2], -(-wave_blocks // (wx * wy))))
    return wx, wy, wz


@dataclass(frozen=True, slots=True)
class Lattice:
    """One access's addresses: a constant offset plus the (coefficient, extent) terms of its varying symbols."""

    offset: int
    terms: tuple[tuple[int, int], ...]
    width: int
    written: bool


def _varying(atoms: Any, atom: int, loop_trips: Mapping[int, float]) -> bool:
    key = atoms.keys[atom]
    if key[0] == "op":
        return True  # a derived index (affine_extents admits no other operation)
    return atom in loop_trips or (key[0] == "sym" and (key[1] in _LANE or key[1] in _BLOCK))


def _base_and_offset(atoms: Any, poly: Any, loop_trips: Mapping[int, float]) -> tuple[Any, int] | None:
    """(the address's uniform part, its constant offset): two accesses with the same uniform part (the same
    array base and parameter terms) and the same varying terms address the same lattice, shifted by the
    difference of their offsets. None when the offset is not an integer."""
    uniform, offset = [], 0
    for mono, coef in poly:
        if not mono:
            if int(coef) != coef:
                return None
            offset = int(coef)
        elif not any(_varying(atoms, a, loop_trips) for a in mono):
            uniform.append((tuple(mono), coef))
    return tuple(sorted(uniform, key=repr)), offset


#: most accesses of one lattice merged pairwise; a larger group is counted apart (an upper bound)
_MAX_MERGED = 64


def _shared_share(terms: list[tuple[int, int]], shift: int, cell: int) -> float:
    """The share of a lattice's cells that the same lattice shifted by `shift` bytes also touches.

    The shift is written in the lattice's own terms, largest coefficient first (`k` steps of each); it keeps
    ``prod (n - |k|) / prod n`` of the points, provided what is left of it stays inside one cell (the sector,
    or the element where elements are wider apart than a sector). A shift that falls between the points (the
    rows of a tile that another load of an unrolled loop covers) shares nothing."""
    share, rest = _in_terms(terms, shift)
    return share if abs(rest) < cell else 0.0


def _in_terms(terms: list[tuple[int, int]], shift: int) -> tuple[float, int]:
    """(the share of a lattice's points that a shift by `shift` bytes keeps inside the lattice, the part of the
    shift left over): the shift written as `k` steps of each term, largest coefficient first."""
    share = 1.0
    for c, n in terms:
        k = round(shift / c)
        if abs(k) >= n:
            return 0.0, shift
        shift -= k * c
        share *= (n - abs(k)) / n
    return share, shift


def _sectors_of(start: int, width: int, sector: int) -> range:
    return range(start // sector, (start + width - 1) // sector + 1)


def _sparse_new_share(terms: list[tuple[int, int]], earlier: list[int], offset: int, step: int, width: int,
                      sector: int) -> float:
    """The share of the points of the lattice at `offset` whose sectors the lattices at the `earlier` offsets do
    not already touch, where the points lie a sector or more apart (`step`, the terms' common divisor).

    Such points fall at a few positions within their sectors, `sector / gcd(step, sector)` of them in turn; each
    is checked against the sectors of the earlier lattices' points nearest to it (its shift from each written in
    the lattice's terms, the rest then smaller than a step). Three loads of 16 bytes at 0, 16 and 32 of every 48
    (the int4 reads of 12 ints per thread) thus add half a sector per point each, then nothing: together they
    touch every byte, where the one-cell rule took the 16-byte shifts as inside the first load's sector."""
    near = []
    for before in earlier:
        kept, rest = _in_terms(terms, offset - before)
        if kept > 0.0:
            near.append((kept, rest))
    if not near:
        return 1.0
    positions = sector // gcd(step, sector)
    covered = 0
    for i in range(positions):
        point = offset + i * step
        touched: set[int] = set()
        for _, rest in near:
            for j in (-1, 0, 1):
                touched.update(_sectors_of(point - rest + j * step, width, sector))
        covered += set(_sectors_of(point, width, sector)) <= touched
    return 1.0 - max(kept for kept, _ in near) * covered / positions


def union_bytes(lattices: list[Lattice], sector: int) -> float:
    """Distinct bytes of accesses that share their varying terms and differ only by constant offsets.

    A lattice of terms ``(c, n)`` holds ``min(prod n, span / g + 1)`` points (`g` the coefficients' common
    divisor), each costing a cell: its element, or the part of a 32-byte sector the hardware moves with it
    when the points are further apart. Each further access adds the cells that no earlier one touches
    (`_shared_share` against the one it overlaps most): a load and a store of `x[i]` add nothing; `g[2*t]`
    beside `g[2*t+1]` add nothing either, for both halves lie in the same sectors; a stencil's shifted
    neighbours add their edges; the loads of an unrolled loop that fill each other's holes add in full. Where
    the points lie a sector or more apart, which sectors a shifted access adds depends on where in its sector
    each point falls, and the earlier accesses together are checked (`_sparse_new_share`). Never more than the
    accesses counted apart. Offsets are taken from sector-aligned bases, as allocations are.
    """
    first = lattices[0]
    terms = sorted(((c, n) for c, n in first.terms if c and n > 1), reverse=True)
    width = max(x.width for x in lattices)
    apart = sum(access_bytes(list(x.terms), x.width, sector) for x in lattices)
    if len(lattices) > _MAX_MERGED:
        return apart
    if not terms:
        return float(min(apart, len({x.offset for x in lattices}) * access_bytes([], width, sector)))
    span = sum(c * (n - 1) for c, n in terms)
    step = 0
    for c, _ in terms:
        step = gcd(step, c)
    points = min(prod(n for _, n in terms), span // step + 1)
    cell = max(width, min(sector, step))
    offsets = sorted(x.offset for x in lattices)
    cells = float(points)
    for i in range(1, len(offsets)):
        if step >= sector and width <= sector:
            new = _sparse_new_share(terms, offsets[:i], offsets[i], step, width, sector)
        else:
            new = 1.0 - max(_shared_share(terms, offsets[i] - offsets[j], cell) for j in range(i))
        cells += points * new
    return float(min(apart, cells * cell))


def _merged(groups: Mapping[Any, list[Lattice]], sector: int, keep: str = "all") -> float:
    """Distinct bytes of every group: of all its accesses, or only of those that are `written` or `read`."""
    total = 0.0
    for members in groups.values():
        chosen = [x for x in members if keep == "all" or x.written == (keep == "written")]
        if chosen:
            total += union_bytes(chosen, sector)
    return total


def requested_sectors(access: Any, sector: int) -> float:
    """The sectors one warp request of a global access moves, as the DRAM floor counts them: the memory
    analysis's count where the address is known, else the bytes the lanes ask for (no reuse, no waste assumed)."""
    if access.known and access.sectors_per_request:
        return float(access.sectors_per_request)
    return 32.0 * access.width_bytes / sector


def request_bytes(access: Any, sector: int, warps: float) -> float:
    """The bytes one execution of a global access by `warps` warps moves with no reuse: its sectors per request,
    in the share of the warps that run it at all (a leader's `if (threadIdx.x == 0)` store is made by one warp of
    the block, not by each)."""
    share = access.warp_share if access.warp_share is not None else 1.0
    return requested_sectors(access, sector) * sector * warps * share


def sector_passes(access: Any) -> float:
    """The load/store unit's passes per request of a known global or local access whose data path is the limit:
    its sectors over the ideal (at least one)."""
    return max(1.0, access.sectors_per_request / access.ideal_sectors)


def line_passes(access: Any, sector: int) -> float:
    """The passes per request of a known access that goes through the L1's tag stage once per 128-byte line: its
    lines over the fewest lines its bytes fit in (at least one); its sector passes where no line count is known."""
    if not access.lines_per_request:
        return sector_passes(access)
    ideal_lines = ceil(access.ideal_sectors * sector / LINE - 1e-9)
    return max(1.0, access.lines_per_request / max(1, ideal_lines))


def data_path_passes(access: Any, sector: int, lanes: float) -> float:
    """The passes per request, in units of `lanes` clocks (the load/store unit taking a warp's lanes), of a known
    access through the L1: its tag stage takes one 128-byte line a clock and its data path 128 bytes a clock,
    both beside the taking of the lanes, so the longest of the three sets the cost (at least one pass). A 16-lane
    unit spends two clocks on any warp request, during which the two half-warps' lines are looked up; a
    coalesced 16-byte load moves four lines' worth of data. Its sector passes where no line count is known."""
    if not access.lines_per_request:
        return sector_passes(access)
    data = access.sectors_per_request * sector / LINE
    return max(1.0, access.lines_per_request / lanes, data / lanes)


def requested_bytes(access: Any, sector: int, warps: float) -> float:
    """The bytes all the executions of a global access by `warps` warps move with no reuse (`request_bytes`)."""
    return request_bytes(access, sector, warps) * access.executions


def _lattice(memory: MemoryAnalysis, a: Any, block: tuple[int, int, int], grid: tuple[int, int, int],
             loop_trips: Mapping[int, float], launch_grid: tuple[int, int, int]) -> tuple[Any, Lattice] | None:
    """(the group key, the lattice) of access `a` over the thread, block (`grid`: the extents to vary) and loop
    indices: accesses of one key (the same uniform base and varying terms) address one lattice at different
    offsets. None when its address is not affine."""
    poly = memory.addresses.get(a.index)
    ext = affine_extents(memory.atoms, poly, block, grid, loop_trips, launch_grid) if poly is not None else None
    where = _base_and_offset(memory.atoms, poly, loop_trips) if ext is not None else None
    if ext is None or where is None:
        return None
    terms = lattice_terms(ext)
    return (where[0], terms), Lattice(where[1], terms, a.width_bytes, a.kind != "load")


def memoised(memo: dict[Any, Any] | None, key: tuple, atoms: Any, compute: Callable[[], Any]) -> Any:
    """`compute()`, or the value `memo` kept for `key` and the same atom table (matched by identity: the key holds
    every other input, and a table's atoms keep their meaning while it lives). No memo: computed each time."""
    if memo is None:
        return compute()
    kept = memo.get(key)
    if kept is None or kept[0] is not atoms:
        kept = memo[key] = (atoms, compute())
    return kept[1]


def block_groups_key(memory: MemoryAnalysis, block: tuple[int, int, int], grid: tuple[int, int, int],
                     trips: Mapping[int, float], sector: int = 32, *, one_iteration: bool = False) -> tuple:
    """Everything `block_groups` reads of its arguments but the atom table, as one hashable value (see
    `footprint_key`)."""
    loop_trips = tuple((atom, 1.0 if one_iteration else float(trips.get(header, 1.0)))
                       for header, atom in memory.iteration_atoms.items())
    loads = tuple((a.index, a.width_bytes, memory.addresses.get(a.index)) for a in memory.accesses
                  if a.space == "global" and a.kind == "load" and not a.executions <= 0.0)
    return "block_groups", block, grid, sector, one_iteration, loop_trips, loads


def block_groups(memory: MemoryAnalysis, block: tuple[int, int, int], grid: tuple[int, int, int],
                 trips: Mapping[int, float], sector: int = 32, *, one_iteration: bool = False
                 ) -> dict[int, tuple[Any, float]]:
    """Global load index -> (its group, the distinct bytes the group's loads touch in one block).

    One block is the block index fixed (extent 1) with every thread of the block varying; the loops run their
    counts, or once each with `one_iteration` (what the block's warps read at the same point of their loops).
    Loads of one array with the same varying terms form a group and are merged as the launch footprint merges
    them (`union_bytes`): a stencil's neighbours, the unrolled copies of one load. A load whose address is not
    affine has no entry."""
    out: dict[int, tuple[Any, float]] = {}
    if memory.atoms is None:
        return out
    loop_trips = {atom: 1.0 if one_iteration else float(trips.get(header, 1.0))
                  for header, atom in memory.iteration_atoms.items()}
    groups: dict[Any, list[tuple[int, Lattice]]] = {}
    for a in memory.accesses:
        if a.space != "global" or a.kind != "load" or a.executions <= 0.0:
            continue
        found = _lattice(memory, a, block, (1, 1, 1), loop_trips, grid)
        if found is not None:
            groups.setdefault(found[0], []).append((a.index, found[1]))
    for key, members in groups.items():
        distinct = union_bytes([x for _, x in members], sector)
        out.update({i: (key, distinct) for i, _ in members})
    return out


def footprint_key(memory: MemoryAnalysis, block: tuple[int, int, int], grid: tuple[int, int, int],
                  wave_blocks: int, trips: Mapping[int, float], sector: int = 32) -> tuple:
    """Everything `footprint` reads of its arguments but the atom table, as one hashable value: the launch and
    wave shapes, the sector, the loops' counts by iteration atom, and each global access that runs with its
    width, whether it writes, and its address. Two calls with equal keys and the same atom table give equal
    footprints, so the several predictions of one kernel at one launch (the time stage's, each gain's, whose
    changed memory analyses keep the addresses) compute it once (`estimate.global_traffic`)."""
    loop_trips = tuple((atom, float(trips.get(header, 1.0))) for header, atom in memory.iteration_atoms.items())
    accesses = tuple((a.index, a.width_bytes, a.kind != "load", memory.addresses.get(a.index))
                     for a in memory.accesses if a.space == "global" and not a.executions <= 0.0)
    return block, grid, wave_blocks, sector, loop_trips, accesses


def footprint(memory: MemoryAnalysis, block: tuple[int, int, int], grid: tuple[int, int, int], wave_blocks: int,
              trips: Mapping[int, float], sector: int = 32) -> Footprint:
    """Distinct bytes of every global access of `memory` (a MemoryAnalysis) for the launch and one wave.

    Accesses that address the same lattice at different offsets (a load and a store of `x[i]`, the even and
    odd halves `g[2*t]`, `g[2*t+1]`, a stencil's neighbours) are merged into the distinct sectors they touch
    together (`union_bytes`); accesses of different arrays or strides are added."""
    out = Footprint(covered=set())
    if memory.atoms is None:
        out.complete = False
        return out
    loop_trips = {atom: float(trips.get(header, 1.0)) for header, atom in memory.iteration_atoms.items()}
    wave_grid = wave_extent(grid, wave_blocks)
    one = wave_grid == grid  # the launch is one wave: its lattices are the wave's
    launch: dict[Any, list[Lattice]] = {}
    wave: dict[Any, list[Lattice]] = {}
    kept: list[tuple[Any, Any, Lattice, Lattice]] = []
    for a in memory.accesses:
        if a.space != "global" or a.executions <= 0.0:
            continue  # an access no thread of the launch runs touches nothing
        whole = _lattice(memory, a, block, grid, loop_trips, grid)
        one_wave = (whole[1] if one else _wave_lattice(memory, a, block, wave_grid, loop_trips, grid, whole[1])
                    ) if whole is not None else None
        if whole is None or one_wave is None:
            out.complete = False
            continue
        launch.setdefault(whole[0], []).append(whole[1])
        wave.setdefault(whole[0], []).append(one_wave)  # grouped as over the launch
        kept.append((a, whole[0], whole[1], one_wave))
        out.covered.add(a.index)  # type: ignore[union-attr]
    out.distinct = _merged(launch, sector)
    out.written = _merged(launch, sector, keep="written")
    out.total = _merged(launch, sector, keep="read") + out.written
    out.per_wave = out.distinct if one else _merged(wave, sector)
    out.reuse_inputs = (memory, block, grid, wave_grid, loop_trips, sector, kept)
    return out


def reuse_extents(fp: Footprint) -> tuple[float, float]:
    """(`per_step`, `per_block`) of a footprint, worked out on first use and kept: only a wave that outgrows
    the L2 and reads bytes again needs them. Accesses whose address moves with no loop are in no step; where
    none moves, a step is the whole wave."""
    if fp.per_step is None or fp.per_block is None:
        step: dict[Any, list[Lattice]] = {}
        alone: dict[Any, list[Lattice]] = {}
        sector = 32
        if fp.reuse_inputs is not None:
            memory, block, grid, wave_grid, loop_trips, sector, kept = fp.reuse_inputs
            one_step = {atom: 1.0 for atom in loop_trips}
            for a, key, whole, one_wave in kept:
                if _in_loop(memory.addresses.get(a.index), one_step):
                    at_step = _wave_lattice(memory, a, block, wave_grid, one_step, grid, whole)
                    step.setdefault(key, []).append(at_step or one_wave)
                by_one = _wave_lattice(memory, a, block, (1, 1, 1), loop_trips, grid, whole)
                alone.setdefault(key, []).append(by_one or one_wave)
        fp.per_step = _merged(step, sector) if step else fp.per_wave
        fp.per_block = _merged(alone, sector)
    return fp.per_step, fp.per_block


def _in_loop(poly: Any, loop_atoms: Mapping[int, float]) -> bool:
    """Whether an address moves with a loop's iteration (one of `loop_atoms` in a term): the accesses whose
    bytes a wave touches step by step; the others (a result stored once after the loop) are not in a step."""
    return poly is not None and any(a in loop_atoms for mono, _ in poly for a in mono)


def _wave_lattice(memory: MemoryAnalysis, a: Any, block: tuple[int, int, int], wave_grid: tuple[int, int, int],
                  loop_trips: Mapping[int, float], launch_grid: tuple[int, int, int], whole: Lattice) -> Lattice | None:
    """`_lattice(...)[1]` of access `a` over one wave's block indices (`wave_grid`), given its lattice over the
    launch (`whole`): the offset, width and written flag are the launch's (no block index changes them), only
    the terms are worked out again. None when its address is not affine over the wave."""
    poly = memory.addresses.get(a.index)
    ext = affine_extents(memory.atoms, poly, block, wave_grid, loop_trips, launch_grid)
    return Lattice(whole.offset, lattice_terms(ext), whole.width, whole.written) if ext is not None else None
