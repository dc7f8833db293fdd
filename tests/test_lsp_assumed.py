"""A loop whose trip count stays assumed, in the editor: the real server over stdio, real nvcc,
`tests/assumed/csr_row.cu` (a CSR row loop whose bound is loaded from memory).

The lens says the loop is assumed, the loop's line carries the `assumed-trip-count` information, and its code
action (a snippet, never a quick fix) writes the `// kerncast: loops=10?` placeholder above the kernel. Saved
as written, the placeholder keeps the lens saying "assumed"; with a real value the lens stops saying it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient
from test_lsp import (
    LSP_MODULE,
    SERVER,
    V100_SM75,
    Session,
    _actions,
    apply_workspace_edit,
    needs_nvcc,
    start_session,
)

CSR = Path(__file__).resolve().parent / "assumed" / "csr_row.cu"

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]


@pytest_lsp.fixture(config=SERVER, scope="module", params=["visual_studio_code", "neovim@v0.7.0"])
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory):
    needs_nvcc()
    workdir = tmp_path_factory.mktemp("assumed")
    shutil.copy(CSR, workdir / CSR.name)
    await start_session(lsp_client, workdir, V100_SM75, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def s(client: LanguageClient) -> Session:
    return Session(client, client.workdir)


async def _lens(s: Session, uri: str) -> str:
    (lens,) = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert lens.command is not None
    return lens.command.title


async def _saved(s: Session, uri: str, text: str) -> None:
    version = s.change(uri, text)
    s.save(uri)
    await s.diagnostics(uri, version)


async def test_an_assumed_loop_count_is_shown_and_stated_by_its_action(s: Session) -> None:
    uri = s.open(CSR.name)
    diags = await s.diagnostics(uri)
    loop = s.line_of(uri, "for (int j = rowPtr[row]")
    (info,) = [d for d in diags if d.code == "assumed-trip-count"]
    assert info.range.start.line == loop and info.severity == lsp.DiagnosticSeverity.Information
    assert "loaded from global memory" in info.message and "assumed 10 from the default" in info.message
    title = await _lens(s, uri)
    assert ", 1 loop assumed ·" in title, title
    signature = s.line_of(uri, "__global__ void csrRowSpmv")
    hover = await s.hover(uri, signature, s.text(uri).splitlines()[signature].index("csrRowSpmv"))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "widened for 1 loop count assumed" in hover.contents.value  # the range says why it is wide
    assert "`assumed-trip-count`" in hover.contents.value

    acts = [a for a in await _actions(s, uri, loop) if "loops=N" in a.title]
    assert len(acts) == 1, [a.title for a in await _actions(s, uri, loop)]
    act = acts[0]
    assert act.title.startswith("Kerncast: snippet:") and act.kind == lsp.CodeActionKind.RefactorRewrite
    assert act.edit is not None
    new = apply_workspace_edit(s.text(uri), act.edit, uri, s.version(uri))
    lines = new.splitlines()
    assert lines[signature] == "// kerncast: loops=10?"
    assert lines[signature + 1].startswith("__global__ void csrRowSpmv(")

    # the placeholder written as offered is still an assumption: the lens keeps saying so
    await _saved(s, uri, new)
    assert ", 1 loop assumed ·" in await _lens(s, uri)
    assert not [a for a in await _actions(s, uri, loop + 1) if "loops=N" in a.title]  # written once

    # with the user's value the count is stated: no longer assumed, no information at the loop
    await _saved(s, uri, new.replace("loops=10?", "loops=16"))
    assert "assumed" not in await _lens(s, uri)
    assert not [d for d in await s.diagnostics(uri) if d.code == "assumed-trip-count"]
    s.close(uri)
