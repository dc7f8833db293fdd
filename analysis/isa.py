"""Instruction classification of the thesis's abstract GPU (type, resource, latency row), read from data.

The mapping lives in `data/isa.toml` so that a GPU profile can map resources to unit counts and latency rows to
cycles without any opcode knowledge in code. Unknown opcodes are classified as `misc` on the `SP` resource with
the `misc` latency row: they are kept and costed, never dropped.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from kerncast.analysis.ptx.model import Instruction

INSTRUCTION_TYPES = ("compute", "global", "shared", "misc")
RESOURCES = ("SP", "DPU", "SFU", "LSU", "BRANCH", "SYNC", "TENSOR")
_FLOAT_TYPES = frozenset({"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2"})


@dataclass(frozen=True, slots=True)
class InstrClass:
    """Thesis instruction type, the SM resource that executes it, and the latency-table row that costs it."""

    type: str
    resource: str
    latency: str
    known: bool = True


@cache
def _table() -> dict[str, dict]:
    data = resources.files("kerncast.analysis").joinpath("data/isa.toml").read_text(encoding="utf-8")
    return tomllib.loads(data)["opcodes"]


def _space_type(space: str | None) -> str:
    if space == "shared":
        return "shared"
    if space in ("param", "const"):
        return "misc"
    return "global"


def classify(instr: Instruction) -> InstrClass:
    """Classify one instruction (see the rules at the top of `data/isa.toml`)."""
    entry = _table().get(instr.opcode)
    if entry is None:
        return InstrClass("misc", "SP", "misc", known=False)
    itype = entry["type"]
    resource = entry["resource"]
    latency = entry["latency"]
    dtype = instr.dtype
    if instr.opcode == "wmma" and "mma" in instr.modifiers:
        return InstrClass("compute", "TENSOR", "mma")
    if isinstance(latency, dict):
        latency = latency["float"] if dtype in _FLOAT_TYPES else latency["int"]
    if itype == "memory":
        itype = _space_type(instr.space)
        if itype == "misc":
            latency = "param"
    if latency == "memory":
        latency = "shared" if itype == "shared" else "global"
    if itype == "compute" and dtype == "f64" and resource in ("SP", "SFU"):
        resource = "DPU"
    return InstrClass(itype, resource, latency)
