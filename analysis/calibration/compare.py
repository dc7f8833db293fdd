"""Kerncast's predictions next to an Nsight Compute measurement of the same kernels.

`kerncast compare REPORT SOURCE.cu` matches every profiled launch to the source's kernel of the same name
(mangled, then demangled without parameters, then without template arguments when that is unique), and
compares what both sides know: duration, occupancy, DRAM bytes, sectors per global load request, registers,
and whether the metric Nsight Compute documents for each of Kerncast's findings (the `ncu_metric` of
data/rules.toml) shows the problem. The profile writer takes the device attributes and clocks a report holds
into a GPU profile's measured sections, as `kerncast calibrate` does from its own harness.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field

from kerncast.analysis.calibration.ncu import NcuKernel
from kerncast.analysis.demangle import display_name
from kerncast.analysis.finding import Finding
from kerncast.analysis.gpus import GpuProfile, Limits
from kerncast.analysis.launch import split_kernel_name
from kerncast.analysis.report import KernelReport

# the metrics read (names as Nsight Compute writes them)
DURATION = "gpu__time_duration.sum"
ACHIEVED_OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
BANK_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
BANK_CONFLICTS_PARTS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
THREADS_PER_INSTRUCTION = "smsp__thread_inst_executed_per_inst_executed.ratio"
BRANCH_UNIFORMITY = "smsp__sass_average_branch_targets_threads_uniform.pct"
LOCAL_STORE_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
REGISTERS = "launch__registers_per_thread"
SM_CLOCK = "smsp__cycles_elapsed.avg.per_second"
DRAM_PEAK_PER_CYCLE = "dram__bytes.sum.peak_sustained"
DRAM_CLOCK = "dram__cycles_elapsed.avg.per_second"

#: measured sectors per request above the flagged line's ideal by this factor confirm an uncoalesced access
#: (the kernel-level average mixes the flagged loads with the others, so a small excess says little)
UNCOALESCED_CONFIRM_FACTOR = 1.1
#: points of occupancy within which Nsight's theoretical occupancy agrees with Kerncast's
OCCUPANCY_AGREE_POINTS = 5.0

CONFIRMED, NOT_CONFIRMED, NOT_MEASURED = "confirmed", "not confirmed", "not measured"


@dataclass
class Quantity:
    """One quantity both sides know: measured by Nsight Compute, predicted by Kerncast."""

    name: str
    unit: str
    measured: float | None
    predicted: float | None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """predicted / measured, when both are known and measured is not zero."""
        if self.measured is None or self.predicted is None or self.measured == 0:
            return None
        return self.predicted / self.measured


@dataclass
class Confirmation:
    """Whether Nsight Compute's metric for a finding shows the problem Kerncast reported."""

    code: str
    line: int
    verdict: str  # CONFIRMED, NOT_CONFIRMED or NOT_MEASURED
    evidence: str


@dataclass
class KernelComparison:
    """One profiled launch against the matched kernel's prediction (kernel None when nothing matched)."""

    launch: NcuKernel
    kernel: KernelReport | None
    matched_by: str
    quantities: list[Quantity] = field(default_factory=list)
    confirmations: list[Confirmation] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "id": self.launch.id, "ncu_name": self.launch.name, "grid": list(self.launch.grid),
            "block": list(self.launch.block), "kernel": self.kernel.name if self.kernel else None,
            "matched_by": self.matched_by,
            "quantities": [dataclasses.asdict(q) | {"ratio": q.ratio} for q in self.quantities],
            "findings": [dataclasses.asdict(c) for c in self.confirmations],
        }


def match_kernel(ncu_name: str, kernels: list[KernelReport]) -> tuple[KernelReport | None, str]:
    """The source kernel a report's kernel name stands for, and how it was matched ("" when none was)."""
    for k in kernels:
        if ncu_name == k.mangled:
            return k, "mangled name"
    wanted = display_name(ncu_name)
    for k in kernels:
        if wanted in (k.name, display_name(k.name)):
            return k, "name"
    plain = plain_name(wanted)
    same = [k for k in kernels if plain_name(k.name) == plain]
    if len(same) == 1:
        return same[0], "name without template arguments"
    return None, ""


