"""Kerncast's default time model on real examples: roofline bracketing, model choice, trip counts shared by
every stage, and constants whose sources are never the thesis's validation tables."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import kerncast.analysis.timing.pipelined as pipelined
import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.launch import LaunchOverrides, Sourced
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.stages.memory import _trips
from kerncast.analysis.timing.footprint import Footprint
from kerncast.analysis.timing.partitions import partitions_touched
from kerncast.analysis.timing.pipelined import _warm_dram_bytes, blocks_before_a_barrier
from kerncast.server.config import parse_settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.cu"))
VALIDATION_TABLE = re.compile(r"\bTables?\s+(?:[0-9.]+\s*(?:,|and|/|&)\s*)*(4\.2|4\.8|6\.1|6\.2)(?![0-9])")


def _strings(value, where: str):
    """Every string value of a parsed TOML document, with its dotted key."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


#: the one data file that may cite the validation tables: the model's measured error spread, which widens the
#: shown range and is read by no prediction (test_the_error_band_never_moves_a_prediction)
ERROR_BAND = "time_error.toml"


def test_no_constant_cites_a_validation_table():
    files = [*sorted((ROOT / "analysis" / "data").glob("*.toml")), *sorted((ROOT / "analysis" / "gpus").glob("*.toml"))]
    files = [f for f in files if f.name != ERROR_BAND]
    assert len(files) > 5 and any(f.name == "timing.toml" for f in files)
    offenders = [f"{path.name}: {key} = {text!r}" for path in files
                 for key, text in _strings(tomllib.loads(path.read_text(encoding="utf-8")), "")
                 if VALIDATION_TABLE.search(text)]
    assert offenders == []


def test_the_validation_table_check_catches_a_citation():
    assert VALIDATION_TABLE.search("fitted to thesis Table 4.8")
    assert VALIDATION_TABLE.search("Tables 4.5 and 6.2")
    assert not VALIDATION_TABLE.search("thesis Table 4.6 (SMs)") and not VALIDATION_TABLE.search("Table 3.2")


@pytest.fixture(scope="module")
def example_reports(nvcc_available):
    return {path.name: analyze_file(path, options=AnalysisOptions(lime=False, gpu="v100")) for path in EXAMPLES}


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_default_prediction_lies_inside_the_roofline_range(example_reports, name):
    timed = [k for k in example_reports[name].kernels if k.time is not None]
    assert timed, f"no kernel of {name} was timed"
    for k in timed:
        t = k.time
        assert t.model == "kerncast"
        lo, hi = t.roofline_us
        assert lo <= t.us <= hi, (k.name, lo, t.us, hi)
        r_lo, r_hi = t.range_us
        assert r_lo <= t.us <= r_hi and r_lo > 0, (k.name, t.range_us)


#: kernels whose global addresses are not all affine (gathers, scatters, a broadcast through a loaded index):
#: their requests have no footprint, the case where the roofline's best line and the kerncast model once parted
GATHERS = [ROOT / "tests" / "kernels" / "gather.cu", ROOT / "tests" / "kernels" / "broadcast.cu",
           ROOT / "benchmarks" / "data" / "kernels20.cu"]


@pytest.mark.parametrize("gpu", ["h100", "gtx1050"])
def test_kernels_with_gathers_lie_inside_the_roofline_range(nvcc_available, gpu):
    """The roofline's best memory line is the DRAM traffic the kerncast model counts with a warm L2, requests of
    addresses with no footprint included; it once took those requests at the scattered-access bandwidth, a
    "best" time up to 10x above the kerncast prediction (kernels20.cu's histogram on an H100)."""
    for path in GATHERS:
        for k in analyze_file(path, options=AnalysisOptions(gpu=gpu, lime=False)).kernels:
            lo, hi = k.time.roofline_us
            assert lo <= k.time.us <= hi, (path.name, k.name, lo, k.time.us, hi)


