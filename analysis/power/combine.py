"""One power answer from the two models: the chosen model's point, one interval that covers both.

The statistical model (model.py) learned power levels from measured benchmarks; the event model (physics.py)
adds up what the kernel's events cost. They fail differently (the first on kernels unlike its training
benchmarks and on GPUs without a dataset, the second through its uncalibrated energies and the predicted time),
so where they disagree neither is trusted alone: the shown interval is the chosen model's interval widened to
take in the other model's point, always inside [idle, TDP]. Both answers stay in the JSON (`power.models`).

Which model is chosen (`AnalysisOptions.power_model`): "statistical", "events", or "auto", which takes the event
model on every GPU, as the validation in the README supports: on the measured H100 and H200 launches
(`benchmarks/validate_power.py`), where the statistical model is a pooled model scaled by TDP, and on the power
datasets' public kernels (`kerncast power evaluate --samples`), where it beats the statistical model predicted
out of fold (its benchmark held out, as a user's kernel always is) on the K20, M60 and V100 it was trained for.
Where the event model has no answer the statistical one stands whatever the choice (`combine`, `events_only`).
"""

from __future__ import annotations

from kerncast.analysis.options import POWER_MODELS
from kerncast.analysis.power.physics import EventPower
from kerncast.analysis.power.results import PowerPrediction


def chosen_model(choice: str) -> str:
    """"statistical" or "events" for a user's choice ("auto": the event model, on every GPU)."""
    if choice == "auto":
        return "events"
    if choice not in POWER_MODELS:
        raise ValueError(f"unknown power model {choice!r} (choose {', '.join(POWER_MODELS)})")
    return choice


def hull(interval: tuple[float, float], point: float, idle: float, tdp: float) -> tuple[float, float]:
    """`interval` widened to take in the other model's `point`, inside [idle, TDP]."""
    lo, hi = min(interval[0], point), max(interval[1], point)
    return max(idle, lo), min(tdp, hi)


def combine(stat: PowerPrediction, event: EventPower | None, choice: str, idle_w: float,
            tdp_w: float) -> PowerPrediction:
    """`stat` turned into the kernel's power answer: both models side by side, the chosen one's point and the
    interval covering both points (changes `stat` in place and returns it)."""
    stat.models = {"statistical": {"watts": stat.watts, "interval": list(stat.interval), "model": stat.model,
                                   "trained_on": stat.trained_on}}
    if event is None:
        return stat
    stat.models["events"] = event.to_json()
    stat.drivers = list(event.drivers)
    if chosen_model(choice) == "events":
        stat_w = stat.watts
        stat.watts = event.watts
        stat.interval = hull(event.interval, stat_w, idle_w, tdp_w)
        stat.model = f"events@{stat.gpu}" if stat.gpu else "events"
        stat.trained_on = ""
        other = stat.models["statistical"]["model"]
        stat.assumptions = [*event.assumptions, f"interval widened to the statistical model's {stat_w:.0f} W ({other})"]
    else:
        stat.interval = hull(stat.interval, event.watts, idle_w, tdp_w)
        stat.assumptions.append(f"interval widened to the event model's {event.watts:.0f} W")
    return stat


def events_only(event: EventPower, gpu_id: str, why: str) -> PowerPrediction:
    """The event model's answer as the kernel's power, when the statistical model has none."""
    pred = PowerPrediction(watts=event.watts, interval=event.interval, model=f"events@{gpu_id}", trained_on="",
                           assumptions=[*event.assumptions, f"the event model alone: {why}"], gpu=gpu_id)
    pred.models = {"events": event.to_json()}
    pred.drivers = list(event.drivers)
    return pred
