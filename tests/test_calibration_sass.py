"""The calibration microbenchmarks measure what they claim: their SASS, read offline for Ampere, Ada and Hopper.

A GPU is rarely at hand, so a benchmark that ptxas folded (a chain of `and`, `mov` or `shfl` that runs at one
cycle per step because most steps are gone) must be caught here, before it runs: every kernel of the
calibration harness is compiled with nvcc's ptxas for sm_80, sm_89 and sm_90, disassembled with nvdisasm and
checked instruction by instruction (analysis/calibration/sass_expect.py). Kernels written the way ptxas sees
through (tests/data/sass/folded_chains.cu) must fail the same checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.calibration.sass import (
    Function,
    SassToolError,
    chains,
    compile_sass,
    fast_path,
    loop_control,
    parse_instruction,
    parse_sass,
)
from kerncast.analysis.calibration.sass_expect import (
    ARCHS,
    CHAIN_SPECS,
    CHAIN_UNROLL,
    SHARED_LOADS_PER_ITERATION,
    SHARED_STREAM_MIN_LDS_SHARE,
    chain_kernels,
    check_atomic_kernels,
    check_calibration_sass,
    check_chain,
    check_shared_stream,
)

REPO = Path(__file__).resolve().parent.parent
KERNELS = REPO / "analysis" / "calibration" / "kernels"
FOLDED = REPO / "tests" / "data" / "sass" / "folded_chains.cu"

pytestmark = pytest.mark.nvcc


def _compile_or_skip(source: Path, arch: str, extra: list[str] | None = None) -> dict[str, Function]:
    try:
        return compile_sass(source, arch, extra)
    except SassToolError as exc:
        if "not found" in str(exc):
            pytest.skip(f"SASS tools missing ({exc})")
        raise


@pytest.fixture(scope="module", params=ARCHS)
def harness_sass(request: pytest.FixtureRequest) -> tuple[str, dict[str, Function]]:
    return request.param, _compile_or_skip(KERNELS / "calibrate.cu", request.param)


@pytest.fixture(scope="module")
def folded_sass() -> dict[str, Function]:
    return _compile_or_skip(FOLDED, "sm_90", ["-I", str(KERNELS)])


def test_every_calibration_kernel_holds_its_measured_pattern(harness_sass):
    arch, functions = harness_sass
    problems = check_calibration_sass(functions)
    assert problems == [], f"{arch}:\n" + "\n".join(problems)


def test_every_op_has_a_latency_and_throughput_kernel(harness_sass):
    _, functions = harness_sass
    found = chain_kernels(functions)
    for op in CHAIN_SPECS:
        assert (op, 1) in found, op
        if op not in ("OpAtom", "OpSync"):
            assert {(op, 2), (op, 3)} <= set(found), op


@pytest.mark.parametrize("op", ["OpAnd", "OpMov", "OpShfl", "OpAdds", "OpSetp"])
def test_formerly_folded_chains_are_one_sass_instruction_per_step(harness_sass, op):
    """The rows an H100 measured at one cycle (and, mov, shfl) and those ptxas merged pairwise (integer add,
    setp+selp into a three-input min) now keep one dependent SASS instruction per PTX instruction."""
    _, functions = harness_sass
    fn = chain_kernels(functions)[(op, 1)]
    spec = CHAIN_SPECS[op]
    block = fn.largest_block(spec.opcodes)
    found = chains(block, spec.opcodes, loop_control(block))
    assert len(found) == 1
    assert len(found[0]) >= CHAIN_UNROLL * spec.per_step
    assert len(found[0]) % (CHAIN_UNROLL * spec.per_step) == 0


def test_shared_stream_keeps_lds_issue_above_one_request_per_clock(harness_sass):
    _, functions = harness_sass
    fn = next(f for name, f in functions.items() if "shared_stream_kernel" in name)
    block = fn.largest_block(r"LDS(\.U)?(\.32)?")
    loads = [i for i in block if i.base == "LDS"]
    assert len(loads) >= SHARED_LOADS_PER_ITERATION
    assert len(loads) / len(block) >= SHARED_STREAM_MIN_LDS_SHARE
    assert all(i.opcode in ("LDS", "LDS.U", "LDS.U.32", "LDS.32") for i in loads)  # 4-byte loads


@pytest.mark.parametrize("kernel, op", [("OpAndFolded", "OpAnd"), ("OpMovFolded", "OpMov"),
                                        ("OpShflUniform", "OpShfl")])
def test_folded_chains_are_rejected(folded_sass, kernel, op):
    fn = next(f for name, f in folded_sass.items() if f"INS_{len(kernel)}{kernel}E" in name)
    problems = check_chain(fn, op, 1)
    assert problems and "folded or dropped" in problems[0]


def test_slow_shared_stream_is_rejected(folded_sass):
    fn = next(f for name, f in folded_sass.items() if "shared_stream_slow" in name)
    problems = check_shared_stream(fn)
    assert problems and "expected at least" in problems[0]


def test_bank_conflicted_shared_stream_is_rejected(folded_sass):
    fn = next(f for name, f in folded_sass.items() if "shared_stream_conflicted" in name)
    assert check_shared_stream(fn) == [
        "shared_stream_kernel: the LDS base register is not 4 x lane (one word per bank for the 32 lanes)"]


def test_aggregated_lane_replay_atomics_are_rejected(folded_sass):
    """A lane-replay benchmark whose address ptxas sees is the same in every lane measures one update per warp:
    the check names the aggregation."""
    problems = check_atomic_kernels(folded_sass)
    assert any(p.startswith("lane_replay_kernel: ptxas combined the warp's lanes") for p in problems), problems


def test_measurement_harness_builds_for_every_architecture(tmp_path):
    """measure_harness.cu times the user's kernel (no microbenchmark of its own); it must build everywhere."""
    source = tmp_path / "instance.cu"
    source.write_text('#include "measure_harness.cu"\n'
                      "__global__ void scale(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
                      " if (i < n) x[i] *= 2.0f; }\n"
                      "int main(int argc, char **argv) { return kc_measure::run(argc, argv, scale); }\n")
    for arch in ARCHS:
        functions = _compile_or_skip(source, arch, ["-I", str(KERNELS)])
        fill = [f for name, f in functions.items() if "fill_kernel" in name]
        assert fill and any(i.base == "STG" for i in fill[0].instructions), arch


