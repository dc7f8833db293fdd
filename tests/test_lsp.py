"""End-to-end tests of the language server: the real server over stdio, real nvcc, real example files.

Every test runs twice, under the capability sets of VS Code and of Neovim 0.7 (pytest-lsp's recorded sets),
with one server per capability set for the module. The server must never call what a client did not
advertise: pytest-lsp's specification warnings are errors here.
"""

from __future__ import annotations

import ast
import asyncio
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import pytest_lsp
from kerncast.analysis.compile import ToolchainError, find_toolchain
from lsprotocol import types as lsp
from pygls import uris
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from test_lsp_resource_findings import RESOURCES_CU

SERVER_COMMAND = [sys.executable, "-m", "kerncast.server", "lsp"]
#: the server every pytest-lsp module starts (one per module and capability set)
SERVER = ClientServerConfig(server_command=SERVER_COMMAND)
#: the marks of every pytest-lsp module: one event loop for the module's server, and every departure from the
#: LSP specification an error (the server must never call what a client did not advertise)
LSP_MODULE = [pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")]
#: the initialization options of the modules that predict for one fixed GPU and target
V100_SM75 = {"gpu": "v100", "arch": "sm_75"}
LANGUAGE = {".cu": "cuda-cpp", ".ptx": "ptx"}
TIMEOUT_S = 90
#: a cold server's first compile (nvcc, ptxas, model loading) on a busy machine
COLD_TIMEOUT_S = 300
MEMORY_CODES = ("uncoalesced-global", "shared-bank-conflict", "divergent-branch")


def needs_nvcc() -> None:
    try:
        find_toolchain()
    except ToolchainError as exc:
        pytest.skip(f"no CUDA toolchain, the language server tests compile real files: {exc}")


class Session:
    """A test's view of the shared client: open, change and save documents, wait for their diagnostics."""

    def __init__(self, client: LanguageClient, workdir: Path) -> None:
        self.client = client
        self.workdir = workdir
        if not hasattr(client, "open_docs"):
            client.open_docs = {}

    @staticmethod
    def install_recorder(client: LanguageClient) -> None:
        """Keep every publishDiagnostics (with its version), besides pytest-lsp's latest-per-uri view."""
        client.all_published = []
        features = client.protocol.fm.features
        original = features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

        def recorder(params: lsp.PublishDiagnosticsParams) -> None:
            original(params)
            client.all_published.append(params)

        features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = recorder

    def published(self, uri: str) -> list[lsp.PublishDiagnosticsParams]:
        """What was published for the document since it was last opened."""
        since = getattr(self.client, "opened_at", {}).get(uri, 0)
        return [p for p in self.client.all_published[since:] if p.uri == uri]

    def open(self, name: str, language: str | None = None) -> str:
        path = self.workdir / name
        uri = uris.from_fs_path(str(path))
        if uri in self.client.open_docs:
            return uri
        text = path.read_text()
        language = language or LANGUAGE[path.suffix]
        if "neovim" in self.client.client_name and language == "cuda-cpp":
            language = "cuda"
        self.client.open_docs[uri] = [1, text]
        self.client.opened_at = getattr(self.client, "opened_at", {})
        self.client.opened_at[uri] = len(self.client.all_published)
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))
        return uri

    def close(self, uri: str) -> None:
        self.client.open_docs.pop(uri, None)
        self.client.text_document_did_close(lsp.DidCloseTextDocumentParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri)))

    def text(self, uri: str) -> str:
        return self.client.open_docs[uri][1]

    def version(self, uri: str) -> int:
        return self.client.open_docs[uri][0]

    def line_of(self, uri: str, needle: str) -> int:
        return next(i for i, line in enumerate(self.text(uri).splitlines()) if needle in line)

    def kernel_lines(self, uri: str, kernel: str) -> range:
        """The 1-based lines of a kernel, from its signature to the closing brace in column 0."""
        lines = self.text(uri).splitlines()
        start = self.line_of(uri, f"__global__ void {kernel}(")
        end = next(i for i in range(start, len(lines)) if lines[i] == "}")
        return range(start + 1, end + 2)

    def change(self, uri: str, text: str) -> int:
        """Replace the whole text (on disk too, as an editor's save would); returns the new version."""
        version = self.version(uri) + 1
        self.client.open_docs[uri][:2] = [version, text]
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        return version

    def save(self, uri: str) -> None:
        Path(uris.to_fs_path(uri)).write_text(self.text(uri))
        self.client.text_document_did_save(lsp.DidSaveTextDocumentParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri)))

    async def wait_for(self, condition: Any, timeout: float = TIMEOUT_S) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not condition():
            if self.client.error is not None:
                raise self.client.error
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("timed out waiting for the server")
            await asyncio.sleep(0.05)

    async def diagnostics(self, uri: str, version: int | None = None) -> list[lsp.Diagnostic]:
        """The diagnostics published for this version of the document (default: its current version)."""
        version = self.version(uri) if version is None else version
        await self.wait_for(lambda: any(p.version == version for p in self.published(uri)))
        return list(next(p for p in reversed(self.published(uri)) if p.version == version).diagnostics)

    async def hover(self, uri: str, line: int, character: int) -> lsp.Hover | None:
        return await self.client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line, character)))


