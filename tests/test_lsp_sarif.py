"""`kerncast analyze --format sarif`: SARIF 2.1.0 with the same findings the language server publishes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kerncast.analysis.pipeline import analyze_file
from kerncast.server.sarif import to_sarif
from source_lines import line_of

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", *args, "--format", "sarif"],
                          capture_output=True, text=True, timeout=300)


def test_sarif_of_an_example_matches_the_findings(nvcc_available: object) -> None:
    path = EXAMPLES / "transpose.cu"
    proc = _run(str(path))
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "Kerncast"
    assert run["invocations"][0]["executionSuccessful"] is True
    results = run["results"]
    expected = {(f.code, f.line) for f in analyze_file(path).all_findings()}
    got = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results}
    assert got == expected
    naive_store = line_of(path, "odata[x * height + (y + j)]")
    column_read = line_of(path, "= tile[threadIdx.x][threadIdx.y + j]")  # transposeTiled's read of its tile
    assert {("uncoalesced-global", naive_store), ("shared-bank-conflict", column_read)} <= got
    rules = run["tool"]["driver"]["rules"]
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["level"] in ("error", "warning", "note")
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == path.as_uri()
    bank = next(r for r in results if r["ruleId"] == "shared-bank-conflict")
    declared = line_of(path, "float tile[TILE_DIM][TILE_DIM];")  # transposeTiled's tile
    assert bank["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == declared
    assert bank["properties"]["kernel"] == "transposeTiled"
    assert bank["properties"]["fix"]["kind"] == "pad-shared-array"


def test_sarif_of_a_broken_file(tmp_path: Path, nvcc_available: object) -> None:
    path = tmp_path / "broken.cu"
    path.write_text("__global__ void k(float *x)\n{\n    x[0] = nope;\n}\n")
    proc = _run(str(path))
    assert proc.returncode == 1
    run = json.loads(proc.stdout)["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    err = next(r for r in run["results"] if r["ruleId"] == "compile-error")
    assert err["level"] == "error"
    assert err["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_relative_paths_use_srcroot(tmp_path: Path) -> None:
    path = tmp_path / "empty.cu"
    path.write_text("")
    report = analyze_file(path)
    report.file = "src/empty.cu"
    run = to_sarif(report)["runs"][0]
    loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "src/empty.cu", "index": 0, "uriBaseId": "%SRCROOT%"}
    assert run["results"][0]["ruleId"] == "input-error"
