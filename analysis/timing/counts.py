"""Dynamic instruction counts per thread, the input the closed-form models (MWP-CWP, roofline) share.

Each block counts as often as it runs per thread: the product of its enclosing loops' trip counts. Every
reachable block counts, both sides of every branch included: Hong & Kim (ISCA 2009, section 6.3) found that
summing all paths of a divergent branch is within 6 % of measurement, and the thesis assumes every branch is
taken by some thread of every warp (section 4.4.1). A uniform branch is therefore over-counted; the report
says so in its assumptions.

Tensor-core instructions are not SP work: each is a warp's matrix product (`kerncast.analysis.matrix_ops`),
counted apart by kind so that a model can charge it at the tensor cores' rate for its input type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.isa import classify, division_costs, ieee_expansion, is_runtime_division
from kerncast.analysis.loops import block_weights
from kerncast.analysis.matrix_ops import MatrixOp, matrix_op
from kerncast.analysis.ptx.model import WARP_THREADS

_FMA = frozenset({"fma", "mad", "mad24", "madc", "dp4a", "dp2a"})
_SYNC = frozenset({"bar", "barrier"})
_FLOAT = frozenset({"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32"})


@dataclass(slots=True)
class DynamicCounts:
    """Per-thread dynamic counts (floats: trip counts multiply them).

    `global_insts` are loads/stores/atomics classified `global` (Hong & Kim's memory instructions); `compute`
    everything else (Hong & Kim count shared accesses, barriers and branches as computation); `alu_ops`
    counts the compute-type instructions with an FMA counted twice (the boat hull's f·m + o, in the units of
    a vendor peak), of which `dp_ops` run on the double-precision units; `flops` the floating-point ones alone;
    `global_bytes` (`shared_bytes`) the bytes a thread moves to or from global (shared) memory; `has_non_fma`
    whether any compute instruction is not a fused multiply-add; `matrix_ops` each kind of tensor-core
    instruction with the times a thread issues it (not in `alu_ops`: they do not run on the SP lanes; their
    FLOPs are in `flops`, a thread's share being a 32nd of its warp's product). `pipe_insts` counts the
    instructions of `alu_ops` that run on an integer pipe from Volta on (`InstrClass.pipe`) and `pipe_ops` their
    ops; `folded_ops` the ops of those ptxas merges into a neighbour (`timing/datapaths.py`), which issue nothing.
    """

    total: float = 0.0
    compute: float = 0.0
    global_insts: float = 0.0
    global_loads: float = 0.0
    shared_insts: float = 0.0
    sync_insts: float = 0.0
    alu_ops: float = 0.0
    dp_ops: float = 0.0
    flops: float = 0.0
    global_bytes: float = 0.0
    shared_bytes: float = 0.0
    has_non_fma: bool = False
    matrix_ops: dict[MatrixOp, float] = field(default_factory=dict)
    pipe_insts: float = 0.0
    pipe_ops: float = 0.0
    folded_ops: float = 0.0


def dynamic_counts(cfg: Cfg, loops: Any, trips: Mapping[int, float], fma_ops: float = 2.0,
                   dead: frozenset[int] = frozenset(), folded: frozenset[int] = frozenset()) -> DynamicCounts:
    """Count every block's instructions that the launch runs (`dead`: those it never reaches), weighted by its
    loops' trip counts; `folded` holds the instructions ptxas merges into a neighbour on the GPU."""
    out = DynamicCounts()
    for bid, w in block_weights(cfg, loops, trips, dead).items():
        for ins in cfg.instructions(bid):
            cls = classify(ins)
            out.total += w
            if cls.type == "global":
                out.global_insts += w
                out.global_bytes += w * ins.access_bytes
                if ins.opcode in ("ld", "ldu"):
                    out.global_loads += w
                continue
            out.compute += w
            if cls.type == "shared":
                out.shared_insts += w
                out.shared_bytes += w * ins.access_bytes
            if ins.opcode in _SYNC:
                out.sync_insts += w
            op = matrix_op(ins) if cls.resource == "TENSOR" else None
            if op is not None:
                out.matrix_ops[op] = out.matrix_ops.get(op, 0.0) + w
                out.flops += w * op.flops_per_warp / WARP_THREADS
            elif cls.type == "compute":
                ops = fma_ops if ins.opcode in _FMA else issued_instructions(ins, cls)
                if ins.opcode not in _FMA:
                    out.has_non_fma = True
                out.alu_ops += w * ops
                if ins.index in folded:
                    out.folded_ops += w * ops
                elif cls.pipe:
                    out.pipe_insts += w
                    out.pipe_ops += w * ops
                if cls.resource == "DPU":
                    out.dp_ops += w * ops
                if ins.dtype in _FLOAT:
                    out.flops += w * ops
    return out


def issued_instructions(ins: Any, cls: Any) -> float:
    """The SASS instructions one PTX compute instruction issues on the lanes: an integer division by a run-time
    value expands to its reciprocal-and-correction sequence (`data/int_division.toml`), an IEEE-rounded divide,
    square root or reciprocal to its estimate and refinement steps (`data/ieee_expansion.toml`); the time model
    issues them so (`pipelined.expansion_slots`) and the roofline's compute line counts them alike."""
    if cls.latency == "divs" and is_runtime_division(ins):
        return float(division_costs()[0])
    slots = ieee_expansion(ins)
    return float(sum(slots.values())) if slots else 1.0
