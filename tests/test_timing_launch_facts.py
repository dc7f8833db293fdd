"""What the kerncast time model reads from a launch besides trip counts, on hand-written PTX and nvcc's: code no
thread of the launch reaches, integer divisions by a run-time value, broadcast shared loads ptxas merges into one vector
load, and the share of a load's requests that DRAM serves."""

from __future__ import annotations

from pathlib import Path

from hand_ptx import kernel
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.isa import classify
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import AnalysisOptions, Thresholds
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.timing.estimate import vector_merged
from kerncast.analysis.timing.pipelined import expansion_slots

ROOT = Path(__file__).resolve().parent.parent
PHASE_REMAINDER = ROOT / "validation/ladders/pmpp-matvec/v2_shared_vector.cu"

#: a load and a store that run only when the parameter is not 0 (nvcc's guard of a loop that may not run)
GUARDED = """
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u32 %r1, [k_param_1];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    setp.eq.s32 %p1, %r1, 0;
    @%p1 bra $L_end;
    ld.global.f32 %f1, [%rd4];
    st.global.f32 [%rd4], %f1;
$L_end:
"""

#: four scalar loads from consecutive words of a row that starts at %r5
ROW_LOADS = """
    ld.shared.f32 %f1, [%r5];
    ld.shared.f32 %f2, [%r5+4];
    ld.shared.f32 %f3, [%r5+8];
    ld.shared.f32 %f4, [%r5+12];
"""

#: `As[ty][k]` for four k of an unrolled loop: the same address in every lane of a 32 x 8 block's warp
BROADCAST = """
    mov.u32 %r1, tile;
    mov.u32 %r2, %tid.y;
    shl.b32 %r3, %r2, 7;
    add.s32 %r5, %r1, %r3;
""" + ROW_LOADS

#: the same loads from rows of `blockDim.x` elements: the launch's 32 threads make each row 128 bytes, but the
#: code fixes no row width, so ptxas cannot prove a row start 16-byte aligned and keeps four scalar loads
RUNTIME_ROWS = """
    mov.u32 %r1, tile;
    mov.u32 %r2, %tid.y;
    mov.u32 %r6, %ntid.x;
    mul.lo.s32 %r7, %r2, %r6;
    shl.b32 %r3, %r7, 2;
    add.s32 %r5, %r1, %r3;
""" + ROW_LOADS

#: `Bs[k][8 * (t % 16) + i]` for four i of an unrolled loop, the column written as nvcc writes it for an unsigned
#: index, `(t * 32) & 480`: a multiple of 32 bytes in every thread (its mask's lowest bit), so ptxas may merge the
#: four loads into one LDS.128 although the lanes read different words
COLUMN_TILE = """
    mov.u32 %r1, tile;
    mov.u32 %r2, %tid.x;
    shl.b32 %r3, %r2, 5;
    and.b32 %r4, %r3, 480;
    add.s32 %r5, %r1, %r4;
""" + ROW_LOADS


def _memory(body: str, block=(256, 1, 1), params=None):
    module, fn, cfg, loops = kernel(body)
    return cfg, analyze_memory(module, fn, cfg, loops, block, params or {}, {}, Thresholds())


def test_code_a_launch_value_excludes_runs_no_time():
    _, dead = _memory(GUARDED, params={"k_param_1": 0})
    assert dead.dead_blocks and [a.executions for a in dead.accesses] == [0.0, 0.0]
    _, live = _memory(GUARDED, params={"k_param_1": 5})
    assert not live.dead_blocks and [a.executions for a in live.accesses] == [1.0, 1.0]
    _, unknown = _memory(GUARDED)  # no value for the parameter: nothing is decided
    assert not unknown.dead_blocks


def test_a_remainder_no_iteration_of_the_loop_around_it_runs_is_code_the_launch_never_reaches(nvcc_available):
    """A matrix-vector product that stages the vector in shared memory a block-wide segment at a time (the
    ladder's version 2): nvcc unrolls a phase's inner loop of min(blockDim.x, n - base) steps by 4 and tests its
    remainder once per phase, with `base` moving with the phase. A block of 128 threads over n = 4096 runs no
    remainder in any phase (sampled first, last and between): those three loads run 0 times and their blocks are
    dead. A short last segment (n = 4098) or a block of 126 threads runs the remainder, which stays."""
    result = compile_cuda(PHASE_REMAINDER, options=CompileOptions(arch="sm_86"), with_resources=False)
    assert result.ok, result.diagnostics
    module = parse_ptx(result.ptx)
    (fn,) = module.kernels
    cfg = build_cfg(fn)

    def inner_loads(block: int, n: int):
        memory = analyze_memory(module, fn, cfg, find_loops(cfg), (block, 1, 1), {"n": n, "m": 4096}, {},
                                Thresholds(), cuda_source=PHASE_REMAINDER.read_text(), budget_s=None)
        loads = [a.executions for a in memory.accesses if a.space == "global" and a.line == 17]
        return memory, loads

    never, loads = inner_loads(128, 4096)
    assert len(loads) == 7 and loads[:4] == [1024.0] * 4 and loads[4:] == [0.0] * 3, loads
    assert len(never.dead_blocks) == 3
    assert any("line 17 is taken as never run" in note for note in never.assumptions), never.assumptions
    for block, n in ((128, 4098), (126, 4096)):
        runs, loads = inner_loads(block, n)
        assert not runs.dead_blocks and all(x > 0 for x in loads), (block, n, loads)


