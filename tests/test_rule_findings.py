"""The statically decided Nsight-style rules on nvcc's own output: every `// expect: <code>` comment of the
rule corpus files in tests/kernels/ must be found on its line, and no other finding of these codes may appear
(each file plants false cases beside the true ones). The files are analysed for an H100 (132 SMs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.finding import TextEdit
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.rules import rule

from tests.test_memory_corpus import expected_findings

KERNELS = Path(__file__).resolve().parent / "kernels"
#: the codes these files check, and the corpus file of each
FILES = {"launch-configuration": "launch_config.cu", "barrier-divergence": "barriers.cu",
         "local-memory": "local_arrays.cu", "fp64-in-fp32": "fp64_promotion.cu",
         "slow-integer-division": "int_division.cu", "atomic-contention": "atomics.cu",
         "missing-restrict": "restrict.cu", "shared-tiling": "shared_tiling.cu"}
CODES = set(FILES)
#: an H100, without LIME weights (as the server analyses a saved file): no finding depends on them
H100 = AnalysisOptions(gpu="h100", lime=False)


@pytest.fixture(scope="module")
def reports(nvcc_available) -> dict[str, FileReport]:
    return {name: analyze_file(KERNELS / name, options=H100) for name in set(FILES.values())}


#: codes that hold on most kernels of the other files too (their input pointers are only read and not declared
#: __restrict__), so they are checked in their own file only
OWN_FILE_ONLY = {"missing-restrict"}


def _codes(name: str) -> set[str]:
    """The codes checked in a corpus file: every code of the set, but those of `OWN_FILE_ONLY` in their own."""
    return {c for c in CODES if c not in OWN_FILE_ONLY or FILES[c] == name}


def _found(report: FileReport, codes: set[str]) -> set[tuple[int, str]]:
    return {(f.line, f.code) for f in report.all_findings() if f.code in codes}


@pytest.mark.parametrize("name", sorted(set(FILES.values())))
def test_rule_findings_exactly(reports: dict[str, FileReport], name: str) -> None:
    codes = _codes(name)
    expected = {(n, c) for n, c in expected_findings(KERNELS / name, None) if c in codes}
    found = _found(reports[name], codes)
    assert expected - found == set(), f"missed in {name}"
    assert found - expected == set(), f"false findings in {name}"


@pytest.mark.parametrize("code", sorted(CODES))
def test_each_code_has_three_true_and_three_false_cases(reports: dict[str, FileReport], code: str) -> None:
    """At least three planted findings, and at least three kernels of the file without one."""
    rep = reports[FILES[code]]
    flagged = {f.kernel for f in rep.all_findings() if f.code == code}
    assert len(flagged) >= 3
    assert len([k for k in rep.kernels if k.name not in flagged]) >= 3
    assert rule(code).ncu_rule


def _kernel(reports: dict[str, FileReport], prefix: str):
    rep = reports["launch_config.cu"]
    return next(k for k in rep.kernels if k.name.split("(")[0] == prefix)


def test_launch_numbers(reports: dict[str, FileReport]) -> None:
    by = {k.name.split("(")[0]: [f for f in k.findings if f.code == "launch-configuration"]
          for k in reports["launch_config.cu"].kernels}
    assert "16 of 64 lanes idle (25%)" in by["scale"][0].message
    assert "uses 4 of 132 SMs" in by["scaleWide"][0].message
    assert "last wave is 3% full" in by["scaleTail"][0].message
    assert all(f.severity == "warning" for k in ("scale", "scaleWide", "scaleTail") for f in by[k])


def test_failing_launch_is_an_error_without_time(reports: dict[str, FileReport]) -> None:
    for name in ("tooMany", "tooTall", "bigDynamic"):
        k = _kernel(reports, name)
        f = next(f for f in k.findings if f.code == "launch-configuration")
        assert f.severity == "error" and f.detail["fails"], name
        assert k.time is None and k.occupancy is None, name
        assert any("no time prediction" in n for n in k.notes), name
    assert "cudaFuncAttributeMaxDynamicSharedMemorySize" in next(
        f.message for f in _kernel(reports, "bigDynamic").findings if f.code == "launch-configuration")
    opted = _kernel(reports, "optedIn")
    assert opted.time is not None and not [f for f in opted.findings if f.code == "launch-configuration"]


def test_default_launch_is_not_reported(reports: dict[str, FileReport]) -> None:
    """A kernel never launched in the file gets the default launch, and no launch finding rests on it."""
    k = _kernel(reports, "unlaunched")
    assert k.launch is not None and k.launch.known["grid"] is False
    assert not [f for f in k.findings if f.code == "launch-configuration"]


def test_barrier_divergence_names_the_condition(reports: dict[str, FileReport]) -> None:
    rep = reports["barriers.cu"]
    f = next(f for f in rep.all_findings() if f.code == "barrier-divergence" and f.kernel.startswith("syncInHalf"))
    assert f.severity == "error" and "threadIdx.x" in f.message
    assert [r.line for r in f.related] == [12] and f.detail["condition_line"] == 12


def test_local_memory_bytes_per_thread(reports: dict[str, FileReport]) -> None:
    """The bytes come from the PTX's .local depot; a register-only array and a printf buffer stay silent."""
    by = {k.name.split("(")[0]: [f for f in k.findings if f.code == "local-memory"]
          for k in reports["local_arrays.cu"].kernels}
    assert by["histogramPerThread"][0].detail["local_bytes_per_thread"] == 64
    assert "64 bytes per thread" in by["histogramPerThread"][0].message
    assert by["lookupByKey"][0].detail["local_bytes_per_thread"] == 128
    assert by["unrolledArray"] == [] and by["printOnce"] == [] and by["scalarsOnly"] == []
    assert all(f.code != "register-spill" for k in reports["local_arrays.cu"].kernels for f in k.findings)


