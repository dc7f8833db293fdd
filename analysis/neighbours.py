"""The other sources in the analysed file's folder, whose calls may give a launch wrapper's parameters values.

Real projects launch kernels from a wrapper in the `.cu` file (`void launch_blur(dim3 grid, dim3 block, ...)`)
and call the wrapper from a `.cpp` beside it. When the `.cu` file itself never calls the wrapper, the constant
folder (`cexpr.ConstEnv`) asks these files for the calls. They are read lazily (only when a fold needs a
caller), with their own header macros, and kept while their stamp (modification time, size) is unchanged;
the stamps are part of the scan's cache key, so an edited caller is read again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kerncast.analysis.cexpr import ConstEnv
from kerncast.analysis.header_macros import included_macros
from kerncast.analysis.includes import MAX_INCLUDE_BYTES
from kerncast.analysis.input_files import read_regular_text
from kerncast.analysis.lru import BoundedLru

#: sources that may call a wrapper defined in a CUDA file
CALLER_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
#: files of a folder read at most (a folder of generated sources stays cheap)
MAX_NEIGHBOURS = 64

_ENVS: BoundedLru[tuple[str, int, int, tuple[str, ...]], ConstEnv] = BoundedLru(64)


@dataclass(frozen=True)
class Neighbours:
    """The analysed file's folder-mates: their names and stamps, and how to read them."""

    path: str
    include_dirs: tuple[str, ...]
    #: (file name, modification time in ns, size) of each neighbour, in name order
    stamps: tuple[tuple[str, int, int], ...]

    @staticmethod
    def of(path: str | Path, include_dirs: list[str] | None = None) -> Neighbours:
        """The sources beside `path` (not itself), up to `MAX_NEIGHBOURS`; none when the folder cannot be read."""
        here = Path(path)
        stamps: list[tuple[str, int, int]] = []
        try:
            entries = sorted(os.scandir(here.parent), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            if len(stamps) >= MAX_NEIGHBOURS:
                break
            if entry.name == here.name or not entry.name.endswith(CALLER_SUFFIXES):
                continue
            try:
                stat = entry.stat()
            except OSError:
                continue
            if entry.is_file() and stat.st_size <= MAX_INCLUDE_BYTES:
                stamps.append((entry.name, stat.st_mtime_ns, stat.st_size))
        return Neighbours(str(here), tuple(include_dirs or ()), tuple(stamps))

    def environments(self) -> list[tuple[str, ConstEnv]]:
        """(file name, constant folder) of each neighbour, read now or taken from the cache."""
        folder = Path(self.path).parent
        out = []
        for name, mtime, size in self.stamps:
            key = (str(folder / name), mtime, size, self.include_dirs)
            env = _ENVS.get(key)
            if env is None:
                try:
                    text = read_regular_text(folder / name, MAX_INCLUDE_BYTES)
                    env = ConstEnv(text, included_macros(text, folder / name, list(self.include_dirs)))
                except (OSError, ValueError, IndexError, RecursionError):
                    continue
                _ENVS.put(key, env)
            out.append((name, env))
        return out
