"""Running the calibration harness and reading its JSON-lines output.

The harness prints one JSON object per result line (`kind` = device, clock, latency, throughput,
global_latency, memory_throughput, launch, done, or error). This module runs it, turns its exit status and
error line into NoGpuError or CalibrationError, and groups the records by kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerncast.analysis.calibration.errors import CalibrationError, NoGpuError
from kerncast.analysis.toolchain import run_tool

#: harness exit status when no device or driver can be used (kc::kExitNoDevice)
EXIT_NO_DEVICE = 2
RUN_TIMEOUT_S = 3 * 3600.0


@dataclass
class RawResults:
    """The records of one harness run, grouped by kind, in output order."""

    by_kind: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def of(self, kind: str) -> list[dict[str, Any]]:
        """All records of one kind (empty if none)."""
        return self.by_kind.get(kind, [])

    def one(self, kind: str) -> dict[str, Any]:
        """The single record of a kind; CalibrationError if the run did not produce it."""
        records = self.of(kind)
        if not records:
            raise CalibrationError(f"the calibration harness printed no '{kind}' record")
        return records[-1]

    def lines(self) -> list[str]:
        """Every record again as JSON lines (for saving the raw data of a calibration)."""
        return [json.dumps(r, sort_keys=True) for rs in self.by_kind.values() for r in rs]


def parse_output(text: str) -> RawResults:
    """Group the JSON records of harness output; lines that are not JSON objects are ignored."""
    results = RawResults()
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("kind"), str):
            results.by_kind.setdefault(record["kind"], []).append(record)
    return results


def check_run(returncode: int, results: RawResults, stderr: str) -> None:
    """Raise the error a failed harness run stands for: NoGpuError, or CalibrationError with its message."""
    errors = results.of("error")
    message = errors[-1].get("message", "unknown error") if errors else ""
    where = errors[-1].get("where", "") if errors else ""
    if returncode == EXIT_NO_DEVICE:
        raise NoGpuError(message or "the CUDA runtime found no usable device")
    if returncode != 0 or errors:
        detail = f"{where}: {message}" if errors else (stderr.strip().splitlines() or ["no output"])[-1]
        raise CalibrationError(f"the calibration harness failed (exit {returncode}): {detail}")
    if not results.of("done"):
        raise CalibrationError("the calibration harness stopped before finishing (no 'done' record)")


def run_harness(executable: Path, device: int = 0, quick: bool = False, only: str | None = None,
                timeout_s: float = RUN_TIMEOUT_S) -> RawResults:
    """Run the built harness on GPU `device` and return its records; raises NoGpuError / CalibrationError."""
    args = [str(executable), "--device", str(device)]
    if quick:
        args.append("--quick")
    if only:
        args += ["--only", only]
    # a GPU program: the compile address-space limit would make its CUDA context creation fail
    run = run_tool(args, timeout_s, cwd=executable.parent, bound_memory=False)
    if run.timed_out:
        raise CalibrationError(f"the calibration harness did not finish within {timeout_s:.0f} s")
    results = parse_output(run.stdout)
    check_run(run.returncode, results, run.stderr)
    return results
