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

from kerncast.analysis.power.features import feature_instructions
from kerncast.analysis.power.model import PowerPrediction
from kerncast.analysis.report import Finding

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


def line_energy(function, prediction: PowerPrediction, time_us: float, definition: str = "dataset",
                weights: Sequence[float] | None = None,
                line_of: Callable[[Any], int | None] | None = None) -> tuple[dict[int, float], dict[int, dict]]:
    """Energy (µJ) per source line and, per line, per reason: each positive exact contribution (W) times the
    time is spread over the instructions of its feature in proportion to how often they run (`weights`)."""
    line_of = line_of or (lambda ins: ins.line)
    per_line: dict[int, float] = defaultdict(float)
    why: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    body = function.body
    for c in prediction.explanation:
        if c.watts <= 0:
            continue
        idx = [(i, line_of(body[i])) for i in feature_instructions(function, c.feature, definition)]
        idx = [(i, ln) for i, ln in idx if ln]
        total_w = sum(float(weights[i]) if weights is not None else 1.0 for i, _ in idx)
        if total_w <= 0:
            continue
        for i, line in idx:
            uj = c.watts * time_us * (float(weights[i]) if weights is not None else 1.0) / total_w
            per_line[line] += uj
            why[line][_REASON.get(c.feature, c.name)] += uj
    return per_line, why


def energy_hotspots(function, prediction: PowerPrediction, time_us: float, threshold_share: float = 0.2,
                    definition: str = "dataset", weights: Sequence[float] | None = None,
                    line_of: Callable[[Any], int | None] | None = None) -> list[Finding]:
    """`energy-hotspot` findings for source lines holding at least `threshold_share` of the kernel's energy.

    `line_of(instruction)` gives the analysed file's line (None for lines of other files, e.g. headers).
    The range is the whole line (column 1 to `end_column` 1000, clipped by the editor to the line's end).
    """
    total_uj = prediction.watts * time_us
    if total_uj <= 0:
        return []
    per_line, why = line_energy(function, prediction, time_us, definition, weights, line_of)
    out = []
    for line, uj in sorted(per_line.items()):
        share = uj / total_uj
        if share < threshold_share:
            continue
        reason = max(why[line].items(), key=lambda kv: kv[1])[0]
        out.append(Finding(code="energy-hotspot", severity="information", line=line, column=1, end_line=line,
                           end_column=1000, message=f"{reason}: {share:.0%} of the kernel's estimated energy",
                           detail={"share": round(share, 4), "uj": uj, "reason": reason,
                                   "reasons": {k: round(v / total_uj, 4) for k, v in why[line].items()}},
                           kernel=function.display_name))
    return out
