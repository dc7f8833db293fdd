"""The `shared-tiling` rewrites: a whole kernel body replaced by its shared-memory tiled form, offered only for
a body of a canonical shape whose tiled form is known to compute the same result.

Each rewrite reads the body as a token string and matches it against one pattern (the names are the
user's, kept in the new body); anything else gets no rewrite. The preconditions are stated in the new code:
the launch's block, read from the launch the analysis used, is the tile (`blockDim` equal to it), and the
loads are guarded, so sizes that are not multiples of the tile compute the same sums (the naive kernel's
guard still decides which threads write). The summation order is kept (k ascending, the padding adds 0 * 0),
so the results are the same floating-point numbers.
"""

from __future__ import annotations

import re

from kerncast.analysis.finding import Fix
from kerncast.analysis.findings.kernel_rewrite import element_type, match_body, replace_body, taken_names
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import KernelDefinition, SourceFacts

#: the square tiles a matrix-multiply block may have (TILE * TILE threads, at most 1024)
MATMUL_TILES = (8, 16, 32)
#: the widest stencil halo rewritten (a radius beyond it is not a neighbourhood a block tile is made for)
MAX_RADIUS = 32

_ZERO = r"(?P<zero>0(?:\.0*)?[fF]?)"


def _increment(var: str) -> str:
    """The token pattern of a loop's step by one of the already matched variable `var` (`++k`, `k++`, `k += 1`)."""
    return rf"(?:\+\+ (?P={var})|(?P={var}) \+\+|(?P={var}) \+= 1)"


_NAIVE_MATMUL = re.compile(
    r"^\{ int (?P<row>\w+) = blockIdx \. y \* blockDim \. y \+ threadIdx \. y ; "
    r"int (?P<col>\w+) = blockIdx \. x \* blockDim \. x \+ threadIdx \. x ; "
    r"if \( (?P=row) < (?P<n>\w+) && (?P=col) < (?P=n) \) \{ "
    r"(?P<type>float|double) (?P<sum>\w+) = " + _ZERO + " ; "
    r"for \( int (?P<k>\w+) = 0 ; (?P=k) < (?P=n) ; " + _increment("k") + r" \) (?P<brace>\{ )?"
    r"(?P=sum) \+= (?P<a>\w+) \[ (?P=row) \* (?P=n) \+ (?P=k) \] \* (?P<b>\w+) \[ (?P=k) \* (?P=n) \+ (?P=col) \] ; "
    r"(?(brace)\} )(?P<c>\w+) \[ (?P=row) \* (?P=n) \+ (?P=col) \] = (?P=sum) ; \} \}$")
_NAIVE_STENCIL = re.compile(
    r"^\{ int (?P<i>\w+) = blockIdx \. x \* blockDim \. x \+ threadIdx \. x ; "
    r"if \( (?P=i) >= (?P<rad>\w+) && (?P=i) < (?P<n>\w+) - (?P=rad) \) \{ "
    r"(?P<type>float|double) (?P<sum>\w+) = " + _ZERO + " ; "
    r"for \( int (?P<r>\w+) = - (?P=rad) ; (?P=r) <= (?P=rad) ; " + _increment("r") + r" \) (?P<brace>\{ )?"
    r"(?P=sum) \+= (?P<inp>\w+) \[ (?P=i) \+ (?P=r) \] ; "
    r"(?(brace)\} )(?P<out>\w+) \[ (?P=i) \] = (?P=sum) ; \} \}$")


def _fresh(facts: SourceFacts, kdef: KernelDefinition, *wanted: str) -> list[str]:
    """Names for the new variables (`wanted`, else with a `kc_` prefix) that no name of the kernel or macro of
    the file takes."""
    used = taken_names(facts, kdef)
    return [w if w not in used else f"kc_{w}" for w in wanted]


def _rewrite(facts: SourceFacts, kdef: KernelDefinition, kind: FixKind, title: str, data: dict,
             lines: list[str]) -> Fix:
    """The fix that replaces the kernel's whole body by `lines`."""
    return Fix(kind, title, data, [replace_body(facts, kdef, lines)], rule(Code.SHARED_TILING).fix(kind).applicability)


def _types_agree(facts: SourceFacts, kdef: KernelDefinition, elem: str, *params: str) -> bool:
    return all(element_type(facts, kdef, p) == elem for p in params)


