"""Symbolic values in CUDA words (`4*cols`, `threadIdx.x`), and the CUDA names behind PTX names.

Messages must speak the source's language: PTX calls a parameter `_Z9transposePfPKfii_param_2` and a
block-scope shared array `_ZZ14transposeTiledPfPKfiiE4tile`; the user wrote `height` and `tile`.
"""

from __future__ import annotations

import re

from kerncast.analysis.dataflow.expr import Atoms, Value
from kerncast.analysis.launch import split_kernel_name
from kerncast.analysis.source_model import scanned

_SPECIAL = {"tid": "threadIdx", "ntid": "blockDim", "ctaid": "blockIdx", "nctaid": "gridDim"}
_CMP_TEXT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<", "ls": "<=",
             "hi": ">", "hs": ">="}
_BINARY = {"shr": ">>", "div": "/", "rem": "%", "and": "&", "or": "|", "xor": "^"}
_LOCAL_NAME = re.compile(r"E(\d+)([A-Za-z_]\w*)$")


def cuda_symbol_name(ptx_name: str) -> str:
    """`_ZZ14transposeTiledPfPKfiiE4tile` -> `tile`; other names unchanged."""
    if ptx_name.startswith("_ZZ"):
        m = _LOCAL_NAME.search(ptx_name)
        if m and len(m.group(2)) >= int(m.group(1)):
            return m.group(2)[: int(m.group(1))]
    return ptx_name


def kernel_param_names(cuda_source: str | None, kernel_name: str) -> list[str]:
    """The CUDA parameter names of a kernel, from the source model's definition of it ([] if not found).

    An unnamed parameter gets a placeholder name (it cannot appear in an address the user wrote).
    """
    if not cuda_source:
        return []
    m = re.match(r"_Z(?:N\d*)?(\d+)", kernel_name)
    short = kernel_name[m.end():m.end() + int(m.group(1))] if m else split_kernel_name(kernel_name)[0]
    if not short:
        return []
    facts = scanned(cuda_source)
    kdef = facts.kernel(short, included=False) if facts is not None else None
    if kdef is None:
        return []
    return [n or f"arg{i}" for i, n in enumerate(kdef.params)]


class Renderer:
    """Turns polynomials into short CUDA-like text."""

    def __init__(self, atoms: Atoms, param_names: dict[str, str], loop_lines: dict[int, int | None],
                 resolution: dict[int, Value] | None = None) -> None:
        self.atoms = atoms
        self.resolution = resolution or {}
        self._depth = 0
        self.param_names = param_names
        self.loop_lines = loop_lines

    def atom(self, a: int) -> str:
        key = self.atoms.keys[a]
        kind = key[0]
        if kind == "sym":
            name = key[1]
            base, _, axis = name.partition(".")
            if base in _SPECIAL and axis in ("x", "y", "z"):
                return f"{_SPECIAL[base]}.{axis}"
            if name.startswith("param:"):
                ptx = name[6:]
                return self.param_names.get(ptx, "param_" + ptx.rsplit("_", 1)[-1] if "_param_" in ptx else ptx)
            if name.startswith("&"):
                return "&" + cuda_symbol_name(name[1:])
            if name.startswith("K") and name[1:].isdigit():
                line = self.loop_lines.get(int(name[1:]))
                return f"iteration(line {line})" if line else "iteration"
            return name
        if kind == "op" and key[1] == "cmp" and isinstance(key[3], tuple) and len(key[3]) > 2:
            sign = _CMP_TEXT.get(str(key[3][2]), str(key[3][2]))
            return f"({self.poly(key[2][0])} {sign} {self.poly(key[2][1])})"
        if kind == "op" and key[1] in _BINARY and len(key[2]) == 2:
            left, right = (self._operand(x) for x in key[2])
            return f"({left} {_BINARY[key[1]]} {right})"
        if kind == "rec" and a in self.resolution and self._depth < 8:
            self._depth += 1
            try:
                return self.poly(self.resolution[a])
            finally:
                self._depth -= 1
        if kind == "op":
            return f"{key[1]}(" + ", ".join(self.poly(x) for x in key[2]) + ")"
        if kind == "geo":
            line = self.loop_lines.get(key[1])
            return f"loop variable (line {line})" if line else "loop variable"
        return "?"

    def _operand(self, p: Value) -> str:
        text = self.poly(p)
        return f"({text})" if any(ch in text for ch in " *") else text

    def poly(self, p: Value) -> str:
        if p is None:
            return "unknown"
        if not p:
            return "0"
        parts: list[str] = []
        for m, c in sorted(p, key=lambda t: (len(t[0]) == 0, t[0])):
            names = "*".join(self.atom(a) for a in m)
            if not names:
                parts.append(str(c))
            elif c == 1:
                parts.append(names)
            elif c == -1:
                parts.append(f"-{names}")
            else:
                parts.append(f"{c}*{names}")
        text = " + ".join(parts)
        return text.replace("+ -", "- ")
