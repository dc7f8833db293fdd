"""Predict kernels' average power from their features with the shipped models, with an interval and explanation.

This is the power model's run time: numpy, XGBoost for the tree members, and the GPU profiles; nothing of
training, scikit-learn or LIME (LIME is `explain.py`, loaded on demand). The shipped models (trained by
`kerncast power train`, kept in `shipped/`) are loaded lazily, once per process. A GPU with its own measured
dataset (K20, M60, V100) uses its own default model; any other GPU uses the model pooled over those GPUs, whose
target (P - floor)/(TDP - floor) is mapped back to watts with the profile's TDP and idle power, and the
prediction says so in its assumptions. `predict_powers` predicts every kernel of a file in one call per model.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
from kerncast.analysis.gpus import GpuProfile, load_profile
from kerncast.analysis.power.blend import PowerModel
from kerncast.analysis.power.engineered import NAMES, descriptor_features, engineer
from kerncast.analysis.power.explain import lime_contributions
from kerncast.analysis.power.intervals import PowerInterval
from kerncast.analysis.power.results import Contribution, PowerPrediction

TOP_CONTRIBUTIONS = 8  # contributions kept in an explanation (hover-sized)


class ModelsMissing(RuntimeError):
    """The package has no trained power models (run `kerncast power train`)."""


def _models_root():
    return resources.files("kerncast.analysis.power").joinpath("shipped")


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


def select_model(gpu_id: str, role: str = "default") -> tuple[str, bool]:
    """(model id, whether the GPU has its own dataset) for a GPU id; role 'default' or 'thesis'."""
    idx = _index()
    entry = idx["gpus"].get(gpu_id)
    if entry is not None:
        return entry[role], entry[role] != idx["pooled"]
    if role == "thesis":
        raise ValueError(f"the thesis model exists only for {', '.join(idx['gpus'])}")
    return idx["pooled"], False


def _floor_w(gpu: GpuProfile, model: PowerModel) -> float:
    """The pooled target's per-GPU constant: the lowest measured kernel power where the GPU has a dataset,
    else the profile's idle power (docs/power-model.md)."""
    for t in model.metadata.get("trained_on", []):
        if t.get("gpu") == gpu.id and t.get("floor_w") is not None:
            return float(t["floor_w"])
    return float(gpu.idle_w)


def _descriptor(gpu: GpuProfile) -> dict:
    lim = gpu.limits
    return {"sm_count": gpu.sm_count, "max_threads_per_sm": lim.max_threads_per_sm,
            "max_blocks_per_sm": lim.max_blocks_per_sm, "regs_per_sm": lim.regs_per_sm,
            "smem_per_sm": lim.shared_per_sm}


def _interval_for(model: PowerModel, gpu_id: str) -> PowerInterval | None:
    """The GPU's own calibration where the model has one (pooled model on a pooled GPU), else the model's."""
    own = model.metadata.get("interval_by_gpu", {}).get(gpu_id)
    return PowerInterval.from_json(own) or model.interval_model


def _profile(gpu: GpuProfile | str) -> GpuProfile:
    return load_profile(gpu) if isinstance(gpu, str) else gpu


def feature_table(rows: list[dict[str, float]], gpu: GpuProfile, model: PowerModel) -> dict[str, np.ndarray]:
    """The feature table of `rows` (Table 5.4 features, one dict per kernel) on `gpu` for `model`."""
    for f in rows:
        missing = [k for k in ("grid_size", "block_size") if k not in f]
        if missing:
            raise ValueError(f"power features lack {', '.join(missing)}")
    names = sorted({k for f in rows for k in f})
    cols = {k: np.array([float(f.get(k, np.nan)) for f in rows]) for k in names}
    table = dict(cols)
    table.update(engineer(cols, _descriptor(gpu), "thesis"))
    table.update(descriptor_features(len(rows), gpu.sm_count, gpu.tdp_w, _floor_w(gpu, model)))
    return table


def _assumptions(gpu: GpuProfile, model: PowerModel) -> list[str]:
    out = ["features in the published datasets' definition (docs/power-features.md)",
           f"interval clipped to this GPU's idle {gpu.idle_w:g} W and TDP {gpu.tdp_w:g} W"]
    if gpu.id not in _index()["gpus"]:
        out.append(
            f"no power measurements for {gpu.id}: model pooled over "
            f"{', '.join(t['gpu'] for t in model.metadata['trained_on'])} with target (P - floor)/(TDP - floor), "
            f"applied with this GPU's TDP {gpu.tdp_w:g} W and idle {gpu.idle_w:g} W as the floor")
    return out


