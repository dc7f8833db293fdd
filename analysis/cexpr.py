"""A small C/C++ constant folder for the host code around kernel launches.

Launch sizes are usually written as constant expressions over `#define`s, `const`/`constexpr` variables and
`dim3` objects (`dim3 grid(n / threads.x, n / threads.y)`). This module folds such expressions without a
compiler. It is deliberately not a C parser: it scans tokens, knows declarations of scalar and `dim3`
variables and object- and function-like macros, and evaluates integer arithmetic with C's types and rules
(`intops`: `int` is 32-bit, `-1 < 1u` is false, `(unsigned)-1` is 4294967295), and the floating arithmetic of
`ceil(n / (float)block.x)` with IEEE rounding (`cfloat`). Whatever it cannot fold comes
back as unknown with the reason (the first name or construct it could not evaluate, or an operation C leaves
undefined such as signed overflow or a shift by the width), never as a guess.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from kerncast.analysis.cfloat import (
    FLOAT_TYPES,
    ROUNDING_FUNCTIONS,
    CFloat,
    FloatError,
    float_binary,
    float_literal,
    to_integer,
)
from kerncast.analysis.csyntax import FunctionDefinition, call_sites, find_functions
from kerncast.analysis.intops import (
    C_BOOL,
    C_INT,
    C_LLONG,
    C_TYPES,
    C_UINT,
    C_ULONG,
    CType,
    NoValue,
    c_binary,
    c_common,
    c_convert,
    c_literal_type,
    c_unary,
)

Dim3 = tuple[int, int, int]
#: a folded value: an integer, a `dim3`, or a floating value (kept apart: a float kernel argument is no integer)
Value = int | float | Dim3

# ------------------------------------------------------------------------------------------ scanning


@dataclass(frozen=True, slots=True)
class Comment:
    """A comment of the source: its text (with the `//` or `/* */` markers) and its offsets."""

    start: int
    end: int
    text: str


def mask_source(source: str) -> tuple[str, list[Comment]]:
    """Blank out comments and the contents of string and character literals, keeping every offset.

    Comments become spaces (their newlines are kept, so line numbers stay right); literals keep their quotes
    and lose their contents, so that a `<<<` or `;` inside a string or a comment is never seen as code.
    A regular expression finds the next place where a comment or a literal may start, so the text between is
    copied as it is instead of looked at character by character.
    """
    pieces: list[str] = []
    comments: list[Comment] = []
    done = 0  # source[:done] is in `pieces`

    def blank(start: int, end: int) -> None:
        nonlocal done
        end = max(start, end)
        pieces.append(source[done:start])
        pieces.append(_NOT_NEWLINE.sub(" ", source[start:end]))
        done = end

    i, n = 0, len(source)
    while (m := _MASK_START.search(source, i)) is not None:
        i = m.start()
        c = source[i]
        if c == "/":
            if source[i + 1] == "/":
                end = _line_comment_end(source, i)
            else:
                close = source.find("*/", i + 2)
                end = n if close < 0 else close + 2
            comments.append(Comment(i, end, source[i:end]))
            blank(i, end)
            i = end
        elif c == "'" and _is_digit_separator(source, i):
            i += 1
        else:
            end = _literal_end(source, i)
            blank(i + 1, end - 1)
            i = end
    if not pieces:
        return source, comments
    pieces.append(source[done:])
    return "".join(pieces), comments


#: where a comment or a string or character literal may start
_MASK_START = re.compile(r"/[/*]|[\"']")
_NOT_NEWLINE = re.compile(r"[^\n]")


def _is_digit_separator(source: str, i: int) -> bool:
    """Whether the quote at i separates digits of a number (`1'000'000`) rather than opening a char literal."""
    if i + 1 >= len(source) or not source[i + 1].isalnum():
        return False
    j = i - 1
    while j >= 0 and (source[j].isalnum() or source[j] in "'_"):
        j -= 1
    return j + 1 < i and source[j + 1].isdigit()


def _line_comment_end(source: str, start: int) -> int:
    """End of a `//` comment, following backslash-newline continuations as the preprocessor does."""
    i = start
    while True:
        nl = source.find("\n", i)
        if nl < 0:
            return len(source)
        if source[nl - 1] == "\\" or (source[nl - 1] == "\r" and source[nl - 2] == "\\"):
            i = nl + 1
            continue
        return nl


def _literal_end(source: str, start: int) -> int:
    """Offset just past the string or character literal opening at `start` (an unclosed one ends its line)."""
    quote = source[start]
    i = start + 1
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == "\n":
            return i
        i += 1
    return len(source)


class Token(NamedTuple):
    """A C token: kind is `num`, `id`, `op`, `str` or `other`; offset is into the scanned text.

    A named tuple rather than a frozen dataclass (the same fields, immutability, equality, hash and repr): the
    scanners make one for every token of the file on every save, and a tuple is built several times faster.
    """

    kind: str
    text: str
    offset: int


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*(?:\.[\d']*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
           [uUlLfFzZ]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<str>"[^"\n]*"|'[^'\n]*')
  | (?P<op><<<|>>>|<<=|>>=|->|::|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%&|^]=|[-+*/%&|^~!<>=?:;,.()\[\]{}\#])
  | (?P<other>.)
    """,
    re.X | re.S,
)


def tokenize(text: str, base: int = 0) -> list[Token]:
    """Tokens of (masked) C text; offsets are `base` plus the position in `text`."""
    make = _new_token
    return [make(Token, (m.lastgroup or "other", m.group(), base + m.start()))
            for m in _TOKEN_RE.finditer(text) if m.lastgroup != "ws"]


#: builds a Token from a (kind, text, offset) tuple without the keyword handling of `Token(...)`, as
#: `Token._make` does; the tokenizer's inner loop
_new_token = tuple.__new__


class LineIndex:
    """Maps offsets to 1-based line numbers and columns."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

    def column(self, offset: int) -> int:
        """1-based column of an offset."""
        return offset - self._starts[self.line(offset) - 1] + 1

    def offset(self, line: int, column: int) -> int:
        """The offset of a 1-based (line, column); lines past the end clamp to the last line."""
        start = self._starts[min(max(line, 1), len(self._starts)) - 1]
        return start + max(column, 1) - 1


# ------------------------------------------------------------------------------------------ values


class Unknown(Exception):
    """Raised inside the folder when a value cannot be known; `reason` says which name or construct."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Folded:
    """The result of folding an expression: an int, a `dim3` triple, or None with the reason it is unknown."""

    value: Value | None
    reason: str = ""
    #: how values came from outside the expression's own scope, e.g. "n = 1024 from the call of run() at
    #: line 40": a function parameter's value is its callers' argument (see `ConstEnv`)
    via: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.value is not None

    def as_int(self) -> int | None:
        """The value as an integer; a `dim3` or a floating value is not one."""
        return self.value if isinstance(self.value, int) else None

    def as_dim3(self) -> Dim3 | None:
        """The value as a launch dimension: a scalar `n` converts to `(n, 1, 1)` as `dim3(n)` does (a floating
        one truncated, as C converts it to `unsigned int`)."""
        if isinstance(self.value, float):
            try:
                return (to_integer(CFloat(self.value, 64), 32, False), 1, 1)
            except FloatError:
                return None
        if isinstance(self.value, int):
            return (self.value, 1, 1)
        return self.value


