"""Power, energy and energy hotspots in the kernel reports of the pipeline (real nvcc, shipped models)."""

from __future__ import annotations

import pytest
from kerncast.analysis.findings.energy import energy_hotspots
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.power.events import ARITHMETIC, GLOBAL, event_energy, load_constants
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.stages.power import complete_explanation

EXAMPLES = ("fma_loop", "loops", "matmul", "reduction", "saxpy", "transpose", "vector_add")
#: The examples' kernels that only move data (each element read once and written once).
COPY_KERNELS = {"transposeNaive", "transposeTiled", "transposePadded", "copy", "vectorAdd"}


@pytest.fixture(scope="module")
def matmul(nvcc_available):
    return analyze_file("examples/matmul.cu", options=AnalysisOptions(lime=False))


@pytest.fixture(scope="module")
def examples(nvcc_available):
    return {name: analyze_file(f"examples/{name}.cu", options=AnalysisOptions(lime=False)) for name in EXAMPLES}


def test_every_kernel_has_power_energy_and_what_they_assume(matmul):
    assert matmul.kernels
    v100 = load_profile("v100")
    for k in matmul.kernels:
        p, e, t = k.power.to_json(), k.energy.to_json(), k.time.to_json()
        lo, hi = p["interval"]
        assert lo <= p["watts"] <= hi and p["watts"] > 0
        assert v100.idle_w <= lo and hi <= v100.tdp_w  # the interval stays inside the GPU's physics
        # auto shows the event model, with the statistical one (trained on measured GPUs) beside it
        assert p["model"] == "events@v100" and p["models"]["statistical"]["trained_on"]
        assert e["uj"] == pytest.approx(p["watts"] * t["us"])
        assert 0 < e["interval"][0] <= e["uj"] <= e["interval"][1]
        # the energy interval is the power interval over the time range
        t_lo, t_hi = e["time_range_us"]
        assert [t_lo, t_hi] == pytest.approx(t["range_us"])  # the time model's own range, not a wider one
        assert e["interval"] == pytest.approx([lo * t_lo, hi * t_hi])
        # both totals: the statistical board energy and the per-event model's, with its parts
        ev = e["event_model"]
        assert ev["uj"] == pytest.approx(ev["dynamic_uj"] + ev["constant_uj"] + ev["idle_uj"])
        assert ev["idle_uj"] == pytest.approx(v100.idle_w * t["us"])
        assert e["event_vs_statistical"] == pytest.approx(ev["uj"] / e["uj"])
        assert ("disagreement" in e) == (not 0.5 <= e["event_vs_statistical"] <= 2.0)
        assert sum(ev["by_event"].values()) == pytest.approx(ev["dynamic_uj"])
        assert any("trip counts" in a for a in p["assumptions"])
        # exact contributions are there on the save path; LIME is left for later
        assert p["explanation"] and all(c["lime_watts"] is None for c in p["explanation"])


def test_lime_is_added_on_demand_with_the_exact_signs(matmul):
    k = matmul.kernel("MatrixMulCUDA<32>")
    assert complete_explanation(k.power) is True
    assert all(c.lime_watts is not None for c in k.power.explanation)
    top = max(k.power.explanation, key=lambda c: abs(c.watts))
    assert (top.lime_watts > 0) == (top.watts > 0)
    assert complete_explanation(k.power) is False  # nothing left to add


def test_the_editor_save_path_leaves_the_explanation_for_the_hover(matmul):
    """Without `power_explanation` (the server's save path) the power is the same number with no
    contributions; `complete_explanation` then adds exactly the contributions the full analysis gives."""
    lazy = analyze_file("examples/matmul.cu", options=AnalysisOptions(lime=False, power_explanation=False))
    for k in lazy.kernels:
        eager = matmul.kernel(k.name).power
        assert k.power.watts == eager.watts and k.power.interval == eager.interval
        assert k.power.explanation == [] and not k.power.explained and k.power.explanation_incomplete()
        assert complete_explanation(k.power) is True
        assert k.power.explained and k.power.base_watts == pytest.approx(eager.base_watts)
        assert [(c.feature, c.value) for c in k.power.explanation] == [(c.feature, c.value) for c in eager.explanation]
        assert [c.watts for c in k.power.explanation] == pytest.approx([c.watts for c in eager.explanation])
        assert all(c.lime_watts is not None for c in k.power.explanation)  # LIME too, as a hover asks


