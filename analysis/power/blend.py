"""A fitted power model at run time: a weighted blend of learners over a feature table, exact contributions.

This is the prediction side only (numpy; no XGBoost, no scikit-learn, no LIME, no dataset code): a model is
read from its JSON document plus one XGBoost UBJ file per tree member (no pickle), predicts watts for every row
of a feature table in one call, and splits each prediction into per-feature contributions. Tree members are
evaluated by trees.py, which reads the UBJ files itself and reproduces XGBoost's predictions and TreeSHAP
contributions, so that loading the model costs milliseconds instead of XGBoost's second of imports. Training
(with XGBoost) lives in `fitting.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from kerncast.analysis.power.gam import SplineGAM
from kerncast.analysis.power.intervals import PowerInterval
from kerncast.analysis.power.trees import TreeEnsemble

FORMAT_VERSION = 2


def matrix(table: dict[str, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
    """Columns `names` of a feature table as an (n, k) float array; a missing column is all NaN."""
    n = len(next(iter(table.values())))
    out = np.full((n, len(names)), np.nan)
    for j, c in enumerate(names):
        column = table.get(c)
        if column is not None:
            out[:, j] = column
    return out


@dataclass
class FittedMember:
    kind: str
    features: tuple[str, ...]
    weight: float
    gam: SplineGAM | None = None
    trees: TreeEnsemble | None = None
    #: the tree member's XGBoost model as saved (UBJ bytes), written back unchanged by `PowerModel.save`
    ubj: bytes | None = None

    @classmethod
    def from_ubj(cls, kind: str, features: tuple[str, ...], weight: float, ubj: bytes) -> FittedMember:
        """A tree member from its XGBoost UBJ bytes (checked to have one input per feature)."""
        trees = TreeEnsemble.from_ubj(ubj)
        if trees.n_features != len(features):
            raise ValueError(f"tree model has {trees.n_features} inputs but {len(features)} features are listed")
        return cls(kind, features, weight, trees=trees, ubj=bytes(ubj))

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.gam is not None:
            return self.gam.predict(X)
        return self.trees.predict(X)

    def contributions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(base per row, (n, k) contributions): TreeSHAP for trees, additive terms for the GAM."""
        _, base, contrib = self.evaluate(X)
        return base, contrib

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(prediction, base, (n, k) contributions) per row, in one pass over the member."""
        if self.gam is not None:
            b, c = self.gam.contributions(X)
            return b + c.sum(axis=1), np.full(X.shape[0], b), c
        return self.trees.evaluate(X)


@dataclass
class PowerModel:
    """A blend of fitted members; `target` 'norm' predicts (P - idle)/(TDP - idle) and maps back to watts."""

    recipe: str
    target: str
    members: list[FittedMember]
    interval_model: PowerInterval | None = None  # calibrated on unseen benchmarks (intervals.py)
    metadata: dict = field(default_factory=dict)

    @property
    def features(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for m in self.members:
            for f in m.features:
                seen.setdefault(f, None)
        return tuple(seen)

    def _scale(self, tdp_w: float | np.ndarray, idle_w: float | np.ndarray):
        if self.target == "norm":
            return np.asarray(tdp_w, float) - np.asarray(idle_w, float), np.asarray(idle_w, float)
        return 1.0, 0.0

    def predict(self, table: dict[str, np.ndarray]) -> np.ndarray:
        """Watts for every row of a feature table (descriptors d_tdp/d_idle give the scale of 'norm')."""
        z = sum(m.weight * m.predict(matrix(table, m.features)) for m in self.members)
        scale, offset = self._scale(table.get("d_tdp", 0.0), table.get("d_idle", 0.0))
        return z * scale + offset

    def contributions(self, table: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(base W per row, {feature: W per row}); base + sum of contributions equals `predict`."""
        n = len(next(iter(table.values())))
        scale, offset = self._scale(table.get("d_tdp", 0.0), table.get("d_idle", 0.0))
        base = np.zeros(n)
        out = {f: np.zeros(n) for f in self.features}
        for m in self.members:
            b, c = m.contributions(matrix(table, m.features))
            base += m.weight * b
            for j, f in enumerate(m.features):
                out[f] += m.weight * c[:, j]
        return base * scale + offset, {f: v * scale for f, v in out.items()}

    def evaluate(self, table: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """(watts, base W, {feature: W}) per row: `predict` and `contributions` with each member evaluated once."""
        n = len(next(iter(table.values())))
        scale, offset = self._scale(table.get("d_tdp", 0.0), table.get("d_idle", 0.0))
        names = self.features
        column = {f: j for j, f in enumerate(names)}
        z, base, out = np.zeros(n), np.zeros(n), np.zeros((n, len(names)))
        for m in self.members:
            p, b, c = m.evaluate(matrix(table, m.features))
            z += m.weight * p
            base += m.weight * b
            out[:, [column[f] for f in m.features]] += m.weight * c  # a member lists each feature once
        out *= np.reshape(scale, (-1, 1))
        return z * scale + offset, base * scale + offset, {f: out[:, j] for j, f in enumerate(names)}

    def interval(self, watts, idle_w, tdp_w) -> tuple[np.ndarray, np.ndarray]:
        """90% interval, inside [idle, TDP] of the GPU (intervals.py); NaN when the model has none."""
        if self.interval_model is None:
            nan = np.full(np.shape(watts), np.nan)
            return nan, nan
        return self.interval_model.apply(watts, idle_w, tdp_w)

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
                (directory / fname).write_bytes(m.ubj)
                doc["file"] = fname
                written.append(directory / fname)
            docs.append(doc)
        body = {"format_version": FORMAT_VERSION, "id": model_id, "recipe": self.recipe, "target": self.target,
                "interval": self.interval_model.to_json() if self.interval_model else None, "members": docs,
                "metadata": self.metadata}
        path = directory / f"{model_id}.json"
        path.write_text(json.dumps(body, indent=1, sort_keys=False) + "\n")
        return [path, *written]

    @classmethod
    def load(cls, path: Path, read_bytes: Callable[[str], bytes] | None = None) -> PowerModel:
        """Load `<id>.json` (and its UBJ files from the same directory, or through `read_bytes(name)`)."""
        body = json.loads(path.read_text() if read_bytes is None else read_bytes(path.name).decode())
        if body.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{path.name}: unsupported model format {body.get('format_version')}; "
                             "run `kerncast power train`")
        members = []
        for d in body["members"]:
            if "gam" in d:
                members.append(FittedMember(d["kind"], tuple(d["features"]), float(d["weight"]),
                                            gam=SplineGAM.from_dict(d["gam"])))
            else:
                raw = (path.parent / d["file"]).read_bytes() if read_bytes is None else read_bytes(d["file"])
                members.append(FittedMember.from_ubj(d["kind"], tuple(d["features"]), float(d["weight"]), raw))
        return cls(body["recipe"], body["target"], members, PowerInterval.from_json(body.get("interval")),
                   body.get("metadata", {}))
