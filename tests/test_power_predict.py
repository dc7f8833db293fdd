"""predict_power with the shipped models: intervals, assumptions, exact contributions and LIME."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.power.dataset import default_data_dir, load_all
from kerncast.analysis.power.model import feature_row, predict_power, predict_powers

DATA = default_data_dir()  # the repository's own copy (data/power/)


@pytest.fixture(scope="module")
def k20_row() -> dict[str, float]:
    ds = load_all()["k20_larger"]
    return {k: float(v[100]) for k, v in ds.columns.items()}


def test_prediction_fields_and_interval(k20_row) -> None:
    p = predict_power(k20_row, "k20", explain=False)
    assert p.model == "gam+rf@k20"
    assert "k20_larger" in p.trained_on
    assert p.interval[0] < p.watts < p.interval[1]
    j = p.to_json()
    assert set(j) == {"watts", "interval", "model", "trained_on", "assumptions", "explanation", "models", "drivers"}


def test_thesis_model_selectable(k20_row) -> None:
    p = predict_power(k20_row, "k20", explain=False, role="thesis")
    assert p.model == "xgboost-thesis@k20"


def test_gpu_without_dataset_uses_pooled_model(k20_row) -> None:
    p = predict_power(k20_row, "a100", explain=False)
    assert p.model.startswith("gam+rf-pooled")
    assert any("no power measurements for a100" in a and "TDP" in a for a in p.assumptions)


@pytest.mark.parametrize("gpu", ["k20", "m60", "v100"])
def test_exact_contributions_sum_to_prediction(k20_row, gpu) -> None:
    model, _, table, _ = feature_row(k20_row, gpu)
    base, contrib = model.contributions(table)
    total = base[0] + sum(v[0] for v in contrib.values())
    assert total == pytest.approx(model.predict(table)[0], rel=1e-4)


def test_lime_agrees_in_sign_with_exact_and_is_deterministic(k20_row) -> None:
    p1 = predict_power(k20_row, "k20")
    p2 = predict_power(k20_row, "k20")
    top = p1.explanation[:3]
    assert len(top) == 3
    for c in top:
        assert c.lime_watts is not None
        assert (c.watts > 0) == (c.lime_watts > 0), c
    assert [c.lime_watts for c in p1.explanation] == [c.lime_watts for c in p2.explanation]
    assert all(c.name and c.name != c.feature for c in top)


def test_batched_prediction_equals_one_by_one_and_stays_inside_physics(k20_row) -> None:
    ds = load_all()["k20_larger"]
    rows = [{k: float(v[i]) for k, v in ds.columns.items()} for i in (5, 100, 900, 1500)]
    requests = [(r, gpu) for r in rows for gpu in ("k20", "v100", "a100")]
    batch = predict_powers(requests, explain=True, lime=False)
    for (row, gpu), p in zip(requests, batch, strict=True):
        one = predict_power(row, gpu, explain=True, lime=False)
        assert p.watts == pytest.approx(one.watts) and p.interval == pytest.approx(one.interval)
        assert [c.feature for c in p.explanation] == [c.feature for c in one.explanation]
        prof = load_profile(gpu)
        assert prof.idle_w <= p.interval[0] <= p.watts <= p.interval[1] <= prof.tdp_w


def test_runtime_needs_nothing_of_training_scikit_learn_or_lime() -> None:
    """The prediction path runs with scikit-learn and LIME made unimportable, and loads no training module.

    (XGBoost itself imports scikit-learn when it is installed, for its own estimator wrappers; blocking it shows
    that Kerncast's run time does not depend on it.)
    """
    code = (
        "import sys\n"
        "sys.modules['sklearn'] = None; sys.modules['lime'] = None\n"
        "from kerncast.analysis.power.model import predict_powers\n"
        "from kerncast.analysis.stages.power import power_stage, finish_power\n"
        "row = {'grid_size': 64.0, 'block_size': 256.0}\n"
        "print(len(predict_powers([(row, 'k20'), (row, 'a100'), (row, 'v100')], lime=False)))\n"
        "print(','.join(sorted(m for m in sys.modules if m in (\n"
        "    'kerncast.analysis.power.fitting', 'kerncast.analysis.power.train', 'kerncast.analysis.power.evaluate',\n"
        "    'kerncast.analysis.power.dataset', 'kerncast.analysis.power.recipes'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["3", ""], out.stdout
