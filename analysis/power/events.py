"""Per-event energy model: where a kernel's energy goes, event by event and line by line.

The statistical power model (model.py) predicts board power well enough on unseen kernels, but its feature
contributions have no physical meaning per source line. This model does: as AccelWattch and GPUWattch split a
GPU's power, a kernel's energy is

    E = sum over events (count x energy per event) + (constant power + idle power) x predicted time

with events = executed warp instructions by class (integer, FP32, FP64, SFU, tensor, control), shared-memory
wavefronts, and 32-byte sectors at L1, L2 and DRAM. The energy per event comes from `data/energy.toml`, one
table per GPU generation with the published figures it was built from (docs/energy-model.md). The counts come
from the analyses that already ran: executed instructions per thread with loop trip counts (the same weights
as the time prediction), times the launch's warps; sectors per request and wavefronts per request of the memory
analysis. A line's energy is the energy of its instructions' events; idle and constant power belong to no line.

Assumptions (stated in every result): every lane of a warp is counted active; no cache reuse is modelled, so
every L2 sector of a load is also a DRAM sector (an upper bound for kernels that reuse data through L2);
stores write their sectors through L2 to DRAM; atomics resolve in L2.
"""

from __future__ import annotations

import math
import tomllib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from kerncast.analysis.isa import classify as isa_classify
from kerncast.analysis.matrix_ops import matrix_op
from kerncast.analysis.ptx.model import matrix_tile

WARP = 32
SECTOR_BYTES = 32
WAVEFRONT_BYTES = 128  # a shared-memory wavefront serves 32 banks x 4 bytes
_FLOAT_TYPES = frozenset({"f16", "f16x2", "bf16", "bf16x2", "f32", "tf32", "e4m3", "e5m2"})
_CONTROL = frozenset({"bra", "brx", "bar", "barrier", "ret", "exit", "membar", "fence", "call", "trap"})
_ACCESS_KINDS = {"ld": "load", "ldu": "load", "st": "store", "atom": "atomic", "red": "atomic"}
#: the multiply-adds of the warp MMA that `tensor_pj` of data/energy.toml prices (an m16n16k16 product)
TENSOR_PJ_MULTIPLY_ADDS = 4096.0

#: Event categories that are arithmetic (the hotspot reason names them so).
ARITHMETIC = ("integer arithmetic", "FP32 arithmetic", "FP64 arithmetic", "special functions (SFU)",
              "tensor-core MMA")
GLOBAL = ("global loads", "global stores", "global atomics", "local memory (spills)")
SHARED = ("shared-memory loads", "shared-memory stores")
#: A cost component's physical driver (the "execute" component is named by its instruction class instead).
DRIVERS = {"DRAM": "DRAM traffic", "L2": "L2 traffic", "L1": "L1 traffic", "shared": "shared memory",
           "issue": "instruction issue"}


class EnergyConstantsError(Exception):
    """No energy table for a GPU generation; the message names it."""


@dataclass(frozen=True)
class EnergyConstants:
    """Energy per event (pJ) of one GPU generation and the share of (TDP - idle) that is constant power."""

    generation: str
    pj: Mapping[str, float]
    constant_share: float
    source: str
    calibrated: bool
    #: the generation's process-node factor on the 45 nm figures, which scales static power (physics.py); the
    #: on-chip energies in `pj` take the generation's event_scale instead where its design sets them apart
    node_scale: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation, "pj": dict(self.pj), "constant_share": self.constant_share,
                "source": self.source, "calibrated": self.calibrated}


@cache
def energy_table() -> dict[str, Any]:
    return tomllib.loads(resources.files("kerncast.analysis").joinpath("data/energy.toml").read_text())


def load_constants(arch: str) -> EnergyConstants:
    """The energy table of a GPU generation (a profile's `arch`, e.g. "Volta")."""
    table = energy_table()
    gen = table["generations"].get(arch)
    if gen is None:
        raise EnergyConstantsError(f"no per-event energy table for the {arch} generation in data/energy.toml "
                                   f"(known: {', '.join(table['generations'])})")
    base = table["base_45nm"]
    scale = float(gen["node_scale"])
    events = float(gen.get("event_scale", scale))
    pj = {k[:-3]: float(v) * events for k, v in base.items() if k.endswith("_pj")}
    pj["dram_sector"] = float(gen["dram_sector_pj"])
    scaled = f"node_scale {scale:g}" if events == scale else f"event_scale {events:g}"
    return EnergyConstants(arch, pj, float(gen["constant_share"]),
                           f"data/energy.toml: base_45nm x {scaled} ({gen['source']})",
                           bool(gen.get("calibrated", False)), scale)


