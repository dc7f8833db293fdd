"""What a tensor-core instruction computes: its multiply-adds, its input type and its accumulator.

One `mma` or `wmma.mma` is a whole warp's matrix product, not one operation per thread: an
`m16n16k16` product is 16 x 16 x 16 multiply-adds, 8192 FLOPs, where the SP lanes do 64 (one FMA per thread).
Counting it as one instruction on one unit makes a tensor-core GEMM look 30 to 100 times cheaper than the
tensor cores can run it. The time models therefore take the FLOPs from the shape in the mnemonic and the rate
from the GPU profile's `[tensor]` table (dense FLOPs per SM per clock by input type), the way NVIDIA's peak
tensor figures are stated.

The PTX ISA ("Warp Level Matrix Multiply-Accumulate Instructions") writes the types in operand order, D first:

* `wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32` - only D and C: the inputs are half precision;
* `wmma.mma...m16n16k8.f32.tf32.tf32.f32`, `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` - D, A, B, C;
* `wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16` - D, A, B, for a warpgroup of four warps, each of
  which issues the instruction (so a warp's share is a quarter of the product);
* `mma.sp` / `wgmma.mma_async.sp` - structured-sparse A: the product counts as dense, at twice the rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerncast.analysis.ptx.model import MATRIX_SHAPE, Instruction

#: element types a matrix instruction names (PTX ISA, "Matrix Data-types")
MATRIX_TYPES = frozenset({"f16", "bf16", "tf32", "f32", "f64", "s8", "u8", "s4", "u4", "b1", "s32", "e4m3",
                          "e5m2"})
#: threads that issue one matrix instruction together: a warp, or a warpgroup of four warps (`wgmma`)
_WARPGROUP = 4


@dataclass(frozen=True, slots=True)
class MatrixOp:
    """One warp's share of a tensor-core instruction: `flops_per_warp` (a multiply-add counts 2),
    the type of its A and B inputs, the type of its accumulator D, and whether A is structured-sparse."""

    flops_per_warp: float
    input_type: str
    accumulate_type: str
    sparse: bool = False

    @property
    def label(self) -> str:
        """How a note names the kind of product: `f16 -> f32`, `s8 -> s32 (sparse)`."""
        return f"{self.input_type} -> {self.accumulate_type}" + (" (sparse)" if self.sparse else "")


def matrix_op(instr: Instruction) -> MatrixOp | None:
    """The matrix product of a `wmma.mma`, `mma` or `wgmma.mma_async` instruction; None for any other
    instruction, and for a matrix instruction whose shape or types this reading does not know."""
    mods = instr.modifiers
    if not mods:
        return None
    if instr.opcode == "wmma" and mods[0] == "mma":
        per_warp, sparse = 1.0, False
    elif instr.opcode == "mma":
        per_warp, sparse = 1.0, mods[0].startswith("sp")
    elif instr.opcode == "wgmma" and mods[0] == "mma_async":
        per_warp, sparse = 1.0 / _WARPGROUP, "sp" in mods[1:2]
    else:
        return None
    shape = next((m for m in (MATRIX_SHAPE.fullmatch(mod) for mod in mods) if m), None)
    types = [mod for mod in mods if mod in MATRIX_TYPES]
    if shape is None or not types:
        return None
    m, n, k = (int(g) for g in shape.groups())
    # wmma with half-precision inputs names only D and C; every other form names A after D
    inputs = types[1] if len(types) >= 3 else "f16"
    return MatrixOp(2.0 * m * n * k * per_warp, inputs, types[0], sparse)


def tensor_rate(profile: Any, op: MatrixOp) -> float | None:
    """Dense FLOPs per SM per clock of `op` on the profile's tensor cores (the `[tensor]` table: an
    `<input>_<accumulator>` row where the accumulator changes the rate, else the `<input>` row); None when
    the GPU has no tensor-core rate for that input type."""
    rates = profile.tensor
    rate = rates.get(f"{op.input_type}_{op.accumulate_type}") or rates.get(op.input_type)
    return float(rate) if rate else None


def tensor_cycles(profile: Any, op: MatrixOp) -> float | None:
    """SM cycles one warp's matrix instruction holds the SM's tensor cores (a sparse product runs at twice
    the dense rate); None when the profile has no rate for it."""
    rate = tensor_rate(profile, op)
    if rate is None:
        return None
    return op.flops_per_warp / (rate * (2.0 if op.sparse else 1.0))