def _offset(lines: list[str], pos: lsp.Position) -> int:
    return sum(len(line) for line in lines[: pos.line]) + pos.character


def apply_workspace_edit(text: str, edit: lsp.WorkspaceEdit, uri: str, version: int) -> str:
    """Apply a WorkspaceEdit to one document's text the way an editor does (checking the version)."""
    edits: list[lsp.TextEdit] = []
    if edit.document_changes:
        for change in edit.document_changes:
            assert isinstance(change, lsp.TextDocumentEdit)
            assert change.text_document.uri == uri
            assert change.text_document.version == version, "the edit is for another version of the document"
            edits.extend(change.edits)
    else:
        assert edit.changes is not None and set(edit.changes) == {uri}
        edits = list(edit.changes[uri])
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = _offset(lines, e.range.start), _offset(lines, e.range.end)
        text = text[:start] + e.new_text + text[end:]
        lines = text.splitlines(keepends=True)
    return text

pytestmark = [*LSP_MODULE, pytest.mark.nvcc]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

BROKEN_CU = """\
#include <cuda_runtime.h>

__global__ void broken(float *out)
{
    out[threadIdx.x] = undefined_symbol * 2.0f;
}
"""

NO_LAUNCH_CU = """\
// a kernel file without a host launch
#include <cuda_runtime.h>

__global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""

MALFORMED_PTX = """\
.version 7.0
.target sm_75
.address_size 64

.visible .entry broken_kernel(
    .param .u64 p
)
{
    .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x;
    add.s32 %r2, %r1, ;;; garbage here
    ret
"""


TWO_TILES_CU = """\
// Two kernels that each declare their own `tile`: only the second one reads it column-wise.
#include <cuda_runtime.h>

// kerncast: block=32,32
__global__ void copyShared(float *out, const float *in, int width)
{
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    out[y * width + x] = tile[threadIdx.y][threadIdx.x];
}

// kerncast: block=32,32
__global__ void transposeShared(float *out, const float *in, int width)
{
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    out[y * width + x] = tile[threadIdx.x][threadIdx.y];
}
"""


def make_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files one server works on (each capability set gets its own copy: tests save edits)."""
    needs_nvcc()
    d = tmp_path_factory.mktemp("lsp")
    for name in ("transpose.cu", "reduction.cu", "saxpy.cu", "vector_add.cu"):
        shutil.copy(EXAMPLES / name, d / name)
    (d / "broken.cu").write_text(BROKEN_CU)
    (d / "nolaunch.cu").write_text(NO_LAUNCH_CU)
    (d / "resources.cu").write_text(RESOURCES_CU)
    (d / "twotiles.cu").write_text(TWO_TILES_CU)
    (d / "malformed.ptx").write_text(MALFORMED_PTX)
    (d / "big.cu").write_text(("// padding comment line to make this file large, " + "x" * 60 + "\n") * 46000
                              + NO_LAUNCH_CU)
    return d


def answer_refresh_requests(lsp_client: LanguageClient) -> None:
    """Answer the server's code-lens and inlay-hint refresh requests as an editor does, counting the former."""
    lsp_client.code_lens_refreshes = 0

    @lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def _code_lens_refresh(params: Any) -> None:
        lsp_client.code_lens_refreshes += 1

    @lsp_client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def _inlay_refresh(params: Any) -> None:
        return None


async def start_session(lsp_client: LanguageClient, workdir: Path, options: dict[str, Any],
                        client_name: str = "visual_studio_code", capabilities: lsp.ClientCapabilities | None = None,
                        folders: list[lsp.WorkspaceFolder] | None = None) -> lsp.InitializeResult:
    """Initialize the module's server on `workdir` as the editor `client_name` (pytest-lsp's recorded capability
    set, or `capabilities`), with what every `Session` relies on in place first: the record of all published
    diagnostics and answers to the server's refresh requests."""
    lsp_client.workdir = workdir
    Session.install_recorder(lsp_client)
    answer_refresh_requests(lsp_client)
    lsp_client.client_name = client_name
    return await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities or client_capabilities(client_name), root_uri=uris.from_fs_path(str(workdir)),
        workspace_folders=folders, initialization_options=options))