def plain_name(name: str) -> str:
    """A display name without template arguments and namespaces: "ns::tile<float, 4>" -> "tile"."""
    return split_kernel_name(display_name(name))[0]


def _ratio_metric(launch: NcuKernel, num: str, den: str) -> float | None:
    a, b = launch.get(num), launch.get(den)
    return a / b if a is not None and b else None


def _dram_bytes(launch: NcuKernel) -> float | None:
    read, write = launch.get(DRAM_READ), launch.get(DRAM_WRITE)
    return None if read is None and write is None else (read or 0.0) + (write or 0.0)


def _bank_conflicts(launch: NcuKernel) -> float | None:
    total = launch.get(BANK_CONFLICTS)
    if total is not None:
        return total
    parts = [launch.get(m) for m in BANK_CONFLICTS_PARTS]
    return None if all(p is None for p in parts) else sum(p or 0.0 for p in parts)


def quantities(launch: NcuKernel, kernel: KernelReport) -> list[Quantity]:
    """Duration, occupancy, DRAM bytes, sectors per load request and registers, measured and predicted."""
    time = kernel.time
    occupancy = kernel.occupancy.occupancy * 100.0 if kernel.occupancy is not None else None
    out = [
        Quantity("duration", "us", launch.get(DURATION), time.us if time else None,
                 f"predicted range {time.range_us[0]:.3g}-{time.range_us[1]:.3g} us"
                 if time and time.range_us else ""),
        Quantity("achieved occupancy", "%", launch.get(ACHIEVED_OCCUPANCY), occupancy,
                 "predicted: theoretical occupancy, an upper bound of the achieved one"),
    ]
    if launch.get(THEORETICAL_OCCUPANCY) is not None:
        out.append(Quantity("theoretical occupancy", "%", launch.get(THEORETICAL_OCCUPANCY), occupancy))
    dram = time.detail.get("dram_bytes") if time else None
    out.append(Quantity("DRAM bytes", "byte", _dram_bytes(launch), float(dram) if dram is not None else None,
                        "predicted for repeated launches (data left in L2 by the previous one); Nsight Compute "
                        "flushes the caches before each pass by default (--cache-control all)"))
    out.append(_sectors(launch, kernel, "load", LD_SECTORS, LD_REQUESTS))
    if launch.get(ST_REQUESTS) is not None:
        out.append(_sectors(launch, kernel, "store", ST_SECTORS, ST_REQUESTS))
    out.append(Quantity("registers per thread", "", launch.get(REGISTERS),
                        float(kernel.registers) if kernel.registers is not None else None))
    return out


def _sectors(launch: NcuKernel, kernel: KernelReport, kind: str, num: str, den: str) -> Quantity:
    """Sectors per global `kind` ("load" or "store") request: the kernel average Nsight measures against the
    worst line Kerncast flagged for that kind (the kernel average of unflagged accesses is the ideal)."""
    flagged = [f.detail["sectors_per_request"] for f in kernel.findings
               if f.code == "uncoalesced-global" and (kind == "store") == ("store" in f.message)
               and isinstance(f.detail.get("sectors_per_request"), int | float)]
    note = "measured: kernel average; predicted: the worst flagged line" if flagged else \
        "measured: kernel average; no line flagged"
    return Quantity(f"sectors per global {kind} request", "sectors", _ratio_metric(launch, num, den),
                    max(flagged) if flagged else None, note)


def _confirm_uncoalesced(finding: Finding, launch: NcuKernel) -> tuple[str, str]:
    store = "store" in finding.message
    num, den = (ST_SECTORS, ST_REQUESTS) if store else (LD_SECTORS, LD_REQUESTS)
    measured = _ratio_metric(launch, num, den)
    ideal = finding.detail.get("ideal_sectors")
    if measured is None:
        return NOT_MEASURED, f"needs {num} and {den}"
    if not isinstance(ideal, int | float) or ideal <= 0:
        return NOT_MEASURED, f"measured {measured:.2f} sectors/request; the finding gives no ideal to compare"
    verdict = CONFIRMED if measured > ideal * UNCOALESCED_CONFIRM_FACTOR else NOT_CONFIRMED
    return verdict, f"{num} / {den} = {measured:.2f} sectors per request, ideal {ideal:g}"