def test_tiled_matmul_inner_product_is_the_energy_hotspot(matmul):
    k = matmul.kernel("MatrixMulCUDA<32>")
    hot = [f for f in k.findings if f.code == "energy-hotspot"]
    assert [f.line for f in hot] == [29]  # Csub += As[ty][k] * Bs[k][tx]; in the unrolled loop
    assert hot[0].message.startswith("shared-memory loads: ")
    assert hot[0].detail["share"] > 0.5 and hot[0].severity == "information"


def test_copy_kernels_spend_their_energy_on_global_memory(examples):
    seen = set()
    for report in examples.values():
        for k in report.kernels:
            if k.name not in COPY_KERNELS:
                continue
            seen.add(k.name)
            (hot,) = [f for f in k.findings if f.code == "energy-hotspot"]
            assert hot.detail["reason"] in GLOBAL, (k.name, hot.message)
            assert "arithmetic" not in hot.message and "sectors/request" in hot.message
    assert seen == COPY_KERNELS


def test_compute_bound_kernel_names_arithmetic(examples):
    k = examples["fma_loop"].kernel("fmaLoop")
    (hot,) = [f for f in k.findings if f.code == "energy-hotspot"]
    assert hot.detail["reason"] == "FP32 arithmetic" and hot.message.startswith("FP32 arithmetic: ")
    by_event = k.energy.to_json()["event_model"]["by_event"]
    assert max(by_event, key=by_event.get) in ARITHMETIC


def test_at_most_one_hotspot_per_kernel_with_the_full_table_in_the_json(examples):
    for report in examples.values():
        for k in report.kernels:
            hot = [f for f in k.findings if f.code == "energy-hotspot"]
            assert len(hot) <= 1 and all(f.severity == "information" for f in hot)
            lines = k.energy.to_json()["event_model"]["lines"]
            assert sum(ln["share"] for ln in lines) == pytest.approx(1.0)
            if hot:
                assert lines[0]["line"] == hot[0].line


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


def test_event_energy_follows_execution_counts_and_events():
    fn = parse_ptx(PTX).kernels[0]
    gpu = load_profile("v100")
    constants = load_constants(gpu.arch)
    pj = constants.pj
    line_of = lambda ins: ins.ptx_line  # noqa: E731
    ev = event_energy(fn, _weights_by_line(fn, 100.0), 64, {}, gpu, 10.0, line_of, constants)
    # the loop's load: 64 warps x 100 runs x (issue + 4 ideal sectors at L1, L2 and DRAM)
    load = 64 * 100 * (pj["int"] + 4 * (pj["l1_sector"] + pj["l2_sector"] + pj["dram_sector"])) * 1e-6
    assert ev.by_event["global loads"] == pytest.approx(load)
    assert ev.by_event["global stores"] == pytest.approx(64 * (pj["int"] + 4 * (pj["l2_sector"] + pj["dram_sector"]))
                                                         * 1e-6)
    assert ev.by_event["FP32 arithmetic"] == pytest.approx(64 * 100 * pj["fp32"] * 1e-6)
    assert ev.idle_uj == pytest.approx(gpu.idle_w * 10.0)
    assert ev.constant_uj == pytest.approx(constants.constant_share * (gpu.tdp_w - gpu.idle_w) * 10.0)
    hot = energy_hotspots(ev, "k")
    assert [f.line for f in hot] == [14] and hot[0].message.startswith("global loads: ")
    assert hot[0].detail["sectors_per_request"] == 4
    # evenly run, one instruction per line and no memory traffic: no line stands out
    flat = parse_ptx(PTX.replace("ld.global.f32 %f1, [%rd1];", "mov.f32 %f1, 0f3F800000;")
                     .replace("st.global.f32 [%rd1], %f2;", "mov.f32 %f2, %f1;")).kernels[0]
    even = event_energy(flat, [1.0] * len(flat.body), 64, {}, gpu, 10.0, line_of, constants)
    assert energy_hotspots(even, "k", 0.05) == []


def test_ptx_input_reports_ptx_lines(tmp_path, nvcc_available):
    f = tmp_path / "k.ptx"
    f.write_text(PTX)
    report = analyze_file(f, options=AnalysisOptions(lime=False))
    (k,) = report.kernels
    assert k.line == 5  # the .entry line of the PTX document
    assert k.loops and k.loops[0].lines == (14, 18) and k.loops[0].trip_count == 100
    assert k.power is not None and k.energy is not None
