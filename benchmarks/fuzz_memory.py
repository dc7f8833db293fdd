"""The language server's resident memory around one large PTX document: before, analysed, after close.

A PTX file of about `--mb` megabytes is made from nvcc's PTX of the repository's examples (its kernels
repeated under new names), opened in the real server over stdio (raw JSON-RPC, `maxFileBytes` raised to fit),
and the server's RSS is read from /proc while it runs. Closing the document drops its results and gives the
freed heap back to the system, so "after close" should come back near "before".

    .venv/bin/python benchmarks/fuzz_memory.py [--mb 16]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from pathlib import Path

from kerncast.analysis.compile import CompileOptions, compile_cuda

ROOT = Path(__file__).resolve().parent.parent


def _load_raw_client() -> type:
    """The raw JSON-RPC client of the tests (`tests/raw_lsp.py`), loaded from its file: one client for both."""
    spec = importlib.util.spec_from_file_location("raw_lsp", ROOT / "tests" / "raw_lsp.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RawClient


RawClient = _load_raw_client()

_ENTRY_NAME_RE = re.compile(r"(\.entry\s+)([A-Za-z_$][\w$]*)")


def big_ptx(megabytes: float) -> str:
    """PTX of about `megabytes` MB: the examples' kernels repeated, each copy renamed."""
    result = compile_cuda(ROOT / "examples" / "matmul.cu", options=CompileOptions(arch="sm_80"),
                          with_resources=False)
    assert result.ok and result.ptx
    first = re.search(r"^(?:\.visible\s+)?\.entry\s", result.ptx, re.MULTILINE)
    assert first is not None
    header, body = result.ptx[:first.start()], result.ptx[first.start():]
    parts, size, n = [header], len(header), 0
    while size < megabytes * 1e6:
        copy = _ENTRY_NAME_RE.sub(rf"\g<1>\g<2>_{n}", body)
        parts.append(copy)
        size += len(copy)
        n += 1
    return "".join(parts)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=16.0)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for the analysis")
    args = parser.parse_args(argv)
    text = big_ptx(args.mb)
    uri = "file:///tmp/kerncast-memory-benchmark.ptx"
    server = RawClient()
    pid = server.proc.pid
    try:
        server.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"maxFileBytes": len(text.encode()) + 1024, "analyzeOnChange": False}}})
        server.wait(lambda m: m.get("id") == 1, 120)
        server.send({"method": "initialized", "params": {}})
        time.sleep(2)
        before = rss_mb(pid)
        began = time.time()
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "ptx", "version": 1, "text": text}}})
        published = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == uri, args.timeout)
        analysed_s = time.time() - began
        analysed = rss_mb(pid)
        server.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
        server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uri and not m["params"]["diagnostics"], 120)
        time.sleep(5)
        after = rss_mb(pid)
    finally:
        server.close()
    print(json.dumps({"ptx_mb": round(len(text) / 1e6, 1), "kernels": text.count(".entry"),
                      "diagnostics": len(published["params"]["diagnostics"]), "analysis_s": round(analysed_s, 1),
                      "rss_mb_before": round(before), "rss_mb_analysed": round(analysed),
                      "rss_mb_after_close": round(after)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
