"""A minimal TOML writer for GPU profiles (Python's standard library reads TOML but cannot write it).

It writes what a profile holds and nothing more: strings, booleans, integers, finite floats, lists of those
(nested lists too) and nested tables. Scalars and lists of a table come first, then its sub-tables, so the
output reads like the hand-written profiles and `tomllib` reads it back to the same values.

Kept rather than `tomli-w` (1.2) for one missing feature: tomli-w writes every non-empty array one element per
line, with no option for inline arrays, so a dumped profile (a calibrated one is a file its owner reads and
compares with the shipped ones) doubles in length: k20's dump is 232 lines here and 450 with tomli-w, the
hand-written file 240. Both read back through `tomllib` to the same data for every shipped profile.
"""

from __future__ import annotations

import math
import re
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: TOML profile values must be finite, got {value}")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v, where) for v in value) + "]"
    raise ValueError(f"{where}: cannot write a {type(value).__name__} to TOML")


def dumps(data: dict[str, Any]) -> str:
    """TOML text for a nested dictionary (tables as dicts, arrays as lists)."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).strip() + "\n"


def _table(data: dict[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, dict)]
    if path and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
    for key, value in scalars:
        lines.append(f"{_key(key)} = {_value(value, '.'.join([*path, key]))}")
    for key, value in tables:
        _table(value, [*path, key], lines)
