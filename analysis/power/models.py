"""Fitted power models: a weighted blend of learners over a feature table, with exact per-feature contributions.

A model is trained from a `Recipe` on one or more `PowerDataset`s, predicts watts from a feature table (a dict of
equal-length columns: the Table 5.4 features, the engineered ones and the GPU descriptors), and saves itself as a
JSON document plus one XGBoost UBJ file per tree member (no pickle).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xgboost as xgb
from kerncast.analysis.power.dataset import PowerDataset
from kerncast.analysis.power.engineered import descriptor_features, engineer
from kerncast.analysis.power.gam import SplineGAM
from kerncast.analysis.power.recipes import RF_PARAMS, SEED, THESIS_XGB_PARAMS, Member, Recipe

FORMAT_VERSION = 1


def feature_table(ds: PowerDataset) -> dict[str, np.ndarray]:
    """Every column a recipe may use: raw Table 5.4 columns, engineered features and GPU descriptors."""
    table = dict(ds.columns)
    table.update(engineer(ds.columns, ds.descriptor, ds.format))
    d = ds.descriptor
    table.update(descriptor_features(ds.rows, d["sm_count"], d["tdp_w"], d["idle_w"]))
    return table


def _matrix(table: dict[str, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
    n = len(next(iter(table.values())))
    return np.column_stack([np.asarray(table.get(c, np.full(n, np.nan)), dtype=float) for c in names])


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


@dataclass
class FittedMember:
    kind: str
    features: tuple[str, ...]
    weight: float
    gam: SplineGAM | None = None
    booster: xgb.Booster | None = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.gam is not None:
            return self.gam.predict(X)
        return self.booster.inplace_predict(X.astype(np.float32))

    def contributions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(base per row, (n, k) contributions): TreeSHAP for trees, additive terms for the GAM."""
        if self.gam is not None:
            b, c = self.gam.contributions(X)
            return np.full(X.shape[0], b), c
        dm = xgb.DMatrix(X.astype(np.float32), feature_names=list(self.features))
        sh = self.booster.predict(dm, pred_contribs=True)
        return sh[:, -1], sh[:, :-1]


