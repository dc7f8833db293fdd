"""Energy = power x predicted time, and where in the source it goes (energy-hotspot findings).

Each feature's exact contribution above the model's base value (watts) is spread evenly over the instructions
that make up that feature (`features.feature_instructions`), summed per CUDA source line, and turned into a share
of the kernel's estimated energy. The base value (idle and average activity) belongs to no line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kerncast.analysis.isa import classify as isa_classify
from kerncast.analysis.power.features import feature_instructions
from kerncast.analysis.power.model import PowerPrediction
from kerncast.analysis.report import Finding

#: A hotspot holds at least this many times the even share of its kernel's lines (a design choice, not a fit).
HOTSPOT_OVER_EVEN = 2.0

#: Reason wording per feature, in Nsight-like vocabulary.
_REASON = {
    "l_gstore": "global stores", "glob_store_sm": "global stores", "store_frac": "global stores",
    "l_gload": "global loads", "glob_load_sm": "global loads", "l_branch": "branches", "branch": "branches",
}


@dataclass
class EnergyEstimate:
    uj: float
    interval_uj: tuple[float, float]

    def to_json(self) -> dict:
        return {"uj": self.uj, "interval": list(self.interval_uj)}


def estimate_energy(prediction: PowerPrediction, time_us: float) -> EnergyEstimate:
    """W x µs = µJ; the interval is the power interval times the predicted time (time taken as exact)."""
    lo, hi = prediction.interval
    return EnergyEstimate(prediction.watts * time_us, (lo * time_us, hi * time_us))


def _activity_reason(ins) -> str:
    """What an instruction does, in the words of a hotspot message."""
    kind = isa_classify(ins).type
    store = ins.opcode in ("st", "red", "atom")
    if kind == "global":
        return "global stores" if store else "global loads"
    if kind == "shared":
        return "shared-memory stores" if store else "shared-memory loads"
    if kind == "compute":
        return "arithmetic"
    return "control and synchronisation"


def line_energy(function, prediction: PowerPrediction, time_us: float, definition: str = "dataset",
                weights: Sequence[float] | None = None, line_of: Callable[[Any], int | None] | None = None,
                idle_w: float | None = None) -> tuple[dict[int, float], dict[int, dict]]:
    """Dynamic energy (µJ) per source line and, per line, per reason.

    Two parts, both spread in proportion to how often each instruction runs (`weights`): the model's base power
    above idle (the average activity of a kernel; `idle_w` from the GPU profile) over every instruction, and
    each positive exact feature contribution (W) over the instructions that make up its feature. Idle power and
    negative contributions belong to no line.
    """
    line_of = line_of or (lambda ins: ins.line)
    body = function.body
    lines = [line_of(ins) for ins in body]
    weight = [float(weights[i]) if weights is not None else 1.0 for i in range(len(body))]
    per_line: dict[int, float] = defaultdict(float)
    why: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def spread(watts: float, idx: list[int], reason: Callable[[int], str]) -> None:
        idx = [i for i in idx if lines[i] and weight[i] > 0]
        total_w = sum(weight[i] for i in idx)
        for i in idx:
            uj = watts * time_us * weight[i] / total_w
            per_line[lines[i]] += uj  # type: ignore[index]
            why[lines[i]][reason(i)] += uj  # type: ignore[index]

    if idle_w is not None and prediction.base_watts > idle_w:
        spread(prediction.base_watts - idle_w, list(range(len(body))), lambda i: _activity_reason(body[i]))
    for c in prediction.explanation:
        if c.watts > 0:
            label = _REASON.get(c.feature, c.name)
            spread(c.watts, feature_instructions(function, c.feature, definition), lambda _i, lb=label: lb)
    return per_line, why


def energy_hotspots(function, prediction: PowerPrediction, time_us: float, threshold_share: float = 0.2,
                    definition: str = "dataset", weights: Sequence[float] | None = None,
                    line_of: Callable[[Any], int | None] | None = None,
                    idle_w: float | None = None) -> list[Finding]:
    """`energy-hotspot` findings for source lines holding at least `threshold_share` of the kernel's dynamic
    energy (the energy above idle that `line_energy` can place on lines) and at least `HOTSPOT_OVER_EVEN` times
    the share every line would have if the energy were spread evenly: in a three-line kernel every line holds a
    third, which makes none of them a hotspot.

    `line_of(instruction)` gives the analysed file's line (None for lines of other files, e.g. headers).
    The range is the whole line (column 1 to `end_column` 1000, clipped by the editor to the line's end).
    """
    per_line, why = line_energy(function, prediction, time_us, definition, weights, line_of, idle_w)
    total_uj = sum(per_line.values())
    if total_uj <= 0:
        return []
    out = []
    even = 1.0 / len(per_line)
    for line, uj in sorted(per_line.items()):
        share = uj / total_uj
        if share < max(threshold_share, HOTSPOT_OVER_EVEN * even):
            continue
        reason = max(why[line].items(), key=lambda kv: kv[1])[0]
        out.append(Finding(code="energy-hotspot", severity="information", line=line, column=1, end_line=line,
                           end_column=1000,
                           message=f"{reason}: {share:.0%} of the kernel's estimated dynamic energy",
                           detail={"share": round(share, 4), "uj": uj, "reason": reason,
                                   "reasons": {k: round(v / total_uj, 4) for k, v in why[line].items()}},
                           kernel=function.display_name))
    return out
