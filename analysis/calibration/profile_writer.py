"""Writing a calibration into a GPU profile (the schema of `kerncast.analysis.gpus`).

Every value the harness measured or that the driver reports replaces the base profile's value and is marked
calibrated, with a source that says how it was obtained and, for fitted models, the fit's R-square, RMSE and
number of points. Values no microbenchmark can measure (e.g. tensor cores per SM, dispatch units, the model
constants access_size and sector_bytes) are taken from the base profile of the same GPU with the base's own
calibration flag and source, so the written profile never claims a measurement it does not hold.
"""

from __future__ import annotations

import datetime as _dt
import re
import tomllib
from dataclasses import dataclass

from kerncast.analysis import gpus
from kerncast.analysis.calibration.analyze import Calibration
from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.calibration.fit import FitQuality
from kerncast.analysis.gpus import GpuProfile, Limits

#: architecture names by compute-capability major version (minor 9 of major 8 is Ada)
_ARCH = {5: "Maxwell", 6: "Pascal", 7: "Volta", 8: "Ampere", 9: "Hopper", 10: "Blackwell", 12: "Blackwell"}
#: smallest latency a profile row may hold; a chain that ptxas reduced to nothing measures about zero
MIN_LATENCY_CYCLES = 1.0


@dataclass(frozen=True)
class PowerReadings:
    """Board power from NVML: idle, sustained under the calibration load, and the enforced limit (watts)."""

    idle_w: float | None = None
    sustained_w: float | None = None
    limit_w: float | None = None


class _Flags:
    """Collects the calibration flags and sources of the profile being written."""

    def __init__(self, base: GpuProfile) -> None:
        self.base = base
        self.calibration: dict[str, bool] = {}
        self.sources: dict[str, str] = {}

    def section(self, name: str, source: str, calibrated: bool = True) -> None:
        self.calibration[name] = calibrated
        self.sources[name] = source

    def field(self, name: str, calibrated: bool, source: str | None = None) -> None:
        section = name.split(".", 1)[0]
        if calibrated != self.calibration[section]:
            self.calibration[name] = calibrated
        if source:
            self.sources[name] = source

    def from_base(self, name: str) -> None:
        """Field `section.key` keeps the base profile's value: copy its flag and name the base as source."""
        measured = self.base.is_calibrated(name)
        self.field(name, measured, f"from the {self.base.id} profile: {self.base.source_of(name)}")


def _fit_text(what: str, q: FitQuality, unit: str) -> str:
    return f"{what}; least-squares fit R2 = {q.r2:.4f}, RMSE = {q.rmse:.4g} {unit}, RSE = {q.rse:.4g}, n = {q.n}"


def profile_id(name: str) -> str:
    """A profile id from a GPU name: "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3"."""
    words = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-").split("-")
    words = [w for w in words if w not in ("nvidia", "tesla", "geforce", "")]
    return "-".join(words) or "gpu"


def _device(cal: Calibration, base: GpuProfile, flags: _Flags, origin: str) -> dict:
    d = cal.device
    flags.section("device", f"{origin}: cudaGetDeviceProperties")
    mem_khz = float(d.get("memory_clock_khz") or 0)
    bus = float(d.get("bus_width_bits") or 0)
    out = {
        "sm_count": int(d["sm_count"]),
        "warp_size": int(d["warp_size"]),
        "core_clock_mhz": float(d["clock_khz"]) / 1000.0 if d.get("clock_khz") else base.core_clock_mhz,
        "l2_bytes": int(d["l2_bytes"]),
    }
    if not d.get("clock_khz"):
        flags.from_base("device.core_clock_mhz")
    if mem_khz > 0 and bus > 0:
        out["mem_clock_mhz"] = mem_khz / 1000.0
        out["mem_bandwidth_gbs"] = round(2.0 * mem_khz * 1e3 * bus / 8.0 / 1e9, 1)
        flags.field("device.mem_bandwidth_gbs", True, f"{origin}: 2 x memory clock x bus width / 8")
    else:
        out["mem_clock_mhz"] = base.mem_clock_mhz
        out["mem_bandwidth_gbs"] = base.mem_bandwidth_gbs
        flags.from_base("device.mem_clock_mhz")
        flags.from_base("device.mem_bandwidth_gbs")
    for key in ("access_size", "global_transaction_bytes", "sector_bytes"):
        out[key] = getattr(base, key)
        flags.from_base(f"device.{key}")
    return out


