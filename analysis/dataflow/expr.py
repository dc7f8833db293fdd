"""Symbolic integer values: polynomials over atoms, with exact evaluation once lanes are made concrete.

Every register of a kernel gets a `Poly`, a sum of integer-weighted products of *atoms*, or `None` (TOP: a
value that may differ between lanes in a way we cannot describe, such as data loaded through a per-lane
address). Atoms are interned in an `Atoms` table and are either symbols (`tid.x`, `ctaid.y`, `ntid.x`, a
kernel parameter, a loop iteration count, the address of a shared array) or operation nodes that are not
polynomial (`shr`, `rem`, `and`, comparisons, selects, opaque instructions) over polynomial arguments.

Why polynomials and not plain affine forms: a lane stride such as `4 * cols` is a product of a constant and a
parameter, and `threadIdx.y * width + threadIdx.x` multiplies a lane symbol by a parameter; both must stay
exact so that a warp can be instantiated lane by lane and the remaining uniform symbols reported as the
condition under which an access is coalesced. Non-polynomial operations keep their arguments so that they
can be computed exactly once `tid.x` is a number (`tid.x % 32`, `tid.x >> 5`, `(tid.x & 15) == 0`).
"""

from __future__ import annotations

from math import gcd
from typing import Any

from kerncast.analysis.intops import OPERATIONS, SCALAR, Kind, NoValue, compare, int_op
from kerncast.analysis.ptx.model import TYPE_BYTES, Instruction

Mono = tuple[int, ...]
Poly = tuple[tuple[Mono, int], ...]
Value = Poly | None

#: Symbols that differ between the lanes of one warp.
LANE_SYMBOLS = frozenset({"tid.x", "tid.y", "tid.z", "laneid"})

#: Caps that keep pathological PTX from making polynomials explode; beyond them a value becomes TOP.
MAX_TERMS = 48
MAX_DEGREE = 4

ZERO: Poly = ()


def const(c: int) -> Poly:
    """The constant polynomial `c`."""
    return (((), int(c)),) if c else ZERO


def as_const(p: Value) -> int | None:
    """The integer value of a constant polynomial, else None."""
    if p is None:
        return None
    if not p:
        return 0
    if len(p) == 1 and not p[0][0]:
        return p[0][1]
    return None


def _norm(terms: dict[Mono, int]) -> Value:
    items = [(m, c) for m, c in terms.items() if c]
    if len(items) > MAX_TERMS:
        return None
    items.sort()
    return tuple(items)


