"""A kernel report moved to new lines: the report of a kernel whose code did not change but whose lines moved.

An edit above a kernel (a comment, another kernel grown by a line) changes every line number nvcc writes into
the kernel's `.loc` directives, and so the kernel's cache key, although nothing the analysis reads changed
except those numbers. Such a kernel is recognised by its *moved key*: the cache key's parts with every line of
the analysed file written relative to the kernel's first line (`relative_loc`, `shifted`), so that the same
kernel one or fifty lines further down has the same moved key. Its previous report is then shifted by the
distance (`shifted`) instead of being analysed again.

Where a line number reaches a report: the `line`/`end_line`/`*_line` fields and `lines` of findings, related
locations, fixes' edits, loops, launch values, per-line energy; the `line`/`lines` entries of findings' detail
and fixes' data; and messages that say "line 12" or "lines 12, 14". A kernel's PTX text may move too (a kernel
above it grew by an instruction): the "PTX line 40" of a message moves by that distance. A number the shifter
does not recognise in an input (the launch) makes the moved key differ, so such a kernel is
analysed again rather than given a stale number.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

#: "line 12", "lines 12, 14 and 20", "lines 12-14", and "PTX line 12" (a position in the PTX text, which
#: moves by its own distance)
_LINE_WORDS_RE = re.compile(r"\b(PTX )?(?:(line) (\d+)|(lines) (\d+(?:(?:, | and |-|–)\d+)*))")
_NUMBER_RE = re.compile(r"\d+")
#: `.loc F L C` and `inlined_at F L C`: the file index and the line
_LOC_RE = re.compile(r"((?:^[ \t]*\.loc|inlined_at)[ \t]+)(\d+)([ \t]+)(\d+)", re.MULTILINE)
_FILE_RE = re.compile(r'^[ \t]*\.file[ \t]+(\d+)[ \t]+"([^"\n]*)"', re.MULTILINE)


def shifted_text(text: str, delta: int, ptx_delta: int = 0) -> str:
    """`text` with the source lines it names ("line 12", "lines 12-14") moved by `delta`, and the PTX lines
    ("PTX line 40") by `ptx_delta`."""
    if not (delta or ptx_delta) or "line" not in text:
        return text

    def move(m: re.Match[str]) -> str:
        by = ptx_delta if m.group(1) else delta
        if m.group(2):
            return f"{m.group(1) or ''}line {moved_line(int(m.group(3)), by)}"
        return f"{m.group(1) or ''}lines " + _NUMBER_RE.sub(lambda n: str(moved_line(int(n.group()), by)),
                                                         m.group(5))

    return _LINE_WORDS_RE.sub(move, text)


def moved_line(line: int, delta: int) -> int:
    """`line` moved by `delta`; line 0, nvcc's and the report's "no line", stays 0."""
    return line + delta if line else line


def _is_line_name(name: str) -> bool:
    """A field or key that holds a source line (or, `lines`, several): not a PTX position."""
    known = _LINE_NAMES.get(name)
    if known is None:
        known = _LINE_NAMES[name] = not name.startswith("ptx") and (name in ("line", "lines")
                                                                    or name.endswith(("_line", "_lines")))
    return known


#: `_is_line_name` of the field names and dict keys seen (a report has a few dozen distinct ones)
_LINE_NAMES: dict[str, bool] = {}


def _shift_lines(value: Any, delta: int, ptx_delta: int, fixed: dict[int, Any] | None) -> tuple[Any, bool]:
    """The line number(s) of a field named like a line: an int, or ints in a tuple or list (other items, such as
    per-line records, are shifted as any value); and whether the value holds no line (`_shift`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return moved_line(value, delta), not value
    if isinstance(value, tuple | list):
        moved = [_shift_lines(v, delta, ptx_delta, fixed) for v in value]
        return type(value)(v for v, _ in moved), all(free for _, free in moved)
    return _shift(value, delta, ptx_delta, fixed)


def shifted(value: Any, delta: int, ptx_delta: int = 0, fixed: dict[int, Any] | None = None) -> Any:
    """A copy of `value` (a report or any part of it) with every source line it holds moved by `delta` (and
    every PTX line it names by `ptx_delta`).

    Dataclasses, lists, tuples and dicts that hold a line are copied (the original, which a cache and earlier
    results share, is never changed); strings have their "line N" phrases moved; a part that holds no line at
    all (no line number but 0, no string that says "line": a power explanation, an instruction mix) is shared
    as it is, like every other value. With `fixed`, a memo kept with the report and its shifted copies (which
    share those parts), a part found to hold no line is remembered and passed over the next time: a save that
    moved every kernel shifts every report, and most of a report holds no line."""
    return _shift(value, delta, ptx_delta, fixed)[0]


def _shift(value: Any, delta: int, ptx_delta: int, fixed: dict[int, Any] | None) -> tuple[Any, bool]:
    """`shifted`, and whether `value` holds no line (it is then returned itself, and remembered in `fixed`)."""
    kind = type(value)
    if kind in _PLAIN:
        return value, True
    if kind is str:
        return (value, True) if "line" not in value else (shifted_text(value, delta, ptx_delta), False)
    if fixed is not None and fixed.get(id(value)) is value:
        return value, True
    names = _dataclass_fields(kind)
    if names is not None:
        fields = []
        free = True
        for name, is_line in names:
            old = getattr(value, name)
            if is_line:
                new, free_here = _shift_lines(old, delta, ptx_delta, fixed)
            elif _unchanged(old):
                new, free_here = old, True
            else:
                new, free_here = _shift(old, delta, ptx_delta, fixed)
            fields.append((name, new))
            free = free and free_here
        if free:
            return _kept(value, fixed)
        out = object.__new__(kind)  # every field is set below (a copy without __init__'s checks, or a deep copy)
        for name, new in fields:
            object.__setattr__(out, name, new)
        return out, False
    if isinstance(value, dict):
        # most entries are numbers (instruction mixes, breakdowns, feature values): kept without a call
        made = {}
        free = True
        for k, v in value.items():
            if type(k) is str and _is_line_name(k):
                new, free_here = _shift_lines(v, delta, ptx_delta, fixed)
            elif _unchanged(v):
                new, free_here = v, True
            else:
                new, free_here = _shift(v, delta, ptx_delta, fixed)
            made[k] = new
            free = free and free_here
        if free:
            return _kept(value, fixed)
        if kind is dict:
            return made, False
        out = copy.copy(value)  # a defaultdict keeps its factory
        out.clear()
        out.update(made)
        return out, False
    if kind is list or kind is tuple:
        items = [(v, True) if _unchanged(v) else _shift(v, delta, ptx_delta, fixed) for v in value]
        if all(free for _, free in items):
            return _kept(value, fixed)
        return kind(v for v, _ in items), False
    return value, True


def _kept(value: Any, fixed: dict[int, Any] | None) -> tuple[Any, bool]:
    """A part that holds no line: itself, remembered in `fixed` (which keeps it, so that its id stays its own)."""
    if fixed is not None:
        fixed[id(value)] = value
    return value, True


def _unchanged(value: Any) -> bool:
    """A value that holds no line: a number, None, or a string that names none."""
    kind = type(value)
    return kind in _PLAIN or (kind is str and "line" not in value)


#: values with no line in them, shared as they are
_PLAIN = frozenset({int, float, bool, type(None)})
#: per dataclass type, its fields' names and whether each holds lines (None: not a dataclass)
_FIELDS: dict[type, tuple[tuple[str, bool], ...] | None] = {}


def _dataclass_fields(kind: type) -> tuple[tuple[str, bool], ...] | None:
    """The fields of a dataclass type, each with whether it holds source lines, looked up once per type."""
    if kind not in _FIELDS:
        _FIELDS[kind] = (tuple((f.name, _is_line_name(f.name)) for f in dataclasses.fields(kind))
                         if dataclasses.is_dataclass(kind) else None)
    return _FIELDS[kind]


def file_index(ptx: str, path: str | None) -> str | None:
    """The `.file` index (as written) that names `path` in the PTX, or None."""
    if path is None:
        return None
    return next((m.group(1) for m in _FILE_RE.finditer(ptx) if m.group(2) == path), None)


def relative_loc(text: str, index: str | None, base: int) -> str:
    """PTX text whose `.loc`/`inlined_at` lines of file `index` are written relative to `base` (lines of other
    files, headers that do not move with an edit of the analysed file, stay as they are)."""
    if index is None:
        return text

    def rel(m: re.Match[str]) -> str:
        if m.group(2) != index or m.group(4) == "0":  # another file's line, or no line
            return m.group()
        return f"{m.group(1)}{m.group(2)}{m.group(3)}@{moved_line(int(m.group(4)), -base)}"

    return _LOC_RE.sub(rel, text)


def first_loc_line(text: str, index: str | None) -> int | None:
    """The smallest line (not 0) of file `index` in the PTX text's `.loc`/`inlined_at` directives, or None."""
    if index is None:
        return None
    found = [line for m in _LOC_RE.finditer(text) if m.group(2) == index and (line := int(m.group(4)))]
    return min(found) if found else None
