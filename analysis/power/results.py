"""The power model's results as the report holds them: a kernel's predicted power (`PowerPrediction`, with the
contributions that explain it) and its energy (`EnergyEstimate`).

Types without the power runtime (the shipped models, their tree evaluator), so that the report can name them
and a command that predicts no power (`kerncast --help`) does not load that runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kerncast.analysis.json_form import FieldsJson
from kerncast.analysis.power.events import EventEnergy

#: The two energy totals are said to disagree when one is more than this factor away from the other.
DISAGREEMENT_FACTOR = 2.0


@dataclass
class Contribution(FieldsJson):
    """One feature's share of a prediction, in watts relative to the model's base value."""

    feature: str
    name: str
    value: float
    watts: float
    lime_watts: float | None = None


@dataclass
class PowerPrediction:
    watts: float
    interval: tuple[float, float]
    model: str
    trained_on: str
    assumptions: list[str] = field(default_factory=list)
    explanation: list[Contribution] = field(default_factory=list)
    base_watts: float = 0.0
    #: whether `explanation` and `base_watts` hold the exact contributions; False for a prediction made without
    #: them (the editor's save path), which `complete_explanation` fills in when a hover asks for them
    explained: bool = True
    #: the feature values and GPU id the prediction was made from (kept to add LIME weights later; not in the JSON)
    features: dict[str, float] = field(default_factory=dict)
    gpu: str = ""
    #: every power model's own answer side by side ({"statistical": {...}, "events": {...}}), when both ran
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: physical drivers of the dynamic power by the event model: (driver, share), largest first
    drivers: list[tuple[str, float]] = field(default_factory=list)

    def copy(self) -> PowerPrediction:
        """A copy that shares nothing mutable with this one: a memo keeps its own and hands out copies,
        because the pipeline appends to `assumptions` and LIME fills in `lime_watts` on the one it gets.

        Field by field rather than `copy.deepcopy` (the same result: the other fields are strings, floats and
        tuples of floats), which cost about a tenth of a millisecond per kernel on every save."""
        return replace(self, assumptions=list(self.assumptions),
                       explanation=[replace(c) for c in self.explanation], features=dict(self.features),
                       models={k: dict(v) for k, v in self.models.items()}, drivers=list(self.drivers))

    def explanation_incomplete(self) -> bool:
        """Whether the exact contributions or their LIME weights are missing and can still be worked out (the
        features and the GPU they were predicted from are kept)."""
        if not self.features or not self.gpu:
            return False
        return not self.explained or any(c.lime_watts is None for c in self.explanation)

    def to_json(self) -> dict[str, Any]:
        return {"watts": self.watts, "interval": list(self.interval), "model": self.model,
                "trained_on": self.trained_on, "assumptions": list(self.assumptions),
                "explanation": [c.to_json() for c in self.explanation],
                "models": {k: dict(v) for k, v in self.models.items()},
                "drivers": [{"driver": d, "share": sh} for d, sh in self.drivers]}


@dataclass
class EnergyEstimate:
    """Board energy (the shown power x time) with its interval, and the per-event model's split."""

    uj: float
    interval_uj: tuple[float, float]
    event: EventEnergy | None = None
    time_range_us: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uj": self.uj, "interval": list(self.interval_uj),
                               "model": "power x predicted time"}
        if self.time_range_us is not None:
            out["time_range_us"] = list(self.time_range_us)
        if self.event is not None:
            out["event_model"] = self.event.to_json()
            ratio = self.event.total_uj / self.uj if self.uj > 0 else None
            out["event_vs_statistical"] = ratio
            if ratio is not None and not 1 / DISAGREEMENT_FACTOR <= ratio <= DISAGREEMENT_FACTOR:
                out["disagreement"] = (f"the per-event model's {self.event.total_uj:.3g} µJ is {ratio:.2g}x the "
                                       f"board energy's {self.uj:.3g} µJ (power x time): one of the two misjudges "
                                       "this kernel")
        return out
