"""What a keystroke costs the language server in a `.ptx` document too large to analyse.

A PTX file of about `--mb` megabytes (over the default `maxFileBytes`) is opened in the real server over
stdio; the server refuses it with one diagnostic. Then `--keystrokes` single-character edits are sent as an
editor sends them (incremental `didChange`, analysis on change on), each followed, after the change debounce,
by a hover request. Per keystroke the script prints the server's CPU seconds until it is idle again and the
hover's answer time: after the first refusal a keystroke should cost only the editor protocol's own bookkeeping.

    .venv/bin/python benchmarks/large_file_keystrokes.py [--mb 200] [--keystrokes 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from closed_documents_rss import RawClient, cpu_s, fuzz_memory, rss_mb, wait_idle

ROOT = Path(__file__).resolve().parent.parent
#: seconds the server waits after a `.ptx` edit before analysing it (server.CHANGE_DEBOUNCE_S), plus a margin
AFTER_DEBOUNCE_S = 0.8


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--keystrokes", type=int, default=5)
    args = parser.parse_args(argv)
    text = fuzz_memory.big_ptx(args.mb)
    uri = "file:///tmp/kerncast-large-keystrokes.ptx"
    server = RawClient()
    pid = server.proc.pid
    rows = []
    try:
        server.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"analyzeOnChange": True}}})
        server.wait(lambda m: m.get("id") == 1, 120)
        server.send({"method": "initialized", "params": {}})
        wait_idle(pid)
        began, cpu0 = time.monotonic(), cpu_s(pid)
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "ptx", "version": 1, "text": text}}})
        refusal = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri, 600)
        refused_s = time.monotonic() - began
        wait_idle(pid, quiet_s=2.0)
        open_cpu = cpu_s(pid) - cpu0
        for i in range(args.keystrokes):
            cpu_before = cpu_s(pid)
            server.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": i + 2},
                "contentChanges": [{"range": {"start": {"line": 5, "character": 0},
                                              "end": {"line": 5, "character": 0}}, "text": "x"}]}})
            time.sleep(AFTER_DEBOUNCE_S)
            asked = time.monotonic()
            server.send({"id": 100 + i, "method": "textDocument/hover", "params": {
                "textDocument": {"uri": uri}, "position": {"line": 5, "character": 0}}})
            server.reply_to(100 + i, 600)
            hover_s = time.monotonic() - asked
            wait_idle(pid, quiet_s=1.5)
            rows.append({"keystroke": i + 1, "server_cpu_s": round(cpu_s(pid) - cpu_before, 2),
                         "hover_answer_s": round(hover_s, 3)})
        rss = rss_mb(pid)
    finally:
        server.close()
    print(json.dumps({"ptx_mb": round(len(text) / 1e6), "refusal": refusal["params"]["diagnostics"][0]["message"],
                      "refused_after_s": round(refused_s, 2), "open_cpu_s": round(open_cpu, 2),
                      "keystrokes": rows, "rss_mb": round(rss)}, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
