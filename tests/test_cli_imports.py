"""Each command imports only what it needs: a real `kerncast` process reports the modules it loaded.

`--help` and `gpus` load no machine-learning library; `analyze` loads the power model's runtime (numpy only: the
tree members are evaluated without XGBoost) but no machine-learning library and nothing of training, LIME or
the language server's LSP types.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kerncast.analysis.collector import GEN0_THRESHOLD

REPO = Path(__file__).resolve().parent.parent
ML = {"xgboost", "sklearn", "scipy", "lime", "pandas"}
#: the statistical power model's runtime: the shipped models, their blend and the tree evaluator
POWER_RUNTIME = {f"kerncast.analysis.power.{m}" for m in ("model", "blend", "trees", "engineered", "explain")}

_PROBE = """
import contextlib, io, json, sys
from kerncast.server.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        status = main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def _modules(*args: str) -> tuple[int, set[str]]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return data["status"], set(data["modules"])


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize("args", [("--help",), ("gpus",), ("analyze", "--help")], ids=" ".join)
def test_help_and_gpus_import_no_ml_library(args) -> None:
    status, modules = _modules(*args)
    assert status in (0, None)
    assert not (_top(modules) & ML), sorted(_top(modules) & ML)
    # the report and the stage contract name the power package's result types, but its runtime is not loaded
    assert not POWER_RUNTIME & modules, sorted(POWER_RUNTIME & modules)


def test_analyze_loads_no_ml_library_training_lime_or_lsp(tmp_path: Path, compile_example) -> None:
    ptx = tmp_path / "vector_add.ptx"
    ptx.write_text(compile_example("vector_add").ptx)
    status, modules = _modules("analyze", str(ptx), "--format", "json")
    assert status == 0
    assert "kerncast.analysis.stages.power" in modules  # the power prediction did run
    assert "kerncast.analysis.power.trees" in modules  # with the numpy tree evaluator
    assert not (_top(modules) & ML), sorted(_top(modules) & ML)  # no xgboost, sklearn, scipy, lime, pandas
    assert "kerncast.analysis.power.train" not in modules
    assert not {"lsprotocol", "pygls"} & _top(modules)


def test_every_command_runs_with_the_analysing_collector_threshold():
    """A real `kerncast` process raises CPython's generation-0 collection threshold (700) to the one analyses
    are tuned for, before any command runs (analysis/collector.py)."""
    probe = ("import contextlib, gc, io, sys\nfrom kerncast.server.cli import main\n"
             "before = gc.get_threshold()[0]\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    main(['gpus'])\n"
             "print(before, gc.get_threshold()[0])")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    before, after = map(int, proc.stdout.split()[-2:])
    assert before == 700 and after == GEN0_THRESHOLD > before
