"""What the rewrites of a whole kernel body share: reading the body as one token string, naming new variables,
replacing the body, the element type of a pointer parameter, and the snippet templates.

The tiled transpose (memory access rule) and the tiled matrix multiply and stencil (shared-tiling rule) each
match a naive kernel's whole body against a token pattern and write a new body in its place; the rules'
snippets (atomic aggregation, shared tiles, memory templates) all come from `data/snippets.toml`.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib import resources

from kerncast.analysis.edits import line_indent, replace
from kerncast.analysis.finding import TextEdit
from kerncast.analysis.source_model import KernelDefinition, SourceFacts

#: qualifiers that may stand between a parameter's `*` and its name (`float *__restrict__ p`)
_POINTER_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "restrict"})


def match_body(facts: SourceFacts, kdef: KernelDefinition, *patterns: re.Pattern[str]) -> dict[str, str] | None:
    """The named parts of the kernel's body (its tokens joined by single spaces) for the first of `patterns`
    the whole body matches; None for any other body, or a kernel defined in another file (its body is not
    edited here)."""
    if kdef.body_start is None or kdef.body_end is None or kdef.file is not None:
        return None
    body = " ".join(t.text for t in facts.env.tokens if kdef.body_start <= t.offset <= kdef.body_end)
    m = next((found for found in (p.match(body) for p in patterns) if found is not None), None)
    return m.groupdict() if m is not None else None


def taken_names(facts: SourceFacts, kdef: KernelDefinition) -> set[str]:
    """Names a new variable of the kernel's body must not take: the kernel's own tokens and the file's macros
    (a `#define TILE 32` the kernel does not mention still expands in a new `const int TILE = ...`)."""
    used = {t.text for t in facts.env.tokens if kdef.name_offset <= t.offset <= (kdef.body_end or 0)}
    used.update(facts.env.macros)
    return used


def replace_body(facts: SourceFacts, kdef: KernelDefinition, lines: list[str]) -> TextEdit:
    """The edit that replaces the kernel's whole body, braces included, by `lines` at the body's indentation
    (an empty string is an empty line)."""
    ind = line_indent(facts, facts.position(kdef.body_start or 0)[0] + 1) or "    "
    body = "{\n" + "".join(f"{ind}{s}\n" if s else "\n" for s in lines) + "}"
    return replace(facts, kdef.body_start or 0, (kdef.body_end or 0) + 1, body)


def element_type(facts: SourceFacts, kdef: KernelDefinition, param: str) -> str | None:
    """`float` for a parameter declared `const float *param`, or `const float *__restrict__ param`, in the
    kernel's signature."""
    toks = [t for t in facts.env.tokens if kdef.name_offset < t.offset < kdef.params_end_offset]
    for i, t in enumerate(toks):
        if t.text != param:
            continue
        star = i - 1
        while star >= 0 and toks[star].text in _POINTER_QUALIFIERS:
            star -= 1
        if star >= 1 and toks[star].text == "*":
            ids = [u.text for u in toks[:star] if u.kind == "id" and u.text not in _POINTER_QUALIFIERS]
            return ids[-1] if ids else None
    return None


@cache
def snippet_templates() -> dict[str, dict]:
    """The snippet templates by fix kind (`data/snippets.toml`), read once."""
    text = resources.files("kerncast.analysis").joinpath("data/snippets.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)
