"""Partition camping: how unevenly one wave's concurrent global accesses fall on the DRAM partitions.

GDDR GPUs interleave global memory across their memory controllers (partitions) in fixed-width chunks:
address ``a`` lives in partition ``(a // width) % partitions``. Ruetsch and Micikevicius ("Optimizing Matrix
Transpose in CUDA", NVIDIA 2009) show that when the blocks running at one time all touch addresses that
map to the same few partitions (a matrix column whose row pitch is a multiple of ``partitions * width``),
the other partitions idle and the access runs at that share of the bandwidth: partition camping.

For each affine global access the residues of its addresses modulo ``partitions * width`` are counted for
the addresses one wave touches at one instant (every thread of every resident block, one loop iteration);
the access's bytes are then spread over that many partitions instead of all of them. The busiest
partition carries the evenly spread accesses' share plus every camped access's share; the DRAM time grows
by the busiest partition's load over the even load. Cost: O(partitions * width) per access term.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import gcd
from typing import Any

import numpy as np
from kerncast.analysis.memory.analysis import MemoryAnalysis
from kerncast.analysis.timing.constants import timing_constants
from kerncast.analysis.timing.footprint import access_bytes, affine_extents


def dram_partitions(profile: Any) -> tuple[int, int] | None:
    """(partitions, interleave width in bytes) of the GPU, from `data/timing.toml` [kerncast.partitions];
    None where no interleave is listed (the effect is then not modelled)."""
    table = timing_constants()["kerncast"].get("partitions", {})
    count = table.get(profile.id)
    if not isinstance(count, int) or count < 1:
        return None
    return count, int(table.get("width_bytes", 256))


def partitions_touched(extents: list[tuple[int, int]], partitions: int, width: int) -> int:
    """Distinct partitions hit by the addresses ``base + sum c_i * k_i`` (0 <= k_i < n_i), with the base on a
    chunk boundary (cudaMalloc aligns allocations to at least 256 bytes; a base off by whole chunks only
    renames the partitions, not their number)."""
    period = partitions * width
    hit = np.zeros(period, dtype=bool)
    hit[0] = True
    for coef, n in extents:
        step = coef % period
        if step == 0 or n <= 1:
            continue
        g = gcd(step, period)
        if n >= period // g:
            # the multiples of `step` cover every multiple of g: each residue class mod g fills up
            hit = np.tile(hit.reshape(period // g, g).any(axis=0), period // g)
        else:
            offsets = (step * np.arange(n)) % period
            idx = np.flatnonzero(hit)
            hit = np.zeros(period, dtype=bool)
            hit[(idx[:, None] + offsets[None, :]).ravel() % period] = True
        if hit.all():
            break
    # a partition is hit when any byte of its width-wide chunk is addressed
    chunks = hit.reshape(partitions, width).any(axis=1)
    return int(chunks.sum())


def camping_factor(memory: MemoryAnalysis, block: tuple[int, int, int], wave_grid: tuple[int, int, int],
                   partitions: int, width: int, sector: int = 32,
                   launch_grid: tuple[int, int, int] | None = None) -> float:
    """DRAM time multiplier (>= 1) from partition camping of one wave's concurrent global accesses
    (`launch_grid`, the launch's grid, is what `gridDim` stands for in their addresses)."""
    atoms, addresses, loop_atoms = memory.atoms, memory.addresses, memory.iteration_atoms
    if atoms is None or partitions <= 1 or width <= 0:
        return 1.0
    one_iteration: Mapping[int, float] = {atom: 1.0 for atom in loop_atoms.values()}
    total = busiest = 0.0
    for a in memory.accesses:
        poly = addresses.get(a.index) if a.space == "global" else None
        ext = affine_extents(atoms, poly, block, wave_grid, one_iteration, launch_grid) if poly is not None \
            else None
        if ext is None:
            continue
        nbytes = access_bytes(ext, a.width_bytes, sector) * max(1.0, float(a.executions))
        hit = partitions_touched(ext, partitions, width)
        total += nbytes
        busiest += nbytes / max(1, hit)
    if total <= 0.0:
        return 1.0
    return max(1.0, busiest * partitions / total)
