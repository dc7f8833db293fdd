"""The server's copy of a document (`server/documents.py`): incremental changes land where LSP puts them, on
LSP's lines (not at form feeds or U+2028) and in the client's column unit, in CRLF and CR texts too."""

from __future__ import annotations

import random

from kerncast.server.documents import Document, apply_change, line_start, offset_of
from kerncast.server.positions import UTF8, UTF16, UTF32, split_lines
from lsprotocol import types as lsp
from pygls.workspace.position_codec import PositionCodec


def _change(line: int, col: int, end_line: int, end_col: int, text: str) -> lsp.TextDocumentContentChangePartial:
    return lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(line, col), lsp.Position(end_line, end_col)), text=text)


def test_lines_start_after_each_kind_of_break() -> None:
    text = "a\nbb\r\nccc\rdddd"
    assert [line_start(text, n) for n in range(5)] == [0, 2, 6, 10, 14]
    assert [line_start("x\ny\n", n) for n in range(4)] == [0, 2, 4, 4]
    big = "line\n" * 3_000_000  # more than one counting slice
    assert line_start(big, 2_500_000) == 5 * 2_500_000


def test_form_feed_and_line_separator_do_not_break_lines() -> None:
    text = "int a;\f// page\nint b;\u2028c\nint d;\n"
    new = apply_change(text, _change(1, 4, 1, 5, "B"), UTF16)
    assert new == "int a;\f// page\nint B;\u2028c\nint d;\n"


def test_columns_in_the_client_unit() -> None:
    text = "/* 😀 */ x = 1;\n"
    x = text.index("x")
    for enc, col in ((UTF16, x + 1), (UTF8, x + 3), (UTF32, x)):
        assert offset_of(text, lsp.Position(0, col), enc) == x
        assert apply_change(text, _change(0, col, 0, col + 1, "y"), enc) == "/* 😀 */ y = 1;\n"


def test_a_column_past_the_end_of_its_line_is_the_line_end() -> None:
    assert apply_change("ab\ncd\n", _change(0, 9, 1, 0, ""), UTF16) == "abcd\n"
    assert apply_change("ab", _change(5, 0, 5, 0, "!"), UTF16) == "ab!"  # after the end of the text


def test_random_edits_match_a_line_by_line_reference() -> None:
    """Edits anywhere (CRLF, emoji, multi-line) agree with applying them to the LSP lines one by one."""
    rng = random.Random(7)
    words = ["a", "bc", "😀", "é", "\t", " "]
    for _ in range(300):
        lines = ["".join(rng.choice(words) for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(1, 6))]
        sep = rng.choice(["\n", "\r\n"])
        text = sep.join(lines) + rng.choice(["", sep])
        lines = split_lines(text)
        a = rng.randrange(len(lines))
        b = rng.randrange(a, len(lines))
        ca = rng.randint(0, len(lines[a]))
        cb = rng.randint(0, len(lines[b])) if b > a else rng.randint(ca, len(lines[a]))
        units = [sum(2 if ord(ch) > 0xFFFF else 1 for ch in line[:c]) for line, c in ((lines[a], ca), (lines[b], cb))]
        new = rng.choice(["", "x", "1\n2", "😀"])
        got = apply_change(text, _change(a, units[0], b, units[1], new), UTF16)
        flat = sep.join(lines)
        starts = [sum(len(x) + len(sep) for x in lines[:n]) for n in range(len(lines))]
        want = flat[:starts[a] + ca] + new + flat[starts[b] + cb:] + text[len(flat):]
        assert got == want, (text, a, ca, b, cb, new)


def test_document_applies_incremental_changes_and_whole_texts() -> None:
    doc = Document("file:///t.ptx", "a\fb\nc\n", version=1, position_codec=PositionCodec(UTF16))
    doc.apply_change(_change(1, 0, 1, 1, "C"))
    assert doc.source == "a\fb\nC\n"
    doc.apply_change(lsp.TextDocumentContentChangeWholeDocument(text="whole"))
    assert doc.source == "whole"
