"""The kernel corpus: every `// expect: <code>` comment must be found on its line, and no other memory
warning may appear. Compiles each `tests/kernels/*.cu` once per session through the normal pipeline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kerncast.analysis.findings.memory_access import unit_stride_sectors
from kerncast.analysis.memory.analysis import AccessInfo
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport

KERNELS = Path(__file__).resolve().parent / "kernels"
CODES = ("uncoalesced-global", "shared-bank-conflict", "divergent-branch", "unknown-access")
_EXPECT = re.compile(r"//\s*expect:\s*([\w\-, ]+)")


def expected_findings(path: Path, codes: tuple[str, ...] | None = CODES) -> set[tuple[int, str]]:
    """The (line, code) pairs the file's `// expect:` comments name, of `codes` (of every code with None):
    the corpus files also plant the findings other tests check."""
    out: set[tuple[int, str]] = set()
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        m = _EXPECT.search(line)
        if m:
            out.update((n, c.strip()) for c in m.group(1).split(",")
                       if c.strip() and (codes is None or c.strip() in codes))
    return out


@pytest.fixture(scope="session")
def corpus(nvcc_available) -> dict[str, FileReport]:
    """Each corpus file analysed once (nvcc runs once per file per session)."""
    return {p.name: analyze_file(p) for p in sorted(KERNELS.glob("*.cu"))}


def _warnings(report: FileReport) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in report.all_findings()
            if f.code in CODES and f.severity in ("warning", "error")}


def test_corpus_compiles(corpus: dict[str, FileReport]) -> None:
    for name, rep in corpus.items():
        assert rep.ok, (name, [f.message for f in rep.findings])
        assert rep.kernels, name


@pytest.mark.parametrize("name", sorted(p.name for p in KERNELS.glob("*.cu")))
def test_expected_findings_exactly(corpus: dict[str, FileReport], name: str) -> None:
    expected = expected_findings(KERNELS / name)
    found = _warnings(corpus[name])
    assert expected - found == set(), f"missed in {name}"
    assert found - expected == set(), f"false warnings in {name}"


def test_precision_recall(corpus: dict[str, FileReport]) -> None:
    tp = fp = fn = 0
    for name, rep in corpus.items():
        expected = expected_findings(KERNELS / name)
        found = _warnings(rep)
        tp += len(expected & found)
        fp += len(found - expected)
        fn += len(expected - found)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"memory corpus: {tp} found, {fp} false, {fn} missed; precision {precision:.2f}, recall {recall:.2f}")
    assert precision == 1.0 and recall == 1.0


def _finding(corpus: dict[str, FileReport], file: str, kernel: str, code: str):
    k = corpus[file].kernel(kernel)
    assert k is not None, kernel
    matches = [f for f in k.findings if f.code == code]
    assert matches, (kernel, [f.code for f in k.findings])
    return matches[0]


def test_stride_two_numbers_in_ncu_terms(corpus: dict[str, FileReport]) -> None:
    f = _finding(corpus, "strided.cu", "strideTwo", "uncoalesced-global")
    assert "8 sectors per request, ideal 4 (50% excessive)" in f.message
    assert f.detail["sectors_per_request"] == 8 and f.detail["ideal_sectors"] == 4
    assert f.detail["lane_stride_bytes"] == 8
    assert f.detail["assumed_block"] == [256, 1, 1]
    assert f.column >= 1 and f.end_column > f.column


def test_double_stride_two_ideal_is_eight_sectors(corpus: dict[str, FileReport]) -> None:
    f = _finding(corpus, "strided.cu", "strideTwoDouble", "uncoalesced-global")
    assert f.detail["ideal_sectors"] == 8 and f.detail["sectors_per_request"] == 16


def test_aos_suggests_structure_of_arrays(corpus: dict[str, FileReport]) -> None:
    f = _finding(corpus, "aos.cu", "moveAos", "uncoalesced-global")
    assert f.fix is not None and f.fix.kind == "use-soa" and f.fix.applicability == "snippet"
    assert f.detail["lane_stride_bytes"] == 12


def test_transposed_store_is_rewritten_tiled(corpus: dict[str, FileReport]) -> None:
    f = _finding(corpus, "transpose.cu", "transposeNaive", "uncoalesced-global")
    assert f.fix is not None and f.fix.kind == "tiled-transpose" and f.fix.applicability == "safe"
    (edit,) = f.fix.edits
    body = edit.new_text
    assert "__shared__ float tile[TILE][TILE + 1];" in body and "__syncthreads();" in body
    assert body.index("tile[threadIdx.y + j][threadIdx.x] = in[") < body.index("__syncthreads();") \
        < body.index("out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];")
    assert f.detail["assumed_block"] == [32, 8, 1]


def test_bank_conflict_pads_the_declaration(corpus: dict[str, FileReport]) -> None:
    f = _finding(corpus, "transpose.cu", "transposeTiled", "shared-bank-conflict")
    assert "32-way bank conflict: 32 wavefronts instead of 1" in f.message
    assert f.fix is not None and f.fix.kind == "pad-shared-array" and f.fix.applicability == "safe"
    src = (KERNELS / "transpose.cu").read_text().splitlines()
    line = f.fix.data["line"]
    assert "__shared__ float tile[TILE][TILE];" in src[line - 1]
    (edit,) = f.fix.edits  # the last dimension of transposeTiled's own tile, not transposePadded's
    assert edit.line == edit.end_line == line and edit.new_text == "TILE + 1"
    assert src[line - 1][edit.column - 1:edit.end_column - 1] == "TILE"
    assert src[line - 1][:edit.column - 1].endswith("tile[TILE][")
    assert f.related and f.related[0].line == line


def test_strided_reduction_conflict_and_sequential_fix(corpus: dict[str, FileReport]) -> None:
    f = _finding(corpus, "reduction.cu", "reduceStrided", "shared-bank-conflict")
    assert f.detail["ways"] >= 2
    assert f.fix is not None and f.fix.kind == "sequential-addressing" and f.fix.applicability == "snippet"
    assert all(ln.lstrip().startswith("//") for e in f.fix.edits for ln in e.new_text.splitlines())


def test_divergent_branch_names_the_lane_operand(corpus: dict[str, FileReport]) -> None:
    f = _finding(corpus, "reduction.cu", "reduceInterleaved", "divergent-branch")
    assert "threadIdx.x" in f.message
    assert f.detail["depends_on"] == ["threadIdx.x"]


def test_gathers_are_information_only(corpus: dict[str, FileReport]) -> None:
    k = corpus["gather.cu"].kernel("gather")
    assert k is not None
    notes = [f for f in k.findings if f.code == "unknown-access"]
    assert notes and all(f.severity == "information" for f in notes)


def test_header_lines_are_attributed_to_the_analysed_file(corpus: dict[str, FileReport]) -> None:
    n_lines = len((KERNELS / "gather.cu").read_text().splitlines())
    for f in corpus["gather.cu"].all_findings():
        assert f.line >= 1 and f.line <= n_lines


def test_near_broadcast_is_not_uncoalesced(corpus: dict[str, FileReport]) -> None:
    """a[y * n + k] under a 16x16 block: 2 sectors per request, more than its own ideal of 1, but fewer than
    the 4 a unit-stride load of the warp would move: not something to fix."""
    k = corpus["broadcast.cu"].kernel("rowDot")
    assert k is not None and not [f for f in k.findings if f.code == "uncoalesced-global"]


def test_unit_stride_reference_counts_the_active_lanes() -> None:
    full = AccessInfo(0, 1, "global", "load", 4, sectors_per_request=2, ideal_sectors=1, active_lanes=32)
    half = AccessInfo(0, 1, "global", "load", 8, active_lanes=16)
    assert unit_stride_sectors(full) == 4 and unit_stride_sectors(half) == 4


def test_row_walk_is_not_taken_for_an_array_of_structs(corpus: dict[str, FileReport]) -> None:
    """rowSums reads a[r * cols + c] unrolled: neighbouring offsets with a 16 KB lane stride are a matrix row,
    not the fields of a struct, so the snippet offered is staging through shared memory."""
    f = _finding(corpus, "matrix_walk.cu", "rowSums", "uncoalesced-global")
    assert f.fix is not None and f.fix.kind == "stage-through-shared-memory" and f.fix.applicability == "snippet"


def test_warp_size_is_a_number(corpus: dict[str, FileReport]) -> None:
    """`warpSize` is PTX's WARP_SZ: `partial[tid / warpSize]` is a known per-warp slot, not a gather."""
    report = corpus["warp_size.cu"]
    assert not [f for f in report.all_findings() if f.code == "unknown-access"]


def test_an_inlined_intrinsic_counts_at_the_line_that_calls_it(corpus: dict[str, FileReport]) -> None:
    """__shfl_down_sync is inlined from a CUDA header; its instructions sit at the header's lines (439-440)
    `inlined_at` the call on line 12. The shuffle loop spans the file's lines 11-12, not the header's, and its
    header block (the loop body's first instructions, as nvcc rotates loops) starts at the call."""
    k = corpus["warp_size.cu"].kernel("warpSums")
    assert k is not None and len(k.loops) == 1
    assert (k.loops[0].header_line, k.loops[0].lines) == (12, (11, 12))
