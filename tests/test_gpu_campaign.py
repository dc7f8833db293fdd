"""The GPU campaign (benchmarks/gpu_campaign.py) is right before a GPU runs it.

Its dry run does everything but the GPU steps on a small subset (the calibration harness and the measurement
harnesses are built with nvcc, the cases are predicted, the plan and an empty report are written); the full
case list is checked for size, class coverage and kernels that exist in their sources; the report and the
resumption are exercised on rows written through the campaign's own CSV writer.
"""

from __future__ import annotations

import csv
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from kerncast.analysis.calibration.measure import LaunchSpec, Measurement
from kerncast.analysis.calibration.stats import summarize

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))  # the campaign imports its sibling scripts by name
CAMPAIGN = runpy.run_path(str(REPO / "benchmarks" / "gpu_campaign.py"))
KERNELS = runpy.run_path(str(REPO / "benchmarks" / "campaign_kernels.py"))
REQUIRED_CLASSES = {"fp64", "sfu", "tensor cores", "atomics", "local memory", "divergent", "shared memory",
                    "streaming", "strided"}


def test_the_campaign_covers_150_kernels_of_every_class_with_sources_that_define_them():
    cases = CAMPAIGN["all_cases"]()
    kernels = CAMPAIGN["distinct_kernels"](cases)
    assert len(kernels) >= 150
    assert {c.klass for c in cases} >= REQUIRED_CLASSES
    assert any(c.klass.startswith("ladder ") for c in cases)
    assert CAMPAIGN["check_sources"](cases) == []
    launches: dict[tuple, set] = {}
    for c in cases:
        launches.setdefault((c.file, c.kernel), set()).add(c.size)
    coverage = [k for k in launches if k[0].startswith("benchmarks/data/coverage/")]
    assert coverage and all(len(launches[k]) >= 2 for k in coverage)  # small and large grids at least
    assert len({c.key() for c in cases}) == len(cases)  # no launch measured twice


def test_committed_coverage_kernels_are_what_the_generator_writes():
    assert KERNELS["stale"]() == []


def test_dry_run_needs_an_output_folder():
    with pytest.raises(SystemExit):
        CAMPAIGN["main"](["--gpu-id", "x", "--dry-run"])


@pytest.mark.nvcc
def test_dry_run_builds_predicts_and_writes_the_plan(nvcc_available, tmp_path):
    # as a user runs it: its own process (the predictions run in a process pool)
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_campaign.py"), "--gpu-id", "testgpu",
                          "--dry-run", "--out-root", str(tmp_path), "--only", "coverage/strided", "--limit", "3",
                          "--jobs", "2"], capture_output=True, text=True, timeout=900, check=False)
    printed = run.stdout
    assert run.returncode == 0, printed + run.stderr
    folder = tmp_path / "validation" / "testgpu"
    plan = json.loads((folder / "campaign_plan.json").read_text())
    assert plan["dry_run"] and plan["cases"] == 3 and plan["campaign_distinct_kernels"] >= 150
    assert plan["calibration"][2:4] == ["kerncast.server", "calibrate"]
    assert "SASS checks of the calibration microbenchmarks pass for sm_90" in printed
    assert "calibration harness builds for sm_90" in printed
    built = list((tmp_path / "build" / "campaign" / "testgpu").glob("*/kerncast_measure"))
    assert len(built) == plan["distinct_kernels"] == 2  # loadStride2 at two launches, loadStride3
    report = (folder / "REPORT.md").read_text()
    assert "Dry run: nothing was measured; 3 of the 3 planned launches have a prediction" in report
    assert (folder / "power_rows.csv").read_text().startswith("Benchmark,Kernel Name,")
    assert not (folder / "measurements.csv").exists()
    assert not (tmp_path / "analysis" / "gpus" / "testgpu.toml").exists()  # nothing calibrated without a GPU


def _measurement(case, time_us: float, power_w: float) -> Measurement:
    spec = case.spec(0)
    assert isinstance(spec, LaunchSpec)
    return Measurement(gpu="NVIDIA H100 80GB HBM3", driver="13000", source_file=case.file, spec=spec,
                       timing=summarize([time_us] * 20), stable=True, power_w=power_w, power_samples=6, params=[])


def test_report_and_resumption_from_measured_rows(tmp_path):
    out = CAMPAIGN["Outputs"](tmp_path, "testgpu")
    # a file `kerncast measure --append-csv` started: its row stays, the campaign's columns are added
    out.folder.mkdir(parents=True)
    old = "gpu,kernel,source_file,grid,block,dynamic_shared_bytes,time_us,power_w,repetitions,date,driver\n" \
          "H100,vectorAdd,examples/vector_add.cu,196x1x1,256x1x1,0,4.8640,107.90,100000,2026-11-23,13000\n"
    out.measurements.write_text(old)
    cases = [c for c in CAMPAIGN["coverage_cases"]() if c.kernel in ("copyF32", "loadStride8")][:3]
    predictions = {c.key(): {"models": {"kerncast": 10.0, "thesis": 20.0, "mwp-cwp": 5.0}, "range": [8.0, 12.0],
                             "power_w": 150.0} for c in cases}
    for c in cases:
        CAMPAIGN["append_row"](out.measurements, c, _measurement(c, 10.0, 200.0))
    with out.measurements.open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["kernel"] for r in rows] == ["vectorAdd", *(c.kernel for c in cases)]
    assert rows[0]["time_us"] == "4.8640" and rows[0]["params"] == ""
    assert rows[1]["params"] == ";".join(cases[0].params) and rows[1]["size"] == cases[0].size
    # a second run measures nothing: every case is in the file (no GPU is touched)
    assert CAMPAIGN["measure_all"](cases, {}, out, 0, float("inf")) == (0, 0, True)
    text = CAMPAIGN["write_report"](out, cases, predictions, False, "analysis/gpus/testgpu.toml")
    # kerncast exact, thesis 100% over, MWP-CWP 50% under; power 150 W against 200 W: 25% (inside 25%)
    assert f"| all | {len(cases)} | 0% | 100% | 100% | 0% | 50% | 0% | 25% | 100% |" in text
    assert "inside the shown kerncast range: 3 of 3 rows" in text
    assert (out.folder / "predicted_vs_measured_kerncast.png").stat().st_size > 1000
    assert CAMPAIGN["write_power_rows"](out, cases) == len(cases)


def test_report_only_predicts_the_measured_rows_without_a_gpu(nvcc_available, tmp_path):
    out = CAMPAIGN["Outputs"](tmp_path, "testgpu")
    case = next(c for c in CAMPAIGN["coverage_cases"]() if c.kernel == "copyF32")
    CAMPAIGN["append_row"](out.measurements, case, _measurement(case, 10.0, 200.0))
    # its own process, as a user runs it (the predictions run in a process pool)
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_campaign.py"), "--gpu-id", "testgpu",
                          "--report-only", "--out-root", str(tmp_path), "--jobs", "1", "--base", "h100"],
                         capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    report = out.report.read_text()
    assert "1 measured and predicted with the profile `h100`" in report and "Dry run" not in report
    assert "| all | 1 |" in report
    assert not (tmp_path / "build").exists()  # nothing was built: no harness, no calibration
