"""Per-kernel caching: a save re-analyses only the kernels whose PTX or launch changed, an unchanged file is
answered from the cache, and a cached answer is the same as a fresh one (counted, never timed)."""

from __future__ import annotations

import json
from pathlib import Path

from kerncast.analysis import pipeline
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx.model import line_in_file
from kerncast.analysis.report import FileReport

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "transpose.cu"
OPTIONS = AnalysisOptions(lime=False)


def _json(report) -> str:
    return json.dumps(report.to_json(), sort_keys=True)


def test_unchanged_file_is_answered_from_the_cache(nvcc_available) -> None:
    cache = KernelCache()
    text = EXAMPLE.read_text()
    first = analyze_file(EXAMPLE, text=text, options=OPTIONS, cache=cache)
    assert (cache.counters.hits, cache.counters.misses, cache.counters.ptxas_runs) == (0, 3, 1)
    again = analyze_file(EXAMPLE, text=text + "\n// a comment after everything\n", options=OPTIONS, cache=cache)
    assert (cache.counters.hits, cache.counters.misses) == (3, 3)
    assert cache.counters.ptxas_runs == 1  # nothing changed: ptxas is not run again
    assert _json(again) == _json(first)


def test_a_changed_kernel_is_the_only_one_analysed_again(nvcc_available, monkeypatch) -> None:
    cache = KernelCache()
    text = EXAMPLE.read_text()
    analyze_file(EXAMPLE, text=text, options=OPTIONS, cache=cache)
    # the padded tile loses its padding: same line count, only transposePadded's PTX changes
    edited = text.replace("tile[TILE_DIM][TILE_DIM + 1];", "tile[TILE_DIM][TILE_DIM + 0];")
    assert edited != text
    moved_keys: list[str] = []  # the kernels whose moved key was made: a kernel found by its key needs none
    made = pipeline._KernelKeys.moved_key
    monkeypatch.setattr(pipeline._KernelKeys, "moved_key",
                        lambda self, ctx: moved_keys.append(ctx.function.display_name) or made(self, ctx))
    cfgs: list[str] = []  # the kernels whose CFG was built: the unchanged ones keep their earlier one
    monkeypatch.setattr(pipeline, "build_cfg", lambda fn: cfgs.append(fn.display_name) or build_cfg(fn))
    walked: list[int] = []  # the instructions whose source line was read: the unchanged kernels' are kept
    monkeypatch.setattr(pipeline, "line_in_file", lambda loc, file: walked.append(1) or line_in_file(loc, file))
    cached = analyze_file(EXAMPLE, text=edited, options=OPTIONS, cache=cache)
    assert (cache.counters.hits, cache.counters.misses) == (2, 4)
    assert [name.split("(")[0] for name in moved_keys] == ["transposePadded"]
    assert [name.split("(")[0] for name in cfgs] == ["transposePadded"]
    assert len(walked) == next(k.instruction_count for k in cached.kernels if k.name.startswith("transposePadded"))
    assert cache.counters.ptxas_kernels == 3 + 1  # ptxas compiled only the changed kernel
    fresh = analyze_file(EXAMPLE, text=edited, options=OPTIONS)
    assert _json(cached) == _json(fresh)
    padded = next(k for k in cached.kernels if k.name.startswith("transposePadded"))
    assert any(f.code == "shared-bank-conflict" for f in padded.findings)  # the new result, not the old one


def test_a_changed_launch_or_setting_is_a_miss(nvcc_available, monkeypatch) -> None:
    cache = KernelCache()
    text = EXAMPLE.read_text()
    analyze_file(EXAMPLE, text=text, options=OPTIONS, cache=cache)
    relaunched = text.replace("transposeNaive<<<grid, block>>>", "transposeNaive<<<grid, 64>>>")
    cfgs: list[str] = []
    monkeypatch.setattr(pipeline, "build_cfg", lambda fn: cfgs.append(fn.display_name) or build_cfg(fn))
    cached = analyze_file(EXAMPLE, text=relaunched, options=OPTIONS, cache=cache)
    assert (cache.counters.hits, cache.counters.misses) == (2, 4)
    # its PTX is unchanged (its parsed function reused), yet the kernel analysed again gets a CFG of its own
    assert [name.split("(")[0] for name in cfgs] == ["transposeNaive"]
    naive = next(k for k in cached.kernels if k.name.startswith("transposeNaive"))
    assert naive.launch.block.value == (64, 1, 1)
    analyze_file(EXAMPLE, text=relaunched, options=AnalysisOptions(lime=False, gpu="a100"), cache=cache)
    assert cache.counters.misses == 4 + 3