def test_an_integer_division_by_a_register_issues_as_its_expansion():
    _, fn, _, _ = kernel("""
    ld.param.u32 %r1, [k_param_1];
    mov.u32 %r2, %tid.x;
    rem.s32 %r3, %r2, %r1;
    rem.s32 %r4, %r2, 3;
    div.u32 %r5, %r2, %r1;
""")
    slots = expansion_slots(fn.body, {i: classify(ins) for i, ins in enumerate(fn.body)})
    by_op = {(fn.body[i].opcode, type(fn.body[i].operands[2]).__name__): n for i, n in slots.items()}
    assert by_op == {("rem", "Reg"): {"SP": 20}, ("div", "Reg"): {"SP": 20}}  # a constant divisor is a multiply


def test_ieee_divides_and_square_roots_issue_as_their_expansion_and_approximations_do_not():
    _, fn, _, _ = kernel("""
    ld.param.f64 %fd1, [k_param_1];
    div.rn.f64 %fd2, %fd1, %fd1;
    sqrt.rn.f64 %fd3, %fd2;
    rcp.rn.f64 %fd4, %fd3;
    cvt.rn.f32.f64 %f1, %fd4;
    div.rn.f32 %f2, %f1, %f1;
    sqrt.rn.f32 %f3, %f2;
    div.approx.f32 %f4, %f3, %f3;
    div.full.f32 %f5, %f4, %f4;
    sqrt.approx.f32 %f6, %f5;
    rcp.approx.ftz.f64 %fd5, %fd4;
""")
    slots = expansion_slots(fn.body, {i: classify(ins) for i, ins in enumerate(fn.body)})
    by_op = {".".join((fn.body[i].opcode, *fn.body[i].modifiers)): n for i, n in slots.items()}
    assert set(by_op) == {"div.rn.f64", "sqrt.rn.f64", "rcp.rn.f64", "div.rn.f32", "sqrt.rn.f32"}
    # the FP64 refinement runs on the FP64 lanes, after one SFU estimate; the FP32 one on the FP32 lanes
    assert by_op["div.rn.f64"]["DPU"] >= 5 and by_op["div.rn.f64"]["SFU"] == 1
    assert "DPU" not in by_op["div.rn.f32"] and by_op["div.rn.f32"]["SP"] >= 4


def test_a_wide_launch_of_fp64_divisions_is_bound_by_the_fp64_lanes_of_their_expansion():
    """A chain of IEEE FP64 divisions over 2M threads issues 8 DFMA-class instructions per division on the
    GPU's 64 FP64 lanes per SM: the prediction may not fall below that issue time (ddivChain, iters=128)."""
    src = ROOT / "benchmarks" / "data" / "coverage" / "fp64.cu"
    launch = LaunchOverrides.from_strings(grid="8192", block="256", params=["n=2097152", "iters=128"])
    report = analyze_file(src, options=AnalysisOptions(gpu="h100", lime=False, overrides=launch))
    k = next(k for k in report.kernels if k.name.startswith("ddivChain"))
    h100 = load_profile("h100")
    slots = 8192 * 256 * 128 * 8 / (h100.units["DPU"] * h100.sm_count) / (h100.core_clock_mhz * 1e6) * 1e6
    assert k.time.us >= slots


def test_broadcast_shared_loads_share_a_packed_vector_load_from_volta_on():
    cfg, memory = _memory(BROADCAST, block=(32, 8, 1))
    merged = vector_merged(memory, cfg, load_profile("v100"))
    assert sorted(merged.values()) == [0.5] * 4  # one LDS.128, 4 registers in 2 packed passes, for 4 loads
    assert vector_merged(memory, cfg, load_profile("k20")) == {}  # Kepler: no packing, a pass per register


def test_loads_at_other_addresses_share_the_wavefronts_of_their_vector_load():
    """Lanes 32 bytes apart: each scalar load meets four lanes in one bank (4 wavefronts), but the LDS.128 ptxas
    makes of the four, compared a quarter-warp at a time, takes 2 wavefronts per quarter, 8 in all: 2 per
    scalar load. The mask fixes the address's alignment, so the merge is judged from the code alone."""
    cfg, memory = _memory(COLUMN_TILE)
    assert [a.align for a in memory.accesses] == [16, 4, 8, 4]  # the array is placed 16-byte aligned
    assert [a.wavefronts for a in memory.accesses] == [4.0] * 4
    assert memory.accesses[0].vector_wavefronts == 8.0
    assert sorted(vector_merged(memory, cfg, load_profile("v100")).values()) == [2.0] * 4


def test_rows_of_a_launch_value_width_stay_scalar_loads():
    cfg, memory = _memory(RUNTIME_ROWS, block=(32, 8, 1))
    assert [a.wavefronts for a in memory.accesses] == [1.0] * 4  # the launch makes them broadcasts all the same
    assert [a.align for a in memory.accesses] == [4, 4, 4, 4]
    assert vector_merged(memory, cfg, load_profile("v100")) == {}

