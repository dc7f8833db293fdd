"""The README documents what the code does: its Neovim setup is the file the end-to-end test runs, every
server setting is described, and every finding code the analyses emit is explained."""

from __future__ import annotations

import re
from pathlib import Path

from kerncast.analysis.rules import RULES
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
    codes = set(RULES)
    for path in (REPO / "analysis").rglob("*.py"):
        codes.update(re.findall(r'(?:Finding\(\s*(?:code=)?|code=)"([a-z]+(?:-[a-z]+)+)"', path.read_text()))
    assert {"uncoalesced-global", "shared-bank-conflict", "divergent-branch", "energy-hotspot"} <= codes
    missing = sorted(c for c in codes if f"`{c}`" not in README)
    assert not missing, missing


def _layout_section() -> str:
    return README.split("### Layout", 1)[1].split("\n## ", 1)[0]


def test_layout_names_only_paths_that_exist():
    """Every file or folder the README's layout names is in the tree, under the folder it is listed in."""
    section = _layout_section()
    roots = [REPO, REPO / "analysis", REPO / "analysis" / "power", REPO / "analysis" / "gpus",
             REPO / "analysis" / "memory", REPO / "analysis" / "timing", REPO / "analysis" / "stages",
             REPO / "analysis" / "findings", REPO / "server"]
    names = set(re.findall(r"`([\w./*-]+(?:\.py|\.md|/))`", section))
    missing = [n for n in names
               if not any(list(root.glob(n.rstrip("/"))) for root in roots)]
    assert names and not missing, missing


def test_layout_lists_every_module_and_folder_of_the_library():
    """A new top-level module or package of `analysis/` or `server/` gets its place in the layout."""
    section = _layout_section()
    named = set(re.findall(r"`([\w*]+\.py|[\w]+/)`", section))
    present = {p.name for d in ("analysis", "server") for p in (REPO / d).glob("*.py") if p.name != "__init__.py"
               and p.name != "__main__.py"}
    present |= {p.name + "/" for p in (REPO / "analysis").iterdir() if p.is_dir() and p.name != "__pycache__"}
    covered = {n for n in present if n in named or (n.startswith("cmd_") and "cmd_*.py" in named)}
    assert present - covered == set(), sorted(present - covered)


def test_architecture_stage_table_is_the_stages_folder():
    """docs/architecture.md's table of stages names each module of `analysis/stages/` once, and nothing else."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line for line in doc.split("| stage | module |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]]
    named = [m for row in rows for m in re.findall(r"`stages/(\w+\.py)`", row.split("|")[2])]
    present = sorted(p.name for p in (REPO / "analysis" / "stages").glob("*.py") if p.name != "__init__.py")
    assert len(rows) == len(named) and sorted(named) == present, (named, present)
