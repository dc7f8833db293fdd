"""Columns in the unit the client negotiated: code points inside the server, UTF-16/UTF-8/UTF-32 on the wire.

The library counts columns in code points of the analysed text (Python string indices). LSP counts them in
UTF-16 code units unless the client offered another encoding in `general.positionEncodings` and the server
chose it (pygls picks the client's first supported one and answers it in `ServerCapabilities.positionEncoding`).
The two differ on any character outside the Basic Multilingual Plane (an emoji is one code point, two UTF-16
units, four UTF-8 bytes), so every column is converted once, where a position enters or leaves the server,
against the text of the line it is on.
"""

from __future__ import annotations

from collections.abc import Sequence

from kerncast.analysis.locate import split_lines as split_lines  # LSP's lines, as the library splits them
from lsprotocol import types as lsp

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"

def encoding_name(kind: object) -> str:
    """The encoding as its LSP string (`PositionEncodingKind` members and plain strings alike); UTF-16 when
    the client said nothing."""
    value = getattr(kind, "value", kind)
    return value if value in (UTF8, UTF16, UTF32) else UTF16


def _units(ch: str, encoding: str) -> int:
    if encoding == UTF8:
        return len(ch.encode("utf-8", "surrogatepass"))
    if encoding == UTF16:
        return 2 if ord(ch) > 0xFFFF else 1
    return 1


def to_client(line: str, column: int, encoding: str) -> int:
    """A code-point column of `line` in the client's units (a column past the line's end keeps its excess)."""
    if encoding == UTF32 or line.isascii():
        return column
    head = line[: max(0, column)]
    return sum(_units(ch, encoding) for ch in head) + max(0, column - len(line))


def from_client(line: str, units: int, encoding: str) -> int:
    """A column in the client's units as a code-point column of `line`; a column inside a character (half of a
    surrogate pair, a byte inside a UTF-8 sequence) is the character's start, one past the end stays past it."""
    if encoding == UTF32 or line.isascii():
        return units
    counted = 0
    for i, ch in enumerate(line):
        width = _units(ch, encoding)
        if counted + width > units:
            return i
        counted += width
    return len(line) + max(0, units - counted)


def range_to_client(lines: Sequence[str], rng: lsp.Range, encoding: str) -> lsp.Range:
    """A code-point range of these lines in the client's unit (the lines are the text the range is in)."""
    def out(pos: lsp.Position) -> lsp.Position:
        text = lines[pos.line] if 0 <= pos.line < len(lines) else ""
        return lsp.Position(pos.line, to_client(text, pos.character, encoding))

    return lsp.Range(out(rng.start), out(rng.end))
