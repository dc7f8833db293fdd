"""The `fp64-in-fp32` finding: double-precision arithmetic in a kernel whose data is `float`.

C++ promotes a `float` to `double` wherever it meets a double: an unsuffixed literal (`x * 0.5`), or a call of
the double overload (`sqrt(x)`, `exp(x)`). nvcc then converts (`cvt.f64.f32`), computes in FP64 and converts
back, on units that run at a fraction of the FP32 rate (1/2 on an H100, 1/64 on consumer GPUs; the ratio is
the GPU profile's DPU:SP units). Reported when the kernel computes in `f64` but reads and writes no `f64` data
(global, shared, local or a parameter): then the doubles are an accident of the source, not its data; and
only on lines that show the cause (FP64 on a plain `sinf` line is the library's slow path). A
quick fix is attached where every line with FP64 work shows its cause: the literal gets its `f` suffix and
the math call its float name (`sqrtf`); the result changes in its last bits (FP32 rounding), so it is offered
as unsafe.
"""

from __future__ import annotations

import re

from kerncast.analysis.context import KernelContext, reported_here
from kerncast.analysis.ptx.model import Instruction, line_in_file
from kerncast.analysis.report import Finding, Fix, TextEdit, line_range, line_related, source_lines
from kerncast.analysis.rules import Code, FixKind, rule

#: PTX opcodes that compute (or compare) in the type their modifiers name
_ARITH = frozenset({"add", "sub", "mul", "mad", "fma", "div", "rcp", "sqrt", "rsqrt", "neg", "abs", "min", "max",
                    "setp", "selp", "cvt", "testp", "copysign"})
_MEMORY = frozenset({"ld", "st", "atom", "red", "ldu"})
#: an unsuffixed floating literal: 1.0, .5, 2., 1e-6, 3.5e2 (not 1.0f, not part of a name or a number)
_LITERAL_RE = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")
#: the double overloads of the math library that have a float twin with an `f` suffix
_MATH_RE = re.compile(r"(?<![\w.:>])(sqrt|rsqrt|cbrt|exp|exp2|exp10|expm1|log|log2|log10|log1p|pow|sin|cos|tan|"
                      r"asin|acos|atan|atan2|sinh|cosh|tanh|fabs|floor|ceil|round|trunc|fmod|fmin|fmax|hypot|"
                      r"erf|erfc)\s*\(")


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


def _code_part(text: str) -> str:
    """The line without a trailing // comment (literals in comments are not code)."""
    cut = text.find("//")
    return text if cut < 0 else text[:cut]


def line_edits(line: int, text: str) -> list[TextEdit]:
    """The edits that keep one source line in FP32: `f` after each unsuffixed literal, `f` after each double
    math call's name."""
    code = _code_part(text)
    if '"' in code or "'" in code or re.search(r"\bdouble\b", code):
        return []  # a string, or a line that asks for doubles on purpose
    edits = [TextEdit(line, m.end(1) + 1, line, m.end(1) + 1, "f") for m in _LITERAL_RE.finditer(code)]
    edits += [TextEdit(line, m.end(1) + 1, line, m.end(1) + 1, "f") for m in _MATH_RE.finditer(code)]
    return sorted(edits, key=lambda e: e.column)


_DEFINE_RE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+\(?\s*[-+]?((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|"
                        r"\d+[eE][+-]?\d+)\s*\)?\s*(?://.*)?$", re.M)


def double_macros(source: str) -> frozenset[str]:
    """The names #defined as an unsuffixed floating literal (`#define ETA 0.3`): their uses promote too."""
    return frozenset(m.group(1) for m in _DEFINE_RE.finditer(source))


def shows_cause(text: str, macros: frozenset[str]) -> bool:
    """Whether a source line shows why it computes in double: an unsuffixed literal, a double math call, the
    word `double`, or a macro defined as a double literal. FP64 on a line without one comes from a library
    (the slow path of sinf/cosf reduces large arguments in double), which the source cannot change."""
    code = _code_part(text)
    if _LITERAL_RE.search(code) or _MATH_RE.search(code) or re.search(r"\bdouble\b", code):
        return True
    return any(w in macros for w in re.findall(r"[A-Za-z_]\w*", code))


def fp64_fix(lines: list[int], text: tuple[str, ...]) -> Fix | None:
    """The fix when every line with FP64 work has a cause to edit; None otherwise (a fix that left FP64
    behind would not remove the finding)."""
    edits: list[TextEdit] = []
    for n in lines:
        if not 1 <= n <= len(text):
            return None
        mine = line_edits(n, text[n - 1])
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
    text = source_lines(ctx.cuda_source) if ctx.cuda_source else ()
    if text:
        macros = double_macros(ctx.cuda_source or "")
        lines = [n for n in lines if 1 <= n <= len(text) and shows_cause(text[n - 1], macros)]
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
    fix = fp64_fix(lines, text) if text else None
    return Finding(Code.FP64_IN_FP32, "warning", line, start, line, end, message, detail=detail, fix=fix,
                   related=related, kernel=ctx.report.name)


def fp64_stage(ctx: KernelContext) -> None:
    """Pipeline stage: add the kernel's `fp64-in-fp32` finding."""
    if not reported_here(ctx):
        return
    finding = fp64_in_fp32(ctx)
    if finding is not None:
        ctx.report.findings.append(finding)
