"""What to use instead, for nvcc errors that older CUDA code meets in a current toolkit (data/compile_hints.toml).

Kerncast compiles with the nvcc it finds, usually the CUDA 13 wheel, so code written for older releases fails on
APIs that are gone: the cudaThread* functions, fields of cudaDeviceProp, texture and surface references. nvcc
only says that a name is undefined; the hint says what replaced it. The nvcc wheel also ships no header of
NVIDIA's libraries (cuRAND, cuFFT, cuBLAS, ...): for a missing one, the hint names the wheel that has it.

Such a file's kernels are usually fine: only its host code, or the way it declares textures, is out of date. So
when every error nvcc reports is a removed API (or follows from one), `compile` compiles the file again with
Kerncast's stand-ins for those APIs (data/legacy_cuda.h, each kind switched on by `stand_in_define`), and the
removed uses stay as warnings that name their replacement.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from kerncast.analysis.report import Fix, TextEdit
from kerncast.analysis.rules import Code, FixKind, rule

#: nvcc's message for each kind of removed API, the table of data/compile_hints.toml that holds its
#: replacements, how the hint names the removed thing, and the verb that agrees with that name
_KINDS = (
    (re.compile(r'^identifier "(\w+)" is undefined'), "thread_functions", "{}", "was"),
    (re.compile(r'^class "cudaDeviceProp" has no member "(\w+)"'), "device_properties", "cudaDeviceProp.{}", "was"),
    (re.compile(r"^(texture|surface) is not a template"), "references", "{} references", "were"),
)


@cache
def _tables() -> dict[str, Any]:
    text = resources.files("kerncast.analysis").joinpath("data/compile_hints.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


#: the macro of data/legacy_cuda.h that switches on the stand-ins for each kind (surface references have none)
_STAND_IN_DEFINES = {
    "thread_functions": "KERNCAST_LEGACY_THREAD_FUNCTIONS",
    "device_properties": "KERNCAST_LEGACY_DEVICE_PROPERTIES",
    "texture": "KERNCAST_LEGACY_TEXTURES",
}

#: the header of stand-ins, inside the package
LEGACY_HEADER = "data/legacy_cuda.h"


@dataclass(frozen=True)
class RemovedApi:
    """A removed API that an nvcc error names: what it was, what replaced it, and how to stand in for it."""

    subject: str  # "cudaThreadSynchronize", "cudaDeviceProp.clockRate", "texture references"
    hint: str  # "X was removed in CUDA 13; use Y"
    stand_in_define: str | None  # the macro that switches on Kerncast's stand-in for it, None where there is none
    renamed_to: str | None = None  # a function that takes the same arguments (the cudaThread* ones' replacements)


#: how `compile` prefixes an error that nvcc reported in an included file
_IN_HEADER_RE = re.compile(r"^in included file .+?, line \d+: ")


def _own_message(message: str) -> str:
    """nvcc's message without the prefix `compile` gives one reported in an included file."""
    return _IN_HEADER_RE.sub("", message, count=1)


def removed_api(message: str) -> RemovedApi | None:
    """The removed API an nvcc error message is about (also one reported in an included file), if the table
    lists it."""
    message = _own_message(message)
    for pattern, table, subject, verb in _KINDS:
        m = pattern.match(message)
        if m is None:
            continue
        entry = _tables()[table]
        use = entry["use"].get(m.group(1))
        if use is None:
            return None
        named = subject.format(m.group(1))
        return RemovedApi(named, f"{named} {verb} removed in {entry['release']}; use {use}",
                          _STAND_IN_DEFINES.get(m.group(1) if table == "references" else table),
                          use.split("(", 1)[0] if table == "thread_functions" else None)
    return None


#: the preprocessor's message for a header it did not find
_MISSING_HEADER_RE = re.compile(r"^([\w./-]+\.h): No such file or directory$")


def library_header_hint(message: str) -> str | None:
    """Where to get the header of a CUDA library that nvcc did not find (the nvcc wheel ships none), or None."""
    m = _MISSING_HEADER_RE.match(_own_message(message))
    if m is None:
        return None
    header = m.group(1)
    for entry in _tables()["library_headers"].values():
        if header.startswith(tuple(entry["prefixes"])):
            return (f"{header} is a {entry['library']} header, which the nvcc wheel does not ship: pip install "
                    f"{entry['wheel']} beside Kerncast (nvcc then finds it), or add your CUDA toolkit's include "
                    "folder to the includeDirs setting (-I)")
    return None


def hint_for(message: str) -> str | None:
    """What to do about an nvcc error: what replaced the removed API it names ("X was removed in CUDA 13; use
    Y"), or where to get the CUDA library header it did not find; None for any other error."""
    found = removed_api(message)
    return found.hint if found else library_header_hint(message)


def legacy_header_text() -> str:
    """The C++ text of Kerncast's stand-ins for removed APIs (force-included by `compile` when they are needed)."""
    return resources.files("kerncast.analysis").joinpath(LEGACY_HEADER).read_text(encoding="utf-8")


def replacement_fix(code: Code, message: str, line_text: str | None, line: int, column: int) -> Fix | None:
    """The rename of a removed function to the one that replaced it with the same arguments, where nvcc's error
    or warning points at the name in the file's own line (not in a macro's expansion or an included file)."""
    api = removed_api(message)
    if api is None or api.renamed_to is None or line_text is None:
        return None
    name, start = api.subject, column - 1
    end = start + len(name)
    if line_text[start:end] != name or (end < len(line_text) and (line_text[end].isalnum() or line_text[end] == "_")):
        return None
    return Fix(FixKind.USE_REPLACEMENT_API, f"Use {api.renamed_to} (it takes the same arguments)",
               {"removed": name, "replacement": api.renamed_to}, [TextEdit(line, column, line, column + len(name),
                                                                           api.renamed_to)],
               rule(code).fix(FixKind.USE_REPLACEMENT_API).applicability)
