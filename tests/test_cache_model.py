"""The L1 serves a thread's walk through its own row and the sectors its block's other warps read: the share of a
load's executions that hit, its latency, and the L1 lines a request passes."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hand_ptx import kernel
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import AnalysisOptions, Thresholds
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.cache_model import L1Reuse, group_waits, l1_hit_latency, l1_per_block, load_latency
from kerncast.analysis.timing.estimate import unit_replays

ROOT = Path(__file__).resolve().parent.parent


def test_only_gpus_whose_l1_caches_global_loads_have_an_l1_hit_latency():
    assert l1_hit_latency(load_profile("h100")) is not None
    assert l1_hit_latency(load_profile("v100")) is not None
    assert l1_hit_latency(load_profile("k20")) is None  # Kepler: global loads bypass L1
    assert l1_hit_latency(load_profile("gtx1050")) is None  # Pascal: L1 caching of global loads is opt-in


def test_a_load_waits_the_l1_for_its_hits_and_the_l2_for_the_rest():
    lat = load_latency([L1Reuse(7, 4, 0.875)], 34.0, 266.0)
    assert lat == {7: pytest.approx(0.875 * 34 + 0.125 * 266)}


def _row_sum(gpu: str):
    launch = LaunchOverrides.from_strings(grid="4", block="256", params=["n=1000"])
    report = analyze_file(ROOT / "examples/loops.cu", options=AnalysisOptions(gpu=gpu, lime=False, overrides=launch))
    return next(k for k in report.kernels if k.name.split("(")[0] == "rowSum").time


def test_a_row_walk_finds_seven_of_eight_elements_in_l1(nvcc_available):
    """rowSum's thread reads `in[row * n + k]`, 4 bytes further each iteration: 7 of the 8 floats of each
    sector were brought in by the iteration before, so the loop's chain is far shorter than with every load
    waiting for the L2, and Kepler, whose L1 does not cache global loads, keeps the L2 latency."""
    h100 = _row_sum("h100")
    notes = [a for a in h100.assumptions if a.startswith("L1 reuse")]
    assert notes and "88%" in notes[0], h100.assumptions
    k20 = _row_sum("k20")
    assert not any(a.startswith("L1 reuse") for a in k20.assumptions)
    # the loop's latency chain: 1000 iterations of mostly L1 hits, against over 250 cycles per iteration for
    # an L2 hit on every one
    assert h100.detail["latency_chain_cycles"] < 1000 * 150


def _row_memory(stride_bytes: int):
    """The memory analysis and CFG of a warp whose lane t loads and stores `base + t * stride_bytes`."""
    module, fn, cfg, loops = kernel(f"""
    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, {stride_bytes};
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    st.global.f32 [%rd4], %f1;""")
    return analyze_memory(module, fn, cfg, loops, (32, 1, 1), {}, {}, Thresholds(), budget_s=None), cfg


def _lines_per_request(stride_bytes: int) -> float | None:
    """The L1 lines one warp request touches when lane t reads `base + t * stride_bytes`."""
    (load,) = [a for a in _row_memory(stride_bytes)[0].accesses if a.kind == "load"]
    return load.lines_per_request


def test_a_request_counts_the_l1_lines_its_lanes_touch():
    """Lanes 4 bytes apart fill one 128-byte line; 8 bytes apart two; a row apart (16 KB) each its own line:
    32 passes of the L1's tag stage, where sectors over the ideal would say 8."""
    assert _lines_per_request(4) == 1
    assert _lines_per_request(8) == 2
    assert _lines_per_request(16384) == 32


def test_the_unrolled_copies_of_a_load_make_the_warp_wait_for_any_ones_miss():
    """Four copies of `mat[i * n + k]` in one basic block each miss an eighth of their executions (the first
    touch of a new sector): the warp waits at every other iteration, so each waits the miss half the time."""
    cfg = SimpleNamespace(block_of=[0] * 5)
    reuse = group_waits([L1Reuse(i, 16, 0.875, "iteration") for i in range(1, 5)], {i: "mat" for i in range(1, 5)}, cfg)
    assert [r.wait for r in reuse] == [pytest.approx(0.5)] * 4
    assert [r.share for r in reuse] == [0.875] * 4  # the traffic the L1 serves is unchanged
    assert load_latency(reuse, 34.0, 266.0)[1] == pytest.approx(0.5 * 34 + 0.5 * 266)


