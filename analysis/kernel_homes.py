"""Where a kernel that the analysed file compiles but does not define lives: a header (`kernels.cuh`) or another
`.cu` it `#include`s with quotes.

Such a kernel is launched from the analysed file, so its launch and parameter values are read there, but its
code, and so its line, loops and findings, are the other file's. nvcc's line table says which file each
instruction comes from (`.file`/`.loc`); the source model says which of the project's included files defines a
kernel of that name. A kernel is given a home only where both agree, so a template kernel of a library header
(CUB's, Thrust's: reached through `<...>` includes, never scanned) keeps no line rather than one in the
toolkit's headers.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kerncast.analysis.includes import header_text, real_path
from kerncast.analysis.launch import split_kernel_name
from kerncast.analysis.ptx.model import Function
from kerncast.analysis.source_model import scan_file


@dataclass(frozen=True)
class KernelHome:
    """The file that defines a kernel: its path on disk, the `.file` name nvcc gave it in the PTX (what the
    kernel's `.loc`s name), and its text (what its findings' columns and fixes are measured on)."""

    path: str
    ptx_file: str
    text: str


def included_homes(kernels: list[Function], cuda_source: str, path: str,
                   include_dirs: list[str] | None = None) -> dict[str, KernelHome]:
    """By mangled name, the home of each of `kernels` that a quoted include of `cuda_source` (the file at
    `path`) defines. Kernels the analysed file defines itself should not be passed; those no included file
    defines are left out."""
    try:
        facts = scan_file(cuda_source, path, include_dirs)
    except (ValueError, IndexError, RecursionError):  # an unscannable source: no kernel is placed elsewhere
        return {}
    defined: dict[str, list[Path]] = {}
    for d in facts.included_kernels:
        if d.is_definition and d.file is not None:
            defined.setdefault(d.base_name, []).append(Path(d.file))
    homes: dict[str, KernelHome] = {}
    texts: dict[Path, str | None] = {}
    for fn in kernels:
        candidates = defined.get(split_kernel_name(fn.display_name)[0])
        if not candidates:
            continue
        used = Counter(ins.loc.file for ins in fn.body if ins.loc is not None)
        for ptx_file, _ in used.most_common():
            match = next((c for c in candidates if _same_file(ptx_file, c)), None)
            if match is None:
                continue
            if match not in texts:
                texts[match] = header_text(match)
            text = texts[match]
            if text is not None:
                homes[fn.name] = KernelHome(str(match), ptx_file, text)
            break
    return homes


def _same_file(ptx_file: str, candidate: Path) -> bool:
    """Whether a `.file` name is the candidate file: the same file once links are resolved when nvcc wrote an
    absolute path (it does for the files it reads), the same base name otherwise."""
    if os.path.isabs(ptx_file):
        return real_path(Path(ptx_file)) == real_path(candidate)
    return os.path.basename(ptx_file) == candidate.name
