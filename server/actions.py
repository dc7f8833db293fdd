"""Code actions: the findings' fixes as versioned `WorkspaceEdit`s, plus launch annotation and GPU switch.

The fixes are built in the library by the rule that found the problem, as concrete text edits; this module
only converts them. A fix with applicability `snippet` is a template: it is offered as a `refactor.rewrite`
action titled "snippet: ...", never as a quick fix. A quick fix is preferred only when it is the one safe
fix of its finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kerncast.analysis.edits import launch_annotation_edit
from kerncast.analysis.report import FileReport, Finding, Fix, TextEdit
from kerncast.server.convert import (
    SOURCE,
    all_findings,
    base_name,
    finding_range,
    fmt_dim,
    kernel_anchor,
    launch_known,
    source_model,
    to_diagnostic,
)
from lsprotocol import types as lsp

if TYPE_CHECKING:
    from kerncast.analysis.launch import Launch

SELECT_GPU = "kerncast.selectGpu"
SWITCH_GPU_KIND = "source.kerncast.switchGpu"
SNIPPET_KIND = lsp.CodeActionKind.RefactorRewrite


@dataclass
class Doc:
    uri: str
    version: int | None
    lines: list[str]
    versioned: bool  # the client takes documentChanges


def _edit(doc: Doc, edits: list[lsp.TextEdit]) -> lsp.WorkspaceEdit:
    if doc.versioned:
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
            text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            edits=edits)])
    return lsp.WorkspaceEdit(changes={doc.uri: edits})


def to_lsp_edit(e: TextEdit) -> lsp.TextEdit:
    """A library edit (1-based, end exclusive) as an LSP edit (0-based)."""
    return lsp.TextEdit(range=lsp.Range(lsp.Position(e.line - 1, e.column - 1),
                                        lsp.Position(e.end_line - 1, e.end_column - 1)), new_text=e.new_text)


def annotation_text(launch: Launch | None, data: dict[str, Any] | None = None) -> tuple[str, str]:
    """(grid, block) texts for a `// kerncast:` annotation: the launch's values, else the defaults."""
    data = data or {}
    grid = data.get("grid") or (launch.grid.value if launch is not None else None) or [1024]
    block = data.get("block") or (launch.block.value if launch is not None else None) or [256]
    g = fmt_dim(grid) if isinstance(grid, list | tuple) else str(grid)
    b = fmt_dim(block) if isinstance(block, list | tuple) else str(block)
    return g.replace("x", ","), b.replace("x", ",")


def _kind(kind: Any) -> str:
    return str(getattr(kind, "value", kind) or "")


def _lines_overlap(a: lsp.Range, b: lsp.Range) -> bool:
    return a.start.line <= b.end.line and b.start.line <= a.end.line


def _fix_action(doc: Doc, f: Finding, fix: Fix, diag: lsp.Diagnostic, preferred: bool) -> lsp.CodeAction:
    edit = _edit(doc, [to_lsp_edit(e) for e in fix.edits])
    if fix.applicability == "snippet":
        title = fix.description if fix.description.startswith("snippet") else f"snippet: {fix.description}"
        return lsp.CodeAction(title=f"Kerncast: {title}", kind=SNIPPET_KIND, edit=edit)
    suffix = " (unsafe: review the change)" if fix.applicability == "unsafe" else ""
    return lsp.CodeAction(title=f"Kerncast: {fix.description}{suffix}", kind=lsp.CodeActionKind.QuickFix,
                          diagnostics=[diag], edit=edit, is_preferred=preferred or None)


def code_actions(report: FileReport, doc: Doc, rng: lsp.Range, gpus: list[str], current_gpu: str,
                 only: list[str] | None = None) -> list[lsp.CodeAction]:
    out: list[lsp.CodeAction] = []
    kernels = {k.name: k for k in report.kernels}
    for f in all_findings(report):
        fixes = [x for x in f.fixes() if x.edits]
        if not fixes or not _lines_overlap(finding_range(f, doc.lines), rng):
            continue
        diag = to_diagnostic(f, doc.uri, doc.lines)
        safe = [x for x in fixes if x.applicability == "safe"]
        for fix in fixes:
            out.append(_fix_action(doc, f, fix, diag, preferred=len(safe) == 1 and fix is safe[0]))
    # on a kernel's name: add a launch annotation when the launch is not known, and switch GPU
    facts = source_model(doc.lines)
    for name, k in kernels.items():
        anchor = kernel_anchor(doc.lines, k)
        if anchor is None or not rng.start.line <= anchor.line <= rng.end.line:
            continue
        launch = k.launch
        if not launch_known(launch) and facts is not None:
            grid, block = annotation_text(launch)
            edit = launch_annotation_edit(facts, base_name(name), grid, block)
            if edit is not None:
                out.append(lsp.CodeAction(title=f"Kerncast: add a // kerncast: launch annotation for {name}",
                                          kind=lsp.CodeActionKind.QuickFix,
                                          edit=_edit(doc, [to_lsp_edit(edit)])))
        for gpu in gpus:
            if gpu != current_gpu:
                out.append(lsp.CodeAction(title=f"Kerncast: predict for GPU {gpu}",
                                          kind=SWITCH_GPU_KIND,
                                          command=lsp.Command(title=f"Predict for {gpu}", command=SELECT_GPU,
                                                              arguments=[gpu])))
        break
    if only:
        wanted = [_kind(o) for o in only]
        out = [a for a in out if any(_kind(a.kind).startswith(w) for w in wanted)]
    return out


__all__ = ["Doc", "code_actions", "to_lsp_edit", "SOURCE"]
