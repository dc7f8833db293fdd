"""Settings defaults are written once, in the library: the VS Code manifest must repeat them exactly.

The node tests check that `package.json` and `config.ts` agree with each other; this test closes the loop by
checking the manifest against the library's own defaults (`AnalysisOptions`, `Thresholds`), which the language
server and the command line both use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kerncast.server.config import CLIENT_ONLY, DEFAULTS

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
