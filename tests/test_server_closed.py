"""Documents closed before their analysis ran: the analysis does not start, nothing is published for them, and a
document reopened at once is analysed and published as usual (real nvcc PTX, the real server over stdio)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kerncast.analysis.compile import CompileOptions, ToolchainError, compile_cuda, find_toolchain
from kerncast.server import config
from kerncast.server.server import _analyse_blocking
from raw_lsp import RawClient

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ptx() -> str:
    try:
        find_toolchain()
    except ToolchainError as exc:
        pytest.skip(f"no CUDA toolchain, these tests analyse nvcc's PTX: {exc}")
    result = compile_cuda(ROOT / "examples" / "matmul.cu", options=CompileOptions(arch="sm_80"),
                          with_resources=False)
    assert result.ok and result.ptx
    return result.ptx


def test_an_analysis_whose_document_was_closed_while_it_waited_does_not_start(ptx: str) -> None:
    closed = threading.Event()
    report = _analyse_blocking("/tmp/waiting.ptx", ptx, config.Settings(), None, closed)
    assert report is not None and report.kernels  # open: analysed
    closed.set()
    assert _analyse_blocking("/tmp/waiting.ptx", ptx, config.Settings(), None, closed) is None


def _open(client: RawClient, uri: str, text: str, version: int = 1) -> None:
    client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "ptx", "version": version, "text": text}}})


def _close(client: RawClient, uri: str) -> None:
    client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})


def test_documents_closed_at_once_publish_nothing_and_a_reopened_one_is_analysed(ptx: str) -> None:
    client = RawClient()
    uris = [f"file:///tmp/kerncast-closed-{i}.ptx" for i in range(4)]
    seen: list[dict] = []
    try:
        client.send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                                 "capabilities": {}}})
        assert "result" in client.reply_to(1, 120)
        client.send({"method": "initialized", "params": {}})
        for uri in uris:  # more analyses than workers: the later ones wait, and are closed while they do
            _open(client, uri, ptx)
            _close(client, uri)
        _open(client, uris[0], ptx, version=2)

        def record(msg: dict) -> bool:
            if msg.get("method") == "textDocument/publishDiagnostics":
                seen.append(msg["params"])
                return msg["params"]["uri"] == uris[0] and msg["params"].get("version") == 2
            return False

        reopened = client.wait(record, 300)["params"]
        assert reopened["diagnostics"], reopened
        client.send({"id": 2, "method": "textDocument/hover", "params": {  # a round trip: all sent before it
            "textDocument": {"uri": uris[0]}, "position": {"line": 0, "character": 0}}})
        client.wait(lambda m: record(m) or (m.get("id") == 2 and "method" not in m), 60)
    finally:
        client.close()
    for params in seen:
        if params["uri"] != uris[0] or params.get("version") != 2:
            assert params["diagnostics"] == [], params  # a closed document's only publication clears it
