"""The language server through a raw JSON-RPC client: messages no typed client can send.

A request whose parameters break the LSP schema must get an error response (InvalidParams) instead of
silence, and the server must keep answering afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from queue import Empty, Queue
from typing import Any

SERVER_COMMAND = [sys.executable, "-m", "kerncast.server", "lsp"]
TIMEOUT_S = 60


class RawClient:
    """Writes framed JSON-RPC messages to the server's stdin and collects the framed replies on a thread."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.replies: Queue[dict[str, Any]] = Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is not None:
                self.replies.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def reply_to(self, msg_id: int) -> dict[str, Any]:
        """The response with this id (server-to-client requests and notifications are skipped)."""
        while True:
            try:
                msg = self.replies.get(timeout=TIMEOUT_S)
            except Empty:
                raise AssertionError(f"no response to request {msg_id} within {TIMEOUT_S} s") from None
            if msg.get("id") == msg_id and "method" not in msg:
                return msg

    def close(self) -> None:
        try:
            self.send({"id": 999, "method": "shutdown"})
            self.reply_to(999)
            self.send({"method": "exit"})
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def test_request_with_invalid_params_gets_an_error_response() -> None:
    client = RawClient()
    try:
        client.send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                                 "capabilities": {}}})
        assert "result" in client.reply_to(1)
        client.send({"method": "initialized", "params": {}})
        client.send({"id": 2, "method": "textDocument/hover",
                     "params": {"textDocument": 5, "position": "nowhere"}})
        reply = client.reply_to(2)
        assert reply.get("error", {}).get("code") == -32602, reply  # InvalidParams
        assert "textDocument/hover" in reply["error"]["message"]
        client.send({"id": 3, "method": "textDocument/codeLens", "params": {"textDocument": {}}})  # no uri
        assert client.reply_to(3).get("error", {}).get("code") == -32602
        # and the server keeps serving well-formed requests
        client.send({"id": 4, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": "file:///nowhere.cu"}, "position": {"line": 0, "character": 0}}})
        reply = client.reply_to(4)
        assert "error" not in reply and reply["result"] is None
    finally:
        client.close()
