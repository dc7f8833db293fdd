"""The file-level findings: input that cannot be analysed (`input-error`, `toolchain-missing`), nvcc's errors and
warnings (`compile-error`, `compile-warning`, with the hint and fix of `compile_hints.py` where one is known) and
malformed PTX (`ptx-syntax-error`).

Each is an error of the whole file (or of one PTX function), never an exception: the pipeline reads the input,
compiles and parses, and hands what went wrong here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kerncast.analysis.compile import CompileDiagnostic
from kerncast.analysis.compile_hints import STAND_IN_LABEL, explain, include_fix, replacement_fix
from kerncast.analysis.finding import Finding
from kerncast.analysis.rules import Code


def input_finding(message: str, code: str = Code.INPUT_ERROR) -> Finding:
    """A file-level error at the file's start: input refused, no toolchain, no PTX."""
    return Finding(code, "error", 1, 1, 1, 1, message)


def toolchain_finding(message: str) -> Finding:
    """No nvcc to compile a `.cu` file with: the file-level error that says where Kerncast looked."""
    return input_finding(message, Code.TOOLCHAIN_MISSING)


def ptx_syntax_finding(line: int, column: int, message: str) -> Finding:
    """Malformed PTX at one position (of the PTX file, or line 1 of the `.cu` it was compiled from)."""
    return Finding(Code.PTX_SYNTAX_ERROR, "error", line, column, line, column + 1, message)


def compile_findings(diagnostics: Sequence[CompileDiagnostic], source: str, folder: Path) -> list[Finding]:
    """nvcc's errors and warnings as findings at their positions, each error (and each warning that a stand-in
    header answered) with the hint that explains it and the fix that removes it, where one is known. `folder` is
    the analysed file's, whose neighbours a missing header may be found in."""
    out: list[Finding] = []
    lines = source.splitlines() if diagnostics else []
    for d in diagnostics:
        sev = "error" if d.severity == "error" else "warning"
        code = Code.COMPILE_ERROR if sev == "error" else Code.COMPILE_WARNING
        own_source = None if d.in_header else source  # the text that a hint may check and a fix may edit
        at = (d.line, d.column)
        answer = explain(d.message, own_source, folder, at) if sev == "error" or d.stood_in else None
        message = f"{d.message} — {answer.hint}" if answer else d.message
        if d.stood_in:
            message += f" ({answer.label if answer else STAND_IN_LABEL})"
        own_line = lines[d.line - 1] if not d.in_header and 1 <= d.line <= len(lines) else None
        fix = (replacement_fix(code, d.message, own_line, d.line, d.column)
               or include_fix(code, d.message, own_source, folder, at))
        out.append(Finding(code, sev, d.line, d.column, d.line, d.column + 1, message, fix=fix))
    return out
