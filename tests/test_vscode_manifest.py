"""The VS Code manifest keeps hostile workspaces away from command lines.

Every setting that reaches a command line or names a file to read is restricted in untrusted workspaces, and
settings that name a program are machine-overridable (a workspace's `.vscode/settings.json` cannot set them).
Every contributed setting is classified, so a new one cannot slip through unrestricted by omission.
"""

from __future__ import annotations

import json
from pathlib import Path

from kerncast.server.config import COMMAND_LINE_SETTINGS, DATA_SETTINGS, EXECUTABLE_SETTINGS

MANIFEST = Path(__file__).resolve().parent.parent / "vscode-client" / "package.json"


def _manifest() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def _settings(manifest: dict) -> dict[str, dict]:
    configuration = manifest["contributes"]["configuration"]
    blocks = configuration if isinstance(configuration, list) else [configuration]
    return {key.removeprefix("kerncast."): schema for block in blocks for key, schema in block["properties"].items()}


def _top(name: str) -> str:
    """`thresholds.lowOccupancy` is classified as `thresholds`; client keys keep their dotted names."""
    return name if name in COMMAND_LINE_SETTINGS | DATA_SETTINGS else name.split(".", 1)[0]


def test_every_setting_is_classified() -> None:
    unclassified = [name for name in _settings(_manifest()) if _top(name) not in COMMAND_LINE_SETTINGS | DATA_SETTINGS]
    assert unclassified == []


def test_command_line_settings_are_restricted_in_untrusted_workspaces() -> None:
    manifest = _manifest()
    untrusted = manifest["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    restricted = set(untrusted["restrictedConfigurations"])
    contributed = set(_settings(manifest))
    for name in COMMAND_LINE_SETTINGS:
        assert name in contributed, f"kerncast.{name} is not contributed"
        assert f"kerncast.{name}" in restricted, f"kerncast.{name} reaches a command line but is not restricted"


def test_executable_paths_are_machine_overridable() -> None:
    settings = _settings(_manifest())
    for name in EXECUTABLE_SETTINGS:
        assert settings[name].get("scope") == "machine-overridable", name
