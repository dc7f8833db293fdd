"""A small run of the pipeline fuzz harness (`benchmarks/fuzz_ptx.py`): mutated real PTX through the whole
analysis and every output format (text, JSON, SARIF) raises nothing and always writes strict JSON.

The run is bounded by its number of cases, never by a clock; the large run and its figures are the
benchmark's (see its docstring).
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest
from kerncast.analysis.ptx import parse_ptx

HARNESS = Path(__file__).resolve().parent.parent / "benchmarks" / "fuzz_ptx.py"
CASES = 300


def _harness():
    spec = importlib.util.spec_from_file_location("kerncast_fuzz_ptx", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fuzz():
    return _harness()


@pytest.fixture(scope="module")
def seeds(fuzz, compile_example) -> list[str]:
    texts = []
    for name in ("vector_add", "reduction", "transpose", "matmul"):
        result = compile_example(name, arch="sm_80")
        assert result.ok
        texts.extend(fuzz.split_kernels(result.ptx))
    return texts


def test_seeds_are_one_kernel_each(fuzz, seeds) -> None:
    assert len(seeds) >= 6
    assert all(len(parse_ptx(text).kernels) == 1 for text in seeds)


def test_mutated_ptx_through_every_output_format(fuzz, seeds) -> None:
    tally = fuzz.run(seeds, start=0, count=CASES, seed=7, ptxas_every=100)
    print({k: v for k, v in tally.to_json().items() if k != "failures"})
    assert tally.cases == CASES
    assert tally.uncaught == 0, tally.failures[:3]
    assert tally.non_strict == 0, tally.failures[:3]
    # the mutations reach the analysis (not only the parser's error path) and hit non-finite numbers
    assert tally.analysed >= CASES // 4 and tally.parse_errors >= CASES // 10


def test_the_bound_mutations_are_exercised(fuzz) -> None:
    """The harness's own mutations include the inputs that once crashed: huge shifts, negative sizes, nesting."""
    texts = [fuzz.mutate(random.Random(i), ".entry k()\n{\n\tmov.u32 \t%r1, 3;\n\texit;\n}\n") for i in range(400)]
    joined = "\n".join(texts)
    assert "9223372036854775807;" in joined and "shr." in joined
    assert "[-1]" in joined and "{" * 80 in joined
    assert any(t.count("exit;") and "mov.u32" not in t for t in texts)
