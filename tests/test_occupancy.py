"""The occupancy calculator against hand-worked cases (the arithmetic is in each test's docstring).

Rules (cuda_occupancy.h, docs/gpus.md s6): registers are allocated per warp in units of 256;
a block's warps are rounded up to a multiple of 4 sub-partitions for the per-block register check and the
register file is split between the 4 sub-partitions; shared memory is allocated in 256 B units (128 B and 1 KB
reserved per block from CC 8.0).
"""

from __future__ import annotations

import dataclasses

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.occupancy import compute_occupancy, rules_for


def occ(gpu: str, threads: int, regs: int, smem: int, **kw):
    return compute_occupancy(load_profile(gpu), threads, regs, smem, **kw)


# ------------------------------------------------------------------------------------ CC 3.5 (Tesla K20)


def test_cc35_warps_limit_full_occupancy():
    """K20, 256 threads, 32 regs, no shared: 8 warps/block; warps 64/8 = 8 blocks; registers: 32*32 = 1024 per
    warp, 16384 per sub-partition / 1024 = 16 warps, x4 = 64 warps / 8 = 8 blocks; blocks 16. Min 8, tie
    warps/registers -> warps (hardware limit first). 64/64 warps = 100 %."""
    o = occ("k20", 256, 32, 0)
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter) == (8, 64, 1.0, "warps")
    assert o.limits == {"warps": 8, "blocks": 16, "registers": 8, "shared": 16}


def test_cc35_registers_limit():
    """K20, 256 threads, 63 regs: 63*32 = 2016 -> rounded up to 2048 per warp; 16384 / 2048 = 8 warps per
    sub-partition, x4 = 32 warps / 8 per block = 4 blocks -> 32/64 = 50 %, registers."""
    o = occ("k20", 256, 63, 0)
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (4, 0.5, "registers")


def test_cc35_shared_limit():
    """K20, 128 threads, 16 regs, 12 KB shared: 12288 B is a multiple of 256; 48 KB / 12 KB = 4 blocks
    (warps 64/4 = 16, registers 512 per warp -> 32 warps per sub-partition -> 128/4 = 32). 4*4 = 16/64 = 25 %."""
    o = occ("k20", 128, 16, 12288)
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (4, 0.25, "shared")
    assert o.shared_capacity_bytes == 48 * 1024


def test_cc35_blocks_limit():
    """K20, 32 threads (1 warp): warps allow 64 blocks but the SM holds 16 -> 16/64 = 25 %, blocks."""
    o = occ("k20", 32, 16, 0)
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (16, 0.25, "blocks")


def test_cc30_has_63_registers_per_thread():
    """K4200 (CC 3.0) allows 63 registers per thread: 64 is invalid, 63 is fine."""
    assert occ("k4200", 128, 64, 0).occupancy == 0.0
    assert occ("k4200", 128, 63, 0).active_blocks_per_sm > 0


# ------------------------------------------------------------------------------------ CC 7.0 (Tesla V100)


def test_cc70_registers_limit():
    """V100, 128 threads, 40 regs: 40*32 = 1280 per warp (a multiple of 256); 16384 / 1280 = 12.8 -> 12 warps
    per sub-partition, x4 = 48 warps / 4 per block = 12 blocks -> 48/64 = 75 %, registers."""
    o = occ("v100", 128, 40, 0)
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy, o.limiter) == (12, 48, 0.75, "registers")


def test_cc70_shared_limit_with_max_carveout():
    """V100, 256 threads, 32 regs, 40000 B shared: rounded up to 256 -> 157*256 = 40192 B; the 96 KB carveout
    (98304 B) holds floor(98304/40192) = 2 blocks -> 16/64 = 25 %, shared."""
    o = occ("v100", 256, 32, 40000)
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (2, 0.25, "shared")
    assert o.shared_capacity_bytes == 96 * 1024


def test_cc70_carveout_policies():
    """Same block: 'min' takes the smallest carveout >= 40192 B, 64 KB, holding 1 block; a preference of 16 KB
    is raised to that same 64 KB; a preference of 100 KB rounds to nothing larger than 96 KB (2 blocks)."""
    assert occ("v100", 256, 32, 40000, carveout="min").shared_capacity_bytes == 64 * 1024
    assert occ("v100", 256, 32, 40000, carveout="min").active_blocks_per_sm == 1
    assert occ("v100", 256, 32, 40000, carveout=16).shared_capacity_bytes == 64 * 1024
    assert occ("v100", 256, 32, 40000, carveout=100).active_blocks_per_sm == 2


def test_cc70_invalid_inputs_give_zero_with_a_note():
    """More threads than a block may have, zero threads, more registers than allowed: occupancy 0, a note."""
    for threads, regs, smem, limiter, words in [
        (1025, 16, 0, "warps", "1024"),
        (0, 16, 0, "warps", "at least one thread"),
        (-32, 16, 0, "warps", "at least one thread"),
        (128, 256, 0, "registers", "255"),
        (128, -1, 0, "registers", "registers per thread"),
        (128, 16, 98305, "shared", "98304"),
    ]:
        o = occ("v100", threads, regs, smem)
        assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy) == (0, 0, 0.0)
        assert o.limiter == limiter
        assert any(words in n for n in o.notes), o.notes


