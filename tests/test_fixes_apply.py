"""A quick fix is a promise: every code action Kerncast offers on the corpus and the examples is applied as the
server sends it, the file is compiled again with the real nvcc and analysed again. A quick fix must remove its
finding, add no nvcc warning and no other finding; a snippet must add neither a warning nor a finding.
The tiled transpose, matrix multiply and stencil rewrites are also run on the host (an emulation of the kernel
body over a small grid): each must write every output element as the naive kernel does, also for sizes that
are not multiples of the tile.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import pytest
from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.tiling_fixes import tiled_matmul
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.source_model import scanned
from kerncast.server import actions
from kerncast.server.convert import to_diagnostics
from kernel_emulator import Strict, kernel_body
from kernel_emulator import run as emulate
from lsprotocol import types as lsp

REPO = Path(__file__).resolve().parent.parent
FILES = sorted((REPO / "tests" / "kernels").glob("*.cu")) + sorted((REPO / "examples").glob("*.cu"))
#: as the server analyses a saved file: without LIME weights, which only a hover or a report asks for (they are
#: seconds per file, and no finding or fix depends on them)
OPTIONS = AnalysisOptions(lime=False)


def apply_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP edits (0-based, possibly spanning lines) the way an editor does: last edit first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))

    def offset(p: lsp.Position) -> int:
        return starts[p.line] + p.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        a, b = offset(e.range.start), offset(e.range.end)
        text = text[:a] + e.new_text + text[b:]
    return text


def _offered(report: FileReport, text: str, uri: str) -> list[tuple[Finding, lsp.CodeAction]]:
    """Every fix action the server offers, with the finding it was offered for."""
    doc = actions.Doc(uri=uri, version=1, lines=text.splitlines(), versioned=False)
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(doc.lines), 0))
    out = []
    for f in report.all_findings():
        one = FileReport(report.file, report.gpu, findings=[f])
        for a in actions.code_actions(one, doc, whole, to_diagnostics(one, uri, doc.lines), [], "v100"):
            if a.edit is not None:
                out.append((f, a))
    return out


def _counts(report: FileReport) -> Counter[tuple[str | None, str]]:
    """Findings by kernel and code (every code, energy hotspots included: a kernel has at most one). nvcc
    warnings are compared on their own."""
    return Counter((f.kernel, str(f.code)) for f in report.all_findings() if str(f.code) != "compile-warning")


def _warnings(report: FileReport) -> Counter[str]:
    """nvcc's warnings, without their line numbers (a rewrite moves lines)."""
    return Counter(re.sub(r"\d+", "N", f.message) for f in report.findings if str(f.code) == "compile-warning")


@pytest.fixture(scope="module")
def offered(nvcc_available, tmp_path_factory) -> list[tuple[Path, FileReport, Finding, lsp.CodeAction]]:
    out = []
    for path in FILES:
        report = analyze_file(path, options=OPTIONS)
        assert report.ok, (path.name, [f.message for f in report.findings])
        uri = path.as_uri()
        for f, a in _offered(report, path.read_text(), uri):
            out.append((path, report, f, a))
    return out


def test_the_corpus_offers_fixes_of_each_kind(offered) -> None:
    kinds = Counter((a.kind, f.fix.kind if f.fix else None) for _, _, f, a in offered)
    print("offered:", dict(kinds))
    quick = {str(f.fixes()[0].kind) for _, _, f, a in offered if a.kind == lsp.CodeActionKind.QuickFix}
    assert {"pad-shared-array", "tiled-transpose", "swap-thread-indices"} <= quick
    assert any(a.kind == actions.SNIPPET_KIND for _, _, _, a in offered)
    for _, _, _, a in offered:  # snippets are titled as such and never offered as a fix
        assert (a.kind == actions.SNIPPET_KIND) == a.title.startswith("Kerncast: snippet:"), a.title
        assert a.kind != actions.SNIPPET_KIND or not a.diagnostics and not a.is_preferred


def test_every_offered_action_keeps_its_promise(offered, tmp_path) -> None:
    checked = 0
    for i, (path, before, f, a) in enumerate(offered):
        uri = path.as_uri()
        new_text = apply_edits(path.read_text(), a.edit.changes[uri])
        fixed = tmp_path / str(i) / path.name
        fixed.parent.mkdir()
        fixed.write_text(new_text)
        after = analyze_file(fixed, options=OPTIONS)
        what = f"{path.name}: {a.title}"
        assert after.ok, (what, [x.message for x in after.findings])
        assert _warnings(after) - _warnings(before) == Counter(), (what, "new nvcc warning")
        expected = _counts(before)
        if a.kind == lsp.CodeActionKind.QuickFix:
            key = (f.kernel, str(f.code))
            assert _counts(after)[key] == expected[key] - 1, (what, "the finding is still there")
            expected[key] -= 1
        # nothing new; another finding may go away with it (a pointer declared __restrict__ lets nvcc keep a
        # local array in registers), as `fixing.broken_promises` allows
        assert _counts(after) - expected == Counter(), (what, "new findings", _counts(after) - expected)
        if expected - _counts(after):
            print(f"{what}: also gone: {dict(expected - _counts(after))}")
        checked += 1
    print(f"{checked} actions applied, recompiled and re-analysed")
    assert checked >= 6


