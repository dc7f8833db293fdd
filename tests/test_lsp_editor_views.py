"""The server commands behind the VS Code report view and line decoration, over stdio with real nvcc on a copy
of `examples/matmul.cu`: `kerncast.reportPage` gives the report page of the published analysis (no script, the
per-line rows marked with their line), and `kerncast.lineCosts` each hot line's share of its kernel's energy at
its line in the current text: after lines are typed above the kernels (not saved), the same lines, moved."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient
from test_lsp import LSP_MODULE, SERVER, V100_SM75, Session, needs_nvcc, start_session

MATMUL = Path(__file__).resolve().parents[1] / "examples" / "matmul.cu"

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    needs_nvcc()
    workdir = tmp_path_factory.mktemp("editor_views")
    shutil.copy(MATMUL, workdir / MATMUL.name)
    await start_session(lsp_client, workdir, V100_SM75)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def s(client: LanguageClient) -> Session:
    return Session(client, client.workdir)


async def _command(s: Session, command: str, *args: object) -> object:
    return await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=command,
                                                                                   arguments=list(args)))


async def test_report_page_and_line_costs(s: Session) -> None:
    uri = s.open(MATMUL.name)
    await s.diagnostics(uri)
    page = await _command(s, "kerncast.reportPage", uri)
    assert isinstance(page, dict)
    html = page["html"]
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html.lower()
    assert "<svg" in html and 'data-line="' in html

    costs = await _command(s, "kerncast.lineCosts", uri)
    assert isinstance(costs, dict) and costs["lines"], costs
    lines = s.text(uri).splitlines()
    for c in costs["lines"]:
        assert 0.01 <= c["share"] <= 1 and c["kernel"] and "energy" in c["label"]
        assert lines[c["line"]].strip(), c  # a line of code, not a blank one
        assert f'data-line="{c["line"] + 1}"' in html  # the page lists the same line
    naive = [c for c in costs["lines"] if "matmulNaive" in c["kernel"]]
    assert naive and all(c["line"] > s.line_of(uri, "matmulNaive(const") for c in naive)

    # two lines typed above everything, not saved: the same lines, two further down
    s.change(uri, "// one\n// two\n" + s.text(uri))
    moved = await _command(s, "kerncast.lineCosts", uri)
    assert [c["line"] for c in moved["lines"]] == [c["line"] + 2 for c in costs["lines"]]
    assert moved["version"] == s.version(uri)


async def test_commands_before_an_analysis_and_with_bad_arguments(s: Session) -> None:
    assert await _command(s, "kerncast.lineCosts", (s.workdir / "never_opened.cu").as_uri()) is None
    assert await _command(s, "kerncast.reportPage", (s.workdir / "never_opened.cu").as_uri()) is None
    with pytest.raises(Exception, match="expects"):
        await _command(s, "kerncast.lineCosts", {"not": "a uri"})
