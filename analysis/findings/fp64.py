"""The `fp64-in-fp32` finding: double-precision arithmetic in a kernel whose data is `float`.

C++ promotes a `float` to `double` wherever it meets a double: an unsuffixed literal (`x * 0.5`), or a call of
the double overload (`sqrt(x)`, `exp(x)`). nvcc then converts (`cvt.f64.f32`), computes in FP64 and converts
back, on units that run at a fraction of the FP32 rate (1/2 on an H100, 1/64 on consumer GPUs; the ratio is
the GPU profile's DPU:SP units). Reported when the kernel computes in `f64` but reads and writes no `f64` data
(global, shared, local or a parameter): then the doubles are an accident of the source, not its data; and
only on lines that show the cause (FP64 on a plain `sinf` line is the library's slow path). A kernel whose FP64
lines name `double` (a double local, a cast) asks for the precision on purpose and is not reported. A
quick fix is attached where every line with FP64 work shows its cause: the literal gets its `f` suffix and
the math call its float name (`sqrtf`); the result changes in its last bits (FP32 rounding), so it is offered
as unsafe.
"""

from __future__ import annotations

from kerncast.analysis.cexpr import Token
from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.finding import Finding, Fix, TextEdit, line_range, line_related, source_lines
from kerncast.analysis.ptx.model import Instruction, line_in_file
from kerncast.analysis.rules import Code, FixKind, rule
from kerncast.analysis.source_model import SourceFacts, scanned

#: PTX opcodes that compute (or compare) in the type their modifiers name
_ARITH = frozenset({"add", "sub", "mul", "mad", "fma", "div", "rcp", "sqrt", "rsqrt", "neg", "abs", "min", "max",
                    "setp", "selp", "cvt", "testp", "copysign"})
_MEMORY = frozenset({"ld", "st", "atom", "red", "ldu"})
#: the double overloads of the math library that have a float twin with an `f` suffix
_MATH = frozenset({"sqrt", "rsqrt", "cbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow",
                   "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "fabs", "floor",
                   "ceil", "round", "trunc", "fmod", "fmin", "fmax", "hypot", "erf", "erfc"})
#: tokens after which `sqrt(` is a member or a qualified name, not the global double overload
_QUALIFIERS = frozenset({".", "->", "::"})


def _is_f64(ins: Instruction) -> bool:
    return "f64" in ins.modifiers


def fp64_instructions(ctx: KernelContext) -> list[Instruction]:
    """The kernel's FP64 arithmetic, comparisons and conversions."""
    return [i for i in ctx.function.body if i.opcode in _ARITH and _is_f64(i)]


def has_double_data(ctx: KernelContext) -> bool:
    """Whether the kernel moves `f64` data (a load, store or atomic of f64, or a double parameter)."""
    if any(i.opcode in _MEMORY and _is_f64(i) for i in ctx.function.body):
        return True
    return any(p.type == "f64" for p in ctx.function.params)


def _is_double_literal(tok: Token) -> bool:
    """An unsuffixed floating literal (`0.5`, `2.`, `.5`, `1e-6`): C++ gives it the type double."""
    text = tok.text.lower()
    return (tok.kind == "num" and not text.startswith(("0x", "0b")) and not text[-1].isalpha()
            and ("." in text or "e" in text))


def _causes(facts: SourceFacts, line: int) -> list[Token]:
    """The tokens of a line that compute in double: unsuffixed literals (a literal glued to a number or name
    before it is part of that token, e.g. the fraction of a hex float) and the names of double math calls."""
    tokens = facts.env.tokens
    out = []
    for k in facts.line_tokens(line):
        tok = tokens[k]
        prev = tokens[k - 1] if k else None
        if tok.kind == "num":
            glued = prev is not None and prev.kind in ("num", "id") and prev.offset + len(prev.text) == tok.offset
            cause = _is_double_literal(tok) and not glued
        else:
            cause = (tok.kind == "id" and tok.text in _MATH and k + 1 < len(tokens) and tokens[k + 1].text == "("
                     and (prev is None or prev.text not in _QUALIFIERS))
        if cause:
            out.append(tok)
    return out


def _has_token(facts: SourceFacts, line: int, kind: str, text: str | None = None) -> bool:
    """Whether a line has a token of that kind (and text)."""
    tokens = facts.env.tokens
    return any(tokens[k].kind == kind and text in (None, tokens[k].text) for k in facts.line_tokens(line))


def line_edits(facts: SourceFacts, line: int) -> list[TextEdit]:
    """The edits that keep one source line in FP32: `f` after each unsuffixed literal, `f` after each double
    math call's name."""
    if _has_token(facts, line, "str") or _has_token(facts, line, "id", "double"):
        return []  # a string, or a line that asks for doubles on purpose
    edits = []
    for tok in _causes(facts, line):
        _, column = facts.position(tok.offset + len(tok.text))
        edits.append(TextEdit(line, column, line, column, "f"))
    return edits


