"""`kerncast analyze` as a user runs it: a real process, real nvcc, real files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.server.render_text import MINOR_LINE_SHARE, render_file_report

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kerncast.server", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def test_analyze_prints_kernels_registers_shared_and_loops(nvcc_available):
    proc = run_cli("analyze", "examples/matmul.cu")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "kernel MatrixMulCUDA<32>" in out and "kernel matmulNaive" in out
    assert "static shared memory: 8192 B" in out
    assert "loop at line" in out


def test_analyze_json_has_stable_keys(nvcc_available):
    proc = run_cli("analyze", "examples/vector_add.cu", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"file", "gpu", "kernels", "findings"} <= set(data)
    (k,) = data["kernels"]
    assert {"name", "mangled", "line", "registers", "shared_bytes", "time", "power", "energy", "findings"} <= set(k)
    assert k["name"] == "vectorAdd" and k["mangled"] == "_Z9vectorAddPKfS0_Pfi" and k["line"] == 5
    assert isinstance(k["registers"], int) and k["registers"] > 0


def test_syntax_error_is_reported_at_its_line_and_fails(nvcc_available, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float *a)\n{\n    a[0] = 1.0f\n    a[1] = 2.0f;\n}\n")
    proc = run_cli("analyze", str(bad))
    assert proc.returncode != 0
    assert f"{bad}:3:" in proc.stderr or f"{bad}:4:" in proc.stderr
    assert "error" in proc.stderr


def test_syntax_error_json_names_line(nvcc_available, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(int *a)\n{\n    undeclared_thing(a);\n}\n")
    proc = run_cli("analyze", str(bad), "--format", "json")
    assert proc.returncode == 1
    findings = json.loads(proc.stdout)["findings"]
    assert findings and findings[0]["code"] == "compile-error" and findings[0]["line"] == 3
    assert "undeclared_thing" in findings[0]["message"]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("empty.cu", b"", "empty"),
        ("blank.ptx", b"\n\n   \n", "empty"),
        ("blob.cu", bytes(range(256)) * 4, "binary"),
        ("latin.ptx", b"\xff\xfe.version 8.0", "not UTF-8"),
    ],
)
def test_empty_and_binary_files_explain_and_fail(tmp_path, name, content, expected):
    f = tmp_path / name
    f.write_bytes(content)
    proc = run_cli("analyze", str(f))
    assert proc.returncode == 1
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_file_explains_and_fails(tmp_path):
    proc = run_cli("analyze", str(tmp_path / "nope.cu"))
    assert proc.returncode == 1 and "cannot read" in proc.stderr and "Traceback" not in proc.stderr


def test_malformed_ptx_reports_position(tmp_path):
    f = tmp_path / "bad.ptx"
    f.write_text(".version 8.0\n.target sm_80\n.address_size 64\n.entry k()\n{\n\tadd.s32 %r1, ;\n}\n")
    proc = run_cli("analyze", str(f))
    assert proc.returncode == 1
    assert f"{f}:6:" in proc.stderr and "malformed PTX" in proc.stderr


def test_missing_nvcc_is_one_clear_message(tmp_path):
    proc = run_cli("analyze", "examples/vector_add.cu", "--nvcc", str(tmp_path / "no-nvcc"))
    assert proc.returncode == 1
    assert "nvcc" in proc.stderr and "Traceback" not in proc.stderr


def test_text_report_lists_the_energy_lines_that_matter_and_sums_the_rest(nvcc_available):
    """Lines of at least 1% of a kernel's dynamic energy are listed; the others are one summed line."""
    report = analyze_file(REPO / "examples" / "matmul.cu", options=AnalysisOptions(lime=False))
    text = render_file_report(report)
    kernel = next(k for k in report.to_json()["kernels"] if k["name"] == "matmulNaive")
    lines = kernel["energy"]["event_model"]["lines"]
    major = [ln for ln in lines if ln["share"] >= MINOR_LINE_SHARE]
    minor = [ln for ln in lines if ln["share"] < MINOR_LINE_SHARE]
    assert major and minor, "matmulNaive should have both kinds of line for this test to mean anything"
    block = text.split("kernel matmulNaive", 1)[1].split("\nkernel ", 1)[0]
    listed = re.findall(r"^    line (\d+): (\d+)% of the dynamic energy", block, re.MULTILINE)
    assert [int(n) for n, _ in listed] == [ln["line"] for ln in major]
    summed = sum(ln["share"] for ln in minor)
    assert f"    {len(minor)} more lines, each below 1%: {summed:.1%} of the dynamic energy together" in block
