"""Power, energy and energy hotspots in the kernel reports of the pipeline (real nvcc, shipped models)."""

from __future__ import annotations

import pytest
from kerncast.analysis.pipeline import AnalysisOptions, analyze_file
from kerncast.analysis.power.energy import energy_hotspots, line_energy
from kerncast.analysis.power.model import Contribution, PowerPrediction
from kerncast.analysis.power.stage import complete_lime
from kerncast.analysis.ptx import parse_ptx


@pytest.fixture(scope="module")
def matmul(nvcc_available):
    return analyze_file("examples/matmul.cu", options=AnalysisOptions(lime=False))


def test_every_kernel_has_power_energy_and_what_they_assume(matmul):
    assert matmul.kernels
    for k in matmul.kernels:
        p, e, t = k.power.to_json(), k.energy.to_json(), k.time.to_json()
        lo, hi = p["interval"]
        assert lo <= p["watts"] <= hi and p["watts"] > 0
        assert p["model"].endswith("@v100") and p["trained_on"]
        assert e["uj"] == pytest.approx(p["watts"] * t["us"])
        assert e["interval"][0] <= e["uj"] <= e["interval"][1]
        assert any("trip counts" in a for a in p["assumptions"])
        # exact contributions are there on the save path; LIME is left for later
        assert p["explanation"] and all(c["lime_watts"] is None for c in p["explanation"])


def test_lime_is_added_on_demand_with_the_exact_signs(matmul):
    k = matmul.kernel("MatrixMulCUDA<32>")
    assert complete_lime(k.power) is True
    assert all(c.lime_watts is not None for c in k.power.explanation)
    top = max(k.power.explanation, key=lambda c: abs(c.watts))
    assert (top.lime_watts > 0) == (top.watts > 0)
    assert complete_lime(k.power) is False  # nothing left to add


def test_tiled_matmul_inner_product_is_the_energy_hotspot(matmul):
    k = matmul.kernel("MatrixMulCUDA<32>")
    hot = [f for f in k.findings if f.code == "energy-hotspot"]
    assert [f.line for f in hot] == [29]  # Csub += As[ty][k] * Bs[k][tx]; in the unrolled loop
    assert hot[0].message.startswith("shared-memory loads: ")
    assert hot[0].detail["share"] > 0.5 and hot[0].severity == "information"


PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [k_param_0];
	mov.u32 %r1, 0;
$L__loop:
	ld.global.f32 %f1, [%rd1];
	add.f32 %f2, %f1, %f1;
	add.s32 %r1, %r1, 1;
	setp.lt.s32 %p1, %r1, 100;
	@%p1 bra $L__loop;
	st.global.f32 [%rd1], %f2;
	ret;
}
"""


def _weights_by_line(fn, loop_weight: float) -> list[float]:
    return [loop_weight if 14 <= ins.ptx_line <= 18 else 1.0 for ins in fn.body]


def test_hotspots_follow_execution_counts_and_skip_even_spreads():
    fn = parse_ptx(PTX).kernels[0]
    pred = PowerPrediction(watts=100.0, interval=(50.0, 150.0), model="m@v100", trained_on="t", base_watts=90.0,
                           explanation=[Contribution("glob_load_sm", "global loads", 1.0, 10.0)])
    line_of = lambda ins: ins.ptx_line  # noqa: E731
    hot = energy_hotspots(fn, pred, 10.0, 0.2, weights=_weights_by_line(fn, 100.0), line_of=line_of, idle_w=40.0)
    assert {f.line for f in hot} <= set(range(14, 19)) and hot
    assert max(hot, key=lambda f: f.detail["share"]).line == 14  # the loop's global load: activity + its feature
    per_line, _ = line_energy(fn, pred, 10.0, weights=_weights_by_line(fn, 100.0), line_of=line_of, idle_w=40.0)
    # all dynamic energy above idle is placed: (base - idle) + the positive contribution
    assert sum(per_line.values()) == pytest.approx((90.0 - 40.0 + 10.0) * 10.0)
    flat = energy_hotspots(fn, PowerPrediction(100.0, (50.0, 150.0), "m@v100", "t", base_watts=90.0), 10.0, 0.05,
                           weights=[1.0] * len(fn.body), line_of=line_of, idle_w=40.0)
    assert flat == []  # one instruction per line, evenly run: no line stands out


def test_ptx_input_reports_ptx_lines(tmp_path, nvcc_available):
    f = tmp_path / "k.ptx"
    f.write_text(PTX)
    report = analyze_file(f, options=AnalysisOptions(lime=False))
    (k,) = report.kernels
    assert k.line == 5  # the .entry line of the PTX document
    assert k.loops and k.loops[0].lines == (14, 18) and k.loops[0].trip_count == 100
    assert k.power is not None and k.energy is not None
