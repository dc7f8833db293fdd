"""Train the shipped power models and write them, with their metadata, into a models directory.

Shipped: for each thesis GPU with its own dataset (K20 from `k20_larger`, M60, V100) the `thesis` XGBoost and
the default model; the default for V100 is the pooled model, which also serves every GPU without a dataset (on
its own TDP and idle power). Each model's 90% interval (intervals.py) is calibrated by a grouped CV over its
training benchmarks, so on benchmarks it has not seen. `index.json` maps GPU ids to model ids.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np
import sklearn
import xgboost
from kerncast.analysis.power.blend import PowerModel
from kerncast.analysis.power.dataset import PowerDataset
from kerncast.analysis.power.engineered import NAMES
from kerncast.analysis.power.evaluate import grouped_oof, metrics
from kerncast.analysis.power.fitting import feature_table, fit_model
from kerncast.analysis.power.intervals import PowerInterval, calibrate
from kerncast.analysis.power.recipes import POOLED, SEED, THESIS, Recipe, default_recipe

#: Dataset that trains each GPU's own models (k20_smaller duplicates most of k20_larger, data/power/README.md).
SHIPPED = {"k20": "k20_larger", "m60": "maxwell_m60", "v100": "v100"}
POOLED_ID = "gam+rf-pooled"
DEFINITION = "dataset"  # features as the published CSVs computed them (docs/power-features.md)


def models_dir() -> Path:
    """The package's models directory (where shipped artifacts live)."""
    return Path(__file__).resolve().parent / "shipped"


def _versions() -> dict[str, str]:
    return {"python": platform.python_version(), "numpy": np.__version__, "xgboost": xgboost.__version__,
            "scikit-learn (CV splits only)": sklearn.__version__}


def _rows(recipe: Recipe, ds: PowerDataset) -> PowerDataset:
    return ds.subset(ds.clean) if recipe.clean_rows else ds


def _calibrate(recipe: Recipe, ds: PowerDataset, pool: list[PowerDataset],
               n_jobs: int) -> tuple[PowerInterval, dict]:
    rows = _rows(recipe, ds)
    p = grouped_oof(recipe, rows, pool, seed=SEED, folds=5, n_jobs=n_jobs)
    m = metrics(rows.power, p)
    d = rows.descriptor
    return calibrate(rows.power, p, rows.group, d["idle_w"], d["tdp_w"]), {"grouped_5fold_oof": m}


def _metadata(recipe: Recipe, trained_on: list[PowerDataset], model: PowerModel, extra: dict) -> dict:
    return {
        "recipe": recipe.name, "target": recipe.target, "definition": DEFINITION,
        "features": list(model.features), "feature_names": {f: NAMES.get(f, f) for f in model.features},
        "trained_on": [{"dataset": s.name, "gpu": s.descriptor["gpu"], "rows": s.rows,
                        "benchmarks": int(len(np.unique(s.group))), "sm_count": s.descriptor["sm_count"],
                        "tdp_w": s.descriptor["tdp_w"], "idle_w": s.descriptor["idle_w"],
                        "floor_w": s.descriptor["floor_w"]} for s in trained_on],
        "seed": SEED, "versions": _versions(),
        "interval_method": "90% normalised conformal on the dynamic power, grouped CV, clipped to [idle, TDP]",
        **extra,
    }


def _background(sets: list[PowerDataset], features: tuple[str, ...], k: int = 300) -> list[list[float]]:
    """A fixed sample of training feature rows, for LIME's sampling statistics at prediction time."""
    tables = [feature_table(s) for s in sets]
    X = np.vstack([np.column_stack([t[f] for f in features]) for t in tables])
    rng = np.random.default_rng(SEED)
    idx = rng.choice(X.shape[0], size=min(k, X.shape[0]), replace=False)
    return [[None if not np.isfinite(v) else float(v) for v in row] for row in X[np.sort(idx)]]


def train_all(datasets: dict[str, PowerDataset], out: Path, n_jobs: int = 1, log=print) -> dict:
    """Train every shipped model from `datasets` (keyed by file stem) into `out`; return the index."""
    missing = [s for s in SHIPPED.values() if s not in datasets]
    if missing:
        raise ValueError(f"cannot train the shipped models without dataset(s): {', '.join(missing)}")
    pool = [d for d in datasets.values() if d.descriptor.get("pooled")]
    index: dict = {"definition": DEFINITION, "gpus": {}, "pooled": POOLED_ID}
    for gpu, stem in SHIPPED.items():
        ds = datasets[stem]
        entry = {"dataset": stem}
        for role, recipe in (("thesis", THESIS), ("default", default_recipe(stem))):
            if recipe.pooled:
                entry[role] = POOLED_ID
                continue
            model_id = f"{recipe.name}@{gpu}"
            log(f"training {model_id} on {stem}")
            interval, cal = _calibrate(recipe, ds, pool, n_jobs)
            rows = _rows(recipe, ds)
            model = fit_model(recipe, [rows], n_jobs=n_jobs)
            model.interval_model = interval
            model.metadata = _metadata(recipe, [rows], model, {"calibration": cal,
                                                                "lime_background": _background([rows], model.features)})
            model.save(out, model_id)
            entry[role] = model_id
        index["gpus"][gpu] = entry
    # pooled model: one interval per pooled GPU (that GPU's benchmarks held out); the widest serves unseen GPUs
    log(f"training {POOLED_ID} on {', '.join(d.name for d in pool)}")
    per = {}
    for ds in pool:
        per[ds.name] = _calibrate(POOLED, ds, pool, n_jobs)
    rows = [d.subset(d.clean) for d in pool]
    model = fit_model(POOLED, rows, n_jobs=n_jobs)
    model.interval_model = max((iv for iv, _ in per.values()), key=lambda iv: iv.hi - iv.lo)
    model.metadata = _metadata(POOLED, rows, model, {
        "calibration": {k: {"interval": iv.to_json(), **c} for k, (iv, c) in per.items()},
        "interval_by_gpu": {data.descriptor["gpu"]: per[data.name][0].to_json() for data in pool},
        "lime_background": _background(rows, model.features)})
    model.save(out, POOLED_ID)
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return index
