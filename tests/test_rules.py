"""The rule registry is the one description of every finding: `kerncast rules`, the README's table, SARIF's
rule table and the editor's documentation links all come from it, and no finding exists without a rule."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from kerncast.analysis.finding import Finding
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.rules import RULES, Code, markdown_table, rule
from kerncast.server.sarif import to_sarif

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def _kerncast(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kerncast.server", *args], capture_output=True, text=True,
                          timeout=120)


def test_rules_command_lists_every_code() -> None:
    proc = _kerncast("rules")
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    assert sorted(listed) == sorted(c.value for c in Code)


def test_rules_command_explains_one_code_and_refuses_unknown_ones() -> None:
    proc = _kerncast("rules", "shared-bank-conflict")
    assert proc.returncode == 0
    assert "SharedMemoryConflicts" in proc.stdout and "pad-shared-array [safe]" in proc.stdout
    assert rule("shared-bank-conflict").href in proc.stdout
    bad = _kerncast("rules", "no-such-code")
    assert bad.returncode == 2 and "unknown code 'no-such-code'" in bad.stderr and bad.stdout == ""


def test_readme_findings_table_is_generated_from_the_registry() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in readme, "regenerate it with `kerncast rules --format markdown`"


def test_every_code_written_in_the_library_has_a_rule() -> None:
    written = set()
    for path in (REPO / "analysis").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        written.update(re.findall(r'(?:Finding\(\s*(?:code=)?|code=)"([a-z]+(?:-[a-z]+)+)"', text))
        written.update(Code[m].value for m in re.findall(r"\bCode\.([A-Z_]+)\b", text))
    assert written - set(RULES) == set()
    assert {"uncoalesced-global", "shared-bank-conflict", "divergent-branch", "unknown-access"} <= written


def test_a_finding_without_a_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="no rule"):
        Finding("made-up-code", "warning", 1, 1, 1, 2, "m")


def test_every_rule_has_what_the_docs_need() -> None:
    for r in RULES.values():
        assert r.title and r.explanation and r.example and r.remedy, r.code
        assert r.href.endswith(f"#{r.code.value}")
        assert r.severity in ("error", "warning", "information", "hint")


@pytest.mark.parametrize("source", [
    "tests/kernels/transpose.cu",
    "tests/kernels/gather.cu",
    "broken",
])
def test_sarif_validates_against_the_schema_and_names_every_code(nvcc_available, tmp_path, source) -> None:
    if source == "broken":
        path = tmp_path / "broken.cu"
        path.write_text("__global__ void k(float *x)\n{\n    x[0] = nope;\n}\n")
    else:
        path = REPO / source
    log = to_sarif(analyze_file(path))
    jsonschema.validate(log, SCHEMA)
    run = log["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert sorted(ids) == sorted(c.value for c in Code)
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
    if source.endswith("transpose.cu"):  # the fixes travel as SARIF fixes
        fixed = [r for r in run["results"] if r.get("fixes")]
        assert {r["ruleId"] for r in fixed} == {"uncoalesced-global", "shared-bank-conflict", "missing-restrict"}
