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

That costs d^2 per leaf and row. At run time the same values come from tables made when the model is read: with
A the features whose o_j is 1, the game above gives phi_i = -T(A) for every i outside A and
phi_i = (1 - z_i) / z_i * T(A minus i) for every i in A, where T(A) = v * F(A) * prod_{j in P minus A} z_j and
F(A) = sum_k w(k, d) * e_k(prod_{j in A} (z_j + t)) depend on the leaf alone. One 2^d table per leaf turns a
row's work into one lookup per path feature (`_SubsetTables`); leaves with longer paths (or a zero cover ratio)
keep the polynomial evaluation, which also stays available as the reference (`table_max_features=0`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np
from kerncast.analysis.power.ubjson import loads

#: rows x leaves x path slots evaluated at once (bounds the working memory to tens of MB)
CHUNK_CELLS = 1_500_000
#: leaves whose paths split on more distinct features keep the polynomial evaluation (a table has 2^d entries)
TABLE_MAX_FEATURES = 12
#: slots evaluated at once by the tables (one row of the shipped models: its arrays stay in the CPU cache)
TABLE_ROW_CELLS = 100_000
#: (subset, leaf) cells of the tables built at once (a few MB)
TABLE_BUILD_CELLS = 200_000


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

    def evaluate(self, X: np.ndarray, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """(value of the reached leaves per row, (n, k) contributions of this group's leaves); arrays are laid
        out (slot or degree, row, leaf) so that every step of the loops works on contiguous (row, leaf) planes."""
        n, d, L = X.shape[0], self.d, self.value.size
        one, zero = self.taken(X), self.zero
        reached = one.all(axis=0) @ self.value
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
        return reached, np.bincount(index, weights=phi.ravel(), minlength=n * n_features).reshape(n, n_features)


@dataclass(frozen=True)
class _SubsetTables:
    """Leaves with short paths, each leaf's game tabulated for every subset A of its path's features.

    A slot is one (leaf, distinct path feature). Slots are laid out by slot position: the leaves are sorted by
    path length, longest first, so the slots at position s of every leaf that has one form one contiguous run
    of `runs[s]` entries that lines up with the first leaves. A leaf's subset mask is then the sum of the runs'
    leading parts and every slot's mask a concatenation of prefixes: a row costs a few passes over the slots and
    no loop over leaves or trees."""

    runs: tuple[int, ...]   # leaves that have slot position s, for s = 0, 1, ... (non-increasing)
    feature: np.ndarray     # (S,) the slot's feature
    lo: np.ndarray          # (S,) float32: the path's splits on the feature hold for lo <= x <= hi ...
    hi: np.ndarray          # (S,) float32 (the largest float32 below the tightest left split; +inf: none)
    nan_ok: np.ndarray      # (S,) ... and for a missing x when every one of them sends missing values its way
    bit: np.ndarray         # (S,) int64 1 << s: the slot's bit in its leaf's subset mask (int64 like the
    others: np.ndarray      # (S,) every other bit                          offsets: no conversion per row)
    offset: np.ndarray      # (S,) where the table of the slot's leaf starts
    inv_zero: np.ndarray    # (S,) 1 / z of the slot: (1 - z) / z = 1 / z - 1
    table: np.ndarray       # T(A) of every leaf (2^d entries each, indexed by the subset mask)
    value: np.ndarray       # (L,) leaf values ...
    full: np.ndarray        # (L,) int64 ... reached when the row's subset mask is the full one
    by_feature: np.ndarray  # (S,) the slots ordered by feature ...
    starts: np.ndarray      # ... where each feature's run starts in that order ...
    features: np.ndarray    # ... and which feature it is
    #: `bit`, `others` and `full` as uint16 (a mask has at most 16 bits): a quarter of the int64 arrays'
    #: memory traffic for the masks, the same integers
    bit16: np.ndarray
    others16: np.ndarray
    full16: np.ndarray

    @classmethod
    def build(cls, d: np.ndarray, feature: np.ndarray, zero: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              nan_ok: np.ndarray, value: np.ndarray) -> _SubsetTables:
        """From per-leaf (L, D) slot arrays (first d[l] slots valid), leaves in any order."""
        order = np.argsort(-d, kind="stable")
        d, feature, zero, lo, hi = d[order], feature[order], zero[order], lo[order], hi[order]
        nan_ok, value = nan_ok[order], value[order]
        runs = tuple(int(np.count_nonzero(d > s)) for s in range(int(d.max())))
        pick = lambda a: np.concatenate([a[:r, s] for s, r in enumerate(runs)])  # noqa: E731 - slot-major
        size = np.left_shift(1, d)
        start = np.concatenate([[0], np.cumsum(size)[:-1]])
        tables = np.empty(int(size.sum()))
        for n in sorted(set(d.tolist())):  # the leaves of one path length are contiguous, and so are their tables
            first, count = int(np.argmax(d == n)), int(np.count_nonzero(d == n))
            t = _subset_table(np.ascontiguousarray(zero[first:first + count, :n].T), value[first:first + count])
            tables[start[first]:start[first] + count * (1 << int(n))] = t.T.ravel()
        hi_in = np.where(np.isposinf(hi), np.float32(np.inf), np.nextafter(hi, np.float32(-np.inf)))
        hi_in = np.where(np.isneginf(hi), np.float32(np.nan), hi_in)  # x < -inf holds for no x
        bit = np.concatenate([np.full(r, 1 << s, np.int64) for s, r in enumerate(runs)])
        feat = pick(feature)
        by_feature = np.argsort(feat, kind="stable")
        features, starts = _runs(feat[by_feature])
        full = (size - 1).astype(np.int64)
        return cls(runs, feat, pick(lo), pick(hi_in).astype(np.float32), pick(nan_ok), bit, ~bit,
                   np.concatenate([start[:r] for r in runs]), 1.0 / pick(zero), tables, value,
                   full, by_feature, starts, features, bit.astype(np.uint16), (~bit).astype(np.uint16),
                   full.astype(np.uint16))

    def evaluate(self, X: np.ndarray, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """(value of the reached leaves per row, (n, k) contributions of the tabulated leaves)."""
        x = X.take(self.feature, axis=1)
        taken = (x >= self.lo) & (x <= self.hi)
        if np.isnan(X).any():
            taken |= np.isnan(x) & self.nan_ok
        bits = taken * self.bit16  # uint16 throughout the masks: paths are at most 16 features long
        mask = bits[:, :self.runs[0]].copy()
        pos = self.runs[0]
        for run in self.runs[1:]:
            mask[:, :run] += bits[:, pos:pos + run]
            pos += run
        reached = ((mask == self.full16) * self.value).sum(axis=1)
        slot_mask = np.concatenate([mask[:, :run] for run in self.runs], axis=1)
        slot_mask &= self.others16  # the subset without the slot's own feature: A for o = 0, A minus i for o = 1
        phi = self.table.take(np.add(slot_mask, self.offset))  # an int64 index: what take reads without a copy
        factor = taken.astype(np.float64)  # 1.0 or 0.0, then exactly 1 / z or 0
        factor *= self.inv_zero
        factor -= 1.0  # o = 1: (1 - z) / z; o = 0: -1
        phi *= factor
        out = np.zeros((X.shape[0], n_features))
        out[:, self.features] = np.add.reduceat(phi.take(self.by_feature, axis=1), self.starts, axis=1)
        return reached, out

    @property
    def slots(self) -> int:
        return self.feature.size


def _shapley_weights(d: int) -> np.ndarray:
    """w(k, d) = k! (d - 1 - k)! / d! for k = 0 .. d-1."""
    return np.array([factorial(k) * factorial(d - 1 - k) / factorial(d) for k in range(d)])


def _subset_table(zero: np.ndarray, value: np.ndarray) -> np.ndarray:
    """(2^d, L) T(A) = v * F(A) * prod_{j not in A} z_j for every subset mask A of d path features of L leaves.

    The Shapley weights are Beta integrals, w(k, d) = int_0^1 t^k (1 - t)^(d-1-k) dt, so with a = |A|

        F(A) = int_0^1 (1 - t)^(d-1-a) * prod_{j in A} (z_j (1 - t) + t) dt,

    a polynomial of degree d - 1 in t that Gauss-Legendre quadrature with d // 2 + 1 nodes integrates exactly.
    At each node T is then a product over the d features (z_j (1 - t) + t for j in A, z_j (1 - t) outside,
    over (1 - t)), so the whole table is a sum of a few outer products, built one feature at a time. Leaves go
    in chunks that keep a table of 2^d rows to a few MB."""
    d, L = zero.shape
    M = 1 << d
    nodes, weights = np.polynomial.legendre.leggauss(d // 2 + 1)
    t, g = (nodes + 1.0) / 2.0, weights / 2.0
    out = np.zeros((M, L))
    chunk = max(1, TABLE_BUILD_CELLS // M)
    prod = np.empty((M, min(chunk, L)))
    for a in range(0, L, chunk):
        z = zero[:, a:a + chunk]
        p = prod[:, :z.shape[1]]
        for tq, gq in zip(t, g, strict=True):
            outside = z * (1.0 - tq)
            p[0] = gq / (1.0 - tq)
            k = 1
            for j in range(d):  # rows [k, 2k) are rows [0, k) with feature j in A: row index = sum of b_j 2^j
                np.multiply(p[:k], outside[j] + tq, out=p[k:2 * k])
                p[:k] *= outside[j]
                k *= 2
            out[:, a:a + chunk] += p
    return out * value


def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a sorted array and where each one's run starts (`np.unique(..., return_index=True)`
    of sorted input, without `np.unique`, whose first call imports `numpy.ma`: a tenth of a command's start)."""
    if not ordered.size:
        return ordered, np.zeros(0, dtype=np.intp)
    first = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[first], first


@dataclass(frozen=True)
class TreeEnsemble:
    """The trees (for predictions) and every leaf as its root-to-leaf path, grouped by path length (for
    contributions)."""

    n_features: int
    base_score: float
    nodes: _Nodes                  # the trees themselves, for predictions by walking them
    groups: tuple[_PathGroup, ...]  # polynomial leaves, by number of distinct path features (none: no contribution)
    expected: float                # base score + every tree's cover-weighted mean: the contributions' base value
    tables: _SubsetTables | None = None  # the other leaves with a path, tabulated
    stumps: float = 0.0            # the value of the trees that are a single leaf (reached by every row)

    # -- reading -------------------------------------------------------------------------------------
    @classmethod
    def from_ubj(cls, raw: bytes, table_max_features: int = TABLE_MAX_FEATURES) -> TreeEnsemble:
        """The ensemble of an XGBoost model saved as UBJSON (`Booster.save_model('x.ubj')`).

        Leaves whose paths split on at most `table_max_features` distinct features are tabulated; 0 keeps the
        polynomial evaluation for all (the reference the tables are tested against)."""
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
        return cls._from_nodes(int(param["num_feature"]), base, _Nodes.concat(trees), table_max_features)

    @classmethod
    def _from_nodes(cls, n_features: int, base: float, nodes: _Nodes,
                    table_max_features: int = TABLE_MAX_FEATURES) -> TreeEnsemble:
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
        # a table needs 1 / z (padding slots have z = 1) and a 16-bit subset mask
        tabulated = (d >= 1) & (d <= min(table_max_features, 16)) & np.all(slot_z > 0, axis=1)
        tables = None
        if tabulated.any():
            t = tabulated
            tables = _SubsetTables.build(d[t], slot_f[t], slot_z[t], lo[t], hi[t], nan_ok[t], value[t])
        groups = []
        for n in range(1, D + 1):
            sel = (d == n) & ~tabulated
            if not sel.any():
                continue
            z = np.ascontiguousarray(slot_z[sel, :n].T)
            w = _shapley_weights(n)
            h = np.ascontiguousarray(hi[sel, :n].T)
            groups.append(_PathGroup(value[sel], np.ascontiguousarray(slot_f[sel, :n].T),
                                     np.ascontiguousarray(lo[sel, :n].T), h, np.ascontiguousarray(nan_ok[sel, :n].T),
                                     np.isposinf(h), z, w, _unwind_weights(w, z)))
        return cls(n_features, base, nodes, tuple(groups), base + float(np.sum(value * slot_z.prod(axis=1))),
                   tables, float(value[d == 0].sum()))

    # -- evaluation ----------------------------------------------------------------------------------
    def _check(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected an (n, {self.n_features}) feature matrix, got shape {X.shape}")
        return X

    def _chunks(self, n: int):
        cells = sum(g.feature.size * (g.d + 1) for g in self.groups)
        size = max(1, CHUNK_CELLS // max(1, cells))
        if self.tables is not None:  # a row's slot arrays should stay in the CPU cache
            size = min(size, max(1, TABLE_ROW_CELLS // self.tables.slots))
        return [slice(a, min(n, a + size)) for a in range(0, n, size)]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The model's output (identity link) for every row of X."""
        X = self._check(X)
        nd = self.nodes
        walk = nd.walk
        node = np.broadcast_to(nd.roots, (X.shape[0], nd.roots.size)).copy()  # (n, trees)
        rows = np.arange(X.shape[0])[:, None]
        missing = bool(np.isnan(X).any())
        for _ in range(walk.depth):  # a leaf steps to itself, so every tree may take the deepest one's steps
            x = X[rows, walk.feature[node]]
            step = np.where(x < nd.cond[node], walk.left[node], walk.right[node])
            node = np.where(np.isnan(x), walk.default[node], step) if missing else step
        return self.base_score + nd.cond[node].sum(axis=1, dtype=float)

    def contributions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(base per row, (n, k) exact TreeSHAP contributions); base + row sum equals `predict`."""
        _, base, phi = self.evaluate(X)
        return base, phi

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(prediction, base, (n, k) contributions) per row in one pass: the prediction is the sum of the
        leaves every row reaches (a leaf is reached when the row takes all of its path's splits), the same
        leaves `predict` walks to."""
        X = self._check(X)
        n = X.shape[0]
        pred = np.full(n, self.base_score + self.stumps)
        phi = np.zeros((n, self.n_features))
        for part in self._chunks(n):
            parts = [g.evaluate(X[part], self.n_features) for g in self.groups]
            if self.tables is not None:
                parts.append(self.tables.evaluate(X[part], self.n_features))
            for reached, contrib in parts:
                pred[part] += reached
                phi[part] += contrib
        return pred, np.full(n, self.expected), phi


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
class _Walk:
    """The trees as `TreeEnsemble.predict` walks them: each node's next node when its feature is below the split
    (`left`), not below it (`right`) or missing (`default`), a leaf's being itself (its split feature 0, read and
    ignored), and the most steps a root takes to its leaf (`depth`)."""

    left: np.ndarray
    right: np.ndarray
    default: np.ndarray
    feature: np.ndarray
    depth: int

    @classmethod
    def of(cls, left: np.ndarray, right: np.ndarray, parent: np.ndarray, feature: np.ndarray,
           default_left: np.ndarray) -> _Walk:
        """The walk of nodes given as `_Nodes` holds them (a leaf's children are -1)."""
        leaf = left < 0
        own = np.arange(left.size)
        depth, up = 0, parent
        while (up >= 0).any():  # every node one step nearer its root, until all have arrived
            depth += 1
            up = np.where(up >= 0, parent[up], -1)
        return cls(np.where(leaf, own, left), np.where(leaf, own, right),
                   np.where(leaf, own, np.where(default_left, left, right)), np.where(leaf, 0, feature), depth)


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
    walk: _Walk  # the nodes as `TreeEnsemble.predict` steps through them

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
        feature, default_left = np.concatenate(cols["feature"]), np.concatenate(cols["dl"])
        return cls(np.array(roots, np.int64), left, right, parent, feature, np.concatenate(cols["cond"]),
                   default_left, np.concatenate(cols["cover"]), _Walk.of(left, right, parent, feature, default_left))
