"""The `#define`s a CUDA source receives from its quoted `#include`s, placed where each include stands, and
the files those includes reach.

Launch sizes are often named in a project's own header (`#define BLOCK_SIZE 16` in `common.h`), so the
constant folder must see them to fold `<<<n / BLOCK_SIZE, BLOCK_SIZE>>>`. Headers are found as the compiler
finds quoted includes (beside the including file, then in the include directories), followed recursively,
and each macro is placed at the offset of the analysed file's `#include` line that brings it in, so a
`#define` of the file itself after that line still wins, as it does for the preprocessor. Like the file's
own macros, a header's are read without evaluating `#if`; system (`<...>`) headers are not read. The same walk
gives the source model the included `.cu`/`.cuh` files whose kernels belong to the translation unit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from kerncast.analysis.cexpr import LineIndex, Macro, Token, read_macros
from kerncast.analysis.includes import INCLUDE_RE, MAX_INCLUDE_DEPTH, header_text, real_path, resolve_include
from kerncast.analysis.lru import BoundedLru

#: headers whose macros are kept (by path, modification time and size, so an edited header is read again)
_HEADERS: BoundedLru[tuple[Path, int, int], tuple[list[Macro], tuple[tuple[int, str], ...]]] = BoundedLru(256)


@dataclass(frozen=True)
class Included:
    """What a source's quoted includes give it: their macros (each at the source's `#include` that brings it in)
    and the files they reach, each once, in the order the preprocessor first reaches them."""

    macros: tuple[Macro, ...]
    files: tuple[Path, ...]


def read_included(text: str, path: str | Path, include_dirs: list[str] | None = None) -> Included:
    """The quoted includes of `text` (the file at `path`), followed recursively."""
    quoted = _quoted_includes(text)
    if not quoted:  # the common case of a file with system includes only: its line index is not needed
        return Included((), ())
    dirs = [Path(d) for d in include_dirs or []]
    lines = LineIndex(text)
    seen: dict[Path, Path] = {}  # real path -> the path it was reached by, in the order reached
    out: list[Macro] = []
    for offset, name in quoted:
        target = resolve_include(name, True, Path(path).parent, dirs)
        if target is None:
            continue
        line = lines.line(offset)
        out.extend(_at(m, offset, line) for m in _macros_through(target, dirs, seen, 0))
    return Included(tuple(out), tuple(seen.values()))


def included_macros(text: str, path: str | Path, include_dirs: list[str] | None = None) -> tuple[Macro, ...]:
    """Macros of the headers `text` (the file at `path`) includes with quotes, each at its `#include`."""
    return read_included(text, path, include_dirs).macros


def _macros_through(header: Path, dirs: list[Path], seen: dict[Path, Path], depth: int) -> list[Macro]:
    """A header's macros in preprocessor order, with those of the headers it includes where it includes them."""
    key = real_path(header)
    if depth > MAX_INCLUDE_DEPTH or key in seen:
        return []
    seen[key] = header
    own, nested = _read_header(header)
    events: list[tuple[int, list[Macro]]] = [(m.offset, [m]) for m in own]
    for offset, name in nested:
        target = resolve_include(name, True, header.parent, dirs)
        if target is not None:
            events.append((offset, _macros_through(target, dirs, seen, depth + 1)))
    events.sort(key=lambda e: e[0])
    return [m for _, found in events for m in found]


def _read_header(header: Path) -> tuple[list[Macro], tuple[tuple[int, str], ...]]:
    """(macros, quoted includes with their offsets) of a header, from the cache while it is unchanged."""
    try:
        stat = header.stat()
    except OSError:
        return [], ()
    key = (real_path(header), stat.st_mtime_ns, stat.st_size)
    cached = _HEADERS.get(key)
    if cached is not None:
        return cached
    text = header_text(header)
    if text is None:  # unreadable, not a regular file, or larger than a header may be: it gives nothing
        return [], ()
    found = (read_macros(text), _quoted_includes(text))
    _HEADERS.put(key, found)
    return found


@lru_cache(maxsize=8)
def _quoted_includes(text: str) -> tuple[tuple[int, str], ...]:
    """(offset of the line, name) of each quoted `#include` of a text: a function of the text alone, kept
    because every kernel's launch inference asks for those of the same file."""
    out = []
    offset = 0
    for line in text.splitlines(keepends=True):
        match = INCLUDE_RE.match(line)
        if match and match.group("open") == '"':
            out.append((offset, match.group("name")))
        offset += len(line)
    return tuple(out)


def _at(macro: Macro, offset: int, line: int) -> Macro:
    """The macro as if defined at `offset` of the including file (its tokens too, so no offset points into the
    header's text)."""
    body = None if macro.body is None else [Token(t.kind, t.text, offset) for t in macro.body]
    return replace(macro, body=body, offset=offset, line=line)
