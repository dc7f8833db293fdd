"""The `shared-tiling` finding: global data that many threads of one block load again and again.

Two shapes are recognised from the byte addresses the memory analysis computed for each global load (its
polynomial in threadIdx.x, threadIdx.y and the loops' iterations, launch values substituted):

* a load in a loop whose address does not depend on threadIdx.x (or threadIdx.y) while the block has several
  threads along that dimension: the threads of a block row all read the same element at each iteration (a
  naive matrix multiply's `A[row * n + k]`; `B[k * n + col]` for the threads of a column). Each element is read
  by that many threads; a tile loaded once per block serves them all, so the load's requests drop by that
  factor;
* loads of one array whose addresses differ by small multiples of the lane step (a stencil's `in[i - 1]`,
  `in[i]`, `in[i + 1]`, unrolled or in a loop that steps by the lane step): neighbouring threads read
  overlapping windows, each element up to as many times as the window is wide; a tile of the block's
  footprint plus its halo is loaded once.

The fix is a rewrite of the whole kernel for the canonical shapes (`tiling_fixes`), and a snippet naming the
array and the threads that share its elements otherwise. Not reported without a known block shape, and not for
reuse below `MIN_READERS` threads (which the L1 cache serves well enough).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import ceil

from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.edits import insert_lines_above
from kerncast.analysis.finding import Finding, Fix, line_range, source_lines
from kerncast.analysis.findings import tiling_fixes as T
from kerncast.analysis.findings.kernel_rewrite import snippet_templates
from kerncast.analysis.findings.memory_access import lane_coeffs
from kerncast.analysis.memory.analysis import AccessInfo, WarpFacts
from kerncast.analysis.memory.render import cuda_symbol_name, kernel_param_names
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import SourceFacts, scanned

#: below this many threads reading each element the L1 cache already serves the re-reads: not reported
MIN_READERS = 3
#: the widest window along y (rows of a 2D stencil) a neighbourhood is looked for in
MAX_ROWS = 8
#: bytes one coalesced request of a warp moves at most (32 lanes of 4 bytes)
REQUEST_BYTES = 128
#: bytes of one sector, the unit the L2 and DRAM move
SECTOR_BYTES = 32
WARP = 32
_DIMS = ("x", "y")
_PARAM = re.compile(r"_param_(\d+)$")


@dataclass(slots=True)
class Reuse:
    """The loads of one array on one line whose elements several threads of a block read: how many threads
    read each element (`readers`), why, and the block's global requests now and with a shared tile."""

    line: int
    column: int
    array: str
    shape: str  # "row" (invariant along threadIdx.x), "column" (along threadIdx.y), "block" (both), "window"
    readers: int
    requests: float
    tiled_requests: float
    window: tuple[int, int] = (1, 1)  # for a window: its width along x and its rows along y
    first: int = 0  # the instruction index of its first load: the order the source reads the arrays in
    #: the instruction indices of its loads (several for unrolled copies or a window's neighbours): the loads a
    #: tile would serve, which the finding's gain re-prices (`stages.gains`)
    loads: tuple[int, ...] = ()
    #: the sectors the block's tile fill moves: its elements once each, loaded by whole rows of lanes
    tiled_sectors: float = 0.0


@dataclass(frozen=True, slots=True)
class _Load:
    """A candidate load with what the checks read of it: its byte address (launch values substituted), the
    byte coefficients of threadIdx.x, threadIdx.y and the loop iterations in it (`lane_coeffs`), and the array
    it reads. Computed once per load and kernel: the neighbourhood search compares every load of a line with
    every other, and evaluating the addresses there again made it quadratic in polynomial evaluations."""

    a: AccessInfo
    address: E.Value
    co: dict[str, E.Value]
    array: str


def _load(k: WarpFacts, a: AccessInfo, params: list[str]) -> _Load:
    address = k.at_launch(a.index)
    return _Load(a, address, lane_coeffs(k, a.index), _name(k, a, address, params))


def _warps(block: tuple[int, int, int]) -> int:
    return ceil(block[0] * block[1] * block[2] / WARP)


def _name(k: WarpFacts, a: AccessInfo, v: E.Value, params: list[str]) -> str:
    """The array a load reads: a declared array, else the kernel parameter its address `v` is built on."""
    declared = next((cuda_symbol_name(n) for n in a.arrays), "")
    if declared:
        return declared
    # the base pointer is the parameter added once to the address (`coord[i * num + p]`: coord, not num)
    for m_, c in v or ():
        key = k.atoms.keys[m_[0]] if len(m_) == 1 and c == 1 else ("",)
        m = _PARAM.search(str(key[1])) if key[0] == "sym" else None
        if m is not None and int(m.group(1)) < len(params):
            return params[int(m.group(1))]
    return "the array"


