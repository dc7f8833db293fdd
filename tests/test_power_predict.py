"""predict_power with the shipped models: intervals, assumptions, exact contributions and LIME."""

from __future__ import annotations

import pytest
from kerncast.analysis.power.dataset import default_data_dir, load_all
from kerncast.analysis.power.model import predict_power

DATA = default_data_dir()
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"power datasets not found at {DATA}")


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
    assert set(j) == {"watts", "interval", "model", "trained_on", "assumptions", "explanation"}


def test_thesis_model_selectable(k20_row) -> None:
    p = predict_power(k20_row, "k20", explain=False, role="thesis")
    assert p.model == "xgboost-thesis@k20"


def test_gpu_without_dataset_uses_pooled_model(k20_row) -> None:
    p = predict_power(k20_row, "a100", explain=False)
    assert p.model.startswith("gam+rf-pooled")
    assert any("no power measurements for a100" in a and "TDP" in a for a in p.assumptions)


@pytest.mark.parametrize("gpu", ["k20", "m60", "v100"])
def test_exact_contributions_sum_to_prediction(k20_row, gpu) -> None:
    from kerncast.analysis.power.model import feature_row

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
