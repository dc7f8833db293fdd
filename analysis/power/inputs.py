"""What the power stage leaves for the file's batched power prediction, as one kernel's value: its features,
its per-event energy and the event model's power.

A type of its own below the stages, so that the stage contract (`context.py`) can name it without importing the
stage that makes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerncast.analysis.power.events import EventEnergy
from kerncast.analysis.power.physics import EventPower


@dataclass
class PowerInputs:
    """What `power_stage` leaves for the file's batched prediction: features and the per-event energy."""

    features: dict[str, float]
    event: EventEnergy | None
    #: the event power model's answer (None without the per-event energy or the occupancy)
    power: EventPower | None = None