def _apply(text: str, edits: list[TextEdit]) -> str:
    """Apply 1-based, end-exclusive edits, the last first."""
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        assert e.line == e.end_line
        ln = lines[e.line - 1]
        lines[e.line - 1] = ln[:e.column - 1] + e.new_text + ln[e.end_column - 1:]
    return "".join(lines)


def test_fp64_rate_and_fix_keep_their_promise(reports: dict[str, FileReport], tmp_path: Path) -> None:
    """The message names the profile's FP64:FP32 rate; each fix, applied, recompiled and re-analysed, removes
    its finding and changes no other finding of the file."""
    rep = reports["fp64_promotion.cu"]
    found = [f for f in rep.all_findings() if f.code == "fp64-in-fp32"]
    assert all("1/2 of the FP32 rate on" in f.message and f.detail["fp64_to_fp32_rate"] == 0.5 for f in found)
    source = (KERNELS / "fp64_promotion.cu").read_text()
    before = sorted((f.kernel, f.code) for f in rep.all_findings() if f.code != "compile-warning")
    for n, f in enumerate(found):
        assert f.fix is not None and f.fix.applicability == "unsafe" and f.fix.edits, f.kernel
        fixed = tmp_path / str(n) / "fp64_promotion.cu"
        fixed.parent.mkdir()
        fixed.write_text(_apply(source, f.fix.edits))
        after = analyze_file(fixed, options=H100)
        assert after.ok
        now = sorted((g.kernel, g.code) for g in after.all_findings() if g.code != "compile-warning")
        assert now == [x for x in before if x != (f.kernel, f.code)], f.kernel


def test_slow_division_cost(reports: dict[str, FileReport]) -> None:
    """Each run-time division counts about 20 instructions (data/int_division.toml); a constant divisor, a
    division outside a loop and a shift stay silent."""
    by = {k.name.split("(")[0]: [f for f in k.findings if f.code == "slow-integer-division"]
          for k in reports["int_division.cu"].kernels}
    f = by["rowsOfFlat"][0]
    assert f.detail["divisions"] == 1 and f.detail["instructions_per_division"] == 20 and "div.s32" in f.message
    assert f.severity == ("warning" if f.detail["share_of_loop"] >= 0.2 else "information")
    assert by["constantDivisor"] == [] and by["divideOnce"] == [] and by["shiftInLoop"] == []


def _atomic(reports: dict[str, FileReport], kernel: str):
    rep = reports["atomics.cu"]
    return next(f for k in rep.kernels if k.name.split("(")[0] == kernel for f in k.findings
                if f.code == "atomic-contention")


def test_atomic_contention_is_quantified(reports: dict[str, FileReport]) -> None:
    """Lanes per address in a warp, and blocks per address: the grid's 4096 blocks on one counter, one block
    per address where the address is indexed by blockIdx."""
    counter = _atomic(reports, "countAll")
    assert counter.detail["lanes_per_address"] == 32 and counter.detail["blocks_per_address"] == 4096
    assert "up to 32-way" in counter.message and "all 4096 blocks" in counter.message  # behind a data test
    assert counter.detail["lanes_upper_bound"] and not _atomic(reports, "globalMax").detail["lanes_upper_bound"]
    per_block = _atomic(reports, "perBlockSum")
    assert per_block.detail["blocks_per_address"] == 1 and "blocks of the grid" not in per_block.message
    assert _atomic(reports, "sharedCount").detail["space"] == "shared"


def test_atomic_contention_snippet_fits_the_call(reports: dict[str, FileReport], tmp_path: Path) -> None:
    """The snippet names the line's own call: a counter is aggregated with __popc, a value by shuffles with
    the operation's combine (max for atomicMax); it is a snippet, and the file still compiles with it."""
    counter = _atomic(reports, "countAll").fix
    assert counter is not None and counter.applicability == "snippet"
    text = "".join(e.new_text for e in counter.edits)
    assert "atomicAdd(&counter[0], __popc(active) * (1u))" in text
    maximum = "".join(e.new_text for e in _atomic(reports, "globalMax").fix.edits)
    assert "v = max(v, o)" in maximum and "atomicMax(result, v)" in maximum and "__shfl_down_sync" in maximum
    source = (KERNELS / "atomics.cu").read_text()
    patched = tmp_path / "atomics.cu"
    patched.write_text(_apply(source, counter.edits + _atomic(reports, "globalMax").fix.edits))
    again = analyze_file(patched, options=H100)
    assert not [f for f in again.all_findings() if f.code in ("compile-error", "compile-warning")]


def test_an_assumed_loop_count_sits_on_its_loop_statement(reports: dict[str, FileReport]) -> None:
    """A device function defined above the kernel and inlined into the loop has the loop's first line in the
    file, and a `while (true)` has no instruction of its own; the `assumed-trip-count` finding is still placed
    on the loop's `for` or `while`."""
    name = "int_division.cu"
    expected = {n for n, c in expected_findings(KERNELS / name, None) if c == "assumed-trip-count"}
    found = {f.line for f in reports[name].all_findings()
             if f.code == "assumed-trip-count" and f.kernel.startswith(("blendRows", "probeSlots"))}
    assert expected and found == expected
