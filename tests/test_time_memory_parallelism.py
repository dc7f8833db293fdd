"""The kerncast model's memory floor on nvcc's own output: a launch that keeps few SMs busy cannot draw the whole
DRAM bandwidth, and the loads the L1 serves are no re-reads of the L2 (so never DRAM traffic); and the roofline's
best load/store line, a lower bound of what ptxas makes of the PTX."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.roofline import RooflineInputs, roofline_range

COPY = """\
__global__ void copy(const float *in, float *out, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = in[i];
}
int main() { copy<<<68, 1024>>>(0, 0, 1u << 24); return 0; }
"""

ROW_SUM = """\
__global__ void row_sum(float *out, const float *mat, int n)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    #pragma unroll 1
    for (int k = 0; k < n; ++k)
        acc += mat[row * n + k];
    out[row] = acc;
}
int main() { row_sum<<<32, 128>>>(0, 0, 4096); return 0; }
"""


def _time(src: Path, gpu: str, grid: str, block: str, params: list[str]):
    launch = LaunchOverrides.from_strings(grid=grid, block=block, params=params)
    return analyze_file(src, options=AnalysisOptions(gpu=gpu, overrides=launch, lime=False)).kernels[0].time


def test_a_launch_with_fewer_blocks_than_sms_is_slower_per_byte(tmp_path, nvcc_available):
    """The same 128 MB grid-stride copy on an RTX 3080 (68 SMs) with 17 blocks of 1024 threads and with 68: the
    bytes are the same, but 17 busy SMs draw a quarter of the bandwidth, so the DRAM time is four times as long."""
    src = tmp_path / "copy.cu"
    src.write_text(COPY)
    full = _time(src, "rtx3080", "68", "1024", ["n=16777216"])
    quarter = _time(src, "rtx3080", "17", "1024", ["n=16777216"])
    f, q = full.detail, quarter.detail
    assert abs(q["dram_bytes"] - f["dram_bytes"]) <= 0.05 * f["dram_bytes"]
    per_byte_full = f["kerncast_memory_us"] / f["dram_bytes"]
    per_byte_quarter = q["kerncast_memory_us"] / q["dram_bytes"]
    assert abs(per_byte_quarter / per_byte_full - 4.0) < 1e-6
    assert quarter.us > 3.0 * full.us
    assert any(a.startswith("busy SMs: 17 of 68") for a in quarter.assumptions), quarter.assumptions
    assert not any(a.startswith("busy SMs") for a in full.assumptions)


def test_the_loads_the_l1_serves_are_not_dram_re_reads(tmp_path, nvcc_available):
    """One thread per row of a 64 MB matrix walks its row 4 bytes at a time (one load per iteration, not
    unrolled): seven of eight loads find their
    sector in L1 on an L1 that caches global loads (Ampere), so the DRAM traffic is the matrix once, although
    the matrix is larger than the L2; a Kepler L1 caches no global load, and every sector of every request
    misses its L2 there."""
    src = tmp_path / "row_sum.cu"
    src.write_text(ROW_SUM)
    matrix = 4096 * 4096 * 4
    ampere = _time(src, "rtx3080", "32", "128", ["n=4096"]).detail
    kepler = _time(src, "k20", "32", "128", ["n=4096"]).detail
    assert matrix <= ampere["dram_bytes"] <= 1.1 * matrix, ampere["dram_bytes"]
    assert kepler["dram_bytes"] > 4 * matrix, kepler["dram_bytes"]


def test_the_roofline_best_case_lets_ptxas_merge_scalar_accesses_into_vectors():
    """A thread that makes 64 scalar 4-byte shared loads may run 16 LDS.128 in SASS: the best load/store line
    counts the fewest 16-byte instructions that move its bytes; the worst keeps one pass per PTX instruction."""
    base = dict(work_units=1e6, ops_per_thread=0.0, bytes_per_thread=0.0, p_compute=1e15, p_coalesced=1e15,
                p_uncoalesced=1e15, non_fma=False, lsu_ops_per_thread=64.0, p_lsu=1e12)
    scalar_best, scalar_worst = roofline_range(RooflineInputs(**base))
    merged_best, merged_worst = roofline_range(RooflineInputs(**base, lsu_bytes_per_thread=64 * 4.0))
    assert scalar_best == pytest.approx(64.0)  # 1e6 threads x 64 instructions / 1e12 per s, in us
    assert merged_best == pytest.approx(16.0)
    assert merged_worst == pytest.approx(scalar_worst) and merged_worst >= 64.0
    wide_best, _ = roofline_range(RooflineInputs(**base, lsu_bytes_per_thread=64 * 16.0))
    assert wide_best == pytest.approx(64.0)  # 128-bit accesses already: nothing left to merge


PHASES = """\
__global__ void phases(const float *in, float *out, int n)
{
    __shared__ float buf[1024];
    int t = threadIdx.x;
    float a = 1.0f, b = 2.0f, c = 3.0f, d = 4.0f;
    #pragma unroll 1
    for (int p = 0; p < 16; ++p) {
        if (t < n) buf[t] = in[p * n + t];
        SYNC
        float x = buf[t], y = buf[(t + 1) & 1023];
        #pragma unroll
        for (int k = 0; k < 16; ++k) { a = a * x + y; b = b * y + x; c = c * x + b; d = d * y + a; }
        SYNC
    }
    out[blockIdx.x * blockDim.x + t] = a + b + c + d;
}
int main() { phases<<<80, 1024>>>(0, 0, 1024); return 0; }
"""


def test_barriers_make_a_blocks_warps_wait_for_each_others_issue(tmp_path, nvcc_available):
    """Each iteration loads a tile (latency) and then computes on it (issue), with one 1024-thread block per SM
    of a V100. With barriers between the two, every warp waits at each barrier for the others: the block pays
    the load's latency and then the whole block's issue, every iteration, longer than either its chain or its
    issue alone. Without barriers the warps drift apart and one's latency hides behind the others' issue."""
    def detail(sync: str) -> dict:
        src = tmp_path / f"phases{len(sync)}.cu"
        src.write_text(PHASES.replace("SYNC", sync))
        return _time(src, "v100", "80", "1024", ["n=1024"]).detail

    clock = 1530.0  # V100 profile's core clock, MHz
    held, free = detail("__syncthreads();"), detail("")
    held_cycles, free_cycles = held["kerncast_compute_us"] * clock, free["kerncast_compute_us"] * clock
    assert free_cycles == pytest.approx(max(free["cycles_per_block"], free["latency_chain_cycles"]))
    assert held_cycles > 1.1 * max(held["cycles_per_block"], held["latency_chain_cycles"])


MIX = """\
__global__ void mix(float *out, int n)
{
    __shared__ float buf[256];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    float a = 1.0f, b = 2.0f, c = 3.0f, d = 4.0f, e = 5.0f, f = 6.0f, g = 7.0f, h = 8.0f;
    for (int k = 0; k < n; ++k) {
        float s = buf[(threadIdx.x + k) & 255];
        a = a * s + 1.0f; b = b * s + 2.0f; c = c * s + 3.0f; d = d * s + 4.0f;
        e = e * s + 5.0f; f = f * s + 6.0f; g = g * s + 7.0f; h = h * s + 8.0f;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d + e + f + g + h;
}
int main() { mix<<<4096, 256>>>(0, 1024); return 0; }
"""


def test_an_sm_issues_at_most_one_warp_instruction_per_scheduler_per_clock(tmp_path, nvcc_available):
    """Eight FMAs and a shared load per iteration: on an RTX 3080 (128 FP32 lanes, 4 schedulers per SM) the FP32
    lanes take a warp's FMA in a quarter clock each, as fast as the schedulers issue, so the load, the index
    arithmetic and the branch make issue the limit; a V100's 64 FP32 lanes stay the limit there."""
    src = tmp_path / "mix.cu"
    src.write_text(MIX)
    ampere = analyze_file(src, options=AnalysisOptions(gpu="rtx3080", lime=False)).kernels[0].time
    volta = analyze_file(src, options=AnalysisOptions(gpu="v100", lime=False)).kernels[0].time
    assert ampere.bottleneck == "compute (dispatch)", ampere.bottleneck
    assert volta.bottleneck == "compute (SP)", volta.bottleneck
    # one block: 8 warps x (at least 9 instructions per iteration) x 1024 iterations / 4 schedulers
    assert ampere.detail["cycles_per_block"] >= 8 * 9 * 1024 / 4
