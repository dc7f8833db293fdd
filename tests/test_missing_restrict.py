"""`missing-restrict` on nvcc's own output: its fix, applied, compiled again with the real nvcc and analysed
again, removes the finding and adds none, and the parameters it declares `__restrict__` are then loaded on the
read-only path (`ld.global.nc`) in the new PTX; the rule is documented from the registry (`kerncast rules`,
SARIF)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.fixing import apply_edits, broken_promises
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.server.sarif import to_sarif

KERNELS = Path(__file__).resolve().parent / "kernels"
SOURCE = KERNELS / "restrict.cu"


@pytest.fixture(scope="module")
def report(nvcc_available) -> FileReport:
    return analyze_file(SOURCE)


def _entry_loads(ptx: str, kernel: str) -> list[str]:
    """The global loads of one kernel's `.entry` in a PTX text."""
    body = re.split(r"\.entry\s+", ptx)
    [text] = [b for b in body[1:] if re.match(rf"_Z\d+{kernel}", b)]
    return re.findall(r"ld\.global[.\w]*", text)


def test_each_fix_is_verified_and_moves_the_loads_to_the_read_only_path(report: FileReport, tmp_path: Path) -> None:
    text = SOURCE.read_text(encoding="utf-8")
    found = [f for f in report.all_findings() if f.code == "missing-restrict"]
    assert {f.kernel for f in found} == {"scale", "weighted", "windowSum", "gatherRows"}
    for f in found:
        assert f.fix is not None and f.fix.applicability == "unsafe" and f.fix.edits, f.kernel
        assert all(e.new_text.startswith("__restrict__") for e in f.fix.edits)
        fixed_text = apply_edits(text, f.fix.edits)
        after = analyze_file(SOURCE, text=fixed_text)
        assert broken_promises(report, after, f, f.fix) == [], f.kernel
        assert not [g for g in after.all_findings() if g.code == "missing-restrict" and g.kernel == f.kernel]
        fixed = tmp_path / f"{f.kernel}.cu"
        fixed.write_text(fixed_text, encoding="utf-8")
        before_loads = _entry_loads(compile_cuda(SOURCE, options=CompileOptions(arch="sm_75")).ptx or "", f.kernel)
        after_loads = _entry_loads(compile_cuda(fixed, options=CompileOptions(arch="sm_75")).ptx or "", f.kernel)
        plain = f.detail["plain_loads"]
        print(f"{f.kernel}: {before_loads} -> {after_loads}")
        assert sum(".nc" not in x for x in before_loads) >= plain
        assert sum(".nc" in x for x in after_loads) - sum(".nc" in x for x in before_loads) == plain, f.kernel


def test_the_finding_names_the_parameters_and_the_load_count(report: FileReport) -> None:
    by = {f.kernel: f for f in report.all_findings() if f.code == "missing-restrict"}
    assert by["weighted"].detail["parameters"] == ["x", "w"] and by["weighted"].detail["plain_loads"] == 3
    assert by["scale"].detail["parameters"] == ["in"] and "'in' only read, by 1 ld.global" in by["scale"].message
    assert by["gatherRows"].fix.edits[0].new_text == "__restrict__ "  # after the last '*': the array's own pointer
    assert by["scale"].severity == "information"


def test_documented_from_the_registry(report: FileReport) -> None:
    out = subprocess.run([sys.executable, "-m", "kerncast.server.cli", "rules", "missing-restrict"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.startswith("missing-restrict (information)") and "add-restrict [unsafe]" in out
    run = to_sarif(report)["runs"][0]
    [rule] = [r for r in run["tool"]["driver"]["rules"] if r["id"] == "missing-restrict"]
    assert rule["helpUri"].endswith("#missing-restrict")
    results = [r for r in run["results"] if r["ruleId"] == "missing-restrict"]
    assert len(results) == 4 and all(r["level"] == "note" for r in results), json.dumps(results)[:300]
