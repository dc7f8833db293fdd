"""Tokens of PTX text.

One master regular expression turns the whole text into tokens with 1-based line and column, so the parser
never looks at characters and every error can say where it happened. Comments vanish here; `glued` records
that a token touches the previous one (`ld` `.global` in `ld.global`, `%tid` `.x` in `%tid.x`), which is how
the parser tells modifiers from the next word. A modifier may start with a digit (`tex.2d`, `.1d`) and carry
`::` sub-qualifiers (`.shared::cta`, `.mbarrier::complete_tx::bytes`, `.cta_group::1`): it stays one token.

For the parser the lexer also reads the three kinds of line that make up most of nvcc's output whole: a plain
instruction, a plain `.loc` and a register range (`LineToken`). One regular expression matches such a line
where dozens of token matches and token objects would be made; the line's grammar admits only what the token
path reads one way, and the parser turns any such line it does not read on its fast path back into tokens, so
the result is the same either way (tests/test_ptx_fast_path.py compares the two).
"""

from __future__ import annotations

import re
from collections.abc import Callable

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


class LineToken(Token):
    """A whole line read by one regular expression instead of token by token (`InstructionLine`, `LocLine`,
    `RegLine`).

    Only `tokenize(..., instructions=True)` makes them, for the parser's fast paths. Kind, text, line and
    column are those of the line's first token, so a reader that only looks at the current token sees what it
    would see without the fast path; `match` is the line's match, and `line_tokens` gives its tokens.
    """

    __slots__ = ("match",)

    def __init__(self, kind: str, text: str, line: int, column: int, match: re.Match[str]) -> None:
        super().__init__(kind, text, line, column, False)
        self.match = match


class InstructionLine(LineToken):
    """A line holding one plain instruction (`INSTRUCTION_LINE_RE`); its first token is the guard's `@` or the
    opcode."""

    __slots__ = ()

    def __init__(self, match: re.Match[str], line: int) -> None:  # (no super() chain: one per instruction)
        column = match.start("guard")
        if column >= 0:
            self.kind, self.text = "punct", "@"
        else:
            self.kind, self.text = "ident", match.group("opcode")
            column = match.start("opcode")
        self.line = line
        self.column = column + 1
        self.glued = False
        self.match = match


class LocLine(LineToken):
    """A `.loc file line column` line with nothing after the three numbers (`LOC_LINE_RE`)."""

    __slots__ = ()

    def __init__(self, match: re.Match[str], line: int) -> None:
        super().__init__("dir", ".loc", line, match.start("loc") + 1, match)


class RegLine(LineToken):
    """A `.reg .type %name<count>;` line: one register range, nvcc's form of every register declaration."""

    __slots__ = ()

    def __init__(self, match: re.Match[str], line: int) -> None:
        super().__init__("dir", ".reg", line, match.start("reg") + 1, match)


_WS = r"[ \t\r\f\v]"
#: a `%` register with glued dotted parts (`%r1`, `%tid.x`), or a plain name (label, symbol, the sink `_`)
_REG = r"%[A-Za-z0-9_$]+(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*"
_NAME = r"[A-Za-z_$][A-Za-z0-9_$]*"
_INT = r"(?:0[xX][0-9a-fA-F]+|[0-9]+)[uU]?"
_FLOAT = r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}"
_ITEM = rf"(?:{_REG}|{_NAME})"
#: the operands of the fast path, each a named group: a register, a name, a (negative) hex float or integer,
#: `[base]` or `[base+offset]` / `[base-offset]` / `[base+-offset]`, and `{a, b, ...}` of registers and names
OPERAND_RE = re.compile(
    rf"(?P<reg>{_REG})|(?P<name>{_NAME})|(?P<float>-?(?:{_FLOAT}))|(?P<int>-?{_INT})"
    rf"|\[(?P<base>{_ITEM})(?:(?P<sign>[+-])(?P<offset>-?{_INT}))?\]"
    rf"|\{{(?P<items>{_ITEM}(?:{_WS}*,{_WS}*{_ITEM})*)\}}"
)
_OPERAND = re.sub(r"\(\?P<\w+>", "(?:", OPERAND_RE.pattern)
#: one line holding one plain instruction: optional guard, opcode, glued modifiers (the lexer's `dir`), the
#: operands above separated by commas, `;` and an optional line comment. Every token of such a line is one the
#: token path reads the same way (see `line_instruction` in the parser); any other line takes the token path.
INSTRUCTION_LINE_RE = re.compile(
    rf"{_WS}*(?:(?P<guard>@(?P<neg>!?)(?P<pred>%[A-Za-z0-9_$]*|{_NAME})){_WS}+)?"
    rf"(?P<opcode>[A-Za-z_][A-Za-z0-9_$]*)"
    rf"(?P<mods>(?:\.(?:[A-Za-z_$][A-Za-z0-9_$]*|[0-9]+[A-Za-z_][A-Za-z0-9_$]*)(?:::[A-Za-z0-9_$]+)*)*)"
    rf"(?:{_WS}+(?P<operands>(?:{_OPERAND})(?:{_WS}*,{_WS}*(?:{_OPERAND}))*))?"
    rf"{_WS}*;{_WS}*(?://.*)?"
)

