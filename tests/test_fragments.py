"""A `.cu` fragment written to be #included by another file is analysed as part of the file that includes it.

`tests/fragments/scale_kernel.cu` uses a typedef and a macro that `tests/fragments/main.cu` defines before
including it, as Rodinia's kernel files do: nvcc rejects it alone, Kerncast compiles `main.cu` and reports the
fragment's own kernel, placed in the fragment, with the launch written in `main.cu`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kerncast.analysis.compile import matches_disk
from kerncast.analysis.includes import find_includers
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from source_lines import line_of

HERE = Path(__file__).resolve().parent / "fragments"
FRAGMENT = HERE / "scale_kernel.cu"
OPTIONS = AnalysisOptions(gpu="h100", lime=False)


def test_the_includer_is_found_by_its_quoted_include() -> None:
    assert find_includers(FRAGMENT) == [HERE / "main.cu"]
    assert find_includers(HERE / "main.cu") == []


def test_a_fragment_is_analysed_through_its_includer(nvcc_available) -> None:
    report = analyze_file(FRAGMENT, options=OPTIONS)
    assert report.ok, [f.message for f in report.findings]
    assert any("does not compile on its own" in n and "compiled as part of main.cu" in n for n in report.notes)
    assert [k.name for k in report.kernels] == ["scale"]  # main.cu's own kernel is not this file's
    (k,) = report.kernels
    assert k.line is not None and 2 <= k.line <= 4 and k.registers
    assert k.launch is not None and k.launch.block.value == (128, 1, 1) and k.launch.block.source == "launch-site"
    # its 64 blocks leave SMs idle: said on the fragment's kernel line, naming the launch's line in main.cu (that
    # line number is main.cu's, and the fragment's line of that number is no launch)
    (idle,) = [f for f in k.findings if f.code == "launch-configuration"]
    launch_line = line_of(HERE / "main.cu", "scale<<<")
    assert idle.line == k.line and f"the launch at line {launch_line} of main.cu" in idle.message


def test_an_unsaved_fragment_is_compiled_from_its_text_through_a_copy_of_the_includer(nvcc_available) -> None:
    """The editor's text, not the saved file, is what nvcc compiles (through a copy of main.cu that includes a
    copy of that text): the kernel moves with the lines typed above it, and neither file on disk changes."""
    saved, includer = FRAGMENT.read_bytes(), (HERE / "main.cu").read_bytes()
    edited = "// two lines typed above,\n// not saved\n" + FRAGMENT.read_text()
    report = analyze_file(FRAGMENT, text=edited, options=OPTIONS)
    assert report.ok, [f.message for f in report.findings]
    (k,) = report.kernels
    assert k.name == "scale" and k.line is not None and 4 <= k.line <= 6
    assert k.launch is not None and k.launch.block.value == (128, 1, 1)
    broken = analyze_file(FRAGMENT, text=FRAGMENT.read_text().replace("fp factor", "fp factor,,"), options=OPTIONS)
    assert not broken.ok and not broken.kernels  # its own error, not the saved file's success
    assert FRAGMENT.read_bytes() == saved and (HERE / "main.cu").read_bytes() == includer


def test_a_saved_crlf_file_matches_its_text(tmp_path) -> None:
    path = tmp_path / "crlf.cu"
    path.write_bytes(b"__global__ void k() {}\r\n")
    assert matches_disk(path, "__global__ void k() {}\r\n")
    assert not matches_disk(path, "__global__ void k() {}\n")


def test_an_includer_that_names_the_fragment_in_angle_brackets_is_found(nvcc_available, tmp_path) -> None:
    """Rodinia's mummergpu writes `#include <mummergpu_kernel.cu>`, which its Makefile's `-I .` resolves."""
    fragment = tmp_path / "scale_kernel.cu"
    fragment.write_text(FRAGMENT.read_text())
    main = tmp_path / "main.cu"
    main.write_text((HERE / "main.cu").read_text().replace('#include "scale_kernel.cu"', "#include <scale_kernel.cu>"))
    assert find_includers(fragment) == [main]
    report = analyze_file(fragment, options=OPTIONS)
    assert report.ok, [f.message for f in report.findings]
    assert [k.name for k in report.kernels] == ["scale"]
    assert any("compiled as part of main.cu" in n for n in report.notes)
    assert any(n.startswith("compiled with -I ., found near the file, for scale_kernel.cu") for n in report.notes)


def test_the_includer_places_an_included_kernel_in_its_own_file(nvcc_available, tmp_path) -> None:
    """`scale` lies in scale_kernel.cu: in main.cu's report it is an included kernel, with its line and findings
    in scale_kernel.cu, and nothing of it lands on main.cu's lines. With no kernel of its own, the includer gave
    the fragment's lines as its own before: the `.file` most used by the kernels was taken for the analysed one."""
    report = analyze_file(HERE / "main.cu", options=OPTIONS)
    fill = report.kernel("fill")
    assert fill is not None and fill.line == 10 and [k.name for k in report.kernels] == ["fill"]
    (scale,) = report.included_kernels
    assert scale.name == "scale" and Path(scale.file or "") == FRAGMENT
    assert scale.line == line_of(FRAGMENT, "__global__ void scale")
    assert all(Path(f.file or "") == FRAGMENT for f in scale.findings)
    assert not [f for f in report.all_findings() if f.kernel == "scale"]
    shutil.copy(FRAGMENT, tmp_path / "scale_kernel.cu")
    only = tmp_path / "only_includes.cu"
    only.write_text("#include <cuda_runtime.h>\ntypedef float fp;\n#define NUMBER_THREADS 128\n"
                    "#include \"scale_kernel.cu\"\n"
                    "// kerncast: grid=64 block=128\n"
                    "int main() { fp *d; cudaMalloc(&d, 1 << 20); scale<<<64, 128>>>(d, 1 << 13, 2.0f); return 0; }\n")
    report = analyze_file(only, options=OPTIONS)
    assert report.ok and report.kernels == [] and [k.name for k in report.included_kernels] == ["scale"]
    (k,) = report.included_kernels
    assert Path(k.file or "") == tmp_path / "scale_kernel.cu" and k.line == scale.line
    assert k.launch is not None and k.launch.grid.value == (64, 1, 1)
    assert not report.all_findings()
