"""Which global loads the L1 serves: reuse of a sector by the same thread on the next iteration of its loop.

A thread that walks an array in steps smaller than a sector (`s += in[row * n + k]`, 4 bytes per iteration)
finds its next element in the sector its previous iteration brought in: on GPUs whose L1 caches global loads
by default (`data/timing.toml` [kerncast.l1_cache], compute capability 7.0 on), that load waits the L1 hit
latency for ``1 - step / sector`` of its iterations and the L2 or DRAM latency for the rest. The reuse distance
is one iteration of one warp, a few sectors per lane, which no L1 of these GPUs evicts in between; the
assumption is stated with every prediction it changes.

The module answers per access (`l1_reuse`): the share of its executions that hit in L1. The time model turns
it into the load's latency (`load_latency`); the DRAM footprint is unaffected (the distinct bytes are moved
once either way).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerncast.analysis.timing.constants import timing_constants


@dataclass(frozen=True, slots=True)
class L1Reuse:
    """One global load's L1 hits: `share` of its executions, from its `step` in bytes per loop iteration."""

    index: int
    step: int
    share: float


def l1_hit_latency(profile: Any) -> float | None:
    """The L1 hit latency (cycles) of a GPU whose L1 caches global loads by default, else None."""
    row = timing_constants()["kerncast"].get("l1_cache", {}).get("hit_latency", {}).get(profile.arch)
    return float(row) if isinstance(row, int | float) else None


def _innermost_loop(cfg: Any, loops: Any) -> dict[int, int]:
    """Instruction index -> the header of the innermost loop that holds it."""
    depth: dict[int, tuple[int, int]] = {}
    for lp in loops.loops:
        for b in lp.blocks:
            if b not in depth or depth[b][0] < lp.depth:
                depth[b] = (lp.depth, lp.header)
    out: dict[int, int] = {}
    for b, (_, header) in depth.items():
        block = cfg.blocks[b]
        for i in range(block.start, block.end):
            out[i] = header
    return out


def _step(poly: Any, atom: int) -> int | None:
    """Bytes the address moves per iteration of the loop whose iteration atom is `atom`: its coefficient when
    the atom appears alone (linearly), None when it multiplies anything else."""
    step = 0
    for mono, coef in poly:
        if atom in mono:
            if len(mono) != 1 or int(coef) != coef:
                return None
            step += int(coef)
    return step


def l1_reuse(memory: Any, cfg: Any, loops: Any, sector: int) -> list[L1Reuse]:
    """The global loads that find part of their sectors in L1 from their own previous iteration."""
    if memory is None or getattr(memory, "atoms", None) is None:
        return []
    inner = _innermost_loop(cfg, loops)
    out: list[L1Reuse] = []
    for a in memory.accesses:
        if a.space != "global" or a.kind != "load" or a.index not in inner:
            continue
        poly = memory.addresses.get(a.index)
        atom = memory.iteration_atoms.get(inner[a.index])
        if poly is None or atom is None:
            continue
        step = _step(poly, atom)
        if step is not None and 0 < abs(step) < sector:
            out.append(L1Reuse(a.index, abs(step), 1.0 - abs(step) / sector))
    return out


def load_latency(reuse: list[L1Reuse], l1: float, other: float) -> dict[int, float]:
    """Instruction index -> the mean latency of a load that hits in L1 for its `share` and waits `other` (the
    L2 or DRAM latency) for the rest."""
    return {r.index: r.share * l1 + (1.0 - r.share) * other for r in reuse}


def reuse_note(reuse: list[L1Reuse], l1: float, other: float, profile: Any) -> str:
    """The assumption a prediction that used L1 reuse states."""
    steps = sorted({r.step for r in reuse})
    return (f"L1 reuse: {len(reuse)} global load(s) advance {', '.join(map(str, steps))} bytes per iteration of "
            f"their loop, so {', '.join(f'{r.share:.0%}' for r in reuse[:4])} of their executions find the sector "
            f"their previous iteration brought into L1 ({profile.arch} L1 caches global loads, {l1:g}-cycle hit, "
            f"data/timing.toml [kerncast.l1_cache]); the rest wait {other:g} cycles")

