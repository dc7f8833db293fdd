"""Which global loads the L1 serves, on GPUs whose L1 caches global loads by default (`data/timing.toml`
[kerncast.l1_cache], compute capability 7.0 on): reuse by the same thread and by the other warps of its block.

* The same thread's next iteration (`l1_reuse`): a thread that walks an array in steps smaller than a sector
  (`s += in[row * n + k]`, 4 bytes per iteration) finds its next element in the sector its previous iteration
  brought in, for ``1 - step / sector`` of its iterations. The reuse distance is one iteration of one warp, a
  few sectors per lane, which no L1 of these GPUs evicts in between.
* The block's other warps (`block_reuse`): the warps of a block read each other's sectors: a stencil's
  neighbouring rows, a matrix product's row of B that every row of threads reads, a mask every thread reads.
  The L1 is shared by the resident blocks of an SM and holds what the shared-memory carve-out leaves of its
  storage (`unified_bytes`). When everything a block reads over its whole run fits in its part, each distinct
  sector is fetched once per block and every other request hits. When it does not, only the reuse within one
  iteration of the loops is counted (the block's warps at the same point of their loops, kept together by the
  scheduler and by barriers), combined with the thread's own step.

A hit waits the L1 hit latency; a miss goes to the L2, which serves it unless it is one of the launch's DRAM
bytes (`pipelined.py` weighs the L2 hit and DRAM latencies by that share). The module answers per access: the
share of its executions that hit in L1; the time model turns it into the load's latency (`load_latency`) and
removes the hits from the traffic the L2 sees; the DRAM footprint is unaffected (the distinct bytes are moved
once either way). Every prediction that uses it states it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kerncast.analysis.timing.constants import timing_constants
from kerncast.analysis.timing.footprint import block_groups, block_groups_key, memoised, request_bytes, requested_bytes


@dataclass(frozen=True, slots=True)
class L1Reuse:
    """One global load's L1 hits: `share` of its executions; `step` its bytes per loop iteration where its own
    previous iteration's sector is reused (0 otherwise); `block` what else the share counts: "" (the step
    alone), "run" (sectors other warps of the block read over its whole run) or "iteration" (sectors other warps
    read at the same iteration); `wait` the share of its executions whose warp does not wait for a miss of its
    group (`group_waits`), None where that is `share`."""

    index: int
    step: int
    share: float
    block: str = ""
    wait: float | None = None


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


def _l1_bytes(profile: Any, key: str) -> float | None:
    """The `[kerncast.l1_cache]` byte count `key` of the profile's compute capability, None where it has none."""
    row = timing_constants()["kerncast"].get("l1_cache", {}).get(key, {}).get(profile.cc)
    return float(row) if isinstance(row, int | float) else None


def unified_bytes(profile: Any) -> float | None:
    """The L1 data cache and shared memory storage of one SM (bytes), None where the data has no figure."""
    return _l1_bytes(profile, "unified_bytes")


def l1_per_block(profile: Any, resident: int, shared_bytes: int) -> float | None:
    """The L1 bytes one of `resident` blocks has: the unified storage less their shared memory (at least the
    carve-out the architecture always keeps, `min_shared_bytes`: 32 KB on Turing), shared out."""
    total = unified_bytes(profile)
    if total is None:
        return None
    resident = max(1, resident)
    least = _l1_bytes(profile, "min_shared_bytes") or 0.0
    return max(0.0, total - max(least, resident * max(0, shared_bytes))) / resident


