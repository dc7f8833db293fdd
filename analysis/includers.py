"""The files that `#include` a CUDA fragment: a `.cu` file written to be included by another, not compiled alone.

Many code bases (Rodinia among them) keep each kernel in its own `.cu` file that the main `.cu` file includes
after the typedefs, macros and constants the kernel uses. Such a fragment does not compile on its own; the file
that includes it is its translation unit, as clangd infers a header's compile command from a file including it.
Candidates are the `.cu` files beside the fragment and one folder up (bounded in number and size), and a
candidate includes the fragment when one of its quoted `#include`s, taken relative to the candidate's folder,
names the fragment.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: `.cu` files read when looking for a fragment's includers (a folder of generated files stays cheap)
MAX_CANDIDATES = 200
#: a candidate larger than this is not read
MAX_CANDIDATE_BYTES = 1024 * 1024
_QUOTED_INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)


def find_includers(fragment: Path) -> list[Path]:
    """The `.cu` files beside `fragment` or one folder up that `#include` it, nearest first, by name."""
    target = _real(fragment)
    found = []
    for candidate in _candidates(fragment):
        if _includes(candidate, target):
            found.append(candidate)
    return found


def _candidates(fragment: Path) -> list[Path]:
    folders = [fragment.parent, fragment.parent.parent]
    out: list[Path] = []
    for folder in dict.fromkeys(folders):
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.is_file() and e.name.endswith(".cu"))
        except OSError:
            continue
        out += [folder / name for name in names if folder / name != fragment]
    return out[:MAX_CANDIDATES]


def _includes(candidate: Path, target: Path) -> bool:
    try:
        if candidate.stat().st_size > MAX_CANDIDATE_BYTES:
            return False
        text = candidate.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(_real(candidate.parent / spelled) == target for spelled in _QUOTED_INCLUDE_RE.findall(text))


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()
