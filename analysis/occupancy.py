"""Occupancy: how many blocks of a kernel an SM holds at once, computed as the CUDA occupancy calculator does.

The thesis took occupancy from NVIDIA's spreadsheet as a user input (Algorithm 8 needs the blocks per SM); here it
is computed from the block size and the register and shared-memory counts ptxas reports. The algorithm is that of
`cudaOccMaxActiveBlocksPerMultiprocessor` in `cuda_occupancy.h` (docs/gpus.md section 6):

1. warps: ``floor(max_warps_per_sm / warps_per_block)``;
2. blocks: the per-SM block limit;
3. registers: registers are allocated per warp in units of 256 (``regs_per_warp = roundup(regs * 32, 256)``);
   a block whose ``regs_per_warp * roundup(warps_per_block, sub_partitions)`` exceeds the per-block register
   limit cannot launch; otherwise the register file is split between the sub-partitions and the limit is
   ``floor(floor(regs_per_sm / sub_partitions / regs_per_warp) * sub_partitions / warps_per_block)``;
4. shared memory: ``roundup(shared + reserved_per_block, unit)`` bytes per block (1 KB reserved from CC 8.0),
   blocks = ``floor(capacity / that)``.

Choice of shared-memory capacity on Volta and later (`carveout`): by default ("max") the largest carveout,
because the driver sizes the carveout so that shared memory does not limit occupancy when it can (CUDA Volta
tuning guide) and because `cuda_occupancy.h` uses the maximum under the default preference. "min" gives the
smallest carveout that holds one block (what `cuda_occupancy.h` picks when the preferred carveout is too small,
leaving the most L1), and an integer is a preferred carveout in KB, rounded up to a supported one and raised to
the smallest one that holds a block, as the driver does. Before Volta the capacity is fixed (Kepler: the 48 KB of
the default cache configuration).

When several resources allow the same, smallest number of blocks, the limiter is the first of warps, blocks,
registers, shared: a hardware limit is named before a resource the programmer could shrink, because shrinking it
would not raise occupancy.

Invalid input (no threads, a block above the per-block thread limit, more registers per thread than allowed,
more shared memory than a block may have) gives occupancy 0 and a note, never an exception.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from kerncast.analysis.gpus import GpuProfile

LIMITERS = ("warps", "blocks", "registers", "shared")


@dataclass(frozen=True, slots=True)
class OccupancyRules:
    """Allocation rules of one compute capability (`data/occupancy.toml`)."""

    cc: str
    reg_alloc_unit: int
    warp_alloc_granularity: int
    smem_alloc_unit: int
    reserved_smem_per_block: int
    carveouts_kb: tuple[int, ...]


@dataclass(frozen=True)
class Occupancy:
    """Blocks and warps resident on one SM, the resource that limits them, and the blocks each resource allows.

    `limits` maps each of "warps", "blocks", "registers", "shared" to the blocks per SM that resource alone
    allows; `occupancy` is active warps / max warps; `shared_capacity_bytes` is the shared-memory carveout used.
    """

    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    limiter: str
    limits: dict[str, int]
    notes: list[str] = field(default_factory=list)
    shared_capacity_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        """Plain values for a JSON report (what `dataclasses.asdict` gives, built directly: the resource
        findings read it for every kernel on every save, and `asdict` deep-copies field by field)."""
        return {"active_blocks_per_sm": self.active_blocks_per_sm, "active_warps_per_sm": self.active_warps_per_sm,
                "max_warps_per_sm": self.max_warps_per_sm, "occupancy": self.occupancy, "limiter": self.limiter,
                "limits": dict(self.limits), "notes": list(self.notes),
                "shared_capacity_bytes": self.shared_capacity_bytes}


@cache
def _all_rules() -> dict[str, OccupancyRules]:
    text = resources.files("kerncast.analysis").joinpath("data/occupancy.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)["cc"]
    return {
        cc: OccupancyRules(
            cc=cc,
            reg_alloc_unit=int(v["reg_alloc_unit"]),
            warp_alloc_granularity=int(v["warp_alloc_granularity"]),
            smem_alloc_unit=int(v["smem_alloc_unit"]),
            reserved_smem_per_block=int(v["reserved_smem_per_block"]),
            carveouts_kb=tuple(int(k) for k in v["carveouts_kb"]),
        )
        for cc, v in table.items()
    }


def rules_for(cc: tuple[int, int]) -> tuple[OccupancyRules, str | None]:
    """The rules of a compute capability, or those of the closest lower one with a note when it is not listed."""
    rules = _all_rules()
    key = f"{cc[0]}.{cc[1]}"
    if key in rules:
        return rules[key], None
    known = sorted(rules, key=lambda k: tuple(int(p) for p in k.split(".")))
    lower = [k for k in known if tuple(int(p) for p in k.split(".")) < tuple(cc)]
    chosen = lower[-1] if lower else known[0]
    return rules[chosen], f"no occupancy rules for compute capability {key}; used those of {chosen}"


def _roundup(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _shared_capacity(profile: GpuProfile, rules: OccupancyRules, need: int, carveout: str | int) -> int:
    """Shared-memory bytes per SM for this block's need, following the carveout policy in the module doc."""
    if not rules.carveouts_kb:
        return profile.limits.shared_per_sm
    options = sorted(k * 1024 for k in rules.carveouts_kb if k * 1024 <= profile.limits.shared_per_sm)
    if not options:
        return profile.limits.shared_per_sm
    if carveout == "max":
        return options[-1]
    if carveout == "min":
        preferred = 0
    elif isinstance(carveout, int) and not isinstance(carveout, bool):
        preferred = carveout * 1024
    else:
        raise ValueError(f"carveout must be 'max', 'min' or a size in KB, got {carveout!r}")
    fitting = [o for o in options if o >= max(preferred, need)]
    return fitting[0] if fitting else options[-1]