def test_cc70_dynamic_shared_above_48k_is_noted():
    """64 KB per block is allowed on V100 (opt-in up to 96 KB) and the note says it needs the opt-in."""
    o = occ("v100", 128, 16, 64 * 1024)
    assert o.active_blocks_per_sm == 1
    assert any("cudaFuncAttributeMaxDynamicSharedMemorySize" in n for n in o.notes)


# ------------------------------------------------------------------------------------ CC 7.5 (Tesla T4)


def test_cc75_has_32_warps_per_sm():
    """T4, 1024 threads, 32 regs: 32 warps per block, the SM holds 32 warps -> 1 block, 100 %; 64 regs: 2048
    per warp, 16384/2048 = 8 per sub-partition -> 32 warps -> 1 block still (tie, warps first)."""
    o = occ("t4", 1024, 32, 0)
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (1, 1.0, "warps")
    assert occ("t4", 1024, 64, 0).limiter == "warps"


# ------------------------------------------------------------------------------------ CC 8.0 (A100)


def test_cc80_reserved_shared_memory_changes_the_answer():
    """A100, 256 threads, 32 regs, 41 KB = 41984 B shared: + 1 KB reserved = 43008 B (a multiple of 128);
    164 KB = 167936 B / 43008 = 3.9 -> 3 blocks (without the reservation it would be 167936/41984 = 4).
    24/64 warps = 37.5 %, shared."""
    o = occ("a100", 256, 32, 41984)
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (3, 0.375, "shared")
    assert any("reserved" in n for n in o.notes)


def test_cc80_register_per_block_check():
    """A100, 1024 threads, 72 regs: 72*32 = 2304 per warp; 32 warps (already a multiple of 4) * 2304 = 73728
    registers > 65536 per block -> the launch fails: 0 blocks, registers."""
    o = occ("a100", 1024, 72, 0)
    assert (o.active_blocks_per_sm, o.occupancy, o.limiter) == (0, 0.0, "registers")
    assert any("too many resources" in n for n in o.notes)


def test_cc80_largest_block_of_shared_memory():
    """A100 allows 163 KB per block (166912 B): +1 KB = 167936 B = the 164 KB carveout -> 1 block; one byte
    more is refused."""
    assert occ("a100", 128, 32, 166912).active_blocks_per_sm == 1
    assert occ("a100", 128, 32, 166913).occupancy == 0.0


# ------------------------------------------------------------------------------------ CC 8.9 and 9.0


def test_cc89_blocks_limit_is_24():
    """L4, 32 threads: 48 warps per SM would allow 48 blocks, the SM holds 24 -> 24/48 = 50 %, blocks."""
    o = occ("l4", 32, 32, 0)
    assert (o.active_blocks_per_sm, o.max_warps_per_sm, o.occupancy, o.limiter) == (24, 48, 0.5, "blocks")


def test_cc90_registers_limit():
    """H100, 384 threads, 168 regs: 168*32 = 5376 per warp (21*256); per block 12 warps * 5376 = 64512 <= 65536
    so it launches; 16384/5376 = 3.05 -> 3 warps per sub-partition, x4 = 12 warps -> 1 block -> 12/64."""
    o = occ("h100", 384, 168, 0)
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.limiter) == (1, 12, "registers")
    assert o.occupancy == pytest.approx(12 / 64)


def test_cc90_min_carveout_holds_one_block():
    """H100, 100 KB shared + 1 KB reserved = 103424 B; 'min' picks 132 KB (100 KB is too small) -> 1 block;
    'max' (228 KB = 233472 B) holds 2."""
    assert occ("h100", 128, 32, 100 * 1024, carveout="min").shared_capacity_bytes == 132 * 1024
    assert occ("h100", 128, 32, 100 * 1024).active_blocks_per_sm == 2


# ------------------------------------------------------------------------------------ misc


def test_unknown_compute_capability_uses_the_closest_lower_rules():
    profile = dataclasses.replace(load_profile("h100"), compute_capability=(12, 0))
    o = compute_occupancy(profile, 256, 32, 0)
    assert o.active_blocks_per_sm == 8
    assert any("12.0" in n and "9.0" in n for n in o.notes)
    assert rules_for((6, 0))[0].warp_alloc_granularity == 2


def test_to_json_is_plain_data():
    data = occ("v100", 128, 40, 0).to_json()
    assert data["limiter"] == "registers" and data["limits"]["registers"] == 12
    assert isinstance(data["notes"], list)


def test_json_holds_every_field_as_plain_copies():
    """The JSON form is the dataclass's fields in order, its dict and list copied (not shared)."""
    occ = compute_occupancy(load_profile("v100"), 1024, 64, 48 * 1024)
    data = occ.to_json()
    assert data == dataclasses.asdict(occ)
    assert list(data) == [f.name for f in dataclasses.fields(occ)]
    assert data["limits"] is not occ.limits and data["notes"] is not occ.notes
