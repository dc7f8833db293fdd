"""Answers on a document edited since its analysis, and columns in the negotiated encoding: the real server over
stdio, real nvcc, `examples/transpose.cu`.

A `.cu` is analysed when it is saved; the user then types without saving. Code actions, hovers, lenses and
inlay hints must follow the text where it moved, offer nothing for what changed, and never send an edit that
would land on other text. Three clients: VS Code (takes `documentChanges`, UTF-16), Neovim 0.7 (plain `changes`
only, UTF-16) and VS Code offering UTF-8 positions. Edits are applied here in the client's unit, as an editor
applies them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities
from test_lsp import LSP_MODULE, SERVER, V100_SM75, Session, _as_action, needs_nvcc, start_session

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DECL = "    __shared__ float tile[TILE_DIM][TILE_DIM];"
PADDED = "    __shared__ float tile[TILE_DIM][TILE_DIM + 1];"
READ = "        odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];"
TYPED = [f"// line {i} typed above the kernel, not saved" for i in range(15)]

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]

CLIENTS = {"vscode": "visual_studio_code", "neovim-0.7": "neovim@v0.7.0", "vscode-utf8": "visual_studio_code"}


def _units(text: str, encoding: str) -> list[int]:
    """Per character of `text`, its length in the encoding's units."""
    if encoding == "utf-8":
        return [len(ch.encode("utf-8")) for ch in text]
    if encoding == "utf-16":
        return [2 if ord(ch) > 0xFFFF else 1 for ch in text]
    return [1] * len(text)


def _offset(lines: list[str], pos: lsp.Position, encoding: str) -> int:
    """A client position as a code-point offset into the text (lines keep their line breaks)."""
    units, col = _units(lines[pos.line] if pos.line < len(lines) else "", encoding), 0
    while col < len(units) and sum(units[:col + 1]) <= pos.character:
        col += 1
    return sum(len(line) for line in lines[: pos.line]) + col


def apply_edit(text: str, edit: lsp.WorkspaceEdit, uri: str, version: int, encoding: str,
               versioned: bool) -> str:
    """Apply a WorkspaceEdit as an editor does: check the version it names, read columns in `encoding`."""
    if versioned:
        assert edit.changes is None and edit.document_changes
        edits = []
        for change in edit.document_changes:
            assert isinstance(change, lsp.TextDocumentEdit) and change.text_document.uri == uri
            assert change.text_document.version == version, "the edit is for another version of the document"
            edits.extend(change.edits)
    else:
        assert edit.document_changes is None and edit.changes is not None and set(edit.changes) == {uri}
        edits = list(edit.changes[uri])
    lines = text.splitlines(keepends=True)
    spans = sorted(((_offset(lines, e.range.start, encoding), _offset(lines, e.range.end, encoding), e.new_text)
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@pytest_lsp.fixture(config=SERVER, scope="module", params=list(CLIENTS))
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory):
    needs_nvcc()
    workdir = tmp_path_factory.mktemp("stale")
    shutil.copy(EXAMPLES / "transpose.cu", workdir / "transpose.cu")
    (workdir / "emoji.cu").write_text((EXAMPLES / "transpose.cu").read_text().replace(
        DECL, "    /* 😀 */ " + DECL.lstrip(), 1).replace(READ, "        /* 😀 */ " + READ.lstrip(), 1))
    caps = client_capabilities(CLIENTS[request.param])
    if request.param == "vscode-utf8":
        caps.general.position_encodings = [lsp.PositionEncodingKind.Utf8, lsp.PositionEncodingKind.Utf16]
    result = await start_session(lsp_client, workdir, V100_SM75, CLIENTS[request.param], caps)
    lsp_client.encoding = str(getattr(result.capabilities.position_encoding, "value",
                                      result.capabilities.position_encoding))
    lsp_client.versioned = request.param != "neovim-0.7"
    lsp_client.variant = request.param
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def s(client: LanguageClient) -> Session:
    return Session(client, client.workdir)


def _moved(diag: lsp.Diagnostic, lines: int) -> lsp.Diagnostic:
    """The diagnostic as an editor shows it after `lines` lines were typed above it (its `data` kept)."""
    r = diag.range
    return lsp.Diagnostic(range=lsp.Range(lsp.Position(r.start.line + lines, r.start.character),
                                          lsp.Position(r.end.line + lines, r.end.character)),
                          message=diag.message, severity=diag.severity, code=diag.code, source=diag.source,
                          data=diag.data)


async def _actions_at(s: Session, uri: str, line: int, typed_above: int = 0) -> list[lsp.CodeAction]:
    """The actions at a line of the current text, asked with the diagnostics the editor holds on it: the
    published ones, moved down by the `typed_above` lines typed since above every finding."""
    held = [_moved(d, typed_above) for d in s.client.diagnostics.get(uri, [])]
    got = await s.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
        context=lsp.CodeActionContext(diagnostics=[d for d in held
                                                   if d.range.start.line <= line <= d.range.end.line])))
    return [_as_action(a) for a in got or []]


def _pads(actions: list[lsp.CodeAction]) -> list[lsp.CodeAction]:
    return [a for a in actions if "pad the last dimension" in a.title]


