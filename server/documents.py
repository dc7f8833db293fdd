"""The server's copy of an open document: incremental changes applied where LSP says they are, in time that
does not grow with the lines of the document.

pygls applies an incremental change by splitting the whole text into lines and writing every line again, in
Python: about 8 s per keystroke in a 200 MB `.ptx` (which Kerncast then refuses in a length check), with the
editor's requests waiting behind it. Its lines are also `str.splitlines`'s, which break at form feeds and
U+2028 where LSP (and the editor) does not, so an edit below such a character landed on the wrong line. Here a
change finds its line by counting `\\n` in large slices (C speed), converts its column from the client's unit
on that one line, and splices the text once.
"""

from __future__ import annotations

from typing import Any

from kerncast.server.positions import encoding_name, from_client
from lsprotocol import types as lsp
from pygls.workspace import TextDocument, Workspace

#: characters counted per step while looking for a line
_SLICE = 1 << 20


def line_start(text: str, line: int) -> int:
    """The offset where 0-based `line` starts (LSP breaks: `\\n`, `\\r\\n`, `\\r`); the text's length past its end."""
    if line <= 0:
        return 0
    if "\r" in text and text.count("\r") != text.count("\r\n"):  # a lone `\r` (CRLF counts as its `\n`)
        return _line_start_any_break(text, line)
    pos, left = 0, line
    while True:  # skip whole slices that hold fewer breaks than are left to pass
        end = min(len(text), pos + _SLICE)
        found = text.count("\n", pos, end)
        if found >= left or end == len(text):
            break
        left, pos = left - found, end
    for _ in range(left):
        at = text.find("\n", pos)
        if at < 0:
            return len(text)
        pos = at + 1
    return pos


def _line_start_any_break(text: str, line: int) -> int:
    """`line_start` for a text with lone carriage returns (rare: one step per line)."""
    pos = 0
    for _ in range(line):
        nl, cr = text.find("\n", pos), text.find("\r", pos)
        if nl < 0 and cr < 0:
            return len(text)
        if cr < 0 or 0 <= nl < cr:  # a `\n` first
            pos = nl + 1
            continue
        pos = cr + 2 if text.startswith("\r\n", cr) else cr + 1
    return pos


def offset_of(text: str, pos: lsp.Position, encoding: str) -> int:
    """The string offset of an LSP position (a column past the line's end is its end)."""
    start = line_start(text, pos.line)
    ends = [at for at in (text.find("\n", start), text.find("\r", start)) if at >= 0]
    end = min(ends) if ends else len(text)
    return start + min(from_client(text[start:end], pos.character, encoding), end - start)


def apply_change(text: str, change: Any, encoding: str) -> str:
    """The text after one `didChange` content change (a range with its new text, or the whole text)."""
    rng = getattr(change, "range", None)
    if rng is None:
        return change.text
    start, end = offset_of(text, rng.start, encoding), offset_of(text, rng.end, encoding)
    return text[:start] + change.text + text[max(start, end):]


class Document(TextDocument):
    """pygls's text document, with `apply_change` above for incremental changes."""

    def _apply_incremental_change(self, change: lsp.TextDocumentContentChangePartial) -> None:
        self._source = apply_change(self.source, change, encoding_name(self.position_codec.encoding))


class DocumentWorkspace(Workspace):
    """pygls's workspace, making `Document`s of the documents the client opens."""

    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return Document(doc_uri, source=source, version=version, language_id=language_id,
                        sync_kind=self._sync_kind, position_codec=self.position_codec)
