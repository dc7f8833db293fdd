"""Reports as strict JSON: no NaN or Infinity, which Node, VS Code and most JSON parsers reject.

A model may produce a non-finite number (a share of nothing, a log of zero). Such a number is unknown, and
unknown is written as `null`; the top-level `"nulled"` list says where and why, so a reader can tell an
unknown value from a missing one. Serialisation then runs with `allow_nan=False`, so anything that slipped
through raises here instead of producing text a strict parser refuses.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps_strict", "finite_copy"]


def finite_copy(data: Any, path: str = "$", nulled: list[dict[str, str]] | None = None) -> Any:
    """A copy of JSON-like `data` with every non-finite float replaced by None, recorded in `nulled`."""
    if isinstance(data, float):
        if math.isfinite(data):
            return data
        if nulled is not None:
            nulled.append({"path": path, "reason": f"not a finite number ({data!r}): unknown"})
        return None
    if isinstance(data, dict):
        return {key: finite_copy(value, f"{path}.{key}", nulled) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [finite_copy(value, f"{path}[{i}]", nulled) for i, value in enumerate(data)]
    return data


def dumps_strict(data: Any, indent: int | None = 2, in_properties: bool = False) -> str:
    """JSON text of `data` with non-finite numbers as null; a dict gains `"nulled"` when any was replaced.

    `in_properties` puts the list in the top-level `properties` bag instead, where SARIF allows extra data.
    """
    nulled: list[dict[str, str]] = []
    clean = finite_copy(data, "$", nulled)
    if nulled and isinstance(clean, dict):
        target = clean.setdefault("properties", {}) if in_properties else clean
        target["nulled"] = nulled
    return json.dumps(clean, indent=indent, allow_nan=False)
