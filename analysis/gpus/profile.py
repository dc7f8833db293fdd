"""GPU profiles: the thesis's abstract GPU (the thesis, section 4.1) as one validated TOML file per GPU.

A profile is data, not code, so that every number can carry its source and so that `kerncast calibrate` can
write a new one measured on the user's own GPU. This module defines the schema (`GpuProfile`), reads and
checks a file (`load_profile`), and writes one back (`dump_profile`).

File layout (every section has ``calibrated``, ``source`` and optionally ``sources``, ``estimated``,
``measured``)::

    schema = 1
    id = "k20"                       # short lower-case id; a shipped file is named <id>.toml
    name = "NVIDIA Tesla K20"
    arch = "Kepler"
    compute_capability = [3, 5]
    source = "..."                   # where name/arch/compute capability come from

    [device]     sm_count warp_size core_clock_mhz mem_clock_mhz mem_bandwidth_gbs l2_bytes
                 access_size (bytes per memory instruction per thread, thesis access_sz)
                 global_transaction_bytes (thesis Sz_gl) sector_bytes
    [units]      per SM: SP DPU SFU LSU TENSOR BRANCH SYNC (lanes: threads served per clock)
                 warp_schedulers dispatch_units
    [limits]     max_threads_per_sm max_threads_per_block max_blocks_per_sm max_warps_per_sm regs_per_sm
                 max_regs_per_thread max_regs_per_block shared_per_sm max_shared_per_block
                 static_shared_per_block (bytes for the shared-memory fields)
    [latency]    basis (which kind of latency the rows are) + one row (cycles) per latency row of
                 analysis/data/isa.toml, plus global, shared and param
    [throughput.<row>]  optional Table 3.1 rows: ilp = [...], tp = [...], peak_warps = [...]
    [global_latency]    segments = [[t_lo, t_hi, slope, intercept], ...], x, unit   (Table 3.3)
    [global_throughput] a, b, c, x, unit                                              (Table 4.5)
    [shared_throughput] a, b, c, x, unit                                              (Table 4.5)
    [launch_overhead]   slope, intercept, x, unit                                     (section 3.4)
    [power]      tdp_w idle_w
    [tensor]     dense tensor-core FLOPs per SM per clock by input type (`f16`, `tf32`, `s8`, ...), with an
                 `<input>_<accumulator>` row (`f16_f32`) where the accumulator changes the rate; no rows on a
                 GPU without tensor cores (the section may be left out: a profile written before it existed)
    [atomics]    optional: same_address_per_clock, lane_replay_cycles, as `kerncast calibrate` measures them
                 (left out: data/atomics.toml's estimates hold)

``calibrated = true`` means the section's values were measured on this GPU model (thesis microbenchmarks, a
published microbenchmark of the same chip, a calibration run) or are vendor/driver-reported facts for it;
``false`` means estimated: inferred from a sibling chip, derived from other facts, or a model constant. A
section may list exceptions by field name in ``estimated = [...]`` or ``measured = [...]``. ``sources`` maps a
field to its own source where it differs from the section's ``source``.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from kerncast.analysis.gpus.models import ExpModel, Linear, ModelError, PiecewiseLinear
from kerncast.analysis.gpus.tomlwriter import dumps
from kerncast.analysis.input_files import read_regular_file

SCHEMA_VERSION = 1
#: the largest profile file read (a shipped one is a few KB)
MAX_PROFILE_BYTES = 1 << 20
UNIT_KEYS = ("SP", "DPU", "SFU", "LSU", "TENSOR", "BRANCH", "SYNC", "warp_schedulers", "dispatch_units")
#: the integer datapaths of a Volta-or-later SM, lanes per SM: "ALU" (integer add, compare, logic, moves) and
#: "IMAD" (integer multiply-add, which runs on the FP32 pipe's lanes); optional, 0 where integer work shares
#: the SP lanes (the thesis's machine model, and every GPU before Volta)
DATAPATH_KEYS = ("ALU", "IMAD")
#: units that must be present on every GPU (the others may be 0, e.g. no tensor cores before Volta)
_NONZERO_UNITS = ("SP", "SFU", "LSU", "BRANCH", "SYNC", "warp_schedulers", "dispatch_units")
DEVICE_INT = ("sm_count", "warp_size", "l2_bytes", "access_size", "global_transaction_bytes", "sector_bytes")
DEVICE_FLOAT = ("core_clock_mhz", "mem_clock_mhz", "mem_bandwidth_gbs")
POWER_FLOAT = ("tdp_w", "idle_w")
_META = ("calibrated", "source", "sources", "estimated", "measured")
SECTIONS = (
    "device", "units", "limits", "latency", "throughput", "global_latency", "global_throughput",
    "shared_throughput", "launch_overhead", "power", "tensor", "atomics",
)
#: the `[atomics]` rows `kerncast calibrate` measures (timing/atomics.py reads them over data/atomics.toml)
ATOMIC_KEYS = ("same_address_per_clock", "lane_replay_cycles")
#: a `[tensor]` row: an input type, optionally followed by the accumulator type that changes its rate
_TENSOR_ROW = re.compile(r"(f16|bf16|tf32|f64|s8|u8|s4|u4|b1|e4m3|e5m2)(_(f16|f32|s32|f64))?")
_MODEL_SECTIONS = {
    "global_latency": PiecewiseLinear,
    "global_throughput": ExpModel,
    "shared_throughput": ExpModel,
    "launch_overhead": Linear,
}
_MODEL_KEYS = {
    PiecewiseLinear: ("segments", "x", "unit"),
    ExpModel: ("a", "b", "c", "x", "unit"),
    Linear: ("slope", "intercept", "x", "unit"),
}


class ProfileError(Exception):
    """A profile file is missing, unreadable or invalid; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-SM and per-block limits of the CUDA programming guide (shared-memory fields in bytes)."""

    max_threads_per_sm: int
    max_threads_per_block: int
    max_blocks_per_sm: int
    max_warps_per_sm: int
    regs_per_sm: int
    max_regs_per_thread: int
    max_regs_per_block: int
    shared_per_sm: int
    max_shared_per_block: int
    static_shared_per_block: int

    def __getitem__(self, name: str) -> int:
        """`limits["regs_per_sm"]` as well as `limits.regs_per_sm`, for code that iterates over names."""
        if name not in LIMIT_KEYS:
            raise KeyError(name)
        return getattr(self, name)

    def to_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in LIMIT_KEYS}


LIMIT_KEYS = tuple(f.name for f in fields(Limits))


@cache
def latency_rows() -> tuple[str, ...]:
    """Every latency row a profile must define: the rows named in `data/isa.toml` plus the `global`, `shared`
    and `param` rows that `kerncast.analysis.isa.classify` resolves memory opcodes to by state space. The
    `memory` row stays: classify keeps it for opcodes the table types as global directly (cp, tex, ...)."""
    text = resources.files("kerncast.analysis").joinpath("data/isa.toml").read_text(encoding="utf-8")
    rows: set[str] = set()
    for entry in tomllib.loads(text)["opcodes"].values():
        lat = entry["latency"]
        rows.update(lat.values() if isinstance(lat, dict) else [lat])
    rows.update({"global", "shared", "param"})
    return tuple(sorted(rows))


@dataclass(frozen=True)
class GpuProfile:
    """One GPU of the thesis's abstract model (section 4.1), every value with its source.

    Fields: identity (`id`, `name`, `arch`, `compute_capability`); device attributes (`sm_count`, `warp_size`,
    clocks in MHz, `mem_bandwidth_gbs`, `l2_bytes`, `access_size` = thesis access_sz in bytes per memory
    instruction per thread, `global_transaction_bytes` = thesis Sz_gl, `sector_bytes`); `units` per SM (keys
    `UNIT_KEYS`); `limits`; `latency` in cycles per latency row (`latency_basis` says whether the rows are
    thesis PTX-level or SASS dependent-issue latencies); `throughput` (Table 3.1 rows where known); the
    models `global_latency` (cycles against threads launched, Table 3.3), `global_throughput` and
    `shared_throughput` (Table 4.5) and `launch_overhead` (section 3.4; see each model's `x` and `unit`);
    `tdp_w`, `idle_w`; `tensor` (dense tensor-core FLOPs per SM per clock by input type, empty without
    tensor cores); `calibration` (section or "section.field" -> measured?) and `sources` (section or
    "section.field" -> source text).
    """

    id: str
    name: str
    arch: str
    compute_capability: tuple[int, int]
    sm_count: int
    warp_size: int
    core_clock_mhz: float
    mem_clock_mhz: float
    mem_bandwidth_gbs: float
    l2_bytes: int
    access_size: int
    global_transaction_bytes: int
    sector_bytes: int
    units: dict[str, int]
    limits: Limits
    latency_basis: str
    latency: dict[str, float]
    throughput: dict[str, dict[str, list[float]]]
    global_latency: PiecewiseLinear
    global_throughput: ExpModel
    shared_throughput: ExpModel
    launch_overhead: Linear
    tdp_w: float
    idle_w: float
    calibration: dict[str, bool]
    sources: dict[str, str]
    tensor: dict[str, float] = field(default_factory=dict)
    atomics: dict[str, float] = field(default_factory=dict)
    path: str = field(default="", compare=False)

    @property
    def calibrated(self) -> bool:
        """True only when every section and field is measured (or vendor-reported) for this GPU."""
        return all(self.calibration.values())

    @property
    def cc(self) -> str:
        """Compute capability as text, e.g. "7.0"."""
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"

    def is_calibrated(self, name: str) -> bool:
        """Whether a section ("latency") or a field ("latency.addf") is measured rather than estimated."""
        return _own_or_section(self.calibration, name)

    def source_of(self, name: str) -> str:
        """The source of a field ("latency.addf") or section ("latency"): its own, else its section's."""
        return _own_or_section(self.sources, name)

    def calibration_summary(self) -> dict[str, bool]:
        """Section -> True when every value in it is measured, False when any of it is estimated."""
        out: dict[str, bool] = {}
        for section in SECTIONS:
            fields_ok = all(v for k, v in self.calibration.items() if k.startswith(section + "."))
            out[section] = self.calibration[section] and fields_ok
        return out

    def calibration_counts(self) -> dict[str, tuple[int, int]]:
        """Section -> (measured values, all values): how much of each section is measured."""
        out: dict[str, tuple[int, int]] = {}
        for section in SECTIONS:
            names = _section_field_names(self, section)
            measured = sum(1 for n in names if self.is_calibrated(f"{section}.{n}"))
            out[section] = (measured, len(names))
        return out

    def to_toml_dict(self) -> dict[str, Any]:
        """The profile as the nested dictionary its TOML file holds (inverse of the loader)."""
        data: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "id": self.id,
            "name": self.name,
            "arch": self.arch,
            "compute_capability": list(self.compute_capability),
            "source": self.sources.get("identity", ""),
        }
        bodies: dict[str, dict[str, Any]] = {
            "device": {k: getattr(self, k) for k in (*DEVICE_INT, *DEVICE_FLOAT)},
            "units": dict(self.units),
            "limits": self.limits.to_dict(),
            "latency": {"basis": self.latency_basis, **self.latency},
            "throughput": {k: {kk: list(vv) for kk, vv in v.items()} for k, v in self.throughput.items()},
            "power": {"tdp_w": self.tdp_w, "idle_w": self.idle_w},
            "tensor": dict(self.tensor),
            "atomics": dict(self.atomics),
        }
        for name in _MODEL_SECTIONS:
            bodies[name] = getattr(self, name).to_toml_dict()
        for section in SECTIONS:
            default = self.calibration[section]
            meta: dict[str, Any] = {"calibrated": default, "source": self.sources[section]}
            prefix = section + "."
            flips = sorted(
                k[len(prefix):] for k, v in self.calibration.items() if k.startswith(prefix) and v != default
            )
            if flips:
                meta["measured" if not default else "estimated"] = flips
            own = {k[len(prefix):]: v for k, v in self.sources.items() if k.startswith(prefix)}
            body = {**meta, **bodies[section]}
            if own:
                body["sources"] = own
            data[section] = body
        return data


