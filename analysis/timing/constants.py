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
