"""benchmarks/corpus.py on the repository's own construct kernels: it compiles, parses and counts, and lists
nvcc failures by reason (run as a script, as a user runs it on checkouts of public code)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_corpus_builder_counts_files_kernels_and_failures(nvcc_available, tmp_path: Path):
    base = tmp_path / "base"
    (base / "src").mkdir(parents=True)
    for name in ("constructs.cu", "profiled.cu"):
        (base / "src" / name).write_text((REPO / "tests" / "ptx_constructs" / name).read_text())
    (base / "src" / "needs_lib.cu").write_text('#include "not_there.h"\n__global__ void k() {}\n')
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "corpus.py"), str(base), "--arch", "sm_90"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "== base: 3 .cu files" in out
    assert "PTX files nvcc produced: 2; compile failures: 1" in out
    assert "kernels analysed: 7" in out  # six construct kernels and profiled_scale
    assert "PTX files without a syntax error: 2/2 (100.0%)" in out
    assert "1  missing header not_there.h" in out
    assert "analysis crashes" not in out