@dataclass
class LineEnergy:
    """One source line's dynamic energy (µJ) by event category, and its memory requests' shape."""

    line: int
    uj: float = 0.0
    events: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    sectors_per_request: float | None = None  # worst global access of the line
    wavefronts_per_request: float | None = None  # worst shared access of the line

    def top_event(self) -> tuple[str, float]:
        """(category, µJ) of the line's largest event category."""
        return max(self.events.items(), key=lambda kv: kv[1])

    def to_json(self, total_uj: float) -> dict[str, Any]:
        return {"line": self.line, "uj": self.uj, "share": self.uj / total_uj if total_uj > 0 else 0.0,
                "events": {k: v for k, v in sorted(self.events.items(), key=lambda kv: -kv[1])},
                "sectors_per_request": self.sectors_per_request,
                "wavefronts_per_request": self.wavefronts_per_request}


@dataclass
class EventEnergy:
    """A kernel's energy by the per-event model: dynamic (by event and component), constant and idle parts."""

    dynamic_uj: float
    constant_uj: float
    idle_uj: float
    by_event: dict[str, float]
    by_component: dict[str, float]
    lines: list[LineEnergy]
    constants: EnergyConstants
    assumptions: list[str] = field(default_factory=list)
    #: dynamic µJ by physical driver: the memory levels and issue by component, the arithmetic by class
    by_driver: dict[str, float] = field(default_factory=dict)

    @property
    def total_uj(self) -> float:
        return self.dynamic_uj + self.constant_uj + self.idle_uj

    def set_static(self, watts: float, time_us: float, why: str) -> None:
        """Replace the constant part by a better-founded static power (the event power model's), so that the
        energy split and the power model report the same kernel the same way."""
        self.constant_uj = watts * time_us
        self.assumptions = [a for a in self.assumptions if not a.startswith("constant power")] + [why]

    @property
    def line_dynamic_uj(self) -> float:
        return sum(ln.uj for ln in self.lines)

    def to_json(self) -> dict[str, Any]:
        placed = self.line_dynamic_uj
        return {"model": "per-event (AccelWattch-style)", "uj": self.total_uj, "dynamic_uj": self.dynamic_uj,
                "constant_uj": self.constant_uj, "idle_uj": self.idle_uj,
                "by_event": dict(sorted(self.by_event.items(), key=lambda kv: -kv[1])),
                "by_component": dict(self.by_component),
                "lines": [ln.to_json(placed) for ln in sorted(self.lines, key=lambda ln: -ln.uj)],
                "constants": self.constants.to_json(), "assumptions": list(self.assumptions)}


@dataclass(slots=True)
class _Cost:
    category: str
    components: dict[str, float]  # pJ per warp instruction, by component (issue, L1, L2, DRAM, ...)
    sectors: float | None = None
    wavefronts: float | None = None


def _compute_category(ins, pj: Mapping[str, float]) -> tuple[str, str]:
    """(category, energy key) of a non-memory instruction."""
    if ins.opcode in _CONTROL:
        return "control and synchronisation", "control"
    cls = isa_classify(ins)
    if cls.resource == "TENSOR":
        return "tensor-core MMA", "tensor"
    if cls.resource == "DPU" or ins.dtype == "f64":
        return "FP64 arithmetic", "fp64"
    if cls.resource == "SFU":
        return "special functions (SFU)", "sfu"
    if cls.type == "misc":
        return "control and synchronisation", "control"
    if ins.dtype in _FLOAT_TYPES:
        return "FP32 arithmetic", "fp32"
    return "integer arithmetic", "int"


def _ideal_sectors(ins) -> float:
    width = ins.access_bytes or 4
    return max(1.0, math.ceil(WARP * width / SECTOR_BYTES))


def _ideal_wavefronts(ins) -> float:
    width = ins.access_bytes or 4
    return max(1.0, math.ceil(WARP * width / WAVEFRONT_BYTES))


def instruction_cost(ins, access: Any, pj: Mapping[str, float]) -> _Cost:
    """The events one warp-level execution of `ins` causes, in pJ by component.

    `access` is the memory analysis's `AccessInfo` for the instruction, or None (then the access is taken as
    ideally coalesced and conflict-free, and the result says so through `sectors`/`wavefronts` = the ideal).
    """
    space = access.space if access is not None else ins.space
    issue = pj["int"]
    kind = _access_kind(ins)
    if kind is not None and space in ("global", "generic", "local"):
        sectors = access.sectors_per_request if access is not None and access.sectors_per_request else None
        sectors = float(sectors) if sectors is not None else _ideal_sectors(ins)
        if space == "local":
            return _Cost("local memory (spills)", {"issue": issue, "L1": sectors * pj["l1_sector"]}, sectors)
        if kind == "atomic":
            return _Cost("global atomics", {"issue": issue, "L2": sectors * pj["l2_sector"]}, sectors)
        if kind == "store":
            return _Cost("global stores", {"issue": issue, "L2": sectors * pj["l2_sector"],
                                           "DRAM": sectors * pj["dram_sector"]}, sectors)
        return _Cost("global loads", {"issue": issue, "L1": sectors * pj["l1_sector"],
                                      "L2": sectors * pj["l2_sector"], "DRAM": sectors * pj["dram_sector"]},
                     sectors)
    if space == "shared" and kind is not None:
        wf = access.wavefronts if access is not None and access.wavefronts else None
        wf = float(wf) if wf is not None else _ideal_wavefronts(ins)
        cat = "shared-memory stores" if kind == "store" else "shared-memory loads"
        return _Cost(cat, {"issue": issue, "shared": wf * pj["shared_wavefront"]}, wavefronts=wf)
    if space in ("param", "const"):
        return _Cost("parameter and constant loads", {"issue": issue})
    category, key = _compute_category(ins, pj)
    op = matrix_op(ins) if key == "tensor" else None
    scale = op.flops_per_warp / (2.0 * TENSOR_PJ_MULTIPLY_ADDS) if op is not None else 1.0
    return _Cost(category, {"execute": pj[key] * scale})


