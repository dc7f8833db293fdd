"""Addresses the memory analysis places lane by lane on nvcc's output of `tests/kernels/after_loops.cu`.

Each kernel's address is built in a way nvcc writes often and that once left it unknown: a loop that starts
from what an earlier loop left (a Blelloch scan's down-sweep), a counter an unrolled loop recomputes from
another (`col + 3 * blockDim.x`), a signed index divided by 64 (rounded with its sign bit) and a bit-field
insert (`4 * row + (x & 3)`), an index split by parameters and rebuilt, an index divided by a parameter; and one
that stays unknown is called a gather when a call's result is in it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from source_lines import line_of

KERNELS = Path(__file__).resolve().parent / "kernels" / "after_loops.cu"


@pytest.fixture(scope="module")
def report(nvcc_available) -> FileReport:
    rep = analyze_file(KERNELS)
    assert rep.ok and len(rep.kernels) == 7, [f.message for f in rep.findings]
    return rep


def _findings(report: FileReport, needle: str) -> list:
    line = line_of(KERNELS, needle)
    return [f for f in report.all_findings() if f.line == line]


def test_the_down_sweep_starts_from_the_stride_the_up_sweep_left(report):
    # the up-sweep ends with stride 512; the down-sweep halves it first: 256, 128, ... 1, lanes 2 * stride
    # words apart, so its loads conflict in the banks as the up-sweep's do
    for needle in ("float x = s[ai];", "s[ai] = s[bi];", "s[bi] += x;"):
        codes = {f.code for f in _findings(report, needle)}
        assert "unknown-access" not in codes and "shared-bank-conflict" in codes, (needle, codes)


def test_a_counter_recomputed_from_the_unrolled_counter_is_affine(report):
    # col + 3 * blockDim.x is written as (col + 4 * blockDim.x) + 3 * blockDim.x from the moved col: the loads of
    # the four columns are each 32 consecutive floats
    findings = _findings(report, "acc += in[col] + in[col + blockDim.x]")
    assert "unknown-access" not in {f.code for f in findings}
    assert "uncoalesced-global" not in {f.code for f in findings}


def test_a_signed_index_divided_by_64_is_placed(report):
    # idx / 64 rounds toward zero with idx's sign bit, 0 for an index built from blockIdx and threadIdx: the
    # warp reads one word
    findings = _findings(report, "out[idx] = in[1 + idx / 64];")
    assert "unknown-access" not in {f.code for f in findings}, [f.message for f in findings]


def test_a_bit_field_insert_is_a_sum(report):
    # 64 threads: x >> 2 picks one of 16 rows 2 KiB apart, x & 3 four shorts in it: 8 rows per warp, 8 sectors
    # where 64 bytes would take 2
    findings = _findings(report, "out[row * width + (blockIdx.x * 4 | (x & 3))]")
    assert "unknown-access" not in {f.code for f in findings}
    assert any(f.code == "uncoalesced-global" and "8 sectors per request, ideal 2" in f.message
               for f in findings), [f.message for f in findings]


def test_an_index_split_by_parameters_and_rebuilt_is_the_index(report):
    # (i / S / N) * S * N + (i / N % S) * N + i % N is i whatever S and N are: 32 consecutive floats (nvcc
    # divides by S then N for one part and by N then S for the other)
    findings = _findings(report, "out[i * S * N + j * N + k] = a / (1.0f + expf(-g));")
    assert not {"unknown-access", "uncoalesced-global"} & {f.code for f in findings}, [f.message for f in findings]


def test_an_index_divided_by_a_parameter_reads_contiguous_elements(report):
    # i / cols for 32 consecutive i: the same or the next element whatever cols is, at most a run of 32 floats
    findings = _findings(report, "out[i] = in[i] * scale[i / cols];")
    assert not {"unknown-access", "uncoalesced-global"} & {f.code for f in findings}, [f.message for f in findings]


def test_a_table_read_at_a_call_result_is_a_gather(report):
    # the quadrant comes back from __internal_trig_reduction_slowpathd through its return value
    findings = [f for f in _findings(report, "out[i] = sin(step * i);") if f.code == "unknown-access"]
    assert findings and all("a call's result (a gather)" in f.message for f in findings), \
        [f.message for f in findings]