def add(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    if not a:
        return b
    if not b:
        return a
    terms = dict(a)
    for m, c in b:
        terms[m] = terms.get(m, 0) + c
    return _norm(terms)


def scale(a: Value, k: int) -> Value:
    if a is None:
        return None
    if k == 0:
        return ZERO
    if k == 1:
        return a
    return tuple([(m, c * k) for m, c in a])


def sub(a: Value, b: Value) -> Value:
    return add(a, scale(b, -1))


def mul(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    if not a or not b:
        return ZERO
    terms: dict[Mono, int] = {}
    for ma, ca in a:
        for mb, cb in b:
            m = tuple(sorted(ma + mb)) if ma and mb else (ma or mb)
            if len(m) > MAX_DEGREE:
                return None
            terms[m] = terms.get(m, 0) + ca * cb
    return _norm(terms)


def split_const(p: Poly) -> tuple[int, Poly]:
    """The constant term and the rest of a polynomial."""
    if p and not p[0][0]:
        return p[0][1], p[1:]
    return 0, p


def content(p: Poly) -> int:
    """The gcd of the non-constant coefficients (0 if there are none)."""
    g = 0
    for m, c in p:
        if m:
            g = gcd(g, c)
    return g


class Atoms:
    """The interning table of atoms for one analysis; ids are small ints so monomials sort cheaply.

    `keys[i]` is the atom's key, `lane[i]` whether it (statically) may differ between lanes of a warp.
    Keys: `("sym", name)`, `("rec", loop, reg)`, `("u", n)`, `("op", name, args, extra)`.
    """

    def __init__(self) -> None:
        self.keys: list[tuple] = []
        self.lane: list[bool] = []
        self._ids: dict[tuple, int] = {}
        self._fresh = 0

    def atom(self, key: tuple, lane: bool = False) -> int:
        # one lookup that inserts when missing: a key (nested tuples, not cached by Python) is hashed once
        n = len(self.keys)
        i = self._ids.setdefault(key, n)
        if i == n:
            self.keys.append(key)
            self.lane.append(lane)
        return i

    def sym(self, name: str) -> Poly:
        return (((self.atom(("sym", name), name in LANE_SYMBOLS),), 1),)

    def fresh(self, tag: str = "u") -> Poly:
        """A new uniform unknown (the same in every lane, value not known)."""
        self._fresh += 1
        return (((self.atom(("u", tag, self._fresh)),), 1),)

    def op(self, name: str, args: tuple[Value, ...], extra: object = None) -> Value:
        """An operation node; TOP if an argument is TOP. Its lane flag is that of its arguments."""
        if None in args:
            return None
        lane = False
        for a in args:
            if self.is_lane(a):
                lane = True
                break
        return (((self.atom(("op", name, args, extra), lane),), 1),)

    def is_lane(self, p: Value) -> bool:
        """Whether a value may differ between the lanes of a warp (TOP counts as lane-dependent)."""
        if p is None:
            return True
        lane = self.lane
        for m, _ in p:  # loops, not any(): this runs for every value the passes build
            for a in m:
                if lane[a]:
                    return True
        return False

    def atoms_of(self, p: Poly) -> set[int]:
        return {a for m, _ in p for a in m}

    def deep_atoms_of(self, p: Poly, opaque: frozenset[str] = frozenset()) -> set[int]:
        """The atoms of `p` and, through operation nodes, of their arguments: a step `sel(c, n - s, t)` of a
        register `s` depends on `s` although `s` is not one of its top-level atoms. Operations named in
        `opaque` are atoms whose arguments are not followed (a loaded value does not carry its address's
        symbols into the value)."""
        out: set[int] = set()
        todo = [a for m, _ in p for a in m]
        while todo:
            a = todo.pop()
            if a in out:
                continue
            out.add(a)
            key = self.keys[a]
            if key[0] == "op" and key[1] not in opaque:
                todo += [x for arg in key[2] if arg is not None for m, _ in arg for x in m]
        return out


# ------------------------------------------------------------------------------------ concrete operations
# (the integer semantics themselves are `kerncast.analysis.intops`, shared with the lane evaluator)


def int_type(ins: Instruction) -> tuple[int, bool]:
    """(bits, signed) of a PTX instruction's integer type: `s*` types are signed; an untyped one reads as u32.

    The one reading of an instruction's width and signedness, for symbolic values and for the loop-entry
    values of trip counts alike (integer arithmetic and comparisons in PTX are 16, 32 or 64 bits wide).
    """
    t = ins.dtype or "u32"
    return TYPE_BYTES.get(t, 4) * 8, t.startswith("s")


def op_type(extra: object) -> tuple[int, bool]:
    """(bits, signed) of an operation node's `extra`; an untyped node is read as u32."""
    if isinstance(extra, tuple) and len(extra) >= 2 and isinstance(extra[0], int):
        return extra[0], bool(extra[1])
    return 32, False


def _comparison(extra: object) -> tuple[str, int, bool]:
    """(comparison, bits, signed) of a `cmp` node's `extra`; an untyped comparison is a signed 32-bit `eq`."""
    cmp = extra[2] if isinstance(extra, tuple) and len(extra) > 2 else "eq"
    bits = extra[0] if isinstance(extra, tuple) and isinstance(extra[0], int) else 32
    signed = not (isinstance(extra, tuple) and not extra[1])
    return str(cmp), bits, signed


def concrete(name: str, vals: list[Any], extra: object, kind: Kind = SCALAR) -> Any:
    """A non-polynomial operation (`shr`, `rem`, `and`, `cmp`, `sel`, ...) on integers of `kind` (Python ints,
    or lane vectors); NoValue where it has no integer value we model."""
    a = vals[0]
    b = vals[1] if len(vals) > 1 else a * 0
    if name in OPERATIONS:
        bits, signed = op_type(extra)
        return int_op(name, a, b, bits, signed, kind)
    if name == "sel":
        return kind.select(a != 0, vals[1], vals[2])
    if name == "cmp":
        cmp, bits, signed = _comparison(extra)
        return compare(cmp, a, b, bits, signed, kind)
    raise NoValue(f"the operation {name}")


def concrete_op(name: str, vals: list[int], extra: object) -> int | None:
    """An operation on integers (`shr`, `rem`, `and`, `cmp`, `sel`, ...); None where it has no integer value."""
    try:
        return concrete(name, vals, extra)
    except NoValue:
        return None


#: shift amounts from the text are bounded before `1 << k` (PTX clamps shifts to the type's width, at most 64)
_MAX_SHIFT = 64


def _pow2(c: int | None) -> int | None:
    """k when c == 2**k (c > 0), else None."""
    if c is None or c <= 0 or c & (c - 1):
        return None
    return c.bit_length() - 1


def _split_aligned_terms(atoms: Atoms, name: str, a: Poly, b: int, extra: object) -> Value:
    """`(A + B) >> k`, `(A + B) & m` with a mask 0 < m < 2**k and `(A + B) & -2**k` where every term of A is a
    multiple of 2**k: `A / 2**k + (B >> k)`, `B & m` and `A + (B & -2**k)`, since adding a multiple of 2**k
    leaves the low k bits alone. A block's first thread plus the thread index, `(ctaid * 256 + tid) >> 5`, becomes
    `8 * ctaid + (tid >> 5)`: the operation left holds lane symbols only and can be computed lane by lane.
    None when no term is aligned."""
    if name == "shr":
        k, keep = b, "quotient"
    elif b > 0:  # a mask below 2**k: terms that are multiples of 2**k drop out (`(128 * w + 4 * lane) & 124`)
        k, keep = b.bit_length(), "none"
    elif (k := _pow2(-b)) is not None:
        keep = "all"
    else:
        return None
    if not 0 < k < _MAX_SHIFT:
        return None
    if keep == "quotient":  # the quotient needs the coefficient itself to hold the factor
        aligned = tuple((m, c) for m, c in a if _two_adic(c) >= k)
    else:
        aligned = tuple((m, c) for m, c in a if _two_adic(c) + sum(_atom_zero_bits(atoms, x) for x in m) >= k)
    rest = tuple(t for t in a if t not in aligned)
    if not aligned:
        return None
    if keep == "quotient" and not op_type(extra)[1] and _may_be_negative(atoms, rest):
        # a logical shift reads a negative rest as a large unsigned number: `(x + mulhi(x, -m) + 4) >> 2`, the
        # rounding step of nvcc's signed division by 7, is not `((x + mulhi(x, -m)) >> 2) + 1` where the sum
        # of the rest is negative and the whole is not
        return None
    inner = apply_op(atoms, name, (rest, const(b)), extra) if rest else ZERO
    if keep == "none":
        return inner
    if keep == "all":
        return add(aligned, inner)
    return add(tuple((m, c >> k) for m, c in aligned), inner)


def _may_be_negative(atoms: Atoms, p: Poly) -> bool:
    """Whether a term of `p` may be negative: a negative coefficient, or an operation whose result has a sign
    (a signed multiply-high, a signed shift). Symbols count as non-negative, as indices and sizes are; an
    unsigned shift, division or remainder, a comparison and an `and` with a non-negative mask are too."""
    for m, c in p:
        if c < 0:
            return True
        for x in m:
            key = atoms.keys[x]
            if key[0] != "op":
                continue
            name = key[1]
            if name in ("shr", "div", "rem") and not op_type(key[3])[1] or name == "cmp":
                continue
            if name == "and" and len(key[2]) == 2 and any((mask := as_const(arg)) is not None and mask >= 0
                                                          for arg in key[2]):
                continue
            return True
    return False


def apply_op(atoms: Atoms, name: str, args: tuple[Value, ...], extra: object) -> Value:
    """Evaluate an operation on (possibly symbolic) arguments as exactly as the algebra allows."""
    if None in args:
        return None
    consts = [as_const(a) for a in args]
    if all(c is not None for c in consts):
        r = concrete_op(name, consts, extra)  # type: ignore[arg-type]
        if r is not None:
            return const(r)
        if name not in ("shr", "div", "rem", "and", "or", "xor", "not", "min", "max", "abs", "mulhi", "sel",
                        "cmp"):
            return atoms.op(name, args, extra)
        return None
    a = args[0]
    assert a is not None
    if name == "sel" and consts[0] is not None:
        return args[1] if consts[0] else args[2]
    if name == "cmp" and len(args) == 2:
        d = sub(args[0], args[1])
        if d == ZERO and isinstance(extra, tuple) and len(extra) > 2:
            return const(int(extra[2] in ("eq", "le", "ge", "ls", "hs")))
    b = consts[1] if len(consts) > 1 else None
    if name == "shr" and b is not None and _sign_of_an_index(atoms, a, b, extra):
        return ZERO
    if name in ("shr", "div", "rem", "and"):
        k = b if name == "shr" else _pow2(b) if name in ("div", "rem") else _pow2(b + 1) if b is not None else None
        if k is not None and 0 <= k < _MAX_SHIFT:  # a shift past every PTX width is not simplified
            d = 1 << k
            c0, rest = split_const(a)
            g = content(rest)
            if g and g % d == 0:
                if name in ("shr", "div"):
                    return add(tuple((m, c // d) for m, c in rest), const(c0 >> k))
                return const(c0 & (d - 1))
    if name in ("shr", "and") and b is not None and len(args) == 2:
        split = _split_aligned_terms(atoms, name, a, b, extra)
        if split is not None:
            return split
    if name == "and" and consts[0] is not None and len(args) == 2:  # mask first: swap
        return apply_op(atoms, "and", (args[1], args[0]), extra)
    if name in ("div", "rem") and len(args) == 2 and b is None:
        quotient = _division_by_a_symbol(atoms, name, a, args[1], extra)  # type: ignore[arg-type]
        if quotient is not None:
            return quotient
    return atoms.op(name, args, extra)


def _division_by_a_symbol(atoms: Atoms, name: str, a: Poly, b: Poly, extra: object) -> Value:
    """A division by a value known only as a symbol (a kernel parameter), in one form whoever wrote it:
    `a % b` is `a - b * (a / b)` (C's truncated division makes that exact for every sign), and `(a / c) / b`
    is `a / (c * b)` (exact for truncated division by non-zero integers). Then `i / S / N` and `i / N / S`
    are one value, and `(i / N) * N + i % N` cancels to `i`: an index split into a row and a column by a
    parameter and rebuilt is the index itself. None when neither form applies."""
    if name == "rem":
        q = apply_op(atoms, "div", (a, b), extra)
        return sub(a, mul(b, q))
    if len(a) == 1 and a[0][1] == 1 and len(a[0][0]) == 1:
        key = atoms.keys[a[0][0][0]]
        if key[0] == "op" and key[1] == "div" and key[3] == extra and len(key[2]) == 2:
            inner, c = key[2]
            both = mul(c, b)
            if both is not None:
                return apply_op(atoms, "div", (inner, both), extra)
    return None


#: symbols that are never negative: thread and block indices and sizes, and a loop's iteration number
_NON_NEGATIVE = frozenset({"tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "ntid.x", "ntid.y", "ntid.z",
                           "nctaid.x", "nctaid.y", "nctaid.z", "laneid"})


def _non_negative_atom(atoms: Atoms, a: int) -> bool:
    key = atoms.keys[a]
    return key[0] == "sym" and (key[1] in _NON_NEGATIVE or key[1][:1] == "K" and key[1][1:].isdigit())


def _sign_of_an_index(atoms: Atoms, a: Poly, k: int, extra: object) -> bool:
    """Whether `a >> k` is the sign of a signed `a` (k = bits - 1, arithmetic shift) and `a` is a sum of
    non-negative multiples of thread and block indices and sizes and loop iteration numbers (`blockIdx.x *
    blockDim.x + threadIdx.x + i * gridDim.x`): such an `int` index is non-negative unless it overflowed, which
    C++ leaves undefined, so its sign is 0. nvcc reads that sign to round a signed `idx / 64` toward zero."""
    bits, signed = op_type(extra)
    return signed and k == bits - 1 and all(c > 0 and all(_non_negative_atom(atoms, x) for x in m) for m, c in a)


#: bits a thread index needs at most: a block has at most 1024 threads in x and y and 64 in z, a warp 32 lanes
_INDEX_BITS = {"tid.x": 10, "tid.y": 10, "tid.z": 6, "laneid": 5}
#: more low zero bits than any PTX value has: what the zero polynomial has
_ALL_ZERO_BITS = 128


def _two_adic(c: int) -> int:
    """The number of trailing zero bits of a non-zero integer (two's complement: the same for -c)."""
    return (c & -c).bit_length() - 1


def _atom_zero_bits(atoms: Atoms, a: int) -> int:
    """Low bits known to be zero in every value of atom `a`: those of the mask of an `and` with a constant
    (`x & -16`), else none."""
    key = atoms.keys[a]
    if key[0] == "op" and key[1] == "and" and len(key[2]) == 2:
        mask = as_const(key[2][1])
        if mask is None:
            mask = as_const(key[2][0])
        if mask:
            return _two_adic(mask)
    return 0


def low_zero_bits(atoms: Atoms, p: Poly) -> int:
    """How many low bits of `p` are zero whatever its atoms hold: the fewest of any term, a term's being its
    coefficient's plus its atoms' (`4096 * i * 4` has 14; `x & -16` has 4). Holds modulo any width, so for
    PTX's wrapping arithmetic too."""
    if not p:
        return _ALL_ZERO_BITS
    return min(_two_adic(c) + sum(_atom_zero_bits(atoms, a) for a in m) for m, c in p)


def value_bits(atoms: Atoms, p: Poly) -> int | None:
    """An upper bound on the bits a non-negative `p` needs (it lies in [0, 2**bits)), when one is known: a
    constant, a thread index (at most 1024 threads per block), an `and` with a non-negative constant mask,
    such a value shifted right by a constant, a sum of such terms with non-negative coefficients; None otherwise."""
    c = as_const(p)
    if c is not None:
        return c.bit_length() if c >= 0 else None
    total = 0
    for m, coef in p:
        if coef < 0 or len(m) > 1:
            return None
        if not m:
            total += coef
            continue
        key = atoms.keys[m[0]]
        bits: int | None = None
        if key[0] == "sym":
            bits = _INDEX_BITS.get(key[1])
        elif key[0] == "op" and key[1] == "and" and len(key[2]) == 2:
            mask = as_const(key[2][1])
            bits = mask.bit_length() if mask is not None and mask >= 0 else None
        elif key[0] == "op" and key[1] == "shr" and len(key[2]) == 2 and key[2][0] is not None:
            inner, shift = value_bits(atoms, key[2][0]), as_const(key[2][1])  # `(t & 12) >> 2` needs 2 bits
            bits = max(0, inner - shift) if inner is not None and shift is not None and shift >= 0 else None
        if bits is None:
            return None
        total += coef * ((1 << bits) - 1)
    return total.bit_length()


def disjoint_bits(atoms: Atoms, a: Value, b: Value) -> bool:
    """Whether no bit can be set in both `a` and `b`: one is non-negative and fits below the other's known
    low zero bits (an aligned base and a small offset, `(i * 4096) | 3`, `(warp << 5) | lane`). Then
    `a | b` and `a ^ b` are `a + b`, which is how nvcc often writes an addition it proved carry-free."""
    if a is None or b is None:
        return False
    for x, y in ((a, b), (b, a)):
        bits = value_bits(atoms, y)
        if bits is not None and bits <= low_zero_bits(atoms, x):
            return True
    return False


def evaluate(atoms: Atoms, p: Value, subst: dict[int, Value], cache: dict[int, Value]) -> Value:
    """Substitute atoms by values (recursively through operation arguments) and simplify.

    `subst` maps atom ids to replacement values, which are evaluated in turn (so a loop recurrence may map to
    a polynomial over outer recurrences). `cache` memoises atom results for this substitution. An operation
    that cannot be computed and had lane-dependent arguments becomes TOP, because its value then differs
    between lanes in a way we cannot describe.
    """
    if p is None:
        return None
    if len(p) == 1 and len(p[0][0]) == 1:  # one atom times a coefficient: its value scaled, nothing to sum
        (a,), c = p[0]
        term = _eval_atom(atoms, a, subst, cache)
        return term if term is None or c == 1 else tuple([(mt, ct * c) for mt, ct in term])
    # the terms' values summed in one table and normalised once (the sum does not depend on their order)
    total: dict[Mono, int] = {}
    for m, c in p:
        if len(m) == 1:  # the common term, `c` times one atom: a scaled value, no product to normalise
            term = _eval_atom(atoms, m[0], subst, cache)
            if term is None:
                return None
        else:
            term = const(c)
            c = 1
            for a in m:
                term = mul(term, _eval_atom(atoms, a, subst, cache))
                if term is None:
                    return None
        for mt, ct in term:
            total[mt] = total.get(mt, 0) + ct * c
    return _norm(total)


def _eval_atom(atoms: Atoms, a: int, subst: dict[int, Value], cache: dict[int, Value]) -> Value:
    if a in cache:
        return cache[a]
    cache[a] = None  # guards against cycles in substitutions
    if a in subst:
        r = evaluate(atoms, subst[a], subst, cache)
    else:
        key = atoms.keys[a]
        if key[0] == "op":
            args = tuple(evaluate(atoms, x, subst, cache) for x in key[2])
            r = (((a,), 1),) if args == key[2] else apply_op(atoms, key[1], args, key[3])
        else:
            r = (((a,), 1),)
    cache[a] = r
    return r


def has_ops(atoms: Atoms, p: Poly) -> bool:
    """Whether a value holds an operation node that could not be computed."""
    return any(atoms.keys[x][0] == "op" for m, _ in p for x in m)