def _confirm_bank_conflict(_finding: Finding, launch: NcuKernel) -> tuple[str, str]:
    conflicts = _bank_conflicts(launch)
    if conflicts is None:
        return NOT_MEASURED, f"needs {BANK_CONFLICTS}"
    return (CONFIRMED if conflicts > 0 else NOT_CONFIRMED), f"{BANK_CONFLICTS} = {conflicts:,.0f}"


def _confirm_divergence(_finding: Finding, launch: NcuKernel) -> tuple[str, str]:
    ratio = launch.get(THREADS_PER_INSTRUCTION)
    if ratio is not None:
        return (CONFIRMED if ratio < 31.5 else NOT_CONFIRMED), \
            f"{THREADS_PER_INSTRUCTION} = {ratio:.2f} active threads per warp instruction (32 without divergence)"
    uniform = launch.get(BRANCH_UNIFORMITY)
    if uniform is not None:
        return (CONFIRMED if uniform < 99.5 else NOT_CONFIRMED), f"{BRANCH_UNIFORMITY} = {uniform:.1f} %"
    return NOT_MEASURED, f"needs {THREADS_PER_INSTRUCTION}"


def _confirm_occupancy(_finding: Finding, launch: NcuKernel, kernel: KernelReport) -> tuple[str, str]:
    measured = launch.get(THEORETICAL_OCCUPANCY)
    if measured is None or kernel.occupancy is None:
        return NOT_MEASURED, f"needs {THEORETICAL_OCCUPANCY}"
    predicted = kernel.occupancy.occupancy * 100.0
    agree = abs(measured - predicted) <= OCCUPANCY_AGREE_POINTS
    return (CONFIRMED if agree else NOT_CONFIRMED), \
        f"{THEORETICAL_OCCUPANCY} = {measured:.1f} %, Kerncast {predicted:.1f} %"


def _confirm_spill(_finding: Finding, launch: NcuKernel) -> tuple[str, str]:
    sectors = launch.get(LOCAL_STORE_SECTORS)
    if sectors is None:
        return NOT_MEASURED, f"needs {LOCAL_STORE_SECTORS}"
    return (CONFIRMED if sectors > 0 else NOT_CONFIRMED), f"{LOCAL_STORE_SECTORS} = {sectors:,.0f}"


_CHECKS: dict[str, Callable[[Finding, NcuKernel], tuple[str, str]]] = {
    "uncoalesced-global": _confirm_uncoalesced,
    "shared-bank-conflict": _confirm_bank_conflict,
    "divergent-branch": _confirm_divergence,
    "register-spill": _confirm_spill,
}


def confirmations(launch: NcuKernel, kernel: KernelReport) -> list[Confirmation]:
    """For each finding that Nsight Compute has a metric for, whether the report shows it."""
    out = []
    for f in kernel.findings:
        if f.code == "low-occupancy":
            verdict, evidence = _confirm_occupancy(f, launch, kernel)
        elif f.code in _CHECKS:
            verdict, evidence = _CHECKS[f.code](f, launch)
        else:
            continue
        out.append(Confirmation(str(f.code), f.line, verdict, evidence))
    return out


def compare(launch: NcuKernel, kernels: list[KernelReport]) -> KernelComparison:
    """One profiled launch against the source's kernels (already analysed for this launch's shape)."""
    kernel, how = match_kernel(launch.name, kernels)
    if kernel is None:
        return KernelComparison(launch, None, "")
    return KernelComparison(launch, kernel, how, quantities(launch, kernel), confirmations(launch, kernel))


# --- a profile's measured sections from a report ---

_ATTR = "device__attribute_"


def _attr(launch: NcuKernel, name: str) -> float | None:
    return launch.get(_ATTR + name)


def _khz_to_mhz(launch: NcuKernel, name: str) -> float | None:
    """A clock attribute in MHz: Nsight writes CUDA's kHz figure, with the unit or without one."""
    value = _attr(launch, name)
    if value is None:
        return None
    return value / 1e6 if launch.units.get(_ATTR + name) == "hz" else value / 1000.0


