"""A kernel defined in a header and launched from the `.cu` that includes it is reported in the header.

`tests/header_kernels/main.cu` defines `fill` and launches it and `strided_gather`, which `gather.cuh` defines.
nvcc's PTX of main.cu places `strided_gather`'s instructions in gather.cuh (`.file`/`.loc`): its line, loops and
findings are the header's, so the report keeps it apart from main.cu's own kernels and names its file, while
its launch and its `stride` argument are read from main.cu, which launches it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.server.render_text import render_file_report
from kerncast.server.sarif import to_sarif
from source_lines import line_of

HERE = Path(__file__).resolve().parent / "header_kernels"
MAIN = HERE / "main.cu"
HEADER = HERE / "gather.cuh"
OPTIONS = AnalysisOptions(gpu="h100", lime=False)
REPO = Path(__file__).resolve().parent.parent


def test_a_header_kernel_is_placed_in_the_header_with_the_launch_of_the_cu(nvcc_available) -> None:
    report = analyze_file(MAIN, options=OPTIONS)
    assert report.ok, [f.message for f in report.findings]
    assert [k.name for k in report.kernels] == ["fill"] and report.kernels[0].file is None
    assert [k.name for k in report.included_kernels] == ["strided_gather", "halve"]
    k = report.included_kernels[0]
    assert Path(k.file or "") == HEADER
    assert k.line == line_of(HEADER, "__global__ void strided_gather")
    assert k.launch is not None and k.launch.grid.value == (8192, 1, 1) and k.launch.block.value == (128, 1, 1)
    assert {name: p.value for name, p in k.launch.params.items()} == {"n": 1 << 20, "stride": 32}
    assert k.launch.params["stride"].line == line_of(MAIN, "strided_gather<<<")
    assert any("launched from main.cu" in n for n in k.notes)
    strided = [f for f in k.findings if f.code == "uncoalesced-global"]
    assert [(f.line, Path(f.file or "")) for f in strided] == [(line_of(HEADER, "in[i * stride]"), HEADER)]
    assert all(Path(f.file or "") == HEADER for f in k.findings)
    # nothing of the header's kernel lands on main.cu's lines
    assert all(f.file is None and f.kernel in (None, "fill") for f in report.all_findings())


def test_a_header_that_launches_its_kernel_itself_gives_its_launch(nvcc_available) -> None:
    """halve.cuh launches `halve` from a host function that main.cu calls: main.cu has no `<<<>>>` for it, so the
    launch is read from the header, as the header's own analysis reads it."""
    report = analyze_file(MAIN, options=OPTIONS)
    k = report.kernel("halve")
    header = HERE / "halve.cuh"
    assert k is not None and Path(k.file or "") == header and k.line == line_of(header, "__global__ void halve")
    assert k.launch is not None and (k.launch.grid.value, k.launch.block.value) == ((64, 1, 1), (512, 1, 1))
    assert k.launch.grid.source == "launch-site" and k.launch.grid.line == line_of(header, "halve<<<")
    assert not [n for n in k.notes if n.startswith("launched from")]


def test_the_header_alone_is_still_analysed_through_its_includer(nvcc_available) -> None:
    report = analyze_file(HEADER, options=OPTIONS)
    assert report.ok and report.includer is not None and Path(report.includer) == MAIN
    (k,) = report.kernels
    assert k.file is None and k.line == line_of(HEADER, "__global__ void strided_gather")
    assert [f.line for f in k.findings if f.code == "uncoalesced-global"] == [line_of(HEADER, "in[i * stride]")]


def test_text_and_sarif_name_the_header(nvcc_available) -> None:
    report = analyze_file(MAIN, options=OPTIONS)
    text = render_file_report(report)
    assert f"kernel strided_gather  ({report.included_kernels[0].file} line {line_of(HEADER, '__global__')}," in text
    assert f"{report.included_kernels[0].file}:{line_of(HEADER, 'in[i * stride]')}:" in text
    (run,) = to_sarif(report)["runs"]
    by_rule = {r["ruleId"]: r for r in run["results"] if r.get("properties", {}).get("kernel") == "strided_gather"}
    location = by_rule["uncoalesced-global"]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("header_kernels/gather.cuh")
    assert "index" not in location["artifactLocation"]
    assert location["region"]["startLine"] == line_of(HEADER, "in[i * stride]")
    assert "strided_gather" in run["properties"]["kernels"]


def test_cli_json_gives_each_kernel_and_finding_its_file(nvcc_available) -> None:
    proc = subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", str(MAIN), "--gpu", "h100",
                           "--format", "json"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [(k["name"], k["file"]) for k in data["kernels"]] == [("fill", None)]
    k = data["included_kernels"][0]
    assert (k["name"], Path(k["file"]), k["line"]) == ("strided_gather", HEADER,
                                                      line_of(HEADER, "__global__ void strided_gather"))
    assert k["launch"]["params"] == {"n": 1 << 20, "stride": 32}
    found = {(f["code"], f["line"], Path(f["file"])) for f in k["findings"]}
    assert ("uncoalesced-global", line_of(HEADER, "in[i * stride]"), HEADER) in found
    assert all("file" not in f for f in data["kernels"][0]["findings"])


def test_a_folder_run_reports_a_header_kernels_findings_once(nvcc_available) -> None:
    """The folder holds the header and the .cu that includes it: both analyses report the header's kernel, and
    the combined SARIF keeps one result per rule, message and place."""
    proc = subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", str(HERE), "--gpu", "h100",
                           "--format", "sarif", "--jobs", "1"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    places = [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
               r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]]
    assert ("uncoalesced-global", "gather.cuh", line_of(HEADER, "in[i * stride]")) in places
    assert len(places) == len(set(places)), places