# Sizes in bytes on the LP64 hosts nvcc supports (long is 8 bytes) and of CUDA's vector types.
SIZEOF: dict[str, int] = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "unsigned short": 2, "short int": 2, "int16_t": 2, "uint16_t": 2,
    "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "signed": 4, "signed int": 4, "int32_t": 4, "uint32_t": 4,
    "float": 4, "__half2": 4, "half2": 4, "__nv_bfloat162": 4,
    "long": 8, "unsigned long": 8, "long int": 8, "long long": 8, "unsigned long long": 8,
    "long long int": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "std::size_t": 8, "ptrdiff_t": 8,
    "double": 8, "long double": 16,
    "char1": 1, "uchar1": 1, "char2": 2, "uchar2": 2, "char3": 3, "uchar3": 3, "char4": 4, "uchar4": 4,
    "short1": 2, "ushort1": 2, "short2": 4, "ushort2": 4, "short3": 6, "ushort3": 6, "short4": 8, "ushort4": 8,
    "int1": 4, "uint1": 4, "int2": 8, "uint2": 8, "int3": 12, "uint3": 12, "int4": 16, "uint4": 16,
    "float1": 4, "float2": 8, "float3": 12, "float4": 16,
    "long1": 8, "ulong1": 8, "long2": 16, "ulong2": 16, "long3": 24, "ulong3": 24, "long4": 32, "ulong4": 32,
    "longlong1": 8, "ulonglong1": 8, "longlong2": 16, "ulonglong2": 16,
    "double1": 8, "double2": 16, "double3": 24, "double4": 32, "dim3": 12,
}

# Words that may make up the type of a scalar variable or of a cast.
_TYPE_WORDS = frozenset({
    "int", "unsigned", "signed", "long", "short", "char", "bool", "size_t", "ptrdiff_t", "int8_t", "uint8_t",
    "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "auto", "uint", "ushort", "ulong",
})
_QUALIFIERS = frozenset({"const", "constexpr", "static", "volatile", "inline", "register", "extern",
                         "__host__", "__device__", "__constant__", "__managed__", "__shared__"})

def parse_int_literal(text: str) -> int:
    """The value of a C integer literal (`0x1F`, `0b101`, `017`, `1'000`, with `u`/`l`/`z` suffixes).

    A floating-point literal raises Unknown here: it is not an integer (the folder reads one with `cfloat`).
    """
    return _literal(text).value


@dataclass(frozen=True, slots=True)
class CInt:
    """A folded scalar and its C type (the type decides how later operations convert and wrap it)."""

    value: int
    ctype: CType


def _literal(text: str) -> CInt:
    """An integer literal's value and type (from its value, base and suffix)."""
    body = text.replace("'", "")
    stripped = body.rstrip("uUlLzZ")
    suffix = body[len(stripped):]
    low = stripped.lower()
    decimal = False
    if low.startswith("0x"):
        value = int(low[2:], 16)
    elif low.startswith("0b"):
        value = int(low[2:], 2)
    elif any(ch in low for ch in ".ef"):
        raise Unknown(f"floating-point literal {text}")
    elif len(low) > 1 and low.startswith("0"):
        value = int(low, 8)
    else:
        value, decimal = int(low), True
    try:
        return CInt(value, c_literal_type(value, suffix, decimal))
    except NoValue as exc:
        raise Unknown(str(exc)) from exc


def _fitting_type(v: int) -> CType:
    """The type assumed for a value whose declaration names none (`auto`): int when it fits, else long long."""
    return C_INT if c_convert(v, C_INT) == v else C_LLONG


# ------------------------------------------------------------------------------------------ declarations


@dataclass(slots=True)
class Macro:
    """A `#define` (object-like when `params` is None) or an `#undef` (body None), valid from `offset` on."""

    name: str
    params: tuple[str, ...] | None
    body: list[Token] | None
    offset: int
    line: int


@dataclass(slots=True)
class Declaration:
    """A scalar or `dim3` variable with its initialiser tokens and the span of code where it is visible.

    `mutated_line` is the first line after the declaration that assigns to it (or takes its address); a
    variable that is not `const` is only folded when nothing changes it. A function's parameter is a
    declaration too (`function` and `index` set, `init` its default argument): its value is what the
    function's callers in the file pass.
    """

    name: str
    kind: str  # "scalar" or "dim3"
    init: list[Token] | None
    offset: int
    scope_end: int
    line: int
    const: bool
    mutated_line: int | None = None
    cache: Folded | None = field(default=None, repr=False)
    #: the declared integer type (None: `dim3`, or `auto`, typed by its value)
    ctype: CType | None = None
    #: for a parameter: the function it belongs to and its 0-based position
    function: FunctionDefinition | None = None
    index: int = -1


_DEFINE_RE = re.compile(r"^[ \t]*#[ \t]*(define|undef)[ \t]+([A-Za-z_]\w*)(\([^)]*\))?(.*)$", re.M)
_DIRECTIVE_RE = re.compile(r"^[ \t]*#.*$", re.M)
_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_BRACKETS = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True, slots=True)
class _Helper:
    """A function a fold may call: its parameters (declarations, in order), returned expression and type."""

    function: FunctionDefinition
    params: list[Declaration]
    expression: list[Token]
    returns: str


#: words before a function's name that are not part of its return type
_FUNCTION_SPECIFIERS = frozenset({"__forceinline__", "__noinline__", "__inline__", "__global__"})


@dataclass(frozen=True, slots=True)
class _EqualityBlock:
    """The braces of an `if (name == literal) {` block or of its `else {` (offsets of `{` and `}`)."""

    name: Token
    literal: Token
    #: offsets of the block's `{` and `}`
    braces: tuple[int, int]
    #: True for the `else` block, where name is anything but the literal
    negated: bool = False


def read_macros(source: str) -> list[Macro]:
    """The `#define`s and `#undef`s of a source text (a header), in order, with offsets into it."""
    masked, _ = mask_source(source)
    return _macros_in(_join_continuations(masked), LineIndex(source))


def _macros_in(joined: str, lines: LineIndex) -> list[Macro]:
    out = []
    for m in _DEFINE_RE.finditer(joined):
        params = None
        if m.group(1) == "define" and m.group(3) is not None:
            params = tuple(p.strip() for p in m.group(3)[1:-1].split(",") if p.strip())
        body = tokenize(m.group(4), m.start(4)) if m.group(1) == "define" else None
        out.append(Macro(m.group(2), params, body, m.start(), lines.line(m.start())))
    return out


