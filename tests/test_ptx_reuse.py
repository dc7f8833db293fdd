"""Parsing with reuse: an edited file parses only the functions whose text or position changed, and the
module is the one a fresh parse gives (functions, instructions with their lines and source locations)."""

from __future__ import annotations

import re

from kerncast.analysis.kernel_cache import entry_spans
from kerncast.analysis.ptx import parse_ptx, reuse
from kerncast.analysis.ptx.reuse import FunctionReuse


def _fresh_equal(module, text: str, path: str) -> None:
    fresh = parse_ptx(text, path)
    assert [f.name for f in module.functions] == [f.name for f in fresh.functions]
    for got, want in zip(module.functions, fresh.functions, strict=True):
        assert got == want  # dataclass equality: params, declarations, every instruction and its location
    assert module.files == fresh.files and module.globals == fresh.globals and module.errors == fresh.errors


def test_unchanged_functions_are_reused(compile_example) -> None:
    ptx = compile_example("transpose").ptx
    reuse = FunctionReuse()
    first = parse_ptx(ptx, "t.cu", reuse=reuse)
    assert (reuse.reused, reuse.parsed) == (0, 3)
    again = parse_ptx(ptx, "t.cu", reuse=reuse)
    assert (reuse.reused, reuse.parsed) == (3, 3)
    assert all(a is b for a, b in zip(again.kernels, first.kernels, strict=True))
    _fresh_equal(again, ptx, "t.cu")


def test_a_changed_function_is_parsed_again_and_moved_ones_too(compile_example) -> None:
    ptx = compile_example("transpose").ptx
    reuse = FunctionReuse()
    parse_ptx(ptx, "t.cu", reuse=reuse)
    last = ptx.rindex("ret;")  # inside the last kernel: the same lines, other text
    edited = ptx[:last] + "ret; " + ptx[last:]
    module = parse_ptx(edited, "t.cu", reuse=reuse)
    assert (reuse.reused, reuse.parsed) == (2, 4)
    _fresh_equal(module, edited, "t.cu")
    moved = "// a line above every function\n" + ptx  # every position changes: nothing is reused
    module = parse_ptx(moved, "t.cu", reuse=reuse)
    assert (reuse.reused, reuse.parsed) == (2, 7)
    _fresh_equal(module, moved, "t.cu")


def test_another_file_or_file_table_is_not_reused(compile_example) -> None:
    ptx = compile_example("transpose").ptx
    reuse = FunctionReuse()
    parse_ptx(ptx, "t.cu", reuse=reuse)
    parse_ptx(ptx, "other.cu", reuse=reuse)
    assert reuse.reused == 0
    renamed = ptx.replace('.file\t1 "', '.file\t1 "/elsewhere')
    assert renamed != ptx
    module = parse_ptx(renamed, "t.cu", reuse=reuse)
    assert reuse.reused == 0
    _fresh_equal(module, renamed, "t.cu")


def test_a_broken_function_does_not_hide_the_reused_ones(compile_example) -> None:
    """While a function is being edited its braces may not balance: the parser skips it as it would without
    reuse, and the functions after it (taken from the earlier parse) are still in the module."""
    ptx = compile_example("transpose").ptx
    reuse = FunctionReuse()
    parse_ptx(ptx, "t.cu", reuse=reuse)
    first_ret = ptx.index("ret;")
    close = ptx.index("}", first_ret)  # the first kernel's closing brace
    broken = ptx[:close] + "@@@" + ptx[close + 1:]
    module = parse_ptx(broken, "t.cu", reuse=reuse)
    assert reuse.reused == 2 and len(module.errors) == 1 and len(module.kernels) == 2
    _fresh_equal(module, broken, "t.cu")


def _moved_lines(ptx: str, by: int, below: int = 0) -> str:
    """The PTX nvcc writes after `by` lines were added to transpose.cu above its line `below`: the same text,
    every `.loc`/`inlined_at` line of that file past `below` moved by `by`."""
    index = re.search(r'^\s*\.file\s+(\d+)\s+"[^"]*transpose\.cu"', ptx, re.MULTILINE).group(1)
    loc = re.compile(rf"((?:^[ \t]*\.loc|inlined_at)[ \t]+{index}[ \t]+)(\d+)", re.MULTILINE)
    return loc.sub(lambda m: m.group(1) + str(int(m.group(2)) + (by if int(m.group(2)) > below else 0)), ptx)


def _source_lines(module) -> list[list[int]]:
    return [[i.loc.line if i.loc else 0 for i in fn.body] for fn in module.functions]


