"""A finding's start and end columns count the same unit, characters of the analysed line, also on lines with
non-ASCII text before the flagged code (nvcc's `.loc` columns count UTF-8 bytes and are converted once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.finding import char_column
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

TRANSPOSE = Path(__file__).resolve().parent.parent / "examples" / "transpose.cu"
ATOMICS = Path(__file__).resolve().parent / "kernels" / "atomics.cu"
READ = "        odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];"


def test_char_column_of_a_byte_column() -> None:
    line = "/* 😀 é */ x = 1;"
    assert char_column(line, len("/* 😀 é */ ".encode()) + 1) == line.index("x") + 1
    assert char_column(line, 5) == 4  # a byte inside the emoji is the emoji's column
    assert char_column("\tx", 2) == 2 and char_column("abc", 7) == 7
    assert char_column(line, len(line.encode()) + 3) == len(line) + 3  # past the end keeps its excess


@pytest.mark.nvcc
def test_start_and_end_columns_count_characters(nvcc_available: object) -> None:
    text = TRANSPOSE.read_text()
    assert text.count(READ) == 2
    emoji = text.replace(READ, "        /* 😀 */ " + READ.lstrip(), 1)
    lines = emoji.splitlines()
    report = analyze_file(TRANSPOSE, text=emoji)
    line = next(i for i, t in enumerate(lines, 1) if "😀" in t)
    bank = next(f for f in report.all_findings() if f.code == "shared-bank-conflict" and f.line == line)
    flagged = lines[line - 1]
    assert bank.column == flagged.index("odata") + 1  # characters: the emoji is one, not four bytes
    assert bank.end_column == len(flagged.rstrip()) + 1
    fix = bank.fixes()[0].edits[0]
    decl = lines[fix.line - 1]
    assert decl[fix.column - 1:fix.end_column - 1] == "TILE_DIM"


@pytest.mark.nvcc
def test_rule_finding_at_an_access_column_counts_characters(nvcc_available: object) -> None:
    """atomic-contention starts at the atomic's `.loc` column: in characters, past an emoji before the call."""
    text = ATOMICS.read_text()
    call = "    atomicAdd(&blockSums[blockIdx.x], in[i]);"
    assert text.count(call) == 1
    lines = text.replace(call, "    /* 😀 */ " + call.lstrip()).splitlines()
    report = analyze_file(ATOMICS, text="\n".join(lines) + "\n", options=AnalysisOptions(gpu="h100"))
    line = next(i for i, t in enumerate(lines, 1) if "😀" in t)
    found = next(f for f in report.all_findings() if f.code == "atomic-contention" and f.line == line)
    assert found.column == lines[line - 1].index("atomicAdd") + 1
    assert found.end_column == len(lines[line - 1].rstrip()) + 1