def _units(cal: Calibration, base: GpuProfile, flags: _Flags, origin: str) -> dict[str, int]:
    flags.section("units", f"{origin}: peak throughput per SM per cycle of the calibration microbenchmarks")
    units = dict(base.units)
    measured = {
        "SP": ("addf", "peak add.f32 thread-instructions per cycle per SM"),
        "SFU": ("sfu", "peak sin.approx.f32 thread-instructions per cycle per SM"),
    }
    for key in units:
        row = measured.get(key)
        if row and row[0] in cal.throughput:
            units[key] = max(1, round(max(cal.throughput[row[0]].tp)))
            flags.field(f"units.{key}", True, f"{origin}: {row[1]}")
        elif key == "LSU" and cal.shared_loads_per_cycle_per_sm:
            units[key] = max(1, round(cal.shared_loads_per_cycle_per_sm))
            flags.field("units.LSU", True, f"{origin}: peak shared-memory thread loads per cycle per SM")
        else:
            flags.from_base(f"units.{key}")
    return units


def _limits(cal: Calibration, base: GpuProfile, flags: _Flags, origin: str) -> Limits:
    d = cal.device
    flags.section("limits", f"{origin}: cudaGetDeviceProperties")
    flags.from_base("limits.max_regs_per_thread")
    return Limits(
        max_threads_per_sm=int(d["max_threads_per_sm"]),
        max_threads_per_block=int(d["max_threads_per_block"]),
        max_blocks_per_sm=int(d["max_blocks_per_sm"]),
        max_warps_per_sm=int(d["max_threads_per_sm"]) // int(d["warp_size"]),
        regs_per_sm=int(d["regs_per_sm"]),
        max_regs_per_thread=base.limits.max_regs_per_thread,
        max_regs_per_block=int(d["regs_per_block"]),
        shared_per_sm=int(d["shared_per_sm"]),
        max_shared_per_block=int(d["shared_per_block_optin"]),
        static_shared_per_block=int(d["shared_per_block"]),
    )


def _latency(cal: Calibration, base: GpuProfile, flags: _Flags, origin: str) -> dict[str, float]:
    flags.section("latency", f"{origin}: dependent PTX chains (asm volatile) of one warp timed with clock64, "
                             "long minus short chain (thesis section 3.2)")
    out: dict[str, float] = {}
    for row in gpus.latency_rows():
        if row == "global":
            value = float(cal.global_latency.model.evaluate(32.0))
            flags.field("latency.global", True, f"{origin}: global_latency model at one warp (32 threads)")
        elif row in cal.latency:
            value = cal.latency[row]
            if value < MIN_LATENCY_CYCLES:
                flags.field(f"latency.{row}", True,
                            f"{origin}: measured {value:.2f} cycles (ptxas removed or hid the chain); "
                            f"raised to the {MIN_LATENCY_CYCLES:g}-cycle floor")
                value = MIN_LATENCY_CYCLES
        else:
            value = base.latency[row]
            flags.from_base(f"latency.{row}")
        out[row] = round(value, 3)
    return out


def _power(power: PowerReadings, base: GpuProfile, flags: _Flags, origin: str) -> tuple[float, float]:
    sustained = f"; sustained {power.sustained_w:.1f} W under the calibration load" if power.sustained_w else ""
    flags.section("power", f"{origin}: NVML board power{sustained}")
    tdp = power.limit_w if power.limit_w else base.tdp_w
    if power.limit_w:
        flags.field("power.tdp_w", True, f"{origin}: NVML enforced power limit")
    else:
        flags.from_base("power.tdp_w")
    idle = power.idle_w if power.idle_w is not None else base.idle_w
    if power.idle_w is not None and idle < tdp:
        flags.field("power.idle_w", True, f"{origin}: NVML mean board power with no kernel running")
    else:
        idle = base.idle_w
        flags.from_base("power.idle_w")
    return tdp, idle


def _tensor(base: GpuProfile, flags: _Flags) -> dict[str, float]:
    """No benchmark measures the tensor cores' peak rates: the base profile's vendor figures carry over."""
    flags.section("tensor", f"from the {base.id} profile: {base.source_of('tensor')}", base.is_calibrated("tensor"))
    for row in base.tensor:
        if f"tensor.{row}" in base.sources or f"tensor.{row}" in base.calibration:
            flags.from_base(f"tensor.{row}")
    return dict(base.tensor)


def _atomics(cal: Calibration, flags: _Flags, origin: str) -> dict[str, float]:
    """The atomic rates the run measured; without them the section stays empty and the time model keeps the
    estimates of data/atomics.toml."""
    if not cal.atomics:
        flags.section("atomics", "not measured by this run: the estimates of data/atomics.toml", False)
        return {}
    flags.section("atomics", f"{origin}: global atomics (kc_atomics.cu)")
    if "same_address_per_clock" in cal.atomics:
        flags.field("atomics.same_address_per_clock", True,
                    f"{origin}: one lane per warp reduces into one word over 1, 4 and 8 blocks per SM, the best "
                    "updates / (event time x SM clock)")
    if "lane_replay_cycles" in cal.atomics and cal.atomic_lanes is not None:
        flags.field("atomics.lane_replay_cycles", True, _fit_text(
            f"{origin}: one warp per SM, 1 to 32 lanes per word, slope of cycles per instruction against the "
            "further same-address lanes", cal.atomic_lanes.quality, "cycles"))
    return dict(cal.atomics)


