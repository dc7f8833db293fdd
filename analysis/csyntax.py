"""Token-level C syntax the source scanners share: bracket matching, argument lists, functions and calls.

Kerncast reads host code without a compiler (see `cexpr`), so it needs a few structural facts from the token
stream: which bracket closes which, where a function is defined (its parameter list and body), and where it
is called. These helpers work on any sequence of tokens with `kind`, `text` and `offset` (the `cexpr.Token`
named tuple), and tolerate the half-typed code an editor sends: an unbalanced bracket runs to the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class TokenLike(Protocol):
    """What these helpers read of a token."""

    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def offset(self) -> int: ...


_OPENING = ("(", "[", "{")
_CLOSING = (")", "]", "}")
#: words that take a parenthesised list before a `{` without being a function definition
_NOT_FUNCTIONS = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "do", "else",
                            "__launch_bounds__", "__attribute__", "alignas", "decltype"})
#: words after a parameter list's `)` that still belong to the function's header
_HEADER_WORDS = frozenset({"const", "noexcept", "override", "final", "volatile", "mutable"})
#: tokens after which `name(` is not a call of the free function `name` (a member, a qualified name, or a
#: declaration whose type ends right before the name)
_NOT_CALL_BEFORE = frozenset({".", "->", "::", "~"})
#: words that may stand right before a call (any other word there makes `name(` a declaration)
_CALL_AFTER_WORDS = frozenset({"return", "else", "do", "case", "throw", "co_return"})


def split_top(tokens: Sequence[TokenLike]) -> list[list[TokenLike]]:
    """Split tokens at commas outside (), [] and {}; no tokens give no parts."""
    parts: list[list[TokenLike]] = [[]]
    depth = 0
    for tok in tokens:
        if tok.text in _OPENING:
            depth += 1
        elif tok.text in _CLOSING:
            depth -= 1
        elif tok.text == "," and depth == 0:
            parts.append([])
            continue
        parts[-1].append(tok)
    return [] if parts == [[]] else parts


def split_parameters(tokens: Sequence[TokenLike]) -> list[list[TokenLike]]:
    """A parameter list's tokens, one run per parameter: commas inside template arguments (`std::pair<int, int>
    p`) do not split, which `split_top` cannot know in an expression (`a < b, c > d`). `(void)` has none."""
    parts: list[list[TokenLike]] = [[]]
    depth = 0
    for tok in tokens:
        depth += _PARAMETER_DEPTH.get(tok.text, 0)
        if tok.text == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(tok)
    if parts == [[]] or (len(parts) == 1 and [t.text for t in parts[0]] == ["void"]):
        return []
    return parts


_PARAMETER_DEPTH = {"(": 1, "[": 1, "{": 1, "<": 1, ")": -1, "]": -1, "}": -1, ">": -1, ">>": -2}


def matching_bracket(tokens: Sequence[TokenLike], k: int, step: int) -> int:
    """Index of the token that balances the bracket at k: forward (`step` 1) from an opening bracket to its
    closing one, or backward (`step` -1) from a closing bracket to its opening one. When the brackets do not
    balance, the index just past the scan (len(tokens) forward, -1 backward), which callers treat as "runs to
    the end" instead of failing on the half-typed code an editor sends."""
    deeper, shallower = (_OPENING, _CLOSING) if step > 0 else (_CLOSING, _OPENING)
    past = len(tokens) if step > 0 else -1
    depth = 0
    for j in range(k, past, step):
        if tokens[j].text in deeper:
            depth += 1
        elif tokens[j].text in shallower:
            depth -= 1
            if depth == 0:
                return j
    return past


@dataclass(frozen=True, slots=True)
class FunctionDefinition:
    """A function with a body: its name token, its parameter list's brackets and its body's braces.

    Indices are into the token list; `body_start` and `body_end` are the offsets of the `{` and the `}`.
    """

    name: str
    name_index: int
    open_index: int
    close_index: int
    body_start: int
    body_end: int

    def parameter_tokens(self, tokens: Sequence[TokenLike]) -> list[list[TokenLike]]:
        """The parameter list split into one token run per parameter (`(void)` has none)."""
        return split_parameters(tokens[self.open_index + 1:self.close_index])


def find_functions(tokens: Sequence[TokenLike], block_end: dict[int, int], end_offset: int
                   ) -> list[FunctionDefinition]:
    """Every `name(...) qualifiers {` outside another function's body: the function definitions.

    `block_end` maps the index of each `{` token to the offset of its `}`; `end_offset` stands for a body
    that is never closed.
    """
    out: list[FunctionDefinition] = []
    inside_until = -1
    for k, tok in enumerate(tokens):
        if tok.text != "{" or tok.offset <= inside_until:
            continue
        j = k - 1
        while j >= 0 and tokens[j].kind == "id" and tokens[j].text in _HEADER_WORDS:
            j -= 1
        if j < 0 or tokens[j].text != ")":
            continue
        open_at = matching_bracket(tokens, j, -1)
        if open_at <= 0 or tokens[open_at - 1].kind != "id" or tokens[open_at - 1].text in _NOT_FUNCTIONS:
            continue
        end = block_end.get(k, end_offset)
        out.append(FunctionDefinition(tokens[open_at - 1].text, open_at - 1, open_at, j, tok.offset, end))
        inside_until = end
    return out


def call_sites(tokens: Sequence[TokenLike], function: FunctionDefinition) -> list[int]:
    """Indices of the `(` of every call of the free function `function` outside its own body.

    A name followed by `(` is a call unless a member access or qualification comes before it (`a.f(`,
    `ns::f(`) or a word other than `return` and its kind does (`void f(`, a declaration). Calls inside the
    function itself (recursion) are left out: they cannot tell what the outside world passes.
    """
    out: list[int] = []
    for k in range(len(tokens) - 1):
        tok = tokens[k]
        if tok.kind != "id" or tok.text != function.name or tokens[k + 1].text != "(" or k == function.name_index:
            continue
        if function.body_start <= tok.offset <= function.body_end:
            continue
        before = tokens[k - 1] if k > 0 else None
        if before is not None and (before.text in _NOT_CALL_BEFORE
                                   or (before.kind == "id" and before.text not in _CALL_AFTER_WORDS)
                                   or before.text in ("*", "&") and _declares(tokens, k - 1)):
            continue
        out.append(k + 1)
    return out


def _declares(tokens: Sequence[TokenLike], k: int) -> bool:
    """Whether the `*` or `&` at k ends a return type (`float *f(`) rather than being an operator (`a * f(`)."""
    j = k
    while j >= 0 and tokens[j].text in ("*", "&"):
        j -= 1
    return j >= 0 and tokens[j].kind == "id" and (j == 0 or tokens[j - 1].text in (";", "{", "}", "static",
                                                                                     "inline", "extern"))