def _join_continuations(text: str) -> str:
    """Join backslash-newline continued lines, keeping offsets by blanking the backslash and newline."""
    return re.sub(r"\\\r?\n", lambda m: " " * len(m.group()), text)


class ConstEnv:
    """The constants of one CUDA source file, and the folder that evaluates expressions against them.

    An integer or `dim3` parameter of a host function is known when every call of the function found (in the
    file, and in `other_files` for a function that is not `static`) passes the same foldable value: a launch
    written inside `void run(int n) {...}` called as `run(1 << 20)`. The folded result says so in `Folded.via`,
    because a call elsewhere may pass another value.
    """

    MAX_EXPANSION_DEPTH = 64

    def __init__(self, source: str, extra_macros: tuple[Macro, ...] = (),
                 other_files: Callable[[], list[tuple[str, ConstEnv]]] | None = None) -> None:
        """`extra_macros`: `#define`s from elsewhere (the quoted headers), each at the offset where it applies;
        `other_files`: (name, folder) of the files whose calls of this file's functions count too."""
        self.source = source
        self._other_files = other_files
        #: whether a fold wanted the calls in other files (so a scan given them may differ from one without)
        self.asked_other_files = False
        masked, self.comments = mask_source(source)
        self.masked = masked
        self.lines = LineIndex(source)
        joined = _join_continuations(masked)
        self.macros: dict[str, list[Macro]] = {}
        self._read_macros(joined, extra_macros)
        # Code with every preprocessor line blanked: what the declaration and launch scanners read.
        self.code = _DIRECTIVE_RE.sub(lambda m: " " * len(m.group()), joined)
        self.tokens = tokenize(self.code)
        self._token_offsets = [t.offset for t in self.tokens]
        self.block_end = self._match_braces()
        self.functions = find_functions(self.tokens, self.block_end, len(self.code))
        self.decls: dict[str, list[Declaration]] = {}
        self._read_declarations()
        self._equality_blocks = self._read_equality_blocks()
        self._in_progress: set[int] = set()
        #: notes on values taken from callers, gathered while the outermost fold runs (see `fold_tokens`)
        self._via: list[str] = []
        self._fold_depth = 0
        #: the calls of each function whose parameter was folded, by the function's name token
        self._calls: dict[int, list[tuple[str, ConstEnv, int]]] = {}
        self._helpers: dict[str, _Helper] | None = None
        self._helpers_running: set[str] = set()
        #: the scanned facts are shared by the server's analysis threads; a fold caches into declarations
        self._lock = threading.RLock()

    # ---------------------------------------------------------------------------- building the environment

    def _read_macros(self, joined: str, extra: tuple[Macro, ...]) -> None:
        for m in _macros_in(joined, self.lines):
            self.macros.setdefault(m.name, []).append(m)
        for m in extra:
            self.macros.setdefault(m.name, []).append(m)
        if extra:
            for found in self.macros.values():
                found.sort(key=lambda m: m.offset)  # `macro` takes the last one before an offset

    def _match_braces(self) -> dict[int, int]:
        """For each opening `{` token index, the offset of its matching `}` (end of file if unbalanced)."""
        ends: dict[int, int] = {}
        stack: list[int] = []
        for k, tok in enumerate(self.tokens):
            if tok.text == "{":
                stack.append(k)
            elif tok.text == "}" and stack:
                ends[stack.pop()] = tok.offset
        for k in stack:
            ends[k] = len(self.code) + 1  # an unclosed block runs to the end of the file
        return ends

    def _read_declarations(self) -> None:
        """Find scalar and `dim3` variable declarations at the start of statements, with their scopes."""
        scope_stack: list[int] = [len(self.code) + 1]
        toks = self.tokens
        k = 0
        at_statement_start = True
        paren_depth = 0
        while k < len(toks):
            tok = toks[k]
            if tok.text == "{":
                scope_stack.append(self.block_end.get(k, len(self.code)))
            elif tok.text == "}":
                if len(scope_stack) > 1:
                    scope_stack.pop()
            elif tok.text == "(":
                paren_depth += 1
            elif tok.text == ")":
                paren_depth = max(0, paren_depth - 1)
            if at_statement_start and paren_depth == 0 and tok.kind == "id":
                used = self._declaration_at(k, scope_stack[-1])
                if used:
                    k += used
                    at_statement_start = True
                    continue
            at_statement_start = tok.text in (";", "{", "}") and paren_depth == 0
            k += 1
        self._read_parameters()
        uses: dict[str, list[int]] = {}
        for k, tok in enumerate(toks):
            if tok.kind == "id" and tok.text in self.decls:
                uses.setdefault(tok.text, []).append(k)
        for name, decls in self.decls.items():
            positions = [toks[k].offset for k in uses.get(name, [])]
            for decl in decls:
                lo = bisect.bisect_right(positions, decl.offset)
                hi = bisect.bisect_left(positions, decl.scope_end)
                decl.mutated_line = self._first_mutation(decl, uses.get(name, [])[lo:hi])
        self._decl_offsets = {name: [d.offset for d in decls] for name, decls in self.decls.items()}

    def _declaration_at(self, k: int, scope_end: int) -> int:
        """Record the declaration that starts at token k, if any; return how many tokens it spans (0: none)."""
        toks = self.tokens
        j = k
        const = False
        type_words: list[str] = []
        while j < len(toks) and toks[j].kind == "id" and (toks[j].text in _QUALIFIERS or toks[j].text in
                                                            _TYPE_WORDS or toks[j].text == "dim3"):
            if toks[j].text in ("const", "constexpr"):
                const = True
            elif toks[j].text in _TYPE_WORDS or toks[j].text == "dim3":
                type_words.append(toks[j].text)
            j += 1
        if j + 1 < len(toks) and toks[j].text == "std" and toks[j + 1].text == "::" and j + 2 < len(toks) \
                and toks[j + 2].text == "size_t":
            type_words.append("size_t")
            j += 3
        if not type_words or ("dim3" in type_words and len(type_words) > 1):
            return 0
        kind = "dim3" if type_words == ["dim3"] else "scalar"
        start = j
        while j < len(toks):
            if toks[j].kind != "id":
                return 0
            name_tok = toks[j]
            j += 1
            init, j = self._initialiser(j, kind)
            if j >= len(toks) or toks[j].text not in (",", ";"):
                return 0  # a function, a pointer, an array, ...: not a variable the folder knows
            self.decls.setdefault(name_tok.text, []).append(Declaration(
                name_tok.text, kind, init, name_tok.offset, scope_end, self.lines.line(name_tok.offset), const,
                ctype=C_TYPES.get(" ".join(type_words))))
            if j < len(toks) and toks[j].text == ",":
                j += 1
                continue
            break
        return max(j - k, start - k + 1)

    def _read_equality_blocks(self) -> dict[str, list[_EqualityBlock]]:
        """Every `if (name == literal) {` (or `literal == name`) and its `else {`, by name."""
        toks = self.tokens
        out: dict[str, list[_EqualityBlock]] = {}
        for k in range(len(toks) - 6):
            if toks[k].text != "if" or toks[k + 1].text != "(" or toks[k + 3].text != "==" \
                    or toks[k + 5].text != ")" or toks[k + 6].text != "{":
                continue
            left, right = toks[k + 2], toks[k + 4]
            name, literal = (left, right) if left.kind == "id" and right.kind == "num" else (right, left)
            if name.kind != "id" or literal.kind != "num":
                continue
            end = self.block_end.get(k + 6, len(self.code))
            then = _EqualityBlock(name, literal, (toks[k + 6].offset, end))
            out.setdefault(name.text, []).append(then)
            after = bisect.bisect_right(self._token_offsets, end)  # the token after the block's `}`
            if after + 1 < len(toks) and toks[after].text == "else" and toks[after + 1].text == "{":
                braces = (toks[after + 1].offset, self.block_end.get(after + 1, len(self.code)))
                out[name.text].append(_EqualityBlock(name, literal, braces, negated=True))
        return out

    def dead_branch(self, offset: int) -> str | None:
        """Why the code at `offset` does not run with the values this file gives, or None.

        The code is inside `if (v == C) {` where v folds to another value (or inside its `else` where v is C):
        a launch there would otherwise be read with values under which it never runs.
        """
        for blocks in self._equality_blocks.values():
            for b in blocks:
                if not b.braces[0] < offset < b.braces[1]:
                    continue
                folded = self.fold_tokens([b.name], b.braces[0])
                if not folded.known or not isinstance(folded.value, int):
                    continue
                expected = _literal(b.literal.text).value
                if (folded.value == expected) == b.negated:
                    why = "; ".join(folded.via) or f"{b.name.text} = {folded.value}"
                    branch = "the else of " if b.negated else ""
                    line = self.lines.line(b.name.offset)
                    return (f"it is inside {branch}`if ({b.name.text} == {b.literal.text})` at line {line}, which does "
                            f"not run here ({why})")
        return None

    def _read_parameters(self) -> None:
        """The integer and `dim3` parameters of every function, as declarations scoped to its body."""
        for fn in self.functions:
            for index, part in enumerate(fn.parameter_tokens(self.tokens)):
                decl = self._parameter(fn, index, part)
                if decl is not None:
                    self.decls.setdefault(decl.name, []).append(decl)
        for decls in self.decls.values():
            decls.sort(key=lambda d: d.offset)

    def _parameter(self, fn: FunctionDefinition, index: int, part: list[Token]) -> Declaration | None:
        """The declaration of one parameter, or None when it is not an integer or a `dim3` (by value or by
        reference)."""
        cut = next((i for i, t in enumerate(part) if t.text == "="), len(part))
        head, default = part[:cut], part[cut + 1:]
        if len(head) < 2 or head[-1].kind != "id" or any(t.kind != "id" and t.text not in ("&", "::")
                                                          for t in head):
            return None
        words = [t.text for t in head[:-1] if t.text not in ("&", "::", "std")]
        type_words = [w for w in words if w not in _QUALIFIERS]
        if not type_words or "auto" in type_words or any(w not in _TYPE_WORDS and w != "dim3" for w in type_words) \
                or ("dim3" in type_words and len(type_words) > 1):
            return None
        name = head[-1]
        return Declaration(name.text, "dim3" if type_words == ["dim3"] else "scalar", default or None, name.offset,
                           fn.body_end, self.lines.line(name.offset), "const" in words,
                           ctype=C_TYPES.get(" ".join(type_words)), function=fn, index=index)

    def _initialiser(self, j: int, kind: str) -> tuple[list[Token] | None, int]:
        """Tokens of the initialiser after a declared name (`= e`, `(a, b)`, `{a, b}`), and where it ends."""
        toks = self.tokens
        if j >= len(toks):
            return None, j
        opener = toks[j].text
        if opener == "=":
            end = self._expression_end(j + 1)
            init = toks[j + 1:end]
            if kind == "dim3" and init and init[0].text == "{":
                init = [Token("id", "dim3", init[0].offset), Token("op", "(", init[0].offset), *init[1:-1],
                        Token("op", ")", init[-1].offset)]
            return init, end
        if opener in ("(", "{"):
            close = self._matching(j)
            inner = toks[j + 1:close]
            if kind == "dim3":
                return [Token("id", "dim3", toks[j].offset), Token("op", "(", toks[j].offset), *inner,
                        Token("op", ")", toks[close].offset if close < len(toks) else toks[-1].offset)], close + 1
            return inner, close + 1
        if kind == "dim3" and opener in (",", ";"):
            return [Token("id", "dim3", toks[j].offset), Token("op", "(", toks[j].offset),
                    Token("op", ")", toks[j].offset)], j
        return None, j

    def _matching(self, j: int) -> int:
        """Index of the bracket closing the one at token j (or the last token if unbalanced)."""
        return self._scan(j, closing=True)

    def _expression_end(self, j: int) -> int:
        """Index of the `,` or `;` (or unmatched closing bracket) ending an expression that starts at token j."""
        return self._scan(j, closing=False)

    def _scan(self, j: int, *, closing: bool) -> int:
        """Walk brackets from token j: stop where depth returns to 0 (`closing`), or at a `,`/`;` at depth 0 or a
        closer that goes below it (an expression's end)."""
        depth = 0
        for k in range(j, len(self.tokens)):
            t = self.tokens[k].text
            if t in _BRACKETS:
                depth += 1
            elif t in (")", "]", "}"):
                depth -= 1
                if depth < 0 or (closing and depth == 0):
                    return k
            elif not closing and depth == 0 and t in (",", ";"):
                return k
        return len(self.tokens) - 1 if closing else len(self.tokens)

    def _first_mutation(self, decl: Declaration, uses: list[int]) -> int | None:
        """The line of the first assignment, increment or address-of of `decl` inside its scope, if any."""
        toks = self.tokens
        for k in uses:
            tok = toks[k]
            if tok.offset <= decl.offset or tok.offset >= decl.scope_end:
                continue
            if k > 0 and toks[k - 1].text in (".", "->", "::"):
                continue
            nxt = k + 1
            if decl.kind == "dim3" and nxt + 1 < len(toks) and toks[nxt].text == ".":
                nxt += 2
            after = toks[nxt].text if nxt < len(toks) else ""
            before = toks[k - 1] if k > 0 else None
            if after in _ASSIGN_OPS or after in ("++", "--") or (before is not None and before.text in
                                                                   ("++", "--")):
                return self.lines.line(tok.offset)
            if before is not None and before.text == "&" and _is_unary_position(toks, k - 1):
                return self.lines.line(tok.offset)
        return None

    # ---------------------------------------------------------------------------- folding

    def fold(self, expr: str, offset: int) -> Folded:
        """Fold C expression text as it would evaluate at `offset` of the source (for scope and macros)."""
        masked, _ = mask_source(expr)
        return self.fold_tokens(tokenize(masked, offset), offset)

    def token_index(self, offset: int) -> int:
        """The index in `tokens` of the first token that begins at or after `offset` (a binary search over
        the offsets listed once per scan)."""
        return bisect.bisect_left(self._token_offsets, offset)

    def fold_tokens(self, tokens: list[Token], offset: int) -> Folded:
        """Fold an expression given as tokens; never raises."""
        with self._lock:
            mark = len(self._via)
            self._fold_depth += 1
            try:
                folded = self._fold_unlocked(tokens, offset)
            finally:
                self._fold_depth -= 1
            via = tuple(dict.fromkeys(self._via[mark:])) if folded.known else ()
            if self._fold_depth == 0:
                self._via.clear()
            return Folded(folded.value, folded.reason, via)

    def _fold_unlocked(self, tokens: list[Token], offset: int) -> Folded:
        try:
            expanded = self._expand(tokens, offset, 0, frozenset())
            value = _Evaluator(self, offset).evaluate(expanded)
        except Unknown as exc:
            return Folded(None, exc.reason)
        except (RecursionError, ValueError, ZeroDivisionError, OverflowError) as exc:
            return Folded(None, f"cannot evaluate: {exc}")
        return Folded(value)

    def macro(self, name: str, offset: int) -> Macro | None:
        """The `#define` of `name` in effect at `offset`, or None."""
        best = None
        for m in self.macros.get(name, ()):
            if m.offset < offset:
                best = m
        return best if best is not None and best.body is not None else None

    def declaration(self, name: str, offset: int) -> Declaration | None:
        """The innermost declaration of `name` visible at `offset`."""
        decls = self.decls.get(name, [])
        k = bisect.bisect_left(self._decl_offsets.get(name, []), offset)  # declarations are in source order
        for d in reversed(decls[:k]):
            if offset < d.scope_end:
                return d
        return None

    def variable(self, name: str, offset: int) -> Value:
        """The folded value of variable `name` at `offset`; raises Unknown with the reason otherwise."""
        decl = self.declaration(name, offset)
        if decl is None:
            raise Unknown(f"'{name}' is not a known constant")
        refined = self._refined(decl, offset)
        if refined is not None:
            return refined
        if decl.cache is None:
            key = id(decl)
            if key in self._in_progress:  # `const int n = n + 1;`, or a parameter a call passes back to itself
                raise Unknown(f"'{decl.name}' is defined in terms of itself")
            self._in_progress.add(key)
            mark = len(self._via)
            try:
                folded = self._fold_declaration(decl)
            finally:
                self._in_progress.discard(key)
            decl.cache = Folded(folded.value, folded.reason, tuple(self._via[mark:]))
        else:
            self._via.extend(decl.cache.via)
        if decl.cache.value is None:
            raise Unknown(decl.cache.reason)
        return decl.cache.value

    def _refined(self, decl: Declaration, offset: int) -> int | None:
        """The value an enclosing `if (name == literal) {` gives an integer variable that nothing changes.

        Inside `if (block_size == 16) { ... }` the variable is 16 whatever its declaration or callers say;
        without this, a launch in that branch would take the caller's value (32) and contradict its own
        template argument.
        """
        if decl.kind != "scalar" or (decl.mutated_line is not None and not decl.const):
            return None
        inside = [b for b in self._equality_blocks.get(decl.name, ())
                  if not b.negated and decl.offset < b.braces[0] < offset < b.braces[1]]
        if not inside:
            return None
        block = max(inside, key=lambda b: b.braces[0])  # the innermost
        value = _literal(block.literal.text).value
        if decl.ctype is not None:
            value = c_convert(value, decl.ctype)
        self._via.append(f"{decl.name} = {value} inside `if ({decl.name} == {block.literal.text})` at line "
                         f"{self.lines.line(block.name.offset)}")
        return value

    def _fold_declaration(self, decl: Declaration) -> Folded:
        if decl.mutated_line is not None and not decl.const:
            return Folded(None, f"'{decl.name}' (line {decl.line}) is changed at line {decl.mutated_line}")
        if decl.function is not None:
            return self._fold_parameter(decl, decl.function)
        if decl.init is None:
            return Folded(None, f"'{decl.name}' (line {decl.line}) has no initialiser")
        folded = self.fold_tokens(decl.init, decl.offset)
        if folded.value is None:
            return Folded(None, f"'{decl.name}' (line {decl.line}): {folded.reason}")
        return _initialised(decl, folded.value, f"'{decl.name}' (line {decl.line})")

    def helper(self, name: str) -> _Helper | None:
        """The file's one function `name` whose body is a single `return expression;` over integer or floating
        parameters (`int iDivUp(int a, int b) { return (a + b - 1) / b; }`), which a fold may call."""
        if self._helpers is None:
            self._helpers = self._read_helpers()
        return self._helpers.get(name)

    def _read_helpers(self) -> dict[str, _Helper]:
        toks = self.tokens
        names = [f.name for f in self.functions]
        params: dict[int, list[Declaration]] = {}
        for decls in self.decls.values():
            for d in decls:
                if d.function is not None:
                    params.setdefault(d.function.name_index, []).append(d)
        out: dict[str, _Helper] = {}
        for fn in self.functions:
            body = bisect.bisect_left(self._token_offsets, fn.body_start)
            end = bisect.bisect_left(self._token_offsets, fn.body_end)
            returned = self._return_type(fn.name_index)
            own = sorted(params.get(fn.name_index, []), key=lambda d: d.index)
            if names.count(fn.name) != 1 or returned is None or len(own) != len(fn.parameter_tokens(toks)) \
                    or end - body < 4 or toks[body + 1].text != "return" or toks[end - 1].text != ";" \
                    or any(t.text in (";", "{") for t in toks[body + 2:end - 1]):
                continue
            out[fn.name] = _Helper(fn, own, toks[body + 2:end - 1], returned)
        return out

    def _return_type(self, name_index: int) -> str | None:
        """The integer or floating return type written before a function's name, or None for any other."""
        words = []
        k = name_index - 1
        while k >= 0 and self.tokens[k].kind == "id":
            words.append(self.tokens[k].text)
            k -= 1
        if k >= 0 and self.tokens[k].text not in (";", "}", "{"):  # a template, a pointer, a member: not ours
            return None
        typed = " ".join(w for w in reversed(words) if w not in _QUALIFIERS and w not in _FUNCTION_SPECIFIERS)
        return typed if typed in C_TYPES or typed in FLOAT_TYPES else None

    def call_helper(self, helper: _Helper, args: list[Typed]) -> Typed:
        """The value a helper function returns for these arguments, converted to its return type."""
        name = helper.function.name
        if len(args) != len(helper.params):
            raise Unknown(f"{name}() takes {len(helper.params)} arguments, got {len(args)}")
        if name in self._helpers_running:
            raise Unknown(f"{name}() calls itself")
        bindings: dict[str, Typed] = {}
        for param, arg in zip(helper.params, args, strict=True):
            if param.kind == "dim3":
                if not isinstance(arg, tuple):
                    raise Unknown(f"{name}() takes a dim3 for '{param.name}'")
                bindings[param.name] = arg
            else:
                bindings[param.name] = _integer(arg, param.ctype or C_INT)
        offset = helper.function.body_start
        self._helpers_running.add(name)
        try:
            expanded = self._expand(helper.expression, offset, 0, frozenset())
            result = _Evaluator(self, offset, bindings).typed(expanded)
        finally:
            self._helpers_running.discard(name)
        if helper.returns in FLOAT_TYPES:
            return _cast(helper.returns, result)
        return _integer(result, C_TYPES[helper.returns])

    def _fold_parameter(self, decl: Declaration, fn: FunctionDefinition) -> Folded:
        """A parameter's value: the one value every call of its function passes for it, in this file and, for a
        function other files can call, in the files beside it (`other_files`)."""
        where = f"'{decl.name}' is a parameter of {fn.name}()"
        if sum(f.name == fn.name for f in self.functions) > 1:
            return Folded(None, f"{where}, which is defined more than once (overloads are not told apart)")
        calls = self._calls_of(fn)
        if not calls:
            beside = "" if self._other_files is None or self._is_static(fn) else " nor in the files beside it"
            return Folded(None, f"{where}, which is not called in this file{beside}")
        seen = [env._argument(decl, where, k, file, self._via) for file, env, k in calls]
        unknown = next((f for _, f in seen if not f.known), None)
        if unknown is not None:
            return unknown
        values = {f.value for _, f in seen}
        if len(values) > 1:
            shown = ", ".join(f"{f.value} at {place}" for place, f in seen)
            return Folded(None, f"{where}, called with different values ({shown})")
        value = seen[0][1].value
        places = ", ".join(dict.fromkeys(place for place, _ in seen))
        calls_text = f"the call at {places}" if len(seen) == 1 else f"the {len(seen)} calls at {places}"
        self._via.append(f"{decl.name} = {_shown(value)} from {calls_text} of {fn.name}()")
        return Folded(value)

    def _calls_of(self, fn: FunctionDefinition) -> list[tuple[str, ConstEnv, int]]:
        """(file name, "" for this one; its folder; index of the call's `(`) of every call of `fn` found."""
        found = self._calls.get(fn.name_index)
        if found is None:
            found = [("", self, k) for k in call_sites(self.tokens, fn)]
            if not self._is_static(fn):
                self.asked_other_files = True
                outside = FunctionDefinition(fn.name, -1, -1, -1, -1, -1)
                for file, env in self._other_files() if self._other_files is not None else ():
                    if all(f.name != fn.name for f in env.functions):  # its own function of that name is another
                        found += [(file, env, k) for k in call_sites(env.tokens, outside)]
            self._calls[fn.name_index] = found
        return found

    def _is_static(self, fn: FunctionDefinition) -> bool:
        """Whether the function is `static` (only this file can call it)."""
        k = fn.name_index - 1
        while k >= 0 and self.tokens[k].kind == "id":
            if self.tokens[k].text == "static":
                return True
            k -= 1
        return False

    def _argument(self, decl: Declaration, where: str, open_index: int, file: str, via: list[str]
                  ) -> tuple[str, Folded]:
        """(where the call is, folded value) of what the call whose `(` is at `open_index` of this file passes for
        parameter `decl`; `file` names this file when it is not the one `decl` is in, and `via` (that file's
        notes) receives how this file's values came about."""
        offset = self.tokens[open_index].offset
        place = f"{file}:{self.lines.line(offset)}" if file else f"line {self.lines.line(offset)}"
        try:
            args, _ = _call_arguments(self.tokens, open_index)
        except Unknown as exc:
            return place, Folded(None, f"{where}: {exc.reason}")
        arg = args[decl.index] if decl.index < len(args) else decl.init
        if not arg:
            return place, Folded(None, f"{where}: the call at {place} does not pass it")
        folded = self.fold_tokens(arg, offset)
        if not folded.known:
            return place, Folded(None, f"{where}; at the call at {place}, {folded.reason}")
        if via is not self._via:
            via.extend(folded.via)
        return place, _initialised(decl, folded.value, f"{where}; what the call at {place} passes")

    def _expand(self, tokens: list[Token], offset: int, depth: int, hidden: frozenset[str]) -> list[Token]:
        """Macro-expand tokens as the preprocessor would (no `#`/`##`), with a depth limit."""
        if depth > self.MAX_EXPANSION_DEPTH:
            raise Unknown("macro expansion too deep")
        out: list[Token] = []
        k = 0
        while k < len(tokens):
            tok = tokens[k]
            m = self.macro(tok.text, offset) if tok.kind == "id" and tok.text not in hidden else None
            if m is None or m.body is None:
                out.append(tok)
                k += 1
                continue
            if m.params is None:
                body = m.body
                k += 1
            else:
                if k + 1 >= len(tokens) or tokens[k + 1].text != "(":
                    out.append(tok)
                    k += 1
                    continue
                args, k = _call_arguments(tokens, k + 1)
                body = _substitute(m, args, lambda ts: self._expand(ts, offset, depth + 1, hidden))
            if any(t.text == "#" for t in body):
                raise Unknown(f"macro {m.name} uses # or ##")
            out.extend(self._expand(body, offset, depth + 1, hidden | {m.name}))
        return out


