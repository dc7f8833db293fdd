"""A raw JSON-RPC client for the language server on stdio, for messages no typed LSP client can send.

The tests use it to send requests whose parameters break the LSP schema; `benchmarks/fuzz_memory.py` uses it to
open one very large document and read the server's memory around it. Messages are framed with
`Content-Length` headers as the base protocol says; everything the server sends is queued by a reader thread.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from queue import Empty, Queue
from typing import Any

SERVER_COMMAND = [sys.executable, "-m", "kerncast.server", "lsp"]
#: seconds to wait for a response unless the caller says otherwise
DEFAULT_TIMEOUT_S = 60.0


class RawClient:
    """The real server as a subprocess, spoken to with framed JSON-RPC."""

    def __init__(self, command: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(command or SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.inbox: Queue[dict[str, Any]] = Queue()
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
                self.inbox.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def wait(self, match: Callable[[dict[str, Any]], bool], timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
        """The first message from the server that `match` accepts (earlier ones are dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.inbox.get(timeout=max(0.1, deadline - time.monotonic()))
            except Empty:
                raise TimeoutError(f"no matching message from the server within {timeout:g} s") from None
            if match(msg):
                return msg

    def reply_to(self, msg_id: int, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
        """The response with this id (server-to-client requests and notifications are skipped)."""
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def close(self) -> None:
        """Shut the server down politely, and kill it if it does not exit."""
        try:
            self.send({"id": 999_999, "method": "shutdown"})
            self.reply_to(999_999, 20)
            self.send({"method": "exit"})
            self.proc.wait(timeout=10)
        except (OSError, TimeoutError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
