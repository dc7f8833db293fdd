"""A kernel's energy, two ways, and where in the source it goes (its energy-hotspot findings are
`findings/energy.py`'s).

* Board energy: the shown power (the statistical or the event power model's, combine.py) x the predicted time,
  with an interval from the power interval and the time range (the roofline bounds around the scheduler's prediction).
* Per-event energy (events.py): energy per executed event plus constant and idle power over the time. It is
  what places energy on source lines; its total is reported next to the board energy, so that a user sees
  where the two models disagree.

The full per-line table is in the JSON (`energy.event_model.lines`), the hover and the report.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.power.events import EventEnergy
from kerncast.analysis.power.results import EnergyEstimate, PowerPrediction


def time_range(time: Any) -> tuple[float, float]:
    """(shortest, longest) plausible time in µs: the time model's own range when it states one (its measured
    error spread), else the roofline range around the predicted time, when known."""
    lo = hi = float(time.us)
    if time.range_us is not None:
        return min(lo, float(time.range_us[0])), max(hi, float(time.range_us[1]))
    roof = time.roofline_us
    if roof is not None:
        lo, hi = min(lo, float(roof[0])), max(hi, float(roof[1]))
    return lo, hi


def estimate_energy(prediction: PowerPrediction, time: Any, event: EventEnergy | None = None) -> EnergyEstimate:
    """W x µs = µJ; the interval is the power interval times the time range (both ends)."""
    lo_w, hi_w = prediction.interval
    t_lo, t_hi = time_range(time)
    return EnergyEstimate(prediction.watts * float(time.us), (lo_w * t_lo, hi_w * t_hi), event, (t_lo, t_hi))