def _initialised(decl: Declaration, value: Value, what: str) -> Folded:
    """A variable's (or a parameter's) value from its initialiser (or argument), converted as C initialises
    its declared type: a `dim3` from a size, an integer type by wrapping or, from a floating value, truncation."""
    if decl.kind == "dim3":
        dim = Folded(value).as_dim3()
        return Folded(dim) if dim is not None else Folded(None, f"{what} is not a launch size")
    if isinstance(value, float):
        if decl.ctype is None:
            return Folded(None, f"{what} is a floating-point value")
        if decl.ctype.bits == 1:
            return Folded(int(value != 0))
        try:
            return Folded(to_integer(CFloat(value, 64), decl.ctype.bits, decl.ctype.signed))
        except FloatError as exc:
            return Folded(None, f"{what}: {exc}")
    if not isinstance(value, int):
        return Folded(None, f"{what} is not an integer")
    return Folded(c_convert(value, decl.ctype) if decl.ctype is not None else value)


def _shown(value: Value) -> str:
    """A folded value as a note shows it: `1048576`, or `(64, 64, 1)` for a `dim3`."""
    return str(value) if isinstance(value, int | float) else "(" + ", ".join(map(str, value)) + ")"


def _is_unary_position(toks: list[Token], k: int) -> bool:
    """Whether the operator at token k is unary (nothing that ends an operand comes before it)."""
    if k == 0:
        return True
    prev = toks[k - 1]
    return not (prev.kind in ("id", "num", "str") or prev.text in (")", "]"))


