"""The footprint and load groups one kernel's predictions share: kept for equal inputs only, handed out as copies."""

from __future__ import annotations

from dataclasses import replace

import pytest
from kerncast.analysis.dataflow.expr import Atoms
from kerncast.analysis.memory.analysis import AccessInfo, MemoryAnalysis
from kerncast.analysis.timing.cache_model import _groups
from kerncast.analysis.timing.estimate import _footprint
from kerncast.analysis.timing.footprint import block_groups, footprint, footprint_key


def _memory(stride: int = 4) -> MemoryAnalysis:
    """`out[i] = in[i]` (`i` = blockIdx.x * 256 + threadIdx.x), the load's stride in bytes `stride`."""
    atoms = Atoms()
    t, b = atoms.atom(("sym", "tid.x")), atoms.atom(("sym", "ctaid.x"))
    src, dst = atoms.atom(("sym", "in")), atoms.atom(("sym", "out"))
    load = tuple(sorted([((src,), 1), ((t,), stride), ((b,), 256 * stride)]))
    store = tuple(sorted([((dst,), 1), ((t,), 4), ((b,), 1024)]))
    return MemoryAnalysis(accesses=[AccessInfo(0, 1, "global", "load", 4, known=True),
                                    AccessInfo(1, 1, "global", "store", 4, known=True)],
                          addresses={0: load, 1: store}, atoms=atoms)


def _fields(fp) -> tuple:
    return fp.total, fp.per_wave, fp.written, fp.distinct, fp.camping, fp.complete, fp.covered


def test_a_prediction_at_the_same_launch_reuses_the_footprint_as_a_fresh_copy():
    memory, memo = _memory(), {}
    first = _footprint(memory, (256, 1, 1), (1024, 1, 1), 160, {}, 32, memo)
    assert _fields(first) == _fields(footprint(memory, (256, 1, 1), (1024, 1, 1), 160, {}, 32))
    first.camping = 3.0  # what the caller sets on its copy
    first.covered.add(99)
    # a gain's memory analysis with other sector counts but the same addresses: the kept footprint, unchanged
    ideal = replace(memory, accesses=[replace(a, sectors_per_request=1.0) for a in memory.accesses])
    again = _footprint(ideal, (256, 1, 1), (1024, 1, 1), 160, {}, 32, memo)
    assert len(memo) == 1 and again is not first
    assert again.camping == 1.0 and again.covered == {0, 1}
    assert again.distinct == pytest.approx(2 * 1024 * 256 * 4)


def test_another_address_launch_or_atom_table_is_computed_again():
    memory, memo = _memory(), {}
    base = _footprint(memory, (256, 1, 1), (1024, 1, 1), 160, {}, 32, memo)
    strided = _memory(stride=8)
    wide = _footprint(replace(memory, addresses=strided.addresses), (256, 1, 1), (1024, 1, 1), 160, {}, 32, memo)
    assert wide.distinct > base.distinct  # 8-byte steps: each float costs its own half sector
    assert _fields(wide) == _fields(footprint(replace(memory, addresses=strided.addresses), (256, 1, 1),
                                              (1024, 1, 1), 160, {}, 32))
    smaller = _footprint(memory, (256, 1, 1), (512, 1, 1), 160, {}, 32, memo)
    assert smaller.distinct == pytest.approx(base.distinct / 2)
    # an equal key from another analysis (its own atom table) is not taken for this one's
    other = _memory()
    assert len(memo) == 3
    key = ("footprint", footprint_key(other, (256, 1, 1), (1024, 1, 1), 160, {}, 32))
    assert key in memo and memo[key][0] is memory.atoms
    _footprint(other, (256, 1, 1), (1024, 1, 1), 160, {}, 32, memo)
    assert memo[key][0] is other.atoms


def test_one_wave_and_several_waves_count_the_wave_apart():
    memory = _memory()
    one = footprint(memory, (256, 1, 1), (100, 1, 1), 160, {})  # 100 blocks, 160 resident: a single wave
    assert one.per_wave == one.distinct
    many = footprint(memory, (256, 1, 1), (1000, 1, 1), 160, {})
    assert many.per_wave == pytest.approx(many.distinct * 160 / 1000)


def test_load_groups_are_kept_per_launch_and_handed_out_as_copies():
    memory, memo = _memory(), {}
    run = _groups(memo, memory, (256, 1, 1), (1024, 1, 1), {}, 32, one_iteration=False)
    assert run == block_groups(memory, (256, 1, 1), (1024, 1, 1), {}, 32)
    run.clear()
    assert _groups(memo, memory, (256, 1, 1), (1024, 1, 1), {}, 32, one_iteration=False) == \
        block_groups(memory, (256, 1, 1), (1024, 1, 1), {}, 32)
    _groups(memo, memory, (256, 1, 1), (1024, 1, 1), {}, 32, one_iteration=True)
    assert len(memo) == 2
