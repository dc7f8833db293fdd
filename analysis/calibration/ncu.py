"""Reading Nsight Compute reports: `ncu --csv` exports (raw and details pages) and `.ncu-rep` files.

Nsight Compute is what users with a GPU run; reading its reports lets Kerncast put its predictions next to a
measurement of the user's own kernels. Two CSV layouts exist:

- `ncu --csv --page raw`: one row per profiled launch, one column per metric, a second header row with units;
- `ncu --csv --page details` (the default page, also with `--metrics`): one row per metric, with the columns
  "Section Name", "Metric Name", "Metric Unit", "Metric Value".

Both start with the launch columns "ID", "Kernel Name", "Block Size", "Grid Size", "Device", "CC", and numbers
may carry thousands separators ("1,234,567"); lines before the header (`==PROF==` progress) are skipped. Values
are converted to one unit per quantity: microseconds, bytes, hertz, percent; other units are kept as they are.
A `.ncu-rep` file is read through NVIDIA's `ncu_report` Python module (shipped with Nsight Compute under
`extras/python`), when it can be imported.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the largest report read (a CSV of thousands of launches is a few MB)
MAX_REPORT_BYTES = 256 * 1024 * 1024
_LAUNCH_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                   "Block Size", "Grid Size", "Device", "CC")
_DETAILS_COLUMNS = ("Metric Name", "Metric Unit", "Metric Value")
#: unit -> (canonical unit, factor)
_UNITS: dict[str, tuple[str, float]] = {
    "nsecond": ("us", 1e-3), "usecond": ("us", 1.0), "msecond": ("us", 1e3), "second": ("us", 1e6),
    "ns": ("us", 1e-3), "us": ("us", 1.0), "ms": ("us", 1e3), "s": ("us", 1e6),
    "byte": ("byte", 1.0), "Kbyte": ("byte", 1e3), "Mbyte": ("byte", 1e6), "Gbyte": ("byte", 1e9),
    "Tbyte": ("byte", 1e12), "Kibyte": ("byte", 1024.0), "Mibyte": ("byte", 1024.0 ** 2),
    "Gibyte": ("byte", 1024.0 ** 3), "bit": ("bit", 1.0),
    "hz": ("hz", 1.0), "khz": ("hz", 1e3), "Khz": ("hz", 1e3), "mhz": ("hz", 1e6), "Mhz": ("hz", 1e6),
    "MHz": ("hz", 1e6), "ghz": ("hz", 1e9), "Ghz": ("hz", 1e9), "GHz": ("hz", 1e9),
    "%": ("%", 1.0),
}
#: details-page display names -> the raw metric they show
DISPLAY_NAMES = {
    "Duration": "gpu__time_duration.sum",
    "Achieved Occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "Theoretical Occupancy": "sm__maximum_warps_per_active_cycle_pct",
    "Registers Per Thread": "launch__registers_per_thread",
    "Grid Size": "launch__grid_size",
    "Block Size": "launch__block_size",
    "SM Frequency": "smsp__cycles_elapsed.avg.per_second",
    "DRAM Frequency": "dram__cycles_elapsed.avg.per_second",
}


class NcuReportError(Exception):
    """The report cannot be read; the message says why and what to do."""


@dataclass
class NcuKernel:
    """One profiled launch: its kernel name as the report writes it, launch shape and metric values."""

    id: str
    name: str
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    device: str = ""
    cc: str = ""
    #: metric name -> value in canonical units (us, byte, hz, %, or the report's own unit)
    metrics: dict[str, float] = field(default_factory=dict)
    #: metric name -> canonical unit
    units: dict[str, str] = field(default_factory=dict)
    #: metrics whose value is text (device__attribute_display_name ...)
    text: dict[str, str] = field(default_factory=dict)

    def get(self, metric: str) -> float | None:
        return self.metrics.get(metric)


def parse_dim(text: str) -> tuple[int, int, int]:
    """"(256, 1, 1)" -> (256, 1, 1); a bare "256" -> (256, 1, 1); unreadable -> (0, 0, 0)."""
    numbers = [int(n) for n in re.findall(r"\d+", text.replace(",", " , "))][:3]
    while numbers and len(numbers) < 3:
        numbers.append(1)
    return (numbers[0], numbers[1], numbers[2]) if numbers else (0, 0, 0)


def parse_number(text: str) -> float | None:
    """A report value as a float ("1,234.5" -> 1234.5); None for "n/a", empty or non-numeric text."""
    cleaned = text.strip().replace(",", "")
    if not cleaned:
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def convert(value: float, unit: str) -> tuple[float, str]:
    """`value` in `unit` as (value, canonical unit)."""
    canonical, factor = _UNITS.get(unit.strip(), (unit.strip(), 1.0))
    return value * factor, canonical


def _store(kernel: NcuKernel, metric: str, raw: str, unit: str) -> None:
    number = parse_number(raw)
    if number is None:
        if raw.strip() and raw.strip() != "n/a":
            kernel.text[metric] = raw.strip()
        return
    kernel.metrics[metric], kernel.units[metric] = convert(number, unit)


def _header_index(rows: list[list[str]]) -> int:
    for idx, row in enumerate(rows):
        if "Kernel Name" in row and "ID" in row:
            return idx
    raise NcuReportError("no Nsight Compute CSV header found (expected a row with \"ID\" and \"Kernel Name\"); "
                         "export the report with `ncu --csv --page raw` or `ncu --csv --page details`")


def _launch(row: dict[str, str]) -> NcuKernel:
    return NcuKernel(id=row.get("ID", "").strip(), name=row.get("Kernel Name", "").strip(),
                     block=parse_dim(row.get("Block Size", "")), grid=parse_dim(row.get("Grid Size", "")),
                     device=row.get("Device", "").strip(), cc=row.get("CC", "").strip())


def read_csv_text(text: str) -> list[NcuKernel]:
    """The launches of an `ncu --csv` export (raw or details page), in report order."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    start = _header_index(rows)
    header = [h.strip() for h in rows[start]]
    body = [dict(zip(header, r, strict=False)) for r in rows[start + 1:] if len(r) >= len(_LAUNCH_COLUMNS) - 4]
    if all(col in header for col in _DETAILS_COLUMNS):
        return _read_details(body)
    units: dict[str, str] = {}
    if body and not body[0].get("ID", "").strip() and not body[0].get("Kernel Name", "").strip():
        units = body.pop(0)  # the raw page's units row
    kernels = []
    for row in body:
        kernel = _launch(row)
        for column, raw in row.items():
            if column not in _LAUNCH_COLUMNS and column is not None and raw is not None:
                _store(kernel, column, raw, units.get(column, ""))
        kernels.append(kernel)
    return kernels


