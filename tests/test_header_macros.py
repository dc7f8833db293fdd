"""Launch sizes named in the project's own headers are folded, as the preprocessor would see them."""

from __future__ import annotations

import json
import os

from kerncast.analysis import source_model
from kerncast.analysis.header_macros import included_macros, read_included
from kerncast.analysis.launch import infer_launch
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.source_model import FileScans

KERNEL = "__global__ void k(float *y) { y[threadIdx.x] = 0; }\n"


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_launch_folds_macros_from_a_header_and_the_headers_it_includes(tmp_path):
    _write(tmp_path / "sizes.h", '#pragma once\n#include "inner/rows.h"\n#define BLOCK (2 * HALF)\n#define HALF 64\n')
    _write(tmp_path / "inner" / "rows.h", "#define ROWS 4\n")
    src = _write(tmp_path / "main.cu", '#include "sizes.h"\n' + KERNEL +
                 "int main() { float *y; k<<<4096 / BLOCK, dim3(BLOCK, ROWS)>>>(y); }\n")
    launch = infer_launch("k", src.read_text(), source_path=str(src))
    assert launch.grid.value == (32, 1, 1) and launch.grid.source == "launch-site"
    assert launch.block.value == (128, 4, 1)


def test_the_files_own_define_after_the_include_wins_and_a_define_before_it_loses(tmp_path):
    _write(tmp_path / "sizes.h", "#define BLOCK 128\n")
    after = _write(tmp_path / "after.cu", '#include "sizes.h"\n#undef BLOCK\n#define BLOCK 32\n' + KERNEL +
                   "int main() { float *y; k<<<1, BLOCK>>>(y); }\n")
    assert infer_launch("k", after.read_text(), source_path=str(after)).block.value == (32, 1, 1)
    before = _write(tmp_path / "before.cu", '#define BLOCK 32\n#include "sizes.h"\n' + KERNEL +
                    "int main() { float *y; k<<<1, BLOCK>>>(y); }\n")
    assert infer_launch("k", before.read_text(), source_path=str(before)).block.value == (128, 1, 1)


