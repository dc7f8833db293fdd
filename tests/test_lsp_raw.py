"""The language server through a raw JSON-RPC client: messages no typed client can send.

A request whose parameters break the LSP schema must get an error response (InvalidParams) instead of
silence, and the server must keep answering afterwards.
"""

from __future__ import annotations

from raw_lsp import RawClient


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
