"""A symbolic value evaluated in every sampled lane at once: numpy integer arithmetic over lanes.

The per-lane way (substitute the lane symbols, simplify the polynomial, once per lane) redoes the same
symbolic work 32 times per warp. Here a value is compiled once into an evaluation over *lane vectors*: a
`VecPoly` maps each uniform monomial (a product of symbols that are the same in every lane, such as a
parameter or the unknown warp index) to an int64 array holding that monomial's coefficient in each lane.
Polynomial arithmetic multiplies those arrays; non-polynomial operations (`shr`, `rem`, `and`, comparisons,
selects, ...) are computed elementwise with the same integer semantics as `expr.concrete_op` once their
arguments have no uniform part left.

The result must equal the per-lane way exactly, so whenever this evaluation could differ it gives up and
returns None, and the caller takes the per-lane way: an operation whose argument keeps a uniform symbol, an
operation with no integer value in some lane (division by zero, an unmodelled opcode), magnitudes that could
leave int64, and, when lane symbols are themselves symbolic (unknown block shape), polynomials beyond the
degree and term caps of `expr` (where the per-lane simplification would have given up too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import Atoms, Mono, Poly, Value
from kerncast.analysis.intops import LANES, NoValue
from kerncast.analysis.memory.warp import Lane

#: Reductions called as ufuncs: the array methods (`a.max()`, `a.any()`) go through a Python wrapper, which
#: costs more than the reduction itself on arrays of a few warps' lanes. Whether one lane vector has a non-zero
#: entry is `np.count_nonzero`, a few times cheaper again than the logical-or reduction.
_MAX, _MIN, _ANY = np.maximum.reduce, np.minimum.reduce, np.logical_or.reduce


def any_nonzero(vp: VecPoly, size: int) -> np.ndarray:
    """Per lane, whether any coefficient of the value is non-zero (the value is not the zero polynomial)."""
    if not vp:
        return np.zeros(size, dtype=bool)
    return _ANY(_rows(vp) != 0, axis=0)


def _rows(vp: VecPoly) -> np.ndarray:
    """The lane vectors of a value as the rows of one 2-D array (`np.array` of the equal-length rows: a few
    times cheaper than `np.stack` on the handful of lanes a value holds)."""
    return np.array(list(vp.values()))


def lane_varying(a: np.ndarray) -> bool:
    """Whether a lane vector holds different values in different lanes."""
    return np.count_nonzero(a != a[0]) > 0  # a count: a few times cheaper than a logical-or reduction


#: Largest magnitude an intermediate may reach; beyond it int64 could overflow, so we give up.
_LIMIT = 1 << 62

VecPoly = dict[Mono, np.ndarray]


class GiveUp(Exception):
    """The vectorised evaluation cannot guarantee the per-lane result; use the per-lane way."""


#: What stops a vectorised evaluation: a give-up, or an operation with no integer value in some lane
_STOPS = (GiveUp, ArithmeticError, ValueError, OverflowError)


def _bound(v: VecPoly) -> int:
    """The largest magnitude of any coefficient in any lane."""
    top = 0
    for a in v.values():  # the largest and the smallest of each array: cheaper than stacking them
        if a.size:
            top = max(top, int(_MAX(a)), -int(_MIN(a)))
    return top


def _most_terms_in_a_lane(v: VecPoly) -> int:
    """The most monomials with a non-zero coefficient in any one lane (the term count of that lane's value)."""
    return int(np.count_nonzero(_rows(v), axis=0).max(initial=0))


def _check(bound: int) -> None:
    """Give up when a bound on magnitudes reaches the limit int64 holds safely."""
    if bound >= _LIMIT:
        raise GiveUp


class LaneVectors:
    """The lane symbols of the sampled warps as lane vectors, and the evaluation of values over them.

    `lane_values` maps each lane atom id to its `VecPoly` over all sampled lanes (warps concatenated).
    `capped` is True when lane symbols are symbolic (unknown block), where `expr`'s degree and term caps
    decide whether the per-lane simplification succeeds, so they are enforced here too.
    """

    def __init__(self, atoms: Atoms, lane_values: dict[int, VecPoly], size: int, capped: bool) -> None:
        self.atoms = atoms
        self.lane_values = lane_values
        self.size = size
        self.capped = capped
        self.lane_ids = frozenset(lane_values)
        self._atom_cache: dict[int, tuple[VecPoly, bool, int]] = {}
        self._uniform_cache: dict[int, bool] = {}
        self._constants: dict[int, np.ndarray] = {}
        self._eye: np.ndarray | None = None
        #: `_poly` of values without a constant term, with whether it was symbolic (None: it gave up)
        self._rest_cache: dict[Value, tuple[VecPoly, int, bool] | None] = {}
        #: set while evaluating a value when an operation had to be simplified lane by lane
        self.symbolic = False

    # ------------------------------------------------------------------------------------------ public
    def evaluate(self, v: Value) -> VecPoly | None:
        """`v` in every lane as a `VecPoly`, or None when the per-lane way must be used."""
        if v is None:
            return None
        self.symbolic = False
        try:
            vp = self._shifted(v) if not self.capped else self._poly(v, 0)[0]
        except _STOPS:
            return None
        if vp is None or self.symbolic and not self._within_caps(vp):
            return None
        return vp

    def nonzero_lanes(self, v: Value) -> np.ndarray | None:
        """Per lane, whether `v` may be non-zero there (it is not the zero polynomial): the lanes a condition may
        hold in. None when the per-lane way must be used. A comparison left undecided in every lane
        (`undecided_in_every_lane`) keeps them all without a node made per lane."""
        if self.undecided_in_every_lane(v):
            return np.ones(self.size, dtype=bool)
        vp = self.evaluate(v)
        return None if vp is None else any_nonzero(vp, self.size)

    def _shifted(self, v: Poly) -> VecPoly | None:
        """`_poly(v, 0)` as the lane vectors of `v` without its constant term (worked out once per such rest),
        the constant added to the constant lane vector; None where `_poly` gives up.

        The values read at sampled blocks or iterations are mostly one value shifted by a constant (`4 * (256 *
        blockIdx.x + tid)` at blockIdx.x = 0, 1, 2, 3). `_poly` takes the constant term first: with it the
        terms are those of the rest, in the same order, the constant's lane vector the rest's plus `c` (exact
        integers), its bound the rest's plus |c| (it gives up when that reaches the limit: the checks along the
        way are on partial sums of the same bounds). Without caps (a known block) nothing else reads the
        constant, so the result is the same. `symbolic` is set as `_poly` of `v` would set it."""
        c, rest = (v[0][1], v[1:]) if v and not v[0][0] else (0, v)
        if rest in self._rest_cache:
            hit = self._rest_cache[rest]
        else:
            try:
                vp, bound = self._poly(rest, 0)
                hit = (vp, bound, self.symbolic)
            except _STOPS:
                hit = None
            self._rest_cache[rest] = hit
        if hit is None:
            return None
        vp, bound, self.symbolic = hit
        if not c:
            return dict(vp)
        _check(bound + abs(c))
        out: VecPoly = {(): vp[()] + c if () in vp else self._filled(c)}
        out.update((m, arr) for m, arr in vp.items() if m)
        return out

    def _within_caps(self, vp: VecPoly) -> bool:
        """Whether a value built with lane-by-lane simplification stays within `expr`'s degree and term caps
        (beyond them the per-lane way gives TOP, so this way must not give a value)."""
        if any(len(m) > E.MAX_DEGREE for m in vp):
            return False
        return len(vp) <= E.MAX_TERMS or _most_terms_in_a_lane(vp) <= E.MAX_TERMS

    def to_values(self, vp: VecPoly) -> list[Value]:
        """One `Value` per lane, built as the per-lane simplification builds it (sorted, zeros dropped)."""
        ints = self.constants(vp)
        if ints is not None:  # the common case: an integer in every lane
            return [(((), x),) if x else E.ZERO for x in ints.tolist()]
        monos = sorted(vp)  # monomials in order (the constant () first), so each lane's terms come out sorted
        symbols = [m for m in monos if m]
        if not any(lane_varying(vp[m]) for m in symbols):  # common: only the constant differs by lane
            rest = tuple((m, c) for m in symbols if (c := int(vp[m][0])))
            if () not in vp:
                return [rest] * self.size
            return [(((), c), *rest) if c else rest for c in vp[()].tolist()]
        # the non-zero coefficients, lane by lane and in monomial order within a lane (the lanes of gathered
        # operation results each hold their own monomial: the table is sparse)
        table = np.array([vp[m] for m in monos]).T
        lanes, cols = np.nonzero(table)
        per_lane: list[list[tuple[Mono, int]]] = [[] for _ in range(self.size)]
        for lane, col, c in zip(lanes.tolist(), cols.tolist(), table[lanes, cols].tolist(), strict=True):
            per_lane[lane].append((monos[col], c))
        return [tuple(terms) for terms in per_lane]

    def constants(self, vp: VecPoly) -> np.ndarray | None:
        """The lane values when no uniform symbol is left (an int64 array), else None."""
        if not vp:
            return np.zeros(self.size, dtype=np.int64)
        if len(vp) == 1 and () in vp:
            return vp[()]
        return None

    # ---------------------------------------------------------------------------------------- algebra
    def _const(self, c: int) -> VecPoly:
        _check(abs(c))
        return {(): self._filled(c)}

    def _filled(self, c: int) -> np.ndarray:
        """The lane vector holding `c` in every lane, made once per constant and shared by every value that
        holds it (read only: a write would change them all)."""
        arr = self._constants.get(c)
        if arr is None:
            arr = self._constants[c] = np.empty(self.size, dtype=np.int64)
            arr.fill(c)  # `np.full`'s work without its Python wrapper, which costs twice the filling
            arr.flags.writeable = False
        return arr

    def _mul(self, a: VecPoly, a_bound: int, b: VecPoly, b_bound: int) -> tuple[VecPoly, int]:
        """The product and a bound on its magnitudes (from the factors' bounds: no array is scanned)."""
        bound = a_bound * b_bound * len(a) * len(b)
        _check(bound)
        out: VecPoly = {}
        for ma, xa in a.items():
            for mb, xb in b.items():
                m = tuple(sorted(ma + mb)) if ma and mb else (ma or mb)
                if self.capped and len(m) > E.MAX_DEGREE:
                    raise GiveUp
                p = xa * xb
                out[m] = out[m] + p if m in out else p
        self._cap(out)
        return out, bound

    def _unit_times(self, b: VecPoly, b_bound: int) -> tuple[VecPoly, int]:
        """`_mul` of the constant 1 by `b`: the same product, checks and bound, without multiplying arrays."""
        bound = b_bound * len(b)
        _check(bound)
        if self.capped and any(len(m) > E.MAX_DEGREE for m in b):
            raise GiveUp
        out = dict(b)
        self._cap(out)
        return out, bound

    def _cap(self, v: VecPoly) -> None:
        if self.capped and len(v) > E.MAX_TERMS and _most_terms_in_a_lane(v) > E.MAX_TERMS:
            raise GiveUp

    # ------------------------------------------------------------------------------------- evaluation
    def _poly(self, v: Value, depth: int) -> tuple[VecPoly, int]:
        """`v` over the lanes, and a bound on its magnitudes.

        Bounds are carried along rather than measured: each is at least the largest magnitude in the arrays,
        so the overflow checks may give up early (the per-lane way then gives the same result) but never
        late, and no array is scanned for them.
        """
        if v is None or depth > 6:
            raise GiveUp
        out: VecPoly = {}
        bound = 0  # a bound on the magnitudes in `out`: the sum of its terms' bounds
        # Whether a monomial may have come out 0 in every lane: a sum may cancel, and a product of two lane
        # vectors may vanish where their non-zero lanes do not meet. One term of at most one such factor cannot:
        # every atom's lane vectors are non-zero in some lane (built from the non-zero coefficients of its lanes'
        # values), and a non-zero coefficient keeps them so.
        may_vanish = len(v) > 1
        for m, c in v:
            if all(self._uniform(a) for a in m):  # `c` times symbols the same in every lane
                _check(abs(c))
                if self.capped and len(m) > E.MAX_DEGREE:
                    raise GiveUp
                term, term_bound = {m: self._filled(c)}, abs(c)
            else:
                may_vanish = may_vanish or len(m) > 1
                factors = iter(m)
                if c == 1:  # common: no coefficient to multiply the first factor by
                    term, term_bound = self._unit_times(*self._atom(next(factors), depth))
                else:
                    term, term_bound = self._const(c), abs(c)
                for a in factors:
                    term, term_bound = self._mul(term, term_bound, *self._atom(a, depth))
            bound += term_bound
            _check(bound)
            if out:
                for tm, arr in term.items():
                    out[tm] = out[tm] + arr if tm in out else arr
                self._cap(out)
            else:
                out = dict(term)
        return (_without_zero_terms(out) if may_vanish else out), bound

    def _uniform(self, a: int) -> bool:
        """Whether atom `a` is a plain symbol with the same value in every lane (no lane vector, no lane
        operation): its lane vector is all ones, so a term of such symbols needs no multiplication."""
        hit = self._uniform_cache.get(a)
        if hit is None:
            atoms = self.atoms
            hit = self._uniform_cache[a] = not (
                a in self.lane_values or atoms.lane[a]
                or (atoms.keys[a][0] == "op" and op_has_lane(atoms, a, self.lane_ids)))
        return hit

    def _atom(self, a: int, depth: int) -> tuple[VecPoly, int]:
        """Atom `a` over the lanes, and a bound on its magnitudes (cached per atom)."""
        hit = self._atom_cache.get(a)
        if hit is not None:
            self.symbolic = self.symbolic or hit[1]
            return hit[0], hit[2]
        atoms = self.atoms
        outer, self.symbolic = self.symbolic, False
        if a in self.lane_values:
            r = self.lane_values[a]
            bound = _bound(r)
        else:
            key = atoms.keys[a]
            if key[0] == "op" and (atoms.lane[a] or op_has_lane(atoms, a, self.lane_ids)):
                r, bound = self._op(a, depth)
            elif atoms.lane[a]:
                raise GiveUp  # a lane-dependent unknown (a loaded value, a lane recurrence)
            else:
                r, bound = {(a,): self._filled(1)}, 1
        self._atom_cache[a] = (r, self.symbolic, bound)
        self.symbolic = outer or self.symbolic
        return r, bound

    def _op(self, a: int, depth: int) -> tuple[VecPoly, int]:
        """A lane-dependent operation node, and a bound on its magnitudes: elementwise when its arguments are
        plain integers in every lane, else simplified lane by lane (`expr.apply_op`, as the per-lane way does)
        and gathered back."""
        _, name, args, extra = self.atoms.keys[a]
        polys = [self._poly(x, depth + 1)[0] for x in args]
        consts = [self.constants(vp) for vp in polys]
        if all(c is not None for c in consts):
            r = {(): concrete_op_lanes(name, consts, extra)}  # type: ignore[arg-type]
            return r, 1 if name == "cmp" else _bound(r)  # a comparison gives 1 or 0: nothing to scan
        self.symbolic = True
        per_arg = [self.to_values(vp) for vp in polys]
        per_lane = list(zip(*per_arg, strict=True))
        capped = self.capped  # then `expr.evaluate` keeps a node whose arguments did not change as it is
        node = self._opaque_comparison(name, polys, extra)
        if node is not None:
            return self._one_node_per_lane([a if capped and lane_args == args else node(lane_args)
                                           for lane_args in per_lane])
        results: list[Value] = []
        for lane_args in per_lane:
            r = (((a,), 1),) if capped and lane_args == args else E.apply_op(self.atoms, name, lane_args, extra)
            if r is None:
                raise GiveUp
            results.append(r)
        return self._gather(results)

    def opaque_comparison_args(self, v: Value) -> np.ndarray | None:
        """For a value that is one lane-dependent comparison whose lane results are opaque nodes (see
        `_opaque_comparison`: `256 * blockIdx.x + threadIdx.x < n`, the block index left a symbol), the lane
        vectors of both its arguments as the rows of one array; None for any other value, or where the
        arguments cannot be read as vectors.

        Each lane's result is then the node of that lane's arguments, never a constant, and two lanes hold the
        same node exactly where every coefficient of their arguments agrees: whether a warp's lanes agree on
        such a predicate is read from these rows, without a node made per lane as `evaluate` makes them."""
        polys = self._opaque_comparison_polys(v)
        return None if polys is None else np.array([arr for vp in polys for arr in vp.values()])

    def undecided_in_every_lane(self, v: Value) -> bool:
        """Whether `v` is one comparison whose result is an opaque node in every lane (`opaque_comparison_args`
        applies): `evaluate` would give each lane a node of its own, none of them zero, so a test of which
        lanes may pass keeps them all, and needs no node made per lane to say so."""
        return self._opaque_comparison_polys(v) is not None

    def _opaque_comparison_polys(self, v: Value) -> list[VecPoly] | None:
        """The lane vectors of the two arguments of a comparison whose lane results are opaque nodes (see
        `opaque_comparison_args`), None for any other value."""
        if v is None or len(v) != 1 or v[0][1] != 1 or len(v[0][0]) != 1:
            return None
        a = v[0][0][0]
        atoms = self.atoms
        key = atoms.keys[a]
        if key[0] != "op" or key[1] != "cmp" or a in self.lane_values \
                or not (atoms.lane[a] or op_has_lane(atoms, a, self.lane_ids)):
            return None
        try:  # the arguments as `_op` reads them (a TOP one gives up)
            polys = [self._poly(x, 1)[0] for x in key[2]]
        except _STOPS:
            return None
        if all(self.constants(vp) is not None for vp in polys):
            return None  # integers in every lane: the comparison is decided lane by lane
        if self._opaque_comparison("cmp", polys, key[3]) is None:
            return None
        return polys

    def _opaque_comparison(self, name: str, polys: list[VecPoly], extra: Any) -> Any:
        """For a comparison whose two sides keep different lane-uniform symbolic parts (`i < n` with `n` not
        known), what `expr.apply_op` gives in every lane without its work: their difference is never zero and
        never a constant, so each lane's result is the comparison node of its arguments (returned as a function
        of them giving the node's atom), and whether that node is lane-dependent is the same in every lane.
        None when this does not hold."""
        if name != "cmp" or len(polys) != 2:
            return None
        rests = [_uniform_rest(vp) for vp in polys]
        if rests[0] is None or rests[1] is None or rests[0] == rests[1]:
            return None
        atoms = self.atoms
        lane = atoms.is_lane(rests[0]) or atoms.is_lane(rests[1])
        return lambda lane_args: atoms.atom(("op", name, lane_args, extra), lane)

    def _one_node_per_lane(self, nodes: list[int]) -> tuple[VecPoly, int]:
        """`_gather` of values that are each one atom with coefficient 1 (`nodes` gives each lane's atom)."""
        row_of: dict[int, int] = {}
        rows = [row_of.setdefault(node, len(row_of)) for node in nodes]
        if len(row_of) == self.size:  # common: a node of its own in every lane, the rows of the identity
            identity = self._identity()
            return {(node,): identity[row] for node, row in row_of.items()}, 1
        table = np.zeros((len(row_of), self.size), dtype=np.int64)
        table[rows, np.arange(self.size)] = 1
        return {(node,): table[row] for node, row in row_of.items()}, 1

    def _identity(self) -> np.ndarray:
        """The identity matrix over the lanes, made once and shared (read only, as `_filled`'s vectors)."""
        if self._eye is None:
            self._eye = np.eye(self.size, dtype=np.int64)
            self._eye.flags.writeable = False
        return self._eye

    def _gather(self, values: list[Value]) -> tuple[VecPoly, int]:
        """Per-lane polynomials as one `VecPoly` (a monomial's coefficient is 0 in lanes without it), and the
        largest magnitude among them.

        Lanes usually hold few monomials each but many between them, so every coefficient is written into one
        table (a row per monomial) in one assignment, and the monomials' arrays are its rows."""
        row_of: dict[Mono, int] = {}
        rows: list[int] = []
        lanes: list[int] = []
        coefficients: list[int] = []
        for lane, v in enumerate(values):
            for m, c in v:  # type: ignore[union-attr]
                rows.append(row_of.setdefault(m, len(row_of)))
                lanes.append(lane)
                coefficients.append(c)
        top = max(map(abs, coefficients), default=0)
        _check(top)  # before the table is filled: int64 holds every coefficient
        table = np.zeros((len(row_of), self.size), dtype=np.int64)
        table[rows, lanes] = coefficients
        return {m: table[row] for m, row in row_of.items()}, top


#: From this many monomials on, their zero tests run as one reduction over the stacked arrays.
_STACKED_TEST_FROM = 8


def _without_zero_terms(vp: VecPoly) -> VecPoly:
    """`vp` without the monomials whose coefficient is 0 in every lane (the constant term is always kept), as
    the per-lane simplification drops zero terms."""
    if len(vp) < _STACKED_TEST_FROM:
        return {m: arr for m, arr in vp.items() if m == () or np.count_nonzero(arr)}
    nonzero = _ANY(_rows(vp), axis=1).tolist()
    return {m: arr for (m, arr), keep in zip(vp.items(), nonzero, strict=True) if keep or m == ()}


def _uniform_rest(vp: VecPoly) -> Value:
    """The symbolic part of a lane vector whose symbolic monomials have the same coefficient in every lane
    (lanes then differ only by their constant), as a polynomial; None when some coefficient varies."""
    rest = []
    for m in sorted(vp):
        if m:
            arr = vp[m]
            if lane_varying(arr):
                return None
            if c := int(arr[0]):
                rest.append((m, c))
    return tuple(rest)


def op_has_lane(atoms: Atoms, a: int, lane_ids: frozenset[int]) -> bool:
    """Whether operation atom `a` has an argument that reads a lane symbol or a lane-dependent atom."""
    return any(x in lane_ids or atoms.lane[x] for arg in atoms.keys[a][2] if arg for m, _ in arg for x in m)


# ------------------------------------------------------------------------------- integer operations

def concrete_op_lanes(name: str, vals: list[np.ndarray], extra: Any) -> np.ndarray:
    """`expr.concrete_op` elementwise over lanes; raises GiveUp where some lane has no integer value."""
    try:
        return E.concrete(name, vals, extra, LANES)
    except NoValue as exc:
        raise GiveUp from exc


def lane_vectors(atoms: Atoms, warps: list[list[Lane]], lane_atoms: dict[str, int],
                 ints: dict[str, np.ndarray] | None = None) -> LaneVectors | None:
    """Lane vectors for the sampled warps' lanes (their lane symbols' values by name, `lane_atoms` giving each
    name's atom), warps concatenated; None when a lane's value is not a plain polynomial (then lane by lane
    it is). `ints`, when given, holds the same lane values already as integer arrays (a known block)."""
    lanes = [lane for warp in warps for lane in warp]
    if not lanes:
        return None
    if ints is not None:
        return LaneVectors(atoms, {atom: {(): ints[name]} for name, atom in lane_atoms.items()}, len(lanes), False)
    values: dict[int, VecPoly] = {}
    capped = False
    for name, atom in lane_atoms.items():
        per_lane = [ln.subst.get(name) for ln in lanes]
        if any(p is None for p in per_lane):
            return None
        ints = [E.as_const(p) for p in per_lane]
        if None not in ints:  # the common case, a known block: an integer in every lane
            values[atom] = {(): np.array(ints, dtype=np.int64)}
            continue
        monos = sorted({m for p in per_lane for m, _ in p})  # type: ignore[union-attr]
        if any(atoms.lane[x] or atoms.keys[x][0] == "op" for m in monos for x in m):
            return None
        capped = capped or any(m for m in monos)
        columns: dict[Mono, list[int]] = {m: [0] * len(lanes) for m in monos}
        for i, p in enumerate(per_lane):
            for m, c in p:  # type: ignore[union-attr]
                columns[m][i] = c
        vp: VecPoly = {m: np.array(col, dtype=np.int64) for m, col in columns.items()}
        values[atom] = vp if vp else {(): np.zeros(len(lanes), dtype=np.int64)}
    return LaneVectors(atoms, values, len(lanes), capped)
