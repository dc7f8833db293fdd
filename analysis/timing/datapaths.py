"""The FP32 and integer datapaths of a Volta-or-later SM, and how long a mix of their instructions keeps them busy.

From Volta on, each of an SM's four partitions issues arithmetic to separate pipes of 16 lanes each (NVIDIA's
answers on the developer forum, threads 108729 and 302018: GV100 "FMA pipe - executes FP32 instructions and
IMAD", "ALU pipe - executes INT32 (not IMAD), logical operations, binary operations, and data movement", each
with its own dispatch port; GA10x and GH100 add an FMAlite pipe that runs FP32 only). Per SM that is the
programming guide's throughput table (section "Arithmetic Instructions"): 64 integer add, compare, logic and
shift results and 64 integer multiply-adds per clock on every capability from 7.0 to 9.0, beside 64 FP32
results (7.x, 8.0) or 128 (8.6, 8.9, 9.0). ptxas places an integer add, a left shift or a move on either
integer-capable pipe (`IADD3` or `IMAD.IADD`, `SHF` or `IMAD.SHL`, `MOV` or `IMAD.MOV` in the SASS), so those are
"flexible" work.

The busy time of such a mix is the largest, over every set of instruction kinds, of their work over the lanes of
the pipes they can use (the flow bound of a job-to-machine assignment): with the kinds FP32 (FMA pipes), IMAD
(the FMA pipe of `IMAD` lanes), ALU-only and flexible (ALU or the IMAD pipe). A GPU profile without the `ALU` and
`IMAD` units (every GPU before Volta, and the thesis's machine model) keeps all of it on the SP lanes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from kerncast.analysis.deps import DepGraph
from kerncast.analysis.isa import InstrClass
from kerncast.analysis.ptx.model import Reg

#: per-thread keys of the work a pipe-aware GPU splits off the SP lanes
_SPLIT = ("IMAD", "ALU", "FLEX")


def has_datapaths(units: Mapping[str, int]) -> bool:
    """Whether the profile names the integer pipes (so that integer work leaves the SP lanes)."""
    return units.get("ALU", 0) > 0 and units.get("IMAD", 0) > 0


def pipe_slot(cls: InstrClass, units: Mapping[str, int]) -> tuple[str, float] | None:
    """(per-thread key, lanes) of an instruction that runs on an integer pipe of this GPU, else None; flexible
    work is counted in instructions (1 lane) and divided among its pipes by `busy_cycles`."""
    if not cls.pipe or not has_datapaths(units):
        return None
    if cls.pipe == "FLEX":
        return "FLEX", 1.0
    return cls.pipe, float(units[cls.pipe])


def busy_cycles(per_thread: Mapping[str, float], units: Mapping[str, int]) -> dict[str, float]:
    """`per_thread` (unit -> cycles per thread, FLEX -> instructions per thread) with the SP, IMAD, ALU and
    flexible work replaced by the cycles the pipes take for all of it, under the busiest of SP, IMAD and ALU.

    The pipes are the IMAD-capable FMA pipe (`IMAD` lanes), the FP32-only one (the rest of the `SP` lanes) and
    the ALU; FP32 work may use both FMA pipes, IMAD work the first, ALU work the ALU and flexible work the first
    or the ALU. The time is the largest work over capacity among the sets of pipes some work is confined to:
    the IMAD pipe, the ALU, the two FMA pipes, the IMAD pipe with the ALU, and all three. On a GPU without the
    integer pipes nothing is split off, and the mapping is returned as it is."""
    if not has_datapaths(units) or not any(k in per_thread for k in _SPLIT):
        return dict(per_thread)
    sp, imad, alu = float(units["SP"]), float(units["IMAD"]), float(units["ALU"])
    heavy = min(imad, sp)
    fp, mad = per_thread.get("SP", 0.0) * sp, per_thread.get("IMAD", 0.0) * imad
    logic, flex = per_thread.get("ALU", 0.0) * alu, per_thread.get("FLEX", 0.0)
    cycles = max(mad / heavy, logic / alu, (fp + mad) / sp, (mad + logic + flex) / (heavy + alu),
                 (fp + mad + logic + flex) / (sp + alu))
    own = {"SP": (fp + mad) / sp, "IMAD": mad / heavy, "ALU": logic / alu}
    out = {k: v for k, v in per_thread.items() if k not in _SPLIT and k != "SP"}
    out.update({k: v for k, v in own.items() if v > 0.0})
    out[max(own, key=lambda k: own[k])] = cycles
    return out


#: bitwise logic that ptxas merges into one three-input `LOP3` (its truth table takes any function of 3 inputs)
_LOGIC = frozenset({"and", "or", "xor", "not"})
#: the data types of one 32-bit (or narrower) logic instruction; a 64-bit one is two in the SASS
_NARROW = frozenset({"b32", "u32", "s32", "b16", "u16", "s16"})


def folded_instructions(body: Any, dags: Mapping[int, DepGraph]) -> frozenset[int]:
    """PTX instructions that ptxas folds into a neighbour, so that they issue nothing of their own on a
    Volta-or-later SM (their dependants wait for their inputs):

    * a 32-bit `and`/`or`/`xor`/`not` whose only reader is another such instruction of the same basic block, while
      the merged expression has at most three inputs: one `LOP3.LUT` computes it (`x ^= (x << 13) ^ (x >> 7)`
      is a shift, a shift and one LOP3 in the SASS);
    * a predicate `and`/`or`/`xor` whose operand a `setp` of the same block writes for it alone: the compare
      takes the combining predicate (`setp.CmpOp.BoolOp` in the PTX ISA; `ISETP.GE.OR` in the SASS);
    * a predicate `not` read once: the reader takes the negated predicate (`@!P0`, `ISETP ... !P0`)."""
    reads: Counter[str] = Counter(r for ins in body for r in ins.registers_read)
    writer: dict[str, int] = {}
    folded: set[int] = set()
    for dag in dags.values():
        inputs: dict[int, set[str]] = {}
        for v in dag.nodes:
            ins = body[v]
            for r in ins.registers_written:
                writer[r] = v
            if ins.opcode not in _LOGIC or ins.guard is not None:
                continue
            if ins.dtype == "pred":
                if ins.opcode == "not":
                    if all(reads[r] == 1 for r in ins.registers_written):
                        folded.add(v)
                    continue
                sources = ins.registers_read
                if any(reads[r] == 1 and r in writer and writer[r] in dag.preds and body[writer[r]].opcode == "setp"
                       and body[writer[r]].guard is None for r in sources):
                    folded.add(v)
                continue
            if ins.dtype not in _NARROW:
                continue
            own = _operand_keys(ins)
            merged = set(own)
            for r in ins.registers_read:
                u = writer.get(r)
                if u is not None and u in inputs and reads[r] == 1:
                    merged = (merged - {r}) | inputs[u]
            if len(merged) <= 3:
                for r in ins.registers_read:
                    u = writer.get(r)
                    if u is not None and u in inputs and reads[r] == 1:
                        folded.add(u)
                inputs[v] = merged
            else:
                inputs[v] = own
    return frozenset(folded)


def _operand_keys(ins: Any) -> set[str]:
    """The distinct inputs of a logic instruction: its registers, and each immediate by its text."""
    return {o.name if isinstance(o, Reg) else repr(o) for o in ins.srcs}
