"""GPU profiles: one TOML file per GPU (the thesis's abstract GPU, every value with its source).

Public API::

    list_profiles() -> list[str]                  # shipped ids, sorted
    load_profile(id_or_path) -> GpuProfile        # a shipped id ("v100") or a path to a .toml file
    dump_profile(profile) -> str                  # TOML text that load_profile reads back unchanged
    GpuProfile, Limits, ProfileError              # see kerncast.analysis.gpus.profile for the schema
    Linear, PiecewiseLinear, ExpModel             # the per-GPU curve models, callable: model(x) -> float
"""

from kerncast.analysis.gpus.models import ExpModel, Linear, ModelError, PiecewiseLinear
from kerncast.analysis.gpus.profile import (
    GpuProfile,
    Limits,
    ProfileError,
    dump_profile,
    latency_rows,
    list_profiles,
    load_profile,
    parse_profile,
)

__all__ = [
    "ExpModel",
    "GpuProfile",
    "Limits",
    "Linear",
    "ModelError",
    "PiecewiseLinear",
    "ProfileError",
    "dump_profile",
    "latency_rows",
    "list_profiles",
    "load_profile",
    "parse_profile",
]