def _invalid(profile: GpuProfile, limiter: str, note: str) -> Occupancy:
    return Occupancy(0, 0, profile.limits.max_warps_per_sm, 0.0, limiter, dict.fromkeys(LIMITERS, 0), [note])


def compute_occupancy(
    profile: GpuProfile,
    threads_per_block: int,
    registers_per_thread: int,
    shared_bytes_per_block: int,
    carveout: str | int = "max",
) -> Occupancy:
    """Occupancy of one SM for a block size, registers per thread and shared bytes per block (static + dynamic).

    See the module docstring for the rules, the carveout choice and the limiter tie-break.
    """
    lim = profile.limits
    if threads_per_block <= 0:
        return _invalid(profile, "warps", f"a block needs at least one thread (got {threads_per_block})")
    if threads_per_block > lim.max_threads_per_block:
        return _invalid(
            profile,
            "warps",
            f"{threads_per_block} threads per block exceed the {lim.max_threads_per_block} allowed on "
            f"{profile.name}; the launch would fail",
        )
    if registers_per_thread < 0 or registers_per_thread > lim.max_regs_per_thread:
        return _invalid(
            profile,
            "registers",
            f"{registers_per_thread} registers per thread: {profile.name} allows 0 to {lim.max_regs_per_thread}",
        )
    if shared_bytes_per_block < 0 or shared_bytes_per_block > lim.max_shared_per_block:
        return _invalid(
            profile,
            "shared",
            f"{shared_bytes_per_block} bytes of shared memory per block: {profile.name} allows at most "
            f"{lim.max_shared_per_block}; the launch would fail",
        )

    rules, fallback = rules_for(profile.compute_capability)
    notes: list[str] = [fallback] if fallback else []
    warps_per_block = -(-threads_per_block // profile.warp_size)
    limits: dict[str, int] = {
        "warps": lim.max_warps_per_sm // warps_per_block,
        "blocks": lim.max_blocks_per_sm,
    }

    if registers_per_thread == 0:
        limits["registers"] = lim.max_blocks_per_sm
    else:
        regs_per_warp = _roundup(registers_per_thread * profile.warp_size, rules.reg_alloc_unit)
        gran = rules.warp_alloc_granularity
        per_block = regs_per_warp * _roundup(warps_per_block, gran)
        if per_block > lim.max_regs_per_block:
            limits["registers"] = 0
            notes.append(
                f"a block needs {per_block} registers (allocated per warp in units of {rules.reg_alloc_unit}, "
                f"warps rounded up to {gran}), above the {lim.max_regs_per_block} per block: too many "
                "resources requested for launch"
            )
        else:
            warps_per_sub = (lim.regs_per_sm // gran) // regs_per_warp
            limits["registers"] = warps_per_sub * gran // warps_per_block

    need = 0
    if shared_bytes_per_block or rules.reserved_smem_per_block:
        need = _roundup(shared_bytes_per_block + rules.reserved_smem_per_block, rules.smem_alloc_unit)
    capacity = _shared_capacity(profile, rules, need, carveout)
    limits["shared"] = capacity // need if need else lim.max_blocks_per_sm
    if rules.reserved_smem_per_block:
        notes.append(f"{rules.reserved_smem_per_block} bytes of shared memory per block are reserved by the system")
    if shared_bytes_per_block > lim.static_shared_per_block:
        notes.append(
            f"more than {lim.static_shared_per_block} bytes of shared memory per block must be dynamic and needs "
            "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)"
        )

    blocks = min(limits[k] for k in LIMITERS)
    limiter = next(k for k in LIMITERS if limits[k] == blocks)
    warps = blocks * warps_per_block
    occupancy = warps / lim.max_warps_per_sm
    notes.append(f"{blocks} blocks of {warps_per_block} warps per SM: occupancy {occupancy:.0%}, limited by {limiter}")
    return Occupancy(blocks, warps, lim.max_warps_per_sm, occupancy, limiter, limits, notes, capacity)
