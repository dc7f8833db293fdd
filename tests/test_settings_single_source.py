"""Settings defaults are written once, in the library: the VS Code manifest must repeat them exactly.

The node tests check that `package.json` and `config.ts` agree with each other; this test closes the loop by
checking the manifest against the library's own defaults (`AnalysisOptions`, `Thresholds`), which the language
server and the command line both use, and the thresholds' accepted ranges against those the server enforces.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from kerncast.analysis.options import Thresholds
from kerncast.analysis.toolchain import MIN_COMPILE_MEMORY_MB
from kerncast.server.config import CLIENT_ONLY, DEFAULTS, parse_settings

MANIFEST = Path(__file__).resolve().parent.parent / "vscode-client" / "package.json"
#: settings that only the server reads (editors other than VS Code may send them; the extension does not)
SERVER_ONLY = frozenset({"maxFileBytes"})


def _manifest_defaults() -> dict[str, Any]:
    properties = json.loads(MANIFEST.read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"]
    return {key.removeprefix("kerncast."): spec.get("default") for key, spec in properties.items()}


def _flatten(defaults: dict[str, Any]) -> dict[str, Any]:
    """`{"thresholds": {"lowOccupancy": 0.25}}` -> `{"thresholds.lowOccupancy": 0.25}`, as VS Code names them."""
    flat: dict[str, Any] = {}
    for key, value in defaults.items():
        if key == "thresholds":
            flat.update({f"{key}.{sub}": v for sub, v in value.items()})
        else:
            flat[key] = value
    return flat


def test_every_library_setting_is_in_the_manifest_with_the_same_default() -> None:
    manifest = _manifest_defaults()
    library = {k: v for k, v in _flatten(DEFAULTS).items() if k not in SERVER_ONLY}
    missing = sorted(set(library) - set(manifest))
    assert not missing, f"settings missing from package.json: {missing}"
    differing = {k: (library[k], manifest[k]) for k in library if library[k] != manifest[k]}
    assert not differing, f"(library, package.json) defaults differ: {differing}"


def test_the_manifest_has_no_server_setting_the_library_does_not_know() -> None:
    manifest = _manifest_defaults()
    client_keys = {k for k in manifest if k.split(".")[0] in CLIENT_ONLY}
    unknown = sorted(set(manifest) - client_keys - set(_flatten(DEFAULTS)))
    assert not unknown, f"package.json settings the server does not read: {unknown}"


def test_the_manifest_accepts_the_same_threshold_values_as_the_server() -> None:
    """A threshold's type, minimum and maximum in package.json are those the settings reader enforces."""
    properties = json.loads(MANIFEST.read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"]
    differing = {}
    for _, setting in Thresholds.settings():
        spec = properties[f"kerncast.thresholds.{setting.name}"]
        library = ("integer" if setting.integer else "number", setting.low,
                   None if setting.high == math.inf else setting.high)
        manifest = (spec.get("type"), spec.get("minimum"), spec.get("maximum"))
        if library != manifest:
            differing[setting.name] = (library, manifest)
    assert not differing, f"(library, package.json) (type, minimum, maximum) differ: {differing}"


def test_an_out_of_range_threshold_is_refused_with_the_range_in_the_warning() -> None:
    settings, warnings = parse_settings({"thresholds": {"bankConflictWays": 33, "lowOccupancy": 0.5}})
    assert settings.options.thresholds.bank_conflict_ways == 2
    assert settings.options.thresholds.low_occupancy == 0.5
    assert any("bankConflictWays" in w and "between 1 and 32" in w for w in warnings), warnings


def test_the_manifest_accepts_the_same_compile_memory_limits_as_the_server() -> None:
    spec = json.loads(MANIFEST.read_text(encoding="utf-8"))["contributes"]["configuration"]["properties"][
        "kerncast.compileMemoryMB"]
    assert spec["minimum"] == MIN_COMPILE_MEMORY_MB and spec["type"] == ["integer", "null"]
