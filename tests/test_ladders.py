"""The version-ladder suite (validation/ladders/): its data files are complete and sourced, every kernel compiles
with the repository's nvcc and is predicted at the launch its annotation states, and no prediction is faster
than the GPU's peak rates allow for the work the analysis counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

ROOT = Path(__file__).resolve().parent.parent
_SPEC = importlib.util.spec_from_file_location("validate_ladders", ROOT / "benchmarks" / "validate_ladders.py")
vl = importlib.util.module_from_spec(_SPEC)
sys.modules["validate_ladders"] = vl
_SPEC.loader.exec_module(vl)

LAUNCH_FIELDS = ("grid", "block", "dynamic_shared_bytes")


@pytest.fixture(scope="module")
def ladders() -> list[vl.Ladder]:
    return vl.load_ladders()


@pytest.fixture(scope="module")
def predictor() -> vl.Predictor:
    return vl.Predictor()


def test_the_suite_has_six_ladders_forty_versions_and_two_modern_generations(ladders):
    assert len(ladders) >= 6
    measured = sum(len(lad.versions) * len(lad.gpus) for lad in ladders)
    assert measured >= 40
    archs = {load_profile(g).arch for lad in ladders for g in lad.gpus if load_profile(g).compute_capability >= (7, 0)}
    assert len(archs) >= 2, archs


def test_every_figure_names_its_source_and_gpu(ladders):
    for lad in ladders:
        assert lad.path.parent.name == lad.id
        assert lad.source["url"].startswith("https://") and len(lad.source["commit"]) >= 7
        for gpu in lad.gpus:
            load_profile(gpu)  # raises for an unknown profile id
        for v in lad.versions:
            assert v.file.suffix == ".cu" and v.file.is_relative_to(ROOT / "validation" / "ladders")
            assert v.row and set(v.measured_us) == set(lad.gpus)
            assert all(t > 0 for t in v.measured_us.values())


def test_a_malformed_ladder_is_refused_with_its_field_named(tmp_path):
    bad = tmp_path / "x" / "ladder.toml"
    bad.parent.mkdir()
    bad.write_text('schema = 1\nid = "x"\ntitle = "t"\nkind = "rewrites"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="'source'"):
        vl.load_ladder(bad)
    bad.write_text('schema = 1\nid = "x"\ntitle = "t"\nkind = "guess"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="kind 'guess'"):
        vl.load_ladder(bad)


def test_scoring_counts_ordered_pairs_skips_ties_and_measures_speedup_error():
    s = vl.score([100.0, 50.0, 52.0, 10.0], [90.0, 60.0, 40.0, 20.0])
    # (50, 52) is a tie; the five other pairs keep their measured order in the prediction
    assert (s.pairs_scored, s.ties, s.pairs_ordered) == (5, 1, 5)
    s = vl.score([100.0, 50.0], [50.0, 100.0])
    assert (s.pairs_scored, s.pairs_ordered) == (1, 0)
    assert s.log2_errors == [pytest.approx(2.0)]  # measured 2x faster, predicted 2x slower
    assert s.summary()["mape_pct"] == pytest.approx(75.0)


def test_a_ladder_pools_the_pairs_of_its_gpus_and_never_compares_across_them(ladders):
    """Two GPUs of one ladder: each GPU's pairs count once in the ladder's line; a version on one GPU is never
    paired with a version on the other (the 10x slower GPU would make every such pair 'ordered')."""
    lad = ladders[0]
    fast = vl.LadderResult(lad, "a", lad.versions[:2], [100.0, 50.0], [90.0, 60.0],
                           vl.score([100.0, 50.0], [90.0, 60.0]))
    slow = vl.LadderResult(lad, "b", lad.versions[:2], [1000.0, 500.0], [400.0, 800.0],
                           vl.score([1000.0, 500.0], [400.0, 800.0]))
    pooled = vl.per_ladder([fast, slow])[lad.id]
    assert (pooled.pairs_scored, pooled.pairs_ordered) == (2, 1)
    assert vl.per_ladder([fast, slow]).keys() == {lad.id}


def _files(ladders: list[vl.Ladder]) -> dict[Path, tuple[str, str, vl.LaunchSpec | None]]:
    """Each kernel file once: its kernel, a GPU it was measured on, and the launch its own versions use first
    (None for a file that only launch sweeps use at other launches)."""
    out: dict[Path, tuple[str, str, vl.LaunchSpec | None]] = {}
    for lad in ladders:
        for v in lad.versions:
            own = v.file.parent == lad.path.parent and lad.kind == "rewrites"
            if v.file not in out or (own and out[v.file][2] is None):
                out[v.file] = (v.kernel, lad.gpus[0], v.launches[0] if own else None)
    return out


def test_every_kernel_compiles_and_is_predicted_at_its_annotated_launch(ladders, nvcc_available):
    for file, (kernel, gpu, launch) in _files(ladders).items():
        report = analyze_file(file, options=AnalysisOptions(gpu=gpu, lime=False))
        errors = [f.message for f in report.findings if f.severity == "error"]
        assert not errors, (file, errors)
        k = next(k for k in report.kernels if k.name == kernel)
        source = k.launch.to_json()["source"]
        assert all(source[f] != "default" for f in LAUNCH_FIELDS), (file, source)
        assert source["params"] and all(s != "default" for s in source["params"].values()), (file, source)
        assert k.time is not None and k.time.us > 0
        if launch is not None:
            expected = launch.overrides()
            assert (k.launch.grid.value, k.launch.block.value) == (expected.grid, expected.block), file


def test_no_prediction_is_faster_than_the_gpu_peaks_allow(ladders, predictor, nvcc_available):
    """The default model's time is at least the roofline's best case (counted FP32/FP64 and tensor FLOPs at
    the vendor peak, compulsory DRAM bytes at peak bandwidth, load/store instructions at the SMs' issue rate),
    and the DRAM bytes it counts never move faster than the profile's peak bandwidth."""
    faster = []
    for lad in ladders:
        for gpu in lad.gpus:
            peak_bw = load_profile(gpu).mem_bandwidth_gbs * 1e9
            for v in lad.versions:
                for launch in v.launches:
                    t = predictor.estimate(v.file, v.kernel, gpu, launch)
                    assert t is not None and t.roofline_us is not None
                    dram_rate = t.detail["dram_bytes"] / (t.us * 1e-6)
                    if t.us < t.roofline_us[0] * (1 - 1e-9) or dram_rate > peak_bw * (1 + 1e-9):
                        faster.append(f"{lad.id} {v.id} on {gpu} at grid {launch.grid}: {t.us:.1f} us, roofline "
                                      f"best {t.roofline_us[0]:.1f} us, DRAM {dram_rate / 1e9:.0f} GB/s")
    assert not faster, "\n".join(faster)
