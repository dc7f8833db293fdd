"""The parser's fast paths for instruction, `.loc` and `.reg` lines give exactly what the token path gives.

A line inside braces that holds one plain instruction (or one plain `.loc`, or one register range) is read
by one regular expression (`lexer.INSTRUCTION_LINE_RE`, `LOC_LINE_RE`, `REG_LINE_RE`) instead of token by
token. These tests parse the same text both ways (the token path alone is `tokenize` without `instructions`)
and compare the whole `Module`, or the error, on nvcc's output for every `.cu` file of the repository, on the
repository's `.ptx` files, on hand-written lines of every form, on lines the fast paths must leave alone, and
on mutated PTX.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.ptx import PtxSyntaxError, parse_ptx
from kerncast.analysis.ptx import lexer as lexer_mod
from kerncast.analysis.ptx import parser as parser_mod
from kerncast.analysis.ptx.lexer import InstructionLine, LocLine, RegLine, tokenize
from kerncast.analysis.ptx.model import Addr, Guard, Imm, Reg, Sym, VarDecl, Vec

REPO_ROOT = Path(__file__).resolve().parent.parent
CUDA_FILES = sorted(p for d in ("examples", "tests/kernels", "tests/ptx_constructs", "benchmarks/data")
                    for p in (REPO_ROOT / d).glob("*.cu"))
PTX_FILES = sorted((REPO_ROOT / "tests" / "ptx_constructs").glob("*.ptx"))


def _token_path(text: str, skip: dict[int, tuple[int, str]] | None = None, *,
                instructions: bool = False) -> list[lexer_mod.Token]:
    return lexer_mod.tokenize(text, skip)


def _both(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """(fast path result, token path result): a Module or the (message, line, column) of the error."""
    def run() -> object:
        try:
            return parse_ptx(text, "k.cu")
        except PtxSyntaxError as exc:
            return (exc.message, exc.line, exc.column)

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(parser_mod, "tokenize", _token_path)
        slow = run()
    return fast, slow


def _fast_lines(text: str) -> int:
    return sum(type(t) is InstructionLine for t in tokenize(text, instructions=True))


@pytest.fixture(scope="module")
def repo_ptx(nvcc_available) -> list[tuple[str, str]]:
    out = [(str(p.relative_to(REPO_ROOT)), p.read_text()) for p in PTX_FILES]
    for path in CUDA_FILES:
        result = compile_cuda(path, options=CompileOptions(arch="sm_80"), with_resources=False)
        assert result.ok, (path, result.diagnostics)
        out.append((str(path.relative_to(REPO_ROOT)), result.ptx))
    return out


def test_every_repository_ptx_parses_the_same_both_ways(repo_ptx, monkeypatch):
    assert len(repo_ptx) >= 20
    for name, text in repo_ptx:
        fast, slow = _both(text, monkeypatch)
        assert fast == slow, name
    # the fast path is really taken: nearly every instruction of nvcc's output is a plain line
    body = sum(len(fn.body) for _, text in repo_ptx[len(PTX_FILES):] for fn in parse_ptx(text).functions)
    assert sum(_fast_lines(text) for _, text in repo_ptx[len(PTX_FILES):]) > 0.8 * body


HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n.global .align 4 .b8 gsym[64];\n"


def _entry(name: str, *lines: str) -> str:
    body = "\n".join(f"\t{ln}" for ln in lines)
    return (f".visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n{{\n\t.reg .b32 %r<9>;\n"
            f"\t.reg .b64 %rd<9>;\n\t.reg .pred %p<4>;\n{body}\n}}\n")


def _kernel(*lines: str) -> str:
    return HEADER + _entry("k", *lines)


@pytest.mark.parametrize(("line", "operands", "guard"), [
    ("mov.u32 \t%r3, %ctaid.x;", (Reg("%r3"), Reg("%ctaid.x")), None),
    ("@%p1 bra \t$L__BB0_2;", (Sym("$L__BB0_2"),), Guard("%p1")),
    ("@!%p2 ret;", (), Guard("%p2", True)),
    ("ret ;", (), None),
    ("add.s32 %r1, %r2, -1;", (Reg("%r1"), Reg("%r2"), Imm(-1, "-1")), None),
    ("add.u32 %r1, %r2, 0x1Fu;", (Reg("%r1"), Reg("%r2"), Imm(31, "0x1Fu")), None),
    ("add.u32 %r1, %r2, 017;", (Reg("%r1"), Reg("%r2"), Imm(15, "017")), None),
    ("mov.f32 %r1, 0f3F800000;", (Reg("%r1"), Imm(1.0, "0f3F800000")), None),
    ("mov.f64 %rd1, -0d4000000000000000;", (Reg("%rd1"), Imm(-2.0, "-0d4000000000000000")), None),
    ("ld.param.u64 %rd1, [k_param_0];", (Reg("%rd1"), Addr(Sym("k_param_0"), 0)), None),
    ("ld.global.u32 %r1, [%rd1+8];", (Reg("%r1"), Addr(Reg("%rd1"), 8)), None),
    ("ld.global.u32 %r1, [%rd1+-8];", (Reg("%r1"), Addr(Reg("%rd1"), -8)), None),
    ("ld.global.u32 %r1, [%rd1-8];", (Reg("%r1"), Addr(Reg("%rd1"), -8)), None),
    ("ld.global.u32 %r1, [%rd1--8];", (Reg("%r1"), Addr(Reg("%rd1"), 8)), None),
    ("ld.global.u32 %r1, [gsym+4];", (Reg("%r1"), Addr(Sym("gsym"), 4)), None),
    ("ld.global.u32 %r1, [gsym-4];", (Reg("%r1"), Addr(Sym("gsym"), -4)), None),
    ("ld.global.u32 %r1, [gsym+-0x10];", (Reg("%r1"), Addr(Sym("gsym"), -16)), None),
    ("st.global.v2.u32 [%rd2], {%r1, %r2}; // a comment", (Addr(Reg("%rd2"), 0), Vec((Reg("%r1"), Reg("%r2")))),
     None),
    ("ld.global.v4.u32 {%r1,_,%r3 ,\t%r4}, [%rd1];",
     (Vec((Reg("%r1"), Sym("_"), Reg("%r3"), Reg("%r4"))), Addr(Reg("%rd1"), 0)), None),
    ("ld.shared::cta.u32 %r1, [%rd1];\r", (Reg("%r1"), Addr(Reg("%rd1"), 0)), None),
    ("tex.2d.v4.f32.s32 {%r1, %r2, %r3, %r4}, [%rd1];",
     (Vec((Reg("%r1"), Reg("%r2"), Reg("%r3"), Reg("%r4"))), Addr(Reg("%rd1"), 0)), None),
])
def test_plain_instruction_lines_take_the_fast_path(line, operands, guard, monkeypatch):
    text = _kernel(line)
    assert _fast_lines(text) == 1
    fast, slow = _both(text, monkeypatch)
    assert fast == slow
    ins = fast.functions[0].body[0]  # type: ignore[attr-defined]
    assert (ins.operands, ins.guard, ins.text) == (operands, guard, line.strip())


@pytest.mark.parametrize("line", [
    "setp.ne.s32 %p1|%p2, %r1, 0;",  # predicate pair
    "and.pred %p3, %p1, !%p2;",  # negated operand
    "add.s32 %r1, %r2, - 1;",  # a sign apart from its number
    "mov.u32 %r1, gsym+4;",  # symbol plus offset outside brackets
    "ld.global.u32 %r1, [%rd1 + 4];",  # blanks inside brackets
    "ld.global.u32 %r1, [0x1000];",  # an absolute address
    "mov.f32 %r1, 1.5;",  # a decimal float
    "mov.b32 %r1, 0b101;",  # a binary integer
    "call.uni (%r1), gsym, (%r2);",  # parenthesised operand groups
    "add.s32 %r1, %r2, %r3; add.s32 %r4, %r5, %r6;",  # two instructions
    "add.s32 %r1,\t%r2,",  # runs on to the next line
    "ld .global.u32 %r1, [%rd1];",  # a modifier apart from its opcode
])
def test_other_lines_take_the_token_path_and_agree(line, monkeypatch):
    text = _kernel(line, "ret;")
    assert _fast_lines(text) == 1  # only the `ret;`
    fast, slow = _both(text, monkeypatch)
    assert fast == slow


@pytest.mark.parametrize(("loc", "fast", "where"), [
    (".loc\t1 10 5", True, ("k.cu", 10, 5)),
    (".loc 1 12 0 // a comment", True, ("k.cu", 12, 0)),
    (".loc 1 010 5", True, ("k.cu", 8, 5)),  # a leading zero reads octal, as `expect_int` reads it
    (".loc 2 7 3", True, ("2", 7, 3)),  # a file index without a `.file`
    (".loc 1 0 0", True, None),  # line 0: no source position
    (".loc 1 20 1, function_name $L__info_string0, inlined_at 1 30 2", False, ("k.cu", 20, 1)),
    (".loc 1 -3 1", False, None),
])
def test_loc_lines(loc, fast, where, monkeypatch):
    text = _kernel(loc, "ret;") + '\t.file\t1 "k.cu"\n'
    assert sum(type(t) is LocLine for t in tokenize(text, instructions=True)) == int(fast)
    fast_result, slow = _both(text, monkeypatch)
    assert fast_result == slow
    got = fast_result.functions[0].body[0].loc  # type: ignore[attr-defined]
    assert (None if got is None else (got.file, got.line, got.column)) == where


@pytest.mark.parametrize(("decl", "fast", "expected"), [
    (".reg .b32 \t%t<6>;", True, VarDecl("%t", "reg", "b32", None, (), 6, False, 12)),
    (".reg .pred %q<2>; // predicates", True, VarDecl("%q", "reg", "pred", None, (), 2, False, 12)),
    (".reg .b64 %s<010>;", True, VarDecl("%s", "reg", "b64", None, (), 8, False, 12)),  # octal, as expect_int
    (".reg .xyz %u<3>;", True, None),  # an unknown type: the token path's error
    (".reg .b32 %u<99999999999999>;", True, None),  # a count out of range: the token path's error
    (".reg .v2 .f32 %v<4>;", False, VarDecl("%v", "reg", "f32", None, (2,), 4, False, 12)),
    (".reg .b32 %w;", False, VarDecl("%w", "reg", "b32", None, (), 1, False, 12)),
])
def test_register_declaration_lines(decl, fast, expected, monkeypatch):
    text = _kernel(decl, "ret;")
    assert sum(type(t) is RegLine for t in tokenize(text, instructions=True)) == 3 + int(fast)
    fast_result, slow = _both(text, monkeypatch)
    assert fast_result == slow
    if expected is None:
        assert isinstance(fast_result, tuple)  # the error, the same both ways
    else:
        assert fast_result.functions[0].decls[-1] == expected  # type: ignore[attr-defined]


def test_inline_assembly_register_names_are_registers(monkeypatch):
    """A `.reg` declared without `%` in an inline-asm scope makes its name a register on later lines."""
    text = _kernel("{", ".reg .pred p;", "setp.ne.s32 p, %r1, 0;", "selp.u32 %r2, 1, 0, p;",
                   "st.global.u32 [p], {p, q};", "}", "bra q;")
    assert _fast_lines(text) == 4
    fast, slow = _both(text, monkeypatch)
    assert fast == slow
    body = fast.functions[0].body  # type: ignore[attr-defined]
    assert body[0].operands[0] == Reg("p") and body[1].operands[3] == Reg("p")
    assert body[2].operands == (Addr(Reg("p"), 0), Vec((Reg("p"), Sym("q"))))


@pytest.mark.parametrize("text", [
    # a declaration missing its `;` runs on into an instruction line
    _kernel(".reg .b32", "add.s32 %r1, %r2, %r3;", "ret;"),
    # a guard without an instruction, then an instruction line
    _kernel("@%p1", "bra $L;", "$L:", "ret;"),
    # a label whose `:` is on the next line
    _kernel("L1", ": bra L1;"),
    # an unterminated operand group that reaches an instruction line
    _kernel("st.global.v2.u32 [%rd1], {%r1,", "add.s32 %r1, %r2, %r3;", "ret;"),
    # an instruction line at module scope, and inside a module-scope initializer
    "\n".join([".version 8.0", ".target sm_80", "add.s32 %r1, %r2, %r3;"]),
    "\n".join([".version 8.0", ".target sm_80", ".global .b32 x[2] = {", "1, 2;", "add.s32 %r1, %r2, %r3;",
               "};", _entry("k", "ret;")]),
    # a debug section holding instruction-like lines
    _kernel("ret;") + "\t.section .debug_str\n\t{\n\tmov.u32 %r1, %r2;\n\t}\n",
    # a function with an error among instruction lines is skipped where the token path skips it
    HEADER + _entry("k", "add.s32 %r1, %r2, %r3;", "ld.global.u32 %r1, [%rd1+];", "ret;")
    + _entry("k2", "add.s32 %r1, %r2, %r3;", "ret;"),
])
def test_malformed_text_around_instruction_lines_agrees(text, monkeypatch):
    fast, slow = _both(text, monkeypatch)
    assert fast == slow


LINE_FRAGMENTS = ["%r1", "[%rd1]", "[%rd1+4]", "{%r1, %r2}", "-", "+", ",", ";", " ", "!", "|", "@", "@%p1 ",
                  "0f3F800000", "0x1F", "gsym", ".u32", ".x", "{", "}", "[", "]", "//", "/*", "*/", "::"]


@st.composite
def mutated_kernels(draw, seeds: list[str]) -> str:
    lines = draw(st.sampled_from(seeds)).split("\n")
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        pos = draw(st.integers(0, len(lines[i])))
        if draw(st.booleans()):
            lines[i] = lines[i][:pos] + draw(st.sampled_from(LINE_FRAGMENTS)) + lines[i][pos:]
        else:
            lines[i] = lines[i][:pos] + lines[i][pos + draw(st.integers(1, 3)):]
    return "\n".join(lines)


def test_mutated_ptx_parses_the_same_both_ways(repo_ptx, monkeypatch):
    wanted = ("examples/vector_add.cu", "examples/reduction.cu", "examples/transpose.cu",
              "tests/ptx_constructs/constructs.cu")
    seeds = [text for name, text in repo_ptx if name in wanted]
    assert len(seeds) == 4

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture],
              derandomize=True)
    @given(mutated_kernels(seeds))
    def check(text: str) -> None:
        fast, slow = _both(text, monkeypatch)
        assert fast == slow

    check()
