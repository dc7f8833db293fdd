"""Every finding is built in the findings wing (`analysis/findings/`), by the family its rule names.

A finding is built by calling `Finding(...)`; the calls are found with `ast` in every module of the library and
the server, so that a new rule cannot grow its builder beside the model that detects it. Each rule of the
registry (`data/rules.toml`) names its family, the module of the wing that holds its code.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kerncast.analysis.rules import RULES, Code

REPO = Path(__file__).resolve().parent.parent
WING = REPO / "analysis" / "findings"


def finding_calls(path: Path) -> list[tuple[int, str | None]]:
    """(line, code member or None) of each `Finding(...)` call in a file: the member when the first argument
    is written `Code.MEMBER`."""
    out: list[tuple[int, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name != "Finding":
            continue
        first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "code"), None)
        member = first.attr if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) \
            and first.value.id == "Code" else None
        out.append((node.lineno, member))
    return out


def test_the_walker_sees_a_finding_call(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("f = Finding(Code.LOW_OCCUPANCY, 'warning', 1, 1, 1, 1, 'm')\ng = report.Finding(code=x)\n")
    assert finding_calls(source) == [(1, "LOW_OCCUPANCY"), (2, None)]


def test_every_finding_is_built_in_the_findings_wing() -> None:
    outside = [f"{path.relative_to(REPO)}:{line}" for folder in ("analysis", "server")
               for path in sorted((REPO / folder).rglob("*.py")) if WING not in path.parents
               for line, _ in finding_calls(path)]
    assert not outside, f"findings built outside analysis/findings/: {outside}"


def test_each_rule_names_the_family_module_that_holds_its_code() -> None:
    families = {p.stem for p in WING.glob("*.py") if p.name != "__init__.py"}
    wrong = [f"{code}: {r.family!r}" for code, r in RULES.items()
             if r.family not in families or f"Code.{Code(code).name}" not in (WING / f"{r.family}.py").read_text()]
    assert not wrong, f"rules whose family module does not hold their code: {wrong}"


def test_a_finding_with_a_literal_code_is_built_by_that_code_family() -> None:
    misplaced = [f"{path.name}:{line} Code.{member} (family {RULES[Code[member].value].family})"
                 for path in sorted(WING.glob("*.py")) for line, member in finding_calls(path)
                 if member is not None and RULES[Code[member].value].family != path.stem]
    assert not misplaced, misplaced
