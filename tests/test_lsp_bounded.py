"""The language server with hostile inputs, through a raw JSON-RPC client over stdio: real server, real nvcc.

The library's bounds hold in the editor too: an `#include` of a device or a macro bomb is a diagnostic on its
line, a file-type check keeps the server from reading a FIFO or a device link, and `compileMemoryMB` reaches the
compiler (a function-like macro bomb fails on that limit, with the limit named).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from raw_lsp import RawClient
from test_bounded_compiles import function_bomb, object_bomb

#: seconds within which each hostile case must be answered (the bound the README states is 30 s)
ANSWER_S = 30


def _diagnostics(client: RawClient, path: Path, text: str) -> list[dict[str, Any]]:
    uri = path.as_uri()
    client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "cuda", "version": 1, "text": text}}})
    published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                             and m["params"]["uri"] == uri, ANSWER_S)
    return published["params"]["diagnostics"]


@pytest.fixture
def client():
    server = RawClient()
    server.send({"id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": None, "capabilities": {},
        "initializationOptions": {"compileMemoryMB": 512, "gpu": "v100"}}})
    assert "result" in server.reply_to(1, 120)
    server.send({"method": "initialized", "params": {}})
    try:
        yield server
    finally:
        server.close()


def test_hostile_sources_get_a_diagnostic_on_their_line(nvcc_available, client: RawClient, tmp_path: Path) -> None:
    src = tmp_path / "zero.cu"
    text = '// reads a device\n#include "/dev/zero"\n__global__ void k() {}\n'
    src.write_text(text)
    (diag,) = _diagnostics(client, src, text)
    assert diag["range"]["start"] == {"line": 1, "character": 9}
    assert '#include "/dev/zero" names /dev/zero, which is a character device' in diag["message"]
    bomb = tmp_path / "bomb.cu"
    bomb.write_text(object_bomb())
    (diag,) = _diagnostics(client, bomb, object_bomb())
    assert diag["range"]["start"]["line"] == 40 and "macro A40 expands to more than" in diag["message"]


def test_the_compile_memory_setting_reaches_nvcc(nvcc_available, client: RawClient, tmp_path: Path) -> None:
    src = tmp_path / "fbomb.cu"
    src.write_text(function_bomb())
    (diag,) = _diagnostics(client, src, function_bomb())
    assert diag["message"].startswith("nvcc ran out of its 256 MiB share of the 512 MiB compile memory limit "
                                      "(compileMemoryMB")


@pytest.mark.parametrize("kind", ["fifo", "device-link"])
def test_a_report_asked_for_a_fifo_or_a_device_link_is_refused_at_once(client: RawClient, tmp_path: Path,
                                                                       kind: str) -> None:
    path = tmp_path / "closed.cu"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    client.send({"id": 7, "method": "workspace/executeCommand", "params": {
        "command": "kerncast.showReport", "arguments": [path.as_uri(), "k"]}})
    reply = client.reply_to(7, ANSWER_S)
    assert reply.get("result") is None and "error" not in reply, reply
