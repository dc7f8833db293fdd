"""The language server places a header-defined kernel's diagnostics in the header: the real server over stdio, a
real LSP client, real nvcc.

`main.cu` (tests/header_kernels) launches `strided_gather`, which `gather.cuh` defines. Opening main.cu
publishes that kernel's strided-access warning under gather.cuh's URI, at the header's line, and nothing of it
in main.cu, whose lenses are its own kernel's; hovering its launch in main.cu shows its report, which names
the header's lines. Opened, the header is analysed through main.cu and shows the
kernel with its lens; closing it brings back what main.cu found in it, and closing main.cu while the header is
open leaves the header's own diagnostics in place.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls import uris
from pytest_lsp import LanguageClient
from test_lsp import COLD_TIMEOUT_S as TIMEOUT_S
from test_lsp import LSP_MODULE, SERVER, Session, needs_nvcc, start_session

SOURCES = Path(__file__).resolve().parent / "header_kernels"

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    needs_nvcc()
    root = tmp_path_factory.mktemp("workspace")
    shutil.copytree(SOURCES, root / "project")
    await start_session(lsp_client, root, {"gpu": "h100"},
                        folders=[lsp.WorkspaceFolder(uri=uris.from_fs_path(str(root)), name="project")])
    yield
    await lsp_client.shutdown_session()


def _line(path: Path, needle: str) -> int:
    """The 0-based line of the first line of the file containing `needle`."""
    return next(i for i, text in enumerate(path.read_text().splitlines()) if needle in text)


async def _lenses(s: Session, uri: str) -> list[lsp.CodeLens]:
    return await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))


async def test_a_header_kernels_diagnostics_are_published_for_the_header(client: LanguageClient) -> None:
    s = Session(client, client.workdir)
    header_path = client.workdir / "project" / "gather.cuh"
    header = uris.from_fs_path(str(header_path))
    main = s.open("project/main.cu")
    own = await s.diagnostics(main)
    assert not [d for d in own if d.severity == lsp.DiagnosticSeverity.Error], [d.message for d in own]
    assert not [d for d in own if "strided_gather" in d.message]
    await s.wait_for(lambda: any(p.diagnostics for p in client.all_published if p.uri == header),
                     timeout=TIMEOUT_S)
    published = next(p for p in reversed(client.all_published) if p.uri == header)
    strided = [d for d in published.diagnostics if d.code == "uncoalesced-global"]
    assert [d.range.start.line for d in strided] == [_line(header_path, "in[i * stride]")]
    assert "128 bytes apart" in strided[0].message and "strided_gather" in strided[0].message
    text = header_path.read_text(encoding="utf-8").splitlines()[strided[0].range.end.line]
    assert strided[0].range.end.character == len(text.rstrip().encode("utf-16-le")) // 2  # UTF-16, as negotiated
    lenses = await _lenses(s, main)
    assert [lens.range.start.line for lens in lenses] == [s.line_of(main, "__global__ void fill(")]
    launch = s.line_of(main, "strided_gather<<<")
    hover = await s.hover(main, launch, s.text(main).splitlines()[launch].index("strided_gather") + 2)
    assert hover is not None and "### strided_gather" in hover.contents.value
    assert f"gather.cuh line {_line(header_path, 'in[i * stride]') + 1}: `uncoalesced-global`" in hover.contents.value

    opened = s.open("project/gather.cuh", language="cuda-cpp")
    assert opened == header
    diags = await s.diagnostics(header)
    assert [d.range.start.line for d in diags if d.code == "uncoalesced-global"] == \
        [_line(header_path, "in[i * stride]")]
    lenses = await _lenses(s, header)
    assert [lens.range.start.line for lens in lenses] == [_line(header_path, "__global__ void strided_gather(")]
    assert lenses[0].command is not None and "<<<8192, 128>>>" in lenses[0].command.title

    count = len(client.all_published)
    s.close(header)  # closed, the header shows again what main.cu, still open, found in it
    await s.wait_for(lambda: any(p.uri == header and p.diagnostics for p in client.all_published[count:]),
                     timeout=TIMEOUT_S)
    again = [p for p in client.all_published[count:] if p.uri == header][-1]
    assert [d.range.start.line for d in again.diagnostics if d.code == "uncoalesced-global"] == \
        [_line(header_path, "in[i * stride]")]

    s.open("project/gather.cuh", language="cuda-cpp")
    await s.diagnostics(header)
    count = len(client.all_published)
    s.close(main)  # the header is open with its own analysis: main.cu's closing leaves its diagnostics alone
    await s.wait_for(lambda: any(p.uri == main for p in client.all_published[count:]), timeout=TIMEOUT_S)
    assert not [p for p in client.all_published[count:] if p.uri == header]
    s.close(header)
    await s.wait_for(lambda: any(p.uri == header for p in client.all_published[count:]), timeout=TIMEOUT_S)
    assert [list(p.diagnostics) for p in client.all_published[count:] if p.uri == header] == [[]]
