"""A kernel whose code did not change but whose lines moved is not analysed again: its previous report is moved
to the new lines (`kernel_shift`), and the result is what a fresh analysis of the edited file gives (compared as
JSON, with real nvcc on the repository's own files). Edits: lines above every kernel, a kernel above grown by
comment lines (the kernels below move, the grown one is analysed again), a kernel above grown by an instruction
(the kernels below move in the source and in the PTX), and a `#define` above that changes a kernel's code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kerncast.analysis.finding import Finding, Related
from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.kernel_shift import relative_loc, shifted, shifted_text
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

ROOT = Path(__file__).resolve().parent.parent
KERNELS20 = ROOT / "benchmarks" / "data" / "kernels20.cu"
OPTIONS = AnalysisOptions(lime=False)
FIRST_BODY = "    if (i < n) y[i] = a * x[i];\n"


def _json(report) -> str:
    return json.dumps(report.to_json(), sort_keys=True)


def _edited(path: Path, text: str, edited: str) -> tuple[object, object, KernelCache, object]:
    """(the edited text analysed with the cache of the original's analysis, its fresh analysis, the cache, the
    original's analysis)."""
    cache = KernelCache()
    before = analyze_file(path, text=text, options=OPTIONS, cache=cache)
    return (analyze_file(path, text=edited, options=OPTIONS, cache=cache),
            analyze_file(path, text=edited, options=OPTIONS), cache, before)


@pytest.mark.parametrize("name", ["matmul.cu", "reduction.cu", "loops.cu", "fma_loop.cu"])
def test_lines_above_every_kernel_shift_every_report(nvcc_available, name: str) -> None:
    path = ROOT / "examples" / name
    text = path.read_text()
    cached, fresh, cache, before = _edited(path, text, "// one\n// two\n" + text)
    assert cache.counters.shifted == len(fresh.kernels) > 0
    assert _json(cached) == _json(fresh)


def test_a_kernel_grown_above_moves_only_the_kernels_below(nvcc_available) -> None:
    text = KERNELS20.read_text()
    assert text.count(FIRST_BODY) == 2  # the first kernel, and one further down
    grown = text.replace(FIRST_BODY, FIRST_BODY + "    // a comment\n", 1)
    cached, fresh, cache, before = _edited(KERNELS20, text, grown)
    # the first kernel's closing line moved, so it is analysed again; the 19 below only moved
    assert (cache.counters.misses - 20, cache.counters.shifted) == (20, 19)
    assert _json(cached) == _json(fresh)
    assert [k.line for k in cached.kernels] == [before.kernels[0].line] + [k.line + 1 for k in before.kernels[1:]]


def test_kernels_below_a_new_instruction_move_in_source_and_ptx(nvcc_available) -> None:
    """A statement added to the first kernel moves the kernels below by a source line and by PTX lines."""
    text = KERNELS20.read_text()
    grown = text.replace(FIRST_BODY, FIRST_BODY + "    if (i == 0) y[1] = a;\n", 1)
    cached, fresh, cache, before = _edited(KERNELS20, text, grown)
    assert cache.counters.shifted == 19
    assert _json(cached) == _json(fresh)


def test_a_define_above_that_changes_the_code_is_analysed_again(nvcc_available) -> None:
    """`TILE` is used by kernels below its `#define`; a new value changes their code, not their lines: those
    kernels are analysed again (never shifted from their old reports), the others are reused as they are."""
    text = KERNELS20.read_text()
    assert "#define TILE 32" in text
    cached, fresh, cache, before = _edited(KERNELS20, text, text.replace("#define TILE 32", "#define TILE 16"))
    assert cache.counters.shifted == 0
    assert 0 < cache.counters.misses - 20 < 20  # the kernels that use TILE, and only those
    assert _json(cached) == _json(fresh)


def test_shifted_text_moves_source_and_ptx_lines_apart() -> None:
    assert shifted_text("the loop at line 12 and lines 14, 15 and 20-22", 3) == \
        "the loop at line 15 and lines 17, 18 and 23-25"
    assert shifted_text("add.s32 at PTX line 40 is predicated (source line 7)", 2, 10) == \
        "add.s32 at PTX line 50 is predicated (source line 9)"
    assert shifted_text("line 0 has no place; 12 lines", 5) == "line 0 has no place; 12 lines"


def test_shifted_copies_and_leaves_the_original() -> None:
    finding = Finding("uncoalesced-global", "warning", 12, 5, 12, 20, "the access at line 12 ...",
                      detail={"lines": [12, 14], "condition_line": 11, "sectors": 8},
                      related=[Related(3, 1, 3, 10, "declared at line 3")])
    moved = shifted(finding, 4)
    assert (moved.line, moved.end_line, moved.column, moved.message) == (16, 16, 5, "the access at line 16 ...")
    assert moved.detail == {"lines": [16, 18], "condition_line": 15, "sectors": 8}
    assert (moved.related[0].line, moved.related[0].message) == (7, "declared at line 7")
    assert (finding.line, finding.detail["lines"], finding.related[0].line) == (12, [12, 14], 3)


def test_relative_loc_touches_only_the_analysed_files_lines() -> None:
    ptx = "\t.loc\t1 30 5\n\t.loc\t2 439 9, function_name $L__info_string0, inlined_at 1 31 9\n\t.loc\t1 0 0\n"
    assert relative_loc(ptx, "1", 30) == (
        "\t.loc\t1 @0 5\n\t.loc\t2 439 9, function_name $L__info_string0, inlined_at 1 @1 9\n\t.loc\t1 0 0\n")


def test_parts_without_a_line_are_shared_and_passed_over_next_time() -> None:
    """A save that moved every kernel shifts every report: the parts of a report that hold no line (a power
    explanation, an instruction mix) are shared with the copy, and with a memo not looked through again."""
    mix = {"ld.global": 3, "st.global": 1}
    report = {"line": 12, "mix": mix, "notes": ["no place named here"], "launch": [{"line": 40, "value": 256}]}
    fixed: dict[int, object] = {}
    moved = shifted(report, 4, 0, fixed)
    assert moved["line"] == 16 and moved["launch"] == [{"line": 44, "value": 256}]
    assert moved["mix"] is mix and moved["notes"] is report["notes"]  # shared, not copied
    assert moved["launch"] is not report["launch"] and report["launch"][0]["line"] == 40  # copied, original kept
    mix["ld.global"] = {"line": 99}  # a remembered part is not looked through again
    again = shifted(moved, 1, 0, fixed)
    assert again["mix"] is mix and again["line"] == 17
    assert shifted(moved, 1)["mix"]["ld.global"] == {"line": 100}  # without the memo it is