def test_functions_that_only_moved_in_the_source_are_copied_with_their_lines_moved(compile_example) -> None:
    """An edit above a kernel changes only the source lines of its `.loc` directives: the function is not parsed
    again but copied from the earlier parse with its lines moved, and equals a fresh parse."""
    ptx = compile_example("transpose").ptx
    reuse = FunctionReuse()
    first = parse_ptx(ptx, "t.cu", reuse=reuse)
    moved = _moved_lines(ptx, 3)
    assert moved != ptx
    module = parse_ptx(moved, "t.cu", reuse=reuse)
    assert (reuse.reused, reuse.parsed, reuse.moved) == (3, 3, 3)
    assert _source_lines(module) == [[ln + 3 if ln else 0 for ln in fn] for fn in _source_lines(first)]
    _fresh_equal(module, moved, "t.cu")
    # an edit between the kernels: the first stays where it was (taken as it is), the others move again
    below = max(i.loc.line for i in module.functions[0].body if i.loc)
    again = _moved_lines(moved, 2, below)
    module = parse_ptx(again, "t.cu", reuse=reuse)
    assert (reuse.reused, reuse.parsed, reuse.moved) == (6, 3, 5)
    _fresh_equal(module, again, "t.cu")


def test_a_function_whose_lines_moved_apart_or_are_written_otherwise_is_parsed_again(compile_example) -> None:
    """A line added inside a kernel moves only part of its lines: that is a change, parsed again; so is a `.loc`
    whose numbers are not written as nvcc writes them (the moved key does not read them)."""
    ptx = compile_example("transpose").ptx
    reuse = FunctionReuse()
    first = parse_ptx(ptx, "t.cu", reuse=reuse)
    lines = sorted({i.loc.line for i in first.functions[0].body if i.loc})
    inside = _moved_lines(ptx, 1, lines[len(lines) // 2])  # the first kernel's second half, and those below
    module = parse_ptx(inside, "t.cu", reuse=reuse)
    assert reuse.parsed == 4 and reuse.moved == 2
    _fresh_equal(module, inside, "t.cu")
    octal = re.sub(r"^(\s*\.loc\s+\d+\s+)(\d+)", lambda m: f"{m.group(1)}0{int(m.group(2)):o}",
                   _moved_lines(inside, 1), count=1, flags=re.MULTILINE)  # the same line, in octal
    module = parse_ptx(octal, "t.cu", reuse=reuse)
    assert reuse.parsed == 5 and reuse.moved == 4
    _fresh_equal(module, octal, "t.cu")


def test_functions_are_found_at_line_starts_as_a_multiline_anchor_finds_them() -> None:
    """The function scan (a pattern that begins with the newline before a line) finds the lines, names and
    spans that `^` under MULTILINE finds: on the first line, indented, after blank lines, on the last line
    without a newline, and not where `.entry` is inside a line."""
    text = (".visible .entry first()\n{\n}\n\n  \t.weak .func (.reg .b32 r) helper()\n{\n ret;\n}\n"
            "// not .entry here\n.file 1 \"a.cu\"\n\t.file 2 \"b.cu\"\n.entry last(){\n}")
    anchored = re.compile(r"^[ \t]*(?:\.(?:visible|weak|extern)[ \t]+)*\.(?:entry|func)\b", re.MULTILINE)
    expected = [text.count("\n", 0, m.start()) + 1 for m in anchored.finditer(text)]
    assert expected == [1, 5, 12]
    assert [line for line, _ in reuse.match_lines(text, reuse._START_RE)] == expected
    assert list(entry_spans(text)) == ["first", "last"]
    assert entry_spans(text) == {"first": (1, 3), "last": (12, 13)}
    assert [m.group(1) for _, m in reuse.match_lines(text, reuse._FILE_RE)] == ['.file 1 "a.cu"', '\t.file 2 "b.cu"']


def test_a_functions_end_is_its_closing_brace_or_a_declarations_semicolon() -> None:
    """The end of a function's text: the brace that closes its body (braces in comments and in nested blocks
    counted as the parser counts them), or the `;` of a declaration; parameter lines are passed over."""
    lines = [".visible .entry k(", "\t.param .u64 p_0, // {", "\t.param .u32 p_1", ")", "{", "\t{ // inner", "\t}",
             "\tret; // }", "}", ".func (.reg .b32 r) f(", "\t.param .b32 a", ");", ".entry e() { ret; }",
             ".entry open(", "\t.param .u32 q"]
    assert reuse.span_end(lines, 1) == 9
    assert reuse.span_end(lines, 10) == 12
    assert reuse.span_end(lines, 13) == 13
    assert reuse.span_end(lines, 14) == len(lines)  # no end: the text's last line