def _candidate(a: AccessInfo) -> bool:
    """A global load of the analysed file whose lanes' addresses are known (the memory analysis gives a line
    only to an access of the analysed file, `loc_in_file`)."""
    return a.space == "global" and a.kind == "load" and a.known and a.line is not None


def _invariant(k: WarpFacts, ld: _Load, block: tuple[int, int, int]) -> Reuse | None:
    """The reuse of a load in a loop whose address leaves out threadIdx.x or threadIdx.y (or both)."""
    a, v = ld.a, ld.address
    if v is None or a.executions <= 1:
        return None
    deep = k.atoms.deep_atoms_of(v)
    known = {k.lane_atoms["tid.x"], k.lane_atoms["tid.y"]}
    if any(k.atoms.lane[atom] and atom not in known for atom in deep):
        return None  # another value that differs between lanes: which threads share an element is not known
    if not any(atom in deep for atom in k.sym.iteration_atom.values()):
        return None  # the same element at every iteration: one register, no tile
    free = [d for i, d in enumerate(_DIMS) if block[i] > 1 and k.lane_atoms[f"tid.{d}"] not in deep]
    if not free:
        return None
    readers = 1
    for d in free:
        readers *= block[_DIMS.index(d)] if d == "y" else _active_width([a], block)
    if readers < MIN_READERS:
        return None
    requests = a.executions * _warps(block)
    shape = "block" if len(free) == 2 else "row" if free == ["x"] else "column"
    tiled = requests / readers
    return Reuse(a.line or 0, a.column, ld.array, shape, readers, requests, tiled, first=a.index,
                 loads=(a.index,), tiled_sectors=tiled * WARP * a.width_bytes / SECTOR_BYTES)


