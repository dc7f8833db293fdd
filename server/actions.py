"""Code actions: the findings' fixes as versioned `WorkspaceEdit`s, plus launch annotation and GPU switch.

A finding's fixes are found through the diagnostic the client sends back in the request's context: each
diagnostic carries its finding's id in `data` (LSP asks clients to keep `data` unchanged; VS Code and Neovim
0.7 do), so an action does not depend on where the client has moved the diagnostic since it was published.
Only a request that carries no id asks by its range (`_asked_findings`).

The fixes are built in the library by the rule that found the problem, as concrete text edits; this module
only converts them. They are made for the analysed text: `textmap.View` carries each one into the document's
current text, checking that the text it replaces is still there, and a fix that cannot be carried whole is
not offered. A fix with applicability `snippet` is a template: it is offered as a `refactor.rewrite`
action titled "snippet: ...", never as a quick fix. A quick fix is preferred only when it is the one safe
fix of its finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any

from kerncast.analysis.finding import Finding, Fix, TextEdit
from kerncast.analysis.report import FileReport
from kerncast.server.convert import (
    SOURCE,
    all_findings,
    findings_by_id,
    kernel_place,
    launch_known,
    placed,
    to_diagnostic,
    to_range,
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


def to_lsp_edit(e: TextEdit) -> lsp.TextEdit:
    """A library edit (1-based, end exclusive) as an LSP edit (0-based)."""
    return lsp.TextEdit(range=lsp.Range(lsp.Position(e.line - 1, e.column - 1),
                                        lsp.Position(e.end_line - 1, e.end_column - 1)), new_text=e.new_text)


def _kind(kind: Any) -> str:
    return str(getattr(kind, "value", kind) or "")


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


def _lines_overlap(a: lsp.Range, b: lsp.Range) -> bool:
    return a.start.line <= b.end.line and b.start.line <= a.end.line


def sent_finding_id(diag: lsp.Diagnostic) -> str | None:
    """The finding id a diagnostic sent back by the client carries in `data` (see `convert.finding_id`)."""
    data = diag.data
    found = data.get("id") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None


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


def _asked_findings(report: FileReport, doc: Doc, rng: lsp.Range, diagnostics: Sequence[lsp.Diagnostic],
                    found: Mapping[str, Finding]) -> list[tuple[Finding, lsp.Diagnostic | None]]:
    """The findings a request asks for, each with the diagnostic its actions name: those whose id the sent
    diagnostics carry (with the diagnostic as the client sent it). A request that carries no id at all asks
    for the findings on its range instead (with their diagnostics moved into the current text): Neovim 0.7
    keeps `data` but leaves its diagnostics where they were published while unsaved lines are typed above
    them, so at a finding's new line it sends none."""
    asked: dict[str, lsp.Diagnostic] = {}  # each finding once, with the first diagnostic that names it
    for d in diagnostics:
        if (fid := sent_finding_id(d)) is not None:
            asked.setdefault(fid, d)
    if asked:
        return [(found[fid], d) for fid, d in asked.items() if fid in found]
    out: list[tuple[Finding, lsp.Diagnostic | None]] = []
    for f in all_findings(report):
        place = placed(report, doc.lines, f)
        if _lines_overlap(to_range(place.span), rng):
            out.append((f, _diagnostic_out(doc, to_diagnostic(f, doc.uri, place))))
    return out


def code_actions(report: FileReport, doc: Doc, rng: lsp.Range, diagnostics: Sequence[lsp.Diagnostic],
                 gpus: list[str], current_gpu: str, only: list[str] | None = None,
                 by_id: Mapping[str, Finding] | None = None) -> list[lsp.CodeAction]:
    """The fixes of the findings behind `diagnostics` (the request's context: the client's diagnostics on the
    range, each with its finding's id in `data`; see `_asked_findings`), then the actions of a kernel whose
    name is on the lines of `rng`, a range of the analysed text. `by_id`: the report's findings by id, when
    the caller keeps them."""
    out: list[lsp.CodeAction] = []
    found = by_id if by_id is not None else findings_by_id(report)
    kernels = {k.name: k for k in report.kernels}
    for f, diag in _asked_findings(report, doc, rng, diagnostics, found):
        fixes = [x for x in f.fixes() if x.edits]
        safe = [x for x in fixes if x.applicability == "safe"]
        for fix in fixes:
            action = _fix_action(doc, fix, diag, preferred=len(safe) == 1 and fix is safe[0])
            if action is not None:
                out.append(action)
    # on a kernel's name: add a launch annotation when the launch is not known, and switch GPU
    for name, k in kernels.items():
        place = kernel_place(report, doc.lines, k)
        if place is None or not rng.start.line <= place.name.line - 1 <= rng.end.line:
            continue
        if not launch_known(k.launch) and place.annotation is not None:
            carried = doc.view.workspace_edit([to_lsp_edit(place.annotation)])
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
