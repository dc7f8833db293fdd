"""Once a save's diagnostics are published, the server makes what the lenses, hints and hover of that result
read from its text (kernel and launch places, the change since the last save), so that the lens request an editor
sends at the next save (Neovim, on BufWritePost) finds them made instead of scanning the source then, while that
save's compile is starting; and it makes them from the analysis's own scan of the text, not a second one. Real
nvcc on the repository's matmul example, the server's own objects."""

from __future__ import annotations

from pathlib import Path

from kerncast.analysis import source_model
from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.locate import kernel_places
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.server.positions import split_lines
from kerncast.server.server import KerncastServer, Result

ROOT = Path(__file__).resolve().parent.parent
MATMUL = ROOT / "examples" / "matmul.cu"


def test_a_published_result_gets_its_places_and_its_change_since_the_last_save(nvcc_available, monkeypatch) -> None:
    ls = KerncastServer()
    uri, text = MATMUL.as_uri(), MATMUL.read_text()
    cache = KernelCache()
    options = AnalysisOptions(lime=False)
    before = analyze_file(MATMUL, text=text, options=options, cache=cache)
    after = analyze_file(MATMUL, text=text, options=options, cache=cache)  # a save without an edit
    ls.last_saves.note(uri, "settings", "first", before)
    ls.last_saves.note(uri, "settings", "second", after)
    result = Result(2, "second", after, split_lines(text))
    ls.prepare_views(uri, result, text)  # not the published result (nothing is): nothing is made
    assert after.places is None
    ls.published[uri] = result
    scans: list[int] = []
    scan = source_model._scan
    monkeypatch.setattr(source_model, "_scan", lambda source, *rest: scans.append(len(source)) or scan(source, *rest))
    ls.prepare_views(uri, result, text)
    assert text.endswith("\n") and scans == []  # on the event loop: the analysis's scan of the text is reused
    assert after.places is not None and after.places.lines is result.lines
    assert set(after.places.kernels) == {k.mangled for k in after.kernels}
    assert ls.last_saves._docs[uri].changes is not None  # compared now, not at the next lens request


#: two kernels, the first's name a prefix of the second's
TWO_ENTRIES = """.version 7.8
.target sm_75
.address_size 64

.visible .entry scale(
    .param .u64 scale_plus_param_0
)
{
    ret;
}

.visible .entry scale_plus(
    .param .u64 scale_plus_param_0
)
{
    ret;
}
"""


def test_ptx_kernels_are_placed_on_their_entry_names(tmp_path: Path) -> None:
    """A `.ptx` document's lenses sit on each kernel's name on its own `.entry` line."""
    report = analyze_file(tmp_path / "two.ptx", text=TWO_ENTRIES, options=AnalysisOptions(lime=False))
    assert [k.mangled for k in report.kernels] == ["scale", "scale_plus"], report.findings
    places = kernel_places(report, split_lines(TWO_ENTRIES), TWO_ENTRIES).kernels
    assert {name: (p.name.line, p.name.column, p.name.end_column) for name, p in places.items()} == {
        "scale": (5, 17, 22), "scale_plus": (12, 17, 27)}
