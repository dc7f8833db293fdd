"""Errors of calibration and measurement runs, each with a message a user can act on."""

from __future__ import annotations


class CalibrationError(Exception):
    """A calibration or measurement could not be completed; the message says why."""


class NoGpuError(CalibrationError):
    """No usable NVIDIA GPU or driver on this machine: the commands that run kernels cannot work here."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"no NVIDIA GPU/driver found: {detail}")