def _stencil(gpu: str):
    report = analyze_file(ROOT / "examples/stencil.cu", options=AnalysisOptions(gpu=gpu, lime=False))
    return report.kernels[0].time


def test_a_stencils_warps_find_their_neighbours_window_in_l1(nvcc_available):
    """stencil1d's block reads 256 + 16 floats over its run, 17 loads per thread: they fit in the block's share
    of an H100's L1, so each sector is fetched once per block and the other requests for it hit (over 90%); a
    K20, whose L1 does not cache global loads, has no such note."""
    h100 = _stencil("h100")
    (note,) = [a for a in h100.assumptions if a.startswith("L1 reuse")]
    assert "another warp of the block read before" in note, note
    shares = [int(x) for x in re.findall(r"(\d+)%", note.split(":")[1].split("of their executions")[0])]
    assert shares and min(shares) >= 90, note
    assert not any(a.startswith("L1 reuse") for a in _stencil("k20").assumptions)


def test_a_request_passes_the_l1_once_per_line_where_the_l1_caches_global_loads():
    """Lanes a row apart: 32 passes on an H100 (one per line, hit or miss), sectors over the ideal (8) on a K20,
    whose global loads bypass L1; a coalesced request takes one pass on both."""
    for stride, h100, k20 in ((16384, 32.0, 8.0), (4, 1.0, 1.0)):
        memory, cfg = _row_memory(stride)
        (load,) = [a.index for a in memory.accesses if a.kind == "load"]
        assert unit_replays(memory, cfg, load_profile("h100")).get(load, 1.0) == h100
        assert unit_replays(memory, cfg, load_profile("k20")).get(load, 1.0) == k20


def _vector_memory():
    """The memory analysis and CFG of a warp whose lane t loads 16 bytes at `base + 16 t` (one float4)."""
    module, fn, cfg, loops = kernel("""
    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];
    st.global.f32 [%rd4], %f1;""")
    return analyze_memory(module, fn, cfg, loops, (32, 1, 1), {}, {}, Thresholds(), budget_s=None), cfg


def test_a_request_costs_the_longest_of_taking_its_lanes_its_lines_and_its_bytes():
    """Passes count the clocks a GPU takes for a warp's lanes (1 on an H100's 32 load/store lanes, 2 on an
    RTX 3080's 16). A coalesced float4 load moves 512 bytes through a 128-byte-a-clock data path: 4 clocks on
    both, so 4 passes on the H100 and 2 on the RTX 3080. Lanes 8 bytes apart touch two lines: 2 clocks on both
    (the 16-lane GPU looks the two up while it takes the lanes). Lanes a row apart: 32 lines, 32 clocks on both."""
    memory, cfg = _vector_memory()
    (vec,) = [a.index for a in memory.accesses if a.kind == "load"]
    assert unit_replays(memory, cfg, load_profile("h100"))[vec] == 4.0
    assert unit_replays(memory, cfg, load_profile("rtx3080"))[vec] == 2.0
    for stride, h100, rtx3080 in ((8, 2.0, 1.0), (16384, 32.0, 16.0), (4, 1.0, 1.0)):
        memory, cfg = _row_memory(stride)
        (load,) = [a.index for a in memory.accesses if a.kind == "load"]
        assert unit_replays(memory, cfg, load_profile("h100")).get(load, 1.0) == h100
        assert unit_replays(memory, cfg, load_profile("rtx3080")).get(load, 1.0) == rtx3080


def test_the_l1_a_block_has_is_what_the_resident_blocks_shared_memory_leaves():
    """An H100 SM's 256 KB of L1 and shared memory: four blocks of 48 KB shared memory leave each 16 KB."""
    h100 = load_profile("h100")
    assert l1_per_block(h100, 4, 48 * 1024) == 16 * 1024
    assert l1_per_block(h100, 1, 0) == 256 * 1024
    assert l1_per_block(load_profile("k20"), 4, 0) is None


def test_a_turing_sm_keeps_32_kb_of_its_96_as_shared_memory_whatever_the_launch_asks():
    """Compute capability 7.5 carves its 96 KB into 32 or 64 KB of shared memory: a launch with none leaves its
    blocks 64 KB of L1, not 96; one whose blocks ask 40 KB together leaves 56 KB."""
    rtx2060 = load_profile("rtx2060")
    assert l1_per_block(rtx2060, 4, 0) == 64 * 1024 / 4
    assert l1_per_block(rtx2060, 2, 20 * 1024) == (96 - 40) * 1024 / 2
