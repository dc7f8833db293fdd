"""Thesis Eqs. 4.8-4.12, the boat-hull range, `predict_time` and the pipeline's time report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.loops import find_loops
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.timing import RooflineInputs, predict_time, roofline_range, schedule_cfg
from kerncast.analysis.timing import scheduler as sched_mod
from kerncast.analysis.timing.penalties import thesis_penalties

HEADER = ".version 7.0\n.target sm_35\n.address_size 64\n"

VADD = HEADER + """
.visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u32 %r2, [pn];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra $L_end;
    cvta.to.global.u64 %rd4, %rd1;
    mul.wide.s32 %rd5, %r1, 4;
    add.s64 %rd6, %rd4, %rd5;
    cvta.to.global.u64 %rd7, %rd2;
    add.s64 %rd8, %rd7, %rd5;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd6];
    add.f32 %f3, %f2, %f1;
    cvta.to.global.u64 %rd9, %rd3;
    add.s64 %rd10, %rd9, %rd5;
    st.global.f32 [%rd10], %f3;
$L_end:
    ret;
}
"""

LOOP = HEADER + """
.visible .entry accum(.param .u64 pa, .param .u32 pn)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [pa];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 0;
    mov.f32 %f1, 0f00000000;
$L_loop:
    ld.global.f32 %f2, [%rd2];
    fma.rn.f32 %f1, %f2, %f2, %f1;
    add.s32 %r1, %r1, 1;
    setp.lt.s32 %p1, %r1, 100;
    @%p1 bra $L_loop;
    st.global.f32 [%rd2], %f1;
    ret;
}
"""


def _kernel(text: str):
    fn = parse_ptx(text).kernels[0]
    cfg = build_cfg(fn)
    return cfg, find_loops(cfg)


@pytest.fixture(scope="module")
def k20():
    return load_profile("k20")


# ------------------------------------------------------------------------------------------ Eqs. 4.10-4.12


def test_thesis_penalties_by_hand_on_k20(k20):
    """13 blocks x 256 threads (the thesis's example launch), 3 global and 2 shared instructions, one wave.

    By hand with the K20 profile (thesis Table 4.5, Table 3.3, section 3.4):
    l_overhead = 0.00002 x 3328 + 1.4489 = 1.51546 us;
    TP(gm) at 3 x 3328 / 32 = 312 requests = 76363.8 (1.04 - e^(-0.00021342 x 312)) = 7973.8 MB/s,
    gm = 3328 / 32 x 4 / 7973.8 x 3 = 0.15651 us;
    TP(sm) at 208 requests = 823761.8 (1 - e^(-0.00001383 x 208)) = 2366.26 MB/s,
    sm = 3328 / (32 x 13) x 4 / 2366.26 x 2 = 0.027047 us;
    L(gm) = 0.02828 x 3328 + 220 = 314.116 cycles, cm = 3328 x 3 / (1 x 1310720 / 4) x 314.116 = 9.5707 cycles.
    """
    p = thesis_penalties(k20, total_threads=3328, n_global=3, n_shared=2, waves=1)
    assert p.launch_overhead_us == pytest.approx(1.51546, rel=1e-6)
    assert p.global_us == pytest.approx(0.156513, rel=1e-4)
    assert p.shared_us == pytest.approx(0.0270469, rel=1e-4)
    assert p.cache_cycles == pytest.approx(9.5707, rel=1e-4)


def test_cache_penalty_shrinks_with_waves(k20):
    one = thesis_penalties(k20, total_threads=1 << 20, n_global=3, n_shared=0, waves=1)
    forty = thesis_penalties(k20, total_threads=1 << 20, n_global=3, n_shared=0, waves=40)
    assert forty.cache_cycles == pytest.approx(one.cache_cycles / 40)


def test_uncoalesced_sectors_scale_the_global_and_cache_penalties(k20):
    base = thesis_penalties(k20, total_threads=1 << 20, n_global=3, n_shared=0, waves=4)
    strided = thesis_penalties(k20, total_threads=1 << 20, n_global=3, n_shared=0, waves=4, global_sector_factor=8)
    assert base.global_us < strided.global_us
    assert strided.cache_cycles == pytest.approx(8 * base.cache_cycles)


def test_bank_conflicts_scale_the_shared_penalty(k20):
    base = thesis_penalties(k20, total_threads=1 << 16, n_global=0, n_shared=4, waves=1)
    conflicted = thesis_penalties(k20, total_threads=1 << 16, n_global=0, n_shared=4, waves=1,
                                  shared_wavefronts=8)
    # more wavefronts cost more, though less than 8x: the thesis's throughput model grows with the requests
    assert base.shared_us < conflicted.shared_us < 8 * base.shared_us


# ------------------------------------------------------------------------------------------ boat hull


def test_boat_hull_threshold_example():
    """Seed 002 section 4.1 on a GTX470 (Table 2): threshold of 1024 x 1024 4-byte pixels, f = 1, o = 16.

    m0 = 2 x 1024^2 x 4 / 95e9 = 88.3 us, c0 = 1024^2 x 17 / 1089e9 = 16.4 us: memory-bound at 88 us.
    """
    inp = RooflineInputs(work_units=1024 ** 2, ops_per_thread=17, bytes_per_thread=8, p_compute=1089e9,
                         p_coalesced=95e9, p_uncoalesced=5.9e9, coalescing_known=True, non_fma=False)
    lo, hi = roofline_range(inp)
    assert lo == pytest.approx(88.3, abs=0.05) and hi == lo


def test_boat_hull_floors_widen_the_range():
    inp = RooflineInputs(work_units=1024 ** 2, ops_per_thread=17, bytes_per_thread=8, p_compute=1089e9,
                         p_coalesced=95e9, p_uncoalesced=5.9e9, coalescing_known=False, non_fma=True)
    lo, hi = roofline_range(inp)
    assert lo == pytest.approx(88.3, abs=0.05)
    assert hi == pytest.approx(1024 ** 2 * 8 / 5.9e9 * 1e6)  # m1: every access scattered
    compute = RooflineInputs(work_units=1e6, ops_per_thread=1000, bytes_per_thread=4, p_compute=1e12,
                             p_coalesced=1e12, p_uncoalesced=1e11, coalescing_known=True, non_fma=True)
    lo, hi = roofline_range(compute)
    assert hi == pytest.approx(2 * lo)  # c1: the non-FMA floor doubles the compute time


# ------------------------------------------------------------------------------------------ predict_time


def test_predict_time_report_fields(k20):
    cfg, loops = _kernel(VADD)
    est = predict_time(cfg, loops, k20, blocks=4096, threads_per_block=256, blocks_per_sm=8, occupancy=1.0,
                       model="thesis")
    data = json.loads(json.dumps(est.to_json()))
    assert set(data) == {"us", "cycles", "model", "breakdown", "waves", "occupancy", "bottleneck", "mwp_cwp_us",
                         "mwp_cwp_class", "roofline_us", "assumptions", "range_us", "range_basis", "models"}
    assert data["range_us"][0] <= data["us"] <= data["range_us"][1]
    assert set(data["models"]) == {"kerncast", "thesis", "mwp-cwp"} and data["models"]["thesis"] == data["us"]
    assert data["model"] == "thesis-scheduler"
    assert set(data["breakdown"]) == {"schedule_us", "launch_overhead_us", "global_penalty_us",
                                      "shared_penalty_us", "cache_penalty_us"}
    assert data["us"] == pytest.approx(sum(data["breakdown"].values()))
    assert data["cycles"] == pytest.approx(data["us"] * k20.core_clock_mhz)
    assert data["waves"] == 40  # ceil(4096 / 13) = 316 blocks on the busiest SM, 8 per wave
    assert data["mwp_cwp_class"] in ("memory-bound", "compute-bound", "too few warps")
    lo, hi = data["roofline_us"]
    assert 0 < lo <= hi
    assert any("coalesced" in a for a in data["assumptions"])
    assert data["bottleneck"].startswith("instruction schedule")


def test_predict_time_grows_with_the_grid(k20):
    cfg, loops = _kernel(VADD)
    small = predict_time(cfg, loops, k20, blocks=13, threads_per_block=256, blocks_per_sm=8)
    big = predict_time(cfg, loops, k20, blocks=13 * 800, threads_per_block=256, blocks_per_sm=8)
    assert small.waves == 1 and big.waves == 100
    assert big.breakdown["schedule_us"] > 50 * small.breakdown["schedule_us"]


def test_fewer_resident_blocks_means_more_waves(k20):
    cfg, loops = _kernel(VADD)
    full = predict_time(cfg, loops, k20, blocks=4096, threads_per_block=256, blocks_per_sm=8)
    limited = predict_time(cfg, loops, k20, blocks=4096, threads_per_block=256, blocks_per_sm=2)
    assert limited.waves == 4 * full.waves - 1 or limited.waves >= 3 * full.waves


def test_trip_counts_multiply_the_loop(k20):
    cfg, loops = _kernel(LOOP)
    header = loops.loops[0].header
    ten = predict_time(cfg, loops, k20, blocks=13, threads_per_block=256, trips={header: 10}, blocks_per_sm=8)
    thousand = predict_time(cfg, loops, k20, blocks=13, threads_per_block=256, trips={header: 1000},
                            blocks_per_sm=8)
    ratio = thousand.breakdown["schedule_us"] / ten.breakdown["schedule_us"]
    assert 50 < ratio <= 100


def test_unknown_trip_count_is_stated(k20):
    cfg, loops = _kernel(LOOP)
    est = predict_time(cfg, loops, k20, blocks=13, threads_per_block=256)
    assert any("trip count unknown" in a for a in est.assumptions)
    assert any("resident blocks per SM from the thesis" in a for a in est.assumptions)


def test_cost_does_not_grow_with_grid_or_trip_count(k20, monkeypatch):
    """Identical waves and loop bodies are scheduled once: count Algorithm 6 calls, not wall-clock time."""
    cfg, loops = _kernel(LOOP)
    header = loops.loops[0].header
    calls = {"n": 0}
    real = sched_mod.schedule_block

    def counting(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(sched_mod, "schedule_block", counting)
    predict_time(cfg, loops, k20, blocks=13, threads_per_block=256, trips={header: 1}, blocks_per_sm=8)
    small = calls["n"]
    calls["n"] = 0
    predict_time(cfg, loops, k20, blocks=10**6 + 7, threads_per_block=256, trips={header: 10**4},
                 blocks_per_sm=8)
    assert calls["n"] <= 2 * small  # a full wave and a last partial wave at most
    assert small == len(cfg.blocks)


def test_schedule_cfg_counts_memory_per_thread(k20):
    cfg, loops = _kernel(LOOP)
    header = loops.loops[0].header
    s = schedule_cfg(cfg, loops, 256, {header: 100}, latency=sched_mod.profile_latency(k20, 3328),
                     units=k20.units)
    assert s.global_count == 100 + 1  # the load in the loop, the store after it
    assert s.shared_count == 0


# ------------------------------------------------------------------------------------------ pipeline


def test_pipeline_reports_time_and_launch_for_ptx(tmp_path):
    path = tmp_path / "vadd.ptx"
    path.write_text(VADD)
    report = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k20"))
    k = report.kernels[0]
    data = k.to_json()
    assert data["time"] is not None and data["time"]["us"] > 0
    assert data["launch"]["grid"] and data["launch"]["block"]
    assert data["launch"]["source"]["grid"] == "default"
    assert any("grid" in a for a in data["time"]["assumptions"])


def test_pipeline_bad_gpu_profile_is_a_file_level_error(tmp_path):
    path = tmp_path / "vadd.ptx"
    path.write_text(VADD)
    report = analyze_file(path, options=AnalysisOptions(lime=False, gpu="no-such-gpu"))
    assert any(f.code == "gpu-profile-error" and "no-such-gpu" in f.message for f in report.findings)
    assert report.kernels and report.kernels[0].time is None


def test_pipeline_on_an_example_uses_the_launch_site(nvcc_available):
    examples = Path(__file__).resolve().parent.parent / "examples"
    report = analyze_file(examples / "vector_add.cu", options=AnalysisOptions(lime=False, gpu="v100"))
    k = report.kernels[0]
    assert k.launch.grid.value == (4096, 1, 1) and k.launch.grid.source == "launch-site"
    assert k.occupancy is not None and k.time is not None
    base = k.time.us
    bigger = analyze_file(examples / "vector_add.cu", options=AnalysisOptions(lime=False,
        gpu="v100", overrides=LaunchOverrides.from_strings(grid="16384", params=["n=4194304"])))
    assert bigger.kernels[0].launch.grid.source == "cli"
    assert bigger.kernels[0].time.us > 2 * base


class _Memory:
    """A stand-in for kerncast.analysis.memory's MemoryAnalysis with a fixed request mix."""

    def __init__(self, coal: float, uncoal: float, unknown: float = 0.0) -> None:
        self.coal, self.uncoal, self.unknown = coal, uncoal, unknown

    def global_requests(self) -> tuple[float, float]:
        return self.coal, self.uncoal

    def unknown_requests(self) -> float:
        return self.unknown

    def uncoalesced_sectors_per_request(self) -> float | None:
        return 32.0 if self.uncoal else None

    def global_sector_factor(self) -> float:
        return (4.0 * self.coal + 32.0 * self.uncoal) / (4.0 * (self.coal + self.uncoal))

    def shared_wavefronts_per_request(self) -> None:
        return None


def test_memory_analysis_request_counts_are_used(k20):
    cfg, loops = _kernel(VADD)
    kw = {"blocks": 4096, "threads_per_block": 256, "blocks_per_sm": 8, "model": "thesis"}
    coalesced = predict_time(cfg, loops, k20, memory=_Memory(3, 0), **kw)
    scattered = predict_time(cfg, loops, k20, memory=_Memory(0, 3), **kw)
    assert any("memory analysis request counts used" in a for a in coalesced.assumptions)
    assert scattered.mwp_cwp_us > coalesced.mwp_cwp_us
    assert coalesced.roofline_us[0] == coalesced.roofline_us[1] or coalesced.roofline_us[1] < scattered.roofline_us[1]
    assert scattered.roofline_us[0] > coalesced.roofline_us[0]
    # uncoalesced access moves 8x the sectors: the global memory penalty grows with it
    assert scattered.breakdown["global_penalty_us"] > 2 * coalesced.breakdown["global_penalty_us"]
    assert scattered.us > coalesced.us
    assert any("(8.00x)" in a for a in scattered.assumptions)
    gathers = predict_time(cfg, loops, k20, memory=_Memory(3, 0, unknown=1), **kw)
    assert gathers.roofline_us[1] > coalesced.roofline_us[1]  # unknown patterns keep the scattered floor