@pytest_lsp.fixture(config=SERVER, scope="module", params=["visual_studio_code", "neovim@v0.7.0"])
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory):
    await start_session(lsp_client, make_workdir(tmp_path_factory), {**V100_SM75, "analyzeOnChange": True},
                        request.param)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def s(client: LanguageClient) -> Session:
    return Session(client, client.workdir)


# ------------------------------------------------------------------------------------------ diagnostics


async def test_compile_error_is_a_diagnostic_at_its_line(s: Session) -> None:
    uri = s.open("broken.cu")
    diags = await s.diagnostics(uri)
    errors = [d for d in diags if d.code == "compile-error"]
    assert errors, [d.message for d in diags]
    assert errors[0].range.start.line == 4  # 0-based: line 5 of the file
    assert "undefined_symbol" in errors[0].message
    assert errors[0].source == "kerncast"
    assert errors[0].severity == lsp.DiagnosticSeverity.Error
    await s.hover(uri, 4, 10)  # the server still answers on the broken file
    s.close(uri)


async def test_transpose_memory_findings(s: Session) -> None:
    uri = s.open("transpose.cu")
    diags = await s.diagnostics(uri)
    got = {(d.code, d.range.start.line) for d in diags}
    assert ("uncoalesced-global", s.line_of(uri, "odata[x * height + (y + j)]")) in got  # transposeNaive's store
    column_read = s.line_of(uri, "= tile[threadIdx.x][threadIdx.y + j]")  # transposeTiled's column read of tile
    assert ("shared-bank-conflict", column_read) in got
    assert not [d for d in diags if d.severity == lsp.DiagnosticSeverity.Error]
    padded = s.kernel_lines(uri, "transposePadded")  # the padded kernel is clean
    assert not [d for d in diags if d.range.start.line + 1 in padded and d.code in MEMORY_CODES]
    bank = next(d for d in diags if d.code == "shared-bank-conflict")
    assert bank.related_information, "the declaration of the shared array is related information"
    declared = s.line_of(uri, "__shared__ float tile[TILE_DIM][TILE_DIM];")  # transposeTiled's tile
    assert bank.related_information[0].location.range.start.line == declared
    assert bank.related_information[0].location.uri == uri


async def test_reduction_findings(s: Session) -> None:
    uri = s.open("reduction.cu")
    diags = await s.diagnostics(uri)
    got = {(d.code, d.range.start.line) for d in diags}
    assert ("divergent-branch", s.line_of(uri, "if (tid % (2 * s) == 0)")) in got  # reduceInterleaved
    assert ("shared-bank-conflict", s.line_of(uri, "sdata[index] += sdata[index + s]")) in got  # reduceStrided
    sequential = s.kernel_lines(uri, "reduceSequential")
    assert not [d for d in diags if d.range.start.line + 1 in sequential and d.code in MEMORY_CODES]
    s.close(uri)


async def test_resource_findings(s: Session) -> None:
    uri = s.open("resources.cu")
    diags = await s.diagnostics(uri)
    got = {(d.code, d.range.start.line + 1) for d in diags}
    assert {("low-occupancy", 4), ("register-spill", 12)} <= got
    spill = next(d for d in diags if d.code == "register-spill")
    assert spill.range.start.character == 0 and spill.range.end.character > 20  # the whole signature line
    hov = await s.hover(uri, 11, 0)
    assert hov is not None and "register-spill" in hov.contents.value and "What to do" in hov.contents.value
    s.close(uri)


# ------------------------------------------------------------------------------------------ hover


