"""Diagnostics of kernels defined in a header that an analysed document includes, published under the header.

A `.cu` that launches a kernel of `kernels.cuh` has that kernel's findings in its report's `included_kernels`,
on the header's lines. They are published under the header's URI, so the editor shows them in the header
(and in its problem list while the header is closed). A header that is open and has been analysed itself
(through the file that includes it) owns its diagnostics: its own analysis places the same kernel with its own
lenses and actions, and another document's report never overwrites it. Each document remembers the header
URIs it published to, so that a header no longer reported, or the document closing, clears them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kerncast.analysis.includes import header_text
from kerncast.analysis.report import FileReport
from kerncast.server import convert
from kerncast.server.positions import split_lines
from lsprotocol import types as lsp
from pygls import uris


class Publisher(Protocol):
    """What this module needs of the server: its document keys, its published results, and publishing."""

    published: dict

    @property
    def encoding(self) -> str: ...

    def key(self, uri: str) -> str: ...

    def document(self, key: str) -> object: ...

    def text_document_publish_diagnostics(self, params: lsp.PublishDiagnosticsParams) -> None: ...


class HeaderDiagnostics:
    """The headers each analysed document published diagnostics under: document key -> {header key: URI}."""

    def __init__(self) -> None:
        self.sent: dict[str, dict[str, str]] = {}

    def publish(self, server: Publisher, key: str, report: FileReport) -> None:
        """Publish the findings of `report`'s included kernels under their files' URIs, and clear the headers
        this document published to before that its report no longer names."""
        now: dict[str, str] = {}
        for path, kernels in report.included_by_file().items():
            uri = uris.from_fs_path(path)
            if uri is None:
                continue
            header = server.key(uri)
            now[header] = uri
            if self._owned(server, header):
                continue
            own = FileReport(file=path, gpu=report.gpu, kernels=kernels)  # the header's part, as its own report
            diagnostics = convert.to_diagnostics(own, uri, self._lines(server, header, path), server.encoding)
            server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
        before, self.sent[key] = self.sent.get(key, {}), now
        for header, uri in before.items():
            if header not in now:
                self._clear(server, header, uri)

    def forget(self, server: Publisher, key: str) -> None:
        """The document `key` closed: clear the headers it published to, and, when it was itself such a header,
        publish again what the open documents that include it found in it."""
        for header, uri in self.sent.pop(key, {}).items():
            self._clear(server, header, uri)
        for other, headers in list(self.sent.items()):
            result = server.published.get(other)
            if key in headers and result is not None:
                self.publish(server, other, result.report)

    @staticmethod
    def _owned(server: Publisher, header: str) -> bool:
        """Whether the header is open with an analysis of its own, which then decides its diagnostics."""
        return server.published.get(header) is not None

    def _clear(self, server: Publisher, header: str, uri: str) -> None:
        """Clear a header's diagnostics, unless it owns them or another document still publishes to it."""
        if not self._owned(server, header) and not any(header in s for s in self.sent.values()):
            server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @staticmethod
    def _lines(server: Publisher, header: str, path: str) -> list[str]:
        """The header's lines, which the diagnostics' columns are measured on: the editor's text while it is
        open, else the file's."""
        doc = server.document(header)
        text = getattr(doc, "source", None) if doc is not None else None
        if not isinstance(text, str):
            text = header_text(Path(path)) or ""
        return split_lines(text)