def tiled_matmul(facts: SourceFacts, kdef: KernelDefinition, block: tuple[int, int, int] | None) -> Fix | None:
    """Rewrite a naive square matrix multiply (`C[row * n + col] = sum of A[row * n + k] * B[k * n + col]`
    under `row < n && col < n`) as the tiled one for the launch's square block: each block loads a TILE x TILE
    tile of A and of B per step (0 outside the matrices), `__syncthreads()`, sums over the tile, and
    `__syncthreads()` again. Every thread reaches the barriers; the guard moves to the store."""
    g = match_body(facts, kdef, _NAIVE_MATMUL)
    if g is None or block is None or block[0] != block[1] or block[2] != 1 or block[0] not in MATMUL_TILES:
        return None
    elem = g["type"]
    if not _types_agree(facts, kdef, elem, g["a"], g["b"], g["c"]):
        return None
    tile, sa, sb, t, va, vb = _fresh(facts, kdef, "TILE", "As", "Bs", "t", "a", "b")
    row, col, n, k, s, zero = g["row"], g["col"], g["n"], g["k"], g["sum"], g["zero"]
    lines = [
        f"const int {tile} = {block[0]};  // launch with blockDim ({tile}, {tile}): one thread per element of a tile",
        f"__shared__ {elem} {sa}[{tile}][{tile}];",
        f"__shared__ {elem} {sb}[{tile}][{tile}];",
        f"int {row} = blockIdx.y * blockDim.y + threadIdx.y;",
        f"int {col} = blockIdx.x * blockDim.x + threadIdx.x;",
        f"{elem} {s} = {zero};",
        f"for (int {t} = 0; {t} < {n}; {t} += {tile}) {{",
        f"    // the tiles are 0 outside the matrices, so n need not be a multiple of {tile}; both elements are",
        "    // loaded before either is stored, so that the two loads are in flight together",
        f"    {elem} {va} = ({row} < {n} && {t} + (int)threadIdx.x < {n}) "
        f"? {g['a']}[{row} * {n} + {t} + threadIdx.x] : {zero};",
        f"    {elem} {vb} = ({t} + (int)threadIdx.y < {n} && {col} < {n}) "
        f"? {g['b']}[({t} + threadIdx.y) * {n} + {col}] : {zero};",
        f"    {sa}[threadIdx.y][threadIdx.x] = {va};",
        f"    {sb}[threadIdx.y][threadIdx.x] = {vb};",
        "    __syncthreads();",
        f"    for (int {k} = 0; {k} < {tile}; ++{k}) {{",
        f"        {s} += {sa}[threadIdx.y][{k}] * {sb}[{k}][threadIdx.x];",
        "    }",
        "    __syncthreads();",
        "}",
        f"if ({row} < {n} && {col} < {n}) {{",
        f"    {g['c']}[{row} * {n} + {col}] = {s};",
        "}",
    ]
    return _rewrite(facts, kdef, FixKind.TILED_MATMUL,
                    f"rewrite {kdef.name} as a tiled matrix multiply: {block[0]}x{block[0]} tiles of {g['a']} and "
                    f"{g['b']} in shared memory, each loaded once per block (for blockDim {block[0]}x{block[0]}, "
                    "any n)", {"kernel": kdef.name, "tile": block[0]}, lines)


def tiled_stencil(facts: SourceFacts, kdef: KernelDefinition, block: tuple[int, int, int] | None) -> Fix | None:
    """Rewrite a naive 1D stencil (`out[i] = sum of in[i + r]` for r in -R..R under `R <= i < n - R`) as one
    whose block first loads its elements and the R-wide halo on either side into shared memory (0 outside
    the array), `__syncthreads()`, then sums from the tile. For the launch's block of TILE x 1 x 1 threads."""
    g = match_body(facts, kdef, _NAIVE_STENCIL)
    if g is None or block is None or block[1] != 1 or block[2] != 1 or not 1 <= block[0] <= 1024:
        return None
    radius = facts.env.fold(g["rad"], kdef.body_start or 0).as_int()
    elem = g["type"]
    if radius is None or not 1 <= radius <= MAX_RADIUS or not _types_agree(facts, kdef, elem, g["inp"], g["out"]):
        return None
    tile, win, first, s, src = _fresh(facts, kdef, "TILE", "window", "first", "s", "src")
    i, n, rad, r, acc, zero = g["i"], g["n"], g["rad"], g["r"], g["sum"], g["zero"]
    lines = [
        f"const int {tile} = {block[0]};  // launch with blockDim.x <= {tile}, blockDim.y == blockDim.z == 1",
        f"__shared__ {elem} {win}[{tile} + 2 * {rad}];  // the block's elements and {rad} on either side",
        f"int {i} = blockIdx.x * blockDim.x + threadIdx.x;",
        f"int {first} = (int)(blockIdx.x * blockDim.x) - {rad};",
        f"for (int {s} = threadIdx.x; {s} < blockDim.x + 2 * {rad}; {s} += blockDim.x) {{",
        f"    int {src} = {first} + {s};",
        f"    {win}[{s}] = ({src} >= 0 && {src} < {n}) ? {g['inp']}[{src}] : {zero};",
        "}",
        "__syncthreads();",
        f"if ({i} >= {rad} && {i} < {n} - {rad}) {{",
        f"    {elem} {acc} = {zero};",
        f"    for (int {r} = -{rad}; {r} <= {rad}; ++{r}) {{",
        f"        {acc} += {win}[threadIdx.x + {rad} + {r}];",
        "    }",
        f"    {g['out']}[{i}] = {acc};",
        "}",
    ]
    return _rewrite(facts, kdef, FixKind.TILED_STENCIL,
                    f"rewrite {kdef.name} as a tiled stencil: the block's {block[0]} elements of {g['inp']} and the "
                    f"{radius}-element halo on either side loaded once into shared memory (for blockDim {block[0]}, "
                    "any n)", {"kernel": kdef.name, "tile": block[0], "radius": radius}, lines)