def test_matmul_loops_use_the_launch_site_counts_in_every_stage(example_reports):
    report = example_reports["matmul.cu"]
    tiled = next(k for k in report.kernels if k.name.startswith("MatrixMulCUDA"))
    naive = next(k for k in report.kernels if k.name.startswith("matmulNaive"))
    assert [(lp.trip_count, lp.trip_source) for lp in tiled.loops] == [(32, "ptx")]  # wA / 32 for every block
    assert "wA = 1024 from the launch-site" in tiled.loops[0].trip_detail
    assert sorted(lp.trip_count for lp in naive.loops) == [0, 256]  # 1024 unrolled by 4, remainder n & 3 = 0
    for k in (tiled, naive):
        assert not any("unknown" in n and "trip count" in n for n in k.notes), k.notes
        assert not any("trip count unknown" in a for a in k.time.assumptions)


def test_a_naive_sgemm_is_predicted_in_the_published_range(example_reports):
    naive = next(k for k in example_reports["matmul.cu"].kernels if k.name.startswith("matmulNaive"))
    # a coalesced naive 1024^3 SGEMM reaches 1-3 TFLOP/s on a V100: 0.7-2.2 ms
    assert 0.5e3 < naive.time.us < 3e3


def test_time_model_option_picks_the_model(nvcc_available):
    path = ROOT / "examples" / "vector_add.cu"
    times = {}
    for model in ("kerncast", "thesis", "mwp-cwp"):
        k = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k20", time_model=model)).kernels[0]
        times[model] = k.time.us
        assert k.time.models[model] == pytest.approx(k.time.us)
        lo, hi = k.time.range_us
        assert lo <= k.time.us <= hi
    assert times["thesis"] != times["kerncast"]
    thesis = AnalysisOptions(lime=False, gpu="k20", time_model="thesis")
    assert analyze_file(path, options=thesis).kernels[0].time.model == "thesis-scheduler"


def test_kerncast_model_does_not_add_the_launch_overhead_or_serialise_param_loads(nvcc_available):
    path = ROOT / "examples" / "vector_add.cu"
    small = LaunchOverrides.from_strings(grid="196", block="256", params=["n=50000"])
    k = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k20", overrides=small)).kernels[0]
    thesis = k.time.models["thesis"]
    assert k.time.us < thesis / 2
    # launch: fixed part plus the larger of kernel and block dispatch, never their sum
    d = k.time.detail
    assert k.time.us == pytest.approx(d["kerncast_launch_us"] + max(d["kerncast_compute_us"],
                                                                      d["kerncast_memory_us"]), rel=0.35)