async def test_hover_on_kernel_name_and_launch(s: Session) -> None:
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    line = s.line_of(uri, "__global__ void transposeNaive")
    col = s.text(uri).splitlines()[line].index("transposeNaive") + 3
    hov = await s.hover(uri, line, col)
    assert hov is not None
    text = hov.contents.value
    assert text.startswith("### transposeNaive — on ")
    for part in ("Time", "MWP-CWP", "Roofline", "Power", "Energy", "Launch", "Registers/thread", "Occupancy"):
        assert part in text, part
    assert "| grid |" in text  # launch table: value and where it came from
    # power with its interval and model, and the explanation table: exact (SHAP) and LIME weights in watts,
    # the LIME ones computed when the hover asks for them
    assert re.search(r"\*\*Power ≈ \d+ W\*\* \(90% interval \d+–\d+ W\), model: \S+@v100", text), text
    assert re.search(r"\*\*Energy ≈ [\d.]+ (nJ|µJ|mJ|J)\*\*", text), text
    assert "| feature | value | SHAP W | LIME W | |" in text
    rows = [r for r in text.splitlines() if r.startswith("| ") and r.count("|") == 6 and "feature" not in r]
    assert rows and all(re.fullmatch(r"-?[\d.]+(e[+-]?\d+)?", r.split("|")[4].strip()) for r in rows), rows
    launch_line = s.line_of(uri, "transposeNaive<<<")
    hov2 = await s.hover(uri, launch_line, 8)
    assert hov2 is not None and hov2.contents.value.startswith("### transposeNaive")


async def test_hover_on_finding_and_nothing_elsewhere(s: Session) -> None:
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    hov = await s.hover(uri, s.line_of(uri, "= tile[threadIdx.x][threadIdx.y + j]"), 20)  # the conflicted read
    assert hov is not None
    text = hov.contents.value
    assert "shared-bank-conflict" in text and "ways" in text and "What to do" in text
    assert await s.hover(uri, 2, 0) is None  # an empty line
    assert await s.hover(uri, 3, 3) is None  # #define TILE_DIM


# ------------------------------------------------------------------------------------------ lens and hints

LENS_RE = re.compile(r"^(≈ \S+ (ns|µs|ms|s) \(\S+ (ns|µs|ms|s)–\S+ (ns|µs|ms|s)\)|time not available) · "
                     r"(\d+ W|power not available) · "
                     r"(\S+ (nJ|µJ|mJ|J)|energy not available) on V100[^@]* @ ")


async def test_code_lenses(s: Session) -> None:
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert len(found) == 3
    by_line = {c.range.start.line: c for c in found}
    kernels = ("transposeNaive", "transposeTiled", "transposePadded")
    assert sorted(by_line) == [s.line_of(uri, f"__global__ void {k}(") for k in kernels]
    for lens in found:
        assert lens.command is not None
        assert LENS_RE.match(lens.command.title), lens.command.title
        assert lens.command.title.startswith("≈ ")  # the time is predicted for every kernel here
        assert "not available" not in lens.command.title  # and so are power and energy
        assert "<<<64x64, 32x8>>>" in lens.command.title  # the launch of main(): dim3 grid(2048/32, 2048/32)
        assert lens.command.command == "kerncast.showReport"
        assert lens.command.arguments[0] == uri
    assert by_line[s.line_of(uri, "__global__ void transposeNaive(")].command.arguments[1] == "transposeNaive"


async def test_code_lens_without_launch_says_so(s: Session) -> None:
    uri = s.open("nolaunch.cu")
    await s.diagnostics(uri)
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert len(found) == 1
    assert "add // kerncast: grid=… block=…" in found[0].command.title
    s.close(uri)


async def test_inlay_hints(s: Session) -> None:
    if "neovim" in s.client.client_name:
        pytest.skip("Neovim 0.7 has no inlay hints; code lenses and hovers carry the numbers there")
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    lines = s.text(uri).splitlines()
    hints = await s.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(lsp.Position(0, 0), lsp.Position(len(lines), 0))))
    assert len(hints) == 3
    lenses = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert sorted(h.label for h in hints) == sorted(c.command.title for c in lenses)
    for h in hints:  # at the end of the signature line
        assert h.position.character == len(lines[h.position.line].rstrip())
        assert lines[h.position.line].rstrip().endswith(")")


