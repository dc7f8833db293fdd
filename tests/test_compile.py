"""The nvcc pipeline: toolchain discovery, PTX and ptxas resources of the examples, diagnostics, caching."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from kerncast.analysis import toolchain as toolchain_mod
from kerncast.analysis.compile import (
    CompileOptions,
    PtxasError,
    SourceContext,
    Toolchain,
    ToolchainError,
    compile_cuda,
    find_toolchain,
    parse_nvcc_output,
    parse_ptxas_output,
    ptxas_resources,
)

ARCHS = ("sm_75", "sm_80", "sm_90")

# mangled kernel name -> (static shared bytes, barriers), the same on every architecture
EXPECTED_KERNELS: dict[str, dict[str, tuple[int, int]]] = {
    "matmul": {"_Z13MatrixMulCUDAILi32EEvPfPKfS2_ii": (8192, 1), "_Z11matmulNaivePKfS0_Pfi": (0, 0)},
    "reduction": {"_Z17reduceInterleavedPKfPfj": (0, 1), "_Z13reduceStridedPKfPfj": (0, 1),
                  "_Z16reduceSequentialPKfPfj": (0, 1)},
    "saxpy": {"_Z5saxpyifPKfPf": (0, 0), "_Z16advanceParticlesP8Particleif": (0, 0)},
    "transpose": {"_Z14transposeNaivePfPKfii": (0, 0), "_Z14transposeTiledPfPKfii": (4096, 1),
                  "_Z15transposePaddedPfPKfii": (4224, 1)},
    "vector_add": {"_Z9vectorAddPKfS0_Pfi": (0, 0)},
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def errors(result) -> list:
    return [d for d in result.diagnostics if d.severity == "error"]


# ------------------------------------------------------------------------------------------- the examples


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("example", sorted(EXPECTED_KERNELS))
def test_example_compiles_with_ptx_header_and_resources(compile_example, example: str, arch: str) -> None:
    result = compile_example(example, arch=arch)
    assert result.ok, result.diagnostics
    assert errors(result) == []
    assert result.arch == arch
    assert re.search(r"^\.version \d+\.\d+$", result.ptx, re.MULTILINE)
    assert re.search(rf"^\.target {arch}$", result.ptx, re.MULTILINE)
    assert re.search(r"^\.address_size 64$", result.ptx, re.MULTILINE)
    assert f'{example}.cu"' in result.ptx  # -lineinfo names the source file
    expected = EXPECTED_KERNELS[example]
    assert set(result.resources) == set(expected)
    for mangled, (shared, barriers) in expected.items():
        res = result.resources[mangled]
        assert res.mangled == mangled
        assert res.shared_bytes == shared
        assert res.barriers == barriers
        assert res.registers >= 1 and res.registers <= 255  # ptxas's per-thread limit
        assert (res.stack_bytes, res.spill_stores, res.spill_loads) == (0, 0, 0)


@pytest.mark.nvcc
def test_constant_bank_reported_where_ptxas_prints_it(compile_example) -> None:
    assert compile_example("matmul", arch="sm_75").resources["_Z11matmulNaivePKfS0_Pfi"].const_bytes > 0


# ------------------------------------------------------------------------------------------- diagnostics


@pytest.mark.nvcc
def test_syntax_error_reported_at_line_and_column(nvcc_available, tmp_path: Path) -> None:
    src = write(tmp_path / "bad.cu", "__global__ void k(float *x)\n{\n    x[0] = 1.0f\n    int y = 2;\n}\n")
    result = compile_cuda(src)
    assert not result.ok and result.ptx is None
    [diag] = errors(result)
    assert (diag.line, diag.column) == (4, 5)
    assert diag.message == 'expected a ";"'
    assert diag.file == str(src) and not diag.in_header


@pytest.mark.nvcc
def test_column_follows_caret_through_macro_expanded_echo(nvcc_available, tmp_path: Path) -> None:
    # nvcc echoes `__global__` as `__attribute__((global))`; the column must still point at `zzz`.
    line = "__global__ void k(float *x) { x[0] = zzz; }"
    src = write(tmp_path / "undef.cu", line + "\n")
    [diag] = errors(compile_cuda(src))
    assert diag.line == 1
    assert diag.column == line.index("zzz") + 1
    assert "zzz" in diag.message


@pytest.mark.nvcc
def test_warning_is_a_warning_and_compilation_succeeds(nvcc_available, tmp_path: Path) -> None:
    line = "__global__ void k(float *x) { int unused; x[0] = 1.0f; }"
    result = compile_cuda(write(tmp_path / "warn.cu", line + "\n"))
    assert result.ok
    [diag] = result.diagnostics
    assert diag.severity == "warning" and "unused" in diag.message
    assert (diag.line, diag.column) == (1, line.index("unused") + 1)


@pytest.mark.nvcc
def test_error_in_included_header_lands_on_include_line(nvcc_available, tmp_path: Path) -> None:
    write(tmp_path / "helpers.h", "// helpers\n__device__ int twice(int v) { return v * undefined_name; }\n")
    src = write(tmp_path / "main.cu",
                '// main\n\n#include "helpers.h"\n__global__ void k(int *p) { p[0] = twice(1); }\n')
    result = compile_cuda(src)
    [diag] = errors(result)
    assert diag.in_header
    assert (diag.file, diag.line, diag.column) == (str(src), 3, len('#include "'))
    assert "helpers.h" in diag.message and "line 2" in diag.message and "undefined_name" in diag.message


@pytest.mark.nvcc
def test_error_in_nested_header_lands_on_the_include_that_leads_there(nvcc_available, tmp_path: Path) -> None:
    write(tmp_path / "inc" / "deep.h", "__device__ int deep() { return nope; }\n")
    write(tmp_path / "inc" / "outer.h", '#include "deep.h"\n')
    write(tmp_path / "other.h", "#define OTHER 1\n")
    src = write(tmp_path / "k.cu", '#include "other.h"\n#include <outer.h>\n__global__ void k() {}\n')
    result = compile_cuda(src, options=CompileOptions(include_dirs=[str(tmp_path / "inc")]))
    [diag] = errors(result)
    assert diag.in_header and diag.line == 2
    assert "deep.h" in diag.message


@pytest.mark.nvcc
def test_missing_include_is_a_diagnostic_on_its_line(nvcc_available, tmp_path: Path) -> None:
    src = write(tmp_path / "miss.cu", '// x\n#include "no_such_header.h"\n')
    [diag] = errors(compile_cuda(src))
    assert diag.line == 2 and "no_such_header.h" in diag.message


@pytest.mark.nvcc
def test_driver_error_without_position_goes_to_line_one(nvcc_available, tmp_path: Path) -> None:
    src = write(tmp_path / "ok.cu", "__global__ void k() {}\n")
    result = compile_cuda(src, options=CompileOptions(arch="sm_1"))
    assert not result.ok
    [diag] = errors(result)
    assert (diag.line, diag.column) == (1, 1)
    assert "sm_1" in diag.message


@pytest.mark.nvcc
def test_defines_and_include_dirs_reach_nvcc(nvcc_available, tmp_path: Path) -> None:
    write(tmp_path / "headers" / "size.h", "#define SIZE_FROM_HEADER 4\n")
    kernel = ("__global__ void k(float *p) { __shared__ float s[WIDTH * SIZE_FROM_HEADER];"
              " s[threadIdx.x] = p[threadIdx.x]; __syncthreads();"
              " p[threadIdx.x] = s[(threadIdx.x + 1) % (WIDTH * SIZE_FROM_HEADER)]; }\n")
    guard = '#include "size.h"\n#ifndef WIDTH\n#error WIDTH must be defined\n#endif\n'
    src = write(tmp_path / "def.cu", guard + kernel)
    with_both = compile_cuda(src, options=CompileOptions(include_dirs=[str(tmp_path / "headers")],
                                                         defines=["WIDTH=8"]))
    assert with_both.ok
    [res] = with_both.resources.values()
    assert res.shared_bytes == 8 * 4 * 4
    without_define = compile_cuda(src, options=CompileOptions(include_dirs=[str(tmp_path / "headers")]))
    assert [d.line for d in errors(without_define)] == [3]


@pytest.mark.nvcc
def test_unsaved_buffer_is_compiled_and_mapped_to_the_original_file(nvcc_available, tmp_path: Path) -> None:
    write(tmp_path / "local.h", "#define FACTOR 2.0f\n")
    src = write(tmp_path / "buf.cu", "// saved version has no kernel\n")
    good = '#include "local.h"\n__global__ void scaled(float *p) { p[0] *= FACTOR; }\n'
    result = compile_cuda(src, text=good)
    assert result.ok and "_Z6scaledPf" in result.resources
    assert f'"{src}"' in result.ptx  # .file names the edited file, not a temporary copy
    broken = compile_cuda(src, text='#include "local.h"\n\n__global__ void scaled(float *p) { p[0] *= ; }\n')
    [diag] = errors(broken)
    assert (diag.file, diag.line) == (str(src), 3)


@pytest.mark.nvcc
def test_timeout_becomes_a_diagnostic(nvcc_available, tmp_path: Path) -> None:
    src = write(tmp_path / "slow.cu", "__global__ void k() {}\n")
    result = compile_cuda(src, options=CompileOptions(timeout_s=0.001))
    assert not result.ok
    [diag] = errors(result)
    assert "did not finish" in diag.message


@pytest.mark.nvcc
def test_temporary_files_are_removed(nvcc_available, tmp_path: Path, monkeypatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    src = write(tmp_path / "t.cu", "__global__ void k(float *p) { p[0] = 1; }\n")
    assert compile_cuda(src, text="__global__ void k(float *p) { p[0] = 2; }\n").ok
    assert not compile_cuda(src, text="__global__ void k( {}\n").ok
    toolchain_mod.finish_removals()  # they are removed once the results are returned
    assert list(scratch.iterdir()) == []


@pytest.mark.nvcc
def test_results_are_cached_until_source_flags_or_headers_change(nvcc_available, tmp_path: Path) -> None:
    header = write(tmp_path / "h.h", "#define N 1\n")
    src = write(tmp_path / "c.cu", '#include "h.h"\n__global__ void k(float *p) { p[0] = N; }\n')
    first = compile_cuda(src)
    assert compile_cuda(src) is first
    assert compile_cuda(src, options=CompileOptions(arch="sm_80")) is not first
    assert compile_cuda(src, options=CompileOptions(defines=["X"])) is not first
    write(header, "#define N 22\n")
    os.utime(header, ns=(1, 1))
    assert compile_cuda(src) is not first


@pytest.mark.nvcc
def test_missing_source_file_is_a_diagnostic(nvcc_available, tmp_path: Path) -> None:
    result = compile_cuda(tmp_path / "absent.cu")
    assert not result.ok
    assert "cannot read" in result.diagnostics[0].message


# ------------------------------------------------------------------------------------------- toolchain


def test_nonexistent_nvcc_setting_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "nvcc"
    with pytest.raises(ToolchainError) as info:
        find_toolchain(str(missing))
    assert str(missing) in str(info.value) and "does not exist" in str(info.value)
    with pytest.raises(ToolchainError):
        compile_cuda(tmp_path / "x.cu", text="", options=CompileOptions(nvcc_path=str(missing)))


def test_directory_without_nvcc_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="holds no nvcc"):
        find_toolchain(str(tmp_path))


def _hide_standard_locations(monkeypatch, path_dir: Path) -> None:
    monkeypatch.setattr(toolchain_mod, "_from_pathfinder", lambda: None)
    monkeypatch.setattr(toolchain_mod, "DEFAULT_CUDA_ROOTS", ())
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(path_dir))


def test_nothing_found_names_every_place_searched(tmp_path: Path, monkeypatch) -> None:
    _hide_standard_locations(monkeypatch, tmp_path)
    with pytest.raises(ToolchainError) as info:
        find_toolchain()
    message = str(info.value)
    assert "nvcc not found" in message and "PATH" in message and "cuda-pathfinder" in message
    assert "pip install 'kerncast[cuda]'" in message


def _link_toolkit(real: Toolchain, bin_dir: Path) -> None:
    bin_dir.mkdir(parents=True)
    (bin_dir / "nvcc").symlink_to(real.nvcc)
    (bin_dir / "ptxas").symlink_to(real.ptxas)


@pytest.mark.nvcc
def test_search_falls_back_to_path_then_cuda_home(nvcc_available: Toolchain, tmp_path: Path,
                                                  monkeypatch) -> None:
    _hide_standard_locations(monkeypatch, tmp_path / "empty")
    _link_toolkit(nvcc_available, tmp_path / "home" / "bin")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    from_home = find_toolchain()
    assert (from_home.origin, from_home.nvcc) == ("CUDA_HOME", tmp_path / "home" / "bin" / "nvcc")
    _link_toolkit(nvcc_available, tmp_path / "onpath")
    monkeypatch.setenv("PATH", str(tmp_path / "onpath"))
    from_path = find_toolchain()
    assert (from_path.origin, from_path.nvcc) == ("PATH", tmp_path / "onpath" / "nvcc")
    assert from_path.version == nvcc_available.version


@pytest.mark.nvcc
def test_explicit_setting_wins_and_reports_version(nvcc_available: Toolchain) -> None:
    chosen = find_toolchain(str(nvcc_available.nvcc.parent))
    assert chosen.origin == "setting" and chosen.nvcc == nvcc_available.nvcc
    assert re.fullmatch(r"\d+\.\d+(\.\d+)*", chosen.version)


@pytest.mark.nvcc
def test_missing_host_compiler_is_a_toolchain_error_naming_gpp(nvcc_available: Toolchain, tmp_path: Path,
                                                                monkeypatch) -> None:
    src = write(tmp_path / "host.cu", "__global__ void k() {}\n")
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # a machine with nvcc from pip but no gcc/g++
    with pytest.raises(ToolchainError) as info:
        compile_cuda(src, options=CompileOptions(nvcc_path=str(nvcc_available.nvcc)))
    assert "g++" in str(info.value) and "apt-get install g++" in str(info.value)


@pytest.mark.nvcc
def test_ptxas_rejecting_input_raises_its_own_error(nvcc_available: Toolchain) -> None:
    with pytest.raises(PtxasError, match="ptxas failed"):
        ptxas_resources("this is not ptx\n", "sm_80", nvcc_available)


# ------------------------------------------------------------------------------------------- pure parsing

PTXAS_CUDA13 = """\
ptxas info    : 0 bytes gmem, 64 bytes cmem[3]
ptxas info    : Compiling entry function '_ZN2ns2tkIfEEvPT_' for 'sm_80'
ptxas info    : Function properties for _ZN2ns2tkIfEEvPT_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 1.592 ms
ptxas info    : Compiling entry function 'kc' for 'sm_80'
ptxas info    : Function properties for kc
    256 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 40 registers, used 2 barriers, 256 bytes cumulative stack size, 1024 bytes smem, \
