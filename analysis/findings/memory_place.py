"""Where a memory finding sits in the analysed source and how its figures are written: the helpers the memory
families (`memory_access.py`, `bank_conflicts.py`, `divergence.py`) share.
"""

from __future__ import annotations

from kerncast.analysis.finding import char_column, source_line_range
from kerncast.analysis.memory.analysis import WarpFacts
from kerncast.analysis.source_model import SourceFacts, scanned


def fmt_count(x: float | None) -> str:
    """A count as a finding writes it: whole when it is within 0.05 of a whole number, else to one decimal."""
    if x is None:
        return "?"
    return str(int(round(x))) if abs(x - round(x)) < 0.05 else f"{x:.1f}"


class MemorySource:
    """Lines of the analysed CUDA file for exact ranges, and its source model for declarations and fixes."""

    def __init__(self, text: str | None) -> None:
        self.lines = text.splitlines() if text else []
        self.facts: SourceFacts | None = scanned(text)

    def range(self, line: int, column: int) -> tuple[int, int]:
        """(start, end) characters of a finding at a `.loc` line and column (the column counts bytes)."""
        if column > 0 and 1 <= line <= len(self.lines):
            column = char_column(self.lines[line - 1], column)
        return source_line_range(self.lines, line, column)


def place(k: WarpFacts, line: int | None, column: int, file: str | None, src: MemorySource,
              kernel_line: int | None) -> tuple[int, int, int, str] | None:
    """(line, column, end column, prefix) for a finding; header lines go to the kernel's line."""
    if line is not None:
        c, e = src.range(line, column)
        return line, c, e, ""
    if kernel_line is None:
        return None
    c, e = src.range(kernel_line, 0)
    where = f"in {file}: " if file else ""
    return kernel_line, c, e, where
