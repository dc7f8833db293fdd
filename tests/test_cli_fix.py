"""`kerncast analyze --fix` / `--diff`: quick fixes applied from the command line, each one checked by a new
compile and analysis before it is kept. Real processes, real nvcc, copies of the project's own kernels."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kerncast.analysis.finding import Finding, Fix, TextEdit
from kerncast.analysis.fixing import OverlappingEdits, apply_edits, fix_text
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.server import cmd_analyze
from kerncast.server.cli import build_parser
from processes import children
from source_lines import line_of

REPO = Path(__file__).resolve().parent.parent
TRANSPOSE = REPO / "examples" / "transpose.cu"
BLOCK2D = REPO / "tests" / "kernels" / "block2d.cu"
PADDED_TILE = "    __shared__ float tile[TILE_DIM][TILE_DIM + 1];"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", *args], capture_output=True,
                          text=True, timeout=600, cwd=REPO)


def _codes(path: Path) -> set[tuple[str | None, str]]:
    return {(f.kernel, str(f.code)) for f in analyze_file(path).all_findings()}


# ------------------------------------------------------------------------------------------ applying edits


def test_edits_apply_bottom_up_with_one_based_end_exclusive_columns() -> None:
    text = "abc\ndef\nghi\n"
    edits = [TextEdit(1, 2, 1, 3, "X"), TextEdit(2, 1, 3, 2, "Y"), TextEdit(4, 1, 4, 1, "tail\n")]
    assert apply_edits(text, edits) == "aXc\nYhi\ntail\n"


def test_a_column_past_the_line_end_stops_at_the_line_end() -> None:
    assert apply_edits("ab\ncd\n", [TextEdit(1, 9, 1, 9, "!")]) == "ab!\ncd\n"


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(OverlappingEdits):
        apply_edits("abcdef\n", [TextEdit(1, 1, 1, 4, "x"), TextEdit(1, 3, 1, 5, "y")])


# ------------------------------------------------------------------------------------------ the command line


def test_fix_applies_both_fixes_of_the_transpose_example_and_reports_the_fixed_file(nvcc_available,
                                                                                   tmp_path) -> None:
    src = tmp_path / "transpose.cu"
    shutil.copy(TRANSPOSE, src)
    before = _codes(src)
    assert {("transposeNaive", "uncoalesced-global"), ("transposeTiled", "shared-bank-conflict")} <= before
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 0, proc.stderr
    column_read = line_of(TRANSPOSE, "= tile[threadIdx.x][threadIdx.y + j]")  # transposeTiled's conflicting read
    naive_store = line_of(TRANSPOSE, "odata[x * height + (y + j)]")
    assert f"{src}:{column_read}: fixed: pad-shared-array for shared-bank-conflict in transposeTiled" in proc.stderr
    assert f"{src}:{naive_store}: fixed: tiled-transpose for uncoalesced-global in transposeNaive" in proc.stderr
    assert "not fixed" not in proc.stderr
    lines = src.read_text().splitlines()
    assert PADDED_TILE in lines  # transposeTiled's tile, padded
    assert "kernel transposeTiled" in proc.stdout  # the report is of the file as fixed
    after = _codes(src)
    assert ("transposeNaive", "uncoalesced-global") not in after
    assert ("transposeTiled", "shared-bank-conflict") not in after
    assert after <= before, after - before  # and nothing new


def test_diff_prints_the_change_and_writes_nothing(nvcc_available, tmp_path) -> None:
    src = tmp_path / "transpose.cu"
    shutil.copy(TRANSPOSE, src)
    proc = run_cli(str(src), "--diff")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"--- {src}\n+++ {src}\n")
    assert "-    __shared__ float tile[TILE_DIM][TILE_DIM];\n+" + PADDED_TILE + "\n" in proc.stdout
    assert "kernel transposeNaive" not in proc.stdout  # a diff, no report
    assert "would fix: pad-shared-array for shared-bank-conflict in transposeTiled" in proc.stderr
    assert src.read_bytes() == TRANSPOSE.read_bytes()


def test_an_unsafe_fix_needs_unsafe_fixes(nvcc_available, tmp_path) -> None:
    src = tmp_path / "block2d.cu"
    shutil.copy(BLOCK2D, src)
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 0, proc.stderr
    assert "swap-thread-indices" not in proc.stderr
    assert src.read_bytes() == BLOCK2D.read_bytes()
    proc = run_cli(str(src), "--fix", "--unsafe-fixes")
    assert proc.returncode == 0, proc.stderr
    assert "fixed: swap-thread-indices for uncoalesced-global in columnMajor" in proc.stderr
    assert ("columnMajor", "uncoalesced-global") not in _codes(src)


def test_unsafe_fixes_alone_is_refused() -> None:
    proc = run_cli("examples/transpose.cu", "--unsafe-fixes")
    assert proc.returncode == 2
    assert "--unsafe-fixes goes with --fix or --diff" in proc.stderr


def test_crlf_line_endings_are_kept(nvcc_available, tmp_path) -> None:
    src = tmp_path / "transpose.cu"
    src.write_bytes(TRANSPOSE.read_bytes().replace(b"\n", b"\r\n"))
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 0, proc.stderr
    data = src.read_bytes()
    assert (PADDED_TILE + "\r\n").encode() in data
    assert b"\n" not in data.replace(b"\r\n", b"")  # no bare LF: every line still ends in CRLF


def test_a_file_that_is_not_utf8_is_not_touched(nvcc_available, tmp_path) -> None:
    src = tmp_path / "latin1.cu"
    original = b"// caf\xe9\n" + TRANSPOSE.read_bytes()
    src.write_bytes(original)
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 1
    assert f"kerncast: {src}: not fixed: the file is not UTF-8 text" in proc.stderr
    assert src.read_bytes() == original
    assert "kernel transposeTiled" in proc.stdout  # still analysed and reported (read as Windows-1252)


# ------------------------------------------------------------------------------------------ a broken promise


def test_a_fix_that_breaks_the_build_is_put_back(nvcc_available) -> None:
    """A fix whose edit does not compile (an injected one: every fix Kerncast builds keeps its promise on the
    project's kernels) is tried, refused with nvcc's reason, and the text stays as it was."""
    text = TRANSPOSE.read_text()
    broken = Fix("pad-shared-array", "breaks the build", edits=[TextEdit(17, 1, 17, 1, "#error broken on purpose\n")])

    def analyse(t: str) -> FileReport:
        report = analyze_file(TRANSPOSE, text=t)
        kernel = report.kernel("transposeTiled")
        if kernel is not None:
            kernel.findings.append(Finding("shared-bank-conflict", "warning", 28, 1, 28, 2, "injected",
                                           fix=broken, kernel="transposeTiled"))
        return report

    outcome = fix_text(text, analyse)
    refused = [a for a in outcome.refused if a.fix is broken]
    assert len(refused) == 1
    assert refused[0].problems[0].startswith("the file no longer compiles: ")
    assert "broken on purpose" in refused[0].problems[0]
    assert "#error" not in outcome.text
    assert len(outcome.kept) == 2  # the real fixes of the file are still applied


# ------------------------------------------------------------------------------------------ nvcc's messages

TWICE = """\
#include <cuda_runtime.h>

__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }

