"""Save -> diagnostics latency of the language server, against a bare `nvcc -ptx` of the same file.

Starts `kerncast lsp` over stdio with a real LSP client (pygls), opens each example, then saves it several
times with a line inserted at the top (every kernel's lines move, so no cached kernel result is reused) and
times didSave -> publishDiagnostics of that version. The baseline is `nvcc -ptx -arch=<arch>` of the same
file, run the same number of times. Prints the medians, the ratio (server / nvcc) and the server's resident
memory (VmRSS, and the peak VmHWM) after it has also produced a full report (LIME explanation included) of
one kernel of each file.

    .venv/bin/python benchmarks/lsp_latency.py [--repeat 5] [--arch sm_75] [FILE.cu ...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from nvcc_baseline import nvcc_times
from pygls import uris
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILES = sorted((ROOT / "examples").glob("*.cu"))


def rss_kib(pid: int) -> tuple[int, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("kerncast-latency", "0.1")
        self.arrivals: dict[tuple[str, int | None], float] = {}
        self.events: dict[tuple[str, int | None], asyncio.Event] = {}

    def event(self, uri: str, version: int | None) -> asyncio.Event:
        return self.events.setdefault((uri, version), asyncio.Event())


async def measure(files: list[Path], arch: str, repeat: int) -> int:
    client = Client()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        client.arrivals[(params.uri, params.version)] = time.perf_counter()
        client.event(params.uri, params.version).set()

    await client.start_io(sys.executable, "-m", "kerncast.server", "lsp")
    pid = client._server.pid  # noqa: SLF001 - the server process, for its memory
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), initialization_options={"arch": arch, "gpu": "v100"}))
    client.initialized(lsp.InitializedParams())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in files:
            path = Path(tmp) / src.name
            text = src.read_text()
            path.write_text(text)
            uri = uris.from_fs_path(str(path))
            client.text_document_did_open(lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="cuda-cpp", version=1, text=text)))
            await asyncio.wait_for(client.event(uri, 1).wait(), 300)  # warm-up: imports, first compile
            lat = []
            for i in range(repeat):
                version = i + 2
                text = f"// edit {i}\n" + text
                path.write_text(text)
                client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
                start = time.perf_counter()
                client.text_document_did_save(lsp.DidSaveTextDocumentParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri)))
                await asyncio.wait_for(client.event(uri, version).wait(), 300)
                lat.append(client.arrivals[(uri, version)] - start)
            base = nvcc_times(path, arch, repeat)
            rows.append((src.name, statistics.median(lat), statistics.median(base)))
            # open a kernel's full report, as a user does: it adds a LIME explanation (memory below)
            await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
                command="kerncast.showReport", arguments=[uri, {"line": 0, "character": 0}]))
            client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri)))
    rss, hwm = rss_kib(pid)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    print(f"{'file':<16} {'save->diagnostics':>18} {'nvcc -ptx':>10} {'ratio':>6}")
    for name, server_s, nvcc_s in rows:
        print(f"{name:<16} {server_s * 1e3:>15.0f} ms {nvcc_s * 1e3:>7.0f} ms {server_s / nvcc_s:>6.2f}")
    total_server = sum(r[1] for r in rows)
    total_nvcc = sum(r[2] for r in rows)
    print(f"{'all (sum)':<16} {total_server * 1e3:>15.0f} ms {total_nvcc * 1e3:>7.0f} ms "
          f"{total_server / total_nvcc:>6.2f}")
    print(f"server resident memory: {rss / 1024:.0f} MiB now, {hwm / 1024:.0f} MiB peak (VmRSS / VmHWM)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--repeat", type=int, default=5, help="saves (and nvcc runs) per file; default 5")
    parser.add_argument("--arch", default="sm_75")
    args = parser.parse_args()
    return asyncio.run(measure(args.files, args.arch, args.repeat))


if __name__ == "__main__":
    sys.exit(main())
