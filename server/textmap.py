"""An analysis's positions in the document's current text: line mapping through unsaved edits, and edits that
are checked against the text they will change.

An analysis is made from one version of a document (a `.cu` is analysed when it is saved), while the user goes
on typing. Everything the server answers later (hovers, lenses, hints, code actions) is computed on the
analysed text and carried into the current one through a line diff: lines the diff keeps map one to one, lines
inside a changed hunk map to nothing, and what sits on them is not offered. An edit is offered only when every
line it touches maps and the text it replaces is, in the current document, exactly the text it was made for.

Columns are code points here; `View` converts them to the client's unit (`positions`) as they leave.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

from kerncast.server.positions import UTF16, from_client, to_client
from lsprotocol import types as lsp


class LineMap:
    """Line numbers (0-based) of an analysed text in a current text and back, from a line diff.

    The common head and tail are matched directly (an edit touches a few lines of a file), the middle by
    difflib without its "popular line" heuristic, which would leave every `}` and blank line unmatched.
    """

    def __init__(self, old: Sequence[str], new: Sequence[str]) -> None:
        self.old_count, self.new_count = len(old), len(new)
        head = 0
        limit = min(len(old), len(new))
        while head < limit and old[head] == new[head]:
            head += 1
        tail = 0
        while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
            tail += 1
        #: matching blocks (old start, new start, length), sorted by their start in both texts
        blocks: list[tuple[int, int, int]] = [(0, 0, head)] if head else []
        old_mid, new_mid = old[head:len(old) - tail], new[head:len(new) - tail]
        if old_mid and new_mid:
            matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
            blocks += [(head + a, head + b, n) for a, b, n in matcher.get_matching_blocks() if n]
        if tail:
            blocks.append((len(old) - tail, len(new) - tail, tail))
        self.blocks = blocks
        self._old_starts = [a for a, _, _ in blocks]
        self._new_starts = [b for _, b, _ in blocks]
        #: the two texts have the same lines
        self.identical = head == len(old) == len(new)

    @staticmethod
    def _find(starts: list[int], blocks: list[tuple[int, int, int]], line: int, side: int) -> int | None:
        i = bisect.bisect_right(starts, line) - 1
        if i < 0:
            return None
        block = blocks[i]
        offset = line - block[side]
        return block[1 - side] + offset if 0 <= offset < block[2] else None

    def to_new(self, line: int) -> int | None:
        """The current line of an analysed line; None when it lies in a changed hunk."""
        return self._find(self._old_starts, self.blocks, line, 0)

    def to_old(self, line: int) -> int | None:
        """The analysed line of a current line; None when the line was typed or changed since."""
        return self._find(self._new_starts, self.blocks, line, 1)

    def to_old_at_or_above(self, line: int) -> int | None:
        """The analysed line of the nearest current line at or above `line` that maps (None when none does)."""
        for candidate in range(min(line, self.new_count - 1), -1, -1):
            old = self.to_old(candidate)
            if old is not None:
                return old
        return None


@dataclass
class View:
    """One analysis (its text's lines) seen from the document's current text, in the client's encoding.

    `version` is the current document version the answers are for, `versioned` whether the client takes
    `documentChanges` (then every edit names that version).
    """

    uri: str
    version: int | None
    old: list[str]
    new: list[str]
    encoding: str = UTF16
    versioned: bool = False
    map: LineMap = field(init=False)

    def __post_init__(self) -> None:
        self.map = LineMap(self.old, self.new)

    # ------------------------------------------------------------------------------------- positions

    def position_in(self, pos: lsp.Position) -> lsp.Position | None:
        """A client position in the current text as a code-point position in the analysed text."""
        line = self.map.to_old(pos.line)
        if line is None:
            return None
        return lsp.Position(line, from_client(self.new[pos.line], pos.character, self.encoding))

    def range_in(self, rng: lsp.Range) -> lsp.Range | None:
        """The analysed lines a client range covers (columns dropped: the features select by line), or None
        when none of its lines survived from the analysed text."""
        lines = [x for x in (self.map.to_old(n) for n in range(rng.start.line, rng.end.line + 1)) if x is not None]
        if not lines:
            return None
        return lsp.Range(lsp.Position(min(lines), 0), lsp.Position(max(lines), 0))

    def position_out(self, pos: lsp.Position) -> lsp.Position | None:
        """An analysed code-point position in the current text, in the client's unit; None on a changed line."""
        line = self._line_out(pos.line)
        if line is None:
            return None
        text = self.new[line] if line < len(self.new) else ""
        return lsp.Position(line, to_client(text, pos.character, self.encoding))

    def range_out(self, rng: lsp.Range) -> lsp.Range | None:
        """An analysed range in the current text, when every line it spans is there unchanged and in order."""
        lines = self._span_out(rng.start.line, rng.end.line)
        if lines is None:
            return None
        start, end = self.position_out(rng.start), self.position_out(rng.end)
        if start is None or end is None:
            return None
        return lsp.Range(start, end)

    def _line_out(self, line: int) -> int | None:
        if line == len(self.old) and (line == 0 or self.map.to_new(line - 1) == len(self.new) - 1):
            return len(self.new)  # the end of the text (after a final line break)
        return self.map.to_new(line)

    def _span_out(self, first: int, last: int) -> tuple[int, int] | None:
        start = self._line_out(first)
        if start is None:
            return None
        for n in range(first + 1, last + 1):
            if self._line_out(n) != start + (n - first):
                return None
        return start, start + (last - first)

    # ------------------------------------------------------------------------------------- edits

    @staticmethod
    def _slice(lines: list[str], start: lsp.Position, end: lsp.Position) -> str:
        """The text from `start` to `end` (code points), lines joined by `\\n`."""
        if start.line == end.line:
            text = lines[start.line] if start.line < len(lines) else ""
            return text[start.character:end.character]
        parts = [lines[start.line][start.character:] if start.line < len(lines) else ""]
        parts += lines[start.line + 1:end.line]
        parts.append(lines[end.line][:end.character] if end.line < len(lines) else "")
        return "\n".join(parts)

    def edit_out(self, edit: lsp.TextEdit) -> lsp.TextEdit | None:
        """An analysed code-point edit as an edit of the current text in the client's unit, or None when a line
        it touches changed or the text it replaces is no longer the text the fix was made for."""
        span = self._span_out(edit.range.start.line, edit.range.end.line)
        if span is None:
            return None
        delta = span[0] - edit.range.start.line
        moved_start = lsp.Position(edit.range.start.line + delta, edit.range.start.character)
        moved_end = lsp.Position(edit.range.end.line + delta, edit.range.end.character)
        if self._slice(self.old, edit.range.start, edit.range.end) != self._slice(self.new, moved_start, moved_end):
            return None
        rng = self.range_out(edit.range)
        return None if rng is None else lsp.TextEdit(range=rng, new_text=edit.new_text)

    def workspace_edit(self, edits: list[lsp.TextEdit]) -> lsp.WorkspaceEdit | None:
        """The edits, all carried into the current text, as one WorkspaceEdit (versioned where the client takes
        `documentChanges`); None when any of them cannot be carried: a fix is applied whole or not at all."""
        moved = [self.edit_out(e) for e in edits]
        if any(e is None for e in moved):
            return None
        done = [e for e in moved if e is not None]
        if self.versioned:
            return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                edits=done)])
        # no version to send: these edits were checked against the current text just now
        return lsp.WorkspaceEdit(changes={self.uri: done})
