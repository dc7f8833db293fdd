"""A `.ptx` document above `maxFileBytes`, edited as it is typed in (analysis on change): the real server over
stdio answers every version with the refusal (remembered from the first one: a keystroke costs a length check)
and analyses the document as soon as it is small enough again. What a keystroke costs is measured by
`benchmarks/large_file_keystrokes.py`."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient
from test_lsp import LSP_MODULE, MALFORMED_PTX, SERVER, Session, start_session

LIMIT = 200_000

pytestmark = LSP_MODULE

SMALL_PTX = MALFORMED_PTX.replace("add.s32 %r2, %r1, ;;; garbage here", "add.s32 %r2, %r1, 1;").replace(
    "    ret\n", "    ret;\n}\n")


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await start_session(lsp_client, tmp_path_factory.mktemp("large"),
                        {"gpu": "v100", "analyzeOnChange": True, "maxFileBytes": LIMIT})
    yield
    await lsp_client.shutdown_session()


async def test_a_large_ptx_is_refused_on_every_keystroke_until_it_is_small(client: LanguageClient) -> None:
    s = Session(client, client.workdir)
    padding = "// " + "x" * 96 + "\n"
    big = padding * (LIMIT // len(padding) + 10) + SMALL_PTX
    (Path(client.workdir) / "big.ptx").write_text(big)
    uri = s.open("big.ptx")
    first = await s.diagnostics(uri)
    assert [d.code for d in first] == ["input-error"] and "maxFileBytes" in first[0].message
    text = big
    for i in range(3):  # typing: every version gets its refusal again
        text = f"// typed {i}\n" + text
        version = s.change(uri, text)
        diags = await s.diagnostics(uri, version)
        assert [d.code for d in diags] == ["input-error"]
        assert "maxFileBytes" in diags[0].message
        assert diags[0].range.start.line == 0
    assert await s.hover(uri, 5, 0) is None  # answered, and nothing is known below the refusal
    version = s.change(uri, SMALL_PTX)  # cut down below the limit: analysed again
    diags = await s.diagnostics(uri, version)
    assert not [d for d in diags if d.code == "input-error"]
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert len(found) == 1
    s.close(uri)
