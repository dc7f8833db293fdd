"""Property-based tests: mutated real PTX either parses or raises PtxSyntaxError with a position.

The mutations (deleting, duplicating and swapping lines, inserting tokens or bytes, truncating) start from
nvcc's own output for the repository's examples. Whatever parses must also survive the CFG, loop and
dependence analyses.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.deps import all_dependences
from kerncast.analysis.loops import find_loops
from kerncast.analysis.ptx import PtxSyntaxError, parse_ptx

FRAGMENTS = ["{", "}", ";", ",", "[", "]", "(", ")", "@", "!", "%r1", "%p1", "bra", "$L__BB0_1:", ".reg",
             ".b32", ".shared", ".loc 1 2 3", ".file 1 \"x.cu\"", "ld.global.f32", "0f3F800000", "-", "+",
             "<", ">", "|", "\"", "/*", "//", ".entry", ".func", "0x", "\n", "\t", "::", "0d", "9999999999"]


@pytest.fixture(scope="module")
def seeds(compile_example) -> list[str]:
    texts = []
    for name in ("vector_add", "reduction", "matmul"):
        result = compile_example(name, arch="sm_80")
        assert result.ok
        texts.append(result.ptx)
    return texts


@st.composite
def mutations(draw, texts: list[str]) -> str:
    text = draw(st.sampled_from(texts))
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "bytes", "truncate", "replace"]))
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(j, lines[i])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "insert":
            pos = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + draw(st.sampled_from(FRAGMENTS)) + lines[i][pos:]
        elif kind == "bytes":
            pos = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:pos] + draw(st.text(min_size=1, max_size=6)) + lines[i][pos:]
        elif kind == "truncate":
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
        else:
            lines[i] = lines[i].replace(draw(st.sampled_from(["%", ".", ",", ";", "[", "{", "0"])), "", 1)
        if not lines:
            lines = [""]
    return "\n".join(lines)


def _check(text: str) -> None:
    try:
        module = parse_ptx(text)
    except PtxSyntaxError as exc:
        assert exc.line >= 1 and exc.column >= 1
        assert exc.line <= text.count("\n") + 2
        return
    for fn in module.functions:
        cfg = build_cfg(fn)
        find_loops(cfg)
        all_dependences(cfg)


def test_mutated_ptx_parses_or_raises_positioned_error(seeds):
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow],
              derandomize=True)
    @given(mutations(seeds))
    def check(text: str) -> None:
        _check(text)

    check()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(FRAGMENTS + [" ", "a", "1", ".x"]), max_size=60).map(" ".join))
def test_random_token_soup_never_escapes(text: str) -> None:
    _check(".version 8.0\n.target sm_80\n.address_size 64\n.entry k()\n{\n" + text + "\n}\n")


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_escape(data: bytes) -> None:
    _check(data.decode("latin-1"))
