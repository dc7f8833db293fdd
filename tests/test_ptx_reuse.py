"""Parsing with reuse: an edited file parses only the functions whose text or position changed, and the
module is the one a fresh parse gives (functions, instructions with their lines and source locations)."""

from __future__ import annotations

from kerncast.analysis.ptx import parse_ptx
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
