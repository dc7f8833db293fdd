"""Text edits on the analysed source, built from the source model's offsets.

Fix builders say what to change in terms of offsets of the text the source model read; these helpers turn
that into `TextEdit`s (1-based lines and columns, end exclusive), the form every fix carries and the server
converts to LSP without looking at the text again.
"""

from __future__ import annotations

from kerncast.analysis.finding import TextEdit
from kerncast.analysis.source_model import SourceFacts


def replace(facts: SourceFacts, start: int, end: int, new_text: str) -> TextEdit:
    """Replace the text between two offsets."""
    line, col = facts.position(start)
    end_line, end_col = facts.position(end)
    return TextEdit(line, col, end_line, end_col, new_text)


def line_indent(facts: SourceFacts, line: int) -> str:
    """The leading whitespace of a 1-based line."""
    lines = facts.text.splitlines()
    text = lines[line - 1] if 1 <= line <= len(lines) else ""
    return text[: len(text) - len(text.lstrip())]


def insert_lines_above(facts: SourceFacts, line: int, lines: list[str]) -> TextEdit:
    """Insert whole lines above a 1-based line, indented as that line is."""
    indent = line_indent(facts, line)
    return TextEdit(line, 1, line, 1, "".join(f"{indent}{s}\n" for s in lines))


def launch_annotation_edit(facts: SourceFacts, kernel: str, grid: str, block: str) -> TextEdit | None:
    """A `// kerncast: grid=... block=...` line above the kernel's declaration (its `template` line too)."""
    kdef = facts.kernel(kernel, included=False)
    if kdef is None:
        return None
    line, _ = facts.position(kdef.start_offset)
    return insert_lines_above(facts, line, [f"// kerncast: grid={grid} block={block}"])