@dataclass
class PowerModel:
    """A blend of fitted members; `target` 'norm' predicts (P - idle)/(TDP - idle) and maps back to watts."""

    recipe: str
    target: str
    members: list[FittedMember]
    interval_q: float | None = None  # 90% conformal quantile of |P - pred| / pred (grouped inner CV)
    metadata: dict = field(default_factory=dict)

    @property
    def features(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for m in self.members:
            for f in m.features:
                seen.setdefault(f, None)
        return tuple(seen)

    # -- training ---------------------------------------------------------------------------------------
    @classmethod
    def fit(cls, recipe: Recipe, sets: list[PowerDataset], n_jobs: int = 2) -> PowerModel:
        """Fit `recipe` on the rows of `sets` (already restricted to the rows to train on)."""
        tables = [feature_table(s) for s in sets]
        y = np.concatenate([_target(recipe.target, s.power, s.descriptor) for s in sets])
        members = []
        for spec in recipe.members:
            names = _member_features(spec, sets[0])
            X = np.vstack([_matrix(t, names) for t in tables])
            members.append(_fit_member(spec, names, X, y, n_jobs))
        return cls(recipe.name, recipe.target, members)

    # -- prediction -------------------------------------------------------------------------------------
    def _scale(self, tdp_w: float | np.ndarray, idle_w: float | np.ndarray):
        if self.target == "norm":
            return np.asarray(tdp_w, float) - np.asarray(idle_w, float), np.asarray(idle_w, float)
        return 1.0, 0.0

    def predict(self, table: dict[str, np.ndarray]) -> np.ndarray:
        """Watts for every row of a feature table (descriptors d_tdp/d_idle give the scale of 'norm')."""
        z = sum(m.weight * m.predict(_matrix(table, m.features)) for m in self.members)
        scale, offset = self._scale(table.get("d_tdp", 0.0), table.get("d_idle", 0.0))
        return z * scale + offset

    def contributions(self, table: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(base W per row, {feature: W per row}); base + sum of contributions equals `predict`."""
        n = len(next(iter(table.values())))
        scale, offset = self._scale(table.get("d_tdp", 0.0), table.get("d_idle", 0.0))
        base = np.zeros(n)
        out = {f: np.zeros(n) for f in self.features}
        for m in self.members:
            b, c = m.contributions(_matrix(table, m.features))
            base += m.weight * b
            for j, f in enumerate(m.features):
                out[f] += m.weight * c[:, j]
        return base * scale + offset, {f: v * scale for f, v in out.items()}

    def interval(self, watts: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """90% interval P * (1 -/+ q) (power-generalization.md section 9.7); never below 0 W."""
        q = self.interval_q if self.interval_q is not None else np.nan
        w = np.asarray(watts, float)
        return np.maximum(w * (1 - q), 0.0), w * (1 + q)

    # -- persistence ------------------------------------------------------------------------------------
    def save(self, directory: Path, model_id: str) -> list[Path]:
        """Write `<model_id>.json` and one `<model_id>.<i>.ubj` per tree member; return the paths."""
        directory.mkdir(parents=True, exist_ok=True)
        written, docs = [], []
        for i, m in enumerate(self.members):
            doc = {"kind": m.kind, "features": list(m.features), "weight": m.weight}
            if m.gam is not None:
                doc["gam"] = m.gam.to_dict()
            else:
                fname = f"{model_id}.{i}.ubj"
                m.booster.save_model(str(directory / fname))
                doc["file"] = fname
                written.append(directory / fname)
            docs.append(doc)
        body = {"format_version": FORMAT_VERSION, "id": model_id, "recipe": self.recipe, "target": self.target,
                "interval_q90": self.interval_q, "members": docs, "metadata": self.metadata}
        path = directory / f"{model_id}.json"
        path.write_text(json.dumps(body, indent=1, sort_keys=False) + "\n")
        return [path, *written]

    @classmethod
    def load(cls, path: Path, read_bytes=None) -> PowerModel:
        """Load `<id>.json` (and its UBJ files from the same directory, or through `read_bytes(name)`)."""
        body = json.loads(path.read_text() if read_bytes is None else read_bytes(path.name).decode())
        if body.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{path.name}: unsupported model format {body.get('format_version')}")
        members = []
        for d in body["members"]:
            if "gam" in d:
                members.append(FittedMember(d["kind"], tuple(d["features"]), float(d["weight"]),
                                            gam=SplineGAM.from_dict(d["gam"])))
            else:
                booster = xgb.Booster()
                raw = (path.parent / d["file"]).read_bytes() if read_bytes is None else read_bytes(d["file"])
                booster.load_model(bytearray(raw))
                booster.feature_names = list(d["features"])
                members.append(FittedMember(d["kind"], tuple(d["features"]), float(d["weight"]), booster=booster))
        return cls(body["recipe"], body["target"], members, body.get("interval_q90"), body.get("metadata", {}))


def _target(kind: str, power: np.ndarray, desc: dict) -> np.ndarray:
    if kind == "norm":
        return (power - desc["idle_w"]) / (desc["tdp_w"] - desc["idle_w"])
    return np.asarray(power, float)


def _member_features(spec: Member, ds: PowerDataset) -> tuple[str, ...]:
    return ds.thesis_features() if spec.features == "thesis" else tuple(spec.features)


def _fit_member(spec: Member, names: tuple[str, ...], X: np.ndarray, y: np.ndarray, n_jobs: int) -> FittedMember:
    if spec.kind == "gam":
        return FittedMember("gam", names, spec.weight, gam=SplineGAM(spec.alpha).fit(X, y))
    params, rounds = _xgb_params(spec.kind, n_jobs)
    dm = xgb.DMatrix(X.astype(np.float32), label=y, feature_names=list(names))
    booster = xgb.train(params, dm, num_boost_round=rounds)
    return FittedMember(spec.kind, names, spec.weight, booster=booster)
