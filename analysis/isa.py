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

from kerncast.analysis.ptx.model import Instruction, Reg

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
    #: the datapath of a Volta-or-later SM that runs it, where it is not the FP32 one (`data/isa.toml` pipe):
    #: "ALU" (integer and logic), "IMAD" (integer multiply, on the FP32 pipe's 64 lanes), "FLEX" (an integer
    #: add, shift or move, which ptxas places on either); "" for the resource's own unit
    pipe: str = ""


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


@dataclass(frozen=True, slots=True)
class MemoryTouch:
    """The memory an instruction reads or writes besides its registers: `space` global or shared, `access`
    load, store or atomic (a copy counts as a load from global, or a store to it, or a shared store)."""

    space: str
    access: str


_ANALYSED_SPACES = ("global", "shared")


def _entry(instr: Instruction) -> dict | None:
    """The table entry of `opcode.first-modifier` (`wgmma.mma_async`, `st.async`) or else of `opcode`."""
    table = _table()
    if instr.modifiers:
        entry = table.get(f"{instr.opcode}.{instr.modifiers[0]}")
        if entry is not None:
            return entry
    return table.get(instr.opcode)


def _written_spaces(instr: Instruction) -> list[str]:
    """State spaces named in the mnemonic, in order, `::` sub-qualifiers dropped (`shared::cluster` -> shared)."""
    bases = (mod.split("::", 1)[0] for mod in instr.modifiers)
    return [b for b in bases if b in ("global", "shared", "local")]


def memory_touch(instr: Instruction) -> MemoryTouch | None:
    """What memory an opcode outside ld/st/atom/red touches (data/isa.toml `touches`), or None.

    For copies (`cp.async.bulk.DST.SRC`) the global side decides: reading global is a load, writing it a
    store; shared-to-shared (cluster) copies are shared stores; `cp.reduce` is an atomic.
    """
    entry = _entry(instr)
    touches = entry.get("touches") if entry else None
    if not touches:
        return None
    space, access = touches["space"], touches["access"]
    if space == "modifiers":
        named = _written_spaces(instr)
        if not named:
            return None
        if access == "copy":
            if "global" in named:
                access = "store" if named[0] == "global" else "load"
                space = "global"
            else:
                access, space = "store", named[0]
            if instr.modifiers[:1] == ("reduce",):
                access = "atomic"
        else:
            space = "global" if "global" in named else named[0]
    return MemoryTouch(space, access) if space in _ANALYSED_SPACES else None


#: classes by mnemonic: a class depends on the opcode and its modifiers only (the state space and the data
#: type are modifiers), and the time, power and resource stages ask for every instruction's class
_CLASSES: dict[tuple[str, tuple[str, ...]], InstrClass] = {}


def classify(instr: Instruction) -> InstrClass:
    """Classify one instruction (see the rules at the top of `data/isa.toml`); memoised by mnemonic."""
    key = (instr.opcode, instr.modifiers)
    found = _CLASSES.get(key)
    if found is None:
        found = _CLASSES[key] = _classify(instr)
    return found


def _classify(instr: Instruction) -> InstrClass:
    entry = _entry(instr)
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
    pipe = entry.get("pipe", "")
    if isinstance(pipe, dict):
        pipe = pipe.get("float" if dtype in _FLOAT_TYPES else "int", "")
    return InstrClass(itype, resource, latency, pipe=pipe if resource == "SP" else "")


#: the integer types of a `div`/`rem` that ptxas expands
INT_TYPES = frozenset({"s32", "u32", "s64", "u64", "s16", "u16"})


@cache
def division_costs() -> tuple[int, float]:
    """(instructions one integer division by a run-time value expands to, the loop-body share at which the
    `slow-integer-division` finding warns), from `data/int_division.toml`."""
    text = resources.files("kerncast.analysis").joinpath("data/int_division.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return int(data["instructions_per_division"]), float(data["warning_share"])


def is_runtime_division(ins: Instruction) -> bool:
    """An integer `div`/`rem` whose divisor is a register (a constant divisor is already a multiply): one PTX
    instruction that ptxas expands into a reciprocal estimate and correction steps."""
    return (ins.opcode in ("div", "rem") and bool(INT_TYPES & set(ins.modifiers)) and len(ins.operands) == 3
            and isinstance(ins.operands[2], Reg))


#: the float operations ptxas writes as an estimate and refinement steps, by PTX opcode
_IEEE_OPS = frozenset({"div", "sqrt", "rcp"})
#: the rounding modifiers that make them IEEE-rounded (PTX ISA: the forms without one are the approximations)
_ROUNDINGS = frozenset({"rn", "rz", "rm", "rp"})


@cache
def _ieee_expansions() -> dict[str, dict[str, dict[str, int]]]:
    text = resources.files("kerncast.analysis").joinpath("data/ieee_expansion.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def ieee_expansion(ins: Instruction) -> dict[str, int] | None:
    """The issue slots per unit (`data/ieee_expansion.toml`) of an IEEE-rounded f32/f64 divide, square root or
    reciprocal (a rounding modifier), which ptxas expands into an SFU estimate and refinement steps; None for any
    other instruction, including the `.approx` and `.full` forms, which are one SFU instruction and a multiply."""
    if ins.opcode not in _IEEE_OPS or {"approx", "full"} & set(ins.modifiers):
        return None
    width = "f64" if "f64" in ins.modifiers else "f32" if "f32" in ins.modifiers else None
    if width is None or not _ROUNDINGS & set(ins.modifiers):
        return None
    return dict(_ieee_expansions()[width][ins.opcode])