364 bytes cmem[0]
ptxas info    : Compile time = 10.172 ms
ptxas info    : Function properties for _Z6helperPfi
    96 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

PTXAS_LEGACY = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_35'
ptxas info    : Function properties for _Z6kernelPf
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 63 registers, 8+0 bytes lmem, 16+16 bytes smem, 344 bytes cmem[0], 4 bytes cmem[2]
ptxas info    : Compiling entry function 'plain' for 'sm_35'
ptxas info    : Used 2 registers, 320 bytes cmem[0]
"""


def test_parse_ptxas_cuda13_format() -> None:
    kernels = parse_ptxas_output(PTXAS_CUDA13)
    # the non-entry helper and the module totals are not kernels
    assert set(kernels) == {"_ZN2ns2tkIfEEvPT_", "kc"}
    tk, kc = kernels["_ZN2ns2tkIfEEvPT_"], kernels["kc"]
    assert (tk.registers, tk.barriers, tk.shared_bytes, tk.const_bytes, tk.stack_bytes) == (8, 0, 0, 360, 0)
    assert (kc.registers, kc.barriers, kc.shared_bytes, kc.const_bytes) == (40, 2, 1024, 364)
    assert (kc.stack_bytes, kc.spill_stores, kc.spill_loads, kc.local_bytes) == (256, 24, 20, 256)


def test_parse_ptxas_legacy_format_with_split_sizes() -> None:
    kernels = parse_ptxas_output(PTXAS_LEGACY)
    k = kernels["_Z6kernelPf"]
    assert (k.registers, k.local_bytes, k.shared_bytes, k.const_bytes) == (63, 8, 32, 348)
    assert (k.stack_bytes, k.spill_stores, k.spill_loads) == (8, 4, 4)
    assert k.barriers is None  # this release did not print barriers
    plain = kernels["plain"]
    assert (plain.registers, plain.shared_bytes, plain.stack_bytes, plain.barriers) == (2, 0, None, None)


def test_parse_ptxas_ignores_noise() -> None:
    assert parse_ptxas_output("") == {}
    assert parse_ptxas_output("ptxas info    : 0 bytes gmem\nsomething else entirely\n") == {}


def _ctx(tmp_path: Path, text: str) -> SourceContext:
    src = tmp_path / "main.cu"
    return SourceContext(compiled=src, original=src, text=text, search_dirs=[], cwd=tmp_path)


def test_parse_nvcc_numbered_error_and_gcc_format_with_include_chain(tmp_path: Path) -> None:
    text = '// a\n#include "a.h"\nint x = y;\n'
    output = (
        "main.cu(3): error #20: identifier \"y\" is undefined\n"
        "  int x = y;\n"
        "          ^\n\n"
        "In file included from main.cu:2:\n"
        "a.h:7:3: error: 'foo' was not declared in this scope\n"
        "main.cu:3:9: warning: unused variable\n"
    )
    diags = parse_nvcc_output(output, _ctx(tmp_path, text))
    assert [(d.line, d.column, d.severity, d.in_header) for d in diags] == [
        (3, 9, "error", False), (2, len('#include "'), "error", True), (3, 9, "warning", False)]
    assert diags[0].message == 'identifier "y" is undefined'
    assert "a.h" in diags[1].message and "line 7" in diags[1].message


def test_parse_nvcc_fatal_and_remarks(tmp_path: Path) -> None:
    output = ("nvcc fatal   : Value 'sm_1' is not defined for option 'gpu-architecture'\n"
              "main.cu(1): remark #177-D: something\n"
              "1 error detected in the compilation of \"main.cu\".\n")
    [diag] = parse_nvcc_output(output, _ctx(tmp_path, ""))
    assert (diag.line, diag.column, diag.severity) == (1, 1, "error")
    assert diag.message.startswith("nvcc: Value 'sm_1'")