def block_reuse(memory: Any, cfg: Any, loops: Any, trips: Mapping[int, float], block: tuple[int, int, int],
                grid: tuple[int, int, int], sector: int, capacity: float | None,
                memo: dict[Any, Any] | None = None) -> list[L1Reuse]:
    """Every global load's L1 hits from its own previous iteration and from the other warps of its block.

    `capacity` is the L1 bytes one resident block has (`l1_per_block`): when the distinct bytes all the block's
    loads touch over its run fit in it, a group of loads (one array, one index pattern: `block_groups`) misses
    once per distinct byte; otherwise it misses once per distinct byte of each iteration, and of those the
    thread's own step (`l1_reuse`) saves its share too. `memo` (`KernelGraphs.memo`) keeps the load groups for
    the kernel's other predictions at the same launch."""
    own = {r.index: r for r in l1_reuse(memory, cfg, loops, sector)}
    threads = block[0] * block[1] * block[2]
    warps = -(-threads // 32)
    run = _groups(memo, memory, block, grid, trips, sector, one_iteration=False)
    loads = {a.index: a for a in memory.accesses if a.index in run}
    asked: dict[Any, float] = {}
    for i, (key, _) in run.items():
        a = loads[i]
        asked[key] = asked.get(key, 0.0) + requested_bytes(a, sector, warps)
    touched = sum({key: d for key, d in run.values()}.values())
    out: dict[int, L1Reuse] = {}
    if capacity is not None and touched <= capacity:
        for i, (key, distinct) in run.items():
            share = max(0.0, 1.0 - distinct / asked[key]) if asked[key] > 0 else 0.0
            step = own.get(i)
            if step is None or share > step.share:
                out[i] = L1Reuse(i, 0, share, "run")
    else:
        once = _groups(memo, memory, block, grid, trips, sector, one_iteration=True)
        per_iteration: dict[Any, float] = {}
        for i, (key, _) in once.items():
            per_iteration[key] = per_iteration.get(key, 0.0) + request_bytes(loads[i], sector, warps)
        for i, (key, distinct) in once.items():
            shared = max(0.0, 1.0 - distinct / per_iteration[key]) if per_iteration[key] > 0 else 0.0
            step = own.get(i)
            if shared > 0.0:
                mine = step.share if step is not None else 0.0
                out[i] = L1Reuse(i, step.step if step is not None else 0, 1.0 - (1.0 - shared) * (1.0 - mine),
                                 "iteration")
    for i, r in own.items():
        out.setdefault(i, r)
    return group_waits([r for r in out.values() if r.share > 0.0], {i: key for i, (key, _) in run.items()}, cfg)


def _groups(memo: dict[Any, Any] | None, memory: Any, block: tuple[int, int, int], grid: tuple[int, int, int],
            trips: Mapping[int, float], sector: int, *, one_iteration: bool) -> dict[int, tuple[Any, float]]:
    """`block_groups(...)`, a copy of the one `memo` kept for the same inputs where it kept one."""
    key = block_groups_key(memory, block, grid, trips, sector, one_iteration=one_iteration)
    return dict(memoised(memo, key, memory.atoms,
                         lambda: block_groups(memory, block, grid, trips, sector, one_iteration=one_iteration)))


def group_waits(reuse: list[L1Reuse], group: Mapping[int, Any], cfg: Any) -> list[L1Reuse]:
    """The reuse with each load's `wait`: the loads of one group in one basic block (the unrolled copies of
    `mat[i * n + k]`, a stencil's neighbours) are issued together and their values used together, so the warp
    waits whenever any of them misses. Their misses are the first touches of new sectors, one load's at a time,
    so the chance that one of them misses is the sum of their miss shares: four copies that each miss an eighth
    of the time make the warp wait every other iteration, not every eighth."""
    def block(i: int) -> int:
        return cfg.block_of[i] if 0 <= i < len(cfg.block_of) else -1  # -1: an access of no instruction

    together: dict[tuple[Any, int], float] = {}
    for r in reuse:
        if r.index in group:
            key = (group[r.index], block(r.index))
            together[key] = together.get(key, 0.0) + 1.0 - r.share
    out = []
    for r in reuse:
        key = (group.get(r.index), block(r.index))
        miss = min(1.0, together[key]) if r.index in group else 1.0 - r.share
        out.append(replace(r, wait=1.0 - miss) if miss > 1.0 - r.share + 1e-9 else r)
    return out


def load_latency(reuse: list[L1Reuse], l1: float, other: float) -> dict[int, float]:
    """Instruction index -> the mean latency of a load that hits in L1 for its `share` (its `wait` where its
    group's misses hold it more often) and waits `other` (the L2 or DRAM latency) for the rest."""
    out = {}
    for r in reuse:
        hit = r.share if r.wait is None else r.wait
        out[r.index] = hit * l1 + (1.0 - hit) * other
    return out


def reuse_note(reuse: list[L1Reuse], l1: float, other: float, profile: Any, capacity: float | None = None) -> str:
    """The assumption a prediction that used L1 reuse states."""
    steps = sorted({r.step for r in reuse if r.step})
    why = []
    if steps:
        why.append(f"a thread's next element in the sector its previous iteration brought in (steps of "
                   f"{', '.join(map(str, steps))} bytes)")
    if any(r.block == "run" for r in reuse):
        why.append("a sector another warp of the block read before: everything the block reads fits in its "
                   f"{(capacity or 0) / 1024:.3g} KB share of the L1 (data/timing.toml [kerncast.l1_cache] "
                   "unified_bytes, less the resident blocks' shared memory)")
    if any(r.block == "iteration" for r in reuse):
        why.append("a sector another warp of the block read at the same iteration of its loops (what the block "
                   f"reads over its run exceeds its {(capacity or 0) / 1024:.3g} KB share of the L1)")
    return (f"L1 reuse: {len(reuse)} global load(s) find {', '.join(f'{r.share:.0%}' for r in reuse[:4])}"
            f"{', ...' if len(reuse) > 4 else ''} of their executions in L1: {'; '.join(why)} ({profile.arch} L1 "
            f"caches global loads, {l1:g}-cycle hit, data/timing.toml [kerncast.l1_cache]); the rest wait "
            f"{other:.4g} cycles")