_V = TypeVar("_V")


def _own_or_section(table: dict[str, _V], name: str) -> _V:
    """The entry of a field ("latency.addf") or section ("latency") in a per-name table: its own, else its
    section's, because a profile records a field only where it differs from the rest of its section.

    KeyError when neither the name nor its section is in the table.
    """
    if name in table:
        return table[name]
    section = name.split(".", 1)[0]
    if section not in table:
        raise KeyError(name)
    return table[section]


def _section_field_names(profile: GpuProfile, section: str) -> list[str]:
    if section == "device":
        return [*DEVICE_INT, *DEVICE_FLOAT]
    if section == "units":
        return [*UNIT_KEYS, *DATAPATH_KEYS]
    if section == "limits":
        return list(LIMIT_KEYS)
    if section == "latency":
        return list(profile.latency)
    if section == "throughput":
        return list(profile.throughput)
    if section == "power":
        return list(POWER_FLOAT)
    if section == "tensor":
        return list(profile.tensor)
    if section == "atomics":
        return list(profile.atomics)
    return [f for f in profile.__getattribute__(section).to_toml_dict() if f not in ("x", "unit")]


# ---------------------------------------------------------------------------------------------------- loading


def profile_dir() -> Path:
    """The folder of the shipped profiles."""
    return Path(str(resources.files("kerncast.analysis.gpus")))


