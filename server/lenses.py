"""Code lenses above each kernel and inlay hints at the end of its signature line: the same short numbers."""

from __future__ import annotations

from typing import Any

from kerncast.server.convert import kernel_anchor, kernel_summary
from lsprotocol import types as lsp

SHOW_REPORT = "kerncast.showReport"


def code_lenses(report: dict[str, Any], uri: str, lines: list[str]) -> list[lsp.CodeLens]:
    out = []
    for k in report.get("kernels") or []:
        anchor = kernel_anchor(lines, k)
        if anchor is None:
            continue
        rng = lsp.Range(lsp.Position(anchor.line, anchor.start), lsp.Position(anchor.line, anchor.end))
        title = kernel_summary(k, report.get("gpu") or "?")
        out.append(lsp.CodeLens(range=rng, command=lsp.Command(title=title, command=SHOW_REPORT,
                                                                arguments=[uri, k.get("name")])))
    return out


def _signature_end(lines: list[str], line0: int) -> lsp.Position:
    """End of the kernel's signature: the line that closes its parameter list (or the anchor line)."""
    depth = 0
    seen = False
    for ln in range(line0, min(len(lines), line0 + 12)):
        for ch in lines[ln]:
            if ch == "(":
                depth += 1
                seen = True
            elif ch == ")":
                depth -= 1
        if seen and depth <= 0:
            text = lines[ln].rstrip("\r\n")
            return lsp.Position(ln, len(text.rstrip()))
    text = lines[line0].rstrip("\r\n") if line0 < len(lines) else ""
    return lsp.Position(line0, len(text.rstrip()))


def inlay_hints(report: dict[str, Any], lines: list[str], rng: lsp.Range) -> list[lsp.InlayHint]:
    out = []
    for k in report.get("kernels") or []:
        anchor = kernel_anchor(lines, k)
        if anchor is None:
            continue
        pos = _signature_end(lines, anchor.line)
        if not rng.start.line <= pos.line <= rng.end.line:
            continue
        summary = kernel_summary(k, report.get("gpu") or "?")
        out.append(lsp.InlayHint(position=pos, label=summary, padding_left=True,
                                 tooltip=f"Kerncast prediction for {k.get('name')}; hover the name for details"))
    return out
