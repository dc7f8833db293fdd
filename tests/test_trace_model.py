"""The trace model (`--time-model trace`) on real kernels compiled by nvcc: the trace-based estimation's
Fig. 2 behaviour around a barrier, warps that skip a loop, divergent and data-dependent branches, a cost
bounded by the simulation window, and its place beside the other models in the JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.server.config import parse_settings

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "trace"


def _trace(path: Path, gpu: str = "v100", **launch: str | list[str]) -> dict:
    options = AnalysisOptions(gpu=gpu, time_model="trace", overrides=LaunchOverrides.from_strings(**launch))
    return {k.name: k for k in analyze_file(path, options=options).kernels}


@pytest.fixture(scope="module")
def fig2(nvcc_available):
    return _trace(KERNELS / "fig2.cu")


def _round(kernels: dict, name: str) -> float:
    t = kernels[name].time
    assert t.model == "trace", (name, t.model)
    return t.detail["trace_round_cycles"]


def test_a_compute_bound_trace_hides_its_barrier(fig2):
    """Loads after the barrier: the warps reach it together, so the barrier adds (almost) nothing."""
    with_bar, without = _round(fig2, "loadAfterBarrier"), _round(fig2, "loadAfterNoBarrier")
    assert with_bar >= without
    assert with_bar - without <= 0.03 * without, (with_bar, without)


def test_memory_before_the_barrier_opens_a_gap(fig2):
    """The same loads moved before the barrier: it holds every warp until they are performed, and the compute
    after it starts late (the paper's t_gap), far more than the hidden barrier costs."""
    with_bar, without = _round(fig2, "loadBeforeBarrier"), _round(fig2, "loadBeforeNoBarrier")
    gap = with_bar - without
    hidden = _round(fig2, "loadAfterBarrier") - _round(fig2, "loadAfterNoBarrier")
    assert gap >= 0.08 * without, (with_bar, without)
    assert gap > 3 * hidden, (gap, hidden)


@pytest.fixture(scope="module")
def busy_cases(nvcc_available):
    return {busy: _trace(KERNELS / "divergent.cu", params=[f"busy={busy}"]) for busy in (0, 4, 8)}


def test_half_the_warps_skipping_the_loop_lies_between_all_and_none(busy_cases):
    times = {busy: k["someWarpsLoop"].time.us for busy, k in busy_cases.items()}
    assert times[0] < times[4] < times[8], times
    # the loop dominates: half the warps running it costs clearly more than none and less than all
    assert times[4] - times[0] > 0.3 * (times[8] - times[0]), times
    half = busy_cases[4]["someWarpsLoop"].time
    assert half.detail["trace_distinct_traces"] == 2  # looping and skipping warps, each class one trace
    assert busy_cases[0]["someWarpsLoop"].time.detail["trace_distinct_traces"] == 1
    assert half.detail["trace_assumed_branches"] == 0 and half.detail["trace_divergent_branches"] == 0


def test_a_divergent_warp_runs_both_paths_and_a_data_branch_is_assumed_taken(busy_cases):
    k = busy_cases[8]
    odd, data, all_busy = k["oddLanesLoop"].time, k["dataBranch"].time, k["someWarpsLoop"].time
    assert odd.detail["trace_divergent_branches"] == 1 and odd.detail["trace_assumed_branches"] == 0
    assert data.detail["trace_assumed_branches"] == 1 and data.detail["trace_divergent_branches"] == 0
    assert any("1 not decidable" in a and "both paths assumed run" in a for a in data.assumptions)
    # both run the loop in every warp: about the time of the kernel whose warps all loop
    for t in (odd, data):
        assert t.us == pytest.approx(all_busy.us, rel=0.15), (t.us, all_busy.us)
    assert busy_cases[0]["someWarpsLoop"].time.us < 0.6 * odd.us


def test_the_cost_does_not_grow_with_trip_count_or_grid(nvcc_available):
    """A 1000x longer loop, and a grid 16x then 256x larger: the simulated instructions stay the same (the
    loop window; two rounds of blocks once the grid has more), while the predicted time grows with the work."""
    path = KERNELS / "divergent.cu"
    small = _trace(path, params=["n=512", "busy=8"])["someWarpsLoop"].time
    long = _trace(path, params=["n=512000", "busy=8"])["someWarpsLoop"].time
    wide = _trace(path, grid="16384", params=["n=512", "busy=8"])["someWarpsLoop"].time
    wider = _trace(path, grid="262144", params=["n=512", "busy=8"])["someWarpsLoop"].time
    assert long.detail["trace_issued"] == small.detail["trace_issued"]
    assert wider.detail["trace_issued"] == wide.detail["trace_issued"]
    assert long.us > 200 * small.us
    assert wide.us > 4 * small.us and wider.us > 4 * wide.us


def test_json_report_holds_the_trace_time_beside_the_other_models(nvcc_available):
    proc = subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", str(ROOT / "examples" / "reduction.cu"),
                           "--gpu", "v100", "--time-model", "trace", "--format", "json"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    kernels = json.loads(proc.stdout)["kernels"]
    assert kernels
    for k in kernels:
        t = k["time"]
        assert t["model"] == "trace" and set(t["models"]) == {"kerncast", "thesis", "mwp-cwp", "trace"}
        assert t["us"] == pytest.approx(t["models"]["trace"])
        lo, hi = t["range_us"]
        assert lo <= t["us"] <= hi
        text = " ".join(t["assumptions"])
        assert "window of 4 iterations" in text and "trace model branches" in text


def test_the_setting_accepts_the_trace_model():
    settings, warnings = parse_settings({"kerncast": {"timeModel": "trace"}})
    assert settings.options.time_model == "trace" and warnings == []


def test_a_disagreement_with_the_kerncast_model_is_named(nvcc_available):
    """reduceStrided: the two models differ by more than the 1.5x of data/trace.toml; fmaLoop: the two
    agree, and nothing is said."""
    options = AnalysisOptions(gpu="v100", time_model="trace")
    naive = next(k for k in analyze_file(ROOT / "examples" / "reduction.cu", options=options).kernels
                 if k.name.startswith("reduceStrided")).time
    ratio = max(naive.models["trace"], naive.models["kerncast"]) / min(naive.models["trace"], naive.models["kerncast"])
    notes = [a for a in naive.assumptions if "disagree" in a]
    assert ratio > 1.5 and len(notes) == 1 and f"{ratio:.1f}x" in notes[0]
    lo, hi = naive.range_us
    assert lo <= min(naive.models["trace"], naive.models["kerncast"]) and hi >= max(naive.models.values())
    fma = analyze_file(ROOT / "examples" / "fma_loop.cu", options=options).kernels[0].time
    assert fma.models["trace"] == pytest.approx(fma.models["kerncast"], rel=0.5)
    assert not any("disagree" in a for a in fma.assumptions)


def test_consecutive_shared_loads_issue_as_vector_loads(nvcc_available):
    """MatrixMulCUDA's unrolled As[ty][k] reads (consecutive, 16-byte aligned, one address per warp) issue as
    LDS.128 as ptxas emits them, four scalar loads per vector load; the Bs[k][tx] reads, 128 bytes apart,
    stay scalar."""
    options = AnalysisOptions(gpu="k20", time_model="trace", overrides=LaunchOverrides.from_strings(
        grid="32,32", block="32,32", params=["wA=1024", "wB=1024"]))
    mm = next(k for k in analyze_file(ROOT / "examples" / "matmul.cu", options=options).kernels
              if k.name.startswith("MatrixMulCUDA")).time
    notes = [a for a in mm.assumptions if a.startswith("trace model shared loads")]
    assert notes and "32 scalar shared loads issue as 8 vector loads" in notes[0], notes
    naive = next(k for k in analyze_file(ROOT / "examples" / "matmul.cu", options=options).kernels
                 if k.name.startswith("matmulNaive")).time
    assert not any(a.startswith("trace model shared loads") for a in naive.assumptions)
