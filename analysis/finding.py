"""A finding and its parts: the source range it covers, the related locations that explain it and the fixes
(text edits) that remove it, with the helpers that place them on a line of the source.

These are the words every layer shares (a model's rule builds findings, the report holds them, the server
converts them), so they sit on the ground floor: this module imports only the rule registry and the JSON form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from kerncast.analysis.json_form import FieldsJson
from kerncast.analysis.rules import is_code

SEVERITIES = ("error", "warning", "information", "hint")


class Span(NamedTuple):
    """A range of a source file: 1-based lines and columns, end exclusive, as findings, their related locations
    and their edits all count them."""

    line: int
    column: int
    end_line: int
    end_column: int


class Spanned:
    """Mixin for what is placed on a source range (a finding, a related location, a text edit): the four fields
    of its range, in the order of a `Span`, read back as one value."""

    __slots__ = ()
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def span(self) -> Span:
        return Span(self.line, self.column, self.end_line, self.end_column)


@lru_cache(maxsize=4)
def source_lines(text: str) -> tuple[str, ...]:
    """The lines of a source text, split once per text: every kernel of a file places its findings on the
    same text."""
    return tuple(text.splitlines())


def source_line_range(lines: Sequence[str], line: int, column: int = 0) -> tuple[int, int]:
    """(start, end) columns, 1-based and end exclusive, of a finding on `line` of the analysed source: from
    `column` (or the first non-blank character when 0) to the end of the line's text."""
    if 1 <= line <= len(lines):
        text = lines[line - 1]
        start = column if column > 0 else len(text) - len(text.lstrip()) + 1
        end = len(text.rstrip()) + 1
        return start, max(end, start + 1)
    col = max(column, 1)
    return col, col + 1


def char_column(text: str, byte_column: int) -> int:
    """The 1-based column, in characters of `text`, of a 1-based column counted in UTF-8 bytes.

    nvcc's `.loc` columns count bytes of the source line, while findings count characters (as their end
    columns and every edit do): on a line with non-ASCII text before the access the two differ. A byte inside
    a character gives that character's column; a column past the end keeps its excess.
    """
    if byte_column <= 1 or text.isascii():
        return byte_column
    data = text.encode("utf-8", "surrogatepass")
    head = data[: byte_column - 1].decode("utf-8", "ignore")
    return len(head) + 1 + max(0, byte_column - 1 - len(data))


def line_range(source: str | None, line: int, byte_column: int = 0) -> tuple[int, int]:
    """(start, end) columns of a finding on `line` of the analysed source text: from an instruction's `.loc`
    column (counted in bytes; 0 for the line's first non-blank character) to the end of the line's text, as
    `source_line_range`; (1, 1) without a source text. The one place the findings turn a line into a range."""
    if not source:
        return 1, 1
    lines = source_lines(source)
    if byte_column > 0 and 1 <= line <= len(lines):
        byte_column = char_column(lines[line - 1], byte_column)
    return source_line_range(lines, line, byte_column)


@dataclass(frozen=True, slots=True)
class TextEdit(Spanned, FieldsJson):
    """Replace the text from (line, column) to (end_line, end_column) of the analysed file by `new_text`.

    1-based lines and columns, end exclusive, as findings use them; an empty range inserts. Edits are built
    by the rule that found the problem (clangd's fix-its), so the server only converts them.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


@dataclass(slots=True)
class Fix:
    """A fix attached to a finding: its kind (a `rules.FixKind`), a title, the concrete edits and their
    applicability (`safe`, `unsafe`, or `snippet` for a template that is offered as text, never as a fix).

    `data` keeps facts a reader may want (the array, the padding chosen); the edits alone say what changes.
    A fix without edits is advice only and no code action is offered for it.
    """

    kind: str
    description: str
    data: dict[str, Any] = field(default_factory=dict)
    edits: list[TextEdit] = field(default_factory=list)
    applicability: str = "safe"

    def to_json(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "description": self.description, "data": self.data,
                "applicability": self.applicability, "edits": [e.to_json() for e in self.edits]}


@dataclass(slots=True)
class Related(Spanned, FieldsJson):
    """A location that explains a finding (e.g. the shared array declaration behind a bank conflict)."""

    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    file: str | None = None


def line_related(source: str | None, line: int, message: str) -> Related:
    """A related location spanning the text of one line of the analysed source (see `line_range`)."""
    start, end = line_range(source, line)
    return Related(line, start, line, end, message)


@dataclass(slots=True)
class Finding(Spanned):
    """One finding at a source range (1-based lines and columns, end exclusive) of the analysed file, or of
    `file` when it is set: the header or included `.cu` that defines the kernel it is about (its fix's edits
    and related locations without a file of their own are that file's too)."""

    code: str
    severity: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    detail: dict[str, Any] = field(default_factory=dict)
    fix: Fix | None = None
    related: list[Related] = field(default_factory=list)
    kernel: str | None = None
    #: further fixes besides `fix` (e.g. a snippet beside a rewrite); see `fixes()`
    extra_fixes: list[Fix] = field(default_factory=list)
    file: str | None = None

    def fixes(self) -> list[Fix]:
        """Every fix of the finding, the first (`fix`) first."""
        return ([self.fix] if self.fix is not None else []) + list(self.extra_fixes)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")
        if not is_code(self.code):
            raise ValueError(f"finding code {self.code!r} has no rule in kerncast.analysis.rules")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": str(self.code), "severity": self.severity, "line": self.line, "column": self.column,
            "end_line": self.end_line, "end_column": self.end_column, "message": self.message,
        }
        if self.detail:
            out["detail"] = self.detail
        if self.fix is not None:
            out["fix"] = self.fix.to_json()
        if self.extra_fixes:
            out["fixes"] = [f.to_json() for f in self.fixes()]
        if self.related:
            out["related"] = [r.to_json() for r in self.related]
        if self.kernel is not None:
            out["kernel"] = self.kernel
        if self.file is not None:
            out["file"] = self.file
        return out
