"""The one error type the PTX front end raises."""

from __future__ import annotations


class PtxSyntaxError(ValueError):
    """Malformed PTX, with the 1-based line and column where parsing stopped."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