def _call_arguments(tokens: list[Token], open_index: int) -> tuple[list[list[Token]], int]:
    """Split the parenthesised argument list opening at `open_index`; return args and the index past `)`."""
    args: list[list[Token]] = [[]]
    depth = 0
    for k in range(open_index, len(tokens)):
        t = tokens[k].text
        if t in _BRACKETS:
            depth += 1
            if depth == 1:
                continue
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return ([] if args == [[]] else args), k + 1
        elif t == "," and depth == 1:
            args.append([])
            continue
        args[-1].append(tokens[k])
    raise Unknown("unbalanced parentheses in a macro call")


def _substitute(macro: Macro, args: list[list[Token]], expand) -> list[Token]:
    """The body of a function-like macro with each parameter replaced by its (pre-expanded) argument."""
    params = macro.params or ()
    if len(args) != len(params):
        raise Unknown(f"macro {macro.name} takes {len(params)} arguments, got {len(args)}")
    by_name = {p: expand(a) for p, a in zip(params, args, strict=True)}
    out: list[Token] = []
    for tok in macro.body or ():
        out.extend(by_name.get(tok.text, [tok]) if tok.kind == "id" else [tok])
    return out


# ------------------------------------------------------------------------------------------ evaluation

_BINARY_LEVELS: list[frozenset[str]] = [
    frozenset({"||"}), frozenset({"&&"}), frozenset({"|"}), frozenset({"^"}), frozenset({"&"}),
    frozenset({"==", "!="}), frozenset({"<", ">", "<=", ">="}), frozenset({"<<", ">>"}),
    frozenset({"+", "-"}), frozenset({"*", "/", "%"}),
]


