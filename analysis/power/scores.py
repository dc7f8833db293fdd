"""The `kerncast power evaluate` result: per dataset, thesis model vs default model, shuffled vs grouped."""

from __future__ import annotations

from kerncast.analysis.power.dataset import PowerDataset
from kerncast.analysis.power.evaluate import grouped_cv, shuffled_cv
from kerncast.analysis.power.recipes import THESIS, default_recipe

SHUFFLED_REPEATS = 2  # shuffled KFold(5), 2 repetitions: enough to reproduce the thesis's scores (docs/power-model.md)
THESIS_INNER_FOLDS = 3  # inner grouped folds for the thesis model's interval (500-tree fits are the slow part)
DEFAULT_INNER_FOLDS = 4


def _model_block(recipe, ds, pool, grouped_reps, inner, n_jobs) -> dict:
    g = grouped_cv(recipe, ds, pool, grouped_reps, coverage_reps=1, inner_folds=inner, n_jobs=n_jobs)
    s = shuffled_cv(recipe, ds, pool, SHUFFLED_REPEATS, n_jobs=n_jobs)
    keys = ("r2", "rmse", "mae", "mape")
    return {"model": recipe.name, "rows": g["rows"],
            "shuffled": {k: s[k] for k in keys},
            "grouped": {**{k: g[k] for k in keys}, "coverage": g["coverage"], "r2_sd": g["r2_sd"],
                        "repetitions": g["repetitions"], "width_share_median": g["width_share_median"],
                        "lower_minus_idle_min_w": g["lower_minus_idle_min_w"], "idle_w": g["idle_w"],
                        "tdp_w": g["tdp_w"]}}


def evaluate_all(data: dict[str, PowerDataset], names: list[str], repeats: int = 5, thesis_repeats: int = 3,
                 n_jobs: int = 1) -> dict:
    """`{stem: {"rows", "benchmarks", "thesis": M, "default": M}}` (M as in `_model_block`).

    Per model, `grouped` holds the unseen-benchmark scores, the coverage of the 90% interval, its median width
    as a share of the GPU's (TDP - idle) and the lowest lower bound minus idle (never negative: clipped).
    """
    pool = [d for d in data.values() if d.descriptor.get("pooled")]
    out = {}
    for name in names:
        ds = data[name]
        out[name] = {
            "rows": ds.rows, "benchmarks": int(len(set(ds.group.tolist()))), "gpu": ds.descriptor["gpu"],
            "thesis": _model_block(THESIS, ds, pool, thesis_repeats, THESIS_INNER_FOLDS, n_jobs),
            "default": _model_block(default_recipe(name), ds, pool, repeats, DEFAULT_INNER_FOLDS, n_jobs),
        }
    return out


def format_text(result: dict) -> str:
    """A plain table: one line per dataset and model."""
    head = (f"{'dataset':24} {'model':16} {'rows':>5}  {'shuf R2':>7} {'grp R2':>7} {'grp RMSE':>8} "
            f"{'grp MAPE':>8} {'cover':>6} {'width':>6}")
    lines = [head, "-" * len(head)]
    for name, r in result.items():
        for role in ("thesis", "default"):
            m = r[role]
            lines.append(f"{name:24} {m['model']:16} {m['rows']:5d}  {m['shuffled']['r2']:7.3f} "
                         f"{m['grouped']['r2']:7.3f} {m['grouped']['rmse']:8.2f} {m['grouped']['mape']:8.1f} "
                         f"{m['grouped']['coverage']:6.2f} {m['grouped']['width_share_median']:6.2f}")
    return "\n".join(lines)
