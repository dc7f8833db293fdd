"""Functions parsed before, so that parsing an edited file parses only the functions whose text changed.

A save in the editor changes one kernel at a time. Before lexing, a scan of the text finds every module-scope
function (`.entry`/`.func` at the start of a line, up to its closing brace); a function whose exact text,
first line, file and `.file` table were parsed before is neither lexed nor parsed again: the lexer leaves a
placeholder token for it and the parser puts the earlier `Function` in its place. Its instructions' lines are
the same because its position is part of the key. Only functions whose parse ended exactly at the end of the
scanned text are kept, so a scan that reads a function differently from the parser is never trusted.

The kept objects are shared by the analyses that reuse them; the pipeline treats a parsed function as
read-only apart from setting the same demangled name and, for `.ptx` input, the same PTX positions again.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from kerncast.analysis.lru import BoundedLru
from kerncast.analysis.ptx.model import Function

#: functions kept (a few tens of KB each)
DEFAULT_MAX_FUNCTIONS = 256

_START_RE = re.compile(r"^[ \t]*(?:\.(?:visible|weak|extern)[ \t]+)*\.(?:entry|func)\b", re.MULTILINE)
_FILE_RE = re.compile(r"^[ \t]*\.file\b[^\n]*", re.MULTILINE)


class FunctionReuse(BoundedLru[str, Function]):
    """A bounded LRU of parsed functions by their key (see the module docstring); thread-safe. The parser counts
    the functions it took from here (`reused`) and those it parsed anew (`parsed`)."""

    def __init__(self, max_functions: int = DEFAULT_MAX_FUNCTIONS) -> None:
        super().__init__(max_functions)
        self.reused = 0
        self.parsed = 0


@dataclass(frozen=True)
class Span:
    """A module-scope function's text: 1-based first and last line, and its key."""

    first: int
    last: int
    key: str


def function_spans(text: str, lines: list[str], path: str | None) -> dict[int, Span]:
    """Every module-scope function's span by its first line, keyed by path, `.file` table, position and text."""
    files = hashlib.sha256("\n".join(m.group() for m in _FILE_RE.finditer(text)).encode()).hexdigest()
    out: dict[int, Span] = {}
    for first, _ in match_lines(text, _START_RE):
        last = span_end(lines, first)
        body = "\n".join(lines[first - 1:last])
        key = hashlib.sha256(f"{path}\0{files}\0{first}\0{body}".encode("utf-8", "surrogatepass")).hexdigest()
        out[first] = Span(first, last, key)
    return out


def match_lines(text: str, pattern: re.Pattern[str]) -> list[tuple[int, re.Match[str]]]:
    """(1-based line, match) of every match of `pattern`, counting the newlines once through the text."""
    out = []
    line, pos = 1, 0
    for m in pattern.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        out.append((line, m))
    return out


def span_end(lines: list[str], first: int) -> int:
    """The last line (1-based) of the function starting at `first`: its closing brace, or the `;` of a
    declaration without a body.

    Once the body's `{` is seen the depth stays above 0 until the closing brace, so a line without a brace
    changes nothing and is passed over without cutting its comment off (most of a function's lines)."""
    depth, seen = 0, False
    for i in range(first - 1, len(lines)):
        line = lines[i]
        if seen and "{" not in line and "}" not in line:
            continue
        code = line.split("//", 1)[0]
        depth += code.count("{") - code.count("}")
        seen = seen or "{" in code
        if (seen and depth <= 0) or (not seen and code.rstrip().endswith(";")):
            return i + 1
    return len(lines)
