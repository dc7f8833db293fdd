"""A host emulation of simple CUDA kernel bodies, to check that a rewrite computes what the kernel it replaces
computed: the body's lines become a Python generator per thread (`__syncthreads()` a `yield`), and every
thread of a block runs up to each barrier in turn. It reads the layout Kerncast's rewrites and the examples
use (one statement or block opener per line, braces closing on their own lines): declarations, `const int`
tile sizes, `__shared__` arrays, counted `for` loops, `if`, and `c ? a : b`; anything else is a test bug."""

from __future__ import annotations

import itertools
import re
import textwrap
from collections.abc import Sequence


class Strict(list):
    """A device array: a negative index is out of bounds, as in CUDA, not Python's count from the end."""

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, int) and i < 0:
            raise IndexError(i)
        return super().__getitem__(i)

    def __setitem__(self, i, v):  # type: ignore[override]
        if isinstance(i, int) and i < 0:
            raise IndexError(i)
        super().__setitem__(i, v)


class Dim:
    def __init__(self, x: int, y: int = 1, z: int = 1) -> None:
        self.x, self.y, self.z = x, y, z


def kernel_body(text: str, kernel: str) -> tuple[list[str], list[str]]:
    """The parameter names and the body lines (between the braces) of a kernel whose `{` is on its own line."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if f"void {kernel}(" in ln)
    params = re.search(r"\((.*)\)", lines[start])
    assert params is not None, lines[start]
    names = [re.findall(r"\w+", p)[-1] for p in params.group(1).split(",")]
    open_at = next(i for i in range(start, len(lines)) if lines[i].strip() == "{")
    depth, i = 0, open_at
    for i in range(open_at, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        if depth == 0:
            break
    return names, lines[open_at + 1:i]


def _name(n: str) -> str:
    return "in_" if n == "in" else n


def _expr(s: str, consts: dict[str, int]) -> str:
    s = re.sub(r"\(int\)", "", s)
    s = re.sub(r"\b(\d+\.\d*|\d+)[fF]\b", r"\1", s)
    s = s.replace("&&", " and ").replace("||", " or ")
    s = re.sub(r"\bin\b", "in_", s)
    for name, value in consts.items():
        s = re.sub(rf"\b{name}\b", str(value), s)
    m = re.fullmatch(r"(.*?)=\s*\((.+)\)\s*\?\s*(.+?)\s*:\s*(.+)", s)
    if m:
        s = f"{m.group(1)}= ({m.group(3)}) if ({m.group(2)}) else ({m.group(4)})"
    return s


def to_python(names: Sequence[str], body: Sequence[str], consts: dict[str, int]) -> str:
    """The source of `thread(threadIdx, blockIdx, blockDim, shared, *params)`, a generator."""
    out = [f"def thread(threadIdx, blockIdx, blockDim, shared, {', '.join(_name(n) for n in names)}):",
           "    yield None"]
    consts = dict(consts)
    for raw in textwrap.dedent("\n".join(body)).splitlines():
        text = re.sub(r"//.*", "", raw).rstrip()
        st = text.strip()
        if not st or st == "}":
            continue
        indent = " " * (len(text) - len(text.lstrip()))
        s = st.rstrip("{").strip().rstrip(";").strip()
        if (m := re.fullmatch(r"const int (\w+) = (\d+)", s)):
            consts[m.group(1)] = int(m.group(2))
            continue
        s = _expr(s, consts)
        if (m := re.fullmatch(r"__shared__ \w+ (\w+)((?:\[[^\]]+\])+)", s)):
            dims = [eval(d) for d in re.findall(r"\[([^\]]+)\]", m.group(2))]  # noqa: S307 - folded constants
            init = "None"  # unwritten: reading one fails the run (CUDA leaves shared memory undefined)
            for d in reversed(dims):
                init = f"[{init} for _ in range({d})]" if init.startswith("[") else f"[{init}] * {d}"
            s = f"{m.group(1)} = shared.setdefault({m.group(1)!r}, {init})"
        elif s == "__syncthreads()":
            s = "yield None"
        elif (m := re.fullmatch(r"for \(int (\w+) = (.+?); \1 (<|<=) (.+?); (?:\+\+\1|\1\+\+|\1 \+= (.+?))\)", s)):
            stop = m.group(4) if m.group(3) == "<" else f"({m.group(4)}) + 1"
            s = f"for {m.group(1)} in range({m.group(2)}, {stop}, {m.group(5) or 1}):"
        elif (m := re.fullmatch(r"if \((.+)\)", s)):
            s = f"if {m.group(1)}:"
        else:
            s = re.sub(r"^(?:int|float|double) ", "", s)
        out.append("    " + indent + s)
    return "\n".join(out) + "\n"


def run(text: str, kernel: str, consts: dict[str, int], grid: tuple[int, int], block: tuple[int, int],
        args: Sequence[object]) -> None:
    """Run the kernel of `text` over the grid on `args` (arrays are changed in place)."""
    names, body = kernel_body(text, kernel)
    scope: dict = {}
    exec(to_python(names, body, consts), scope)  # noqa: S102 - the code is a kernel of this repository
    for bx, by in itertools.product(range(grid[0]), range(grid[1])):
        shared: dict = {}
        live = [scope["thread"](Dim(tx, ty), Dim(bx, by), Dim(*block), shared, *args)
                for ty in range(block[1]) for tx in range(block[0])]
        while live:
            still = []
            for t in live:
                try:
                    next(t)
                    still.append(t)
                except StopIteration:
                    pass
            live = still