#: a register range declaration and nothing else on its line (`.reg .b32 %r<12>;`)
REG_LINE_RE = re.compile(
    rf"{_WS}*(?P<reg>\.reg){_WS}+\.(?P<type>[A-Za-z_$][A-Za-z0-9_$]*){_WS}+(?P<name>%[A-Za-z0-9_$]*)"
    rf"<(?P<count>[0-9]+)>{_WS}*;{_WS}*(?://.*)?")
#: a `.loc` directive of three decimal numbers and nothing else on its line (nvcc's form without inlining)
LOC_LINE_RE = re.compile(
    rf"{_WS}*(?P<loc>\.loc){_WS}+(?P<file>[0-9]+){_WS}+(?P<line>[0-9]+){_WS}+(?P<column>[0-9]+){_WS}*(?://.*)?")


_BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.DOTALL)


def _blank_block_comments(text: str) -> str:
    """Replace block comments by spaces, keeping their newlines so positions do not move."""
    if "/*" not in text:
        return text
    return _BLOCK_COMMENT_RE.sub(lambda m: "".join(c if c == "\n" else " " for c in m.group()), text)


def tokenize(text: str, skip: dict[int, tuple[int, str]] | None = None, *,
             instructions: bool = False) -> list[Token]:
    """Split PTX text into tokens; raise `PtxSyntaxError` at the first character that starts no token.

    Works line by line (PTX tokens never span lines once block comments are blanked), which keeps line and
    column bookkeeping out of the per-token loop. `skip` maps a first line to (last line, key) of text that
    is not lexed: one `reused` token carrying the key stands for it (a function parsed before, see reuse.py).
    With `instructions`, a line inside braces that holds one plain instruction (`INSTRUCTION_LINE_RE`), one
    plain `.loc` (`LOC_LINE_RE`) or one register range (`REG_LINE_RE`) becomes one `LineToken` instead of its
    tokens: the parser reads it at once, and any other reader gets its tokens back from `line_tokens` (see
    the parser's `advance`).
    """
    tokens: list[Token] = []
    append = tokens.append
    whole_line = INSTRUCTION_LINE_RE.fullmatch if instructions else None
    loc_line = LOC_LINE_RE.fullmatch
    reg_line = REG_LINE_RE.fullmatch
    lines = _blank_block_comments(text).split("\n")
    skip_to = 0
    depth = 0  # braces open (only counted for `instructions`: module-scope lines never take the fast path)
    for line_no, line in enumerate(lines, start=1):
        if line_no <= skip_to:
            continue
        if skip and line_no in skip:
            skip_to, key = skip[line_no]
            append(Token("reused", key, line_no, 1, False))
            continue
        if whole_line is None:
            _lex_line(line, line_no, append)
            continue
        if not line:
            continue
        if depth > 0:
            m = whole_line(line)
            if m is not None:
                append(InstructionLine(m, line_no))
                continue
            m = loc_line(line)
            if m is not None:
                append(LocLine(m, line_no))
                continue
            m = reg_line(line)
            if m is not None:
                append(RegLine(m, line_no))
                continue
        before = len(tokens)
        _lex_line(line, line_no, append)
        for k in range(before, len(tokens)):
            t = tokens[k]
            if t.kind == "punct":
                if t.text == "{":
                    depth += 1
                elif t.text == "}":
                    depth -= 1
    last = lines[-1] if lines else ""
    tokens.append(Token("eof", "", len(lines), len(last) + 1, False))
    return tokens


def line_tokens(token: LineToken) -> list[Token]:
    """The tokens of a line read whole, as `tokenize` without `instructions` makes them."""
    out: list[Token] = []
    _lex_line(token.match.string, token.line, out.append)
    return out


def _lex_line(line: str, line_no: int, append: Callable[[Token], None]) -> None:
    """Append the tokens of one line (block comments already blanked)."""
    match = _TOKEN_RE.match
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


def _raise_at(line: str, pos: int, line_no: int) -> None:
    ch = line[pos]
    if line.startswith("/*", pos):
        raise PtxSyntaxError("unterminated block comment", line_no, pos + 1)
    if ch == '"':
        raise PtxSyntaxError("unterminated string", line_no, pos + 1)
    raise PtxSyntaxError(f"unexpected character {ch!r}", line_no, pos + 1)
