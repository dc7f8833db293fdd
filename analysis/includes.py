"""The include graph of CUDA sources: what a file `#include`s, where an include resolves, and who includes a file.

Three readers share it: the compile (`walk_headers`: the user headers a source reaches, whose edits must
invalidate its cached result, and any include among them of something that is not a regular file, which is
refused before nvcc runs), the diagnostic mapper (the `#include` line of the analysed file that led to an error
in a header), and the source model (kernels defined in included `.cu`/`.cuh` files). `find_includers` answers
the reverse question for a fragment: a `.cu` file written to be included by another after the typedefs and
macros it uses (Rodinia keeps its kernels that way), which does not compile on its own; the file that includes
it is its translation unit, as clangd infers a header's compile command from a file that includes it.
`find_header_folders` answers where a header that nvcc did not find lives near the file, for a build that adds
its folder with `-I`.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from kerncast.analysis.input_files import read_regular_text

#: include chains followed at most (a cycle guarded by the headers already seen ends sooner)
MAX_INCLUDE_DEPTH = 16
#: a file larger than this is taken to include nothing (it is not read)
MAX_INCLUDE_BYTES = 4 << 20
#: `.cu` files read at most when looking for a fragment's includers (a folder of generated files stays cheap)
MAX_INCLUDER_CANDIDATES = 200
#: folders listed at most, and how deep below its starting folder, when looking for a header nvcc did not find
MAX_HEADER_SEARCH_FOLDERS = 400
HEADER_SEARCH_DEPTH = 3
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*(?P<open>[<"])(?P<name>[^">]+)[">]')


def includes_in(text: str) -> list[tuple[str, bool]]:
    """The (name, quoted) includes of a source text, in order."""
    found = []
    for line in text.splitlines():
        match = INCLUDE_RE.match(line)
        if match:
            found.append((match.group("name"), match.group("open") == '"'))
    return found


def header_text(path: Path) -> str | None:
    """A file's text as the include graph reads it; None for an unreadable one or one too large to be a header."""
    try:
        return read_regular_text(path, MAX_INCLUDE_BYTES)
    except OSError:  # InputRefused too: a device, a FIFO or a huge file is no header
        return None


def includes_of(path: Path) -> list[tuple[str, bool]]:
    """The (name, quoted) includes of a file; unreadable or huge files count as including nothing."""
    text = header_text(path)
    return includes_in(text) if text is not None else []


def resolve_include(spelled: str, quoted: bool, from_dir: Path, dirs: list[Path]) -> Path | None:
    """The file an include names, searched like the preprocessor does in user directories: a quoted include
    beside the including file first, then the include directories."""
    candidates = ([from_dir] if quoted else []) + dirs
    for directory in candidates:
        path = directory / spelled
        if path.is_file():
            return path
    return None


def real_path(path: Path) -> Path:
    """The path with links resolved, to compare files reached by different spellings."""
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class NonRegularInclude:
    """An `#include` that names something other than a regular file (a device, a FIFO, a socket; links
    followed), and the `#include` line of the source behind it."""

    #: the source's `#include` line (1-based) and the column of its `"` or `<`
    line: int
    column: int
    spelled: str
    quoted: bool
    #: the path the preprocessor would open, and its mode (links followed)
    candidate: Path
    mode: int
    #: the header whose `#include` it is; None for the source's own
    included_by: Path | None


@dataclass
class HeaderWalk:
    """What one walk of the user headers a source reaches found."""

    #: (real path, mtime_ns, size) of each header reached, sorted: a cached compile is stale when these change
    stamps: list[tuple[str, int, int]]
    #: the first include, in the source's line order (then nearest first), of something not a regular file
    non_regular: NonRegularInclude | None


