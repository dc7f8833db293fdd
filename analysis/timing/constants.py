"""Reads `data/timing.toml`: the time models' constants that belong to no single GPU, each with its source."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any


@cache
def timing_constants() -> dict[str, Any]:
    """The parsed `data/timing.toml` (sections `thesis`, `mwp_cwp`, `roofline`)."""
    text = resources.files("kerncast.analysis").joinpath("data/timing.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@cache
def time_error_band() -> dict[str, Any]:
    """The kerncast model's measured error spread (`data/time_error.toml`, written by
    benchmarks/validate_time.py): it widens the shown range only, no prediction reads it."""
    try:
        text = resources.files("kerncast.analysis").joinpath("data/time_error.toml").read_text(encoding="utf-8")
    except OSError:
        return {}
    return tomllib.loads(text).get("kerncast", {})


def gpu_error_band(profile_id: str) -> dict[str, Any]:
    """The kerncast model's error spread over launches measured on one GPU (a `[kerncast.gpu.<id>]` table of
    `data/time_error.toml`, written by benchmarks/validate_measured.py), or {} where none was measured: that
    GPU's range carries it instead of the general spread. No prediction reads it."""
    entry = time_error_band().get("gpu", {}).get(profile_id, {})
    return entry if isinstance(entry, dict) else {}


def capability(version: float) -> tuple[int, int]:
    """A compute capability written as a number in the data files (7.5) as the profiles' (major, minor)."""
    major = int(version)
    return major, round((version - major) * 10)