# ------------------------------------------------------------------------------------------ code actions


async def _actions(s: Session, uri: str, line: int) -> list[lsp.CodeAction]:
    diags = [d for d in s.client.diagnostics.get(uri, []) if d.range.start.line <= line <= d.range.end.line]
    got = await s.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
        context=lsp.CodeActionContext(diagnostics=diags)))
    return [_as_action(a) for a in got or []]


def _as_action(item: lsp.CodeAction | lsp.Command) -> lsp.CodeAction:
    """lsprotocol's client-side converter reads any result item with a `command` key as a `Command`, so a
    CodeAction that carries a command (switch GPU) arrives with the command object's repr as its `command`."""
    if isinstance(item, lsp.CodeAction):
        return item
    if item.command.startswith("{"):
        cmd = ast.literal_eval(item.command)
        return lsp.CodeAction(title=item.title, command=lsp.Command(**cmd))
    return lsp.CodeAction(title=item.title, command=item)


async def test_pad_shared_array_action(s: Session) -> None:
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    conflict = s.line_of(uri, "= tile[threadIdx.x][threadIdx.y + j]")  # transposeTiled's column read
    declared = s.line_of(uri, "__shared__ float tile[TILE_DIM][TILE_DIM];")  # its tile
    acts = await _actions(s, uri, conflict)
    pad = [a for a in acts if "pad the last dimension" in a.title]
    assert len(pad) == 1 and pad[0].kind == lsp.CodeActionKind.QuickFix
    new = apply_workspace_edit(s.text(uri), pad[0].edit, uri, s.version(uri))
    assert new.splitlines()[declared] == "    __shared__ float tile[TILE_DIM][TILE_DIM + 1];"
    assert new.splitlines()[:declared] == s.text(uri).splitlines()[:declared]
    # applying it removes the conflict: change, save, and the finding is gone
    version = s.change(uri, new)
    s.save(uri)
    diags = await s.diagnostics(uri, version)
    assert ("shared-bank-conflict", conflict) not in {(d.code, d.range.start.line) for d in diags}
    s.change(uri, (EXAMPLES / "transpose.cu").read_text())
    s.save(uri)
    await s.diagnostics(uri)


async def test_code_actions_are_keyed_by_diagnostic_data(s: Session) -> None:
    """Every diagnostic carries its finding's id in `data`; a code action request that sends one back gets
    that finding's fix wherever the request's range is, and the same diagnostic without its `data` (away from
    the finding), or with the id of no finding (on it), gets none: the fix is found through the diagnostic."""
    uri = s.open("transpose.cu")
    diags = await s.diagnostics(uri)
    ids = [d.data.get("id") if isinstance(d.data, dict) else None for d in diags]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids), ids
    conflict = s.line_of(uri, "= tile[threadIdx.x][threadIdx.y + j]")
    bank = next(d for d in diags if d.code == "shared-bank-conflict" and d.range.start.line == conflict)

    async def pads(sent: lsp.Diagnostic, line: int) -> list[lsp.CodeAction]:
        got = await s.client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
            context=lsp.CodeActionContext(diagnostics=[sent])))
        return [a for a in map(_as_action, got or []) if "pad the last dimension" in a.title]

    far = s.line_of(uri, "#define TILE_DIM")  # no finding there
    for line in (conflict, far):
        [pad] = await pads(bank, line)
        assert list(pad.diagnostics or []) == [bank]
        declared = s.line_of(uri, "__shared__ float tile[TILE_DIM][TILE_DIM];")
        new = apply_workspace_edit(s.text(uri), pad.edit, uri, s.version(uri))
        assert new.splitlines()[declared] == "    __shared__ float tile[TILE_DIM][TILE_DIM + 1];"
    assert not await pads(attrs.evolve(bank, data=None), far)
    assert not await pads(attrs.evolve(bank, data={"id": "0" * 16}), conflict)
    s.close(uri)