def _access_kind(ins) -> str | None:
    """load, store or atomic for an instruction that the memory events price by sectors or wavefronts (a
    `wmma` tile is a load or store of its whole tile); None for any other."""
    if ins.opcode == "wmma":
        return ins.modifiers[0] if matrix_tile(ins.opcode, ins.modifiers) is not None else None
    return _ACCESS_KINDS.get(ins.opcode)


def event_energy(function, weights: Sequence[float], warps: float, accesses: Mapping[int, Any], gpu,
                 time_us: float, line_of: Callable[[Any], int | None], constants: EnergyConstants) -> EventEnergy:
    """The per-event energy of one kernel launch.

    `weights[i]`: how often one thread runs instruction i (loop trip counts); `warps`: warps in the launch;
    `accesses`: the memory analysis's `AccessInfo` by instruction index; `gpu`: the profile (idle and TDP);
    `time_us`: the predicted time; `line_of(ins)`: the analysed file's line or None (e.g. a header's line).
    """
    pj = constants.pj
    by_event: dict[str, float] = defaultdict(float)
    by_component: dict[str, float] = defaultdict(float)
    by_driver: dict[str, float] = defaultdict(float)
    lines: dict[int, LineEnergy] = {}
    # a cost depends on the mnemonic and the access's sectors and wavefronts only: worked out once for each,
    # with its total and each component's driver
    costs: dict[tuple[Any, ...], tuple[_Cost, float, tuple[tuple[str, float, str], ...]]] = {}
    for i, ins in enumerate(function.body):
        runs = warps * float(weights[i])
        if runs <= 0:
            continue
        access = accesses.get(i)
        key = (ins.opcode, ins.modifiers, *((access.sectors_per_request, access.wavefronts)
                                            if access is not None else ()))
        found = costs.get(key)
        if found is None:
            c = instruction_cost(ins, access, pj)
            found = costs[key] = (c, sum(c.components.values()), tuple(
                (comp, e, DRIVERS.get(comp, c.category)) for comp, e in c.components.items()))
        cost, pj_total, parts = found
        uj = runs * pj_total * 1e-6
        by_event[cost.category] += uj
        for comp, e, driver in parts:
            by_component[comp] += runs * e * 1e-6
            by_driver[driver] += runs * e * 1e-6
        line = line_of(ins)
        if line is None:
            continue
        le = lines.get(line)
        if le is None:  # (not `setdefault`, which would build a LineEnergy for every instruction)
            le = lines[line] = LineEnergy(line)
        le.uj += uj
        le.events[cost.category] += uj
        if cost.sectors is not None:
            le.sectors_per_request = max(le.sectors_per_request or 0.0, cost.sectors)
        if cost.wavefronts is not None:
            le.wavefronts_per_request = max(le.wavefronts_per_request or 0.0, cost.wavefronts)
    dynamic = sum(by_event.values())
    constant_w = constants.constant_share * (gpu.tdp_w - gpu.idle_w)
    result = EventEnergy(dynamic, constant_w * time_us, gpu.idle_w * time_us, dict(by_event), dict(by_component),
                         list(lines.values()), constants, by_driver=dict(by_driver))
    result.assumptions += [
        f"energy per event: {constants.source}; not measured on this GPU",
        "every lane of a warp counted active; no L2 reuse modelled (every loaded L2 sector is a DRAM sector)",
        f"constant power {constant_w:.0f} W ({constants.constant_share:.0%} of TDP - idle) and idle "
        f"{gpu.idle_w:g} W over the predicted {time_us:.3g} µs",
    ]
    if time_us > 0:
        watts = result.total_uj / time_us
        if watts > gpu.tdp_w:
            result.assumptions.append(
                f"the events imply {watts:.0f} W, above the {gpu.tdp_w:g} W TDP: the predicted time is too short "
                "for this much work, or the event energies are too high for this GPU")
    return result
