"""Which warps, blocks or iterations an analysis reads when it cannot read them all.

The memory analysis instantiates a few warps of a block; a trip count that differs between threads counts
the lanes of a few warps and blocks, and one that moves with its enclosing loop reads a few of that loop's
iterations. They all take the same sample: indices spread evenly from the first to the last, so the ends (a
block's partial last warp, a grid's last block, a loop's last, shorter pass) are always among them.
"""

from __future__ import annotations

from math import prod


def evenly_spread(n: int, most: int) -> list[int]:
    """Indices 0..n-1: all of them up to `most`, else `most` of them spread evenly from the first to the last."""
    if n <= most:
        return list(range(n))
    return sorted({round(k * (n - 1) / (most - 1)) for k in range(most)})


def spread_combinations(sizes: list[int], most: int) -> list[list[int]]:
    """Index tuples of the product of `sizes` (one index per factor): all of them up to `most`, else `most` of
    them spread evenly over the whole product, numbered in mixed radix with the first factor the slowest digit,
    so that the first and last combinations (every factor at its first, every factor at its last) are among
    them."""
    out: list[list[int]] = []
    for number in evenly_spread(prod(sizes), most):
        digits = []
        for size in reversed(sizes):
            number, digit = divmod(number, size)
            digits.append(digit)
        digits.reverse()
        out.append(digits)
    return out
