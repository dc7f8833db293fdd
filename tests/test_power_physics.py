"""The event power model and the one answer from both power models (real nvcc, real examples, shipped models)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.power import model as power_model
from kerncast.analysis.power import public
from kerncast.analysis.power.combine import chosen_model
from kerncast.analysis.power.events import EventEnergy, load_constants
from kerncast.analysis.power.physics import busy_sms, event_power, static_table, uncertainty
from kerncast.analysis.power.validation import MODELS as VALIDATION_MODELS
from kerncast.analysis.power.validation import (
    MeasuredLaunch,
    Scored,
    by_measured_time,
    read_launches,
    score_launch,
)
from kerncast.analysis.timing.estimate import TimeEstimate
from kerncast.server.config import parse_settings
from kerncast.server.hover import power_section

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def h100_examples(nvcc_available):
    return {name: analyze_file(ROOT / "examples" / f"{name}.cu", options=AnalysisOptions(gpu="h100", lime=False))
            for name in ("fma_loop", "saxpy", "transpose", "matmul")}


def test_both_models_side_by_side_and_one_interval_inside_idle_and_tdp(h100_examples):
    h100 = load_profile("h100")
    for report in h100_examples.values():
        for k in report.kernels:
            p = k.power.to_json()
            stat, ev = p["models"]["statistical"], p["models"]["events"]
            assert p["model"] == "events@h100"  # no measured dataset for the H100: auto picks the event model
            assert p["watts"] == pytest.approx(ev["watts"])
            lo, hi = p["interval"]
            assert h100.idle_w <= lo <= hi <= h100.tdp_w
            assert lo <= stat["watts"] <= hi and lo <= ev["watts"] <= hi  # covers both where they disagree
            assert ev["watts"] == pytest.approx(min(h100.tdp_w, ev["idle_w"] + ev["static_w"] + ev["dynamic_w"]))
            assert ev["static_w"] >= 0 and ev["dynamic_w"] >= 0 and 0 < ev["busy_sms"] <= h100.sm_count
            assert sum(d["share"] for d in p["drivers"]) == pytest.approx(1.0)


def test_physical_drivers_name_memory_for_copies_and_fp32_for_the_fma_loop(h100_examples):
    copy = h100_examples["fma_loop"].kernel("copy").power
    fma = h100_examples["fma_loop"].kernel("fmaLoop").power
    saxpy = h100_examples["saxpy"].kernels[0].power
    # the copy's 32 MB fit in the H100's 50 MB L2, so with the L2 warm its traffic stays there; the memory
    # levels together still outweigh any one arithmetic class
    shares = dict(copy.drivers)
    memory = sum(shares.get(d, 0.0) for d in ("DRAM traffic", "L2 traffic", "L1 traffic"))
    assert memory > max(v for d, v in shares.items() if d.endswith("arithmetic"))
    assert saxpy.drivers[0][0] == "DRAM traffic"
    assert fma.drivers[0][0] == "FP32 arithmetic"


def test_the_energy_split_uses_the_event_models_static_power(h100_examples):
    for k in h100_examples["matmul"].kernels:
        ev = k.energy.event
        static = k.power.models["events"]["static_w"]
        assert ev.constant_uj == pytest.approx(static * k.time.us)
        assert any("static power" in a for a in ev.assumptions)


def test_the_user_chooses_the_model_and_both_stay_in_the_json(nvcc_available):
    stat = analyze_file(ROOT / "examples" / "saxpy.cu",
                        options=AnalysisOptions(gpu="h100", lime=False, power_model="statistical"))
    p = stat.kernels[0].power
    assert p.model.startswith("gam") and set(p.models) == {"statistical", "events"}
    assert p.interval[0] <= p.models["events"]["watts"] <= p.interval[1]
    # auto shows the event model on a GPU the statistical model was trained for too, with that model beside it
    # and the interval taking in its point
    v100 = analyze_file(ROOT / "examples" / "saxpy.cu", options=AnalysisOptions(gpu="v100", lime=False)).kernels[0]
    assert v100.power.model == "events@v100" and v100.power.watts == v100.power.models["events"]["watts"]
    assert v100.power.interval[0] <= v100.power.models["statistical"]["watts"] <= v100.power.interval[1]
    assert chosen_model("auto") == "events" and chosen_model("statistical") == "statistical"
    with pytest.raises(ValueError, match="unknown power model"):
        chosen_model("guess")


def test_power_model_flag_and_setting(nvcc_available):
    out = subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", str(ROOT / "examples" / "saxpy.cu"),
                          "--gpu", "h100", "--power-model", "events", "--format", "json"],
                         capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(out.stdout)["kernels"][0]["power"]["model"] == "events@h100"
    bad = subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", "x.cu", "--power-model", "guess"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--power-model" in bad.stderr
    settings, warnings = parse_settings({"kerncast": {"powerModel": "statistical"}})
    assert settings.options.power_model == "statistical" and not warnings
    settings, warnings = parse_settings({"kerncast": {"powerModel": "fastest"}})
    assert settings.options.power_model == "auto" and any("kerncast.powerModel" in w for w in warnings)


def _time(us: float, launch_us: float = 0.0) -> TimeEstimate:
    return TimeEstimate(us=us, cycles=us * 1000, model="kerncast", breakdown={}, waves=1, occupancy=1.0,
                        bottleneck="test", detail={"kerncast_launch_us": launch_us}, range_us=(us, us))


def _event(dynamic_uj: float, category: str = "FP32 arithmetic") -> EventEnergy:
    return EventEnergy(dynamic_uj, 0.0, 0.0, {category: dynamic_uj}, {"execute": dynamic_uj}, [],
                       load_constants("Hopper"), by_driver={category: dynamic_uj})


def test_power_capping_holds_the_board_at_tdp_and_stretches_the_time():
    h100 = load_profile("h100")
    # 1 J of events in 1 ms would be 1000 W of dynamic power: more than the 700 W board can draw
    capped = event_power(_event(1e6), h100, _time(1000.0), blocks=1320, blocks_per_sm=10, warps_per_block=8)
    assert capped.watts == h100.tdp_w and capped.interval[1] == h100.tdp_w
    assert capped.time_factor == pytest.approx((capped.static_w + capped.dynamic_w) / (h100.tdp_w - h100.idle_w))
    assert any("exceeds" in a for a in capped.assumptions)
    light = event_power(_event(10.0), h100, _time(1000.0), blocks=1320, blocks_per_sm=10, warps_per_block=8)
    assert light.time_factor == 1.0 and h100.idle_w < light.watts < h100.tdp_w
    assert light.interval[0] >= h100.idle_w


def test_static_power_follows_busy_sms_launch_overhead_and_unit_class():
    h100 = load_profile("h100")
    full = event_power(_event(1.0), h100, _time(100.0), blocks=132, blocks_per_sm=1, warps_per_block=8)
    few = event_power(_event(1.0), h100, _time(100.0), blocks=13, blocks_per_sm=1, warps_per_block=8)
    assert full.idle_sms_w == 0.0
    assert few.static_w - few.idle_sms_w == pytest.approx(full.static_w * 13 / 132)
    # half of the time is the launch's fixed overhead: the SMs are busy for the other half
    half = event_power(_event(1.0), h100, _time(100.0, 50.0), blocks=132, blocks_per_sm=1, warps_per_block=8)
    assert half.static_w == pytest.approx(full.static_w / 2)
    # one warp per SM keeps one of its four schedulers busy
    one_warp = event_power(_event(1.0), h100, _time(100.0), blocks=132, blocks_per_sm=1, warps_per_block=1)
    assert one_warp.static_w == pytest.approx(full.static_w / 4)
    memory = event_power(_event(1.0, "global loads"), h100, _time(100.0), blocks=132, blocks_per_sm=1,
                         warps_per_block=8)
    assert memory.unit_class == "memory_only" and memory.static_w != full.static_w


def test_interval_low_end_is_the_launch_waited_for_on_its_own():
    # launched one at a time, the GPU idles between launches for a few microseconds of host time: a board
    # reading over many launches of a 2 us kernel shows well under half of its power above idle, one of a 10 ms
    # kernel all but the same
    h100 = load_profile("h100")
    gap = uncertainty().launch_gap_us
    assert 4.0 < gap < 10.0  # two host launch calls (data/timing.toml's 2.76 us)
    lows = {}
    for us in (2.0, 10_000.0):
        p = event_power(_event(200.0 * us), h100, _time(us), blocks=132, blocks_per_sm=1,  # 200 W of events
                        warps_per_block=8)
        k = uncertainty().energy_factor
        undiluted = h100.idle_w + p.static_w / k + p.dynamic_w / k
        lows[us] = (p.interval[0] - h100.idle_w) / (undiluted - h100.idle_w)
    assert lows[2.0] == pytest.approx(2.0 / (2.0 + gap))
    assert lows[10_000.0] > 0.99


def test_interval_low_end_takes_the_time_range_end_that_dilutes_most():
    # a launch waited for on its own averages (static x t + dynamic energy) over t + gap: a kernel drawing
    # mostly static power shows least at the short end of its time range (most gap per microsecond of work),
    # one drawing mostly dynamic power at the long end (its energy spread thinnest)
    h100 = load_profile("h100")
    gap, k = uncertainty().launch_gap_us, uncertainty().energy_factor
    ranged = replace(_time(2.0), range_us=(1.0, 4.0))
    for dynamic_uj, lowest in ((0.001, 1.0), (400.0, 4.0)):
        p = event_power(_event(dynamic_uj), h100, ranged, blocks=132, blocks_per_sm=1, warps_per_block=8)
        at = {t: (p.static_w / k * t + dynamic_uj / k) / (t + gap) for t in (1.0, 4.0)}
        assert min(at, key=at.get) == lowest
        assert p.interval[0] - h100.idle_w == pytest.approx(at[lowest])


def test_interval_time_no_shorter_than_the_dram_traffic_at_peak_bandwidth():
    # 1 GB of DRAM traffic on a 3350 GB/s H100 takes at least 299 us: a time range reaching down to 100 us
    # cannot raise the dynamic power's upper bound beyond what that floor allows
    h100 = load_profile("h100")
    wide = replace(_time(400.0), range_us=(100.0, 400.0))
    free = event_power(_event(40_000.0), h100, wide, blocks=132, blocks_per_sm=1, warps_per_block=8)
    floored = event_power(_event(40_000.0), h100, wide, blocks=132, blocks_per_sm=1, warps_per_block=8,
                          dram_bytes=1e9)
    floor_us = 1e9 / (h100.mem_bandwidth_gbs * 1e3)
    k = uncertainty().energy_factor
    dram_uj = 1e9 / 32 * load_constants("Hopper").pj["dram_sector"] * 1e-6  # the timing stage's bytes replace the count
    assert free.interval[1] == pytest.approx(min(h100.tdp_w, h100.idle_w * (1 + uncertainty().idle_spread)
                                                 + free.static_w * k + 40_000.0 * k / 100.0))
    assert floored.interval[1] == pytest.approx(min(h100.tdp_w, h100.idle_w * (1 + uncertainty().idle_spread)
                                                    + floored.static_w * k + (40_000.0 + dram_uj) * k / floor_us))
    assert any("DRAM traffic at peak bandwidth" in a for a in floored.assumptions)


def test_sms_left_idle_while_a_kernel_runs_draw_the_idle_sm_power():
    # AccelWattch charges every SM without work during a kernel its idle-SM power (0.283 W on its Quadro V100),
    # scaled to the node like the lane-activation power; the launch overhead's share of the time pays none
    h100 = load_profile("h100")
    per_idle = static_table().idle_sm_w * load_constants("Hopper").node_scale / load_constants("Volta").node_scale
    one = event_power(_event(1.0), h100, _time(100.0), blocks=1, blocks_per_sm=1, warps_per_block=8)
    assert one.idle_sms_w == pytest.approx(per_idle * 131)
    half = event_power(_event(1.0), h100, _time(100.0, 50.0), blocks=1, blocks_per_sm=1, warps_per_block=8)
    assert half.idle_sms_w == pytest.approx(per_idle * 131 / 2)
    assert one.watts == pytest.approx(h100.idle_w + one.static_w + one.dynamic_w)
    assert one.to_json()["idle_sms_w"] == one.idle_sms_w


def test_busy_sms_averages_over_waves():
    assert busy_sms(10, 4, 132) == 10
    assert busy_sms(132 * 4, 4, 132) == 132
    assert busy_sms(132 * 4 + 66, 4, 132) == pytest.approx((132 + 66) / 2)
    assert busy_sms(0, 4, 132) == 0


def test_static_power_comes_from_sourced_uncalibrated_figures():
    data = tomllib.loads((ROOT / "analysis" / "data" / "energy.toml").read_text(encoding="utf-8"))
    assert data["static_power"]["calibrated"] is False and "AW21" in data["static_power"]["source"]
    assert data["static_power"]["idle_sm"] == 0.283  # AW21's idle_core_power of its Quadro V100
    assert data["uncertainty"]["calibrated"] is False and data["uncertainty"]["source"].startswith("I:")
    t = static_table()
    # AccelWattch's Quadro V100: integer + FP32 at 32 lanes is 18.62 + 31 x 0.645 W over its 80 SMs
    assert t.watts_by_class["int_fp"] == pytest.approx(18.62 + 31 * 0.645)
    ev = EventEnergy(1.0, 0.0, 0.0, {"FP32 arithmetic": 1.0}, {}, [], load_constants("Volta"))
    full = event_power(ev, load_profile("v100"), _time(100.0), blocks=80, blocks_per_sm=1, warps_per_block=8)
    assert full.static_w == pytest.approx(18.62 + 31 * 0.645)  # the reference generation, 80 SMs: the figure itself


def test_static_power_follows_the_node_not_the_clock():
    # static power is leakage and powered idle logic: AccelWattch scales it with the voltage, never the clock,
    # so a GPU boosting higher pays no more of it; a finer node pays less per SM
    h100 = load_profile("h100")
    boost = event_power(_event(1.0), h100, _time(100.0), blocks=132, blocks_per_sm=1, warps_per_block=8)
    slow = event_power(_event(1.0), replace(h100, core_clock_mhz=h100.core_clock_mhz / 2), _time(100.0),
                       blocks=132, blocks_per_sm=1, warps_per_block=8)
    assert slow.static_w == pytest.approx(boost.static_w)
    t = static_table()
    hopper, volta = load_constants("Hopper").node_scale, load_constants("Volta").node_scale
    assert boost.static_w == pytest.approx(t.watts_by_class["int_fp"] / t.sm_count * hopper / volta * 132)


def test_a_generations_event_scale_moves_its_on_chip_event_energies_not_dram_or_static_power():
    # Kepler and Maxwell share a 28 nm node; NVIDIA's Maxwell whitepapers give Maxwell twice Kepler's performance
    # per watt, so Kepler's on-chip events cost twice Maxwell's, while its DRAM sector (memory type) and its
    # static power (the node) keep their own figures
    data = tomllib.loads((ROOT / "analysis" / "data" / "energy.toml").read_text(encoding="utf-8"))
    base, gens = data["base_45nm"], data["generations"]
    kepler, maxwell, volta = load_constants("Kepler"), load_constants("Maxwell"), load_constants("Volta")
    assert "event_scale" in gens["Kepler"] and "NV14" in gens["Kepler"]["source"]
    for event in ("int", "fp32", "shared_wavefront", "l2_sector"):
        assert kepler.pj[event] == pytest.approx(2 * maxwell.pj[event])
        assert volta.pj[event] == pytest.approx(base[f"{event}_pj"] * gens["Volta"]["node_scale"])  # no event_scale
    assert kepler.pj["dram_sector"] == gens["Kepler"]["dram_sector_pj"]
    assert kepler.node_scale == gens["Kepler"]["node_scale"] and "event_scale" in kepler.source
    ev = EventEnergy(1.0, 0.0, 0.0, {"FP32 arithmetic": 1.0}, {}, [], kepler)
    k20 = load_profile("k20")
    p = event_power(ev, k20, _time(100.0), blocks=k20.sm_count, blocks_per_sm=1, warps_per_block=8)
    t = static_table()
    assert p.static_w == pytest.approx(t.watts_by_class["int_fp"] / t.sm_count * kepler.node_scale
                                       / volta.node_scale * k20.sm_count)
    assert k20.idle_w < p.interval[0] <= p.watts <= p.interval[1] <= k20.tdp_w


def test_evaluate_measured_scores_both_models_on_measured_launches(nvcc_available, tmp_path):
    csv_path = tmp_path / "measured.csv"
    saxpy = ROOT / "examples" / "saxpy.cu"
    csv_path.write_text("source_file,kernel,grid,block,power_w,benchmark\n"
                        f"{saxpy},saxpy,4096x1x1,256x1x1,200.0,saxpy\n"
                        f"{saxpy},saxpy,64x1x1,256x1x1,110.0,saxpy\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "kerncast.server", "power", "evaluate", "--measured", str(csv_path),
                          "--gpu", "h100", "--format", "json"], capture_output=True, text=True, timeout=600,
                         check=True)
    result = json.loads(out.stdout)
    launches = read_launches(csv_path)
    assert [m.power_w for m in launches] == [200.0, 110.0]
    answers = [score_launch(m, "h100").answers for m in launches]
    for name in ("statistical", "events", "default"):
        m = result["models"][name]
        assert m["rows"] == 2 and m["benchmarks"] == 1
        errs = [abs(a[name][0] - w) / w for a, w in zip(answers, (200.0, 110.0), strict=True)]
        assert m["mape"] == pytest.approx(100 * sum(errs) / 2)
        assert m["within_15"] == sum(e <= 0.15 for e in errs) / 2
    assert result["models"]["default"] == result["models"]["events"]  # the H100 shows the event model


def test_a_scored_launch_row_carries_the_event_models_parts_and_both_times(nvcc_available, tmp_path):
    csv_path = tmp_path / "measured.csv"
    csv_path.write_text("source_file,kernel,grid,block,power_w,time_us\n"
                        f"{ROOT / 'examples' / 'saxpy.cu'},saxpy,4096x1x1,256x1x1,200.0,12.5\n", encoding="utf-8")
    (launch,) = read_launches(csv_path)
    assert launch.time_us == 12.5
    scored = score_launch(launch, "h100")
    row = scored.row()
    assert row["launch"] == "<<<4096, 256>>>" and row["measured_w"] == 200.0 and row["measured_us"] == 12.5
    assert row["predicted_us"] == pytest.approx(scored.time_us) and scored.time_us > 0
    ev = scored.events
    assert row["events"] == pytest.approx(ev["watts"], abs=0.05)
    assert ev["watts"] == pytest.approx(ev["idle_w"] + ev["static_w"] + ev["dynamic_w"])
    assert row["drivers"] and row["drivers"][0][0] == ev["drivers"][0]["driver"]
    lo, hi = row["intervals"]["events"]  # each model's interval beside its point, for coverage by launch size
    assert lo <= row["events"] <= hi and set(row["intervals"]) == set(scored.answers)


def test_scores_by_measured_launch_time_split_the_timed_launches_at_the_edges():
    # a microsecond launch's reading carries what ran around it: its range is scored apart from the longer ones
    def scored(us: float | None, measured: float, point: float) -> Scored:
        launch = MeasuredLaunch(Path("k.cu"), "k", LaunchOverrides(), measured, f"b{us}", us)
        return Scored(launch, {name: (point, (point - 10, point + 10)) for name in VALIDATION_MODELS})

    rows = [scored(4.0, 100.0, 150.0), scored(9.99, 100.0, 100.0), scored(10.0, 200.0, 180.0),
            scored(5000.0, 300.0, 300.0), scored(None, 100.0, 100.0)]
    parts = by_measured_time(rows, 90.0, 700.0)
    assert [p["range_us"] for p in parts] == [[0.0, 10.0], [10.0, 100.0], [100.0, None]]
    assert [p["models"]["default"]["rows"] for p in parts] == [2, 1, 1]  # the untimed launch is in none
    assert parts[0]["models"]["events"]["mape"] == pytest.approx(100 * (0.5 + 0.0) / 2)
    assert parts[0]["models"]["default"]["coverage"] == 0.5 and parts[1]["models"]["default"]["coverage"] == 0.0
    assert by_measured_time([scored(None, 100.0, 100.0)], 90.0, 700.0) == []


def test_read_launches_takes_a_campaigns_semicolon_separated_parameters(tmp_path):
    # benchmarks/gpu_campaign.py writes a launch's scalar parameters as "n=4096;iters=64"
    csv_path = tmp_path / "measurements.csv"
    csv_path.write_text("gpu,kernel,source_file,grid,block,dynamic_shared_bytes,time_us,power_w,params\n"
                        "H200,ffma,bench/fp32.cu,64x1x1,256x1x1,0,5.5,130.5,n=16384;iters=64\n"
                        "H200,ffma,bench/fp32.cu,64x1x1,256x1x1,0,5.5,,n=16384;iters=64\n", encoding="utf-8")
    (launch,) = read_launches(csv_path, root=ROOT)
    assert launch.launch.params == {"n": 16384, "iters": 64}
    assert launch.file == ROOT / "bench" / "fp32.cu" and launch.power_w == 130.5 and launch.launch.smem == 0


def test_a_measured_launch_of_a_header_defined_kernel_is_scored(nvcc_available):
    # main.cu launches strided_gather, which gather.cuh defines: the report keeps it among the included kernels
    main = ROOT / "tests" / "header_kernels" / "main.cu"
    launch = LaunchOverrides.from_strings(grid="8192", block="128")
    scored = score_launch(MeasuredLaunch(main, "strided_gather", launch, 300.0, "gather"), "h100")
    assert scored.why == "" and set(scored.answers) == {"statistical", "events", "default"}


def test_evaluate_measured_refuses_bad_input_with_a_message(tmp_path):
    missing = subprocess.run([sys.executable, "-m", "kerncast.server", "power", "evaluate", "--measured",
                              str(tmp_path / "none.csv"), "--gpu", "h100"], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 1 and "no such file" in missing.stderr
    no_gpu = subprocess.run([sys.executable, "-m", "kerncast.server", "power", "evaluate", "--measured",
                             str(tmp_path / "none.csv")], capture_output=True, text=True, timeout=60)
    assert no_gpu.returncode == 1 and "--gpu" in no_gpu.stderr


def test_hover_names_physical_drivers_beside_the_feature_contributions(h100_examples):
    k = h100_examples["saxpy"].kernels[0]
    text = "\n".join(power_section(k))
    assert re.search(r"Models: statistical \d+ W \(\d+-\d+ W\), events \d+ W \(\d+-\d+ W\)", text), text
    assert re.search(r"Physical drivers \(event model\): DRAM traffic \d+% of dynamic power, ", text), text
    assert "| feature | value | SHAP W |" in text  # the statistical model's contributions stay beside them


def test_every_energy_table_has_a_source_and_is_marked_uncalibrated():
    data = tomllib.loads((ROOT / "analysis" / "data" / "energy.toml").read_text(encoding="utf-8"))
    tables = {"base_45nm": data["base_45nm"], "static_power": data["static_power"],
              "uncertainty": data["uncertainty"], **{f"generations.{k}": v for k, v in data["generations"].items()}}
    for name, table in tables.items():
        assert isinstance(table.get("source"), str) and len(table["source"]) > 10, name
        assert table.get("calibrated") is False, name  # no GPU has measured them yet


def test_public_kernels_are_launched_as_the_datasets_rows_say():
    # a dataset row gives the grid as a block count: 4096 blocks of 256 threads is the transpose sample's
    # 64 x 64 grid of 32 x 8 blocks over a 2048 x 2048 matrix
    t = public.PUBLIC["transpose"]
    assert t.kernel("Tpose2_Naive") == (public.TRANSPOSE_SRC, "transposeNaive")
    launch = t.launch("Tpose2_Naive", "transposeNaive", 4096, 256)
    assert launch.grid == (64, 64, 1) and launch.block == (32, 8, 1)
    assert launch.params == {"width": 2048, "height": 2048}
    assert public.PUBLIC["histogram"].kernel("histogram256Kerne") == (public.HIST_DIR + "histogram256.cu",
                                                                       "histogram256Kernel")
    assert public.PUBLIC["clock"].launch("timed_reduction", "timedReduction", 64, 256).smem == 2 * 256 * 4
    fan2 = public.RODINIA["gaussian"]
    assert fan2.kernel("GaussF2_2048") == (public.GAUSSIAN_SRC, "Fan2")
    launch = fan2.launch("GaussF2_2048", "Fan2", 7396, 576)
    assert launch.grid == (86, 86, 1) and launch.block == (24, 24, 1) and launch.params["Size"] == 2048
    assert public.PUBLIC["matrixmultiplication"].kernel("vecAdd") is None


def test_evaluate_samples_refuses_a_folder_that_is_not_the_samples(tmp_path):
    out = subprocess.run([sys.executable, "-m", "kerncast.server", "power", "evaluate", "--samples", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "no Samples/ folder" in out.stderr


def test_without_shipped_models_the_event_model_still_answers(nvcc_available, tmp_path, monkeypatch):
    """A package built without the statistical models (no `shipped/`) still shows the event model's power."""
    monkeypatch.setattr(power_model, "_models_root", lambda: tmp_path)
    power_model._index.cache_clear()
    try:
        report = analyze_file(ROOT / "examples" / "saxpy.cu", options=AnalysisOptions(gpu="v100", lime=False))
    finally:
        power_model._index.cache_clear()
    k = report.kernels[0]
    assert k.power is not None and k.power.model == "events@v100" and set(k.power.models) == {"events"}
    assert any("no statistical power prediction" in n for n in k.notes)
    assert k.energy is not None and k.energy.uj == pytest.approx(k.power.watts * k.time.us)
