"""Where a line of a source file stands, found by its text: tests name the line they mean (a kernel's
signature, the conflicting read of a tile) instead of a number that moves whenever an example is edited."""

from __future__ import annotations

from pathlib import Path


def line_of(path: Path, needle: str) -> int:
    """The 1-based number of the first line of the file that contains `needle`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def line_after(path: Path, anchor: str, needle: str) -> int:
    """The 1-based number of the first line containing `needle` after the first line containing `anchor`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = line_of(path, anchor)
    return next(i for i, line in enumerate(lines[start:], start + 1) if needle in line)