# --- the SASS reader on fixed text (no tools needed) ---

def test_parse_instruction_registers_and_predicates():
    shfl = parse_instruction(0, "SHFL.IDX PT, R7, R11, R4, 0x1f")
    assert shfl.dests == (7,) and shfl.sources == (11, 4)
    setp = parse_instruction(0, "ISETP.GE.AND P0, PT, R5, 0x1, PT")
    assert setp.dests == (1000,) and setp.sources == (5,)
    guarded = parse_instruction(0, "@!P3 LOP3.LUT R12, RZ, R4, RZ, 0x33, !PT")
    assert guarded.guard == "@!P3" and guarded.dests == (12,)
    assert set(guarded.sources) == {1003, 4, 12}  # a guarded write keeps the old value: it reads it too
    store = parse_instruction(0, "STG.E.64 desc[UR4][R2.64], R4")
    assert store.dests == () and store.sources == (2, 4)
    load = parse_instruction(0, "LDS R8, [R4+UR4+0x80]")
    assert load.dests == (8,) and load.sources == (4,)


SAMPLE = """
        .text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   FADD R5, R5, R2 ;
        /*0020*/                   FADD R6, R6, R2 ;
        /*0030*/                   FADD R5, R5, R2 ;
        /*0040*/                   FADD R6, R6, R2 ;
        /*0050*/                   VIADD R0, R0, 0xffffffff ;
        /*0060*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;
        /*0070*/               @P0 BRA `(.L_x_1) ;
        /*0080*/               @!P1 BRA `(.L_x_2) ;
        /*0090*/                   MOV R8, 0x1d0 ;
        /*00a0*/                   CALL.REL.NOINC `($slow) ;
.L_x_2:
        /*00b0*/                   EXIT ;
"""


def test_chains_split_interleaved_independent_chains():
    fn = parse_sass(SAMPLE)["k"]
    block = fn.largest_block("FADD")
    assert loop_control(block) == {5, 6}  # the counter update and compare (index 0 is the LDC before the label)
    assert chains(block, "FADD", loop_control(block)) == [[1, 3], [2, 4]]


def test_fast_path_skips_an_out_of_line_call():
    fn = parse_sass(SAMPLE)["k"]
    assert [i.base for i in fast_path(fn)][-2:] == ["BRA", "EXIT"]
