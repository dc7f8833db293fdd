"""Documents closed before their analysis ran: the analysis does not start, nothing is published for them, and a
document reopened at once is analysed and published as usual (real nvcc PTX, the real server over stdio)."""

from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path

import pytest
from kerncast.analysis import pipeline
from kerncast.analysis.compile import CompileOptions, ToolchainError, compile_cuda, find_toolchain
from kerncast.analysis.stages.structure import structure_stage
from kerncast.analysis.toolchain import run_tool
from kerncast.server import config
from kerncast.server.cmd_lsp import ALLOCATOR_VARIABLE, SERVER_ALLOCATOR
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


def test_an_analysis_whose_document_was_closed_while_it_waited_does_not_start(ptx: str, monkeypatch) -> None:
    closed = threading.Event()
    report = _analyse_blocking("/tmp/waiting.ptx", ptx, config.Settings(), None, closed)
    assert report is not None and report.kernels  # open: analysed
    closed.set()
    read: list[str] = []
    monkeypatch.setattr(pipeline, "read_input", lambda path, *rest: read.append(str(path)))
    assert _analyse_blocking("/tmp/waiting.ptx", ptx, config.Settings(), None, closed) is None
    assert read == []  # not even the input was read


def _renamed_entries(ptx: str, suffix: str) -> str:
    """The PTX's kernels (from its first `.entry` on) again, each name given `suffix`."""
    body = ptx[re.search(r"^(?:\.visible\s+)?\.entry\s", ptx, re.MULTILINE).start():]
    return re.sub(r"(\.entry\s+)([A-Za-z_$][\w$]*)", rf"\g<1>\g<2>{suffix}", body)


def _open(client: RawClient, uri: str, text: str, version: int = 1) -> None:
    client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "ptx", "version": version, "text": text}}})


def _close(client: RawClient, uri: str) -> None:
    client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})


def _assert_on_the_c_allocator(pid: int) -> None:
    """The server re-executed itself on the C allocator, which gives a closed document's memory back
    (`cmd_lsp.with_c_allocator`), unless this environment chose an allocator itself."""
    if not sys.platform.startswith("linux") or ALLOCATOR_VARIABLE in os.environ:
        print(f"allocator not checked: {sys.platform}, {ALLOCATOR_VARIABLE}={os.environ.get(ALLOCATOR_VARIABLE)}")
        return
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert f"{ALLOCATOR_VARIABLE}={SERVER_ALLOCATOR}".encode() in environ


def test_documents_closed_at_once_publish_nothing_and_a_reopened_one_is_analysed(ptx: str) -> None:
    client = RawClient()
    uris = [f"file:///tmp/kerncast-closed-{i}.ptx" for i in range(4)]
    seen: list[dict] = []
    try:
        client.send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                                 "capabilities": {}}})
        assert "result" in client.reply_to(1, 120)
        _assert_on_the_c_allocator(client.proc.pid)
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


def test_an_analysis_stops_at_the_next_kernel_once_its_document_is_closed(ptx: str, monkeypatch) -> None:
    """The close is seen between kernels: of a file of four kernels, the one being analysed when the document
    closes is the last one any stage sees, and the analysis ends without a result."""
    four = ptx + _renamed_entries(ptx, "_copy")
    entered: list[str] = []
    closed = threading.Event()

    def first_stage(ctx) -> None:  # the pipeline's own first stage, after noting the kernel (and closing)
        entered.append(ctx.function.name)
        if len(entered) == 1 and close_now:
            closed.set()
        structure_stage(ctx)

    assert pipeline.STAGES[0] is structure_stage
    monkeypatch.setattr(pipeline, "STAGES", [first_stage, *pipeline.STAGES[1:]])
    close_now = False
    report = _analyse_blocking("/tmp/closing.ptx", four, config.Settings(), None, closed)
    assert report is not None and len(report.kernels) == len(entered) == 4  # open: every kernel analysed
    entered.clear()
    close_now = True
    assert _analyse_blocking("/tmp/closing.ptx", four, config.Settings(), None, closed) is None
    assert len(entered) == 1


def test_a_cancelled_tool_run_is_killed(tmp_path: Path) -> None:
    """ptxas (here a shell that would sleep for a minute) is killed when the analysis is cancelled, and the run
    ends as a killed one (never cached)."""
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    run = run_tool(["/bin/sh", "-c", "sleep 60"], 120, cancel=cancel)
    assert run.returncode < 0 and run.transient and not run.timed_out


def test_a_tool_run_cancelled_before_it_starts_is_not_started(tmp_path: Path) -> None:
    """A ptxas whose analysis was cancelled while it waited for a compile slot is never started (it would take
    the slot from a live analysis until the next look at the signal), and ends as a killed run."""
    cancel = threading.Event()
    cancel.set()
    marker = tmp_path / "started"
    run = run_tool(["/bin/sh", "-c", f"touch {marker}"], 10, cancel=cancel)
    assert not marker.exists() and run.returncode < 0 and run.transient and not run.timed_out
