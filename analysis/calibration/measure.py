"""`kerncast measure`: run one kernel of a user's .cu file on the local GPU and measure its time and power.

The harness is generated: a few lines that include the user's file (its `main`, if any, renamed), the fixed
harness `kernels/measure_harness.cu`, and a `main` that hands the kernel to it. The harness reads its
parameter types from the kernel's signature; this module only needs the parameter names, to map
`--param NAME=VALUE` to positions, and finds them in the source text.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from kerncast.analysis.calibration.errors import CalibrationError, NoGpuError
from kerncast.analysis.calibration.harness import EXIT_NO_DEVICE, parse_output
from kerncast.analysis.calibration.nvml import PowerSampler
from kerncast.analysis.calibration.stats import SampleSummary, StopRule, summarize

HARNESS_SOURCE = "measure_harness.cu"
_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class LaunchSpec:
    """What to launch: kernel expression, grid and block (x, y, z), dynamic shared memory, scalar values."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int = 0
    buffer_bytes: int | None = None
    params: dict[str, str] = field(default_factory=dict)
    device: int = 0


@dataclass(frozen=True)
class Measurement:
    """One measured kernel: what was launched, its launch times, average board power, and how they were obtained."""

    gpu: str
    driver: str
    source_file: str
    spec: LaunchSpec
    #: the launch times in microseconds; the kernel's time is their median
    timing: SampleSummary
    stable: bool
    power_w: float | None
    power_samples: int
    params: list[dict]
    #: how power_w was obtained: "energy-counter" (energy over the run's time) or "sampled-power" (the mean of
    #: NVML power readings, each a one-second mean on Ampere and newer GPUs), "" without power
    power_method: str = ""

    @property
    def time_us(self) -> float:
        """The kernel's time: the median launch time."""
        return self.timing.median

    def as_dict(self) -> dict:
        """Plain values (the columns of validation/<gpu>/measurements.csv, plus the extras)."""
        spec = self.spec
        return {
            "gpu": self.gpu, "kernel": spec.kernel, "source_file": self.source_file,
            "grid": "x".join(map(str, spec.grid)), "block": "x".join(map(str, spec.block)),
            "dynamic_shared_bytes": spec.dynamic_shared_bytes, "time_us": self.time_us,
            "power_w": self.power_w, "repetitions": self.timing.n, "driver": self.driver,
            "robust_cv": self.timing.robust_cv, "stable": self.stable, "power_samples": self.power_samples,
            "power_method": self.power_method, "params": self.params,
        }


def parse_dims(text: str) -> tuple[int, int, int]:
    """"256" or "64,8" or "8,8,4" -> (x, y, z); ValueError for anything else."""
    parts = [p.strip() for p in text.split(",")]
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"launch dimensions must be 1-3 positive integers separated by commas, got {text!r}")
    values = [int(p) for p in parts] + [1] * (3 - len(parts))
    return values[0], values[1], values[2]