def _read_details(body: list[dict[str, str]]) -> list[NcuKernel]:
    by_id: dict[str, NcuKernel] = {}
    for row in body:
        key = row.get("ID", "").strip()
        kernel = by_id.get(key)
        if kernel is None:
            kernel = by_id[key] = _launch(row)
        name = (row.get("Metric Name") or "").strip()
        metric = DISPLAY_NAMES.get(name, name)
        if metric and (metric not in kernel.metrics or metric == name):
            _store(kernel, metric, row.get("Metric Value") or "", row.get("Metric Unit") or "")
    return list(by_id.values())


def read_ncu_rep(path: Path) -> list[NcuKernel]:
    """The launches of a `.ncu-rep` file, through NVIDIA's `ncu_report` module; NcuReportError without it."""
    try:
        import ncu_report  # lazy import: NVIDIA's module ships with Nsight Compute, not with Python packages
    except ImportError:
        raise NcuReportError(
            f"{path.name}: reading a .ncu-rep file needs NVIDIA's ncu_report Python module, which ships with "
            "Nsight Compute in <install>/extras/python (add that folder to PYTHONPATH); or export the report: "
            f"`ncu --import {path.name} --csv --page raw > report.csv`") from None
    try:
        context = ncu_report.load_report(str(path))
    except Exception as exc:  # noqa: BLE001 - NVIDIA's module raises its own types; the message is what counts
        raise NcuReportError(f"{path.name}: ncu_report could not load it: {exc}") from exc
    kernels: list[NcuKernel] = []
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            kernels.append(_from_action(rng.action_by_idx(a), len(kernels)))
    return kernels


def _from_action(action: Any, index: int) -> NcuKernel:
    """One ncu_report action (a profiled launch) as an NcuKernel."""
    def metric(name: str) -> Any:
        return action.metric_by_name(name)

    def dims(prefix: str) -> tuple[int, int, int]:
        values = []
        for axis in ("x", "y", "z"):
            m = metric(f"{prefix}_{axis}")
            values.append(int(m.as_uint64()) if m is not None else 1)
        return (values[0], values[1], values[2])

    kernel = NcuKernel(id=str(index), name=str(action.name()), block=dims("launch__block_dim"),
                       grid=dims("launch__grid_dim"))
    for name in action.metric_names():
        m = metric(name)
        if m is None:
            continue
        try:
            value = float(m.as_double())
        except (TypeError, ValueError, AttributeError):
            text = m.as_string() if hasattr(m, "as_string") else None
            if text:
                kernel.text[name] = str(text)
            continue
        unit = m.unit() if hasattr(m, "unit") else ""
        kernel.metrics[name], kernel.units[name] = convert(value, str(unit or ""))
    return kernel


def read_report(path: str | Path) -> list[NcuKernel]:
    """The launches of a report: `.ncu-rep` through ncu_report, anything else as an `ncu --csv` export."""
    p = Path(path)
    if not p.is_file():
        raise NcuReportError(f"{p}: no such report file")
    if p.stat().st_size > MAX_REPORT_BYTES:
        raise NcuReportError(f"{p.name}: larger than {MAX_REPORT_BYTES // (1024 * 1024)} MB; export fewer "
                             "kernels (ncu --kernel-name / --launch-count)")
    if p.suffix == ".ncu-rep":
        return read_ncu_rep(p)
    data = p.read_bytes()
    if b"\0" in data[:4096]:
        raise NcuReportError(f"{p.name} is a binary file, not an `ncu --csv` export (a .ncu-rep report must "
                             "end in .ncu-rep)")
    kernels = read_csv_text(data.decode("utf-8", errors="replace"))
    if not kernels:
        raise NcuReportError(f"{p.name}: the report holds no profiled kernel")
    return kernels
