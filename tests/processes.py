"""The processes below a process, read from Linux's /proc: tests that watch the compiler processes a command
starts (to kill one mid-compile, to wait until a trial compile runs) find them here."""

from __future__ import annotations

from pathlib import Path


def _children_by_parent() -> dict[int, list[int]]:
    """Every process's children, by parent pid; processes that end while /proc is read are left out."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry.name))
    return children


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    return _children_by_parent().get(pid, [])


def descendants(pid: int) -> list[int]:
    """Every process below `pid`: its children, theirs, and so on."""
    by_parent = _children_by_parent()
    out, todo = [], [pid]
    while todo:
        for child in by_parent.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