def _balanced(text: str, open_at: int) -> int:
    """Index just after the parenthesis that closes the one at `open_at`."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced parentheses in the kernel signature")


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def kernel_parameter_names(source: str, kernel: str) -> list[str]:
    """Parameter names of `__global__ ... kernel(...)` in the source (template arguments ignored).

    ValueError when no such kernel definition is found.
    """
    base = kernel.split("<", 1)[0].strip()
    clean = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    for match in re.finditer(r"__global__\b", clean):
        head = re.compile(rf"\b{re.escape(base)}\s*\(")
        found = head.search(clean, match.end())
        if not found or ";" in clean[match.end():found.start()] or "{" in clean[match.end():found.start()]:
            continue
        open_at = found.end() - 1
        params = clean[open_at + 1:_balanced(clean, open_at) - 1]
        names = []
        for p in _split_top_level(params):
            decl = re.sub(r"\[[^\]]*\]", "", p.split("=", 1)[0]).strip()
            idents = _IDENT.findall(decl)
            if decl == "void" or not idents:
                continue
            names.append(idents[-1])
        return names
    raise ValueError(f"no __global__ function named '{base}' in the source")


def argument_flags(names: list[str], params: dict[str, str]) -> list[str]:
    """Harness `--arg INDEX=VALUE` flags for `--param NAME=VALUE` (a number names a position too)."""
    flags: list[str] = []
    for key, value in params.items():
        if key in names:
            index = names.index(key)
        elif key.isdigit():
            index = int(key)
        else:
            known = ", ".join(names) or "none"
            raise ValueError(f"the kernel has no parameter '{key}' (parameters: {known})")
        flags += ["--arg", f"{index}={value}"]
    return flags


def generate_harness(user_file: Path, kernel: str) -> str:
    """C++ source of the measurement harness for `kernel` in `user_file` (built with -DKERNCAST_MEASURE)."""
    include = json.dumps(str(user_file.resolve()))
    return (
        "// Generated by kerncast measure: the user's file with its main renamed, then the harness.\n"
        "#define main kerncast_user_main\n"
        f"#include {include}\n"
        "#undef main\n"
        f'#include "{HARNESS_SOURCE}"\n'
        "int main(int argc, char **argv) {\n"
        f"  return kc_measure::run(argc, argv, &({kernel}));\n"
        "}\n"
    )


def write_harness(user_file: Path, kernel: str, out_dir: Path) -> Path:
    """Write the generated harness and the fixed harness files into `out_dir`; returns the harness path."""
    kernels = resources.files("kerncast.analysis.calibration").joinpath("kernels")
    for name in (HARNESS_SOURCE, "kc_common.cu"):
        with resources.as_file(kernels.joinpath(name)) as src:
            shutil.copyfile(src, out_dir / name)
    path = out_dir / "kerncast_measure.cu"
    path.write_text(generate_harness(user_file, kernel), encoding="utf-8")
    return path


def harness_flags(spec: LaunchSpec, names: list[str]) -> list[str]:
    """Command-line flags of the built harness for one launch."""
    flags = ["--grid", ",".join(map(str, spec.grid)), "--block", ",".join(map(str, spec.block)),
             "--smem", str(spec.dynamic_shared_bytes), "--device", str(spec.device)]
    if spec.buffer_bytes:
        flags += ["--bytes", str(spec.buffer_bytes)]
    return flags + argument_flags(names, spec.params)


class HarnessSession:
    """A running measurement harness: send "run N", read back N event times."""

    def __init__(self, executable: Path, flags: list[str], timeout_s: float) -> None:
        self._timeout = timeout_s
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._proc = subprocess.Popen(
            [str(executable), *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=(os.name == "posix"),
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def read(self, kind: str) -> dict:
        """The next record of `kind`; NoGpuError / CalibrationError when the harness fails or stalls."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.close()
                raise CalibrationError(f"the kernel did not finish within {self._timeout:.0f} s") from None
            if line is None:
                self._raise_exit()
            records = parse_output(line)
            if records.of("error"):
                self._raise_exit(records.one("error"))
            if records.of(kind):
                return records.one(kind)

    def _raise_exit(self, error: dict | None = None) -> None:
        code = self._proc.wait(timeout=10)
        stderr = self._proc.stderr.read() if self._proc.stderr else ""
        message = error.get("message", "") if error else (stderr.strip().splitlines() or ["no output"])[-1]
        if code == EXIT_NO_DEVICE:
            raise NoGpuError(message)
        where = f"{error.get('where')}: " if error else ""
        raise CalibrationError(f"the measurement harness failed (exit {code}): {where}{message}")

    def times(self, n: int) -> list[float]:
        """Launch the kernel `n` times back to back; the event time of each launch in microseconds."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"run {n}\n")
        self._proc.stdin.flush()
        return [float(v) for v in self.read("times")["us"]]

    def close(self) -> None:
        """Ask the harness to quit; kill its process group if it does not."""
        try:
            if self._proc.stdin:
                self._proc.stdin.write("quit\n")
                self._proc.stdin.close()
            self._proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            try:
                if os.name == "posix":
                    os.killpg(self._proc.pid, signal.SIGKILL)
                else:
                    self._proc.kill()
            except ProcessLookupError:  # it exited meanwhile (e.g. no GPU): nothing left to stop
                pass
            self._proc.wait()


def measure(session: HarnessSession, rule: StopRule, sampler: PowerSampler | None) -> tuple[list[float], bool]:
    """Repeat launches in batches until `rule` says stop, sampling power meanwhile; (times, stable)."""
    samples: list[float] = []
    start = time.monotonic()
    if sampler:
        sampler.start()
    try:
        while True:
            samples += session.times(rule.next_batch(samples))
            done, stable = rule.verdict(samples, time.monotonic() - start)
            if done:
                return samples, stable
    finally:
        if sampler:
            sampler.stop()


def summarize_run(ready: dict, spec: LaunchSpec, source_file: str, samples: list[float], stable: bool,
                  sampler: PowerSampler | None) -> Measurement:
    """The Measurement of one finished run."""
    return Measurement(
        gpu=str(ready.get("device", "")), driver=str(ready.get("driver_version", "")), source_file=source_file,
        spec=spec, timing=summarize(samples), stable=stable, power_w=sampler.mean_w() if sampler else None,
        power_samples=sampler.sample_count if sampler else 0, params=list(ready.get("params", [])),
        power_method=sampler.method if sampler else "",
    )
