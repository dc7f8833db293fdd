"""The lanes of a representative warp, and what one warp-wide request costs: sectors, wavefronts, divergence.

Which threads share a warp depends on the block shape: threads are numbered x-fastest, so with
`blockDim.x = 16` one warp covers two rows of `threadIdx.y`. With a known block we sample up to eight warps of
the block; with an unknown one we assume `blockDim.x` is a multiple of 32 (one warp = 32 consecutive
`threadIdx.x`, `threadIdx.y/z` uniform), and the caller records that assumption.

Costs follow Nsight Compute's definitions: global requests touch 32-byte sectors (ideal: the distinct bytes
packed into sectors); shared requests take one wavefront per distinct 4-byte word in the busiest of the 32
banks (the same word is a broadcast), with 64-bit and 128-bit accesses split into half- and quarter-warp
phases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from math import ceil, gcd
from typing import overload

import numpy as np
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, Poly, Value
from kerncast.analysis.sampling import evenly_spread

WARP = 32
SECTOR = 32
#: the L1's cache line: a global request takes one pass of the L1's tag stage per distinct line it touches
LINE = 128
BANKS = 32
MAX_SAMPLED_WARPS = 3


@dataclass(slots=True)
class Lane:
    """One lane of a sampled warp: its index in the warp and the substitution for the lane symbols."""

    lane: int
    subst: dict[str, Value]


def warp_lanes(atoms: Atoms, block: tuple[int, int, int] | None) -> list[list[Lane]]:
    """Lanes of the sampled warps (a warp's tail beyond the block is left out)."""
    if block is None:
        base = atoms.sym("warp.x")
        ty = atoms.sym("tid.y.warp")
        tz = atoms.sym("tid.z.warp")
        return [[Lane(lane, {"tid.x": E.add(E.scale(base, WARP), E.const(lane)), "tid.y": ty, "tid.z": tz,
                             "laneid": E.const(lane)}) for lane in range(WARP)]]
    bx, by, bz = (max(1, int(d)) for d in block)
    return _block_lanes(bx, by, bz)


#: the warps of a block whose lanes stand for every warp when the block shape is unknown and an address cannot
#: be read for a symbolic warp (`threadIdx.x / 16` in a scan's padding): the first, the second, the eighth
FIRST_WARPS = (0, 1, 7)


def first_warps_lanes(atoms: Atoms) -> list[list[Lane]]:
    """Lanes of the warps `FIRST_WARPS` of a block of unknown shape, with `threadIdx.x` a number (a warp is 32
    consecutive `threadIdx.x`, as `warp_lanes` assumes) and `threadIdx.y/z` uniform symbols."""
    ty = atoms.sym("tid.y.warp")
    tz = atoms.sym("tid.z.warp")
    return [[Lane(lane, {"tid.x": E.const(w * WARP + lane), "tid.y": ty, "tid.z": tz, "laneid": E.const(lane)})
             for lane in range(WARP)] for w in FIRST_WARPS]


def lane_ints(block: tuple[int, int, int] | None) -> dict[str, np.ndarray] | None:
    """For a known block, each lane symbol's value in the lanes `warp_lanes` samples (warps concatenated), as
    an int64 array shared by every kernel with that block shape (read only); None for an unknown block."""
    if block is None:
        return None
    bx, by, bz = (max(1, int(d)) for d in block)
    return _block_lane_ints(bx, by, bz)


@cache
def _block_lane_ints(bx: int, by: int, bz: int) -> dict[str, np.ndarray]:
    lanes = [ln for warp in _block_lanes(bx, by, bz) for ln in warp]
    names = lanes[0].subst if lanes else {}
    out = {name: np.array([E.as_const(ln.subst[name]) for ln in lanes], dtype=np.int64) for name in names}
    for arr in out.values():
        arr.flags.writeable = False  # shared by every kernel with this block shape, in every thread
    return out


@cache
def _block_lanes(bx: int, by: int, bz: int) -> list[list[Lane]]:
    """The sampled lanes of a known block shape (shared by every kernel with that shape: read only)."""
    threads = bx * by * bz
    nwarps = ceil(threads / WARP)
    warps: list[list[Lane]] = []
    for w in evenly_spread(nwarps, MAX_SAMPLED_WARPS):
        lanes: list[Lane] = []
        for lane in range(WARP):
            t = w * WARP + lane
            if t >= threads:
                break
            lanes.append(Lane(lane, {"tid.x": E.const(t % bx), "tid.y": E.const((t // bx) % by),
                                     "tid.z": E.const(t // (bx * by)), "laneid": E.const(lane)}))
        warps.append(lanes)
    return warps


# ----------------------------------------------------------------------------------------------- global

@dataclass(slots=True)
class RequestCost:
    """The cost of one warp-wide request; `symbolic` lists the non-constant lane offsets (generic case)."""

    actual: float
    ideal: float
    symbolic: bool = False
    lines: float | None = None  # global: the distinct 128-byte lines the lanes touch


def address_alignment(atoms: Atoms, rest: Poly, align_of: dict[int, int]) -> int:
    """Largest power-of-two-ish period (≤ 128) that the symbolic part of an address is a multiple of."""
    g = 0
    for m, c in rest:
        a = abs(c)
        for x in m:
            a *= align_of.get(x) or masked_alignment(atoms, x)
        g = gcd(g, a)
    return gcd(g, 128) if g else 128


def masked_alignment(atoms: Atoms, x: int) -> int:
    """The power of two (≤ 128) that an operation node is always a multiple of: `v & mask` keeps no bit below
    the mask's lowest set bit, so nvcc's `(threadIdx.x * 8) & 120` (the tile column `threadIdx.x % 16 * 8` of
    unsigned indices) is a multiple of 8 in every thread; 1 for any other node or symbol."""
    key = atoms.keys[x]
    if key[0] != "op" or key[1] != "and" or len(key[2]) != 2:
        return 1
    for arg in key[2]:
        mask = E.as_const(arg) if arg is not None else None
        if mask:
            return min(128, mask & -mask)
    return 1


class LaneConstants(Sequence[Poly]):
    """The values of a warp's lanes when they share one lane-uniform part and differ by a constant: lane `i`
    holds `rest + consts[i]`. This is the common case (an address `base + 4 * tid.x` once the lane symbols
    are numbers), kept as plain ints so that costs and branch outcomes build no polynomial per lane; indexing
    gives the same `Value` as the lane-by-lane evaluation."""

    __slots__ = ("rest", "consts")

    def __init__(self, rest: Poly, consts: list[int]) -> None:
        self.rest = rest
        self.consts = consts

    def __len__(self) -> int:
        return len(self.consts)

    @overload
    def __getitem__(self, i: int) -> Poly: ...

    @overload
    def __getitem__(self, i: slice) -> list[Poly]: ...

    def __getitem__(self, i: int | slice) -> Poly | list[Poly]:
        if isinstance(i, slice):
            return [self._value(c) for c in self.consts[i]]
        return self._value(self.consts[i])

    def _value(self, c: int) -> Poly:
        return (((), c), *self.rest) if c else self.rest

    def take(self, lanes: list[int]) -> LaneConstants:
        """The values of the listed lanes (by position)."""
        consts = self.consts
        return LaneConstants(self.rest, [consts[i] for i in lanes])


def lane_offsets(atoms: Atoms, addrs: Sequence[Value]) -> tuple[dict[Poly, list[int]], Poly] | None:
    """Group lane addresses by their symbolic difference to the first lane; None when a lane's address is
    unknown or lanes differ through an operation we could not compute (a gather)."""
    if isinstance(addrs, LaneConstants):  # one group: the lanes differ by constants
        c0 = addrs.consts[0]
        return {E.ZERO: [c - c0 for c in addrs.consts]}, addrs[0]
    first = addrs[0]
    if first is None:
        return None
    groups: dict[Poly, list[int]] = {}
    c0, rest0 = E.split_const(first)
    for a in addrs:
        if a is None:
            return None
        ca, resta = E.split_const(a)
        if resta == rest0:  # the common case: lanes differ by a constant
            groups.setdefault(E.ZERO, []).append(ca - c0)
            continue
        d = E.sub(a, first)
        if d is None or E.has_ops(atoms, d):
            return None
        c, rest = E.split_const(d)
        if any(atoms.lane[x] for x in atoms.atoms_of(rest)):
            return None
        groups.setdefault(rest, []).append(c)
    return groups, first


def _request_groups(atoms: Atoms, addrs: Sequence[Value], width: int) -> tuple[dict[Poly, list[int]], Poly] | None:
    """A request's lane addresses grouped as `lane_offsets` groups them; None for no lanes, no width, or
    addresses that cannot be related."""
    return lane_offsets(atoms, addrs) if addrs and width > 0 else None


def global_cost(atoms: Atoms, addrs: Sequence[Value], width: int, align_of: dict[int, int]) -> RequestCost | None:
    """Sectors per request and the ideal for the active lanes' addresses (best case over unknown alignment)."""
    grouped = _request_groups(atoms, addrs, width)
    if grouped is None:
        return None
    groups, first = grouped
    actual = 0
    lines = 0
    distinct = 0
    for rest, offsets in groups.items():
        c0, base_rest = E.split_const(E.add(first, rest) or E.ZERO)
        period = address_alignment(atoms, base_rest, align_of)
        residues = range(c0 % period, 128, period) if period < 128 else range(c0 % 128, c0 % 128 + 1)
        fewest, their_lines = _fewest_sectors(residues, offsets, width)
        actual += fewest
        lines += their_lines
        distinct += _distinct_bytes(offsets, width)
    ideal = max(1, ceil(distinct / SECTOR))
    return RequestCost(float(actual), float(min(ideal, actual)), symbolic=len(groups) > 1, lines=float(lines))


def divided_index_cost(atoms: Atoms, addrs: Sequence[Value], width: int,
                       align_of: dict[int, int]) -> RequestCost | None:
    """The request of lanes whose addresses differ only in a quotient by a value known as a symbol alone,
    `base + c * (x / d)` with `x` a few apart between lanes (`betas[tid / num_neighbors]`, a row's value read
    by each of its elements): for any divisor of magnitude >= 1 the quotients of lanes `x` at most `s` apart
    are at most `s` apart and fill the range between them, so the lanes read contiguous elements of `c`
    bytes, no more of them than a run over that range. The run's sectors are the cost (an upper bound: a
    larger divisor leaves fewer elements) and the ideal too, for contiguous elements are as coalesced as
    their bytes allow. None for any other shape."""
    if len(addrs) < 2 or any(v is None for v in addrs) or width <= 0:
        return None
    parts = [_quotient_term(atoms, v) for v in addrs]  # type: ignore[arg-type]
    if any(p is None for p in parts):
        return None
    rest, coefficient, x0, divisor, extra = parts[0]  # type: ignore[misc]
    offsets = [0]
    for other in parts[1:]:
        r, c, x, d, ex = other  # type: ignore[misc]
        delta = E.as_const(E.sub(x, x0))
        if (r, c, d, ex) != (rest, coefficient, divisor, extra) or delta is None:
            return None
        offsets.append(delta)
    span = max(offsets) - min(offsets)
    if span > 4 * WARP or coefficient <= 0:
        return None
    start = addrs[0]
    run = [E.add(start, E.const(coefficient * k)) for k in range(span + 1)]
    cost = global_cost(atoms, run, min(width, coefficient), align_of)
    return RequestCost(cost.actual, cost.actual, symbolic=False, lines=cost.lines) if cost is not None else None


def _quotient_term(atoms: Atoms, v: Poly) -> tuple[Poly, int, Poly, Poly, object] | None:
    """(the rest, c, x, d, the division's type) when `v` is `rest + c * (x / d)` with `d` not a number and
    no other division in it; None otherwise."""
    found = None
    for n, (mono, c) in enumerate(v):
        keys = [atoms.keys[a] for a in mono]
        if any(k[0] == "op" and k[1] in ("div", "rem") for k in keys):
            if found is not None or len(mono) != 1:
                return None
            key = keys[0]
            if key[1] != "div" or len(key[2]) != 2 or key[2][0] is None or key[2][1] is None \
                    or E.as_const(key[2][1]) is not None or atoms.is_lane(key[2][1]):
                return None
            found = (n, c, key[2][0], key[2][1], key[3])
    if found is None:
        return None
    n, c, x, d, extra = found
    return tuple(t for i, t in enumerate(v) if i != n), c, x, d, extra


def _fewest_sectors(residues: range, offsets: list[int], width: int) -> tuple[int, int]:
    """(sectors, 128-byte lines) the lanes touch at the base alignment (of the possible `residues` of the base
    address modulo 128) that gives the fewest sectors, fewest lines among equals: each lane's access spans its
    first and last sector, and a sector lies in one line. One pass gives both, as the warp's addresses have one
    alignment."""
    if not offsets or not residues:
        return 0, 0
    per_line = LINE // SECTOR
    if width > SECTOR + 1:  # an access may span three sectors or more: count them one by one
        return min(_counts(_sectors(r, offsets, width), per_line) for r in residues)
    if len(residues) <= 4:  # a known alignment leaves one or a few: sets of ints beat the array set-up
        last = width - 1
        return min(_counts({(r + o) // SECTOR for o in offsets} | {(r + o + last) // SECTOR for o in offsets},
                           per_line) for r in residues)
    starts = np.asarray(residues, dtype=np.int64)[:, None] + np.asarray(offsets, dtype=np.int64)[None, :]
    touched = np.sort(np.concatenate((starts // SECTOR, (starts + width - 1) // SECTOR), axis=1), axis=1)
    sectors = 1 + np.count_nonzero(np.diff(touched, axis=1), axis=1)
    lines = 1 + np.count_nonzero(np.diff(touched // per_line, axis=1), axis=1)
    best = int(np.lexsort((lines, sectors))[0])
    return int(sectors[best]), int(lines[best])


def _counts(sectors: set[int], per_line: int) -> tuple[int, int]:
    """(sectors, the lines they lie in) of one alignment's touched sector indices."""
    return len(sectors), len({x // per_line for x in sectors})


def _sectors(r: int, offsets: list[int], width: int) -> set[int]:
    """The sector indices the lanes touch at base residue `r`."""
    s: set[int] = set()
    for o in offsets:
        s.update(range((r + o) // SECTOR, (r + o + width - 1) // SECTOR + 1))
    return s


def _distinct_bytes(offsets: list[int], width: int) -> int:
    total = 0
    end = None
    for o in sorted(set(offsets)):
        if end is None or o >= end:
            total += width
        else:
            total += o + width - end
        end = o + width if end is None else max(end, o + width)
    return total


# ------------------------------------------------------------------------------------------------ local

def local_cost(atoms: Atoms, lanes: list[int], addrs: Sequence[Value], width: int) -> RequestCost | None:
    """Sectors and 128-byte lines of a warp's request to local memory, and the ideal.

    A thread's local array is private, but the device lays the frames of a warp's lanes out interleaved word
    by word (CUDA C++ Programming Guide, "Device Memory Accesses", local memory: "organized such that
    consecutive 32-bit words are accessed by consecutive thread IDs"): word `w` of lane `l` lies at byte
    `128 * w + 4 * l` of the warp's stretch. Lanes that read one offset of their frames (`t[k]`, `k` uniform)
    touch one line per word; lanes whose indices differ (`t[threadIdx.x % 8]`) touch a line per distinct word.
    The frames' base is a multiple of 16 bytes (nvcc's `__local_depot` alignment), so a lane's offset counted
    from lane 0's keeps its word boundaries when lane 0's offset is a whole word. None when lanes' offsets
    differ by a symbolic amount."""
    grouped = _request_groups(atoms, addrs, width)
    if grouped is None or len(grouped[0]) != 1:
        return None
    offsets = next(iter(grouped[0].values()))
    sectors: set[int] = set()
    for lane, off in zip(lanes, offsets, strict=True):
        for word in range(off // 4, (off + width - 1) // 4 + 1):
            sectors.add(word * (LINE // SECTOR) + (lane % WARP) * 4 // SECTOR)
    ideal = max(1, ceil(len(lanes) * width / SECTOR))
    lines = len({x // (LINE // SECTOR) for x in sectors})
    return RequestCost(float(len(sectors)), float(min(ideal, len(sectors))), lines=float(lines))


# ----------------------------------------------------------------------------------------------- shared

def shared_cost(atoms: Atoms, lanes: list[int], addrs: Sequence[Value], width: int) -> RequestCost | None:
    """Wavefronts of a shared-memory request and the ideal; None when lanes' relative addresses are unknown."""
    grouped = _request_groups(atoms, addrs, width)
    if grouped is None:
        return None
    groups, _ = grouped
    if len(groups) != 1:
        return None  # lanes apart by a symbolic amount: their banks cannot be compared
    offsets = next(iter(groups.values()))
    if width <= 4:
        lanes_per_phase = WARP
    elif width <= 8:
        lanes_per_phase = WARP // 2
    else:
        lanes_per_phase = WARP // 4
    words_per_lane = max(1, ceil(width / 4))
    phases: dict[int, list[int]] = {}
    for lane, off in zip(lanes, offsets, strict=True):
        phases.setdefault(lane // lanes_per_phase, []).append(off)
    actual = 0
    ideal = 0
    for offs in phases.values():
        words: set[int] = set()
        for o in offs:
            w0 = o // 4
            words.update(range(w0, w0 + words_per_lane))
        per_bank: dict[int, int] = {}
        for w in words:
            per_bank[w % BANKS] = per_bank.get(w % BANKS, 0) + 1
        actual += max(per_bank.values())
        ideal += max(1, ceil(len(words) / BANKS))
    return RequestCost(float(actual), float(ideal))


# -------------------------------------------------------------------------------------------- divergence

def branch_outcome(preds: Sequence[Value]) -> str:
    """`divergent`, `uniform` or `unknown` for the predicate values of a warp's active lanes."""
    if not preds:
        return "uniform"
    if isinstance(preds, LaneConstants):
        if preds.rest:  # a symbol left: the same in every lane when the constants agree, else not known
            return "uniform" if len(set(preds.consts)) == 1 else "unknown"
        return "divergent" if len({bool(c) for c in preds.consts}) > 1 else "uniform"
    if any(p is None for p in preds):
        return "unknown"
    consts = [E.as_const(p) for p in preds]
    if all(c is not None for c in consts):
        return "divergent" if len({bool(c) for c in consts}) > 1 else "uniform"
    first = preds[0]
    if all(p == first for p in preds):
        return "uniform"
    return "unknown"


def lanes_taken(preds: Sequence[Value]) -> int:
    """How many lanes' predicate is known to be true (a non-zero constant); read from the constants alone
    for `LaneConstants`, without building a value per lane."""
    if isinstance(preds, LaneConstants):
        return 0 if preds.rest else sum(1 for c in preds.consts if c)
    return sum(1 for p in preds if E.as_const(p))