def walk_headers(text: str, source_dir: Path, dirs: list[Path]) -> HeaderWalk:
    """One walk of the include graph from a source, breadth first behind each of its `#include` lines in turn,
    each header read once: the stamps of the headers reached, and the first include of a non-regular file (which
    is not followed). Chains end at MAX_INCLUDE_DEPTH; a header reached before is not walked again."""
    stamps: dict[Path, tuple[str, int, int]] = {}
    first: NonRegularInclude | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        match = INCLUDE_RE.match(line)
        if match is None:
            continue
        pending: list[tuple[str, bool, Path, Path | None, int]] = [
            (match.group("name"), match.group("open") == '"', source_dir, None, 0)]
        while pending:
            name, quoted, from_dir, by, depth = pending.pop(0)
            if depth > MAX_INCLUDE_DEPTH:
                continue
            found, odd = _locate(name, quoted, from_dir, dirs)
            if odd is not None and first is None:
                first = NonRegularInclude(line_no, match.start("open") + 1, name, quoted, odd[0], odd[1], by)
            if found is None:
                continue
            real = real_path(found)
            if real in stamps:
                continue
            try:
                st = real.stat()
            except OSError:  # removed meanwhile
                continue
            stamps[real] = (str(real), st.st_mtime_ns, st.st_size)
            pending += [(n, q, found.parent, found, depth + 1) for n, q in includes_of(found)]
    return HeaderWalk(sorted(stamps.values()), first)


def _locate(spelled: str, quoted: bool, from_dir: Path, dirs: list[Path]) -> tuple[Path | None,
                                                                                   tuple[Path, int] | None]:
    """Where `#include spelled` leads, searched as the preprocessor does (a directory is passed over): (the
    regular file, None), or (None, (the path, its mode)) when the first that exists is not a regular file, or
    (None, None) when none exists."""
    places = [Path()] if os.path.isabs(spelled) else ([from_dir] if quoted else []) + dirs
    for directory in places:
        candidate = directory / spelled
        try:
            mode = os.stat(candidate).st_mode
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(mode):
            return candidate, None
        if not stat.S_ISDIR(mode):
            return None, (candidate, mode)
    return None, None


def find_includers(fragment: Path) -> list[Path]:
    """The `.cu` files beside `fragment` or one folder up whose `#include`s name it, nearest first: a quoted
    one, or one in angle brackets that names it from the includer's folder (the build adds that with `-I .`)."""
    target = real_path(fragment)
    return [candidate for candidate in _includer_candidates(fragment)
            if any((found := resolve_include(name, True, candidate.parent, [])) is not None
                   and real_path(found) == target
                   for name, _ in includes_of(candidate))]


def _includer_candidates(fragment: Path) -> list[Path]:
    out: list[Path] = []
    for folder in dict.fromkeys([fragment.parent, fragment.parent.parent]):
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.is_file() and e.name.endswith(".cu"))
        except OSError:
            continue
        out += [folder / name for name in names if folder / name != fragment]
    return out[:MAX_INCLUDER_CANDIDATES]


def find_header_folders(spelled: str, source_dir: Path) -> list[Path]:
    """The folders near a source file that hold the header `spelled` (`inc/FDTD3dGPU.h` for "FDTD3dGPU.h"),
    for an include that nvcc did not find because the build adds them with `-I`: first the source's own folder
    and those below it; where none holds it, the folders below its parent (Rodinia's `../common`, a sample's
    `../inc`), unless the source's folder is a repository's root. Nearest first; an empty list where none does,
    and for a name that is absolute or climbs out with `..` (no folder below would be where it is).
    """
    name = Path(spelled)
    if name.is_absolute() or ".." in name.parts:
        return []
    tiers = [source_dir]
    parent = source_dir.parent
    if parent != source_dir and parent != Path.home() and not (source_dir / ".git").exists():
        tiers.append(parent)
    for top in tiers:
        found = [folder for folder in _folders_below(top) if (folder / spelled).is_file()]
        if found:
            return sorted(found, key=lambda f: (len(f.parts), str(f)))
    return []


def _folders_below(top: Path) -> list[Path]:
    """`top` and the folders below it to HEADER_SEARCH_DEPTH, breadth first, hidden ones left out."""
    out, level = [top], [top]
    for _ in range(HEADER_SEARCH_DEPTH):
        below = []
        for folder in level:
            try:
                below += sorted(Path(e.path) for e in os.scandir(folder)
                                if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
            except OSError:
                continue
        level = below[:MAX_HEADER_SEARCH_FOLDERS - len(out)]
        out += level
        if not level:
            break
    return out
