"""No exception escapes the memory analysis on any PTX the parser accepts: every example and corpus kernel
under several block shapes, and randomly generated instruction sequences."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import PtxSyntaxError, parse_ptx

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("examples/*.cu"), *ROOT.glob("tests/kernels/*.cu")])
SHAPES = [None, (256, 1, 1), (16, 16, 1), (48, 1, 1), (8, 4, 2), (1, 1, 1)]


@pytest.fixture(scope="session")
def example_ptx(nvcc_available) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in SOURCES:
        result = compile_cuda(path, options=CompileOptions(arch="sm_75"))
        if result.ptx is not None:
            out[path.name] = result.ptx
    return out


def _analyse_all(ptx: str, shape, params=None, trips=None) -> int:
    module = parse_ptx(ptx)
    n = 0
    for fn in module.kernels:
        cfg = build_cfg(fn)
        loops = find_loops(cfg)
        res = analyze_memory(module, fn, cfg, loops, shape, params or {}, trips or {}, Thresholds())
        res.global_requests()
        res.average_sectors_per_request()
        res.shared_wavefronts_per_request()
        res.to_json()
        n += 1
    return n


def test_every_example_kernel_under_every_shape(example_ptx: dict[str, str]) -> None:
    assert example_ptx, "no example compiled"
    total = 0
    for ptx in example_ptx.values():
        for shape in SHAPES:
            total += _analyse_all(ptx, shape)
    assert total > 0


def test_odd_parameters_and_trip_counts(example_ptx: dict[str, str]) -> None:
    for ptx in example_ptx.values():
        module = parse_ptx(ptx)
        for fn in module.kernels:
            params = {p.name: v for p, v in zip(fn.params, (0, -1, 1 << 40, 3, 7), strict=False)}
            cfg = build_cfg(fn)
            trips = {lp.header: t for lp, t in zip(find_loops(cfg).loops, (0, 1, 10_000), strict=False)}
            _analyse_all(ptx, (32, 1, 1), params, trips)


HEAD = """.version 7.8
.target sm_75
.address_size 64
.visible .entry fuzz(.param .u64 fuzz_param_0, .param .u32 fuzz_param_1)
{
    .reg .pred %p<8>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<8>;
    .shared .align 4 .b8 buf[1024];
    ld.param.u64 %rd0, [fuzz_param_0];
    ld.param.u32 %r0, [fuzz_param_1];
"""

_R = st.sampled_from([f"%r{i}" for i in range(8)])
_RD = st.sampled_from([f"%rd{i}" for i in range(8)])
_P = st.sampled_from([f"%p{i}" for i in range(4)])
_IMM = st.integers(min_value=-70, max_value=70).map(str)
_SRC = st.one_of(_R, _IMM, st.sampled_from(["%tid.x", "%tid.y", "%ntid.x", "%ctaid.x", "%laneid"]))
_LABEL = st.sampled_from(["$L0", "$L1", "$L2"])


def _ins() -> st.SearchStrategy[str]:
    binop = st.sampled_from(["add.s32", "sub.s32", "mul.lo.s32", "mul.hi.u32", "shl.b32", "shr.u32", "shr.s32",
                             "and.b32", "or.b32", "xor.b32", "div.u32", "rem.s32", "min.s32", "max.u32"])
    return st.one_of(
        st.builds(lambda o, d, a, b: f"{o} {d}, {a}, {b};", binop, _R, _SRC, _SRC),
        st.builds(lambda d, a, b, c: f"mad.lo.s32 {d}, {a}, {b}, {c};", _R, _SRC, _SRC, _SRC),
        st.builds(lambda d, a: f"mov.u32 {d}, {a};", _R, _SRC),
        st.builds(lambda d, a: f"mul.wide.s32 {d}, {a}, 4;", _RD, _R),
        st.builds(lambda d, a, b: f"add.s64 {d}, {a}, {b};", _RD, _RD, _RD),
        st.builds(lambda d, a: f"cvta.to.global.u64 {d}, {a};", _RD, _RD),
        st.builds(lambda a: f"ld.global.f32 %f1, [{a}];", _RD),
        st.builds(lambda a: f"st.global.v2.f32 [{a}+8], {{%f1, %f2}};", _RD),
        st.builds(lambda a: f"ld.global.u32 %r3, [{a}];", _RD),
        st.builds(lambda a: f"ld.shared.f32 %f2, [{a}];", _R),
        st.builds(lambda a: f"st.shared.f64 [{a}], 0d0000000000000000;", _R),
        st.builds(lambda a: f"atom.global.add.u32 %r4, [{a}], 1;", _RD),
        st.builds(lambda d: f"mov.u32 {d}, buf;", _R),
        st.builds(lambda c, p, a, b: f"setp.{c}.s32 {p}, {a}, {b};",
                  st.sampled_from(["lt", "eq", "ne", "ge"]), _P, _SRC, _SRC),
        st.builds(lambda d, a, b, p: f"selp.b32 {d}, {a}, {b}, {p};", _R, _SRC, _SRC, _P),
        st.builds(lambda p, lab: f"@{p} bra {lab};", _P, _LABEL),
        st.builds(lambda lab: f"bra.uni {lab};", _LABEL),
        st.builds(lambda p, a: f"@!{p} st.global.f32 [{a}], %f1;", _P, _RD),
        st.builds(lambda d, a: f"shfl.sync.bfly.b32 {d}, {a}, 1, 31, -1;", _R, _R),
        st.just("bar.sync 0;"),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_ins(), _LABEL.map(lambda s: f"{s}:")), min_size=1, max_size=30),
       st.sampled_from(SHAPES))
def test_random_ptx_never_raises(lines: list[str], shape) -> None:
    labels = "\n".join(f"{lab}:" for lab in ("$L0", "$L1", "$L2") if f"{lab}:" not in lines)
    text = HEAD + "\n".join(f"    {x}" for x in lines) + "\n" + labels + "\n    ret;\n}\n"
    try:
        parse_ptx(text)
    except PtxSyntaxError:
        assume(False)
    _analyse_all(text, shape, {"fuzz_param_1": 5})
