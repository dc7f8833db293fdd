"""Explanations of a power prediction: exact contributions and LIME, per feature, in watts.

Exact contributions come from the model itself (TreeSHAP for tree members through XGBoost's
`pred_contribs=True`, the additive terms for the GAM); they sum with the base value to the prediction. LIME (the
`lime` package's tabular regression explainer, as the thesis tool used) fits a local linear model on perturbed
samples drawn with the training data's statistics; its weight times the instance's standardised value gives a
contribution in watts relative to the training mean, comparable in sign with the exact one. LIME's sampler is
seeded, so an explanation is deterministic for a given input.
"""

from __future__ import annotations

import numpy as np
from kerncast.analysis.power.blend import PowerModel

LIME_SEED = 0
LIME_SAMPLES = 2000  # perturbed samples per explanation (lime's default is 5000; 2000 keeps a hover fast)


def _background(model: PowerModel) -> np.ndarray:
    rows = model.metadata.get("lime_background")
    if not rows:
        raise ValueError("the model carries no training sample for LIME")
    X = np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float)
    med = np.nanmedian(np.where(np.isfinite(X), X, np.nan), axis=0)
    return np.where(np.isfinite(X), X, np.nan_to_num(med))


def lime_contributions(model: PowerModel, table: dict[str, np.ndarray], seed: int = LIME_SEED,
                       samples: int = LIME_SAMPLES) -> dict[str, float]:
    """LIME contribution (W) of every model feature for the one-row `table`."""
    from lime.lime_tabular import LimeTabularExplainer  # lazy import: heavy, optional, on demand

    feats = list(model.features)
    bg = _background(model)
    row = np.array([float(table[f][0]) if f in table else np.nan for f in feats])
    row = np.where(np.isfinite(row), row, np.median(bg, axis=0))
    const = {k: v for k, v in table.items() if k not in feats}

    def predict(X: np.ndarray) -> np.ndarray:
        t = {f: X[:, j] for j, f in enumerate(feats)}
        t.update({k: np.repeat(v[:1], X.shape[0]) for k, v in const.items()})
        return model.predict(t)

    explainer = LimeTabularExplainer(bg, mode="regression", feature_names=feats, discretize_continuous=False,
                                     sample_around_instance=True, random_state=seed)
    exp = explainer.explain_instance(row, predict, num_features=len(feats), num_samples=samples)
    weights = dict(exp.local_exp[1])  # regression: label 1 is the prediction (label 0 holds its negation)
    z = exp.domain_mapper.scaled_row  # the instance as LIME's linear model saw it: (x - mean) / std
    return {f: float(weights.get(j, 0.0) * z[j]) for j, f in enumerate(feats)}
