"""`low-occupancy` and `register-spill`: findings from the occupancy calculator and ptxas's spill counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.compile import KernelResources
from kerncast.analysis.findings.resources import low_occupancy, register_spill
from kerncast.analysis.occupancy import Occupancy
from kerncast.analysis.options import AnalysisOptions, Thresholds
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import KernelReport

RESOURCES_CU = """\
// kernels that waste resources
#include <cuda_runtime.h>

__global__ void bigTile(float *out)
{
    __shared__ float tile[12000];
    tile[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x * 7) % 12000];
}

__global__ void __maxnreg__(24) manyLive(const float *in, float *out, int n)
{
    float v[48];
#pragma unroll
    for (int k = 0; k < 48; ++k) v[k] = in[k * n + threadIdx.x];
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
#pragma unroll
        for (int k = 0; k < 48; ++k) s += v[k] * v[(k * 5 + r) % 48];
    }
    out[threadIdx.x] = s;
}

int main()
{
    float *a = nullptr, *b = nullptr;
    bigTile<<<80, 32>>>(a);
    manyLive<<<80, 256>>>(a, b, 1024);
    return 0;
}
"""


def _occ(value: float, limiter: str = "registers") -> Occupancy:
    warps = round(value * 64)
    return Occupancy(active_blocks_per_sm=max(1, warps // 8), active_warps_per_sm=warps, max_warps_per_sm=64,
                     occupancy=value, limiter=limiter, limits={limiter: max(1, warps // 8)})


def test_low_occupancy_below_threshold_only() -> None:
    r = KernelReport(name="k", mangled="_Z1kv", line=7, resources=KernelResources("_Z1kv", registers=128),
                     occupancy=_occ(0.125))
    f = low_occupancy(r, 0.25)
    assert f is not None and f.code == "low-occupancy" and f.line == 7 and f.severity == "warning"
    assert "12%" in f.message or "13%" in f.message
    assert f.detail["limiter"] == "registers" and "__launch_bounds__" in f.detail["advice"]
    assert low_occupancy(r, 0.1) is None
    assert low_occupancy(KernelReport(name="k", mangled="k", line=1), 0.25) is None  # no occupancy: nothing


def test_register_spill_from_ptxas_numbers() -> None:
    none_spilled = KernelResources("k", spill_stores=0, spill_loads=0)
    assert register_spill(KernelReport(name="k", mangled="k", line=3, resources=none_spilled)) is None
    assert register_spill(KernelReport(name="k", mangled="k", line=3)) is None  # unknown: nothing
    spilled = KernelResources("k", registers=24, spill_stores=16, spill_loads=8)
    f = register_spill(KernelReport(name="k", mangled="k", line=3, resources=spilled))
    assert f is not None and f.code == "register-spill" and f.line == 3
    assert "16 bytes of stores" in f.message and "8 bytes of loads" in f.message


def test_findings_of_a_compiled_file(tmp_path: Path, nvcc_available: object) -> None:
    path = tmp_path / "resources.cu"
    path.write_text(RESOURCES_CU)
    report = analyze_file(path)
    assert report.ok, [f.message for f in report.findings]
    got = {(f.code, f.line, f.kernel) for f in report.all_findings() if f.code in ("low-occupancy", "register-spill")}
    assert got == {("low-occupancy", 4, "bigTile"), ("register-spill", 12, "manyLive")}
    # the threshold is a setting
    quiet = analyze_file(path, options=AnalysisOptions(thresholds=Thresholds(low_occupancy=0.01)))
    assert "low-occupancy" not in {f.code for f in quiet.all_findings()}


@pytest.mark.parametrize("value", [0.0, 0.2499])
def test_threshold_edges(value: float) -> None:
    r = KernelReport(name="k", mangled="k", line=1, occupancy=_occ(value))
    assert (low_occupancy(r, 0.25) is not None) == (value < 0.25 and r.occupancy.active_blocks_per_sm > 0)
