"""Fitting power models from measured datasets (training side; the run time is `blend.py`).

A model is trained from a `Recipe` on one or more `PowerDataset`s: every member (spline GAM, XGBoost random
forest or the thesis's boosted trees) is fitted on its feature columns of the datasets' feature tables.
"""

from __future__ import annotations

import numpy as np
import xgboost as xgb
from kerncast.analysis.power.blend import FittedMember, PowerModel, matrix
from kerncast.analysis.power.dataset import PowerDataset
from kerncast.analysis.power.engineered import descriptor_features, engineer
from kerncast.analysis.power.gam import SplineGAM
from kerncast.analysis.power.recipes import RF_PARAMS, SEED, THESIS_XGB_PARAMS, Member, Recipe


def feature_table(ds: PowerDataset) -> dict[str, np.ndarray]:
    """Every column a recipe may use: raw Table 5.4 columns, engineered features and GPU descriptors."""
    table = dict(ds.columns)
    table.update(engineer(ds.columns, ds.descriptor, ds.format))
    d = ds.descriptor
    table.update(descriptor_features(ds.rows, d["sm_count"], d["tdp_w"], d["floor_w"]))
    return table


def fit_model(recipe: Recipe, sets: list[PowerDataset], n_jobs: int = 1) -> PowerModel:
    """Fit `recipe` on the rows of `sets` (already restricted to the rows to train on)."""
    tables = [feature_table(s) for s in sets]
    y = np.concatenate([_target(recipe.target, s.power, s.descriptor) for s in sets])
    members = []
    for spec in recipe.members:
        names = _member_features(spec, sets[0])
        X = np.vstack([matrix(t, names) for t in tables])
        members.append(_fit_member(spec, names, X, y, n_jobs))
    return PowerModel(recipe.name, recipe.target, members)


def _xgb_params(kind: str, n_jobs: int) -> tuple[dict, int]:
    if kind == "rf":
        p = dict(RF_PARAMS)
        rounds = 1
        p["num_parallel_tree"] = p.pop("n_estimators")
        p["eta"] = p.pop("learning_rate")
        p["lambda"] = p.pop("reg_lambda")
    else:
        p = dict(THESIS_XGB_PARAMS)
        rounds = p.pop("n_estimators")
        p["eta"] = p.pop("learning_rate")
    p.update({"objective": "reg:squarederror", "seed": SEED, "nthread": n_jobs, "verbosity": 0})
    return p, rounds


def _target(kind: str, power: np.ndarray, desc: dict) -> np.ndarray:
    if kind == "norm":
        return (power - desc["floor_w"]) / (desc["tdp_w"] - desc["floor_w"])
    return np.asarray(power, float)


def _member_features(spec: Member, ds: PowerDataset) -> tuple[str, ...]:
    return ds.thesis_features() if spec.features == "thesis" else tuple(spec.features)


def _fit_member(spec: Member, names: tuple[str, ...], X: np.ndarray, y: np.ndarray, n_jobs: int) -> FittedMember:
    if spec.kind == "gam":
        return FittedMember("gam", names, spec.weight, gam=SplineGAM(spec.alpha).fit(X, y))
    params, rounds = _xgb_params(spec.kind, n_jobs)
    dm = xgb.DMatrix(X.astype(np.float32), label=y, feature_names=list(names), nthread=n_jobs)
    booster = xgb.train(params, dm, num_boost_round=rounds)
    return FittedMember.from_ubj(spec.kind, names, spec.weight, bytes(booster.save_raw("ubj")))
