"""The README documents what the code does: its Neovim setup is the file the end-to-end test runs, every
server setting is described, and every finding code the analyses emit is explained."""

from __future__ import annotations

import re
from pathlib import Path

from kerncast.server.config import DEFAULTS

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_gives_the_two_commands():
    assert "make demo" in README and "make test" in README


def test_neovim_setup_in_readme_is_the_tested_file():
    blocks = re.findall(r"```lua\n(.*?)```", README, re.S)
    tested = (REPO / "tests" / "nvim" / "kerncast.lua").read_text(encoding="utf-8")
    assert tested in blocks


def test_every_setting_is_described():
    keys = []
    for key, value in DEFAULTS.items():
        keys += [f"{key}.{sub}" for sub in value] if isinstance(value, dict) and value else [key]
    missing = [k for k in keys if f"`kerncast.{k}`" not in README and f"`{k}`" not in README]
    assert not missing, missing


def test_every_finding_code_is_explained():
    """Codes written as text in the library and every code of the rule registry (whose table is generated)."""
    from kerncast.analysis.rules import RULES

    codes = set(RULES)
    for path in (REPO / "analysis").rglob("*.py"):
        codes.update(re.findall(r'(?:Finding\(\s*(?:code=)?|code=)"([a-z]+(?:-[a-z]+)+)"', path.read_text()))
    assert {"uncoalesced-global", "shared-bank-conflict", "divergent-branch", "energy-hotspot"} <= codes
    missing = sorted(c for c in codes if f"`{c}`" not in README)
    assert not missing, missing
