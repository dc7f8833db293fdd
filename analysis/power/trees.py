"""A tree ensemble evaluated with numpy: predictions and exact per-feature contributions (TreeSHAP).

Why not XGBoost at run time: importing it (with scikit-learn and SciPy behind it) takes longer than analysing a
whole file, and a file's kernels are a batch of a few rows. The shipped `.ubj` model files (saved by
`kerncast power train` through XGBoost) are read here directly (ubjson.py): per tree the split feature,
threshold, children, default direction for missing values, leaf values and node covers (hessian sums), plus the
model's base score. Only regression trees with an identity link (`reg:squarederror`) and numeric splits are
accepted; anything else is refused with a clear message, never guessed.

Each leaf is kept as its root-to-leaf path. A row reaches a leaf when it takes every split of the path (x < t goes
left, a missing value goes the default way), so a prediction is the base score plus, per leaf, its value times
the product of the path's step indicators. Contributions are the path-dependent TreeSHAP values of Lundberg,
Erion and Lee (2018): for a leaf whose path splits on the distinct features P (|P| = d), let o_j be 1 when the
row takes every split on feature j along the path (else 0) and z_j the product of the cover ratios
child/parent of those splits (the share of training rows that went that way). The leaf's value v is then the
game f(S) = v * prod_{j in S} o_j * prod_{j in P minus S} z_j over the path's features, whose Shapley value is

    phi_i = v * (o_i - z_i) * sum_k w(k, d) * e_k,    w(k, d) = k! (d - 1 - k)! / d!,

with e_k the coefficient of t^k in prod_{j in P, j != i} (z_j + o_j t). The base value is sum_L v * prod z_j, the
cover-weighted mean of each tree. Everything is computed for all rows and all leaves of the ensemble at once;
the polynomial excluding feature i is obtained by dividing the full product by (z_i + o_i t), which is exact
because o_i is 0 or 1 and z_i > 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np
from kerncast.analysis.power.ubjson import loads

#: rows x leaves x path slots evaluated at once (bounds the working memory to tens of MB)
CHUNK_CELLS = 1_500_000


class UnsupportedModel(ValueError):
    """A tree model this evaluator cannot reproduce exactly (objective, split type or layout)."""


@dataclass(frozen=True)
class _PathGroup:
    """The leaves whose paths split on the same number d of distinct features, as (slot, leaf) arrays.

    Grouping by d means no padding: the work per leaf is d^2, not (longest path)^2, and w(k, d) is shared."""

    value: np.ndarray    # (L,) leaf values
    feature: np.ndarray  # (d, L) the distinct features of each path
    lo: np.ndarray       # (d, L) float32: the path's splits on the feature hold for lo <= x < hi ...
    hi: np.ndarray       # (d, L) float32 (+inf: no upper bound)
    nan_ok: np.ndarray   # (d, L) ... and for a missing x when every one of them sends missing values its way
    open_hi: np.ndarray  # (d, L) no split sends the path left: no upper bound (x = +inf included)
    zero: np.ndarray     # (d, L) product of the cover ratios of the feature's splits on the path (z_j)
    weights: np.ndarray  # (d,) w(k, d)
    unwind: np.ndarray   # (d, d + 1, L) c_m(z_i): sum_k w_k e_k^(-i) = sum_m c_m p_m when o_i = 1

    @property
    def d(self) -> int:
        return self.feature.shape[0]

    def taken(self, X: np.ndarray) -> np.ndarray:
        """(d, n, L) 1.0 where the row takes every split of the path on the slot's feature (o_j).

        The splits of one path on one feature bound it to an interval, so o_j is one interval test: no walk."""
        x = X[:, self.feature].transpose(1, 0, 2)  # (d, n, L)
        lo, hi = self.lo[:, None, :], self.hi[:, None, :]
        inside = (x >= lo) & ((x < hi) | self.open_hi[:, None, :])
        missing = np.isnan(x)
        if missing.any():
            inside = np.where(missing, self.nan_ok[:, None, :], inside)
        return inside.astype(float)

    def contributions(self, X: np.ndarray, n_features: int) -> np.ndarray:
        """(n, k) contributions of this group's leaves; arrays are laid out (slot or degree, row, leaf) so that
        every step of the loops works on contiguous (row, leaf) planes."""
        n, d, L = X.shape[0], self.d, self.value.size
        one, zero = self.taken(X), self.zero
        full = np.zeros((d + 1, n, L))  # prod_j (z_j + o_j t), coefficients of t^0..t^d
        full[0] = 1.0
        for j in range(d):  # multiply by (z_j + o_j t): degrees 1..j+1 at once (the right side is read first)
            full[1:j + 2] = full[1:j + 2] * zero[j] + full[:j + 1] * one[j]
            full[0] *= zero[j]
        taken = np.einsum("mnl,iml->inl", full, self.unwind)  # o_i = 1: divide by (z_i + t)
        # o_i = 0: divide by z_i (a zero z_i with o_i = 0 contributes (o_i - z_i) = 0, whatever is divided)
        missed = np.einsum("mnl,m->nl", full[:d], self.weights)[None] / np.where(zero > 0, zero, 1.0)[:, None, :]
        phi = np.where(one > 0, taken, missed)
        phi *= (one - zero[:, None, :]) * self.value
        index = (np.arange(n)[None, :, None] * n_features + self.feature[:, None, :]).ravel()
        return np.bincount(index, weights=phi.ravel(), minlength=n * n_features).reshape(n, n_features)


@dataclass(frozen=True)
class TreeEnsemble:
    """The trees (for predictions) and every leaf as its root-to-leaf path, grouped by path length (for
    contributions)."""

    n_features: int
    base_score: float
    nodes: _Nodes                  # the trees themselves, for predictions by walking them
    groups: tuple[_PathGroup, ...]  # leaves of paths with 1, 2, ... distinct features (none: no contribution)
    expected: float                # base score + every tree's cover-weighted mean: the contributions' base value

    # -- reading -------------------------------------------------------------------------------------
    @classmethod
    def from_ubj(cls, raw: bytes) -> TreeEnsemble:
        """The ensemble of an XGBoost model saved as UBJSON (`Booster.save_model('x.ubj')`)."""
        doc = loads(raw)
        try:
            learner = doc["learner"]
            objective = learner["objective"]["name"]
            param = learner["learner_model_param"]
            booster = learner["gradient_booster"]
            trees = booster["model"]["trees"]
        except (KeyError, TypeError):
            raise UnsupportedModel("not an XGBoost model document") from None
        if objective != "reg:squarederror":
            raise UnsupportedModel(f"objective {objective} is not supported (only reg:squarederror)")
        if booster.get("name") != "gbtree":
            raise UnsupportedModel(f"booster {booster.get('name')} is not supported (only gbtree)")
        if int(param.get("num_target", "1")) != 1 or int(param.get("num_class", "0")) > 1:
            raise UnsupportedModel("only single-output models are supported")
        base = float(np.float32(str(param["base_score"]).strip("[]")))
        return cls._from_nodes(int(param["num_feature"]), base, _Nodes.concat(trees))

    @classmethod
    def _from_nodes(cls, n_features: int, base: float, nodes: _Nodes) -> TreeEnsemble:
        """Walk every leaf up to its root (all leaves at once) and group each path's splits by feature."""
        leaves = np.flatnonzero(nodes.left < 0)
        L = leaves.size
        steps: list[tuple[np.ndarray, ...]] = []
        cur = leaves
        while True:
            parent = nodes.parent[cur]
            valid = parent >= 0
            if not valid.any():
                break
            p = np.where(valid, parent, 0)
            ratio = np.divide(nodes.cover[cur], nodes.cover[p], out=np.zeros(L), where=nodes.cover[p] > 0)
            steps.append((nodes.feature[p], nodes.cond[p], nodes.left[p] == cur, nodes.default_left[p],
                          np.where(valid, ratio, 1.0), valid))
            cur = np.where(valid, parent, cur)
        if not steps:  # every tree is a single leaf
            steps.append((np.zeros(L, np.int64), np.zeros(L, np.float32), np.zeros(L, bool), np.zeros(L, bool),
                          np.ones(L), np.zeros(L, bool)))
        sf, st, sl, sd, ratio, sv = (np.stack(col, axis=1) for col in zip(*steps, strict=True))
        # distinct features of each path: sort each row's features (padding last), number the runs
        key = np.where(sv, sf, n_features)
        order = np.argsort(key, axis=1, kind="stable")
        ordered = np.take_along_axis(key, order, axis=1)
        new = np.ones_like(ordered, dtype=bool)
        new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        slot_sorted = np.cumsum(new, axis=1) - 1
        ss = np.empty_like(slot_sorted)
        np.put_along_axis(ss, order, slot_sorted, axis=1)
        d = np.where(ordered < n_features, new, False).sum(axis=1)
        D = max(1, int(d.max()))
        rows = np.arange(L)
        slot_f = np.zeros((L, D), np.int64)
        slot_z = np.ones((L, D))
        lo = np.full((L, D), -np.inf, np.float32)
        hi = np.full((L, D), np.inf, np.float32)
        nan_ok = np.ones((L, D), bool)
        for s in range(sf.shape[1]):  # x < t goes left: left steps bound x from above, right steps from below
            ok = sv[:, s]
            r, k = rows[ok], ss[ok, s]
            slot_f[r, k] = sf[ok, s]
            slot_z[r, k] *= ratio[ok, s]
            t = st[ok, s].astype(np.float32)
            hi[r, k] = np.where(sl[ok, s], np.minimum(hi[r, k], t), hi[r, k])
            lo[r, k] = np.where(sl[ok, s], lo[r, k], np.maximum(lo[r, k], t))
            nan_ok[r, k] &= sd[ok, s] == sl[ok, s]
        value = nodes.cond[leaves].astype(float)
        groups = []
        for n in range(1, D + 1):
            sel = d == n
            if not sel.any():
                continue
            z = np.ascontiguousarray(slot_z[sel, :n].T)
            w = np.array([factorial(k) * factorial(n - 1 - k) / factorial(n) for k in range(n)])
            h = np.ascontiguousarray(hi[sel, :n].T)
            groups.append(_PathGroup(value[sel], np.ascontiguousarray(slot_f[sel, :n].T),
                                     np.ascontiguousarray(lo[sel, :n].T), h, np.ascontiguousarray(nan_ok[sel, :n].T),
                                     np.isposinf(h), z, w, _unwind_weights(w, z)))
        return cls(n_features, base, nodes, tuple(groups), base + float(np.sum(value * slot_z.prod(axis=1))))

    # -- evaluation ----------------------------------------------------------------------------------
    def _check(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected an (n, {self.n_features}) feature matrix, got shape {X.shape}")
        return X

    def _chunks(self, n: int):
        cells = sum(g.feature.size * (g.d + 1) for g in self.groups)
        size = max(1, CHUNK_CELLS // max(1, cells))
        return [slice(a, min(n, a + size)) for a in range(0, n, size)]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The model's output (identity link) for every row of X."""
        X = self._check(X)
        nd = self.nodes
        node = np.broadcast_to(nd.roots, (X.shape[0], nd.roots.size)).copy()  # (n, trees)
        rows = np.arange(X.shape[0])[:, None]
        while True:
            inner = nd.left[node] >= 0
            if not inner.any():
                break
            x = X[rows, nd.feature[node]]
            goes_left = np.where(np.isnan(x), nd.default_left[node], x < nd.cond[node])
            node = np.where(inner, np.where(goes_left, nd.left[node], nd.right[node]), node)
        return self.base_score + nd.cond[node].sum(axis=1, dtype=float)

    def contributions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(base per row, (n, k) exact TreeSHAP contributions); base + row sum equals `predict`."""
        X = self._check(X)
        n = X.shape[0]
        phi = np.zeros((n, self.n_features))
        for part in self._chunks(n):
            phi[part] = self._contributions(X[part])
        return np.full(n, self.expected), phi

    def _contributions(self, X: np.ndarray) -> np.ndarray:
        phi = np.zeros((X.shape[0], self.n_features))
        for group in self.groups:
            phi += group.contributions(X, self.n_features)
        return phi


def _unwind_weights(weights: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """c[i, m, l] with sum_k w_k q_k = sum_m c_m p_m, where q = p / (z_i + t) (slot i of leaf l).

    Dividing p by (z + t) gives q_k = sum_{m > k} p_m (-z)^(m-k-1), hence c_0 = 0 and c_{m+1} = w_m - z c_m.
    These depend on the leaf only, so they are computed once when the model is read.
    """
    d, L = zero.shape
    out = np.zeros((d, d + 1, L))
    for m in range(d):
        out[:, m + 1] = weights[m] - zero * out[:, m]
    return out


@dataclass(frozen=True)
class _Nodes:
    """The nodes of all trees of an ensemble in one numbering (children and parents as global indices)."""

    roots: np.ndarray
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    feature: np.ndarray
    cond: np.ndarray
    default_left: np.ndarray
    cover: np.ndarray

    @classmethod
    def concat(cls, trees: list[dict]) -> _Nodes:
        cols: dict[str, list[np.ndarray]] = {k: [] for k in ("left", "right", "feature", "cond", "dl", "cover")}
        offset, roots = 0, []
        for tree in trees:
            if np.any(np.asarray(tree.get("split_type", [])) != 0) or \
                    int(tree.get("tree_param", {}).get("size_leaf_vector", 1)) > 1:
                raise UnsupportedModel("categorical splits and vector leaves are not supported")
            left, right = np.asarray(tree["left_children"], np.int64), np.asarray(tree["right_children"], np.int64)
            cols["left"].append(np.where(left >= 0, left + offset, -1))
            cols["right"].append(np.where(right >= 0, right + offset, -1))
            cols["feature"].append(np.asarray(tree["split_indices"], np.int64))
            cols["cond"].append(np.asarray(tree["split_conditions"], np.float32))
            cols["dl"].append(np.asarray(tree["default_left"]).astype(bool))
            cols["cover"].append(np.asarray(tree["sum_hessian"], float))
            roots.append(offset)
            offset += left.size
        left, right = np.concatenate(cols["left"]), np.concatenate(cols["right"])
        parent = np.full(left.size, -1, np.int64)
        inner = np.flatnonzero(left >= 0)
        parent[left[inner]] = inner
        parent[right[inner]] = inner
        return cls(np.array(roots, np.int64), left, right, parent, np.concatenate(cols["feature"]),
                   np.concatenate(cols["cond"]), np.concatenate(cols["dl"]), np.concatenate(cols["cover"]))
