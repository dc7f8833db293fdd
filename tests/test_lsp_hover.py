"""The kernel hover leads with one answer: the real server over stdio, real nvcc, `examples/matmul.cu`.

The naive kernel's hover starts with the shown time model's time, range and bottleneck, lists only that model's
own parts, heads its energy part with one figure (power × time; the per-event model's split is given in shares
of it), says per loop which trip count the prediction used, and folds the other models below as alternatives.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.server.hover import KERNCAST_PARTS
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient
from test_lsp import LSP_MODULE, SERVER, V100_SM75, Session, needs_nvcc, start_session

MATMUL = Path(__file__).resolve().parents[1] / "examples" / "matmul.cu"
ENERGY_UNIT = re.compile(r"\d (nJ|µJ|mJ|J)\b")

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    needs_nvcc()
    workdir = tmp_path_factory.mktemp("hover")
    shutil.copy(MATMUL, workdir / MATMUL.name)
    await start_session(lsp_client, workdir, V100_SM75)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def s(client: LanguageClient) -> Session:
    return Session(client, client.workdir)


def _part(lines: list[str], start: str, end: str) -> list[str]:
    """The hover's lines from the one starting with `start` up to (not including) the next starting with `end`."""
    first = next(i for i, ln in enumerate(lines) if ln.startswith(start))
    last = next(i for i, ln in enumerate(lines[first + 1:], first + 1) if ln.startswith(end))
    return lines[first:last]


async def test_the_naive_matmul_hover_leads_with_one_answer(s: Session) -> None:
    uri = s.open(MATMUL.name)
    await s.diagnostics(uri)
    line = s.line_of(uri, "__global__ void matmulNaive")
    hov = await s.hover(uri, line, s.text(uri).splitlines()[line].index("matmulNaive") + 2)
    assert hov is not None and isinstance(hov.contents, lsp.MarkupContent)
    text = hov.contents.value
    lines = text.splitlines()
    assert lines[0].startswith("### matmulNaive — on V100")
    body = [ln for ln in lines[1:] if ln.strip()]
    # the first three lines: the shown model's time, its range, its bottleneck
    assert re.fullmatch(r"\*\*Time ≈ [\d.]+ (µs|ms|s)\*\* \(kerncast model\)", body[0]), body[0]
    assert re.match(r"Range [\d.]+ (ns|µs|ms|s) – [\d.]+ (ns|µs|ms|s): ", body[1]), body[1]
    assert re.fullmatch(r"Bottleneck: \*\*.+\*\*", body[2]), body[2]
    shown = body[0].split("≈ ")[1].split("**")[0]

    # every row of the breakdown is one of the kerncast model's parts; the thesis scheduler's are gone from it
    head, other = text.split("**Other models**")
    rows = [r.split("|")[1].strip() for r in _part(lines, "Parts of this time", "**Power")
            if r.startswith("| ") and not r.startswith("| part ")]
    assert rows and set(rows) <= set(KERNCAST_PARTS.values()), rows
    assert f"| kernel duration (on the GPU) | {shown} |" in text  # the parts' whole is the time shown
    assert "schedule_us" not in text and "thesis" not in head

    # one energy figure heads the energy part; the per-event split is in shares of it
    energy = _part(lines, "**Energy", "**Launch")
    assert re.match(r"\*\*Energy ≈ [\d.]+ (nJ|µJ|mJ|J)\*\* .*power × predicted time", energy[0]), energy[0]
    assert not [ln for ln in energy[1:] if ENERGY_UNIT.search(ln)], energy
    assert any(ln.startswith("Split of this energy (per-event model, shares)") for ln in energy), energy

    # the launch table has one row per loop, with the count the prediction used and its source
    report = analyze_file(MATMUL, options=AnalysisOptions(gpu="v100", arch="sm_75"))
    (naive,) = [k for k in report.kernels if k.name == "matmulNaive"]
    assert naive.loops and all(lp.trip_count is not None for lp in naive.loops)
    launch = _part(lines, "**Launch", "Registers/thread")
    loop_rows = [r for r in launch if r.startswith("| loop at ")]
    assert [r.split("|")[1:3] for r in loop_rows] == [
        [f" loop at line {lp.header_line} ", f" {lp.trip_count} "] for lp in naive.loops], loop_rows
    assert all("launch-site" in r for r in loop_rows)  # the count follows from n at the launch
    assert not any(r.startswith("| loops |") for r in launch)  # no single default count beside them

    # the other models come last, said to be alternatives, with the default named
    assert "alternatives for comparison, not the answer" in other and "Kerncast's default is kerncast" in other
    assert re.search(r"Other models: thesis [\d.]+ (µs|ms|s), mwp-cwp [\d.]+ (µs|ms|s)", other), other
    assert "Per-event energy model's own total:" in other
