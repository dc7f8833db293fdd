"""The numpy tree evaluator reproduces XGBoost: predictions and TreeSHAP contributions of the shipped models.

XGBoost stays a dependency for training; here it is the reference. Every tree member of every shipped model is
evaluated on the repository's datasets (all rows for predictions, evenly spaced rows for contributions, which
cost more) and compared with `Booster.inplace_predict` and `Booster.predict(pred_contribs=True)` on the same
bytes. XGBoost accumulates in float32, so the tolerance is 1e-5 of the model's output scale.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb
from kerncast.analysis.power.blend import PowerModel, matrix
from kerncast.analysis.power.dataset import load_all
from kerncast.analysis.power.fitting import feature_table
from kerncast.analysis.power.trees import TreeEnsemble, UnsupportedModel
from kerncast.analysis.power.ubjson import UBJSONError, loads

SHIPPED = Path(__file__).resolve().parent.parent / "analysis" / "power" / "shipped"
CONTRIB_ROWS = 40  # per dataset and model
TREE_MEMBERS = sorted(
    (p.stem, d["file"], tuple(d["features"]))
    for p in SHIPPED.glob("*.json") if p.name != "index.json"
    for d in json.loads(p.read_text())["members"] if "file" in d
)


@pytest.fixture(scope="module")
def tables() -> dict[str, dict[str, np.ndarray]]:
    return {name: feature_table(ds) for name, ds in load_all().items()}


def _reference(raw: bytes) -> xgb.Booster:
    booster = xgb.Booster()
    booster.load_model(bytearray(raw))
    booster.set_param({"nthread": 1})
    booster.feature_names = None  # the matrices below are positional
    return booster


def test_every_shipped_model_has_tree_members() -> None:
    assert len(TREE_MEMBERS) >= 5, TREE_MEMBERS


@pytest.mark.parametrize(("model", "file", "features"), TREE_MEMBERS, ids=[m[1] for m in TREE_MEMBERS])
def test_predictions_and_contributions_match_xgboost(model, file, features, tables) -> None:
    raw = (SHIPPED / file).read_bytes()
    trees, booster = TreeEnsemble.from_ubj(raw), _reference(raw)
    for name, table in tables.items():
        X = matrix(table, features).astype(np.float32)
        expected = booster.inplace_predict(X)
        got = trees.predict(X)
        tol = 1e-5 * max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(got, expected, rtol=0, atol=tol, err_msg=f"{model} on {name}")
        rows = np.unique(np.linspace(0, len(X) - 1, CONTRIB_ROWS).astype(int))
        shap = booster.predict(xgb.DMatrix(X[rows]), pred_contribs=True)
        base, contrib = trees.contributions(X[rows])
        np.testing.assert_allclose(contrib, shap[:, :-1], rtol=0, atol=tol, err_msg=f"{model} on {name}")
        np.testing.assert_allclose(base, shap[:, -1], rtol=0, atol=tol, err_msg=f"{model} on {name}")
        np.testing.assert_allclose(base + contrib.sum(axis=1), got[rows], rtol=0, atol=tol)


@pytest.mark.parametrize(("model", "file", "features"), TREE_MEMBERS, ids=[m[1] for m in TREE_MEMBERS])
def test_subset_tables_equal_the_polynomial_evaluation(model, file, features, tables) -> None:
    """The run-time tables give the per-leaf polynomials' contributions to 1e-9, also with missing values and
    with only the shorter paths tabulated; the one-pass prediction is the walked one."""
    raw = (SHIPPED / file).read_bytes()
    reference = TreeEnsemble.from_ubj(raw, table_max_features=0)
    assert reference.tables is None and reference.groups
    tabulated, mixed = TreeEnsemble.from_ubj(raw), TreeEnsemble.from_ubj(raw, table_max_features=4)
    assert tabulated.tables is not None and not tabulated.groups  # the shipped paths all fit a table
    assert mixed.tables is not None and mixed.groups
    X = np.concatenate([matrix(t, features) for t in tables.values()]).astype(np.float32)
    X = X[np.unique(np.linspace(0, len(X) - 1, 3 * CONTRIB_ROWS).astype(int))]
    holes = X.copy()
    holes[np.random.default_rng(3).random(X.shape) < 0.2] = np.nan
    for rows in (X, holes):
        base, expected = reference.contributions(rows)
        walked = reference.predict(rows)
        for trees in (tabulated, mixed):
            pred, got_base, got = trees.evaluate(rows)
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9, err_msg=model)
            np.testing.assert_allclose(got_base, base, rtol=0, atol=1e-12)
            np.testing.assert_allclose(pred, walked, rtol=0, atol=1e-9)


def test_missing_values_repeated_features_and_stumps() -> None:
    """A small model trained here: NaNs take the learnt default way, a feature split twice on one path is one
    player of the Shapley game, and a single-leaf tree only moves the base value."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    y = np.nan_to_num(X[:, 0]) ** 2 + np.where(np.isnan(X[:, 1]), 3.0, X[:, 1]) + 0.1 * rng.normal(size=400)
    booster = xgb.train({"max_depth": 6, "eta": 0.3, "nthread": 1, "seed": 0}, xgb.DMatrix(X, label=y), 30)
    stump = xgb.train({"max_depth": 6, "min_child_weight": 1e9, "nthread": 1}, xgb.DMatrix(X, label=y), 2)
    for model in (booster, stump):
        raw = bytes(model.save_raw("ubj"))
        trees = TreeEnsemble.from_ubj(raw)
        expected = model.predict(xgb.DMatrix(X), pred_contribs=True)
        base, contrib = trees.contributions(X)
        np.testing.assert_allclose(trees.predict(X), model.inplace_predict(X), atol=1e-4)
        np.testing.assert_allclose(trees.evaluate(X)[0], model.inplace_predict(X), atol=1e-4)
        _, reference = TreeEnsemble.from_ubj(raw, table_max_features=0).contributions(X)
        np.testing.assert_allclose(contrib, reference, rtol=0, atol=1e-9)
        np.testing.assert_allclose(contrib, expected[:, :-1], atol=1e-4)
        np.testing.assert_allclose(base, expected[:, -1], atol=1e-4)
    assert np.all(TreeEnsemble.from_ubj(bytes(stump.save_raw("ubj"))).contributions(X)[1] == 0.0)