def double_macros(facts: SourceFacts) -> frozenset[str]:
    """The names #defined as an unsuffixed floating literal (`#define ETA 0.3`, `(-0.3)`): their uses promote."""
    out = set()
    for name, definitions in facts.env.macros.items():
        for m in definitions:
            body = list(m.body or ())
            if len(body) > 2 and body[0].text == "(" and body[-1].text == ")":
                body = body[1:-1]
            if body[:1] and body[0].text in ("-", "+"):
                body = body[1:]
            if m.params is None and len(body) == 1 and _is_double_literal(body[0]):
                out.add(name)
    return frozenset(out)


def shows_cause(facts: SourceFacts, line: int, macros: frozenset[str]) -> bool:
    """Whether a source line shows why it computes in double: an unsuffixed literal, a double math call, the
    word `double`, or a macro defined as a double literal. FP64 on a line without one comes from a library
    (the slow path of sinf/cosf reduces large arguments in double), which the source cannot change."""
    if _causes(facts, line) or _has_token(facts, line, "id", "double"):
        return True
    tokens = facts.env.tokens
    return any(tokens[k].kind == "id" and tokens[k].text in macros for k in facts.line_tokens(line))


def fp64_fix(lines: list[int], facts: SourceFacts) -> Fix | None:
    """The fix when every line with FP64 work has a cause to edit; None otherwise (a fix that left FP64
    behind would not remove the finding)."""
    edits: list[TextEdit] = []
    for n in lines:
        mine = line_edits(facts, n)
        if not mine:
            return None
        edits += mine
    spec = rule(Code.FP64_IN_FP32).fix(FixKind.FLOAT_LITERALS)
    return Fix(FixKind.FLOAT_LITERALS, "keep the arithmetic in float: add the f suffix to the literals and use the "
               "float math functions", {"lines": lines}, edits, spec.applicability)


def fp64_in_fp32(ctx: KernelContext) -> Finding | None:
    """The kernel's `fp64-in-fp32` finding, on the first line with FP64 work that shows its cause."""
    f64 = fp64_instructions(ctx)
    if not f64 or has_double_data(ctx):
        return None
    lines = sorted({n for i in f64 if (n := line_in_file(i.loc, ctx.main_file)) is not None})
    facts = scanned(ctx.cuda_source)
    if facts is not None and any(_has_token(facts, n, "id", "double") for n in lines):
        return None  # a double local or cast on an FP64 line: the kernel asks for doubles on purpose
    if ctx.cuda_source:
        count = len(source_lines(ctx.cuda_source))
        macros = double_macros(facts) if facts is not None else frozenset()
        lines = [n for n in lines if 1 <= n <= count and (facts is None or shows_cause(facts, n, macros))]
    if not lines:
        return None
    gpu = ctx.gpu
    dpu, sp = (gpu.units.get("DPU", 0), gpu.units.get("SP", 0)) if gpu is not None else (0, 0)
    if dpu and sp:
        rate = f"FP64 runs at 1/{sp // dpu if sp % dpu == 0 else round(sp / dpu, 1)} of the FP32 rate on {gpu.name}"
    elif gpu is not None and sp:
        rate = f"{gpu.name} has no FP64 units of its own (FP64 is emulated slowly)"
    else:
        rate = "FP64 runs at a fraction of the FP32 rate"
    converts = sum(1 for i in f64 if i.opcode == "cvt")
    line = lines[0]
    start, end = line_range(ctx.cuda_source, line)
    message = (f"double-precision arithmetic in a float kernel: {len(f64)} FP64 instructions ({converts} "
               f"conversions between float and double), from a double literal or math call promoting float "
               f"values; {rate}")
    related = [line_related(ctx.cuda_source, n, "more FP64 work") for n in lines if n != line][:5]
    detail = {"fp64_instructions": len(f64), "conversions": converts, "lines": lines,
              "fp64_to_fp32_rate": round(dpu / sp, 4) if dpu and sp else None,
              "advice": "write float literals with an f suffix (0.5f) and call the float math functions (sqrtf, "
                        "expf, powf), or compile with -use_fast_math only if the precision allows"}
    fix = fp64_fix(lines, facts) if facts is not None else None
    return Finding(Code.FP64_IN_FP32, "warning", line, start, line, end, message, detail=detail, fix=fix,
                   related=related, kernel=ctx.report.name)


def fp64_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add the kernel's `fp64-in-fp32` finding."""
    add_findings(ctx, fp64_in_fp32)
