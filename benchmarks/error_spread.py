"""The one writer of `analysis/data/time_error.toml`: the kerncast time model's measured error spread.

Two scripts measure it: `validate_time.py` over the thesis's measured tables (the spread every GPU's range
carries) and `validate_measured.py` over the launches measured on one GPU (`validation/<gpu>/`, the spread of
that GPU's range, which replaces the general one there). Each rewrites its own table and keeps the others. The
spread widens the shown range only: no prediction reads it.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any

ERROR_BAND = Path(__file__).resolve().parent.parent / "analysis" / "data" / "time_error.toml"

_HEADER = (
    "# The kerncast time model's measured error spread, written by benchmarks/validate_time.py\n"
    "# --write-error-band. It widens the range every shown time carries (stated as such in each\n"
    "# prediction); it is not an input of any prediction: no point estimate reads this file.\n"
    "# [kerncast.gpu.<id>] tables, written by benchmarks/validate_measured.py --write-error-band, hold the\n"
    "# spread over the launches measured on that GPU (validation/<id>/), which its range carries instead.\n"
)


def add_write_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """The `--write-error-band` option both validation scripts take; `what` says which spread they write."""
    parser.add_argument("--write-error-band", action="store_true",
                        help=f"write {what} to {ERROR_BAND.relative_to(ERROR_BAND.parents[2])}")


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 1]) of a non-empty list."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def spread(ratios: list[float]) -> dict[str, float]:
    """The 10th percentile, median and 90th percentile of measured / predicted."""
    return {"low_ratio": percentile(ratios, 0.1), "median_ratio": percentile(ratios, 0.5),
            "high_ratio": percentile(ratios, 0.9)}


def write(basis: str, ratios: list[float], gpu: str | None = None) -> None:
    """Set the general spread (gpu None) or one GPU's from measured / predicted ratios, keeping the rest."""
    data: dict[str, Any] = tomllib.loads(ERROR_BAND.read_text(encoding="utf-8")) if ERROR_BAND.is_file() else {}
    kerncast = data.setdefault("kerncast", {})
    gpus = kerncast.pop("gpu", {})
    entry = {"basis": basis, "rows": len(ratios), **spread(ratios)}
    if gpu is None:
        entry.pop("median_ratio")  # the general range has never shown it
        kerncast.clear()
        kerncast.update(entry)
    else:
        gpus[gpu] = entry
    text = _HEADER + "[kerncast]\n" + _table(kerncast)
    for gid in sorted(gpus):
        text += f"\n[kerncast.gpu.{gid}]\n" + _table(gpus[gid])
    ERROR_BAND.write_text(text, encoding="utf-8")


_COMMENTS = {"low_ratio": "10th percentile of measured / predicted", "median_ratio": "median",
             "high_ratio": "90th percentile of measured / predicted"}


def _table(entry: dict[str, Any]) -> str:
    lines = []
    for key, value in entry.items():
        if isinstance(value, str):
            lines.append(f'{key} = "{value}"')
        elif isinstance(value, float):
            lines.append(f"{key} = {value:.3f}  # {_COMMENTS[key]}")
        else:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"
