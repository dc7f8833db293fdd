"""Addresses of a kernel launched with an unknown block, on nvcc's output of `tests/loops/padded_scan.cu`.

With no launch in the file, a warp is 32 consecutive `threadIdx.x` of an unknown warp index. A padded index
`t + (t >> 4) + (t >> 8)` cannot be placed for a symbolic warp (`>> 8` needs the warp's own number), so such
an access is read again at the first warps of a block and their pattern stands for every warp, as the
kernel's assumptions say; one that needs the block size itself (`t + blockDim.x`, padded) stays unknown.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from source_lines import line_of

SCAN = Path(__file__).resolve().parent / "loops" / "padded_scan.cu"


@pytest.fixture(scope="module")
def scan(nvcc_available) -> FileReport:
    report = analyze_file(SCAN)
    assert report.ok and len(report.kernels) == 1, [f.message for f in report.findings]
    return report


def _codes(report: FileReport, line: int) -> set[str]:
    return {f.code for f in report.all_findings() if f.line == line}


def test_a_padded_index_is_read_at_the_first_warps(scan):
    # lanes 16..31 of every warp land one word past lanes 0..15: word 32 + 1 shares bank 1 with lane 1 (2-way)
    store = line_of(SCAN, "s[t + PAD(t)] = in[g];")
    load = line_of(SCAN, "out[g] = s[t + PAD(t)];")
    for line in (store, load):
        assert _codes(scan, line) == {"shared-bank-conflict"}, line
    # the sweep's stride doubles from 1 whatever the block: its iterations are read one by one too, the count
    # down from blockDim.x left a symbol the warp shares
    sweep = line_of(SCAN, "s[bi + PAD(bi)] += s[ai + PAD(ai)];")
    assert "unknown-access" not in _codes(scan, sweep)
    (kernel,) = scan.kernels
    assert f"lines {store}, {sweep}, {load} were read at threadIdx.x" in " ".join(kernel.notes)


def test_an_index_that_needs_the_block_size_stays_unknown(scan):
    line = line_of(SCAN, "s[t + blockDim.x + PAD(t + blockDim.x)] = in[g + blockDim.x];")
    assert _codes(scan, line) == {"unknown-access"}


def test_an_unknown_access_with_no_loaded_value_is_not_called_a_gather(scan):
    # the backward slice of the address over the reaching definitions meets no load: the finding says so
    line = line_of(SCAN, "s[t + blockDim.x + PAD(t + blockDim.x)] = in[g + blockDim.x];")
    (finding,) = [f for f in scan.all_findings() if f.line == line and f.code == "unknown-access"]
    assert "no loaded value" in finding.message and "gather" not in finding.message
