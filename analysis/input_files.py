"""Reading the files a user or a project hands Kerncast: regular files only, and never more than a cap.

Sources, PTX, headers, GPU profiles and compile_commands.json all come from repositories that anyone may clone,
and a repository can hold a link to `/dev/zero` (its size reads as 0, its content never ends), a named pipe
(opening it for reading waits for a writer that never comes) or a huge file. Every reader goes through this
module: the path is opened without blocking (`O_NONBLOCK`, which a FIFO honours at open), the open file itself
is checked to be a regular file (links are followed by the open, so the check is of what was reached, not of
the name, and a file swapped after a check cannot slip through), and at most the cap plus one byte is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: open flags: never block on a FIFO or a device, never become the controlling terminal, not inherited
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_READ_CHUNK = 1 << 20


class InputRefused(OSError):
    """A file Kerncast does not read: not a regular file, or larger than the cap; the message says which."""


class InputTooLarge(InputRefused):
    """A regular file larger than the cap; `size` is its size in bytes (at least cap + 1 when it grew)."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words, for a message."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def path_and_target(path: Path) -> str:
    """`path`, and where a link leads when it is one, so that the message names the device behind the link."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return str(path)
    return str(path) if real == os.path.abspath(path) else f"{path} (a link to {real})"


def check_regular(path: str | os.PathLike[str]) -> os.stat_result:
    """The status of the file `path` leads to (links followed); InputRefused when it is not a regular file."""
    p = Path(path)
    st = os.stat(p)
    if not stat.S_ISREG(st.st_mode):
        raise InputRefused(f"{path_and_target(p)} is {file_kind(st.st_mode)}: Kerncast reads only regular files")
    return st


def read_regular_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`, at most `max_bytes` of them.

    InputRefused for a device, FIFO, socket or directory (also behind a link), InputTooLarge for a file larger
    than `max_bytes` (also one that grows past it while read); OSError for a file that cannot be opened.
    """
    p = Path(path)
    fd = os.open(p, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputRefused(f"{path_and_target(p)} is {file_kind(st.st_mode)}: Kerncast reads only regular files")
        if st.st_size > max_bytes:
            raise InputTooLarge(_too_large(p, st.st_size, max_bytes), st.st_size, max_bytes)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(_READ_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise InputTooLarge(_too_large(p, total, max_bytes), total, max_bytes)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: str | os.PathLike[str], max_bytes: int) -> str:
    """`read_regular_file` decoded as UTF-8 (undecodable bytes replaced), line endings as they are."""
    return read_regular_file(path, max_bytes).decode("utf-8", errors="replace")


def _too_large(path: Path, size: int, limit: int) -> str:
    return f"{path} is {size / 1e6:.1f} MB, above the {limit / 1e6:.1f} MB Kerncast reads"
