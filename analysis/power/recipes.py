"""Power-model recipes: which learners, on which features, trained on which rows, with which target.

The `thesis` recipe is the chapter-5 XGBoost (Table 5.7 hyperparameters) on the 15 published features, kept to
reproduce the thesis. The default recipes come from docs/power-model.md (sections 3, 6 and 8), where 52
approaches were compared under grouped CV:

* `gam`: the clipped spline-GAM on the 31 engineered features (section 8, "shipped candidate");
* `gam-a30`: the same GAM with ridge alpha 30, the M60 winner of section 8;
* `gam+rf`: the GAM GAM averaged with a random forest (min 20 rows per leaf, half the features per split) on the
  same features (section 3.1, "rf leaf20 ENG" is the best single model on K20 larger);
* `pooled`: GAM on engineered features plus the forest on launch + memory-intensity features, both with GPU
  descriptors and the target (P - idle)/(TDP - idle), trained on all thesis GPUs (sections 3.1 "blend
  gamENGclip100+rfLAUNCH+MEMX" and 6: pooling helps the GPU with the fewest benchmarks and is the only option
  for a GPU with no measurements).

Which default each dataset uses is fixed in `DEFAULT_RECIPE`; it was chosen by grouped CV among these four, so
its grouped score is optimistic by roughly one repetition sd (docs/power-model.md s1, winner's curse).
"""

from __future__ import annotations

from dataclasses import dataclass

from kerncast.analysis.power.engineered import DESC, ENG, LAUNCH

MEMX = ("fd_glob", "fd_comp", "l_dyn_thread", "l_work")  # docs/power-model.md s1.1

#: Table 5.7 of the thesis (XGBoost): 500 trees, depth 6, learning rate 0.05, min child weight 1, subsample and
#: column sample 0.7; tree_method hist (docs/power-model.md s1.2).
THESIS_XGB_PARAMS = {
    "n_estimators": 500, "max_depth": 6, "learning_rate": 0.05, "min_child_weight": 1,
    "subsample": 0.7, "colsample_bytree": 0.7, "tree_method": "hist",
}
#: Random forest of docs/power-model.md s1.2 ("rf leaf20": 150 trees, min_samples_leaf 20,
#: max_features 0.5), expressed as an XGBoost random forest so that it ships as XGBoost JSON/UBJ and has exact
#: TreeSHAP: min_child_weight 20 = 20 rows per leaf for squared error; row subsample 0.632 = the share of
#: distinct rows in a bootstrap sample; depth capped at 12 to bound the model size.
RF_PARAMS = {
    "n_estimators": 150, "max_depth": 12, "min_child_weight": 20, "colsample_bynode": 0.5, "subsample": 0.632,
    "learning_rate": 1.0, "reg_lambda": 0.0, "tree_method": "hist",
}
GAM_ALPHA = 100.0  # docs/power-model.md s8
GAM_ALPHA_M60 = 30.0  # docs/power-model.md s8, M60 row: "gam ENG alpha = 30" is the M60 best
SEED = 0


@dataclass(frozen=True)
class Member:
    """One learner of a blend: kind is 'gam', 'rf' or 'xgb-thesis'; features by name ('thesis' = the 15)."""

    kind: str
    features: tuple[str, ...] | str
    weight: float = 1.0
    alpha: float = GAM_ALPHA  # ridge penalty of a 'gam' member


@dataclass(frozen=True)
class Recipe:
    name: str
    members: tuple[Member, ...]
    pooled: bool = False  # train on every pooled thesis dataset, with GPU descriptors
    target: str = "raw"  # 'raw' W or 'norm' = (P - idle)/(TDP - idle)
    clean_rows: bool = True  # train/validate on cleaned rows (the thesis recipe keeps the published rows)


THESIS = Recipe("xgboost-thesis", (Member("xgb-thesis", "thesis"),), clean_rows=False)
GAM = Recipe("gam", (Member("gam", ENG),))
GAM_RF = Recipe("gam+rf", (Member("gam", ENG, 0.5), Member("rf", ENG, 0.5)))
POOLED = Recipe("gam+rf-pooled", (Member("gam", ENG + DESC, 0.5), Member("rf", LAUNCH + MEMX + DESC, 0.5)),
                pooled=True, target="norm")
GAM30 = Recipe("gam-a30", (Member("gam", ENG, 1.0, GAM_ALPHA_M60),))
RECIPES = {r.name: r for r in (THESIS, GAM, GAM30, GAM_RF, POOLED)}

#: Default recipe per dataset (file stem); anything else uses GAM.
DEFAULT_RECIPE = {
    "k20_larger": GAM_RF, "k20_smaller": GAM_RF, "maxwell_m60": GAM30, "v100": POOLED,
}


def default_recipe(dataset: str) -> Recipe:
    return DEFAULT_RECIPE.get(dataset, GAM)