async def test_tiled_transpose_action(s: Session) -> None:
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    acts = await _actions(s, uri, 11)
    tiled = [a for a in acts if "tiled transpose" in a.title]
    assert len(tiled) == 1 and tiled[0].kind == lsp.CodeActionKind.QuickFix and tiled[0].is_preferred
    new = apply_workspace_edit(s.text(uri), tiled[0].edit, uri, s.version(uri))
    lines = new.splitlines()
    assert "    __shared__ float tile[TILE_DIM][TILE_DIM + 1];  // one padding column: no bank conflicts" in lines
    assert lines[:7] == s.text(uri).splitlines()[:7]  # only transposeNaive's body changes
    version = s.change(uri, new)
    s.save(uri)
    diags = await s.diagnostics(uri, version)
    naive_end = next(i for i, ln in enumerate(lines) if ln.startswith("__global__ void transposeTiled"))
    assert not [d for d in diags if d.code in ("uncoalesced-global", "compile-warning")
                and d.range.start.line < naive_end]
    s.change(uri, (EXAMPLES / "transpose.cu").read_text())
    s.save(uri)
    await s.diagnostics(uri)


async def test_pad_edits_the_tile_of_the_kernel_that_conflicts(s: Session) -> None:
    uri = s.open("twotiles.cu")
    diags = await s.diagnostics(uri)
    conflict = s.line_of(uri, "tile[threadIdx.x][threadIdx.y]")
    assert ("shared-bank-conflict", conflict) in {(d.code, d.range.start.line) for d in diags}
    bank = next(d for d in diags if d.code == "shared-bank-conflict")
    assert bank.code_description is not None and bank.code_description.href.endswith("#shared-bank-conflict")
    pad = [a for a in await _actions(s, uri, conflict) if "pad the last dimension" in a.title]
    assert len(pad) == 1 and pad[0].is_preferred
    new = apply_workspace_edit(s.text(uri), pad[0].edit, uri, s.version(uri)).splitlines()
    old = s.text(uri).splitlines()
    first, second = [i for i, ln in enumerate(old) if "__shared__ float tile[32][32];" in ln]
    assert new[first] == old[first]  # copyShared's tile is untouched
    assert new[second] == "    __shared__ float tile[32][33];"
    version = s.change(uri, "\n".join(new) + "\n")
    s.save(uri)
    after = await s.diagnostics(uri, version)
    assert "shared-bank-conflict" not in {d.code for d in after}
    s.close(uri)


async def test_structure_of_arrays_is_a_snippet(s: Session) -> None:
    uri = s.open("saxpy.cu")
    diags = await s.diagnostics(uri)
    assert {("uncoalesced-global", 20), ("uncoalesced-global", 21), ("uncoalesced-global", 22)} <= {
        (d.code, d.range.start.line + 1) for d in diags}
    acts = [a for a in await _actions(s, uri, 19) if "structure of arrays" in a.title]
    assert len(acts) == 1
    assert acts[0].title.startswith("Kerncast: snippet:") and acts[0].kind == lsp.CodeActionKind.RefactorRewrite
    assert not acts[0].is_preferred and not acts[0].diagnostics
    new = apply_workspace_edit(s.text(uri), acts[0].edit, uri, s.version(uri)).splitlines()
    assert new[19].startswith("        // kerncast snippet: p is an array of structures")
    assert new[22] == s.text(uri).splitlines()[19]  # the flagged line follows the three comment lines
    s.close(uri)


async def test_launch_annotation_action(s: Session) -> None:
    uri = s.open("nolaunch.cu")
    await s.diagnostics(uri)
    line = s.line_of(uri, "__global__ void scale")
    acts = await _actions(s, uri, line)
    ann = [a for a in acts if "launch annotation" in a.title]
    assert len(ann) == 1
    new = apply_workspace_edit(s.text(uri), ann[0].edit, uri, s.version(uri))
    lines = new.splitlines()
    assert lines[line] == "// kerncast: grid=1024 block=256"
    assert lines[line + 1] == "__global__ void scale(float *x, float a, int n)"
    switch = [a for a in acts if a.command is not None and a.command.command == "kerncast.selectGpu"]
    assert {a.command.arguments[0] for a in switch} >= {"a100", "h100"}
    assert "v100" not in {a.command.arguments[0] for a in switch}
    # with the annotation saved, the launch is known and the lens says where it runs
    version = s.change(uri, new)
    s.save(uri)
    await s.diagnostics(uri, version)
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert "@ <<<1024, 256>>>" in found[0].command.title
    s.close(uri)


# ------------------------------------------------------------------------------------------ commands