class _Evaluator:
    """A recursive-descent evaluator over macro-expanded tokens; ternaries evaluate only the chosen arm."""

    def __init__(self, env: ConstEnv, offset: int, bindings: dict[str, Typed] | None = None) -> None:
        self.env = env
        self.offset = offset
        #: values of a helper function's parameters while its return expression is evaluated
        self.bindings = bindings or {}
        self.toks: list[Token] = []
        self.pos = 0

    def evaluate(self, tokens: list[Token]) -> Value:
        v = self.typed(tokens)
        return v.value if isinstance(v, CInt | CFloat) else v

    def typed(self, tokens: list[Token]) -> Typed:
        """The expression's value with its C type."""
        if not tokens:
            raise Unknown("empty expression")
        self.toks = tokens
        self.pos = 0
        node = self._ternary()
        if self.pos != len(self.toks):
            raise Unknown(f"cannot fold the expression at '{self.toks[self.pos].text}'")
        try:
            return _eval(node, self)
        except NoValue as exc:
            raise Unknown(str(exc)) from exc

    # parsing produces small closures-free tuples evaluated lazily by _eval

    def _peek(self, k: int = 0) -> str:
        p = self.pos + k
        return self.toks[p].text if p < len(self.toks) else ""

    def _take(self) -> Token:
        if self.pos >= len(self.toks):
            raise Unknown("incomplete expression")
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def _expect(self, text: str) -> None:
        tok = self._take()
        if tok.text != text:
            raise Unknown(f"expected '{text}', found '{tok.text}'")

    def _ternary(self) -> tuple:
        cond = self._binary(0)
        if self._peek() == "?":
            self.pos += 1
            yes = self._ternary()
            self._expect(":")
            no = self._ternary()
            return ("?", cond, yes, no)
        return cond

    def _binary(self, level: int) -> tuple:
        if level == len(_BINARY_LEVELS):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() in _BINARY_LEVELS[level]:
            op = self._take().text
            right = self._binary(level + 1)
            left = ("bin", op, left, right)
        return left

    def _unary(self) -> tuple:
        t = self._peek()
        if t in ("+", "-", "~", "!"):
            self.pos += 1
            return ("un", t, self._unary())
        if t == "sizeof":
            return self._sizeof()
        if t == "(" and self._cast_type() is not None:
            type_name, length = self._cast_type() or ("", 0)
            self.pos += length
            return ("cast", type_name, self._unary())
        if t in ("static_cast", "reinterpret_cast", "const_cast"):
            self.pos += 1
            self._expect("<")
            words = []
            while self._peek() not in (">", ""):
                words.append(self._take().text)
            self._expect(">")
            self._expect("(")
            inner = self._ternary()
            self._expect(")")
            return ("cast", " ".join(words), inner)
        return self._postfix()

    def _cast_type(self) -> tuple[str, int] | None:
        """If a `(type)` cast starts here, its type text and token length."""
        words = []
        k = 1
        while self._peek(k) in _TYPE_WORDS or self._peek(k) in FLOAT_TYPES or self._peek(k) in ("const", "std", "::"):
            if self._peek(k) not in ("const",):
                words.append(self._peek(k))
            k += 1
        if words and self._peek(k) == ")":
            return " ".join(words).replace("std :: ", "std::"), k + 1
        return None

    def _sizeof(self) -> tuple:
        self.pos += 1
        if self._peek() != "(":
            raise Unknown("sizeof without parentheses")
        self.pos += 1
        words: list[str] = []
        depth = 0
        while self._peek() and (self._peek() != ")" or depth):
            tok = self._take().text
            depth += {"(": 1, ")": -1}.get(tok, 0)
            if tok not in ("const", "volatile", "struct"):
                words.append(tok)
        self._expect(")")
        text = " ".join(words).replace("std :: ", "std::")
        if text.endswith("*"):
            return ("size", 8)
        if text in SIZEOF:
            return ("size", SIZEOF[text])
        raise Unknown(f"sizeof({text}) is not a type of known size")

    def _postfix(self) -> tuple:
        node = self._primary()
        while True:
            t = self._peek()
            if t == ".":
                self.pos += 1
                member = self._take().text
                node = ("member", node, member)
            elif t == "[":
                raise Unknown("array subscripts are not folded")
            elif t in ("->", "++", "--"):
                raise Unknown(f"'{t}' is not folded")
            else:
                return node

    def _primary(self) -> tuple:
        tok = self._take()
        if tok.kind == "num":
            return ("num", _number(tok.text))
        if tok.text == "(":
            inner = self._ternary()
            self._expect(")")
            return inner
        if tok.kind == "id":
            name = tok.text
            while self._peek() == "::" and self.pos + 1 < len(self.toks):
                self.pos += 1
                name += "::" + self._take().text
            if self._peek() == "(":
                self.pos += 1
                args = []
                if self._peek() != ")":
                    args.append(self._ternary())
                    while self._peek() == ",":
                        self.pos += 1
                        args.append(self._ternary())
                self._expect(")")
                return ("call", name, args)
            if name in ("true", "false"):
                return ("num", CInt(int(name == "true"), C_BOOL))
            return ("var", name)
        raise Unknown(f"cannot fold '{tok.text}'")


