"""Headers that the build finds with `-I ../inc` and nvcc, given no build flags, does not (analysis/includes.py
`find_header_folders`, compile's nearby-header retry).

A sample's `src/kernel.cu` that includes "kernel.h" from `../inc`, or Rodinia's `lud.cu` that includes
"common.h" from `../common`, fails without its Makefile's flags. The folder near the file that holds the header
is named in the error, and where exactly one does, the file is compiled with it and analysed, and says so.
"""

from __future__ import annotations

import os
from pathlib import Path

from kerncast.analysis.compile import compile_cuda
from kerncast.analysis.compile_hints import hint_for
from kerncast.analysis.includes import find_header_folders
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_own_folder_and_those_below_come_before_the_parent_s(tmp_path) -> None:
    _tree(tmp_path, {"app/src/AVI/avilib.h": "", "app/inc/avilib.h": "", "app/inc/kernel.h": "",
                     "app/src/.cache/kernel.h": ""})
    src = tmp_path / "app" / "src"
    assert find_header_folders("avilib.h", src) == [src / "AVI"]  # below the file's folder: the parent's unread
    assert find_header_folders("kernel.h", src) == [tmp_path / "app" / "inc"]  # hidden folders are not searched
    assert find_header_folders("missing.h", src) == []
    assert find_header_folders("../inc/kernel.h", src) == []  # not below any folder
    assert find_header_folders(str(tmp_path / "app" / "inc" / "kernel.h"), src) == []


def test_nearest_first_and_no_search_above_a_repository_root(tmp_path) -> None:
    _tree(tmp_path, {"repo/a/b/common.h": "", "repo/common/common.h": "", "sibling/common.h": ""})
    repo = tmp_path / "repo"
    (repo / ".git").mkdir()
    assert find_header_folders("common.h", repo) == [repo / "common", repo / "a" / "b"]
    assert find_header_folders("sibling.h", repo) == []
    _tree(tmp_path, {"repo/sub/x.cu": ""})
    assert find_header_folders("common.h", repo / "sub") == [repo / "common", repo / "a" / "b"]


def test_the_hint_names_the_folder_relative_to_the_file(tmp_path) -> None:
    _tree(tmp_path, {"lud/common/common.h": "", "lud/cuda/common.cu": ""})
    cuda = tmp_path / "lud" / "cuda"
    assert hint_for("common.h: No such file or directory", source_dir=cuda) == (
        f"common.h is in {os.path.join('..', 'common')}, which is not on the include path: add it to the "
        "includeDirs setting (-I), or let Kerncast read the build's compile_commands.json")
    assert hint_for("common.cu: No such file or directory", source_dir=cuda) == (
        "common.cu is in this file's folder, which #include <...> does not search: add it to the includeDirs "
        "setting (-I), or let Kerncast read the build's compile_commands.json")
    assert hint_for("common.h: No such file or directory") is None  # without the file's folder, no search
    assert hint_for("other.h: No such file or directory", source_dir=cuda) is None


KERNEL = """\
#include <cstdio>
#include "stencil.h"
#include <launch.cuh>

__global__ void stencil(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= HALO && i < n - HALO) out[i] = WEIGHT * (in[i - 1] + in[i] + in[i + 1]);
}

int main()
{
    stencil<<<GRID, BLOCK>>>(0, 0, GRID * BLOCK);
    return 0;
}
"""


def _project(root: Path, weight: str = "0.25f") -> Path:
    _tree(root, {"inc/stencil.h": '#include "weights.h"\n#define BLOCK 128\n',
                 "inc/weights.h": f"#define WEIGHT {weight}\n#define GRID 64\n",
                 "src/launch.cuh": "#define HALO 1\n",
                 "src/stencil.cu": KERNEL})
    return root / "src" / "stencil.cu"