def _apply(s: Session, uri: str, action: lsp.CodeAction) -> str:
    return apply_edit(s.text(uri), action.edit, uri, s.version(uri), s.client.encoding, s.client.versioned)


async def test_encoding_is_negotiated(s: Session) -> None:
    assert s.client.encoding == ("utf-8" if s.client.variant == "vscode-utf8" else "utf-16")


async def test_actions_follow_unsaved_lines_above(s: Session) -> None:
    """`#include` and comment lines typed at the top, not saved: the fix is asked where the finding was
    (nothing, or exactly the right edit) and where it is now (the fix, landing on the declaration)."""
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    analysed = s.text(uri)
    old_read, old_decl = s.line_of(uri, READ.strip()), s.line_of(uri, DECL.strip())
    s.change(uri, "#include <cstdio>\n" + "\n".join(TYPED) + "\n" + analysed)  # no save
    shift = 1 + len(TYPED)
    expected = analysed.splitlines()
    expected[old_decl] = PADDED
    expected = ["#include <cstdio>", *TYPED, *expected]

    for a in _pads(await _actions_at(s, uri, old_read, shift)):  # the stale line: now another line of the kernel
        assert _apply(s, uri, a).splitlines() == expected
    pads = _pads(await _actions_at(s, uri, old_read + shift, shift))
    assert len(pads) == 1
    assert _apply(s, uri, pads[0]).splitlines() == expected
    if s.client.versioned:
        assert pads[0].edit.document_changes[0].text_document.version == s.version(uri)
    assert pads[0].diagnostics and pads[0].diagnostics[0].range.start.line == old_read + shift
    assert not await _actions_at(s, uri, 3, shift)  # a typed line: nothing was analysed there
    s.close(uri)


async def test_no_fix_when_its_target_changed(s: Session) -> None:
    """The declaration edited by hand since the analysis: the pad fix was made for other text."""
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    read = s.line_of(uri, READ.strip())
    s.change(uri, s.text(uri).replace(DECL, "    __shared__ float tile[TILE_DIM][TILE_DIM  ];", 1))
    assert not _pads(await _actions_at(s, uri, read))
    s.close(uri)


async def test_hover_lenses_and_hints_follow_the_kernel(s: Session) -> None:
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    naive = s.line_of(uri, "__global__ void transposeNaive(")
    lines = s.text(uri).splitlines()
    s.change(uri, "\n".join(lines[:naive] + TYPED + lines[naive:]) + "\n")
    name_line = s.line_of(uri, "__global__ void transposeNaive(")
    assert name_line == naive + len(TYPED)
    col = s.text(uri).splitlines()[name_line].index("transposeNaive") + 3
    hov = await s.hover(uri, name_line, col)
    assert hov is not None and hov.contents.value.startswith("### transposeNaive — on ")
    assert await s.hover(uri, naive, col) is None  # a typed line
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    kernels = ("transposeNaive", "transposeTiled", "transposePadded")
    assert sorted(c.range.start.line for c in found) == [s.line_of(uri, f"__global__ void {k}(") for k in kernels]
    by_line = {c.range.start.line: c for c in found}
    assert by_line[name_line].command.arguments[1] == "transposeNaive"
    if s.client.variant.startswith("vscode"):
        text = s.text(uri).splitlines()
        hints = await s.client.text_document_inlay_hint_async(lsp.InlayHintParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(lsp.Position(0, 0), lsp.Position(len(text), 0))))
        assert sorted(h.position.line for h in hints) == sorted(by_line)
        assert all(text[h.position.line].rstrip().endswith(")") for h in hints)
    report = await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="kerncast.showReport", arguments=[uri, {"line": name_line + 3, "character": 0}]))
    assert report["markdown"].startswith("### transposeNaive")
    s.close(uri)


async def test_emoji_line_gets_the_right_edit(s: Session) -> None:
    uri = s.open("emoji.cu")
    diags = await s.diagnostics(uri)
    lines = s.text(uri).splitlines()
    read = next(i for i, t in enumerate(lines) if "😀" in t and "odata" in t)
    decl = next(i for i, t in enumerate(lines) if "😀" in t and "__shared__" in t)
    bank = next(d for d in diags if d.code == "shared-bank-conflict" and d.range.start.line == read)
    start = lines[read].index("odata")
    extra = {"utf-8": 3, "utf-16": 1}[s.client.encoding]  # the emoji before it, beyond its one code point
    assert bank.range.start.character == start + extra
    end = len(lines[read].rstrip())
    assert bank.range.end.character == end + extra
    for typed in (False, True):
        if typed:
            s.change(uri, "#include <cstdio>\n" + s.text(uri))
            read, decl = read + 1, decl + 1
        pads = _pads(await _actions_at(s, uri, read, int(typed)))
        assert len(pads) == 1
        new = _apply(s, uri, pads[0]).splitlines()
        assert new[decl] == "    /* 😀 */ __shared__ float tile[TILE_DIM][TILE_DIM + 1];"
        assert "tile[TILE_DIM][TILE_DIM + 1]" in new[decl]
        assert new[:decl] + new[decl + 1:] == s.text(uri).splitlines()[:decl] + s.text(uri).splitlines()[decl + 1:]
    s.close(uri)
