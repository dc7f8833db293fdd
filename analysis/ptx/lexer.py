"""Tokens of PTX text.

One master regular expression turns the whole text into tokens with 1-based line and column, so the parser
never looks at characters and every error can say where it happened. Comments vanish here; `glued` records
that a token touches the previous one (`ld` `.global` in `ld.global`, `%tid` `.x` in `%tid.x`), which is how
the parser tells modifiers from the next word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerncast.analysis.ptx.errors import PtxSyntaxError

_TOKEN_RE = re.compile(
    r"""
    (?P<nl>\n)
  | (?P<ws>[ \t\r\f\v]+)
  | (?P<linecomment>//[^\n]*)
  | (?P<blockcomment>/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<float>0[fF][0-9a-fA-F]{8}(?![0-9a-zA-Z_])|0[dD][0-9a-fA-F]{16}(?![0-9a-zA-Z_])
        |[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<int>0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?|[0-9]+[uU]?)
  | (?P<dir>\.[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<ident>[A-Za-z_$%][A-Za-z0-9_$]*)
  | (?P<punct>[{}()\[\];,:+\-!@|<>=*/&^~?])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Token:
    """A token: kind in {float, int, dir, ident, punct, string, eof}, its text, position and gluing."""

    kind: str
    text: str
    line: int
    column: int
    glued: bool


def tokenize(text: str) -> list[Token]:
    """Split PTX text into tokens; raise `PtxSyntaxError` at the first character that starts no token."""
    tokens: list[Token] = []
    line = 1
    line_start = 0
    pos = 0
    glued = False
    n = len(text)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            col = pos - line_start + 1
            ch = text[pos]
            if ch == "/" and text.startswith("/*", pos):
                raise PtxSyntaxError("unterminated block comment", line, col)
            if ch == '"':
                raise PtxSyntaxError("unterminated string", line, col)
            raise PtxSyntaxError(f"unexpected character {ch!r}", line, col)
        kind = m.lastgroup or ""
        end = m.end()
        if kind == "nl":
            line += 1
            line_start = end
            glued = False
        elif kind in ("ws", "linecomment"):
            glued = False
        elif kind == "blockcomment":
            newlines = text.count("\n", pos, end)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, end) + 1
            glued = False
        else:
            tokens.append(Token(kind, m.group(), line, pos - line_start + 1, glued))
            glued = True
        pos = end
    tokens.append(Token("eof", "", line, pos - line_start + 1, False))
    return tokens
