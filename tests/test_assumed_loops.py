"""Loops whose trip count stays assumed, on nvcc's own output of `tests/assumed/csr_row.cu` (a CSR row loop whose
bound is loaded from memory): the loop is reported as assumed with its reason, the time range widens to cover a
quarter and four times the assumed count, the finding's fix writes a `loops=N?` placeholder, and a placeholder
stays an assumption until the user replaces it with a value."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.findings.assumed_loops import loop_opening_above
from kerncast.analysis.fixing import apply_edits
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import KernelReport
from kerncast.analysis.source_model import scan_source
from source_lines import line_of

CSR = Path(__file__).resolve().parent / "assumed" / "csr_row.cu"
SIGNATURE = "__global__ void csrRowSpmv"


def _kernel(path: Path, text: str | None = None, loops: int | None = None) -> KernelReport:
    options = AnalysisOptions(overrides=LaunchOverrides(loops=loops)) if loops is not None else None
    report = analyze_file(path, text, options)
    assert report.ok, [f.message for f in report.findings]
    (k,) = report.kernels
    return k


def _assumed(k: KernelReport) -> list:
    return [f for f in k.findings if f.code == "assumed-trip-count"]


@pytest.fixture(scope="module")
def csr(nvcc_available) -> KernelReport:
    return _kernel(CSR)


def test_a_data_dependent_loop_is_reported_as_assumed_with_its_reason(csr):
    loop_line = line_of(CSR, "for (int j = rowPtr[row]")
    assert csr.loops and all(lp.trip_source == "default" and lp.trip_count == 10 for lp in csr.loops)
    assert all("loaded from global memory" in lp.trip_detail for lp in csr.loops)
    assert csr.assumed_loops() == 1  # nvcc's unrolled copy and remainder of the one source loop count once
    (finding,) = _assumed(csr)
    assert finding.line == loop_line and finding.severity == "information"
    assert "loaded from global memory" in finding.message and "assumed 10 from the default" in finding.message


def test_the_range_covers_a_quarter_and_four_times_the_assumed_count(csr, tmp_path):
    few, many = _kernel(CSR, loops=2).time, _kernel(CSR, loops=40).time
    stated = _kernel(CSR, loops=10).time
    assert csr.time is not None and few is not None and many is not None and stated is not None
    low, high = csr.time.range_us
    assert low <= few.us * 1.25 and high >= many.us  # 2.5 and 40 iterations; the time grows with the count
    assert low < stated.range_us[0] and high > stated.range_us[1]  # the same count, stated: no widening
    assert csr.time.us == pytest.approx(stated.us)
    assert "assumed" in csr.time.range_basis and "assumed" not in stated.range_basis


def test_the_fix_writes_a_placeholder_that_stays_assumed_until_filled_in(csr, tmp_path):
    (finding,) = _assumed(csr)
    assert finding.fix is not None and finding.fix.applicability == "snippet"
    (edit,) = finding.fix.edits
    assert (edit.line, edit.column, edit.new_text) == (line_of(CSR, SIGNATURE), 1, "// kerncast: loops=10?\n")
    placeholder = apply_edits(CSR.read_text(encoding="utf-8"), finding.fix.edits)
    path = tmp_path / "csr_row.cu"
    path.write_text(placeholder, encoding="utf-8")
    held = _kernel(path)
    assert {lp.trip_source for lp in held.loops} == {"placeholder"} and held.assumed_loops() == 1
    (again,) = _assumed(held)
    assert again.fix is None and "placeholder" in again.message  # offered once: the annotation is written
    assert held.time.range_us == pytest.approx(csr.time.range_us)

    path.write_text(placeholder.replace("loops=10?", "loops=10"), encoding="utf-8")
    stated = _kernel(path)
    assert {lp.trip_source for lp in stated.loops} == {"annotation"}
    assert stated.assumed_loops() == 0 and not _assumed(stated)


def test_only_loops_takes_a_placeholder():
    (ann,) = scan_source("// kerncast: loops=7? grid=4?\n__global__ void k() {}\n").annotations
    assert ann.loops == 7 and ann.placeholders == {"loops"}
    assert ann.grid is None and any("'4?'" in e for e in ann.errors)


def test_a_loop_body_under_a_while_true_is_placed_on_the_while() -> None:
    """A `while (true)` has no instruction of its own when nvcc puts its back edge on the body's last line; the
    finding then climbs from the body's first line over braces and comments to the loop statement, and no
    further than a statement or the kernel's first line."""
    text = ("__global__ void probe(unsigned *t, unsigned k)", "{", "    unsigned s = k;", "    while (true)", "    {",
            "        /* a comment that says what to do */", "        unsigned p = atomicCAS(&t[s], 0u, k);",
            "        s = s + 1;", "    }", "}")
    assert loop_opening_above(text, 7, 1) == 4
    assert loop_opening_above(text, 8, 1) is None  # a statement stands between
    assert loop_opening_above(text, 7, 5) is None  # not above the kernel's first line
