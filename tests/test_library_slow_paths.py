"""The CUDA math library's large-argument trig reduction is a slow path the time models leave out.

sinf/cosf reduce an argument of magnitude 105615 or more with the Payne-Hanek method, an out-of-line path with
a local-memory buffer; counting it as run, as both sides of every data-dependent branch are counted, made a
sinf loop several times slower than an H200 measured it. The fast divide intrinsics are one SFU reciprocal and a
multiply, not the IEEE divide subroutine. On nvcc's own output of the project's SFU coverage kernels.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.isa import classify
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.loops import find_loops
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx.parser import parse_ptx
from kerncast.analysis.timing.estimate import kernel_graphs
from kerncast.analysis.timing.trace_paths import LoopRun, build_trace

SFU = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "coverage" / "sfu.cu"


@pytest.fixture(scope="module")
def functions(nvcc_available):
    result = compile_cuda(SFU, options=CompileOptions(arch="sm_90"))
    assert result.ptx, result.diagnostics
    return {fn.name: fn for fn in parse_ptx(result.ptx).kernels}


def _named(functions, kernel):
    """The function of a kernel by its mangled name (`_Z9sqrtChainPKfPfii`, not `_Z10rsqrtChain...`)."""
    return next(fn for name, fn in functions.items() if f"{len(kernel)}{kernel}P" in name)


def test_the_trig_reduction_slow_path_is_cold_and_holds_every_local_access(functions):
    cfg = build_cfg(_named(functions, "sinPrecise"))
    assert cfg.cold
    local = {cfg.block_of[ins.index] for ins in cfg.function.body if ins.opcode in ("ld", "st")
             and "local" in ins.modifiers}
    assert local and local <= cfg.cold
    # the loop around the call, its exit and the join after the slow path still run
    sfu = {cfg.block_of[ins.index] for ins in cfg.function.body if ins.opcode in ("fma", "mul")}
    assert sfu - cfg.cold and 0 not in cfg.cold
    for kernel in ("sinFast", "divFast", "sqrtChain", "tanhChain"):
        assert not build_cfg(_named(functions, kernel)).cold, kernel


def test_fast_divide_and_square_root_wait_the_sfu_latency(functions):
    fast = [classify(ins) for ins in _named(functions, "divFast").body if ins.opcode == "div"]
    assert fast and {c.latency for c in fast} == {"sfu"}
    ieee = [classify(ins) for ins in _named(functions, "sqrtChain").body if ins.opcode == "sqrt"]
    assert ieee and {c.latency for c in ieee} == {"sqrt"}


def test_the_time_model_states_what_it_left_out(nvcc_available):
    launch = LaunchOverrides.from_strings(grid="8192", block="256", params=["n=2097152", "iters=256"])
    report = analyze_file(SFU, options=AnalysisOptions(gpu="h200", overrides=launch, lime=False))
    kernels = {k.name: k for k in report.kernels}
    slow, fast = kernels["sinPrecise"], kernels["sinFast"]
    assert any("105615" in a and "assumed not to run" in a for a in slow.time.assumptions)
    assert not any("105615" in a for a in fast.time.assumptions)


def _blocks(items) -> set[int]:
    """The basic blocks a trace walks, loops' bodies included."""
    out: set[int] = set()
    for it in items:
        out |= _blocks(it.body) if isinstance(it, LoopRun) else {it}
    return out


def test_the_trace_model_walks_no_block_of_the_slow_path(functions):
    """The trace walks both sides of a branch it cannot decide; the slow path's side it must leave out, as the
    dependence graphs it simulates leave it out (a walked block without one stopped the trace model)."""
    cfg = build_cfg(_named(functions, "sinPrecise"))
    loops = find_loops(cfg)
    walked = _blocks(build_trace(cfg, loops, {lp.header: 4.0 for lp in loops.loops}, {}).items)
    assert cfg.cold and walked and not walked & cfg.cold
    assert walked <= set(kernel_graphs(cfg).dags)
