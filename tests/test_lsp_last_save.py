"""The change since the last save, in the editor: the real server over stdio, real nvcc, a copy of
`examples/matmul.cu`.

Saved once, then saved again with the naive kernel's inner loop cut to a quarter of its trips: that kernel's
lens and hover say it is faster than the last save; the tiled kernel, untouched, says nothing of a change.
Undone and saved again, the naive kernel is slower than the last save by the same factor.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from kerncast.analysis.kernel_shift import shifted_text
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient
from test_lsp import LSP_MODULE, SERVER, V100_SM75, Session, needs_nvcc, start_session

MATMUL = Path(__file__).resolve().parents[1] / "examples" / "matmul.cu"
NAIVE_LOOP = "for (int k = 0; k < n; ++k) {"
SHORTER_LOOP = "for (int k = 0; k < n / 4; ++k) {"
FASTER = re.compile(r"(\d+(?:\.\d+)?)x faster than the last save")
SINCE = re.compile(r" · [^·]*last save.*$")

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]


@pytest_lsp.fixture(config=SERVER, scope="module", params=["visual_studio_code", "neovim@v0.7.0"])
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory):
    needs_nvcc()
    workdir = tmp_path_factory.mktemp("last_save")
    shutil.copy(MATMUL, workdir / MATMUL.name)
    await start_session(lsp_client, workdir, V100_SM75, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def s(client: LanguageClient) -> Session:
    return Session(client, client.workdir)


async def _lenses(s: Session, uri: str) -> dict[str, str]:
    """Kernel name (the lens's second argument) -> lens title."""
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    return {lens.command.arguments[1]: lens.command.title for lens in found if lens.command is not None}


async def _hover_text(s: Session, uri: str, needle: str) -> str:
    line = s.line_of(uri, needle)
    answer = await s.hover(uri, line, s.text(uri).splitlines()[line].index(needle) + 2)
    assert answer is not None and isinstance(answer.contents, lsp.MarkupContent)
    return answer.contents.value


async def test_a_kernel_rewritten_between_saves_says_how_much_faster_it_got(s: Session) -> None:
    uri = s.open(MATMUL.name)
    await s.diagnostics(uri)
    s.save(uri)
    first = await _lenses(s, uri)
    assert len(first) == 2 and not any("last save" in t for t in first.values()), first

    text = s.text(uri)
    assert NAIVE_LOOP in text
    version = s.change(uri, text.replace(NAIVE_LOOP, SHORTER_LOOP))
    s.save(uri)
    await s.diagnostics(uri, version)
    titles = await _lenses(s, uri)
    naive = next(t for name, t in titles.items() if "matmulNaive" in name)
    tiled = next(t for name, t in titles.items() if "matmulNaive" not in name)
    speedup = FASTER.search(naive)
    assert speedup is not None, naive
    assert float(speedup.group(1)) > 1.5, naive  # a quarter of the inner loop's trips
    assert "last save" not in tiled, tiled

    naive_hover = await _hover_text(s, uri, "matmulNaive(const")
    assert "**Since the last save:**" in naive_hover and FASTER.search(naive_hover), naive_hover
    # the answer (time, range, bottleneck) still leads; the change is the next thing read
    assert naive_hover.index("Bottleneck:") < naive_hover.index("**Since the last save:**"), naive_hover
    tiled_hover = await _hover_text(s, uri, "MatrixMulCUDA(float")
    assert "last save" not in tiled_hover, tiled_hover

    # saved again without an edit: the change against the analysis before stays said
    s.save(uri)
    await s.diagnostics(uri, version)
    assert FASTER.search((await _lenses(s, uri))[next(n for n in titles if "matmulNaive" in n)])

    # the edit undone and saved: now slower than the last save, by the factor it was faster
    version = s.change(uri, text)
    s.save(uri)
    await s.diagnostics(uri, version)
    titles = await _lenses(s, uri)
    naive = next(t for name, t in titles.items() if "matmulNaive" in name)
    slower = re.search(r"(\d+(?:\.\d+)?)x slower than the last save", naive)
    assert slower is not None and float(slower.group(1)) == pytest.approx(float(speedup.group(1)), rel=0.1), naive
    assert "last save" not in next(t for name, t in titles.items() if "matmulNaive" not in name)


async def test_lines_added_above_move_every_report_unchanged(s: Session) -> None:
    """Two comment lines above every kernel: the saved analysis lands two lines lower (diagnostics and lenses),
    says the same, and no kernel is said to have changed since the last save."""
    uri = s.open(MATMUL.name)
    before = await s.diagnostics(uri)
    lenses_before = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert before and lenses_before
    version = s.change(uri, "// moved\n// down\n" + s.text(uri))
    s.save(uri)
    after = await s.diagnostics(uri, version)
    assert [(d.range.start.line, d.range.end.line, d.code, d.message) for d in after] == \
        [(d.range.start.line + 2, d.range.end.line + 2, d.code, shifted_text(d.message, 2)) for d in before]
    lenses_after = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    # the lenses before still said how the previous save changed the naive kernel: that part aside, the same
    assert sorted((lens.range.start.line, lens.command.title) for lens in lenses_after if lens.command) == \
        sorted((lens.range.start.line + 2, SINCE.sub("", lens.command.title)) for lens in lenses_before
               if lens.command)
    assert not any("last save" in (lens.command.title if lens.command else "") for lens in lenses_after)
