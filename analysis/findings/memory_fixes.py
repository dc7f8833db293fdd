"""The memory rules' fix builders: concrete text edits, or a snippet where no complete rewrite is known.

Each builder gets the source model and the warp-level facts of the access that was found, and returns a
`Fix` whose edits change only what the fix is about: the array declared in the function that makes the
access, the thread coordinates of one kernel, or one kernel's whole body. A fix is offered only when the
builder can tell that it removes the finding (the padding is chosen by replaying the warp's lanes against
the padded layout; a rewrite is offered only for a pattern whose rewrite is known to compute the same result).
Where that is not known the builder returns a snippet: comment lines to adapt, never a declaration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerncast.analysis.edits import insert_lines_above, replace
from kerncast.analysis.finding import Fix
from kerncast.analysis.findings.kernel_rewrite import (
    element_type,
    match_body,
    replace_body,
    snippet_templates,
    taken_names,
)
from kerncast.analysis.rules import RULES, Code, FixKind, rule
from kerncast.analysis.source_model import ArrayDeclaration, KernelDefinition, SourceFacts

BANKS = 32
WARP = 32
MAX_PADDING = 32


@dataclass(frozen=True, slots=True)
class LaneCoefficients:
    """Bytes the address moves per step of threadIdx.x and threadIdx.y (None when not a constant)."""

    x: int | None
    y: int | None


def _fix(code: Code, kind: FixKind, description: str, data: dict, edits: list) -> Fix:
    return Fix(kind, description, data, edits, rule(code).fix(kind).applicability)


# ------------------------------------------------------------------------------------------ padding


def _wavefronts(cx: int, cy: int, block: tuple[int, int, int], width: int) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp's request whose byte offsets are cx*threadIdx.x + cy*threadIdx.y."""
    bx, by = block[0], block[1]
    lanes = [(t % bx, (t // bx) % by) for t in range(min(WARP, bx * by))]
    per_phase = max(1, WARP * 4 // max(width, 4))
    actual = ideal = 0
    for p in range(0, len(lanes), per_phase):
        banks: dict[int, set[int]] = {}
        words: set[int] = set()
        for tx, ty in lanes[p:p + per_phase]:
            first = (cx * tx + cy * ty) // 4
            for w in range(first, first + max(1, width // 4)):
                banks.setdefault(w % BANKS, set()).add(w)
                words.add(w)
        actual += max(len(s) for s in banks.values())
        ideal += max(1, -(-len(words) // BANKS))
    return actual, ideal


def _padded(c: int, row_bytes: int, extra_bytes: int) -> int:
    """A byte coefficient after each row grows by `extra_bytes`: whole rows stretch, the rest stays."""
    rows, rest = divmod(c, row_bytes)
    return rows * (row_bytes + extra_bytes) + rest


def pad_shared_array(facts: SourceFacts, decl: ArrayDeclaration, co: LaneCoefficients,
                     block: tuple[int, int, int] | None, width: int, ways_min: float,
                     others: list[tuple[LaneCoefficients, int]] | None = None) -> Fix | None:
    """Grow the last dimension of a 2-D (or deeper) shared array by the fewest elements that leave no
    conflict for this access and none for the kernel's `others` accesses to the same array (their lane
    coefficients and widths); None when the sizes cannot be folded or no padding up to 32 does that."""
    if len(decl.dims) < 2:
        return None
    accesses = [(co, width), *(others or [])]
    if any(c.x is None or c.y is None or c.x < 0 or c.y < 0 for c, _ in accesses):
        return None
    last = decl.dims[-1]
    size = facts.env.fold(last.text, decl.offset).as_int()
    if size is None or size <= 0:
        return None
    row_bytes = size * width
    shape = block or (WARP, 1, 1)
    before, _ = _wavefronts(co.x or 0, co.y or 0, shape, width)
    for pad in range(1, MAX_PADDING + 1):
        after = [_wavefronts(_padded(c.x or 0, row_bytes, pad * width), _padded(c.y or 0, row_bytes, pad * width),
                             shape, w) for c, w in accesses]
        if after[0][0] < before and all(actual / ideal < ways_min for actual, ideal in after):
            text = last.text.strip()
            new = str(size + pad) if text.isdigit() else f"{text} + {pad}"
            return _fix(Code.SHARED_BANK_CONFLICT, FixKind.PAD_SHARED_ARRAY,
                        f"pad the last dimension of '{decl.name}' by {pad} element{'s' if pad > 1 else ''} so "
                        "that the lanes of a warp spread over all 32 banks",
                        {"array": decl.name, "padding": pad, "line": facts.position(decl.offset)[0]},
                        [replace(facts, last.start, last.end, new)])
    return None


# ------------------------------------------------------------------------------------------ thread swap


def swap_thread_indices(facts: SourceFacts, kdef: KernelDefinition) -> Fix | None:
    """Exchange threadIdx.x and threadIdx.y throughout the kernel's body.

    With a square block this relabels the threads of each block: every block still covers the same
    elements, and only which lane of a warp handles which element changes. It is `unsafe` because code that
    relies on warp membership (shuffles, votes) would see different partners.
    """
    if kdef.body_start is None or kdef.body_end is None or kdef.file is not None:
        return None
    toks = facts.env.tokens
    edits = []
    for i in range(len(toks) - 2):
        t = toks[i]
        if t.offset <= kdef.body_start or t.offset >= kdef.body_end:
            continue
        if t.text == "threadIdx" and toks[i + 1].text == "." and toks[i + 2].text in ("x", "y"):
            axis = toks[i + 2]
            edits.append(replace(facts, axis.offset, axis.offset + 1, "y" if axis.text == "x" else "x"))
    if not edits:
        return None
    return _fix(Code.UNCOALESCED_GLOBAL, FixKind.SWAP_THREAD_INDICES,
                f"exchange threadIdx.x and threadIdx.y in {kdef.name} so that consecutive lanes touch "
                "consecutive elements (the square block covers the same elements)",
                {"kernel": kdef.name}, edits)


# ------------------------------------------------------------------------------------------ transpose


_NAIVE_TRANSPOSE = re.compile(
    r"^\{ int (?P<x>\w+) = blockIdx \. x \* (?P<t>\w+) \+ threadIdx \. x ; "
    r"int (?P<y>\w+) = blockIdx \. y \* (?P=t) \+ threadIdx \. y ; "
    r"for \( int (?P<j>\w+) = 0 ; (?P=j) < (?P=t) ; (?P=j) \+= (?P<r>\w+) \) (?P<brace>\{ )?"
    r"(?P<out>\w+) \[ (?P=x) \* (?P<h>\w+) \+ \( (?P=y) \+ (?P=j) \) \] = "
    r"(?P<inp>\w+) \[ \( (?P=y) \+ (?P=j) \) \* (?P<w>\w+) \+ (?P=x) \] ; (?(brace)\} )\}$")
#: the same transpose with its two indices named first, as NVIDIA's `transposeNaive` sample writes it
_INDEXED_TRANSPOSE = re.compile(
    r"^\{ int (?P<x>\w+) = blockIdx \. x \* (?P<t>\w+) \+ threadIdx \. x ; "
    r"int (?P<y>\w+) = blockIdx \. y \* (?P=t) \+ threadIdx \. y ; "
    r"int (?P<iin>\w+) = (?P=x) \+ (?P<w>\w+) \* (?P=y) ; "
    r"int (?P<iout>\w+) = (?P=y) \+ (?P<h>\w+) \* (?P=x) ; "
    r"for \( int (?P<j>\w+) = 0 ; (?P=j) < (?P=t) ; (?P=j) \+= (?P<r>\w+) \) (?P<brace>\{ )?"
    r"(?P<out>\w+) \[ (?P=iout) \+ (?P=j) \] = (?P<inp>\w+) \[ (?P=iin) \+ (?P=j) \* (?P=w) \] ; "
    r"(?(brace)\} )\}$")


def tiled_transpose(facts: SourceFacts, kdef: KernelDefinition,
                    block: tuple[int, int, int] | None) -> Fix | None:
    """Rewrite a naive transpose body (`out[x * h + (y + j)] = in[(y + j) * w + x]` over a T x R block, or the
    same with `index_in = x + w * y` and `index_out = y + h * x` named first: `out[index_out + j] =
    in[index_in + j * w]`) as
    the tiled one: coalesced loads into a padded T x (T + 1) shared tile, `__syncthreads()`, coalesced
    stores of the transposed tile. Same element mapping, same block and grid; None for any other body."""
    g = match_body(facts, kdef, _NAIVE_TRANSPOSE, _INDEXED_TRANSPOSE)
    if g is None or kdef.body_start is None:
        return None
    tile_size = facts.env.fold(g["t"], kdef.body_start).as_int()
    rows = facts.env.fold(g["r"], kdef.body_start).as_int()
    if tile_size is None or rows is None or block is None or (block[0], block[1]) != (tile_size, rows):
        return None
    elem = element_type(facts, kdef, g["out"])
    if elem is None or elem != element_type(facts, kdef, g["inp"]):
        return None
    used = taken_names(facts, kdef)
    tile = next(n for n in ("tile", "transpose_tile", "kc_tile") if n not in used)
    x, y, j, t, r = g["x"], g["y"], g["j"], g["t"], g["r"]
    lines = [
        f"__shared__ {elem} {tile}[{t}][{t} + 1];  // one padding column: no bank conflicts",
        f"int {x} = blockIdx.x * {t} + threadIdx.x;",
        f"int {y} = blockIdx.y * {t} + threadIdx.y;",
        f"for (int {j} = 0; {j} < {t}; {j} += {r})",
        f"    {tile}[threadIdx.y + {j}][threadIdx.x] = {g['inp']}[({y} + {j}) * {g['w']} + {x}];",
        "__syncthreads();",
        f"{x} = blockIdx.y * {t} + threadIdx.x;",
        f"{y} = blockIdx.x * {t} + threadIdx.y;",
        f"for (int {j} = 0; {j} < {t}; {j} += {r})",
        f"    {g['out']}[({y} + {j}) * {g['h']} + {x}] = {tile}[threadIdx.x][threadIdx.y + {j}];",
    ]
    return _fix(Code.UNCOALESCED_GLOBAL, FixKind.TILED_TRANSPOSE,
                f"rewrite {kdef.name} as a tiled transpose: coalesced loads into a padded shared tile, "
                "__syncthreads(), coalesced stores of the transposed tile",
                {"kernel": kdef.name, "tile": f"[{t}][{t} + 1]"},
                [replace_body(facts, kdef, lines)])


# ------------------------------------------------------------------------------------------ snippets


def _snippet(facts: SourceFacts, kind: FixKind, line: int, array: str | None) -> Fix:
    """The template of `kind` (data/snippets.toml) for `array`, as comment lines above the finding's line:
    a template to adapt, which declares nothing."""
    template = snippet_templates()[kind.value]
    name = array or template["default_array"]
    text = [s.format(array=name) for s in template["text"]]
    code = next(r.code for r in RULES.values() if any(f.kind == kind for f in r.fixes))
    return _fix(code, kind, f"snippet: {template['title'].format(array=name)}", {"line": line},
                [insert_lines_above(facts, line, [f"// kerncast snippet: {s}" if i == 0 else f"//   {s}"
                                                   for i, s in enumerate(text)])])


def stage_snippet(facts: SourceFacts, line: int, array: str | None) -> Fix:
    """Staging a strided global access through a shared-memory tile."""
    return _snippet(facts, FixKind.STAGE_THROUGH_SHARED, line, array)


def _struct_array_on_line(facts: SourceFacts, line: int) -> str | None:
    """The first `name[...]` on the line that is followed by `.field` or `->field`: the array of structs."""
    toks = [t for t in facts.env.tokens if facts.position(t.offset)[0] == line]
    for i, t in enumerate(toks[:-1]):
        if t.kind == "id" and toks[i + 1].text == "[":
            depth = 0
            for j in range(i + 1, len(toks)):
                depth += {"[": 1, "]": -1}.get(toks[j].text, 0)
                if depth == 0:
                    if j + 1 < len(toks) and toks[j + 1].text in (".", "->"):
                        return t.text
                    break
    return None


def soa_snippet(facts: SourceFacts, line: int, array: str | None) -> Fix:
    """Storing an array of structures as a structure of arrays (the array is read from the line)."""
    return _snippet(facts, FixKind.USE_SOA, line, _struct_array_on_line(facts, line) or array)


def sequential_snippet(facts: SourceFacts, line: int, array: str | None) -> Fix:
    """Sequential addressing in a shared-memory reduction."""
    return _snippet(facts, FixKind.SEQUENTIAL_ADDRESSING, line, array)


def swizzle_snippet(facts: SourceFacts, line: int, array: str) -> Fix:
    """An XOR swizzle of a shared array's columns."""
    return _snippet(facts, FixKind.SWIZZLE, line, array)