def test_ptx_input_is_cached_by_kernel_text_and_position(tmp_path: Path, compile_example) -> None:
    ptx = compile_example("transpose").ptx
    path = tmp_path / "transpose.ptx"
    cache = KernelCache()
    first = analyze_file(path, text=ptx, options=OPTIONS, cache=cache)
    again = analyze_file(path, text=ptx, options=OPTIONS, cache=cache)
    assert (cache.counters.hits, cache.counters.misses) == (3, 3)
    assert _json(again) == _json(first)
    # a line inserted at the top moves every kernel's PTX lines: every finding's line changes, so all miss
    shifted = analyze_file(path, text="// moved\n" + ptx, options=OPTIONS, cache=cache)
    assert cache.counters.misses == 6
    assert _json(shifted) == _json(analyze_file(path, text="// moved\n" + ptx, options=OPTIONS))


def test_moved_kernels_are_shifted_not_analysed_again(nvcc_available, monkeypatch) -> None:
    """A line inserted above every kernel moves all of them: no kernel is analysed again (no stage, no ptxas
    run, no power prediction, no CFG: the launch that keys a kernel gets the CFG of the function its copy was
    made from); each previous report is moved one line down, and the result is the fresh analysis's."""
    cache = KernelCache()
    text = EXAMPLE.read_text()
    before = analyze_file(EXAMPLE, text=text, options=OPTIONS, cache=cache)
    moved = "// a line above every kernel\n" + text
    cfgs: list[str] = []
    monkeypatch.setattr(pipeline, "build_cfg", lambda fn: cfgs.append(fn.display_name) or build_cfg(fn))
    cached = analyze_file(EXAMPLE, text=moved, options=OPTIONS, cache=cache)
    assert cfgs == []
    assert (cache.counters.hits, cache.counters.misses, cache.counters.shifted) == (0, 6, 3)
    assert (cache.counters.ptxas_runs, cache.counters.ptxas_kernels) == (1, 3)
    assert cache.powers.hits == 0  # no power prediction was asked for (a moved kernel analysed again finds 3)
    assert [k.line for k in cached.kernels] == [k.line + 1 for k in before.kernels]
    fresh = analyze_file(EXAMPLE, text=moved, options=OPTIONS)
    assert all(k.registers for k in fresh.kernels)
    assert _json(cached) == _json(fresh)
    again = analyze_file(EXAMPLE, text=moved, options=OPTIONS, cache=cache)  # the shifted reports are kept
    assert (cache.counters.hits, cache.counters.shifted) == (3, 3)
    assert _json(again) == _json(fresh)


def test_kernels_the_text_scan_misses_still_get_ptxas(tmp_path: Path, compile_example) -> None:
    """PTX that names its kernels on the line after `.entry` is legal; the scan that picks the kernels for ptxas
    misses them, and ptxas then runs on the whole module instead of leaving the registers unknown."""
    ptx = compile_example("transpose").ptx.replace(".entry ", ".entry\n")
    path = tmp_path / "transpose.ptx"
    cache = KernelCache()
    cached = analyze_file(path, text=ptx, options=OPTIONS, cache=cache)
    assert len(cached.kernels) == 3 and all(k.registers for k in cached.kernels)
    assert _json(cached) == _json(analyze_file(path, text=ptx, options=OPTIONS))


class _CountedSplits(str):
    """A source text that counts how often its lines are split."""

    splits = 0

    def splitlines(self, keepends: bool = False) -> list[str]:  # type: ignore[override]
        _CountedSplits.splits += 1
        return super().splitlines(keepends)


def test_the_kernel_keys_split_the_source_once_for_all_the_kernels(compile_example) -> None:
    """Every kernel's key reads its source lines; the text is split once per analysis, not once per kernel."""
    ptx = compile_example("transpose").ptx
    text = _CountedSplits(EXAMPLE.read_text())
    cache = KernelCache()

    def analyse():
        report = FileReport(file=str(EXAMPLE), gpu=OPTIONS.gpu, arch=OPTIONS.arch)
        return pipeline._analyze_ptx(report, ptx, OPTIONS, text, cache)

    first = analyse()
    _CountedSplits.splits = 0
    again = analyse()  # every kernel from the cache: launches and keys only
    assert cache.counters.hits == 3
    assert _CountedSplits.splits == 1
    assert _json(again) == _json(first)


def test_a_moved_kernel_analysed_again_gets_a_cfg_of_its_own(nvcc_available, monkeypatch) -> None:
    """A kernel that moved and whose launch changed misses the cache: it is analysed on a CFG made of its own
    moved function (its findings name the new lines), as a fresh analysis is."""
    cache = KernelCache()
    text = EXAMPLE.read_text()
    analyze_file(EXAMPLE, text=text, options=OPTIONS, cache=cache)
    edited = "// a line above every kernel\n" + text.replace("width = 2048", "width = 1024")
    built: list[object] = []
    monkeypatch.setattr(pipeline, "build_cfg", lambda fn: built.append(fn) or build_cfg(fn))
    cached = analyze_file(EXAMPLE, text=edited, options=OPTIONS, cache=cache)
    assert cache.counters.shifted == 0 and len(built) == 3
    assert all(cache.functions.origin(fn) is not None for fn in built)  # made of this parse's moved copies
    assert _json(cached) == _json(analyze_file(EXAMPLE, text=edited, options=OPTIONS))