def test_a_file_is_analysed_with_the_folders_near_it_that_hold_its_headers(nvcc_available, tmp_path) -> None:
    path = _project(tmp_path)
    report = analyze_file(path, options=AnalysisOptions(lime=False, gpu="h100"))
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    kernel = next(k for k in report.kernels if k.name == "stencil")
    assert kernel.launch is not None and kernel.launch.block.value == (128, 1, 1)
    assert kernel.launch.grid.value == (64, 1, 1)
    warnings = sorted((f.line, f.message.split(" — ")[0], f.message.split("(Kerncast ")[-1])
                      for f in report.findings if f.code == "compile-warning")
    inc = os.path.join("..", "inc")
    assert warnings == [(2, "stencil.h: No such file or directory",
                         f"compiled the file with {inc} on the include path)"),
                        (3, "launch.cuh: No such file or directory",
                         "compiled the file with this file's folder on the include path)")]
    assert (f"compiled with -I {inc} -I ., found near the file, for stencil.h, launch.cuh, which nvcc did not find "
            "on the include path; set includeDirs (or give Kerncast the build's compile_commands.json) to use the "
            "build's own") in report.notes


def test_an_edit_of_a_nearby_header_is_seen(nvcc_available, tmp_path) -> None:
    path = _project(tmp_path)
    options = AnalysisOptions(lime=False, gpu="h100")
    first = analyze_file(path, options=options)
    _project(tmp_path, weight="(1.0f / n)")  # a division more in the kernel: nvcc must compile again
    (tmp_path / "inc" / "stencil.h").write_text('#include "weights.h"\n#define BLOCK 256\n')
    second = analyze_file(path, options=options)
    kernels = [next(k for k in r.kernels if k.name == "stencil") for r in (first, second)]
    assert [k.launch.block.value for k in kernels] == [(128, 1, 1), (256, 1, 1)]
    assert kernels[1].instruction_count > kernels[0].instruction_count


def test_two_folders_holding_the_header_leave_the_error_with_both_named(nvcc_available, tmp_path) -> None:
    path = _project(tmp_path)
    _tree(tmp_path, {"old/stencil.h": "#define BLOCK 64\n"})
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    errors = [f.message for f in report.findings if f.severity == "error"]
    assert not report.ok and not report.kernels
    assert errors == [f"stencil.h: No such file or directory — stencil.h is in {os.path.join('..', 'inc')}, "
                      f"{os.path.join('..', 'old')}, none of them on the include path: add the build's one to the "
                      "includeDirs setting (-I), or let Kerncast read the build's compile_commands.json"], errors


def test_a_launch_from_device_code_found_after_the_header_is_compiled_relocatable(nvcc_available, tmp_path) -> None:
    """nvcc stops at the missing header before it sees the device-side launch: the retry must find it."""
    _tree(tmp_path, {"inc/sizes.h": "#define N 64\n",
                     "src/dp.cu": '#include "sizes.h"\n__global__ void child(float *d) { d[threadIdx.x] = 1.0f; }\n'
                                  "__global__ void parent(float *d) { if (threadIdx.x == 0) child<<<1, N>>>(d); }\n"
                                  "int main() { parent<<<1, 32>>>(0); return 0; }\n"})
    report = analyze_file(tmp_path / "src" / "dp.cu", options=AnalysisOptions(lime=False, gpu="h100"))
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    assert sorted(k.name for k in report.kernels) == ["child", "parent"]
    assert report.notes[0].startswith("compiled with -rdc=true")
    assert any(n.startswith("compiled with -I ../inc, found near the file, for sizes.h") for n in report.notes)


def test_a_cached_compile_is_replaced_when_a_header_found_near_the_file_changes(nvcc_available, tmp_path) -> None:
    _tree(tmp_path, {"inc/sizes.h": "#define N 64\n",
                     "src/k.cu": '#include "sizes.h"\n__global__ void k(int *d) { d[0] = N; }\n'})
    src = tmp_path / "src" / "k.cu"
    first = compile_cuda(src)
    assert first.ok and first.nearby_dirs == [tmp_path / "inc"] and ", 64;" in first.ptx
    assert compile_cuda(src) is first  # nothing changed: the cached result
    header = tmp_path / "inc" / "sizes.h"
    header.write_text("#define N 4096\n")
    os.utime(header, ns=(1, 1))
    again = compile_cuda(src)
    assert again is not first and again.ok and ", 4096;" in again.ptx  # compiled again, with the edited header
    assert compile_cuda(src) is again
