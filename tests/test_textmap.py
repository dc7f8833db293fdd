"""The server's text mapping (`server/textmap.py`) and column units (`server/positions.py`): an analysis's
positions carried through unsaved edits, edits checked against the text they replace, and columns in UTF-16,
UTF-8 or UTF-32 as the client negotiated."""

from __future__ import annotations

from kerncast.server.positions import UTF8, UTF16, UTF32, from_client, range_to_client, split_lines, to_client
from kerncast.server.textmap import LineMap, View
from lsprotocol import types as lsp

EMOJI_LINE = "    /* 😀 */ __shared__ float tile[TILE_DIM][TILE_DIM];"

KERNEL = """\
#define TILE_DIM 32
__global__ void a(float *out)
{
    __shared__ float tile[TILE_DIM][TILE_DIM];
    out[0] = tile[threadIdx.x][0];
}

__global__ void b(float *out)
{
    out[threadIdx.x] = 0;
}
"""


def _edit(line: int, col: int, end_line: int, end_col: int, text: str) -> lsp.TextEdit:
    return lsp.TextEdit(range=lsp.Range(lsp.Position(line, col), lsp.Position(end_line, end_col)), new_text=text)


def _apply(lines: list[str], edit: lsp.TextEdit) -> list[str]:
    """Apply one code-point edit to lines (what an editor does with a UTF-32 position)."""
    text = "\n".join(lines)
    def offset(p: lsp.Position) -> int:
        return sum(len(x) + 1 for x in lines[: p.line]) + p.character
    start, end = offset(edit.range.start), offset(edit.range.end)
    return (text[:start] + edit.new_text + text[end:]).split("\n")


# ------------------------------------------------------------------------------------------ columns


def test_emoji_columns_in_each_encoding() -> None:
    col = EMOJI_LINE.index("TILE_DIM]", EMOJI_LINE.index("]["))  # the second TILE_DIM, in code points
    assert to_client(EMOJI_LINE, col, UTF16) == col + 1  # the emoji is two UTF-16 units
    assert to_client(EMOJI_LINE, col, UTF8) == col + 3  # and four UTF-8 bytes
    assert to_client(EMOJI_LINE, col, UTF32) == col
    for enc in (UTF8, UTF16, UTF32):
        assert from_client(EMOJI_LINE, to_client(EMOJI_LINE, col, enc), enc) == col


def test_columns_inside_a_character_and_past_the_end() -> None:
    at = EMOJI_LINE.index("😀")
    assert from_client(EMOJI_LINE, to_client(EMOJI_LINE, at, UTF16) + 1, UTF16) == at  # between its surrogates
    assert from_client(EMOJI_LINE, to_client(EMOJI_LINE, at, UTF8) + 2, UTF8) == at
    end16 = to_client(EMOJI_LINE, len(EMOJI_LINE), UTF16)
    assert end16 == len(EMOJI_LINE) + 1
    assert from_client(EMOJI_LINE, end16 + 4, UTF16) == len(EMOJI_LINE) + 4
    assert to_client("é", 1, UTF16) == 1 and to_client("é", 1, UTF8) == 2


def test_range_to_client_uses_the_line_each_end_is_on() -> None:
    lines = ["😀x", "ab"]
    rng = range_to_client(lines, lsp.Range(lsp.Position(0, 1), lsp.Position(1, 1)), UTF16)
    assert rng == lsp.Range(lsp.Position(0, 2), lsp.Position(1, 1))


def test_lines_break_only_where_lsp_breaks_them() -> None:
    assert split_lines("a\fb\r\nc\rd\u2028e\n") == ["a\fb", "c", "d\u2028e"]
    assert split_lines("a\n\n") == ["a", ""] and split_lines("") == [""]


# ------------------------------------------------------------------------------------------ line map


def test_lines_inserted_above_shift_everything_below() -> None:
    old = KERNEL.splitlines()
    new = [f"// typed {i}" for i in range(15)] + old
    m = LineMap(old, new)
    assert not m.identical
    assert [m.to_new(i) for i in range(len(old))] == [i + 15 for i in range(len(old))]
    assert [m.to_old(i) for i in range(15)] == [None] * 15
    assert m.to_old(15 + 3) == 3
    assert LineMap(old, list(old)).identical


