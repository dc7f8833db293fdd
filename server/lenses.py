"""Code lenses above each kernel and inlay hints after its parameter list: the same short numbers.

Where a kernel's name and signature are comes from the library, which read the text (`convert.places`)."""

from __future__ import annotations

from collections.abc import Callable

from kerncast.analysis.report import FileReport
from kerncast.server.convert import kernel_anchor, kernel_summary, signature_end
from lsprotocol import types as lsp

SHOW_REPORT = "kerncast.showReport"


def code_lenses(report: FileReport, uri: str, lines: list[str],
                change: Callable[[str], str | None] | None = None) -> list[lsp.CodeLens]:
    """One lens per kernel; `change(name)` is the kernel's change since the last save, appended where known."""
    out = []
    for k in report.kernels:
        anchor = kernel_anchor(report, lines, k)
        if anchor is None:
            continue
        rng = lsp.Range(lsp.Position(anchor.line, anchor.start), lsp.Position(anchor.line, anchor.end))
        title = kernel_summary(k, report.gpu or "?", report.gpu_name)
        since = change(k.name) if change is not None else None
        if since:
            title += f" · {since}"
        out.append(lsp.CodeLens(range=rng, command=lsp.Command(title=title, command=SHOW_REPORT,
                                                                arguments=[uri, k.name])))
    return out


def inlay_hints(report: FileReport, lines: list[str], rng: lsp.Range) -> list[lsp.InlayHint]:
    out = []
    for k in report.kernels:
        pos = signature_end(report, lines, k)
        if pos is None or not rng.start.line <= pos.line <= rng.end.line:
            continue
        summary = kernel_summary(k, report.gpu or "?", report.gpu_name)
        out.append(lsp.InlayHint(position=pos, label=summary, padding_left=True,
                                 tooltip=f"Kerncast prediction for {k.name}; hover the name for details"))
    return out
