"""Predict a kernel's average power from its features with the shipped models, with an interval and explanation.

The shipped models (trained by `kerncast power train`) are loaded lazily, once per process. A GPU with its own
measured dataset (K20, M60, V100) uses its own default model; any other GPU uses the model pooled over those
GPUs, whose target (P - idle)/(TDP - idle) is mapped back to watts with the profile's TDP and idle power, and the
prediction says so in its assumptions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from kerncast.analysis.power.engineered import NAMES, descriptor_features, engineer
from kerncast.analysis.power.models import PowerModel

TOP_CONTRIBUTIONS = 8  # contributions kept in an explanation (hover-sized)


@dataclass
class Contribution:
    """One feature's share of a prediction, in watts relative to the model's base value."""

    feature: str
    name: str
    value: float
    watts: float
    lime_watts: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature, "name": self.name, "value": self.value, "watts": self.watts,
                "lime_watts": self.lime_watts}


@dataclass
class PowerPrediction:
    watts: float
    interval: tuple[float, float]
    model: str
    trained_on: str
    assumptions: list[str] = field(default_factory=list)
    explanation: list[Contribution] = field(default_factory=list)
    base_watts: float = 0.0
    #: the feature values and GPU id the prediction was made from (kept to add LIME weights later; not in the JSON)
    features: dict[str, float] = field(default_factory=dict)
    gpu: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"watts": self.watts, "interval": list(self.interval), "model": self.model,
                "trained_on": self.trained_on, "assumptions": list(self.assumptions),
                "explanation": [c.to_json() for c in self.explanation]}


class ModelsMissing(RuntimeError):
    """The package has no trained power models (run `kerncast power train`)."""


def _models_root():
    return resources.files("kerncast.analysis.power").joinpath("models")


@cache
def _index() -> dict:
    root = _models_root()
    try:
        return json.loads(root.joinpath("index.json").read_text())
    except FileNotFoundError:
        raise ModelsMissing("no trained power models in the package; run `kerncast power train`") from None


@cache
def load_model(model_id: str) -> PowerModel:
    """A shipped model by id (cached)."""
    root = _models_root()
    return PowerModel.load(Path(f"{model_id}.json"), read_bytes=lambda name: root.joinpath(name).read_bytes())


def _descriptor(gpu, model: PowerModel, own: bool) -> tuple[dict, float, float]:
    """GPU descriptor for feature engineering, and (tdp, idle) for the pooled target."""
    if own:
        meta = model.metadata["trained_on"][0]
        from kerncast.analysis.power.dataset import descriptors

        d = dict(descriptors()[meta["dataset"]])
        return d, float(meta["tdp_w"]), float(meta["idle_w"])
    lim = gpu.limits
    d = {"sm_count": gpu.sm_count, "max_threads_per_sm": lim.max_threads_per_sm,
         "max_blocks_per_sm": lim.max_blocks_per_sm, "regs_per_sm": lim.regs_per_sm,
         "smem_per_sm": lim.shared_per_sm}
    return d, float(gpu.tdp_w), float(gpu.idle_w)


def select_model(gpu_id: str, role: str = "default") -> tuple[str, bool]:
    """(model id, whether the GPU has its own dataset) for a GPU id; role 'default' or 'thesis'."""
    idx = _index()
    entry = idx["gpus"].get(gpu_id)
    if entry is not None:
        return entry[role], entry[role] != idx["pooled"]
    if role == "thesis":
        raise ValueError(f"the thesis model exists only for {', '.join(idx['gpus'])}")
    return idx["pooled"], False


def feature_row(features: dict[str, float], gpu, role: str = "default") -> tuple[PowerModel, str, dict, list[str]]:
    """The model for `gpu` and the one-row feature table it needs."""
    from kerncast.analysis.gpus import load_profile

    if isinstance(gpu, str):
        gpu = load_profile(gpu)
    model_id, own = select_model(gpu.id, role)
    model = load_model(model_id)
    desc, tdp, idle = _descriptor(gpu, model, own or gpu.id in _index()["gpus"])
    cols = {k: np.array([float(v)]) for k, v in features.items()}
    table = dict(cols)
    table.update(engineer(cols, desc, "thesis"))
    table.update(descriptor_features(1, desc["sm_count"], tdp, idle))
    assumptions = ["features in the published datasets' definition (energymodel.md section 2)"]
    entry = _index()["gpus"].get(gpu.id)
    if entry is None:
        assumptions.append(
            f"no power measurements for {gpu.id}: model pooled over "
            f"{', '.join(t['gpu'] for t in model.metadata['trained_on'])} with target (P - idle)/(TDP - idle), "
            f"applied with this GPU's TDP {tdp:g} W and idle {idle:g} W")
    missing = [f for f in ("grid_size", "block_size") if f not in features]
    if missing:
        raise ValueError(f"power features lack {', '.join(missing)}")
    return model, model_id, table, assumptions


def predict_power(features: dict[str, float], gpu, explain: bool = True, role: str = "default",
                  lime: bool = True) -> PowerPrediction:
    """Average power (W) of a kernel from its Table 5.4 features (dataset definition) on `gpu`."""
    model, model_id, table, assumptions = feature_row(features, gpu, role)
    watts = float(model.predict(table)[0])
    lo, hi = model.interval(watts)
    trained = "+".join(f"{t['dataset']}({t['gpu']})" for t in model.metadata.get("trained_on", []))
    gpu_id = gpu if isinstance(gpu, str) else gpu.id
    pred = PowerPrediction(watts=watts, interval=(float(lo), float(hi)), model=f"{model.recipe}@{gpu_id}",
                           trained_on=trained, assumptions=assumptions, features=dict(features), gpu=gpu_id)
    base, contrib = model.contributions(table)
    pred.base_watts = float(base[0])
    if explain:
        from kerncast.analysis.power.explain import explain_prediction

        pred.explanation = explain_prediction(model, table, contrib, lime=lime, top=TOP_CONTRIBUTIONS)
    return pred


def feature_name(feature: str) -> str:
    return NAMES.get(feature, feature.replace("_", " "))