def test_changed_lines_map_to_nothing_and_repeated_lines_still_map() -> None:
    old = KERNEL.splitlines()
    new = list(old)
    new[4] = "    out[0] = tile[0][threadIdx.x];"  # the read changed
    new.insert(7, "")  # and a blank line added between the kernels
    m = LineMap(old, new)
    assert m.to_new(4) is None and m.to_old(4) is None
    assert m.to_new(3) == 3 and m.to_new(5) == 5  # the `}` after the change maps although `}` repeats
    assert m.to_new(7) == 8 and m.to_new(len(old) - 1) == len(new) - 1
    assert m.to_old_at_or_above(4) == 3


# ------------------------------------------------------------------------------------------ edits


def _pad_edit(lines: list[str], line: int) -> lsp.TextEdit:
    """The pad fix of the analysed text: the last TILE_DIM of the declaration becomes TILE_DIM + 1."""
    text = lines[line]
    col = text.rindex("TILE_DIM]")
    return _edit(line, col, line, col + len("TILE_DIM"), "TILE_DIM + 1")


def test_an_edit_follows_its_line_and_checks_its_text() -> None:
    old = KERNEL.splitlines()
    new = [f"// typed {i}" for i in range(15)] + old
    view = View("file:///k.cu", 7, old, new, UTF16, versioned=True)
    moved = view.edit_out(_pad_edit(old, 3))
    assert moved is not None and moved.range.start.line == 18
    assert _apply(new, moved)[18] == "    __shared__ float tile[TILE_DIM][TILE_DIM + 1];"
    ws = view.workspace_edit([_pad_edit(old, 3)])
    assert ws is not None and ws.changes is None
    change = ws.document_changes[0]
    assert change.text_document.version == 7 and change.text_document.uri == "file:///k.cu"


def test_no_edit_on_a_changed_line() -> None:
    old = KERNEL.splitlines()
    new = list(old)
    new[3] = "    __shared__ float tile[TILE_DIM][TILE_DIM + 1];"  # the user padded it by hand
    view = View("file:///k.cu", 2, old, new, UTF16, versioned=False)
    assert view.edit_out(_pad_edit(old, 3)) is None
    assert view.workspace_edit([_pad_edit(old, 3), _edit(5, 0, 5, 1, "}")]) is None  # whole or nothing


def test_a_multi_line_edit_needs_every_line_unchanged() -> None:
    old = KERNEL.splitlines()
    body = _edit(2, 0, 5, 1, "{\n}")  # replace kernel a's body
    inside = list(old)
    inside[4] = "    out[1] = 0;"
    assert View("u", 2, old, inside).edit_out(body) is None
    above = ["// new"] + old
    moved = View("u", 2, old, above).edit_out(body)
    assert moved is not None and (moved.range.start.line, moved.range.end.line) == (3, 6)


def test_unversioned_edits_only_after_they_were_checked() -> None:
    old = KERNEL.splitlines()
    view = View("file:///k.cu", None, old, list(old), UTF16, versioned=False)
    ws = view.workspace_edit([_pad_edit(old, 3)])
    assert ws is not None and ws.document_changes is None and list(ws.changes) == ["file:///k.cu"]


def test_edit_columns_leave_in_the_client_unit() -> None:
    old = KERNEL.splitlines()
    old[3] = EMOJI_LINE
    new = ["#include <cstdio>"] + old
    for enc, extra in ((UTF16, 1), (UTF8, 3), (UTF32, 0)):
        view = View("u", 3, old, new, enc)
        moved = view.edit_out(_pad_edit(old, 3))
        assert moved is not None
        col = EMOJI_LINE.rindex("TILE_DIM]")
        assert moved.range.start == lsp.Position(4, col + extra)
        assert moved.range.end == lsp.Position(4, col + extra + len("TILE_DIM"))


def test_positions_in_from_the_client() -> None:
    old = KERNEL.splitlines()
    old[3] = EMOJI_LINE
    new = ["// a"] * 15 + old
    view = View("u", 3, old, new, UTF16)
    col = EMOJI_LINE.index("tile")
    assert view.position_in(lsp.Position(18, col + 1)) == lsp.Position(3, col)
    assert view.position_in(lsp.Position(2, 0)) is None
    assert view.range_in(lsp.Range(lsp.Position(0, 0), lsp.Position(2, 0))) is None
    assert view.range_in(lsp.Range(lsp.Position(14, 0), lsp.Position(16, 0))) == lsp.Range(
        lsp.Position(0, 0), lsp.Position(1, 0))
    assert view.position_out(lsp.Position(len(old), 0)) == lsp.Position(len(new), 0)  # the end of the text