def device_launch(launches: list[NcuKernel]) -> NcuKernel | None:
    """The first launch that carries device attributes (they are the same for every launch of one GPU)."""
    return next((k for k in launches if _attr(k, "multiprocessor_count") is not None), None)


def profile_from_report(launches: list[NcuKernel], base: GpuProfile, report_name: str,
                        when: _dt.date | None = None) -> tuple[GpuProfile, list[str]]:
    """`base` with the device and limits sections replaced by the report's device attributes and clocks.

    Returns the profile and the list of fields taken from the report. Raises ValueError when the report holds
    no device attributes (export with `--page raw` and the default sections, which include them).
    """
    launch = device_launch(launches)
    if launch is None:
        raise ValueError(f"{report_name} holds no device__attribute_* metrics; export it with "
                         "`ncu --csv --page raw` (they are part of every raw page)")
    origin = f"Nsight Compute report {report_name} ({(when or _dt.date.today()).isoformat()})"
    calibration, sources = dict(base.calibration), dict(base.sources)
    taken: list[str] = []

    def take(field_name: str, value: float | None, how: str) -> float | None:
        if value is not None:
            calibration[field_name] = True
            sources[field_name] = f"{origin}: {how}"
            taken.append(field_name)
        return value

    device: dict[str, float | int] = {}
    sm = take("device.sm_count", _attr(launch, "multiprocessor_count"), "device__attribute_multiprocessor_count")
    if sm is not None:
        device["sm_count"] = int(sm)
    clock = launch.get(SM_CLOCK)
    if clock is not None:
        device["core_clock_mhz"] = take("device.core_clock_mhz", clock / 1e6, f"{SM_CLOCK} during the kernel")
    elif (mhz := _khz_to_mhz(launch, "clock_rate")) is not None:
        device["core_clock_mhz"] = take("device.core_clock_mhz", mhz, "device__attribute_clock_rate")
    mem_mhz = _khz_to_mhz(launch, "memory_clock_rate")
    bus = _attr(launch, "global_memory_bus_width")
    peak, dram_clock = launch.get(DRAM_PEAK_PER_CYCLE), launch.get(DRAM_CLOCK)
    if peak is not None and dram_clock is not None:
        device["mem_bandwidth_gbs"] = take("device.mem_bandwidth_gbs", round(peak * dram_clock / 1e9, 1),
                                           f"{DRAM_PEAK_PER_CYCLE} x {DRAM_CLOCK}")
    elif mem_mhz is not None and bus is not None:
        device["mem_bandwidth_gbs"] = take("device.mem_bandwidth_gbs", round(2.0 * mem_mhz * 1e6 * bus / 8 / 1e9, 1),
                                           "2 x device__attribute_memory_clock_rate x global_memory_bus_width / 8")
    if mem_mhz is not None:
        device["mem_clock_mhz"] = take("device.mem_clock_mhz", mem_mhz, "device__attribute_memory_clock_rate")
    if (l2 := _attr(launch, "l2_cache_size")) is not None:
        device["l2_bytes"] = int(take("device.l2_bytes", l2, "device__attribute_l2_cache_size") or 0)
    limits = dataclasses.asdict(base.limits)
    for key, attr in (("max_threads_per_sm", "max_threads_per_multiprocessor"),
                      ("max_threads_per_block", "max_threads_per_block"),
                      ("max_blocks_per_sm", "max_blocks_per_multiprocessor"),
                      ("regs_per_sm", "max_registers_per_multiprocessor"),
                      ("max_regs_per_block", "max_registers_per_block"),
                      ("shared_per_sm", "max_shared_memory_per_multiprocessor"),
                      ("max_shared_per_block", "max_shared_memory_per_block_optin"),
                      ("static_shared_per_block", "max_shared_memory_per_block")):
        value = take(f"limits.{key}", _attr(launch, attr), _ATTR + attr)
        if value is not None:
            limits[key] = int(value)
    if "limits.max_threads_per_sm" in taken:
        limits["max_warps_per_sm"] = limits["max_threads_per_sm"] // base.warp_size
    name = launch.text.get(_ATTR + "display_name", base.name)
    profile = dataclasses.replace(base, name=name, limits=Limits(**limits), calibration=calibration,
                                  sources=sources, **device)  # type: ignore[arg-type]
    return profile, taken
