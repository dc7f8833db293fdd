"""Tokens of PTX text.

One master regular expression turns the whole text into tokens with 1-based line and column, so the parser
never looks at characters and every error can say where it happened. Comments vanish here; `glued` records
that a token touches the previous one (`ld` `.global` in `ld.global`, `%tid` `.x` in `%tid.x`), which is how
the parser tells modifiers from the next word. A modifier may start with a digit (`tex.2d`, `.1d`) and carry
`::` sub-qualifiers (`.shared::cta`, `.mbarrier::complete_tx::bytes`, `.cta_group::1`): it stays one token.
"""

from __future__ import annotations

import re

from kerncast.analysis.ptx.errors import PtxSyntaxError

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<linecomment>//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<float>0[fF][0-9a-fA-F]{8}(?![0-9a-zA-Z_])|0[dD][0-9a-fA-F]{16}(?![0-9a-zA-Z_])
        |[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<int>0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?|[0-9]+[uU]?)
  | (?P<dir>\.(?:[A-Za-z_$][A-Za-z0-9_$]*|[0-9]+[A-Za-z_][A-Za-z0-9_$]*)(?:::[A-Za-z0-9_$]+)*)
  | (?P<ident>[A-Za-z_$%][A-Za-z0-9_$]*)
  | (?P<punct>[{}()\[\];,:+\-!@|<>=*/&^~?])
    """,
    re.VERBOSE | re.DOTALL,
)


class Token:
    """A token: kind in {float, int, dir, ident, punct, string, reused, eof}, its text, position and gluing.

    A plain slotted class rather than a frozen dataclass: tokens are made by the hundred thousand and a frozen
    dataclass's `__init__` costs several times more.
    """

    __slots__ = ("kind", "text", "line", "column", "glued")

    def __init__(self, kind: str, text: str, line: int, column: int, glued: bool) -> None:
        self.kind = kind
        self.text = text
        self.line = line
        self.column = column
        self.glued = glued

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.line}:{self.column})"


_BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.DOTALL)


def _blank_block_comments(text: str) -> str:
    """Replace block comments by spaces, keeping their newlines so positions do not move."""
    if "/*" not in text:
        return text
    return _BLOCK_COMMENT_RE.sub(lambda m: "".join(c if c == "\n" else " " for c in m.group()), text)


def tokenize(text: str, skip: dict[int, tuple[int, str]] | None = None) -> list[Token]:
    """Split PTX text into tokens; raise `PtxSyntaxError` at the first character that starts no token.

    Works line by line (PTX tokens never span lines once block comments are blanked), which keeps line and
    column bookkeeping out of the per-token loop. `skip` maps a first line to (last line, key) of text that
    is not lexed: one `reused` token carrying the key stands for it (a function parsed before, see reuse.py).
    """
    tokens: list[Token] = []
    append = tokens.append
    match = _TOKEN_RE.match
    lines = _blank_block_comments(text).split("\n")
    skip_to = 0
    for line_no, line in enumerate(lines, start=1):
        if line_no <= skip_to:
            continue
        if skip and line_no in skip:
            skip_to, key = skip[line_no]
            append(Token("reused", key, line_no, 1, False))
            continue
        pos = 0
        n = len(line)
        glued = False
        while pos < n:
            m = match(line, pos)
            if m is None:
                _raise_at(line, pos, line_no)
            kind = m.lastgroup
            end = m.end()
            if kind == "ws" or kind == "linecomment":
                glued = False
            else:
                append(Token(kind, m.group(), line_no, pos + 1, glued))  # type: ignore[arg-type]
                glued = True
            pos = end
    last = lines[-1] if lines else ""
    tokens.append(Token("eof", "", len(lines), len(last) + 1, False))
    return tokens


def _raise_at(line: str, pos: int, line_no: int) -> None:
    ch = line[pos]
    if line.startswith("/*", pos):
        raise PtxSyntaxError("unterminated block comment", line_no, pos + 1)
    if ch == '"':
        raise PtxSyntaxError("unterminated string", line_no, pos + 1)
    raise PtxSyntaxError(f"unexpected character {ch!r}", line_no, pos + 1)
