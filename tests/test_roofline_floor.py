"""`benchmarks/roofline_floor.py`, the check that no kernel of a code base is predicted faster than its own
roofline's best case, run on a small code base made of the repo's own examples (the real pipeline and nvcc)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SPEC = importlib.util.spec_from_file_location("roofline_floor", ROOT / "benchmarks" / "roofline_floor.py")
rf = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
sys.modules["roofline_floor"] = rf
_SPEC.loader.exec_module(rf)  # type: ignore[union-attr]


def test_a_code_base_is_analysed_kernel_by_kernel_against_its_best_case(tmp_path, nvcc_available):
    """Two files in nested folders: every kernel gets a time, and none is below its roofline's best case."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "c").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "vector_add.cu", tmp_path / "a")
    shutil.copy(ROOT / "examples" / "saxpy.cu", tmp_path / "b" / "c")
    tally = rf.run_base(tmp_path, "h100", None)
    assert tally.files == 2 and tally.kernels >= 2 and tally.timed == tally.kernels
    assert tally.below == 0, tally.listing