def _models(cal: Calibration, flags: _Flags, origin: str) -> dict:
    gl = cal.global_latency.model
    last_x = cal.global_latency_max_threads
    edges = [0.0, *gl.breakpoints]
    ends = [*gl.breakpoints, max(last_x, edges[-1] + 1.0)]
    segments = tuple(
        (lo, hi, s.slope, s.intercept) for lo, hi, s in zip(edges, ends, gl.segments, strict=True)
    )
    flags.section("global_latency", _fit_text(
        f"{origin}: pointer chasing with ld.global.cg over launches of 32 to {last_x:.0f} threads, "
        f"{len(segments)}-piece linear model with breakpoints chosen to minimise the squared error (Table 3.3)",
        cal.global_latency.quality, "cycles"))
    flags.section("global_throughput", _fit_text(
        f"{origin}: 4-byte ld.global.cg loads, bytes / event time against warp-level requests (Table 4.5)",
        cal.global_throughput.quality, "MB/s"))
    flags.section("shared_throughput", _fit_text(
        f"{origin}: 4-byte ld.shared loads, bytes / event time against warp-level requests (Table 4.5)",
        cal.shared_throughput.quality, "MB/s"))
    flags.section("launch_overhead", _fit_text(
        f"{origin}: event time of an empty kernel against threads launched (section 3.4)",
        cal.launch_overhead.quality, "us"))
    g, s, lo = cal.global_throughput.model, cal.shared_throughput.model, cal.launch_overhead.model
    return {
        "global_latency": gpus.PiecewiseLinear(segments, "threads launched (nB * nT_b)", "cycles"),
        "global_throughput": gpus.ExpModel(g.a, g.b, g.c, "global memory requests (warp loads, ngM)", "MB/s"),
        "shared_throughput": gpus.ExpModel(s.a, s.b, s.c, "shared memory requests (warp loads, nsM)", "MB/s"),
        "launch_overhead": gpus.Linear(lo.slope, lo.intercept, "threads launched (nB * nT_b)", "us"),
    }


def build_profile(cal: Calibration, base: GpuProfile, power: PowerReadings, name: str | None = None,
                  pid: str | None = None, when: _dt.date | None = None) -> GpuProfile:
    """The GpuProfile of a calibration run, with `base` supplying the values no benchmark measures."""
    d = cal.device
    gpu_name = name or str(d["name"])
    day = (when or _dt.date.today()).isoformat()
    origin = f"kerncast calibrate on {d['name']} ({day}, CUDA driver {d.get('driver_version', '?')})"
    flags = _Flags(base)
    cc = (int(d["major"]), int(d["minor"]))
    arch = "Ada" if cc == (8, 9) else _ARCH.get(cc[0], base.arch)
    flags.sources["identity"] = f"{origin}: device name and compute capability"
    device = _device(cal, base, flags, origin)
    units = _units(cal, base, flags, origin)
    limits = _limits(cal, base, flags, origin)
    latency = _latency(cal, base, flags, origin)
    flags.section("throughput", f"{origin}: ILP 1-3 independent chains over 1 to {limits.max_warps_per_sm} "
                                f"warps per SM; tp in thread-instructions per cycle per SM, peak warps with "
                                f"epsilon = 5 % (thesis Table 3.1)")
    throughput = {row: {"ilp": [float(i) for i in t.ilp], "tp": [round(v, 3) for v in t.tp],
                        "peak_warps": list(t.peak_warps)}
                  for row, t in sorted(cal.throughput.items()) if all(v > 0 for v in t.tp)}
    models = _models(cal, flags, origin)
    tdp, idle = _power(power, base, flags, origin)
    tensor = _tensor(base, flags)
    atomics = _atomics(cal, flags, origin)
    return GpuProfile(
        id=pid or profile_id(gpu_name), name=gpu_name, arch=arch, compute_capability=cc, **device, units=units,
        limits=limits, latency_basis="ptx-thesis", latency=latency, throughput=throughput, **models,
        tdp_w=tdp, idle_w=idle, calibration=flags.calibration, sources=flags.sources, tensor=tensor,
        atomics=atomics,
    )


def write_profile(profile: GpuProfile) -> str:
    """TOML text of `profile`, checked by reading it back with the profile loader."""
    text = gpus.dump_profile(profile)
    try:
        gpus.parse_profile(tomllib.loads(text), "<calibrated profile>")
    except (gpus.ProfileError, tomllib.TOMLDecodeError) as exc:
        raise CalibrationError(f"the calibrated profile does not validate: {exc}") from exc
    return text