def test_an_edited_header_is_read_again(tmp_path):
    header = _write(tmp_path / "sizes.h", "#define BLOCK 128\n")
    src = _write(tmp_path / "main.cu", '#include "sizes.h"\n' + KERNEL
                 + "int main() { float *y; k<<<1, BLOCK>>>(y); }\n")
    assert infer_launch("k", src.read_text(), source_path=str(src)).block.value == (128, 1, 1)
    header.write_text("#define BLOCK 1024\n")
    stat = header.stat()
    os.utime(header, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert infer_launch("k", src.read_text(), source_path=str(src)).block.value == (1024, 1, 1)


def test_headers_found_in_include_directories_and_not_system_or_missing_ones(tmp_path):
    _write(tmp_path / "inc" / "sizes.h", "#define BLOCK 96\n")
    src = _write(tmp_path / "src" / "main.cu", '#include <sizes.h>\n#include "missing.h"\n#include "sizes.h"\n')
    macros = included_macros(src.read_text(), src, [str(tmp_path / "inc")])
    assert [(m.name, m.line) for m in macros] == [("BLOCK", 3)]  # the quoted include, not the <...> one
    assert included_macros(src.read_text(), src) == ()  # without the include directory nothing is found


def test_a_header_that_includes_itself_is_read_once(tmp_path):
    _write(tmp_path / "a.h", '#include "b.h"\n#define A 1\n')
    _write(tmp_path / "b.h", '#include "a.h"\n#define B 2\n')
    src = _write(tmp_path / "main.cu", '#include "a.h"\n')
    assert [m.name for m in included_macros(src.read_text(), src)] == ["B", "A"]


def test_the_projects_include_directories_from_compile_commands_reach_launch_inference(nvcc_available, tmp_path):
    """A header found only through the build's `-I` gives the launch its size, as it gives nvcc its macro."""
    _write(tmp_path / "inc" / "sizes.h", "#define BLOCK 192\n")
    src = _write(tmp_path / "src" / "main.cu", '#include "sizes.h"\n' + KERNEL
                 + "int main() { float *y; k<<<1, BLOCK>>>(y); }\n")
    entry = {"directory": str(tmp_path), "file": "src/main.cu", "arguments": ["nvcc", "-Iinc", "-c", "src/main.cu"]}
    (tmp_path / "compile_commands.json").write_text(json.dumps([entry]))
    report = analyze_file(src, options=AnalysisOptions(lime=False))
    assert report.ok, [f.message for f in report.findings]
    (kernel,) = report.kernels
    assert kernel.launch.block.value == (192, 1, 1) and kernel.launch.block.source == "launch-site"


def _twenty_kernels(tmp_path):
    """A file whose 20 kernels take their block size from one header (a text of its own: no scan kept from another
    test answers for it)."""
    header = _write(tmp_path / "sizes.h", "#define BLOCK 128\n")
    kernels = "".join(f"__global__ void k{i}(float *y) {{ y[threadIdx.x] = {i}; }}\n" for i in range(20))
    launches = "".join(f"  k{i}<<<8, BLOCK>>>(y);\n" for i in range(20))
    src = _write(tmp_path / "main.cu", '#include "sizes.h"\n' + kernels + "int main() { float *y;\n" + launches
                 + f"}}\n// {tmp_path.name}\n")
    return header, src


def test_one_analysis_reads_a_files_headers_once_for_all_its_kernels(tmp_path, monkeypatch):
    """The kernels of one save share a `FileScans`: the headers are walked once, not once per kernel, and the
    launches are those each kernel gets alone; a later save with an edited header reads it again."""
    header, src = _twenty_kernels(tmp_path)
    walks: list[str] = []

    def counted(text, path, include_dirs=None):
        walks.append(str(path))
        return read_included(text, path, include_dirs)

    monkeypatch.setattr(source_model, "read_included", counted)
    text = src.read_text()
    scans = FileScans()
    shared = [infer_launch(f"k{i}", text, source_path=str(src), scan=scans.scan) for i in range(20)]
    assert walks == [str(src)]
    alone = [infer_launch(f"k{i}", text, source_path=str(src)) for i in range(20)]
    assert [x.to_json() for x in shared] == [x.to_json() for x in alone]
    assert {x.block.value for x in shared} == {(128, 1, 1)}
    header.write_text("#define BLOCK 1024\n")
    stat = header.stat()
    os.utime(header, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    walks.clear()
    again = FileScans()
    assert {infer_launch(f"k{i}", text, source_path=str(src), scan=again.scan).block.value
            for i in range(20)} == {(1024, 1, 1)}
    assert walks == [str(src)]


def test_a_scan_that_fails_fails_the_same_way_for_every_kernel(monkeypatch):
    """A source the scanner cannot read gives each kernel the same assumption, from one attempt."""
    attempts: list[str] = []

    def failing(text, path, include_dirs=None):
        attempts.append(text)
        raise ValueError("nesting too deep")

    monkeypatch.setattr(source_model, "scan_file", failing)
    scans = FileScans()
    launches = [infer_launch(name, "__global__ void a() {}", source_path="x.cu", scan=scans.scan)
                for name in ("a", "b")]
    assert len(attempts) == 1
    assert all("could not be scanned for launches (nesting too deep)" in x.assumptions[0] for x in launches)


def test_each_kernels_launch_finds_its_sites_through_an_index_made_once(tmp_path, monkeypatch):
    """The launch sites are grouped by kernel name once per scan: twenty kernels' launches read each site's
    name once, not once per kernel, and find the same sites."""
    _, src = _twenty_kernels(tmp_path)
    asked: list[str] = []
    name_of = source_model.LaunchSite.base_name
    monkeypatch.setattr(source_model.LaunchSite, "base_name",
                        property(lambda site: asked.append(site.kernel) or name_of.fget(site)))
    text = src.read_text()
    scans = FileScans()
    launches = [infer_launch(f"k{i}", text, source_path=str(src), scan=scans.scan) for i in range(20)]
    assert len(asked) == 20  # one per site
    assert [x.grid.line for x in launches] == [23 + i for i in range(20)]