def test_setting_and_cli_flag_choose_the_time_model(nvcc_available):
    settings, warnings = parse_settings({"kerncast": {"timeModel": "mwp-cwp"}})
    assert settings.options.time_model == "mwp-cwp" and warnings == []
    settings, warnings = parse_settings({"kerncast": {"timeModel": "guess"}})
    assert settings.options.time_model == "kerncast"
    assert any("kerncast.timeModel" in w for w in warnings)
    out = subprocess.run([sys.executable, "-m", "kerncast.server.cli", "analyze", str(ROOT / "examples" /
                          "vector_add.cu"), "--gpu", "k20", "--time-model", "thesis", "--format", "json"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    time = json.loads(out.stdout)["kernels"][0]["time"]
    assert time["model"] == "thesis-scheduler" and len(time["range_us"]) == 2
    bad = subprocess.run([sys.executable, "-m", "kerncast.server.cli", "analyze", "x.cu", "--time-model", "no"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "--time-model" in bad.stderr


def test_a_count_no_stage_knows_is_stated_once_and_used_alike(tmp_path, nvcc_available):
    src = tmp_path / "walk.cu"
    src.write_text("__global__ void walk(const int *next, float *out)\n{\n    int i = threadIdx.x;\n"
                   "    float s = 0.0f;\n    while (next[i] >= 0) { s += 1.0f; i = next[i]; }\n"
                   "    out[threadIdx.x] = s;\n}\nint main() { walk<<<4, 128>>>(0, 0); return 0; }\n")
    k = analyze_file(src, options=AnalysisOptions(lime=False, gpu="v100")).kernels[0]
    stated = [a for a in k.time.assumptions if "trip count unknown" in a] + \
        [n for n in k.notes if "trip count" in n and "unknown" in n]
    assert len(stated) == 1 and "assumed 10" in stated[0]


def test_the_memory_stage_receives_the_time_models_counts():
    counts = {3: Sourced(32, "ptx", 24, "read"), 7: Sourced(10, "default", 45, "assumed")}
    assert _trips(counts) == {3: 32, 7: 10}


def test_the_error_band_never_moves_a_prediction(nvcc_available, monkeypatch):
    path = ROOT / "examples" / "vector_add.cu"
    base = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k20")).kernels[0].time
    assert "validation rows" in base.range_basis
    monkeypatch.setattr(pipelined, "time_error_band", lambda: {"low_ratio": 0.01, "high_ratio": 100.0, "rows": 1})
    wide = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k20")).kernels[0].time
    assert wide.us == pytest.approx(base.us) and wide.models == pytest.approx(base.models)
    assert wide.range_us[0] < base.range_us[0] and wide.range_us[1] > base.range_us[1]


def test_partition_camping_counts_the_partitions_one_waves_addresses_reach():
    # a column of a 1024-float-wide matrix: every row 4096 bytes apart, 4 partitions of 256 bytes -> one
    assert partitions_touched([(4096, 896)], 4, 256) == 1
    # the same column on a 5-partition GPU (320-bit bus) walks all five
    assert partitions_touched([(4096, 896)], 5, 256) == 5
    # a row of 896 floats spans 3.5 KB: every partition
    assert partitions_touched([(4, 896)], 4, 256) == 4
    # 16 consecutive floats (64 bytes) stay in one 256-byte chunk
    assert partitions_touched([(4, 16)], 4, 256) == 1
    # against enumerating every address of small two-term accesses
    for ext in ([(4, 16), (4096, 3)], [(12, 40), (640, 7)], [(256, 2), (2048, 9)], [(4, 5), (1024, 700)]):
        for parts in (2, 4, 5):
            addrs = {a * ext[0][0] + b * ext[1][0] for a in range(ext[0][1]) for b in range(ext[1][1])}
            assert partitions_touched(ext, parts, 256) == len({(x // 256) % parts for x in addrs}), (ext, parts)


def test_a_write_back_l2_keeps_the_written_bytes_only_when_the_footprint_fits():
    """In the steady state of repeated launches, the dirty lines one launch leaves in the L2 are evicted by the
    next one's sweep when the footprint is larger than the L2: each launch pays for all it writes."""
    l2 = 512 * 1024.0
    # vectorAdd's 400 KB of inputs fit, and are read from the L2; the 200 KB written overflow it with them
    fp = Footprint(total=600e3, per_wave=600e3, written=200e3, distinct=600e3)
    assert _warm_dram_bytes(fp, 0.0, 600e3, l2) == pytest.approx(200e3)
    # inputs larger than the L2 stream from DRAM in full, and so do the written bytes
    big = Footprint(total=8e6, per_wave=8e6, written=4e6, distinct=8e6)
    assert _warm_dram_bytes(big, 0.0, 8e6, l2) == pytest.approx(8e6)
    # a footprint that fits entirely costs no DRAM time inside the kernel
    assert _warm_dram_bytes(Footprint(total=1e5, written=5e4, distinct=1e5), 0.0, 1e5, l2) == 0.0


def test_column_stores_camp_on_a_power_of_two_partition_count_only(nvcc_available):
    path = ROOT / "examples" / "transpose.cu"
    launch = LaunchOverrides.from_strings(grid="32,32", block="32,8", params=["width=1024", "height=1024"])
    est = {}
    for gpu in ("k4200", "k20"):
        report = analyze_file(path, options=AnalysisOptions(lime=False, gpu=gpu, overrides=launch))
        est[gpu] = next(k for k in report.kernels if k.name.startswith("transposeTiled")).time
    camped = [a for a in est["k4200"].assumptions if "partition camping" in a]
    assert camped, est["k4200"].assumptions
    assert not any("partition camping" in a for a in est["k20"].assumptions)
    # the camped DRAM time exceeds the bytes at the achievable bandwidth
    d = est["k4200"].detail
    assert d["kerncast_memory_us"] > d["dram_bytes"] / (0.85 * 172.8e3) * 1.2


def test_loads_whose_inputs_fit_in_the_l2_wait_the_l2_hit_latency(nvcc_available):
    path = ROOT / "examples" / "vector_add.cu"
    small = LaunchOverrides.from_strings(grid="196", block="256", params=["n=50000"])
    k = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k4200", overrides=small)).kernels[0]
    assert any("L2 hit latency" in a for a in k.time.assumptions), k.time.assumptions
    big = LaunchOverrides.from_strings(grid="65536", block="256", params=["n=16777216"])
    k_big = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k4200", overrides=big)).kernels[0]
    assert not any("L2 hit latency" in a for a in k_big.time.assumptions)


def test_a_partial_last_wave_still_takes_a_whole_latency_chain(nvcc_available):
    """timedReduction is latency bound; on a K4200 (7 SMs, 8 resident blocks of 256 threads) 56 blocks are one
    wave per SM and 64 blocks leave 2 blocks for a second wave on the busiest SM, which must cost a whole chain."""
    path = ROOT / "benchmarks" / "data" / "timed_reduction.cu"

    def detail(blocks: int) -> dict:
        launch = LaunchOverrides.from_strings(grid=str(blocks), block="256", smem=2048)
        options = AnalysisOptions(lime=False, gpu="k4200", overrides=launch)
        return analyze_file(path, options=options).kernels[0].time.detail

    one, two = detail(56), detail(64)
    clock = 784.0
    assert one["kerncast_compute_us"] * clock < 1.5 * one["latency_chain_cycles"]
    assert two["kerncast_compute_us"] * clock >= 2 * two["latency_chain_cycles"] - 1e-6


def test_a_barrier_waits_for_the_stores_before_it(tmp_path, nvcc_available):
    """Each iteration stores to shared memory and the next one's barrier must wait until that store is
    performed: the chain holds one shared-store latency per iteration, while the same loop with no barrier
    lets its stores go once issued."""
    def chain(with_barrier: bool) -> float:
        sync = "__syncthreads(); " if with_barrier else ""
        src = tmp_path / f"bar{int(with_barrier)}.cu"
        src.write_text("__global__ void k(float *out)\n{\n    __shared__ float buf[256];\n"
                       "    #pragma unroll 1\n"
                       f"    for (int i = 0; i < 64; ++i) {{ {sync}if (threadIdx.x > i) buf[threadIdx.x ^ i] = i; }}\n"
                       "    out[threadIdx.x] = buf[threadIdx.x];\n}\n"
                       "int main() { k<<<1, 256>>>(0); return 0; }\n")
        kernel = analyze_file(src, options=AnalysisOptions(lime=False, gpu="m60")).kernels[0]
        return kernel.time.detail["latency_chain_cycles"]

    shared_store = 23.0  # Maxwell row of data/timing.toml [kerncast.latency.Maxwell]
    assert chain(True) - chain(False) >= 64 * shared_store


def test_blocks_before_a_barrier_are_those_that_reach_one(compile_example):
    fn = next(f for f in parse_ptx(compile_example("reduction.cu").ptx).kernels if "Sequential" in f.name)
    cfg = build_cfg(fn)
    waits = blocks_before_a_barrier(cfg)
    exits = [i for i, b in enumerate(cfg.blocks) if not b.succs]
    assert waits and not any(e in waits for e in exits if not any(
        ins.opcode == "bar" for ins in fn.body[cfg.blocks[e].start:cfg.blocks[e].end]))
    assert 0 in waits  # the entry block reaches the loop's barrier


GRID_STRIDE = """\
__global__ void copy(const float *in, float *out, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = in[i];
}
__global__ void scale(float *v)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    v[i] *= 2.0f;
}
"""


def _distinct_bytes_note(kernel) -> str:
    return next(a for a in kernel.time.assumptions if a.startswith("distinct global bytes"))


def test_the_footprint_takes_block_and_grid_sizes_from_the_launch(tmp_path, nvcc_available):
    """`blockDim` stays symbolic in the addresses where the block is assumed, and a grid-stride loop steps by
    `blockDim.x * gridDim.x`: both are the launch's constants, so the distinct bytes are counted (they were
    "not affine" and counted as none)."""
    src = tmp_path / "stride.cu"
    src.write_text(GRID_STRIDE)
    given = LaunchOverrides.from_strings(grid="1024", block="256", params=["n=1048576"])
    copy, scale = analyze_file(src, options=AnalysisOptions(gpu="h100", lime=False, overrides=given)).kernels
    assert _distinct_bytes_note(copy).startswith("distinct global bytes 8.39 MB")  # 1 Mi floats read, 1 Mi written
    # 256 Ki floats read and written in place: touched once, read in and written back
    assert _distinct_bytes_note(scale).startswith("distinct global bytes 1.05 MB, 2.1 MB of DRAM traffic")
    copy, scale = analyze_file(src, options=AnalysisOptions(gpu="h100", lime=False)).kernels  # launch assumed
    assert _distinct_bytes_note(copy).startswith("distinct global bytes 21 MB")  # 10 iterations of 1024 x 256
    assert _distinct_bytes_note(scale).startswith("distinct global bytes 1.05 MB")


HORNER_FP64 = """\
__global__ void horner(const double *x, double *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double v = x[i], acc = 0.0;
        #pragma unroll 1
        for (int k = 0; k < 256; ++k)
            acc = fma(acc, v, 0.5);
        y[i] = acc;
    }
}
int main() { horner<<<4096, 256>>>(0, 0, 1 << 20); return 0; }
"""


@pytest.mark.parametrize(("gpu", "limit"), [("gtx1050", "compute (DPU)"), ("h100", "compute (dispatch)")])
def test_the_roofline_runs_fp64_at_the_double_precision_rate(tmp_path, nvcc_available, gpu, limit):
    """A GTX 1050 has 4 FP64 units per SM against 128 FP32 lanes: an FP64 loop's compute line is 32x the one
    at the FP32 peak, which the roofline once used for every instruction (its worst time was then 12x below
    the kerncast prediction there). An H100's 64 FP64 lanes per SM take a warp's DFMA in half a clock, faster
    than its 4 schedulers issue the loop's four instructions per iteration: there issue is the limit."""
    src = tmp_path / "horner.cu"
    src.write_text(HORNER_FP64)
    k = analyze_file(src, options=AnalysisOptions(gpu=gpu, lime=False)).kernels[0]
    assert k.time.bottleneck == limit
    lo, hi = k.time.roofline_us
    assert lo <= k.time.us <= hi, (lo, k.time.us, hi)


def test_a_kernel_that_does_nothing_takes_its_block_dispatch_in_both_models(tmp_path, nvcc_available):
    """An empty kernel over many blocks is bound by its block dispatch: the roofline's worst time counts it as
    the kerncast model does (it left it out, and sat below the kerncast time of every such kernel)."""
    src = tmp_path / "nothing.cu"
    src.write_text("__global__ void nothing() {}\nint main() { nothing<<<1024, 256>>>(); return 0; }\n")
    k = analyze_file(src, options=AnalysisOptions(gpu="h100", lime=False)).kernels[0]
    assert k.time.bottleneck == "block dispatch"
    lo, hi = k.time.roofline_us
    assert lo <= k.time.us <= hi, (lo, k.time.us, hi)


def test_a_gpu_measured_by_kerncast_carries_its_own_error_spread(nvcc_available, monkeypatch):
    """validation/h100/ gives the H100 its own spread (time_error.toml [kerncast.gpu.h100]); other GPUs keep the
    spread over the validation tables; neither moves the point prediction."""
    table = tomllib.loads((ROOT / "analysis" / "data" / ERROR_BAND).read_text(encoding="utf-8"))["kerncast"]
    h100 = table["gpu"]["h100"]
    path = ROOT / "examples" / "vector_add.cu"
    own = analyze_file(path, options=AnalysisOptions(lime=False, gpu="h100")).kernels[0].time
    assert (f"measured/predicted {h100['low_ratio']:g} to {h100['high_ratio']:g}, 10th-90th percentile over "
            f"{h100['rows']} launches measured on this GPU, median {h100['median_ratio']:g}") in own.range_basis
    assert own.range_us[0] <= own.us * h100["low_ratio"] + 1e-9 and own.range_us[1] >= own.us * h100["high_ratio"]
    k20 = analyze_file(path, options=AnalysisOptions(lime=False, gpu="k20")).kernels[0].time
    assert f"over {table['rows']} validation rows" in k20.range_basis and "this GPU" not in k20.range_basis
    monkeypatch.setattr(pipelined, "gpu_error_band", lambda profile_id: {})
    general = analyze_file(path, options=AnalysisOptions(lime=False, gpu="h100")).kernels[0].time
    assert general.us == pytest.approx(own.us) and general.models == pytest.approx(own.models)
    assert f"over {table['rows']} validation rows" in general.range_basis
