"""The neighbour offsets of the shared-tiling finding (`tiling._offset`): the (dx, dy) with
diff == dx * cx + dy * cy bytes that it reports are those a search over every row distance finds, the first in
ascending dy, for constant and symbolic row pitches alike."""

from __future__ import annotations

import itertools

from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.findings.tiling import MAX_ROWS, _offset


def _searched(diff: E.Value, cx: int, cy: E.Value, block: tuple[int, int, int]) -> tuple[int, int] | None:
    """The definition: try every row distance a block spans, nearest-first in ascending order of dy."""
    reach = min(MAX_ROWS, block[1] - 1)
    rows = range(-reach, reach + 1) if cy is not None and cy != E.ZERO and reach > 0 else (0,)
    for dy in rows:
        rest = E.as_const(E.sub(diff, E.scale(cy, dy))) if dy else E.as_const(diff)
        if rest is not None and rest % cx == 0 and abs(rest // cx) < block[0]:
            return rest // cx, dy
    return None


def test_offsets_equal_the_search_over_row_distances() -> None:
    atoms = E.Atoms()
    n, m = atoms.sym("n"), atoms.sym("m")
    pitches = [None, E.ZERO, E.const(64), E.const(-8), E.scale(n, 4), E.add(E.scale(n, 4), E.const(4)),
               E.add(E.scale(n, 4), E.scale(m, 8))]
    diffs = [None, E.ZERO, *(E.const(c) for c in (4, -12, 64, 128, 132, 1024, 6))]
    for pitch in pitches[4:]:  # whole and partial multiples of a symbolic pitch, and strangers to it
        for k, c in itertools.product((-3, -1, 1, 2, 5), (0, 4, -8, 3)):
            diffs.append(E.add(E.scale(pitch, k), E.const(c)))
    diffs += [E.scale(m, 4), E.add(E.scale(n, 8), E.scale(m, 4)), E.mul(n, n)]
    checked = found = 0
    for diff, cy, cx, block in itertools.product(diffs, pitches, (4, 8), ((32, 8, 1), (16, 1, 1), (64, 4, 1))):
        assert _offset(diff, cx, cy, block) == _searched(diff, cx, cy, block), (diff, cy, cx, block)
        checked += 1
        found += _searched(diff, cx, cy, block) is not None
    assert found > 100 and checked - found > 100  # both outcomes are exercised
