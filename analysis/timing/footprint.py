"""Distinct bytes a launch touches in global memory: the compulsory DRAM traffic and its share per wave.

Each global access's byte address is a polynomial over the thread index, the block index, the loops' iteration
counts and kernel parameters (from the memory analysis, launch values substituted; the block and grid sizes
are the modelled launch's even where it is assumed). When the address is affine in the varying symbols
(`tid.*`, `ctaid.*`, iteration counts) with everything else constant, the set of addresses it touches spans
``sum |c_i| (n_i - 1)`` bytes in steps of the coefficients' common divisor, so it holds at most ``min(prod
n_i, span / step + 1)`` distinct elements. Each element costs at least its own width and, when the step is
wider, the part of a 32-byte sector the hardware moves with it. An address that is not affine (a gather, a
modulo) has no footprint here and counts as no reuse.

The same count with the block-index extents cut to the blocks of one wave gives the wave's working set,
which the time model holds against the L2 size. The written part is kept apart: the L2 is write-back, so
written bytes reach DRAM during the kernel only when they are evicted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import gcd, prod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerncast.analysis.memory.analysis import MemoryAnalysis

_LANE = {"tid.x": 0, "tid.y": 1, "tid.z": 2}
_BLOCK = {"ctaid.x": 0, "ctaid.y": 1, "ctaid.z": 2}


@dataclass(slots=True)
class Footprint:
    """Distinct global bytes of a launch (`total`) and of its first wave (`per_wave`); `complete` is False when
    some access had no affine address and was left out (its requests then count in full elsewhere)."""

    total: float = 0.0
    per_wave: float = 0.0
    written: float = 0.0  # the part of `total` that stores (and atomics) write
    camping: float = 1.0  # DRAM time multiplier from partition camping (`partitions.py`)
    complete: bool = True
    covered: set[int] | None = None  # instruction indices whose footprint is in the totals


def affine_extents(atoms: Any, poly: Any, block: tuple[int, int, int], grid: tuple[int, int, int],
                   loop_trips: Mapping[int, float], launch_grid: tuple[int, int, int] | None = None
                   ) -> list[tuple[int, int]] | None:
    """(coefficient, extent) of every varying symbol of an affine address; None when not affine.

    `grid` bounds the block indices (the launch's, or one wave's); the block and grid dimensions (`ntid.*`,
    `nctaid.*`), which the memory analysis leaves symbolic when the launch is assumed, are the launch's
    constants (`launch_grid`, the whole launch's grid, defaults to `grid`), so `blockIdx.x * blockDim.x * 48`
    has the coefficient 48 * blockDim.x.
    """
    dims = {**{f"ntid.{c}": block[i] for i, c in enumerate("xyz")},
            **{f"nctaid.{c}": (launch_grid or grid)[i] for i, c in enumerate("xyz")}}
    out: list[tuple[int, int]] = []
    for mono, coef in poly:
        if not mono:
            continue
        scale, varying = 1, []
        for a in mono:
            key = atoms.keys[a]
            if key[0] == "sym" and key[1] in dims:
                scale *= dims[key[1]]
            elif key[0] == "sym" and key[1] in _LANE:
                varying.append(block[_LANE[key[1]]])
            elif key[0] == "sym" and key[1] in _BLOCK:
                varying.append(grid[_BLOCK[key[1]]])
            elif a in loop_trips:
                varying.append(max(1, int(loop_trips[a])))
            elif key[0] == "sym":
                varying.append(0)  # a uniform parameter (an array's base): constant over the launch
            else:
                return None  # an operation node or an unknown: not affine
        n_var = sum(1 for v in varying if v > 0)
        if n_var == 0 and len(varying) <= 1:
            continue  # the base pointer, or an offset of launch constants
        if n_var != 1 or len(varying) != 1:
            return None
        out.append((abs(int(coef * scale)), next(v for v in varying if v > 0)))
    return out


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


def footprint(memory: MemoryAnalysis, block: tuple[int, int, int], grid: tuple[int, int, int], wave_blocks: int,
              trips: Mapping[int, float], sector: int = 32) -> Footprint:
    """Distinct bytes of every global access of `memory` (a MemoryAnalysis) for the launch and one wave."""
    out = Footprint(covered=set())
    atoms, addresses, loop_atoms = memory.atoms, memory.addresses, memory.iteration_atoms
    if atoms is None:
        out.complete = False
        return out
    loop_trips = {atom: float(trips.get(header, 1.0)) for header, atom in loop_atoms.items()}
    wave_grid = wave_extent(grid, wave_blocks)
    for a in memory.accesses:
        if a.space != "global":
            continue
        poly = addresses.get(a.index)
        ext = affine_extents(atoms, poly, block, grid, loop_trips) if poly is not None else None
        ext_w = affine_extents(atoms, poly, block, wave_grid, loop_trips, grid) if ext is not None else None
        if ext is None or ext_w is None:
            out.complete = False
            continue
        touched = access_bytes(ext, a.width_bytes, sector)
        out.total += touched
        if a.kind != "load":
            out.written += touched
        out.per_wave += access_bytes(ext_w, a.width_bytes, sector)
        out.covered.add(a.index)  # type: ignore[union-attr]
    return out
