"""The NVIDIA management library (NVML, through `nvidia-ml-py`): GPU discovery and board power sampling.

NVML is optional: without the package or without a driver, `probe_gpu` raises NoGpuError and
`PowerSampler.open` returns None, so that timing still works and power is simply reported as unavailable.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass
from types import ModuleType

from kerncast.analysis.calibration.errors import NoGpuError


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """What NVML says about one GPU before any kernel runs."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    pci_bus_id: str
    power_limit_w: float | None
    driver_version: str


def _import_nvml() -> ModuleType:
    try:
        import pynvml  # lazy import: optional (the gpu extra), needed only on a machine with an NVIDIA driver
    except ImportError as exc:
        raise NoGpuError("the nvidia-ml-py package is not installed (pip install 'kerncast[gpu]')") from exc
    return pynvml


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _init(nvml: ModuleType) -> None:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise NoGpuError(f"NVML cannot start ({exc})") from exc


def probe_gpu(index: int = 0) -> GpuInfo:
    """Describe GPU `index`; raises NoGpuError when there is no driver, no GPU or no such index."""
    nvml = _import_nvml()
    _init(nvml)
    try:
        count = nvml.nvmlDeviceGetCount()
        if index >= count:
            raise NoGpuError(f"GPU index {index} requested, {count} GPU(s) present")
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        try:
            limit_w: float | None = nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
        except nvml.NVMLError:
            limit_w = None
        return GpuInfo(
            index=index,
            name=_text(nvml.nvmlDeviceGetName(handle)),
            compute_capability=(int(major), int(minor)),
            pci_bus_id=_text(nvml.nvmlDeviceGetPciInfo(handle).busId),
            power_limit_w=limit_w,
            driver_version=_text(nvml.nvmlSystemGetDriverVersion()),
        )
    except nvml.NVMLError as exc:
        raise NoGpuError(f"NVML query failed ({exc})") from exc
    finally:
        nvml.nvmlShutdown()


class PowerSampler:
    """Samples one GPU's board power in a background thread while a workload runs.

    Use `PowerSampler.open(...)`, which returns None when NVML or the GPU is unavailable; then
    `start()`, run the workload, `stop()`, and read `mean_w()`. Samples are kept with their time so that a
    caller can also ask for the power of a window (`mean_w(since=...)`).

    The mean over the whole run comes from the board's energy counter where the GPU has one (Volta and newer):
    energy used between `start()` and `stop()` over the time between them. The power readings cannot give it on
    Ampere and newer GPUs (GA100 aside): there `nvmlDeviceGetPowerUsage` is a mean over the last second (NVML
    reference manual), so a run shorter than a second reads mostly the power of whatever ran before it.
    """

    def __init__(self, nvml: ModuleType, handle: object, interval_s: float) -> None:
        self._nvml = nvml
        self._handle = handle
        self._interval = interval_s
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: (time, energy counter in millijoules) when sampling started and when it stopped
        self._energy_start: tuple[float, float] | None = None
        self._energy_stop: tuple[float, float] | None = None

    @classmethod
    def open(cls, pci_bus_id: str | None = None, index: int = 0, interval_s: float = 0.02) -> PowerSampler | None:
        """A sampler for the GPU with this PCI bus id (or NVML index), or None if power cannot be read."""
        try:
            nvml = _import_nvml()
            _init(nvml)
        except NoGpuError:
            return None
        try:
            if pci_bus_id:
                handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
            else:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            nvml.nvmlDeviceGetPowerUsage(handle)
        except nvml.NVMLError:
            nvml.nvmlShutdown()
            return None
        return cls(nvml, handle, interval_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                milliwatts = self._nvml.nvmlDeviceGetPowerUsage(self._handle)
            except self._nvml.NVMLError:
                milliwatts = None
            if milliwatts is not None:
                self._samples.append((time.monotonic(), milliwatts / 1000.0))
            self._stop.wait(self._interval)

    def _energy_reading(self) -> tuple[float, float] | None:
        """(now, the board's energy counter in millijoules), None where the GPU or the binding has no counter."""
        try:
            return time.monotonic(), float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except (AttributeError, self._nvml.NVMLError):
            return None

    def start(self) -> None:
        """Begin sampling (idempotent)."""
        if self._thread is None:
            self._energy_start = self._energy_reading()
            self._thread = threading.Thread(target=self._run, name="kerncast-power", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop sampling and release NVML."""
        if self._thread is not None:
            self._energy_stop = self._energy_reading()
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None
            self._nvml.nvmlShutdown()

    def energy_mean_w(self) -> float | None:
        """Mean board power from the energy counter between start() and stop(); None without a counter, or
        when the counter did not move (too short a run for its resolution)."""
        if self._energy_start is None or self._energy_stop is None:
            return None
        (t0, e0), (t1, e1) = self._energy_start, self._energy_stop
        if t1 <= t0 or e1 <= e0:
            return None
        return (e1 - e0) / 1000.0 / (t1 - t0)

    @property
    def method(self) -> str:
        """How `mean_w()` of the whole run was obtained, for the measurement's record."""
        return "energy-counter" if self.energy_mean_w() is not None else "sampled-power"

    def mean_w(self, since: float | None = None) -> float | None:
        """Mean board power in watts: over the whole run, the energy counter's where there is one; over the
        samples taken at or after `since` (or all samples without a counter); None without either."""
        if since is None and (energy := self.energy_mean_w()) is not None:
            return energy
        values = [w for t, w in self._samples if since is None or t >= since]
        return statistics.fmean(values) if values else None

    def peak_window_w(self, window_s: float = 1.0) -> float | None:
        """Highest mean power over any `window_s` window of samples: the sustained power of the busiest part."""
        if not self._samples:
            return None
        best: float | None = None
        lo = 0
        total = 0.0
        for hi, (t, w) in enumerate(self._samples):
            total += w
            while t - self._samples[lo][0] > window_s:
                total -= self._samples[lo][1]
                lo += 1
            if t - self._samples[0][0] >= window_s:
                mean = total / (hi - lo + 1)
                best = mean if best is None else max(best, mean)
        return best if best is not None else self.mean_w()

    @property
    def sample_count(self) -> int:
        """How many power readings were taken."""
        return len(self._samples)

    def __enter__(self) -> PowerSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def idle_power_w(pci_bus_id: str | None, seconds: float = 2.0) -> float | None:
    """Mean board power over `seconds` with nothing running (None when NVML cannot read power)."""
    sampler = PowerSampler.open(pci_bus_id)
    if sampler is None:
        return None
    with sampler:
        time.sleep(seconds)
    return sampler.mean_w()