_MIN_MAX = {"min": min, "max": max, "std::min": min, "std::max": max, "umin": min, "umax": max,
            "imin": min, "imax": max}

Typed = CInt | CFloat | Dim3


def _eval(node: tuple, ev: _Evaluator) -> Typed:
    """Evaluate a parsed node with C's integer types and rules (`intops`); NoValue where C gives none.

    A conditional's value keeps the type of the arm it chose (the other arm is not evaluated, so the common
    type of the two is not known); `dim3` components are kept as written.
    """
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "size":
        return CInt(node[1], C_ULONG)
    if kind == "var":
        if node[1] in ev.bindings:
            return ev.bindings[node[1]]
        v = ev.env.variable(node[1], ev.offset)
        if not isinstance(v, int):
            return v
        decl = ev.env.declaration(node[1], ev.offset)
        return CInt(v, decl.ctype if decl is not None and decl.ctype is not None else _fitting_type(v))
    if kind == "?":
        return _eval(node[2] if _truth(_eval(node[1], ev)) else node[3], ev)
    if kind == "un":
        operand = _eval(node[2], ev)
        if isinstance(operand, CFloat):
            return _float_unary(node[1], operand)
        v = _scalar(operand)
        return CInt(*c_unary(node[1], v.value, v.ctype))
    if kind == "cast":
        return _cast(node[1], _eval(node[2], ev))
    if kind == "member":
        return CInt(_member(_eval(node[1], ev), node[2]), C_UINT)
    if kind == "call":
        args = [_eval(a, ev) for a in node[2]]
        helper = ev.env.helper(node[1])
        return ev.env.call_helper(helper, args) if helper is not None else _call(node[1], args)
    op, left = node[1], node[2]
    if op in ("&&", "||"):
        lv = _truth(_eval(left, ev))
        if (op == "&&") != lv:
            return CInt(int(lv), C_INT)
        return CInt(int(_truth(_eval(node[3], ev))), C_INT)
    lhs, rhs = _eval(left, ev), _eval(node[3], ev)
    if isinstance(lhs, CFloat) or isinstance(rhs, CFloat):
        result = float_binary(op, _as_float(lhs, rhs), _as_float(rhs, lhs))
        return CInt(result, C_INT) if isinstance(result, int) else result
    a, b = _scalar(lhs), _scalar(rhs)
    return CInt(*c_binary(op, a.value, a.ctype, b.value, b.ctype))


