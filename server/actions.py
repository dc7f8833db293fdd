"""Code actions from the findings' fix hints, as versioned `WorkspaceEdit`s, plus launch annotation and GPU switch.

A fix hint (`Finding.fix`) names its kind and carries what the edit needs in `data`. Keys read here, all
optional (the finding's own line stands in for a missing `line`):
  - `pad-shared-array`: `line` of the declaration, `name` of the array, or `old`/`new` texts of the line;
  - `swap-index-order`: `line`, `array`, or `old`/`new`;
  - `stage-through-shared-memory`, `use-soa`: `line` to insert above (e.g. the loop), `array`, `tile`;
  - `add-launch-annotation`: `line` of the kernel, `grid`, `block`;
  - `switch-gpu`: `gpu`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kerncast.analysis.report import FileReport, Finding
from kerncast.server.convert import (
    SOURCE,
    all_findings,
    finding_range,
    fmt_dim,
    kernel_anchor,
    launch_known,
    to_diagnostic,
)
from lsprotocol import types as lsp

SELECT_GPU = "kerncast.selectGpu"
SWITCH_GPU_KIND = "source.kerncast.switchGpu"


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


def _line_text(doc: Doc, line0: int) -> str:
    return doc.lines[line0].rstrip("\r\n") if 0 <= line0 < len(doc.lines) else ""


def _indent(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def _replace_on_line(doc: Doc, line0: int, start: int, end: int, new: str) -> lsp.TextEdit:
    return lsp.TextEdit(range=lsp.Range(lsp.Position(line0, start), lsp.Position(line0, end)), new_text=new)


def _insert_above(line0: int, text: str) -> lsp.TextEdit:
    pos = lsp.Position(line0, 0)
    return lsp.TextEdit(range=lsp.Range(pos, pos), new_text=text)


def _fix_line0(f: Finding, data: dict[str, Any]) -> int:
    line = data.get("line")
    return (int(line) if isinstance(line, int) and line > 0 else f.line) - 1


def _old_new(doc: Doc, line0: int, data: dict[str, Any]) -> lsp.TextEdit | None:
    old, new = data.get("old_text", data.get("old")), data.get("new_text", data.get("new"))
    if isinstance(old, str) and isinstance(new, str) and old:
        text = _line_text(doc, line0)
        at = text.find(old)
        if at >= 0:
            return _replace_on_line(doc, line0, at, at + len(old), new)
    return None


def _array_site(doc: Doc, f: Finding, data: dict[str, Any],
                keys: tuple[str, ...]) -> tuple[int, lsp.TextEdit | None, str, str]:
    """The fix's line, its ready-made edit (when the finding carries old/new text), the line's text, and a
    pattern for the array's name (the first of `keys` the fix data names, else any identifier)."""
    line0 = _fix_line0(f, data)
    name = next((data[k] for k in keys if isinstance(data.get(k), str) and data[k]), None)
    head = re.escape(name) if name else r"[A-Za-z_]\w*"
    return line0, _old_new(doc, line0, data), _line_text(doc, line0), head


def pad_shared_array(doc: Doc, f: Finding, data: dict[str, Any]) -> list[lsp.TextEdit]:
    """`__shared__ float tile[32][32];` -> `[32][33]` (a named size becomes `SIZE + 1`)."""
    line0, edit, text, head = _array_site(doc, f, data, ("declaration", "name", "array"))
    if edit is not None:
        return [edit]
    m = re.search(rf"\b{head}\s*((?:\[[^\[\]]+\]\s*)+)", text)
    if m is None:
        return []
    dims = list(re.finditer(r"\[([^\[\]]+)\]", m.group(1)))
    last = dims[-1]
    size = last.group(1).strip()
    padded = str(int(size) + 1) if size.isdigit() else f"{size} + 1"
    start = m.start(1) + last.start(1)
    return [_replace_on_line(doc, line0, start, m.start(1) + last.end(1), padded)]


def swap_index_order(doc: Doc, f: Finding, data: dict[str, Any]) -> list[lsp.TextEdit]:
    """`a[i][j]` -> `a[j][i]` on the flagged line."""
    line0, edit, text, head = _array_site(doc, f, data, ("array", "declaration", "name"))
    if edit is not None:
        return [edit]
    m = re.search(rf"\b{head}\s*\[([^\[\]]+)\]\s*\[([^\[\]]+)\]", text)
    if m is None:
        return []
    a, b = m.group(1), m.group(2)
    return [_replace_on_line(doc, line0, m.start(1), m.end(2), f"{b.strip()}][{a.strip()}")]


def _enclosing_loop(doc: Doc, line0: int) -> int:
    """The `for`/`while` line just above `line0` that encloses it (by indentation), else `line0`."""
    width = len(_indent(_line_text(doc, line0)))
    for ln in range(line0 - 1, max(-1, line0 - 6), -1):
        text = _line_text(doc, ln)
        if re.match(r"\s*(for|while)\b", text) and len(_indent(text)) < width:
            return ln
    return line0


