"""Hostile input through the library and the CLI: settings are data, bounds are checked where input enters.

Defines that the compiler's shell would interpret are refused and run nothing, include directories so named
reach nvcc as links and run nothing; a source file whose own name holds `$(...)` is compiled without running
it; a huge shift, a negative array size, deep operand nesting and a huge timeout give clean results; a
timed-out compile leaves no temporary file behind; the `exit;`-only kernel writes strict JSON and SARIF.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from kerncast.analysis.compile import (
    CONST_BANK_BYTES,
    CompileOptions,
    compile_cuda,
    declared_const_bytes,
    declared_registers,
)
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.toolchain import MAX_TIMEOUT_S, check_define, check_timeout, finish_removals, run_tool, shown

CLI = [sys.executable, "-m", "kerncast.server"]
KERNEL_CU = "__global__ void k(int *p) { p[threadIdx.x] = 1; }\n"
HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"
EXIT_ONLY_PTX = HEADER + ".visible .entry k()\n{\n\texit;\n}\n"
HUGE_SHIFT_PTX = HEADER + """.visible .entry k(.param .u64 p)
{
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [p];
\tmov.u32 %r2, %tid.x;
\tshr.s32 %r3, %r2, 9223372036854775807;
\tshl.b32 %r4, %r2, 9223372036854775807;
\tmul.wide.s32 %rd2, %r3, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r4;
\texit;
}
"""


def hostile_defines(marker: Path) -> list[str]:
    return [f"Y=$(touch {marker})", f"Z=`touch {marker}`", f'Q="a";touch {marker}', f"S=1;touch {marker}",
            f"T=1|touch {marker}", f"U=1&touch {marker}", f"V=1>{marker}", f"W=1\ntouch {marker}"]


def _strict_json(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"non-strict JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------------------------------------ defines

def test_check_define_accepts_names_and_values() -> None:
    for ok in ("N", "N=256", "_X1=0x10", "F(a,b)=a", "VERSION=1.2"):
        assert check_define(ok) == ok


def test_check_define_refuses_shell_characters_and_names_the_value(tmp_path: Path) -> None:
    for define in hostile_defines(tmp_path / "FILE"):
        with pytest.raises(ValueError) as caught:
            check_define(define)
        assert "rejected" in str(caught.value) and shown(define) in str(caught.value)
    with pytest.raises(ValueError, match="not a macro name"):
        check_define("1X=2")
    with pytest.raises(ValueError, match=r"\(5004 characters\)"):
        check_define("A=" + "x" * 5000)


@pytest.mark.nvcc
def test_library_refuses_hostile_defines_and_runs_nothing(nvcc_available: object, tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text(KERNEL_CU)
    marker = tmp_path / "FILE"
    result = compile_cuda(src, options=CompileOptions(defines=hostile_defines(marker)))
    assert not result.ok
    messages = [d.message for d in result.diagnostics]
    assert len(messages) == len(hostile_defines(marker)) and all("rejected" in m for m in messages)
    assert not marker.exists()


@pytest.mark.nvcc
def test_cli_refuses_hostile_defines(nvcc_available: object, tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text(KERNEL_CU)
    marker = tmp_path / "FILE"
    for value in hostile_defines(marker)[:4]:
        proc = subprocess.run([*CLI, "analyze", str(src), "-D", value], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "rejected" in proc.stderr and shown(value)[:40] in proc.stderr
    assert not marker.exists()


@pytest.mark.nvcc
def test_cli_include_dirs_named_like_commands_reach_nvcc_as_links_and_run_nothing(
        nvcc_available: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An include directory is a folder, whatever its name: one the compiler's shell would interpret is handed to
    nvcc as a link with a plain name, so its headers are found and the name never runs."""
    monkeypatch.setenv("HOME", str(tmp_path))
    src = tmp_path / "k.cu"
    src.write_text('#include "val.h"\n' + KERNEL_CU.replace("= 1;", "= VALUE;"))
    marker = tmp_path / "FILE"
    for value in hostile_defines(marker)[:4]:
        folder = tmp_path / value.split("=", 1)[1].replace(str(marker), "FILE")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "val.h").write_text("#define VALUE 7\n")
        proc = subprocess.run([*CLI, "analyze", str(src), "-I", str(folder)], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "kernel k" in proc.stdout
        (folder / "val.h").unlink()
    assert not marker.exists() and not (tmp_path / "FILE").exists()


@pytest.mark.nvcc
def test_source_named_with_a_substitution_is_compiled_without_running_it(
        nvcc_available: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvcc hands the source path to the host compiler through a shell; a name must not become a command."""
    monkeypatch.setenv("HOME", str(tmp_path))  # `cd` alone goes HOME: the marker lands where the test looks
    marker = tmp_path / "FILE"
    folder = tmp_path / "dir $(cd;touch FILE)"
    folder.mkdir()
    (folder / "inc.h").write_text("#define VALUE 3\n")
    src = folder / "k `cd;touch FILE`.cu"
    src.write_text('#include "inc.h"\n__global__ void k(int *p) { p[threadIdx.x] = VALUE; }\n')
    report = analyze_file(src, options=AnalysisOptions(lime=False))
    assert [k.name for k in report.kernels] == ["k"], [f.message for f in report.findings]
    assert not [f for f in report.findings if f.severity == "error"]
    assert not marker.exists()


@pytest.mark.nvcc
def test_relative_include_dir_under_a_hostile_folder_runs_nothing(
        nvcc_available: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain relative `includeDirs` entry becomes an absolute path under the workspace folder's own name."""
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = tmp_path / "work `cd;touch FILE`"
    (workspace / "inc").mkdir(parents=True)
    (workspace / "inc" / "val.h").write_text("#define VALUE 5\n")
    monkeypatch.chdir(workspace)
    src = tmp_path / "k.cu"
    src.write_text("#include <val.h>\n__global__ void k(int *p) { p[threadIdx.x] = VALUE; }\n")
    result = compile_cuda(src, options=CompileOptions(include_dirs=["inc"]))
    assert result.ok, [d.message for d in result.diagnostics]
    assert not (tmp_path / "FILE").exists()


# ------------------------------------------------------------------------------------------------ bounds

def test_huge_shift_analyses_cleanly() -> None:
    report = analyze_file("shift.ptx", text=HUGE_SHIFT_PTX, options=AnalysisOptions(lime=False, nvcc_path="/none"))
    assert [k.name for k in report.kernels] == ["k"]
    kernel = report.kernels[0]
    assert kernel.time is not None and kernel.instruction_count == 8
    assert not [n for n in kernel.notes + report.notes if "Error" in n]


def test_negative_array_size_is_a_syntax_error_not_negative_shared_memory() -> None:
    ptx = HEADER + ".visible .entry k()\n{\n\t.shared .b8 sh[-1];\n\texit;\n}\n"
    report = analyze_file("neg.ptx", text=ptx, options=AnalysisOptions(lime=False, nvcc_path="/none"))
    errors = [f for f in report.findings if f.code == "ptx-syntax-error"]
    assert errors and "array size -1" in errors[0].message and errors[0].line == 6
    assert report.kernels == []


def test_deep_nesting_is_a_clear_message() -> None:
    body = "\tmov.b32 %r1, " + "{" * 5000 + "%r2" + "}" * 5000 + ";\n"
    ptx = HEADER + ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n" + body + "\texit;\n}\n"
    report = analyze_file("deep.ptx", text=ptx, options=AnalysisOptions(lime=False, nvcc_path="/none"))
    message = next(f.message for f in report.findings if f.code == "ptx-syntax-error")
    assert "nested more than" in message and "Recursion" not in message


def test_oversized_const_data_never_reaches_ptxas() -> None:
    """ptxas allocates all of a module's `.const` data before refusing more than the 64 KB bank."""
    ptx = HEADER + ".const .align 4 .b8 c[2147483647];\n.visible .entry k()\n{\n\texit;\n}\n"
    assert declared_const_bytes(ptx) == 2147483647
    assert declared_const_bytes(".const .align 16 .v4 .f32 c[16][2];\n.const .b32 x;\n") == 512
    report = analyze_file("const.ptx", text=ptx, options=AnalysisOptions(lime=False))
    assert any(f"exceeds the {CONST_BANK_BYTES // 1024} KB constant bank" in n for n in report.notes), report.notes
    assert [k.name for k in report.kernels] == ["k"]


def test_huge_register_declarations_never_reach_ptxas() -> None:
    """ptxas reserves memory for every declared virtual register (16 GB for `%r<2147483647>`)."""
    ptx = HEADER + ".visible .entry k()\n{\n\t.reg .b32 \t%r<2147483647>;\n\t.reg .pred %p<3>;\n\texit;\n}\n"
    assert declared_registers(ptx) == 2147483650
    report = analyze_file("regs.ptx", text=ptx, options=AnalysisOptions(lime=False))
    assert any("ptxas not run: the PTX declares 2147483650 virtual registers" in n for n in report.notes)
    assert [k.name for k in report.kernels] == ["k"]


def test_timeouts_are_bounded() -> None:
    for bad in (1e10, float("inf"), float("nan"), 0, -1, True, "5"):
        with pytest.raises(ValueError, match="timeout .* rejected"):
            check_timeout(bad)
    assert check_timeout(MAX_TIMEOUT_S) == MAX_TIMEOUT_S
    run = run_tool([sys.executable, "-c", "print('ran')"], 1e10)  # a caller's huge value is held to the bound
    assert run.returncode == 0 and run.stdout.strip() == "ran"


@pytest.mark.nvcc
def test_huge_timeout_is_refused_by_cli_and_library(nvcc_available: object, tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text(KERNEL_CU)
    proc = subprocess.run([*CLI, "analyze", str(src), "--timeout", "1e10"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "timeout 10000000000.0 rejected" in proc.stderr
    assert "Traceback" not in proc.stderr
    result = compile_cuda(src, options=CompileOptions(timeout_s=1e10))
    assert not result.ok and "timeout" in result.diagnostics[0].message


@pytest.mark.nvcc
def test_timed_out_compile_leaves_no_temporary_files(nvcc_available: object, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """nvcc writes `tmpxft_*` files into TMPDIR; killed on a timeout, it cannot remove them itself."""
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp_root))
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))
    src = tmp_path / "heavy.cu"
    src.write_text("\n".join(f"__global__ void k{i}(float *p, int n) {{ for (int j = threadIdx.x; j < n; "
                             f"j += blockDim.x) p[j] = p[j] * {i}.0f + sinf(p[j]); }}" for i in range(3000)))
    result = compile_cuda(src, options=CompileOptions(timeout_s=2.0))
    assert not result.ok and "did not finish within 2 s" in result.diagnostics[0].message
    finish_removals()  # the directory is removed after the result is returned
    assert sorted(p.name for p in temp_root.iterdir()) == []


# ------------------------------------------------------------------------------------------------ output

@pytest.mark.parametrize("fmt", ["json", "sarif", "text"])
def test_exit_only_kernel_is_clean_in_every_format(tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "exit.ptx"
    src.write_text(EXIT_ONLY_PTX)
    proc = subprocess.run([*CLI, "analyze", str(src), "--format", fmt], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "NaN" not in proc.stdout and "Infinity" not in proc.stdout
    if fmt == "text":
        assert "kernel k" in proc.stdout and "nan" not in proc.stdout.lower().replace("nanosec", "")
        return
    data = _strict_json(proc.stdout)
    if fmt == "json":
        assert [k["name"] for k in data["kernels"]] == ["k"]
        nulled = data.get("nulled", [])
    else:
        assert data["version"] == "2.1.0"
        nulled = data.get("properties", {}).get("nulled", [])
    assert all(n["path"].startswith("$.") and "unknown" in n["reason"] for n in nulled)


def test_a_cuda_file_in_windows_1252_is_read_as_such(tmp_path, nvcc_available) -> None:
    """A comment saved by an older editor (a typographic apostrophe, byte 0x92) does not stop the analysis: nvcc
    takes the bytes as they are, and Kerncast reads them as Windows-1252 and says so. PTX stays refused."""
    path = tmp_path / "legacy_comment.cu"
    path.write_bytes(b"// the heart\x92s cells\n" + KERNEL_CU.encode() + b"int main() { k<<<1, 32>>>(0); }\n")
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    assert report.ok and [k.name for k in report.kernels] == ["k"]
    assert report.kernels[0].line == 2
    assert ("legacy_comment.cu is not UTF-8 text (byte 12): it was read as Windows-1252; a column on a line with "
            "such a character may be off by its encoding") in report.notes
    ptx = tmp_path / "latin.ptx"
    ptx.write_bytes(b"// \x92\n" + EXIT_ONLY_PTX.encode())
    refused = analyze_file(ptx)
    assert not refused.ok and "is not UTF-8 text (byte 3)" in refused.findings[0].message