def test_only_a_sole_safe_fix_is_preferred(offered) -> None:
    for _, _, f, a in offered:
        safe = [x for x in f.fixes() if x.applicability == "safe" and x.edits]
        if a.is_preferred:
            assert len(safe) == 1 and a.kind == lsp.CodeActionKind.QuickFix, a.title
    assert any(a.is_preferred for _, _, _, a in offered)  # the padding and the rewrite are sole safe fixes
    assert not any(a.is_preferred for _, _, f, a in offered if "swap" in str(f.fixes()[0].kind))


# ------------------------------------------------------------------------------------------ host emulation


def _defines(text: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"#define\s+(\w+)\s+(\d+)\s*$", text, re.M)}


@pytest.mark.parametrize("path", [REPO / "tests" / "kernels" / "transpose.cu", REPO / "examples" / "transpose.cu",
                                  REPO / "tests" / "kernels" / "transpose_indexed.cu"],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tiled_transpose_rewrite_keeps_the_mapping(offered, path: Path) -> None:
    rewrite = [a for p, _, f, a in offered if p == path and f.fix is not None and f.fix.kind == "tiled-transpose"]
    assert len(rewrite) == 1
    text = path.read_text()
    new = apply_edits(text, rewrite[0].edit.changes[path.as_uri()])
    consts = _defines(text)
    tile, rows = sorted(consts.values(), reverse=True)[:2]
    width = height = 2 * tile
    _, tiled_body = kernel_body(new, "transposeNaive")
    assert any("__syncthreads();" in ln for ln in tiled_body) and any("__shared__" in ln for ln in tiled_body)
    naive, tiled = ([None] * (width * height) for _ in range(2))
    for source, out in ((text, naive), (new, tiled)):
        emulate(source, "transposeNaive", consts, (2, 2), (tile, rows), [out, list(range(width * height)), width,
                                                                           height])
    assert None not in naive and naive == [(i % height) * width + i // height for i in range(width * height)]
    assert tiled == naive


def _rewrite(offered, path: Path, kind: str) -> str:
    """The text of `path` with its one offered fix of `kind` applied as the server sends it."""
    [action] = [a for p, _, f, a in offered if p == path and f.fix is not None and f.fix.kind == kind]
    return apply_edits(path.read_text(), action.edit.changes[path.as_uri()])


def test_tiled_matmul_rewrite_computes_the_same_products(offered) -> None:
    """The naive and the tiled multiply, run on the host for sizes below, at and above a 32 tile (5 and 33 are
    not multiples of it), write the same numbers into every element of C."""
    path = REPO / "examples" / "matmul.cu"
    naive, tiled = path.read_text(), _rewrite(offered, path, "tiled-matmul")
    rng = random.Random(7)
    for n in (5, 32, 33):
        a = Strict(rng.randint(-8, 8) / 4 for _ in range(n * n))
        b = Strict(rng.randint(-8, 8) / 2 for _ in range(n * n))
        grid = (-(-n // 32),) * 2
        results = []
        for text in (naive, tiled):
            c = Strict([None] * (n * n))
            emulate(text, "matmulNaive", {}, grid, (32, 32), [a, b, c, n])
            results.append(c)
        assert None not in results[0] and results[1] == results[0], n


def test_tiled_matmul_rewrite_names_no_macro_of_the_file() -> None:
    """A `#define TILE` that the naive kernel does not mention would still expand inside a rewrite that declares
    `const int TILE = 32;` (`const int 32 = 32;`, a compile error): the rewrite's names avoid the file's macros."""
    text = (REPO / "examples" / "matmul.cu").read_text()
    start = text.index("__global__ void matmulNaive(")
    source = "#define TILE 32\n\n" + text[start:text.index("\n}\n", start) + 3]
    facts = scanned(source)
    assert facts is not None
    [kdef] = [d for d in facts.kernels if d.name == "matmulNaive"]
    fix = tiled_matmul(facts, kdef, (32, 32, 1))
    assert fix is not None
    new = fix.edits[0].new_text
    assert re.findall(r"const int (\w+) =", new) == ["kc_TILE"] and not re.search(r"\bTILE\b", new), new


def test_tiled_stencil_rewrite_computes_the_same_sums(offered) -> None:
    """The naive and the tiled stencil, run on the host for sizes within one block, of several blocks and not a
    multiple of the 256-thread block, write the same sums and leave the same elements untouched."""
    path = REPO / "examples" / "stencil.cu"
    naive, tiled = path.read_text(), _rewrite(offered, path, "tiled-stencil")
    consts = _defines(naive)
    rng = random.Random(11)
    for n in (20, 300, 513):
        x = Strict(rng.randint(-8, 8) / 4 for _ in range(n))
        results = []
        for text in (naive, tiled):
            out = Strict([None] * n)
            emulate(text, "stencil1d", consts, (-(-n // 256), 1), (256, 1), [x, out, n])
            results.append(out)
        assert results[1] == results[0], n
        assert sum(v is not None for v in results[0]) == max(0, n - 2 * consts["RADIUS"])