async def test_commands(s: Session) -> None:
    uri = s.open("transpose.cu")
    await s.diagnostics(uri)
    report = await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="kerncast.showReport", arguments=[uri, "transposeTiled"]))
    assert report["markdown"].startswith("### transposeTiled")
    assert "shared-bank-conflict" in report["markdown"]
    inside_padded = s.line_of(uri, "__global__ void transposePadded(") + 3
    by_pos = await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="kerncast.showReport", arguments=[uri, {"line": inside_padded, "character": 4}]))
    assert by_pos["markdown"].startswith("### transposePadded")
    gpus = await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="kerncast.listGpus"))
    ids = {g["id"]: g for g in gpus}
    assert {"v100", "a100", "h100"} <= set(ids)
    assert all(isinstance(g["name"], str) and isinstance(g["calibrated"], bool) for g in gpus)


async def test_select_gpu_reanalyses(s: Session) -> None:
    uri = s.open("saxpy.cu")
    await s.diagnostics(uri)
    before = len(s.published(uri))
    answer = await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="kerncast.selectGpu", arguments=["a100"]))
    assert answer["gpu"] == "a100"
    await s.wait_for(lambda: len(s.published(uri)) > before)
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert " on A100 " in found[0].command.title
    bad = await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="kerncast.selectGpu", arguments=["no-such-gpu"]))
    assert bad["gpu"] == "a100" and not bad["changed"]
    await s.wait_for(lambda: any("no-such-gpu" in m.message for m in s.client.messages))
    await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="kerncast.selectGpu", arguments=["v100"]))
    await s.wait_for(lambda: len(s.published(uri)) > before + 1)
    s.close(uri)


async def test_launch_setting_per_kernel(s: Session) -> None:
    uri = s.open("nolaunch.cu")
    await s.diagnostics(uri)
    n = len(s.published(uri))
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"kerncast": {
        "gpu": "v100", "launch": {"scale": {"grid": 512, "block": [128], "params": {"n": 65536}}}}}))
    await s.wait_for(lambda: len(s.published(uri)) > n)
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert "@ <<<512, 128>>>" in found[0].command.title
    hov = await s.hover(uri, s.line_of(uri, "__global__ void scale"), 17)
    assert "| grid | 512 | setting" in hov.contents.value
    n = len(s.published(uri))
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"kerncast": {"gpu": "v100"}}))
    await s.wait_for(lambda: len(s.published(uri)) > n)
    s.close(uri)


async def test_settings_pulled_only_from_clients_that_offer_them(s: Session) -> None:
    uri = s.open("nolaunch.cu")
    await s.diagnostics(uri)
    n = len(s.published(uri))
    s.client.set_configuration({"kerncast": {"gpu": "h100", "server": {"command": []}, "trace": {"server": "off"}}})
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    if "neovim" in s.client.client_name:
        # Neovim 0.7 does not advertise workspace/configuration: nothing to pull, nothing changes
        await asyncio.sleep(1.0)
        assert len(s.published(uri)) == n
    else:
        await s.wait_for(lambda: len(s.published(uri)) > n)
        found = await s.client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
        assert " on H100" in found[0].command.title
        assert not [m for m in s.client.messages if "kerncast.server" in m.message]  # client-only keys
        n = len(s.published(uri))
        s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
            settings={"kerncast": {"gpu": "v100"}}))
        await s.wait_for(lambda: len(s.published(uri)) > n)
    s.close(uri)


async def test_progress_only_where_supported(s: Session) -> None:
    uri = s.open("vector_add.cu")
    await s.diagnostics(uri)
    def reports() -> list[Any]:
        return [r for rs in s.client.progress_reports.values() for r in rs]

    # both capability sets advertise window.workDoneProgress (Neovim 0.7 shows it in statuslines)
    assert any(isinstance(r, lsp.WorkDoneProgressBegin) and r.title == "Kerncast" for r in reports())
    # every progress begun is ended (analyses of other open documents may still be finishing)
    await s.wait_for(lambda: sum(isinstance(r, lsp.WorkDoneProgressBegin) for r in reports())
                     == sum(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports()))
    s.close(uri)