def feature_row(features: dict[str, float], gpu, role: str = "default") -> tuple[PowerModel, str, dict, list[str]]:
    """The model for `gpu` and the one-row feature table it needs."""
    gpu = _profile(gpu)
    model_id, _ = select_model(gpu.id, role)
    model = load_model(model_id)
    return model, model_id, feature_table([features], gpu, model), _assumptions(gpu, model)


def predict_powers(requests: list[tuple[dict[str, float], GpuProfile | str]], explain: bool = True,
                   role: str = "default", lime: bool = False) -> list[PowerPrediction]:
    """Average power (W) of many kernels, each from its Table 5.4 features on its GPU.

    Kernels that share a model are predicted in one batched call (the prediction, the interval and the exact
    contributions each once per model), which is what makes a file of many kernels cheap.
    """
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    gpus = [_profile(g) for _, g in requests]
    for i, gpu in enumerate(gpus):
        groups[(select_model(gpu.id, role)[0], gpu.id)].append(i)
    out: list[PowerPrediction | None] = [None] * len(requests)
    for (model_id, _), idx in groups.items():
        gpu = gpus[idx[0]]
        model = load_model(model_id)
        table = feature_table([requests[i][0] for i in idx], gpu, model)
        if explain:
            watts, base, contrib = model.evaluate(table)
        else:
            watts, base, contrib = model.predict(table), np.zeros(len(idx)), {}
        interval = _interval_for(model, gpu.id)
        lo, hi = interval.apply(watts, gpu.idle_w, gpu.tdp_w) if interval else (watts * np.nan, watts * np.nan)
        trained = "+".join(f"{t['dataset']}({t['gpu']})" for t in model.metadata.get("trained_on", []))
        for j, i in enumerate(idx):
            w = float(np.clip(watts[j], gpu.idle_w, gpu.tdp_w))
            pred = PowerPrediction(watts=w, interval=(float(lo[j]), float(hi[j])), model=f"{model.recipe}@{gpu.id}",
                                   trained_on=trained, assumptions=_assumptions(gpu, model),
                                   features=dict(requests[i][0]), gpu=gpu.id, base_watts=float(base[j]),
                                   explained=explain)
            if w != float(watts[j]):
                pred.assumptions.append(f"the model's {float(watts[j]):.0f} W was clipped to [idle, TDP]")
            if explain:
                pred.explanation = _explanation(model, table, contrib, j, lime)
            out[i] = pred
    return [p for p in out if p is not None]


def explanation_of(features: dict[str, float], gpu, lime: bool) -> tuple[float, list[Contribution]]:
    """(base W, top contributions) of one kernel's prediction, worked out on their own: for a prediction made
    without them (`predict_powers(..., explain=False)`), when a hover asks."""
    model, _, table, _ = feature_row(features, gpu)
    _, base, contrib = model.evaluate(table)
    return float(base[0]), _explanation(model, table, contrib, 0, lime)


def _explanation(model: PowerModel, table: dict[str, np.ndarray], contrib: dict[str, np.ndarray], row: int,
                 lime: bool) -> list[Contribution]:
    """The top contributions of one row; LIME's weights only when asked for (it loads the lime package)."""
    order = sorted(contrib, key=lambda f: -abs(float(contrib[f][row])))[:TOP_CONTRIBUTIONS]
    lw: dict[str, float] = {}
    if lime:
        lw = lime_contributions(model, {k: v[row:row + 1] for k, v in table.items()})
    return [Contribution(feature=f, name=feature_name(f), value=float(table[f][row]) if f in table else float("nan"),
                         watts=float(contrib[f][row]), lime_watts=lw.get(f)) for f in order]


def predict_power(features: dict[str, float], gpu, explain: bool = True, role: str = "default",
                  lime: bool = True) -> PowerPrediction:
    """Average power (W) of one kernel from its Table 5.4 features (dataset definition) on `gpu`."""
    return predict_powers([(features, gpu)], explain=explain, role=role, lime=lime)[0]


def feature_name(feature: str) -> str:
    return NAMES.get(feature, feature.replace("_", " "))
