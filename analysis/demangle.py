"""Display names for kernels: C++ names demangled with template arguments, without return type or parameters.

A report line reads `MatrixMulCUDA<32>`, not `_Z13MatrixMulCUDAILi32EEvPfPKfS2_ii` and not the full
signature. Demangling is delegated to `c++filt` (one batch process for all names) because a correct Itanium
demangler is large; without it the mangled name is shown, which is still unambiguous.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable

_TOOLS = ("c++filt", "llvm-cxxfilt")
_TIMEOUT_S = 10.0
_CACHE_LIMIT = 10_000
_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
# Operator spellings, longest first, so `operator+>` inside template arguments stops after the `+`.
_OPERATOR_SYMBOLS = sorted(
    ["<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=", "-=", "*=",
     "/=", "%=", "&=", "|=", "^=", "->", "()", "[]", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=",
     "<", ">", ","],
    key=len, reverse=True)
_TRAILING_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")
_cache: dict[str, str] = {}


def demangle(names: Iterable[str]) -> dict[str, str]:
    """Map each mangled name to its display name; names that are not C++-mangled map to themselves.

    Never raises: a missing, failing or slow c++filt leaves the names mangled.
    """
    unique = list(dict.fromkeys(names))
    result = {name: _cache.get(name, name) for name in unique}
    todo = [n for n in unique if n not in _cache and _is_mangled(n)]
    if todo:
        for name, text in zip(todo, _run_cxxfilt(todo) or todo, strict=True):
            if text != name:
                result[name] = display_name(text)
                _remember(name, result[name])
    return result


def _is_mangled(name: str) -> bool:
    """Itanium-mangled names start with _Z; anything with whitespace cannot be sent line by line."""
    return name.startswith("_Z") and not any(ch.isspace() for ch in name)


def _remember(name: str, shown: str) -> None:
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[name] = shown


def _run_cxxfilt(names: list[str]) -> list[str] | None:
    """Demangled lines for `names` from one c++filt run, or None when no usable tool answered."""
    tool = next((found for found in map(shutil.which, _TOOLS) if found), None)
    if tool is None:
        return None
    try:
        proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True,
                              timeout=_TIMEOUT_S, errors="replace", check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(names):
        return None
    return [line.strip() for line in lines]


def display_name(signature: str) -> str:
    """`void ns::k<32>(float*, int)` -> `ns::k<32>`: drop the parameter list and the return type."""
    text = _strip_parameters(signature.strip())
    return _strip_return_type(text)


def _top_level(text: str) -> list[bool]:
    """For each character, whether it is outside every bracket pair (operator symbols count as nested).

    Brackets themselves are top-level when they open or close a top-level group, so the parameter list's
    parentheses can be found. `operator<<` and `operator()` are skipped so their symbols do not nest.
    """
    flags = [False] * len(text)
    depth = 0
    i = 0
    while i < len(text):
        skip = _operator_symbol_length(text, i)
        if skip:
            i += skip
            continue
        ch = text[i]
        if ch in _OPEN:
            flags[i] = depth == 0
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
            flags[i] = depth == 0
        else:
            flags[i] = depth == 0
        i += 1
    return flags


def _operator_symbol_length(text: str, i: int) -> int:
    """Length of `operator` plus its symbol when one starts at `i` (0 otherwise)."""
    if not text.startswith("operator", i) or (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
        return 0
    j = i + len("operator")
    for symbol in _OPERATOR_SYMBOLS:
        if text.startswith(symbol, j):
            return j + len(symbol) - i
    return 0 if j < len(text) and (text[j].isalnum() or text[j] == "_") else j - i


def _strip_parameters(text: str) -> str:
    """Remove the final top-level `( ... )` group (and trailing cv/ref qualifiers) when it ends the text."""
    trimmed = text
    changed = True
    while changed:
        changed = False
        for qualifier in _TRAILING_QUALIFIERS:
            if trimmed.endswith(qualifier):
                trimmed = trimmed[: -len(qualifier)].rstrip()
                changed = True
    if not trimmed.endswith(")"):
        return text
    flags = _top_level(trimmed)
    if not flags or not flags[-1]:
        return text
    opens = [i for i, ch in enumerate(trimmed) if ch == "(" and flags[i]]
    if not opens or opens[-1] == 0:
        return text
    return trimmed[: opens[-1]].rstrip()


def _strip_return_type(text: str) -> str:
    """Drop everything before the name: the last top-level space before any `operator` keyword."""
    flags = _top_level(text)
    limit = len(text)
    for i in range(len(text)):
        if text.startswith("operator", i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            limit = i
            break
    spaces = [i for i in range(limit) if text[i] == " " and flags[i]]
    return text[spaces[-1] + 1:] if spaces else text