async def test_the_diagnostics_go_out_before_the_analysis_progress_ends(s: Session) -> None:
    """The progress of an analysis ends once its diagnostics are sent: its end is no message on the way to them
    (the client reads messages in order, so at the diagnostics it has the begin and not yet the end)."""
    name = "progress_order.cu"
    shutil.copy(s.workdir / "vector_add.cu", s.workdir / name)
    features = s.client.protocol.fm.features
    original = features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]
    ended_at_publish: list[bool] = []

    def watch(params: lsp.PublishDiagnosticsParams) -> None:
        original(params)
        if params.uri.endswith("/" + name):
            mine = [rs for rs in s.client.progress_reports.values()
                    if rs and isinstance(rs[0], lsp.WorkDoneProgressBegin) and rs[0].message == f"analysing {name}"]
            ended_at_publish.append(any(isinstance(r, lsp.WorkDoneProgressEnd) for r in mine[-1]))

    features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = watch
    try:
        uri = s.open(name)
        await s.diagnostics(uri)
        await s.wait_for(lambda: any(isinstance(r, lsp.WorkDoneProgressEnd)
                                     for rs in s.client.progress_reports.values() for r in rs
                                     if rs and getattr(rs[0], "message", "") == f"analysing {name}"))
    finally:
        features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = original
    assert ended_at_publish[:1] == [False]
    s.close(uri)


# ------------------------------------------------------------------------------------------ robustness


async def test_malformed_ptx(s: Session) -> None:
    uri = s.open("malformed.ptx", language="ptx")
    diags = await s.diagnostics(uri)
    assert [d.code for d in diags] == ["ptx-syntax-error"]
    assert diags[0].range.start.line == 10
    assert "malformed PTX" in diags[0].message
    s.close(uri)


async def test_ptx_analysed_on_change(s: Session) -> None:
    uri = s.open("malformed.ptx", language="ptx")
    await s.diagnostics(uri)
    fixed = MALFORMED_PTX.replace("add.s32 %r2, %r1, ;;; garbage here", "add.s32 %r2, %r1, 1;").replace(
        "    ret\n", "    ret;\n}\n")
    version = s.change(uri, fixed)  # no save: .ptx is analysed as it is edited
    diags = await s.diagnostics(uri, version)
    assert not [d for d in diags if d.code == "ptx-syntax-error"]
    found = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert len(found) == 1 and found[0].range.start.line == 4
    s.close(uri)


async def test_big_file_is_refused_clearly(s: Session) -> None:
    uri = s.open("big.cu")
    diags = await s.diagnostics(uri)
    assert len(diags) == 1 and diags[0].code == "input-error"
    assert "MB" in diags[0].message and "maxFileBytes" in diags[0].message
    await s.hover(uri, 0, 0)  # answered
    s.close(uri)


async def test_missing_nvcc_and_bad_settings(s: Session) -> None:
    uri = s.open("nolaunch.cu")
    await s.diagnostics(uri)
    n = len(s.published(uri))
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"kerncast": {
        "gpu": "v100", "nvccPath": "/nonexistent/bin/nvcc", "thresholds": {"lowOccupancy": 7}, "loops": "many"}}))
    await s.wait_for(lambda: len(s.published(uri)) > n)
    diags = s.published(uri)[-1].diagnostics
    assert [d.code for d in diags] == ["toolchain-missing"]
    assert "nvcc" in diags[0].message
    await s.wait_for(lambda: any("kerncast.thresholds.lowOccupancy" in m.message for m in s.client.messages))
    assert any("kerncast.loops" in m.message for m in s.client.messages)
    # other documents keep working on the next analysis once the setting is fixed
    n = len(s.published(uri))
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"kerncast": {"gpu": "v100"}}))
    await s.wait_for(lambda: len(s.published(uri)) > n)
    assert not [d for d in s.published(uri)[-1].diagnostics if d.code == "toolchain-missing"]
    s.close(uri)


async def test_rapid_saves_keep_only_the_newest(s: Session) -> None:
    uri = s.open("saxpy.cu")
    await s.diagnostics(uri)
    base = s.text(uri)
    last = None
    for i in range(5):
        last = s.change(uri, base + f"\n// edit {i}\n")
        s.save(uri)
    diags = await s.diagnostics(uri, last)
    assert not [d for d in diags if d.severity == lsp.DiagnosticSeverity.Error]
    await asyncio.sleep(1.0)
    assert s.published(uri)[-1].version == last  # nothing older arrived after the newest
    hov = await s.hover(uri, 0, 0)
    assert hov is None or hov.contents  # still answering
    s.close(uri)
