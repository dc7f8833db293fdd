"""What a launch costs beside the kernel's own work: the GPU's launch latency and the host's launch time.

Two times are physical and differ by microseconds on today's GPUs:

* the kernel's *duration* on the GPU (what a profiler's kernel row shows): the device's launch latency, the
  block dispatch and the work;
* the *event time* of a launch timed back to back with CUDA events (how `kerncast measure`, most benchmarks and
  the thesis time kernels): the host records the start event, then spends the launch call's own time
  (`cudaLaunchKernel`, microseconds of driver work) before the kernel's command reaches the GPU, which waits.
  A kernel longer than that host time lets the host run ahead, the commands queue, and the host time is hidden.

Where `data/timing.toml` lists the GPU's device launch latency (`[kerncast.launch]`, by compute capability,
from back-to-back launches in a CUDA graph, which take the host out) the prediction is the event time: the
device latency, the kernel, and the host time exposed while the kernel is shorter than it. Elsewhere (the
thesis's GPUs) the profile's fixed launch latency, an event-timed empty kernel (thesis section 3.4), is used
as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerncast.analysis.timing.constants import timing_constants


@dataclass(frozen=True, slots=True)
class LaunchCost:
    """The launch's fixed part on the GPU (`device_us`), the host time it exposes (`host_us`, 0 where the
    profile's event-timed intercept already holds it) and a sentence that says which was used."""

    device_us: float
    host_us: float
    note: str

    @property
    def fixed_us(self) -> float:
        """Everything the launch adds to the kernel's work."""
        return self.device_us + self.host_us


def overhead_us(profile: Any, value: float) -> float:
    """`value`, read off the profile's launch-overhead line (`[launch_overhead]`, thesis section 3.4), in
    microseconds: the line's unit is microseconds, or core cycles, ms or ns where a profile says so. One reading
    for the thesis's launch penalty, the kerncast model's block dispatch and the fixed launch cost."""
    unit = profile.launch_overhead.unit.strip().lower()
    if unit.startswith("cycles"):
        return value / profile.core_clock_mhz
    return value * (1e3 if unit.startswith("ms") else 1e-3 if unit.startswith("ns") else 1.0)


def block_dispatch_us(profile: Any, blocks: int, threads_per_block: int) -> float:
    """What the launch-overhead line adds over an empty launch for the launch's threads (thesis section 3.4: the
    line grows with the threads launched): the dispatch of the launch's blocks, in microseconds. The line is
    swept with blocks of `sweep_block_threads` threads (`data/timing.toml` [kerncast.launch]), so what it gives
    per thread is that block's dispatch shared out over its threads: a smaller block costs the SM's block
    scheduler no less, and each block is charged at least a swept block's share. The dispatch runs beside the
    kernel's work, so a model's kernel time is at least this, never this on top of its work."""
    lo = profile.launch_overhead
    swept = int(timing_constants()["kerncast"]["launch"]["sweep_block_threads"])
    threads = blocks * max(threads_per_block, swept)
    return overhead_us(profile, max(0.0, lo(threads) - float(lo.intercept)))


def device_launch_us(profile: Any) -> float | None:
    """The GPU's own launch latency in microseconds (graph launches), None where `timing.toml` lists none."""
    table = timing_constants()["kerncast"].get("launch", {}).get("device_us", {})
    value = table.get(profile.cc)
    return float(value) if isinstance(value, int | float) else None


def exposed_host_us(host_us: float, kernel_us: float) -> float:
    """The host's launch time that a back-to-back event-timed launch of a `kernel_us` kernel waits for.

    While the kernel (its device latency included) is no longer than the host's launch time, the GPU waits for
    each launch command in full after the start event; once the kernel takes longer, the host's lead over the
    GPU grows by the difference every launch, so the exposed part shrinks, and it is gone once the kernel takes
    twice the host time (the two event records of each timed launch, whose own host cost no source gives, are
    taken as short against the launch call)."""
    if host_us <= 0.0:
        return 0.0
    share = min(1.0, max(0.0, 2.0 - kernel_us / host_us))
    return host_us * share


def launch_cost(profile: Any, kernel_us: float) -> LaunchCost:
    """The launch's cost for a kernel whose work (dispatch included) takes `kernel_us` (module docstring)."""
    device = device_launch_us(profile)
    if device is None:
        fixed = overhead_us(profile, float(profile.launch_overhead.intercept))
        return LaunchCost(fixed, 0.0, f"launch: {fixed:.2f} us fixed (the profile's event-timed empty kernel) "
                                      "plus block dispatch overlapped with the kernel")
    launch = timing_constants()["kerncast"]["launch"]
    host = float(launch["host_us"])
    exposed = exposed_host_us(host, device + kernel_us)
    return LaunchCost(device, exposed, (
        f"launch: {device:.2f} us on the GPU (compute capability {profile.cc}, graph launches, data/timing.toml "
        f"[kerncast.launch]) plus {exposed:.2f} us of the host's {host:.2f} us launch call that the kernel does not "
        "hide: the time is an event-timed back-to-back launch's; the kernel's own duration on the GPU is "
        f"{exposed:.2f} us shorter"))
