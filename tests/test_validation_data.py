"""The measured validation data: every row names a kernel the repository holds, at a launch its measurement
script lists or (a GPU campaign's file) with the params it was measured with, so that
`benchmarks/validate_measured.py` can predict it at the same launch."""

from __future__ import annotations

import csv
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _dims(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.replace("x", ",").split(",") if p]
    return tuple((parts + [1, 1, 1])[:3])


def test_every_measured_row_is_a_listed_case_of_a_kernel_in_the_repository(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the scripts import their siblings
    cases = runpy.run_path(str(ROOT / "benchmarks" / "measure_gpu.py"))["CASES"]
    files = sorted((ROOT / "validation").glob("*/measurements.csv"))
    assert files, "no measurements committed"
    for path in files:
        with path.open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) >= 50
        for row in rows:
            src = ROOT / row["source_file"]
            assert src.is_file() and not Path(row["source_file"]).is_absolute(), row["source_file"]
            assert "params" in row or any(
                c.file == row["source_file"] and c.kernel == row["kernel"]
                and _dims(c.grid) == _dims(row["grid"]) and _dims(c.block) == _dims(row["block"]) for c in cases), row
            assert row["kernel"].split("<")[0] in src.read_text(encoding="utf-8"), row
            assert float(row["time_us"]) > 0 and float(row["power_w"]) > 0
        assert len({r["kernel"] for r in rows}) >= 25