int main()
{
    float *x;
    cudaMalloc(&x, 256 * sizeof(float));
    scale<<<1, 256>>>(x);
    cudaThreadSynchronize();
    scale<<<1, 256>>>(x);
    cudaThreadSynchronize();
    return 0;
}
"""


def test_every_use_of_a_removed_api_is_renamed(nvcc_available, tmp_path) -> None:
    """nvcc reports an undeclared name once per function: the second use shows only once the first is fixed,
    and is fixed in turn."""
    src = tmp_path / "twice.cu"
    src.write_text(TWICE)
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("fixed: use-replacement-api for compile-warning") == 2, proc.stderr
    assert src.read_text() == TWICE.replace("cudaThreadSynchronize", "cudaDeviceSynchronize")
    assert not [f for f in analyze_file(src).findings if str(f.code) == "compile-warning"]


FIRST_OF = """\
#pragma once
struct FirstOf {
    template <typename Pair>
    __host__ __device__ float operator()(const Pair &p) const { return thrust::get<0>(p); }
};
"""

ZIP = """\
#include <thrust/device_vector.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>

#include "first.cuh"

__global__ void fill(float *x, float v) { x[blockIdx.x * blockDim.x + threadIdx.x] = v; }

void firsts(thrust::device_vector<float> &a, thrust::device_vector<float> &b, thrust::device_vector<float> &out)
{
    thrust::transform(thrust::make_zip_iterator(thrust::make_tuple(a.begin(), b.begin())),
                      thrust::make_zip_iterator(thrust::make_tuple(a.end(), b.end())), out.begin(), FirstOf());
}
"""


def test_a_missing_include_goes_above_the_project_header_that_needs_it_too(nvcc_available, tmp_path) -> None:
    """`first.cuh` uses thrust::get and relies on its includer for <thrust/tuple.h>; nvcc checks that use only
    once the file's own thrust::make_tuple compiles. Added after the last #include, the line would come too late
    for the header, and the file would stop compiling: the check would refuse the fix."""
    (tmp_path / "first.cuh").write_text(FIRST_OF)
    src = tmp_path / "zip.cu"
    src.write_text(ZIP)
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 0, proc.stderr
    assert "fixed: add-include for compile-warning" in proc.stderr and "not fixed" not in proc.stderr
    assert src.read_text() == ZIP.replace('#include "first.cuh"', '#include <thrust/tuple.h>\n#include "first.cuh"')
    report = analyze_file(src)
    assert report.ok and not [f for f in report.findings if str(f.code) == "compile-warning"]


def test_the_report_after_fix_is_the_last_check_s_analysis(nvcc_available, tmp_path, monkeypatch, capsys) -> None:
    """The file was analysed as it now stands when its last fix was checked: it is not analysed again."""
    src = tmp_path / "transpose.cu"
    shutil.copy(TRANSPOSE, src)

    def again(*_args, **_kwargs):
        raise AssertionError("the fixed file was analysed a second time")

    monkeypatch.setattr(cmd_analyze, "analyze_file", again)
    args = build_parser("analyze").parse_args(["analyze", str(src), "--fix", "--format", "json"])
    assert cmd_analyze.run(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {k["name"] for k in printed["kernels"]} >= {"transposeTiled", "transposeNaive"}
    assert PADDED_TILE in src.read_text().splitlines()  # and it is the report of the fixed file


# ------------------------------------------------------------------------------------------ the user's file is safe


def _wait_for_compiles(proc: subprocess.Popen, count: int, limit_s: float = 300) -> bool:
    """Wait until `count` distinct compiler processes (children of the CLI) have started; False if it ended."""
    seen: set[int] = set()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        seen.update(children(proc.pid))
        if len(seen) >= count:
            return True
        time.sleep(0.02)
    return False


def _start_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kerncast.server", "analyze", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_save_made_while_fixes_are_checked_is_kept_and_the_run_exits_1(nvcc_available, tmp_path) -> None:
    src = tmp_path / "transpose.cu"
    shutil.copy(TRANSPOSE, src)
    proc = _start_cli(str(src), "--fix")
    assert _wait_for_compiles(proc, 2), proc.communicate()[1]  # the first analysis is done, a trial compiles
    with src.open("a") as fh:
        fh.write("// the user's line, saved during the run\n")
    saved = src.read_bytes()
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err
    assert f"kerncast: {src}: not fixed: the file changed while Kerncast was checking its fixes" in err
    assert src.read_bytes() == saved  # the user's line is there, and no fix was written over it
    assert not list(tmp_path.glob(".*kerncast"))  # no temporary file left beside it


TRANSPOSE_TEXT = TRANSPOSE.read_text()
KERNELS_TEXT = TRANSPOSE_TEXT[TRANSPOSE_TEXT.index("__global__ void transposeNaive"):
                              TRANSPOSE_TEXT.index("int main()")]
INCLUDER_TEXT = TRANSPOSE_TEXT.replace(KERNELS_TEXT, '#include "transpose_kernels.cu"\n\n').replace(
    "#define TILE_DIM", "typedef float real;\n#define TILE_DIM")
FRAGMENT_TEXT = "#define TILE_DIM 32\n#define BLOCK_ROWS 8\n\n" + KERNELS_TEXT.replace(
    "float *odata, const float *idata", "real *odata, const real *idata")


def _fragment_project(tmp_path: Path) -> Path:
    """transpose.cu split as Rodinia splits its programs: the kernels in a fragment whose parameters are of a
    type only the includer declares (the fragment does not compile alone)."""
    (tmp_path / "main.cu").write_text(INCLUDER_TEXT)
    fragment = tmp_path / "transpose_kernels.cu"
    fragment.write_text(FRAGMENT_TEXT)
    return fragment


def test_a_fragment_is_fixed_through_copies_and_its_includer_is_untouched(nvcc_available, tmp_path) -> None:
    fragment = _fragment_project(tmp_path)
    proc = run_cli(str(fragment), "--fix")
    assert proc.returncode == 0, proc.stderr
    assert "fixed: pad-shared-array for shared-bank-conflict in transposeTiled" in proc.stderr
    assert "fixed: tiled-transpose for uncoalesced-global in transposeNaive" in proc.stderr
    assert "not fixed" not in proc.stderr
    fixed = fragment.read_text()
    assert "float tile[TILE_DIM][TILE_DIM];" not in fixed and fixed.count("tile[TILE_DIM][TILE_DIM + 1];") == 3
    report = analyze_file(fragment)  # through the includer, on disk now
    assert report.includer == str(tmp_path / "main.cu")
    codes = {(f.kernel, str(f.code)) for f in report.all_findings()}
    assert ("transposeTiled", "shared-bank-conflict") not in codes and report.kernel("transposeTiled") is not None
    assert (tmp_path / "main.cu").read_text() == INCLUDER_TEXT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["main.cu", "transpose_kernels.cu"]


@pytest.mark.parametrize("mode", ["--diff", "--fix"])
@pytest.mark.parametrize("compiles", [2, 4])
def test_a_fragment_run_stopped_by_sigterm_leaves_the_file_byte_identical(nvcc_available, tmp_path, mode,
                                                                          compiles) -> None:
    """Stopped while a trial version of a fix compiles (the 2nd or 4th compiler process it starts), the run
    leaves the fragment and its includer as they were: trial versions live in copies."""
    project, temp = tmp_path / "project", tmp_path / "temp"
    project.mkdir()
    temp.mkdir()
    fragment = _fragment_project(project)
    before = {p.name: p.read_bytes() for p in project.iterdir()}
    proc = _start_cli(str(fragment), mode, env={**os.environ, "TMPDIR": str(temp)})
    assert _wait_for_compiles(proc, compiles), proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM  # it was stopped, not finished
    assert {p.name: p.read_bytes() for p in project.iterdir()} == before
    assert list(temp.iterdir()) == []  # the compiler was stopped and its temporary folders removed


def test_a_mixed_crlf_and_lf_file_keeps_each_line_s_ending(nvcc_available, tmp_path) -> None:
    src = tmp_path / "transpose.cu"
    lines = TRANSPOSE.read_bytes().split(b"\n")
    mixed = b"".join(line + (b"\r\n" if i % 2 else b"\n") for i, line in enumerate(lines[:-1]))
    src.write_bytes(mixed)
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 0, proc.stderr
    data = src.read_bytes()
    assert (PADDED_TILE.encode() + b"\r\n") in data or (PADDED_TILE.encode() + b"\n") in data
    old, new = mixed.splitlines(keepends=True), data.splitlines(keepends=True)
    unchanged = {line for line in old if line in new}
    assert len(unchanged) > 0.7 * len(set(old))
    for line in unchanged:  # every line the fixes left alone ends as it did
        assert line in new
    assert data.count(b"\r\n") >= mixed.count(b"\r\n") - 4 and data.count(b"\n") - data.count(b"\r\n") >= \
        mixed.count(b"\n") - mixed.count(b"\r\n") - 4


def test_a_file_named_past_nvcc_s_temporary_name_limit_is_analysed_and_fixed(nvcc_available, tmp_path) -> None:
    src = tmp_path / ("t" * 240 + ".cu")
    shutil.copy(TRANSPOSE, src)
    proc = run_cli(str(src), "--fix")
    assert proc.returncode == 0, proc.stderr
    assert "fixed: pad-shared-array for shared-bank-conflict in transposeTiled" in proc.stderr
    assert PADDED_TILE in src.read_text().splitlines()
    assert "kernel transposeTiled" in proc.stdout
