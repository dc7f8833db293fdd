"""Code actions: the findings' fixes as versioned `WorkspaceEdit`s, plus launch annotation and GPU switch.

The fixes are built in the library by the rule that found the problem, as concrete text edits; this module
only converts them. They are made for the analysed text: `textmap.View` carries each one into the document's
current text, checking that the text it replaces is still there, and a fix that cannot be carried whole is
not offered. A fix with applicability `snippet` is a template: it is offered as a `refactor.rewrite`
action titled "snippet: ...", never as a quick fix. A quick fix is preferred only when it is the one safe
fix of its finding.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any

from kerncast.analysis.edits import launch_annotation_edit
from kerncast.analysis.finding import Fix, TextEdit
from kerncast.analysis.launch import Launch
from kerncast.analysis.report import FileReport
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
from kerncast.server.positions import UTF16
from kerncast.server.textmap import View
from lsprotocol import types as lsp

SELECT_GPU = "kerncast.selectGpu"
SWITCH_GPU_KIND = "source.kerncast.switchGpu"
SNIPPET_KIND = lsp.CodeActionKind.RefactorRewrite


@dataclass
class Doc:
    """The document code actions are asked for: the analysed lines, and the current ones when the user has
    typed since (None: the analysed text is the current text); `version` is the current text's version."""

    uri: str
    version: int | None
    lines: list[str]
    versioned: bool  # the client takes documentChanges
    current: list[str] | None = None
    encoding: str = UTF16
    #: the server's view of the same texts, when it has one already (its line map is built once per version)
    given_view: InitVar[View | None] = None
    view: View = field(init=False)

    def __post_init__(self, given_view: View | None) -> None:
        self.view = given_view or View(self.uri, self.version, self.lines,
                                       self.lines if self.current is None else self.current, self.encoding,
                                       self.versioned)


def _diagnostic_out(doc: Doc, diag: lsp.Diagnostic) -> lsp.Diagnostic | None:
    """The finding's diagnostic in the current text (its related locations in this file too), or None."""
    rng = doc.view.range_out(diag.range)
    if rng is None:
        return None
    related = []
    for r in diag.related_information or []:
        if r.location.uri != doc.uri:
            related.append(r)
            continue
        moved = doc.view.range_out(r.location.range)
        if moved is not None:
            related.append(lsp.DiagnosticRelatedInformation(lsp.Location(r.location.uri, moved), r.message))
    diag.range = rng
    diag.related_information = related or None
    return diag


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


def _fix_action(doc: Doc, fix: Fix, diag: lsp.Diagnostic | None, preferred: bool) -> lsp.CodeAction | None:
    edit = doc.view.workspace_edit([to_lsp_edit(e) for e in fix.edits])
    if edit is None:
        return None
    if fix.applicability == "snippet":
        title = fix.description if fix.description.startswith("snippet") else f"snippet: {fix.description}"
        return lsp.CodeAction(title=f"Kerncast: {title}", kind=SNIPPET_KIND, edit=edit)
    suffix = " (unsafe: review the change)" if fix.applicability == "unsafe" else ""
    return lsp.CodeAction(title=f"Kerncast: {fix.description}{suffix}", kind=lsp.CodeActionKind.QuickFix,
                          diagnostics=[diag] if diag is not None else None, edit=edit,
                          is_preferred=preferred or None)


def code_actions(report: FileReport, doc: Doc, rng: lsp.Range, gpus: list[str], current_gpu: str,
                 only: list[str] | None = None) -> list[lsp.CodeAction]:
    """The actions for the findings and kernels on the lines of `rng`, a range of the analysed text."""
    out: list[lsp.CodeAction] = []
    kernels = {k.name: k for k in report.kernels}
    for f in all_findings(report):
        fixes = [x for x in f.fixes() if x.edits]
        if not fixes or not _lines_overlap(finding_range(f, doc.lines), rng):
            continue
        diag = _diagnostic_out(doc, to_diagnostic(f, doc.uri, doc.lines))
        safe = [x for x in fixes if x.applicability == "safe"]
        for fix in fixes:
            action = _fix_action(doc, fix, diag, preferred=len(safe) == 1 and fix is safe[0])
            if action is not None:
                out.append(action)
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
            carried = doc.view.workspace_edit([to_lsp_edit(edit)]) if edit is not None else None
            if carried is not None:
                out.append(lsp.CodeAction(title=f"Kerncast: add a // kerncast: launch annotation for {name}",
                                          kind=lsp.CodeActionKind.QuickFix, edit=carried))
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