def stage_through_shared(doc: Doc, f: Finding, data: dict[str, Any]) -> list[lsp.TextEdit]:
    """A shared-memory tiling skeleton above the loop (or line) with the strided access."""
    line0 = _enclosing_loop(doc, _fix_line0(f, data))
    ind = _indent(_line_text(doc, line0))
    tile = data.get("tile")
    dims = tile if isinstance(tile, str) and tile.startswith("[") else "[32][33]"
    array = data.get("array") if isinstance(data.get("array"), str) else "in"
    skeleton = [
        "// kerncast: stage the strided access through shared memory: each block loads a tile with",
        "// coalesced reads (consecutive threads, consecutive addresses), then reads it in any order.",
        f"__shared__ float tile{dims};  // one padding column: no bank conflicts on the transposed read",
        f"// tile[threadIdx.y][threadIdx.x] = {array}[(blockIdx.y * TILE + threadIdx.y) * width"
        " + blockIdx.x * TILE + threadIdx.x];",
        "// __syncthreads();",
        "// ... use tile[threadIdx.x][threadIdx.y] instead of the strided global access below ...",
    ]
    return [_insert_above(line0, "".join(f"{ind}{s}\n" for s in skeleton))]


def use_soa(doc: Doc, f: Finding, data: dict[str, Any]) -> list[lsp.TextEdit]:
    line0 = _fix_line0(f, data)
    text = _line_text(doc, line0)
    ind = _indent(text)
    m = re.search(r"\b([A-Za-z_]\w*)\s*\[[^\[\]]+\]\s*(?:\.|->)", text)
    array = data.get("array") if isinstance(data.get("array"), str) else m.group(1) if m else "items"
    note = [
        f"// kerncast: {array} is an array of structures: a warp reading one field strides by the struct size.",
        "// Store each field in its own array (structure of arrays) so consecutive threads read consecutive",
        f"// addresses, e.g. struct {{ float *x, *y, *z; }} {array}; ... {array}.x[i] instead of {array}[i].x",
    ]
    return [_insert_above(line0, "".join(f"{ind}{s}\n" for s in note))]


def annotation_text(launch: dict[str, Any] | None, data: dict[str, Any] | None = None) -> str:
    data = data or {}
    grid = data.get("grid") or (launch or {}).get("grid") or [1024]
    block = data.get("block") or (launch or {}).get("block") or [256]
    g = fmt_dim(grid) if isinstance(grid, list | tuple) else str(grid)
    b = fmt_dim(block) if isinstance(block, list | tuple) else str(block)
    return f"// kerncast: grid={g.replace('x', ',')} block={b.replace('x', ',')}"


def annotation_edit(doc: Doc, kernel_line0: int, launch: dict[str, Any] | None,
                    data: dict[str, Any] | None = None) -> lsp.TextEdit:
    line0 = kernel_line0
    # the annotation goes above the whole declaration: its `template<...>` and `__global__` lines too
    while line0 > 0 and re.match(r"\s*(template\s*<|__global__\b|extern\b|static\b)", _line_text(doc, line0 - 1)) \
            and not _line_text(doc, line0 - 1).rstrip().endswith((";", "}")):
        line0 -= 1
    return _insert_above(line0, f"{_indent(_line_text(doc, line0))}{annotation_text(launch, data)}\n")


FIXES = {
    "pad-shared-array": pad_shared_array,
    "swap-index-order": swap_index_order,
    "stage-through-shared-memory": stage_through_shared,
    "use-soa": use_soa,
}


def _kind(kind: Any) -> str:
    return str(getattr(kind, "value", kind) or "")


def _lines_overlap(a: lsp.Range, b: lsp.Range) -> bool:
    return a.start.line <= b.end.line and b.start.line <= a.end.line


def code_actions(report: FileReport, doc: Doc, rng: lsp.Range, gpus: list[str], current_gpu: str,
                 only: list[str] | None = None) -> list[lsp.CodeAction]:
    out: list[lsp.CodeAction] = []
    kernels = {k.name: k.to_json() for k in report.kernels}
    for f in all_findings(report):
        frange = finding_range(f, doc.lines)
        if f.fix is None or not _lines_overlap(frange, rng):
            continue
        diag = to_diagnostic(f, doc.uri, doc.lines)
        data = f.fix.data if isinstance(f.fix.data, dict) else {}
        if f.fix.kind in FIXES:
            edits = FIXES[f.fix.kind](doc, f, data)
            if edits:
                out.append(lsp.CodeAction(title=f"Kerncast: {f.fix.description}", kind=lsp.CodeActionKind.QuickFix,
                                          diagnostics=[diag], edit=_edit(doc, edits),
                                          is_preferred=f.fix.kind == "pad-shared-array" or None))
        elif f.fix.kind == "add-launch-annotation":
            k = kernels.get(f.kernel or "")
            out.append(lsp.CodeAction(title=f"Kerncast: {f.fix.description}", kind=lsp.CodeActionKind.QuickFix,
                                      diagnostics=[diag],
                                      edit=_edit(doc, [annotation_edit(doc, _fix_line0(f, data),
                                                                       (k or {}).get("launch"), data)])))
        elif f.fix.kind == "switch-gpu" and isinstance(data.get("gpu"), str):
            out.append(lsp.CodeAction(title=f"Kerncast: {f.fix.description}", kind=lsp.CodeActionKind.QuickFix,
                                      diagnostics=[diag],
                                      command=lsp.Command(title=f.fix.description, command=SELECT_GPU,
                                                          arguments=[data["gpu"]])))
    # on a kernel's name: add a launch annotation when the launch is not known, and switch GPU
    annotated = {a.title for a in out}
    for name, k in kernels.items():
        anchor = kernel_anchor(doc.lines, k)
        if anchor is None or not rng.start.line <= anchor.line <= rng.end.line:
            continue
        title = f"Kerncast: add a // kerncast: launch annotation for {name}"
        if not launch_known(k.get("launch")) and title not in annotated:
            out.append(lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix,
                                      edit=_edit(doc, [annotation_edit(doc, anchor.line, k.get("launch"))])))
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


__all__ = ["Doc", "code_actions", "SOURCE"]