def _offset(diff: E.Value, cx: int, cy: E.Value, block: tuple[int, int, int]) -> tuple[int, int] | None:
    """(dx, dy) with diff == dx * cx + dy * cy bytes, |dx| below the block's width and |dy| below its height
    (and at most `MAX_ROWS`): two elements that threads of one block both read; None when the two addresses
    are not such neighbours."""
    reach = min(MAX_ROWS, block[1] - 1)  # threads of one block are fewer than block[1] rows apart
    if diff is None:
        return None
    rows = range(-reach, reach + 1) if cy is not None and cy != E.ZERO and reach > 0 else range(1)
    d0, d_var = E.split_const(diff)
    y0, y_var = E.split_const(cy) if cy is not None else (0, E.ZERO)
    if d_var or y_var:
        # a symbolic part: diff - dy * cy is a constant for one dy at most, the ratio of their symbolic parts
        dy = _ratio(d_var, y_var)
        rows = range(dy, dy + 1) if dy is not None and dy in rows else range(0)
    for dy in rows:
        rest = d0 - dy * y0
        if rest % cx == 0 and abs(rest // cx) < block[0]:
            return rest // cx, dy
    return None


def _ratio(p: E.Poly, q: E.Poly) -> int | None:
    """The integer k with p == k * q (0 for an empty p), or None where there is none."""
    if not p:
        return 0
    if not q or p[0][0] != q[0][0] or p[0][1] % q[0][1]:
        return None
    k = p[0][1] // q[0][1]
    return k if E.scale(q, k) == p else None


def _points(group: list[_Load], base: _Load, cx: int, cy: E.Value,
            block: tuple[int, int, int]) -> set[tuple[int, int]]:
    """The (dx, dy) element offsets, in lane steps and rows from `base`'s first element, that one thread reads
    through the loads of `group` that are a constant distance from `base`: each load's own offset, and for a
    load in a loop that steps by m lane steps, the offsets of its iterations (as many as can land within a
    block's width)."""
    b = base.address
    co = base.co.get("x")
    points: set[tuple[int, int]] = set()
    for ld in group:
        v = ld.address
        if b is None or v is None or ld.co.get("x") != co:
            continue
        off = _offset(E.sub(v, b), cx, cy, block)
        if off is None:
            continue
        step = E.as_const(ld.co.get("k"))
        m = step // cx if step and step % cx == 0 else 0
        reps = min(round(ld.a.executions), ceil(block[0] / abs(m)) + 1) if m else 1
        points.update((off[0] + m * j, off[1]) for j in range(max(reps, 1)))
    return points


def _densest(points: set[tuple[int, int]], width: int) -> set[tuple[int, int]]:
    """The most points whose dx lie within `width` lane steps of each other: the offsets whose elements one
    thread and its neighbours of the same block can share."""
    xs = sorted({dx for dx, _ in points})
    best: set[tuple[int, int]] = set()
    for x0 in xs:
        inside = {p for p in points if 0 <= p[0] - x0 < width}
        if len(inside) > len(best):
            best = inside
    return best


def _active_width(group: list[AccessInfo], block: tuple[int, int, int]) -> int:
    """How many neighbouring threads along x make these loads: the block's width, or fewer when fewer lanes of a
    warp are active at them (`if (threadIdx.x < 4)`: four lanes load a row, none of the others reads it)."""
    active = min((a.active_lanes for a in group if a.active_lanes is not None), default=None)
    lanes = min(WARP, block[0] * block[1] * block[2])  # the lanes of a full warp
    if active is None or active >= lanes - 0.5:
        return block[0]
    return max(1, min(block[0], int(active)))


def _windows(loads: list[_Load], block: tuple[int, int, int]) -> list[Reuse]:
    """The neighbourhoods: loads of one line and array whose addresses are lane-step multiples apart, or that
    step through a loop by a lane-step multiple; each element is read by as many threads of a block as one
    thread reads offsets within a block's width of each other."""
    groups: dict[tuple[int, str], list[_Load]] = {}
    for ld in loads:
        groups.setdefault((ld.a.line or 0, ld.array), []).append(ld)
    out = []
    for (line, array), group in groups.items():
        co = group[0].co
        first = group[0].a
        cx = E.as_const(co.get("x"))
        if cx is None or cx != first.width_bytes:
            continue
        best: set[tuple[int, int]] = set()
        reach = _active_width([ld.a for ld in group], block)
        for base in group:
            shared = _densest(_points(group, base, cx, co.get("y"), block), reach)
            if len(shared) > len(best):
                best = shared
        if len(best) < MIN_READERS:
            continue
        width = max(dx for dx, _ in best) - min(dx for dx, _ in best) + 1
        rows = max(dy for _, dy in best) - min(dy for _, dy in best) + 1
        requests = sum(ld.a.executions for ld in group) * _warps(block)
        footprint_rows = (block[1] + rows - 1) * block[2]
        row_bytes = (block[0] + width - 1) * first.width_bytes
        tiled = ceil(row_bytes / REQUEST_BYTES) * footprint_rows
        out.append(Reuse(line, first.column, array, "window", len(best), requests, float(min(tiled, requests)),
                         window=(width, rows), first=first.index, loads=tuple(ld.a.index for ld in group),
                         tiled_sectors=float(ceil(row_bytes / SECTOR_BYTES) * footprint_rows)))
    return out


def reuses(k: WarpFacts, loads: list[_Load], block: tuple[int, int, int]) -> list[Reuse]:
    """Every reuse of the kernel's global loads, merged per line and array (several unrolled copies of one
    source load are one reuse)."""
    found: dict[tuple[int, str], Reuse] = {}
    for r in _windows([ld for ld in loads if E.as_const(ld.co.get("x")) is not None], block):
        found[(r.line, r.array)] = r
    for ld in loads:
        r = _invariant(k, ld, block)
        if r is None or (r.line, r.array) in found and found[(r.line, r.array)].shape == "window":
            continue
        key = (r.line, r.array)
        if key in found:
            found[key].first = min(found[key].first, r.first)
            found[key].loads += r.loads
            found[key].requests += r.requests
            found[key].tiled_requests += r.tiled_requests
            found[key].tiled_sectors += r.tiled_sectors
        else:
            found[key] = r
    return sorted(found.values(), key=lambda r: (r.line, r.column, r.first))


_SHAPE_TEXT = {"row": "the {readers} threads of a block row (its address does not depend on threadIdx.x)",
               "column": "the {readers} threads of a block column (its address does not depend on threadIdx.y)",
               "block": "all {readers} threads of the block (its address depends on neither threadIdx.x nor "
                        "threadIdx.y)",
               "window": "up to {readers} neighbouring threads (their windows overlap)"}


def _describe(r: Reuse) -> str:
    return f"each element of {r.array} is read by " + _SHAPE_TEXT[r.shape].format(readers=r.readers)


def _fmt(n: float) -> str:
    return f"{n:,.0f}" if n >= 10 else f"{n:.1f}".rstrip("0").rstrip(".")


def _finding(ctx: KernelContext, line: int, found: list[Reuse], fix: Fix | None) -> Finding:
    requests = sum(r.requests for r in found)
    tiled = sum(r.tiled_requests for r in found)
    message = ("shared tiling: " + "; ".join(_describe(r) for r in found) +
               f". Staged through shared memory, a block would load each element once: about {_fmt(tiled)} global "
               f"load requests per block instead of {_fmt(requests)}")
    detail = {"arrays": [r.array for r in found], "readers": {r.array: r.readers for r in found},
              "shapes": {r.array: r.shape for r in found}, "requests_per_block": round(requests, 1),
              "tiled_requests_per_block": round(tiled, 1), "saved_requests_per_block": round(requests - tiled, 1),
              "ncu_metric": rule(Code.SHARED_TILING).ncu_metric}
    start, end = line_range(ctx.cuda_source, line, min(r.column for r in found))
    return Finding(Code.SHARED_TILING, "warning", line, start, line, end, message, detail=detail, fix=fix,
                   kernel=ctx.report.name)


def _templates() -> dict:
    return snippet_templates()[FixKind.SHARED_TILE.value]


def tile_snippet(facts: SourceFacts, line: int, found: list[Reuse]) -> Fix:
    """The template for the arrays of the line: a row or column tile for a dimension-invariant load, a tile
    with a halo for a window (data/snippets.toml [shared-tile])."""
    t = _templates()
    r = found[0]
    key = "window_text" if r.shape == "window" else "tile_text"
    names = " and ".join(x.array for x in found)
    text = [s.format(array=r.array, arrays=names, readers=r.readers, halo=r.window[0] - 1) for s in t[key]]
    kind = FixKind.SHARED_TILE
    return Fix(kind, f"snippet: {t['title'].format(arrays=names)}", {"line": line},
               [insert_lines_above(facts, line, [f"// kerncast snippet: {s}" if i == 0 else f"//   {s}"
                                                 for i, s in enumerate(text)])],
               rule(Code.SHARED_TILING).fix(kind).applicability)


def _fix(facts: SourceFacts | None, line: int, found: list[Reuse],
         block: tuple[int, int, int]) -> Fix | None:
    """The rewrite of the kernel where its body has a canonical shape, else the snippet."""
    if facts is None:
        return None
    fn = facts.function_at_line(line)
    kdef = next((d for d in facts.kernels if fn is not None and d.name_offset == fn.name_offset), None)
    if kdef is not None:
        shapes = {r.shape for r in found}
        if shapes == {"row", "column"}:
            fix = T.tiled_matmul(facts, kdef, block)
            if fix is not None:
                return fix
        if shapes == {"window"}:
            fix = T.tiled_stencil(facts, kdef, block)
            if fix is not None:
                return fix
    return tile_snippet(facts, line, found)


def kernel_reuses(ctx: KernelContext) -> list[Reuse]:
    """Every reuse of the kernel's global loads under its known block shape (none without one)."""
    memory = ctx.memory
    if memory is None or memory.facts is None or memory.facts.block is None:
        return []
    k = memory.facts
    params = kernel_param_names(ctx.cuda_source, ctx.function.name)
    loads = [_load(k, a, params) for a in memory.accesses if _candidate(a)]
    return reuses(k, loads, memory.facts.block)


def shared_tiling(ctx: KernelContext) -> list[Finding]:
    """One finding per source line with loads whose elements several threads of a block read."""
    by_line: dict[int, list[Reuse]] = {}
    for r in kernel_reuses(ctx):
        by_line.setdefault(r.line, []).append(r)
    if not by_line:
        return []
    assert ctx.memory is not None and ctx.memory.facts is not None and ctx.memory.facts.block is not None
    block = ctx.memory.facts.block
    facts = scanned(ctx.cuda_source)
    text = source_lines(ctx.cuda_source) if ctx.cuda_source else ()
    out = []
    for line, found in by_line.items():
        found.sort(key=lambda r: _source_order(text, line, r.array))
        out.append(_finding(ctx, line, found, _fix(facts, line, found, block)))
    return out


def _source_order(text: tuple[str, ...], line: int, array: str) -> int:
    """Where the line's text names the array first (its arrays are listed as the source reads them)."""
    at = re.search(rf"\b{re.escape(array)}\b", text[line - 1]) if 1 <= line <= len(text) else None
    return at.start() if at is not None else 1 << 30


def shared_tiling_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add the kernel's `shared-tiling` findings."""
    add_findings(ctx, shared_tiling)