def list_profiles() -> list[str]:
    """Ids of the shipped profiles, sorted."""
    return list(_shipped_ids())


@cache
def _shipped_ids() -> tuple[str, ...]:
    """The shipped ids, listed once: they are package data, fixed while Kerncast runs, and every lens, hint and
    hover of every kernel loads its profile by id (a folder listing per call cost about 0.25 ms each)."""
    return tuple(sorted(p.stem for p in profile_dir().glob("*.toml")))


def load_profile(id_or_path: str | Path) -> GpuProfile:
    """Load a shipped profile by id ("v100") or a profile file by path (e.g. one `kerncast calibrate` wrote).

    Raises ProfileError, naming the file and the field, for an unknown id, a missing or unreadable file,
    broken TOML, a missing field, a wrong type or an inconsistent value.
    """
    text = str(id_or_path)
    path = Path(text)
    if text.endswith(".toml") or path.is_file() or "/" in text or "\\" in text:
        return _load_path(path.resolve())
    if text not in _shipped_ids():
        known = ", ".join(_shipped_ids())
        raise ProfileError(f"unknown GPU profile '{text}': known ids are {known} (or a path to a .toml file)")
    return _load_shipped(text)


@cache
def _load_shipped(profile_id: str) -> GpuProfile:
    profile = _load_path(profile_dir() / f"{profile_id}.toml")
    if profile.id != profile_id:
        raise ProfileError(f"{profile.path}: field 'id': is '{profile.id}' but the file is {profile_id}.toml")
    return profile


