"""Energy = power x predicted time, and where in the source it goes (energy-hotspot findings).

Each feature's exact contribution above the model's base value (watts) is spread evenly over the instructions
that make up that feature (`features.feature_instructions`), summed per CUDA source line, and turned into a share
of the kernel's estimated energy. The base value (idle and average activity) belongs to no line.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

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


def energy_hotspots(function, prediction: PowerPrediction, time_us: float, threshold_share: float = 0.2,
                    definition: str = "dataset") -> list[Finding]:
    """`energy-hotspot` findings for source lines holding at least `threshold_share` of the kernel's energy."""
    total_uj = prediction.watts * time_us
    if total_uj <= 0:
        return []
    per_line: dict[int, float] = defaultdict(float)
    why: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in prediction.explanation:
        if c.watts <= 0:
            continue
        idx = [i for i in feature_instructions(function, c.feature, definition) if function.body[i].line]
        if not idx:
            continue
        share_uj = c.watts * time_us / len(idx)
        for i in idx:
            line = function.body[i].line
            per_line[line] += share_uj
            why[line][_REASON.get(c.feature, c.name)] += share_uj
    out = []
    for line, uj in sorted(per_line.items()):
        share = uj / total_uj
        if share < threshold_share:
            continue
        reason = max(why[line].items(), key=lambda kv: kv[1])[0]
        out.append(Finding(code="energy-hotspot", severity="information", line=line, column=0, end_line=line,
                           end_column=0, message=f"{reason}: {share:.0%} of the kernel's estimated energy",
                           detail={"share": share, "uj": uj, "reason": reason}, kernel=function.name))
    return out
