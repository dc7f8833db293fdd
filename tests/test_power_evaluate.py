"""`kerncast power evaluate` on the repository's datasets: thesis parity (shuffled), grouped targets of the default
model, and its 90% interval on unseen benchmarks (coverage, width, physics).

This module always runs (the datasets are in the repository's data/power/); it takes one evaluation of about a
minute of CPU time, shared by every test through a session fixture.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from kerncast.analysis.power.dataset import default_data_dir
from kerncast.server.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]

DATA = default_data_dir()
pytestmark = pytest.mark.slow  # `make test` runs it: the marker only lets a quick local run deselect it

# Thesis Table 5.8 shuffled R² of the XGBoost model (0.9101 K20, 0.9544 M60, 0.9646 V100), rounded as in the issue.
THESIS_SHUFFLED = {"k20_larger": 0.91, "maxwell_m60": 0.95, "v100": 0.96}
# Grouped (unseen-benchmark) pooled R² the default model must keep (docs/power-model.md).
DEFAULT_GROUPED = {"k20_larger": 0.35, "maxwell_m60": 0.38, "v100": 0.30}
# Largest median width of the default model's 90% interval, as a share of the GPU's (TDP - idle). The idle powers
# are read at P0 (the K20's 43.5 W, the M60's 39 W), so (TDP - idle) is the span a running kernel can move in.
DEFAULT_WIDTH = {"k20_larger": 0.55, "maxwell_m60": 0.65, "v100": 0.7}


@pytest.fixture(scope="session")
def evaluation() -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["power", "evaluate", "--format", "json", "--datasets", ",".join(THESIS_SHUFFLED)])
    assert rc == 0
    return json.loads(buf.getvalue())


def test_schema(evaluation) -> None:
    assert set(evaluation) == set(THESIS_SHUFFLED)
    for r in evaluation.values():
        assert r["rows"] > 0
        for role in ("thesis", "default"):
            assert set(r[role]["shuffled"]) >= {"r2", "rmse", "mae", "mape"}
            assert set(r[role]["grouped"]) >= {"r2", "rmse", "mae", "mape", "coverage", "width_share_median",
                                               "lower_minus_idle_min_w", "idle_w", "tdp_w"}


@pytest.mark.parametrize("name", list(THESIS_SHUFFLED))
def test_thesis_model_reproduces_shuffled_scores(evaluation, name) -> None:
    assert abs(evaluation[name]["thesis"]["shuffled"]["r2"] - THESIS_SHUFFLED[name]) <= 0.02


@pytest.mark.parametrize("name", list(THESIS_SHUFFLED))
def test_thesis_model_does_not_generalise(evaluation, name) -> None:
    # benchmark memorisation: grouped R² far below shuffled (docs/power-model.md s1, s9)
    t = evaluation[name]["thesis"]
    assert t["grouped"]["r2"] < t["shuffled"]["r2"] - 0.5


@pytest.mark.parametrize("name", list(DEFAULT_GROUPED))
def test_default_model_grouped_targets(evaluation, name) -> None:
    d = evaluation[name]["default"]["grouped"]
    assert d["r2"] >= DEFAULT_GROUPED[name]
    assert d["r2"] > evaluation[name]["thesis"]["grouped"]["r2"]


@pytest.mark.parametrize("name", list(DEFAULT_GROUPED))
def test_default_interval_coverage_on_unseen_benchmarks(evaluation, name) -> None:
    assert evaluation[name]["default"]["grouped"]["coverage"] >= 0.85


@pytest.mark.parametrize("name", list(DEFAULT_WIDTH))
def test_default_interval_is_narrow_and_inside_physics(evaluation, name) -> None:
    g = evaluation[name]["default"]["grouped"]
    assert g["width_share_median"] <= DEFAULT_WIDTH[name]
    assert g["lower_minus_idle_min_w"] >= 0.0  # every lower bound at or above the GPU's idle power
    for role in ("thesis", "default"):
        assert evaluation[name][role]["grouped"]["lower_minus_idle_min_w"] >= 0.0


def test_default_data_is_the_repository_copy() -> None:
    assert DATA == REPO_ROOT / "data" / "power" and (DATA / "README.md").is_file()
