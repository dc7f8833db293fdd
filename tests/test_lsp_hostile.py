"""The language server against a hostile workspace, end to end: the real server over stdio, real nvcc.

Settings are data: defines that the compiler's shell would run are refused (and run nothing); a huge
timeout or a huge value is refused with a short message; a document whose path holds a space and non-ASCII
characters (which clients percent-encode) gets diagnostics, lenses and hovers under the client's URI; a save
after close publishes nothing. (Requests with invalid parameters: test_lsp_raw.py, which needs a raw client.)
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls import uris
from pytest_lsp import LanguageClient
from test_lsp import LSP_MODULE, SERVER, V100_SM75, needs_nvcc, start_session

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TIMEOUT_S = 90
#: the name of the directory and file with a space and non-ASCII characters
ODD_DIR, ODD_FILE = "dir with space", "kérnel ü.cu"

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]


def hostile_defines(marker_dir: Path) -> list[str]:
    """Defines that would create files in `marker_dir` if a shell ever interpreted them."""
    return [f"Y=$(touch {marker_dir}/dollar)", f"Z=`touch {marker_dir}/backtick`",
            f'Q="a";touch {marker_dir}/quote', f"S=1;touch {marker_dir}/semicolon", "GOOD=1"]


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    needs_nvcc()
    workdir = tmp_path_factory.mktemp("hostile")
    (workdir / ODD_DIR).mkdir()
    shutil.copy(EXAMPLES / "transpose.cu", workdir / ODD_DIR / ODD_FILE)
    shutil.copy(EXAMPLES / "saxpy.cu", workdir / "saxpy.cu")
    markers = workdir / "markers"
    markers.mkdir()
    lsp_client.markers = markers
    await start_session(lsp_client, workdir,
                        {**V100_SM75, "defines": hostile_defines(markers), "timeoutSeconds": 1e10})
    yield
    await lsp_client.shutdown_session()


async def wait_for(client: LanguageClient, condition: Any, timeout: float = TIMEOUT_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if client.error is not None:
            raise client.error
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("timed out waiting for the server")
        await asyncio.sleep(0.05)


def open_doc(client: LanguageClient, path: Path) -> str:
    uri = uris.from_fs_path(str(path))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="cuda-cpp", version=1, text=path.read_text(encoding="utf-8"))))
    return uri


def published(client: LanguageClient, uri: str) -> list[lsp.PublishDiagnosticsParams]:
    return [p for p in client.all_published if p.uri == uri]


def close_doc(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))


async def test_shell_defines_are_refused_and_run_nothing(client: LanguageClient) -> None:
    uri = open_doc(client, client.workdir / "saxpy.cu")
    await wait_for(client, lambda: any(p.version == 1 for p in published(client, uri)))
    diags = published(client, uri)[-1].diagnostics
    assert not [d for d in diags if d.code in ("compile-error", "internal-error")], diags  # GOOD=1 compiled
    messages = "\n".join(m.message for m in client.messages)
    for define in hostile_defines(client.markers)[:4]:
        assert f"define {define!r} rejected" in messages, (define, messages)
    assert "GOOD=1" not in messages
    # the same values arriving later through didChangeConfiguration are refused too
    n = len(published(client, uri))
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"kerncast": {"defines": [f"W=$(touch {client.markers}/later)"]}}))
    await wait_for(client, lambda: len(published(client, uri)) > n)
    assert any("later" in m.message and "rejected" in m.message for m in client.messages)
    assert list(client.markers.iterdir()) == []
    close_doc(client, uri)


async def test_huge_timeout_and_huge_values_are_refused_briefly(client: LanguageClient) -> None:
    await wait_for(client, lambda: any("kerncast.timeoutSeconds" in m.message for m in client.messages))
    timeout_msg = next(m.message for m in client.messages if "kerncast.timeoutSeconds" in m.message)
    assert "10000000000.0" in timeout_msg and "using 120.0" in timeout_msg
    n = len(client.messages)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"kerncast": {"arch": "x" * 200_000, "gpu": "*.toml"}}))
    await wait_for(client, lambda: len(client.messages) >= n + 2)
    new = [m.message for m in client.messages[n:]]
    assert any("kerncast.arch" in m and "200002 characters" in m for m in new), new
    assert any("kerncast.gpu" in m and "'*.toml'" in m for m in new), new
    assert all(len(m) < 1000 for m in new), [len(m) for m in new]
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"kerncast": {"gpu": "v100"}}))


async def test_path_with_space_and_non_ascii_gets_everything(client: LanguageClient) -> None:
    path = client.workdir / ODD_DIR / ODD_FILE
    uri = open_doc(client, path)
    assert "%20" in uri and "%C3%A9" in uri  # the client's percent-encoded form
    await wait_for(client, lambda: any(p.version == 1 for p in published(client, uri)))
    diags = published(client, uri)[-1].diagnostics
    assert any(d.code == "shared-bank-conflict" for d in diags), diags
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert len(lenses) == 3 and all(lens.command.arguments[0] == uri for lens in lenses)
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines) if "__global__ void transposeNaive" in text)
    hov = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line, lines[line].index("transposeNaive") + 2)))
    assert hov is not None and hov.contents.value.startswith("### transposeNaive")
    # a settings change republishes under the client's URI, not the server's decoded one
    n = len(client.all_published)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"kerncast": {"gpu": "a100"}}))
    await wait_for(client, lambda: any(p.uri == uri for p in client.all_published[n:]))
    assert not [p.uri for p in client.all_published if " " in p.uri or "é" in p.uri]
    close_doc(client, uri)


async def test_save_after_close_publishes_nothing(client: LanguageClient) -> None:
    start = len(client.all_published)  # saxpy.cu was opened and closed before: count only what follows

    def mine() -> list[lsp.PublishDiagnosticsParams]:
        return [p for p in client.all_published[start:] if p.uri == uri]

    uri = open_doc(client, client.workdir / "saxpy.cu")
    await wait_for(client, lambda: any(p.version == 1 for p in mine()))
    close_doc(client, uri)
    await wait_for(client, lambda: bool(mine()) and not mine()[-1].diagnostics)
    n = len(mine())
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    # a request answered after the save proves the server has handled the save notification
    await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(0, 0)))
    await asyncio.sleep(3)  # long enough for an analysis of saxpy.cu, had one been started
    assert len(mine()) == n, mine()[n:]
