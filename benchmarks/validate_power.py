"""Both power models against measured board power: the launches of `validation/<gpu>/measurements.csv` at the
exact launches measured (for the H100 file, the cases of `benchmarks/measure_gpu.py`, its parameters and buffer
sizes; for a GPU campaign's file, e.g. `validation/h200/`, each row's own `params` column), scored per model by
`kerncast.analysis.power.validation` (MAPE, MAPE over benchmarks, share within 15%, interval coverage, median
interval width / (TDP - idle)). A benchmark here is one kernel (each measured at a small and a large launch).

    .venv/bin/python benchmarks/validate_power.py [--gpu h100|h200] [--measured FILE] [--format json] [--rows]

`--rows` adds a line per launch: measured and predicted power, the event model's idle, static (of it the idle
SMs') and dynamic parts, its drivers, and the measured beside the predicted time (dynamic power is the events'
energy over the predicted time, so a time off by 2x moves it by 2x).

`--measured` names another file of the GPU's folder with a campaign's columns, e.g. `power_energy_counter.csv`:
the H100 launches re-measured with the board's energy counter, whose power is the launches' own (a plain
`measurements.csv` row read before the counter was used mixes in the power of the launch measured before it).

Nothing is fitted to these rows; `kerncast power evaluate --measured validation/h100/measurements.csv --gpu h100
--root .` scores the same file from its CSV columns alone (the launch sites' parameter values, not the measured
ones, so a few launches differ).
"""

from __future__ import annotations

import argparse
import csv
import json
import runpy
from dataclasses import replace
from pathlib import Path

from kerncast.analysis.power.validation import (
    MeasuredLaunch,
    evaluate_launches,
    format_rows,
    format_text,
    read_launches,
)

_VALIDATE = runpy.run_path(str(Path(__file__).with_name("validate_measured.py")))
ROOT: Path = _VALIDATE["ROOT"]


def measured_launches(gpu: str, name: str = "measurements.csv") -> list[MeasuredLaunch]:
    """The measured launches of `validation/<gpu>/measurements.csv` that have a power reading. A GPU campaign's
    file (benchmarks/gpu_campaign.py) carries each row's scalar parameters (`params`) and is read as `kerncast
    power evaluate --measured` reads a CSV; a row of the earlier H100 file is looked up among measure_gpu.py's
    cases. A benchmark is one kernel of one file."""
    path = ROOT / "validation" / gpu / name
    with path.open(encoding="utf-8") as fh:
        campaign = "params" in (next(csv.reader(fh), None) or [])
    if campaign:
        return [replace(m, benchmark=f"{m.file.relative_to(ROOT).as_posix()}:{m.kernel}")
                for m in read_launches(path, root=ROOT)]
    out = []
    with path.open(encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            found = _VALIDATE["_case_for"](rec)
            if found is None or not rec.get("power_w"):
                continue
            case, _ = found
            out.append(MeasuredLaunch(ROOT / case.file, case.kernel, case.overrides(), float(rec["power_w"]),
                                      f"{case.file}:{case.kernel}",
                                      float(rec["time_us"]) if rec.get("time_us") else None))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h100", help="profile id with a validation/<gpu>/measurements.csv")
    ap.add_argument("--measured", default="measurements.csv",
                    help="file of validation/<gpu>/ to score (default measurements.csv)")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    ap.add_argument("--rows", action="store_true", help="with text: also a line per launch")
    args = ap.parse_args(argv)
    result = evaluate_launches(measured_launches(args.gpu, args.measured), args.gpu)
    if args.format == "json":
        print(json.dumps(result, indent=1))
    else:
        print(format_text(result) + ("\n" + format_rows(result) if args.rows else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
