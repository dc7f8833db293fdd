"""The language server's resident memory after documents closed while they were being analysed.

Nine PTX documents of about `--mb` megabytes each (nvcc's PTX of the repository's examples, kernels repeated
under names of their own, so no document reuses another's cached kernels) are opened in the real server over
stdio and closed `--close-after` seconds later, while their analyses run. The server must drop what those
analyses produce and give the memory back: once it is idle again its RSS should be within 50 MB of where it
started. An analysis still waiting for a worker when its document closes does not start (the server's CPU
seconds for the documents are reported). "start" is read after initialize; "warm" after one small document
was opened, analysed and closed (the modules an analysis loads, the power model among them, stay loaded: they
are not a per-document cost).

    .venv/bin/python benchmarks/closed_documents_rss.py [--mb 3] [--documents 9] [--close-after 1.0] [--rounds 2]

`--rounds 2` tells a leak (the RSS grows each round) from heap fragmentation (it levels off). The server runs on
the C allocator, which `malloc_trim` empties (`kerncast lsp` sets PYTHONMALLOC=malloc unless it is set), so
`PYTHONMALLOC=pymalloc` in front compares CPython's small-object allocator, whose 1 MB arenas stay mapped while
any object in them lives.

Measured on a loaded 2-core machine, 9 documents of 3 MB (638 kernels each) closed after 1 s: the server used
8-12 CPU seconds for them (their analyses stop at the close); it ended 40 MB above its start on the C allocator
(28 MB in another run), 120 MB above on CPython's allocator.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path) -> ModuleType:
    """A sibling script or test helper loaded from its file (neither folder is a package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fuzz_memory = _load("fuzz_memory", ROOT / "benchmarks" / "fuzz_memory.py")
RawClient = fuzz_memory.RawClient
rss_mb = fuzz_memory.rss_mb

_ENTRY_NAME_RE = re.compile(r"(\.entry\s+)([A-Za-z_$][\w$]*)")


def cpu_s(pid: int) -> float:
    """User plus system CPU seconds the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime, stime in clock ticks (USER_HZ = 100)


def wait_idle(pid: int, quiet_s: float = 3.0, timeout_s: float = 900.0) -> float:
    """Wait until the server used no CPU for `quiet_s` seconds; returns the seconds waited."""
    began = time.monotonic()
    last, since = cpu_s(pid), time.monotonic()
    while time.monotonic() - began < timeout_s:
        time.sleep(0.5)
        now = cpu_s(pid)
        if now - last > 0.02:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
    return time.monotonic() - began


def open_doc(server: RawClient, uri: str, text: str) -> None:
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "ptx", "version": 1, "text": text}}})


def close_doc(server: RawClient, uri: str) -> None:
    server.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})


def published(server: RawClient, uri: str) -> bool:
    """Whether the server published non-empty diagnostics for `uri` (drains the inbox)."""
    seen = False
    while not server.inbox.empty():
        msg = server.inbox.get()
        params = msg.get("params") or {}
        if msg.get("method") == "textDocument/publishDiagnostics" and params.get("uri") == uri:
            seen = seen or bool(params.get("diagnostics"))
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=3.0, help="size of each document")
    parser.add_argument("--documents", type=int, default=9)
    parser.add_argument("--close-after", type=float, default=1.0, help="seconds from open to close")
    parser.add_argument("--rounds", type=int, default=1,
                        help="open and close the documents this many times (is what stays bounded?)")
    args = parser.parse_args(argv)
    base = fuzz_memory.big_ptx(args.mb)
    texts = [_ENTRY_NAME_RE.sub(rf"\g<1>\g<2>_doc{i}", base) for i in range(args.documents * args.rounds)]
    small = fuzz_memory.big_ptx(0.05)
    server = RawClient()
    pid = server.proc.pid
    rows = []
    after_rounds: list[int] = []
    try:
        server.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"maxFileBytes": len(base.encode()) * 2, "analyzeOnChange": False}}})
        server.wait(lambda m: m.get("id") == 1, 120)
        server.send({"method": "initialized", "params": {}})
        wait_idle(pid)
        start = rss_mb(pid)
        warm_uri = "file:///tmp/kerncast-rss-warm.ptx"
        open_doc(server, warm_uri, small)
        server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == warm_uri, 600)
        close_doc(server, warm_uri)
        wait_idle(pid)
        warm, warm_cpu = rss_mb(pid), cpu_s(pid)
        for i, text in enumerate(texts):
            uri = f"file:///tmp/kerncast-rss-{i}.ptx"
            open_doc(server, uri, text)
            time.sleep(args.close_after)
            analysed_before_close = published(server, uri)
            close_doc(server, uri)
            rows.append({"document": i, "rss_mb_at_close": round(rss_mb(pid)),
                         "published_before_close": analysed_before_close})
            if (i + 1) % args.documents == 0:
                idle_s = wait_idle(pid)
                time.sleep(2)
                after_rounds.append(round(rss_mb(pid)))
        after, documents_cpu = rss_mb(pid), cpu_s(pid) - warm_cpu
        late = [i for i in range(len(texts)) if published(server, f"file:///tmp/kerncast-rss-{i}.ptx")]
    finally:
        server.close()
    print(json.dumps({
        "documents": len(texts), "mb_each": round(len(base) / 1e6, 1), "kernels_each": base.count(".entry"),
        "close_after_s": args.close_after, "closes": rows,
        "published_after_close": late, "idle_wait_s": round(idle_s, 1),
        "server_cpu_s_for_the_documents": round(documents_cpu, 1),
        "rss_mb_start": round(start), "rss_mb_warm": round(warm), "rss_mb_after_each_round": after_rounds,
        "rss_mb_after": round(after),
        "growth_from_start_mb": round(after - start), "growth_from_warm_mb": round(after - warm),
        "within_50_mb_of_start": after - start <= 50}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
