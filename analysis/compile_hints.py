"""What to use instead, for nvcc errors that older CUDA code meets in a current toolkit (data/compile_hints.toml).

Kerncast compiles with the nvcc it finds, usually the CUDA 13 wheel, so code written for older releases fails on
APIs that are gone: the cudaThread* functions, fields of cudaDeviceProp, texture and surface references. nvcc
only says that a name is undefined; the hint says what replaced it.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib import resources
from typing import Any

#: nvcc's message for each kind of removed API, the table of data/compile_hints.toml that holds its
#: replacements, and how the hint names the removed thing
_KINDS = (
    (re.compile(r'^identifier "(\w+)" is undefined'), "thread_functions", "{} was"),
    (re.compile(r'^class "cudaDeviceProp" has no member "(\w+)"'), "device_properties", "cudaDeviceProp.{} was"),
    (re.compile(r"^(texture|surface) is not a template"), "references", "{} references were"),
)


@cache
def _tables() -> dict[str, Any]:
    text = resources.files("kerncast.analysis").joinpath("data/compile_hints.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def hint_for(message: str) -> str | None:
    """What replaced the removed API an nvcc error message names ("X was removed in CUDA 13; use Y"), or None."""
    for pattern, table, subject in _KINDS:
        m = pattern.match(message)
        if m is None:
            continue
        entry = _tables()[table]
        use = entry["use"].get(m.group(1))
        return f"{subject.format(m.group(1))} removed in {entry['release']}; use {use}" if use else None
    return None
