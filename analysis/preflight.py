"""Checks on a source before nvcc sees it, for inputs that would make the compiler eat the machine.

The compiler runs under a memory limit and a timeout (`toolchain.run_tool`), which bound any input; these checks
answer two common hostile shapes sooner and with a message that says what is wrong, instead of "out of memory"
seconds later: an `#include` of something that is not a regular file (`/dev/zero`, `/dev/urandom`, a FIFO, a link
to a device: the preprocessor reads it until memory runs out, or waits forever), and a macro whose expansion is
astronomically long (forty `#define A1 A0 A0` levels: 2^40 tokens).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerncast.analysis.cexpr import Macro, read_macros
from kerncast.analysis.includes import HeaderWalk, NonRegularInclude
from kerncast.analysis.input_files import file_kind, path_and_target

#: tokens one macro may expand to before the source is refused (real code's largest are a few thousand)
MAX_MACRO_EXPANSION_TOKENS = 1 << 22
_DEFINE_LINE_RE = re.compile(r"^[ \t]*#[ \t]*(?:define|undef)\b.*$", re.MULTILINE)


@dataclass(frozen=True)
class Refusal:
    """Why a source is not compiled: a message placed on a line of it (1-based)."""

    line: int
    column: int
    message: str


def check_source(text: str, headers: HeaderWalk) -> Refusal | None:
    """The first reason not to hand `text` to nvcc, or None; `headers` is the walk of the user headers it reaches
    (`includes.walk_headers`, made once per compile for its cache stamps too)."""
    return non_regular_include(headers.non_regular) or macro_bomb(text)


def non_regular_include(found: NonRegularInclude | None) -> Refusal | None:
    """An `#include` of the source, or of a user header it reaches, that names something other than a regular
    file (a device, a FIFO, a socket; links followed): placed on the source's `#include` line behind it."""
    if found is None:
        return None
    where = path_and_target(found.candidate)
    written = f'"{found.spelled}"' if found.quoted else f"<{found.spelled}>"
    message = (f"#include {written} names {where}, which is {file_kind(found.mode)}, not a source file (the "
               "compiler could read a device without end, or wait on a pipe forever)")
    if found.included_by is not None:
        message += f" (included by {found.included_by})"
    return Refusal(found.line, found.column, f"not compiled: {message}")


def macro_bomb(text: str) -> Refusal | None:
    """A macro the source uses whose expansion would exceed MAX_MACRO_EXPANSION_TOKENS tokens, counted through
    the object-like macros its body names (function-like ones count as one token: the limit still bounds them).
    Sizes are found in definition order, so a chain of definitions is followed one level at a time."""
    macros = [m for m in read_macros(text) if m.body is not None and m.params is None]
    if len(macros) < 2:
        return None
    bodies = {m.name: m for m in macros}  # the last definition of each name
    sizes: dict[str, int] = {}
    uses = set(re.findall(r"[A-Za-z_]\w*", _DEFINE_LINE_RE.sub("", text)))
    for macro in macros:
        try:
            size = _expansion(macro.name, bodies, sizes, ())
        except RecursionError:  # a chain defined backwards, thousands deep: left to the compiler's limits
            return None
        if size > MAX_MACRO_EXPANSION_TOKENS and macro.name in uses:
            return Refusal(macro.line, 1, f"not compiled: macro {macro.name} expands to more than "
                                          f"{MAX_MACRO_EXPANSION_TOKENS} tokens: the preprocessor would run out "
                                          "of memory")
    return None


def _expansion(name: str, bodies: dict[str, Macro], sizes: dict[str, int], active: tuple[str, ...]) -> int:
    """Tokens `name` expands to (capped just above the limit); a macro inside its own expansion stays a token."""
    if name in sizes:
        return sizes[name]
    total = 0
    for token in bodies[name].body or ():
        if token.kind == "id" and token.text in bodies and token.text not in active and token.text != name:
            total += _expansion(token.text, bodies, sizes, (*active, name))
        else:
            total += 1
        if total > MAX_MACRO_EXPANSION_TOKENS:
            total = MAX_MACRO_EXPANSION_TOKENS + 1
            break
    sizes[name] = total
    return total
