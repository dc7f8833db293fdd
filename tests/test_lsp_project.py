"""The language server on a CMake-style project: the real server over stdio, a real LSP client, real nvcc.

The project's header directory and its KC_TILE define exist only in its compile_commands.json, so the file
compiles only when the server finds that file by itself (no settings). A second workspace gives its include
directory as a relative `includeDirs` setting: it must resolve against the workspace folder, not the server's
working directory (the test runs the server from the repository root).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls import uris
from pytest_lsp import LanguageClient
from test_lsp import COLD_TIMEOUT_S as TIMEOUT_S
from test_lsp import LSP_MODULE, SERVER, Session, needs_nvcc, start_session

PROJECT = Path(__file__).resolve().parent / "cmake_project"

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]


def make_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    needs_nvcc()
    root = tmp_path_factory.mktemp("workspace")
    shutil.copytree(PROJECT, root / "cmake_project")
    plain = root / "plain"
    (plain / "headers").mkdir(parents=True)
    (plain / "headers" / "kc_config.h").write_text("#pragma once\nconstexpr int kc_tile = 8;\n")
    (plain / "scale.cu").write_text((PROJECT / "src" / "scale.cu").read_text())
    return root


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = make_workspace(tmp_path_factory)
    await start_session(lsp_client, root, {"gpu": "a100", "includeDirs": ["headers"]}, folders=[
        lsp.WorkspaceFolder(uri=uris.from_fs_path(str(root / "cmake_project")), name="cmake"),
        lsp.WorkspaceFolder(uri=uris.from_fs_path(str(root / "plain")), name="plain")])
    yield
    await lsp_client.shutdown_session()


async def _diagnostics(s: Session, uri: str) -> list[lsp.Diagnostic]:
    await s.wait_for(lambda: any(p.version == 1 for p in s.published(uri)), timeout=TIMEOUT_S)
    return await s.diagnostics(uri)


async def _strided_accesses(s: Session, uri: str) -> list[lsp.Diagnostic]:
    """The uncoalesced-access diagnostics of a document that compiled without an error."""
    diags = await _diagnostics(s, uri)
    assert not [d for d in diags if d.severity == lsp.DiagnosticSeverity.Error], [d.message for d in diags]
    return [d for d in diags if d.code == "uncoalesced-global"]


async def test_compile_commands_give_include_dir_and_define(client: LanguageClient) -> None:
    s = Session(client, client.workdir)
    uri = s.open("cmake_project/src/scale.cu")
    strided = await _strided_accesses(s, uri)
    assert strided and strided[0].range.start.line == 6  # in[i * kc_tile]: 32 floats apart (KC_TILE=32)
    assert "128 bytes apart" in strided[0].message
    hov = await s.hover(uri, 3, 18)
    assert hov is not None and "sm_80" in hov.contents.value  # the build's architecture
    s.close(uri)


async def test_relative_include_dirs_resolve_against_the_workspace_folder(client: LanguageClient) -> None:
    s = Session(client, client.workdir)
    uri = s.open("plain/scale.cu")
    strided = await _strided_accesses(s, uri)
    assert strided and "32 bytes apart" in strided[0].message  # kc_tile = 8 from plain/headers
    s.close(uri)


async def test_regenerated_compile_commands_is_read_again(client: LanguageClient) -> None:
    s = Session(client, client.workdir)
    db = client.workdir / "cmake_project" / "build" / "compile_commands.json"
    original = db.read_text()
    uri = s.open("cmake_project/src/scale.cu")
    first = await _diagnostics(s, uri)
    assert "128 bytes apart" in next(d for d in first if d.code == "uncoalesced-global").message
    db.write_text(original.replace("KC_TILE=32", "KC_TILE=4"))
    try:
        s.save(uri)  # same text: only the build changed
        await s.wait_for(lambda: any("16 bytes apart" in d.message for p in s.published(uri)
                                     for d in p.diagnostics), timeout=TIMEOUT_S)
    finally:
        db.write_text(original)
    s.close(uri)
