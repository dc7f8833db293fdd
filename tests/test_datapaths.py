"""The FP32 and integer pipes of a Volta-or-later SM (`timing/datapaths.py`): integer work runs beside FP32 work
on its own 64 lanes, integer adds and moves fill whichever pipe has room, and the logic ptxas merges into one
`LOP3` or into a compare issues nothing of its own. The kernels are the repo's own: the GPU campaign's integer
kernels (`benchmarks/data/coverage/fp32_int.cu`) and a 2D convolution of the version-ladder suite, compiled by the
real nvcc."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.deps import block_dependences
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.timing.datapaths import busy_cycles, folded_instructions, has_datapaths
from kerncast.analysis.timing.roofline import RooflineInputs, roofline_range

ROOT = Path(__file__).resolve().parent.parent
FP32_INT = ROOT / "benchmarks" / "data" / "coverage" / "fp32_int.cu"
CONV2D = ROOT / "validation" / "ladders" / "pmpp-conv2d" / "v1_basic.cu"


def _cycles(per_thread: dict[str, float], gpu: str) -> dict[str, float]:
    return busy_cycles(per_thread, load_profile(gpu).units)


def test_volta_and_later_profiles_name_the_integer_pipes_and_older_ones_do_not() -> None:
    for gpu in ("v100", "t4", "a100", "rtx3080", "h100"):
        units = load_profile(gpu).units
        assert (units["ALU"], units["IMAD"]) == (64, 64) and has_datapaths(units), gpu
    for gpu in ("k20", "m60", "gtx1050"):
        assert not has_datapaths(load_profile(gpu).units), gpu


def test_integer_work_runs_beside_fp32_work() -> None:
    """One FP32 and one ALU instruction per thread: on a V100 each pipe takes one of them (1/64 cycle per
    thread), where a single pool of SP lanes would take both one after the other."""
    both = _cycles({"SP": 1 / 64, "ALU": 1 / 64}, "v100")
    assert max(both.values()) == pytest.approx(1 / 64)
    # an H100's 128 FP32 lanes do not run integer logic: one ALU instruction per thread still takes 1/64
    assert max(_cycles({"ALU": 1 / 64}, "h100").values()) == pytest.approx(1 / 64)
    # before Volta nothing is split off the SP lanes
    assert _cycles({"SP": 2 / 192}, "k20") == {"SP": 2 / 192}


def test_flexible_integer_work_fills_whichever_pipe_has_room() -> None:
    """Adds and moves (`FLEX`, counted per thread) go to the ALU or the IMAD pipe: two of them per thread take
    2/128 cycles on a V100; beside one ALU-only instruction the pair of pipes takes all three at 3/128."""
    assert max(_cycles({"FLEX": 2.0}, "v100").values()) == pytest.approx(2 / 128)
    mixed = _cycles({"ALU": 1 / 64, "FLEX": 2.0}, "v100")
    assert max(mixed.values()) == pytest.approx(3 / 128)
    # an H100 runs FP32 on its second FP32 pipe too, so FP32 work does not crowd the flexible work out
    h100 = _cycles({"SP": 2 / 128, "FLEX": 2.0}, "h100")
    assert max(h100.values()) == pytest.approx(4 / 192)


@pytest.fixture(scope="module")
def compiled(nvcc_available) -> dict[str, object]:
    """Each kernel of fp32_int.cu and of the convolution as (function body, dependence DAGs)."""
    out: dict[str, object] = {}
    for path in (FP32_INT, CONV2D):
        result = compile_cuda(path, options=CompileOptions(arch="sm_90"), with_resources=False)
        assert result.ptx, result
        for fn in parse_ptx(result.ptx).kernels:
            cfg = build_cfg(fn)
            out[fn.display_name] = (fn.body, {b: block_dependences(cfg, b) for b in range(len(cfg.blocks))})
    return out


def _folded_ops(compiled: dict[str, object], kernel: str) -> list[str]:
    body, dags = next(v for k, v in compiled.items() if kernel in k)  # type: ignore[misc]
    return sorted(".".join((body[i].opcode, *body[i].modifiers)) for i in folded_instructions(body, dags))


def test_two_xors_of_three_inputs_are_one_lop3(compiled) -> None:
    """`x ^= (x << 13) ^ (x >> 7)`: of the two xors of each iteration the first feeds only the second, and the
    pair reads three values, so ptxas emits one LOP3 (a shift, a shift and a LOP3 per iteration in the SASS)."""
    folded = _folded_ops(compiled, "shiftXor")
    assert folded and set(folded) == {"xor.b32"}
    body, _ = next(v for k, v in compiled.items() if "shiftXor" in k)  # type: ignore[misc]
    assert len(folded) * 2 == sum(1 for ins in body if ins.opcode == "xor")
    # `x + ((x >> 5) & 255)`: the `and` feeds an add, not a logic instruction, so nothing is merged
    assert _folded_ops(compiled, "bfeChain") == []


def test_a_predicate_combine_is_taken_by_its_compare(compiled) -> None:
    """The convolution's bounds test `r >= 0 && r < height && q >= 0 && q < width`: nvcc writes `setp` and
    `or.pred`; the compare takes the combining predicate (`ISETP.GE.OR` in the SASS), so no `or.pred` issues."""
    folded = _folded_ops(compiled, "conv2d_basic")
    assert folded and set(folded) == {"or.pred"}


def test_integer_kernels_are_bound_by_the_integer_pipe_on_hopper_and_by_the_sp_lanes_on_kepler(nvcc_available):
    """A long shift/xor chain at a launch that fills the GPU: on an H100 the ALU pipe's 64 lanes limit it, on a
    K20 the SP lanes that run everything."""
    overrides = LaunchOverrides.from_strings(grid="8192", block="256", params=["n=2097152", "iters=4096"])
    for gpu, unit in (("h100", "compute (ALU)"), ("k20", "compute (SP)")):
        report = analyze_file(FP32_INT, options=AnalysisOptions(gpu=gpu, overrides=overrides, lime=False))
        kernel = next(k for k in report.kernels if k.name == "shiftXor")
        assert kernel.time.bottleneck == unit, (gpu, kernel.time.bottleneck)


def test_the_roofline_takes_integer_work_off_the_sp_line() -> None:
    """One FMA (2 ops) and two integer adds per thread, one of them merged away: without integer pipes the SP
    line carries all 4 ops; with them the SP line carries the FMA's 2 and the pipes line the one add left, so the
    best case is the longer of 2 ops at the SP peak and 1 instruction over the SP and ALU lanes."""
    common = dict(work_units=1e6, ops_per_thread=4.0, bytes_per_thread=0.0, p_compute=1e12, p_coalesced=1e12,
                  p_uncoalesced=1e11)
    old, _ = roofline_range(RooflineInputs(**common))
    assert old == pytest.approx(1e6 * 4.0 / 1e12 * 1e6)
    split = RooflineInputs(**common, pipe_ops_per_thread=1.0, pipe_insts_per_thread=1.0, folded_ops_per_thread=1.0,
                           p_pipes=2e11)
    best, _ = roofline_range(split)
    assert best == pytest.approx(max(1e6 * 2.0 / 1e12, 1e6 * 1.0 / 2e11) * 1e6)