def _load_path(path: Path) -> GpuProfile:
    try:
        raw = read_regular_file(path, MAX_PROFILE_BYTES)
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read GPU profile: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a UTF-8 text file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: invalid TOML: {exc}") from None
    return parse_profile(data, str(path))


def parse_profile(data: dict[str, Any], where: str = "<profile>") -> GpuProfile:
    """Validate a profile's parsed TOML and build the GpuProfile; `where` names the file in errors."""
    return _Parser(data, where).build()


class _Parser:
    """Validates one parsed profile; every error names the file and the dotted field path."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data = data
        self.where = where
        self.calibration: dict[str, bool] = {}
        self.sources: dict[str, str] = {}

    def fail(self, name: str, problem: str) -> ProfileError:
        return ProfileError(f"{self.where}: field '{name}': {problem}")

    def get(self, table: dict[str, Any], name: str, key: str) -> Any:
        if key not in table:
            return self._missing(name, key)
        return table[key]

    def _missing(self, name: str, key: str) -> Any:
        full = f"{name}.{key}" if name else key
        raise self.fail(full, "missing")

    def string(self, table: dict[str, Any], name: str, key: str) -> str:
        value = self.get(table, name, key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(_join(name, key), f"must be a non-empty string, got {value!r}")
        return value

    def integer(self, table: dict[str, Any], name: str, key: str, minimum: int = 1) -> int:
        value = self.get(table, name, key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(_join(name, key), f"must be an integer, got {type(value).__name__} {value!r}")
        if value < minimum:
            raise self.fail(_join(name, key), f"must be at least {minimum}, got {value}")
        return value

    def number(
        self, table: dict[str, Any], name: str, key: str, minimum: float = 0.0, strict: bool = True
    ) -> float:
        value = self.get(table, name, key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(_join(name, key), f"must be a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            bound = ">" if strict else ">="
            raise self.fail(_join(name, key), f"must be a finite number {bound} {minimum}, got {value}")
        return float(value)

    def section(self, name: str, allowed: tuple[str, ...] | None) -> dict[str, Any]:
        """A section table, with its calibration and source metadata recorded; unknown keys are errors."""
        table = self.data.get(name)
        if table is None:
            raise self.fail(name, "missing section")
        if not isinstance(table, dict):
            raise self.fail(name, "must be a table")
        calibrated = self.get(table, name, "calibrated")
        if not isinstance(calibrated, bool):
            raise self.fail(f"{name}.calibrated", f"must be true or false, got {calibrated!r}")
        self.calibration[name] = calibrated
        self.sources[name] = self.string(table, name, "source")
        own = table.get("sources", {})
        if not isinstance(own, dict):
            raise self.fail(f"{name}.sources", "must be a table of field = \"source\"")
        body_keys = [k for k in table if k not in _META]
        if allowed is not None:
            for key in body_keys:
                if key not in allowed:
                    raise self.fail(f"{name}.{key}", f"unknown field (expected one of: {', '.join(allowed)})")
        for key, text in own.items():
            if key not in body_keys:
                raise self.fail(f"{name}.sources.{key}", "names a field the section does not have")
            if not isinstance(text, str) or not text.strip():
                raise self.fail(f"{name}.sources.{key}", "must be a non-empty string")
            self.sources[f"{name}.{key}"] = text
        for flag, value in (("estimated", False), ("measured", True)):
            names = table.get(flag, [])
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise self.fail(f"{name}.{flag}", "must be a list of field names")
            for key in names:
                if key not in body_keys:
                    raise self.fail(f"{name}.{flag}", f"names '{key}', a field the section does not have")
                self.calibration[f"{name}.{key}"] = value
        return {k: table[k] for k in body_keys}

    def build(self) -> GpuProfile:
        d = self.data
        schema = self.integer(d, "", "schema")
        if schema != SCHEMA_VERSION:
            raise self.fail("schema", f"this Kerncast reads schema {SCHEMA_VERSION}, the file has {schema}")
        pid = self.string(d, "", "id")
        if pid != pid.lower() or not pid.replace("_", "").replace("-", "").isalnum():
            raise self.fail("id", f"must be short, lower-case letters/digits, got {pid!r}")
        cc = self.get(d, "", "compute_capability")
        if not (isinstance(cc, list) and len(cc) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                              and v >= 0 for v in cc)):
            raise self.fail("compute_capability", f"must be [major, minor] integers, got {cc!r}")
        self.sources["identity"] = self.string(d, "", "source")
        for key in d:
            if key not in ("schema", "id", "name", "arch", "compute_capability", "source", *SECTIONS):
                raise self.fail(key, "unknown field")

        dev = self.section("device", (*DEVICE_INT, *DEVICE_FLOAT))
        device = {k: self.integer(dev, "device", k) for k in DEVICE_INT}
        device.update({k: self.number(dev, "device", k) for k in DEVICE_FLOAT})

        un = self.section("units", (*UNIT_KEYS, *DATAPATH_KEYS))
        units = {k: self.integer(un, "units", k, minimum=1 if k in _NONZERO_UNITS else 0) for k in UNIT_KEYS}
        units.update({k: self.integer(un, "units", k, minimum=0) if k in un else 0 for k in DATAPATH_KEYS})

        lim = self.section("limits", LIMIT_KEYS)
        limits = Limits(**{k: self.integer(lim, "limits", k) for k in LIMIT_KEYS})
        if limits.max_warps_per_sm * device["warp_size"] != limits.max_threads_per_sm:
            raise self.fail("limits.max_warps_per_sm", "times warp_size must equal max_threads_per_sm")

        rows = latency_rows()
        lat = self.section("latency", ("basis", *rows))
        basis = self.string(lat, "latency", "basis")
        latency = {r: self.number(lat, "latency", r) for r in rows}

        throughput = self._throughput(self.section("throughput", None))
        models: dict[str, Any] = {}
        for name, cls in _MODEL_SECTIONS.items():
            body = self.section(name, _MODEL_KEYS[cls])
            try:
                models[name] = cls.from_dict(body)
            except ModelError as exc:
                raise ProfileError(f"{self.where}: section '{name}': {exc}") from None

        pw = self.section("power", POWER_FLOAT)
        tdp = self.number(pw, "power", "tdp_w")
        idle = self.number(pw, "power", "idle_w", strict=False)
        if idle >= tdp:
            raise self.fail("power.idle_w", f"idle power ({idle} W) must be below the TDP ({tdp} W)")

        tensor = self._tensor()
        atomics = self._atomics()
        return GpuProfile(
            id=pid,
            name=self.string(d, "", "name"),
            arch=self.string(d, "", "arch"),
            compute_capability=(cc[0], cc[1]),
            **device,
            units=units,
            limits=limits,
            latency_basis=basis,
            latency=latency,
            throughput=throughput,
            **models,
            tdp_w=tdp,
            idle_w=idle,
            calibration=self.calibration,
            sources=self.sources,
            tensor=tensor,
            atomics=atomics,
            path=self.where,
        )

    def _absent(self, section: str, instead: str) -> bool:
        """Whether an optional section is left out of the file (one written before it existed); if so it is
        recorded as not measured, with what holds `instead`."""
        if section in self.data:
            return False
        self.calibration[section] = False
        self.sources[section] = f"not in the profile file: {instead}"
        return True

    def _tensor(self) -> dict[str, float]:
        """The tensor-core rates; a file without the section (written before it existed) has none."""
        if self._absent("tensor", "no tensor-core rates"):
            return {}
        body = self.section("tensor", None)
        for key in body:
            if not _TENSOR_ROW.fullmatch(key):
                raise self.fail(f"tensor.{key}", "unknown row (expected an input type such as f16, tf32, s8 or "
                                                 "e4m3, optionally followed by _<accumulator type>, e.g. f16_f32)")
        return {key: self.number(body, "tensor", key) for key in body}

    def _atomics(self) -> dict[str, float]:
        """The measured atomic rates; a file without the section has none (the data file's estimates hold)."""
        if self._absent("atomics", "the estimates of data/atomics.toml"):
            return {}
        body = self.section("atomics", ATOMIC_KEYS)
        return {key: self.number(body, "atomics", key) for key in body}

    def _throughput(self, body: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
        out: dict[str, dict[str, list[float]]] = {}
        for row, entry in body.items():
            name = f"throughput.{row}"
            if not isinstance(entry, dict):
                raise self.fail(name, "must be a table with ilp, tp and peak_warps lists")
            lists: dict[str, list[float]] = {}
            for key in ("ilp", "tp", "peak_warps"):
                value = self.get(entry, name, key)
                ok = isinstance(value, list) and value
                ok = ok and all(_is_number(v) and v > 0 for v in value)
                if not ok:
                    raise self.fail(f"{name}.{key}", "must be a non-empty list of positive numbers")
                lists[key] = [float(v) for v in value]
            if not len(lists["ilp"]) == len(lists["tp"]) == len(lists["peak_warps"]):
                raise self.fail(name, "ilp, tp and peak_warps must have the same length")
            extra = set(entry) - {"ilp", "tp", "peak_warps"}
            if extra:
                raise self.fail(f"{name}.{sorted(extra)[0]}", "unknown field")
            out[row] = lists
        return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _join(name: str, key: str) -> str:
    return f"{name}.{key}" if name else key


def dump_profile(profile: GpuProfile) -> str:
    """TOML text for a profile; `load_profile` on the written file gives back an equal profile."""
    return dumps(profile.to_toml_dict())