def test_refuses_what_it_cannot_reproduce() -> None:
    X = np.random.default_rng(1).normal(size=(50, 2)).astype(np.float32)
    logistic = xgb.train({"objective": "binary:logistic", "nthread": 1}, xgb.DMatrix(X, label=X[:, 0] > 0), 2)
    with pytest.raises(UnsupportedModel, match="binary:logistic"):
        TreeEnsemble.from_ubj(bytes(logistic.save_raw("ubj")))
    with pytest.raises(UnsupportedModel, match="not an XGBoost model"):
        TreeEnsemble.from_ubj(b"{i\x01aZ}")
    raw = (SHIPPED / TREE_MEMBERS[0][1]).read_bytes()
    with pytest.raises(UBJSONError):
        loads(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="feature matrix"):
        TreeEnsemble.from_ubj(raw).predict(np.zeros((2, 1)))


def test_ubjson_reader_values() -> None:
    doc = b"{i\x01a[$l#i\x02\x00\x00\x00\x01\xff\xff\xff\xffi\x01bSi\x02hii\x01cTi\x01dD?\xf0\x00\x00\x00\x00\x00\x00}"
    out = loads(doc)
    assert out["a"].tolist() == [1, -1]
    assert out["b"] == "hi" and out["c"] is True and out["d"] == 1.0


def test_save_writes_the_model_bytes_unchanged(tmp_path: Path) -> None:
    model_id = TREE_MEMBERS[0][0]
    model = PowerModel.load(SHIPPED / f"{model_id}.json")
    for written in model.save(tmp_path, model_id):
        if written.suffix == ".ubj":
            assert written.read_bytes() == (SHIPPED / written.name).read_bytes()