def _scalar(v: Typed) -> CInt:
    if isinstance(v, CFloat):
        raise Unknown("a floating-point value used where C needs an integer")
    if not isinstance(v, CInt):
        raise Unknown("a dim3 used where an integer is needed")
    return v


def _integer(v: Typed, ctype: CType) -> CInt:
    """An integer or floating value converted to an integer type, as C converts an argument or a cast."""
    if isinstance(v, CFloat):
        return CInt(int(v.value != 0) if ctype.bits == 1 else to_integer(v, ctype.bits, ctype.signed), ctype)
    return CInt(c_convert(_scalar(v).value, ctype), ctype)


def _truth(v: Typed) -> bool:
    """A condition's truth: non-zero, for an integer or a floating value."""
    return v.value != 0 if isinstance(v, CFloat) else _scalar(v).value != 0


def _as_float(v: Typed, other: Typed) -> CFloat:
    """An operand of a floating operation: an integer converts to the other operand's floating type."""
    if isinstance(v, CFloat):
        return v
    bits = other.bits if isinstance(other, CFloat) else 64
    return CFloat.of(float(_scalar(v).value), bits)


def _float_unary(op: str, v: CFloat) -> Typed:
    if op == "-":
        return CFloat(-v.value, v.bits)
    if op == "+":
        return v
    if op == "!":
        return CInt(int(v.value == 0), C_INT)
    raise Unknown(f"operator {op} on a floating-point value")


def _number(text: str) -> CInt | CFloat:
    """A numeric literal: an integer, or a floating one (`1.5f`, `2.0`, `1e3`)."""
    low = text.lower().replace("'", "")
    is_hex = low.startswith("0x")
    if not is_hex and ("." in low or "e" in low or low.endswith("f")):
        return float_literal(text)
    return _literal(text)


def _cast(type_name: str, v: Typed) -> Typed:
    if type_name == "dim3":
        return _call("dim3", [v])
    if type_name in FLOAT_TYPES:
        bits = FLOAT_TYPES[type_name]
        return CFloat.of(v.value if isinstance(v, CFloat) else float(_scalar(v).value), bits)
    ctype = C_TYPES.get(type_name)
    if ctype is None:
        if type_name in _TYPE_WORDS or type_name.startswith("std::"):
            return v
        raise Unknown(f"cast to {type_name}")
    return _integer(v, ctype)


def _member(v: Typed, name: str) -> int:
    if isinstance(v, tuple) and name in ("x", "y", "z"):
        return v["xyz".index(name)]
    raise Unknown(f"member '.{name}' of a non-dim3 value")


def _call(name: str, args: list[Typed]) -> Typed:
    if name in ("dim3", "make_uint3", "make_int3"):
        if len(args) > 3 or (name != "dim3" and len(args) != 3):
            raise Unknown(f"{name} with {len(args)} arguments")
        vals = [_integer(a, C_UINT).value for a in args] + [1] * (3 - len(args))
        return (vals[0], vals[1], vals[2])
    if name in ROUNDING_FUNCTIONS and len(args) == 1:
        function, bits = ROUNDING_FUNCTIONS[name]
        arg = args[0] if isinstance(args[0], CFloat) else _as_float(args[0], args[0])
        return CFloat.of(float(function(arg.value)), bits or arg.bits)
    if name in _MIN_MAX and len(args) == 2:
        a, b = _scalar(args[0]), _scalar(args[1])
        t = c_common(a.ctype, b.ctype)
        return CInt(_MIN_MAX[name](c_convert(a.value, t), c_convert(b.value, t)), t)
    raise Unknown(f"call to function '{name}'")
