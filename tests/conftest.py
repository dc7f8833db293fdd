"""Shared pytest fixtures.

Tests that need the CUDA compiler depend on `nvcc_available` (or `compile_example`), which skips them with
the reason when no toolchain can be found, so the suite still runs on a machine without the `cuda` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kerncast.analysis import compile as compile_module
from kerncast.analysis.compile import (
    CompileOptions,
    CompileResult,
    Toolchain,
    ToolchainError,
    compile_cuda,
    find_toolchain,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = REPO_ROOT / "examples"
#: compilations the test process keeps. The suite compiles the examples, the rule corpus and the ladder kernels
#: in many modules and for several architectures (the ladders alone need 58 file-architecture pairs); with the
#: server's bound of 32 most of them were evicted before the next module asked for them again. A result is reused
#: only under the cache's own rule (same text, flags, toolkit and header stamps), as in the server.
SESSION_COMPILES = 512


@pytest.fixture(scope="session", autouse=True)
def compile_cache_for_the_session() -> Iterator[None]:
    """The in-process compile cache, bounded at `SESSION_COMPILES` for the session, then at its own bound again."""
    cache = compile_module._cache
    own = cache.limit
    cache.limit = max(own, SESSION_COMPILES)
    yield
    cache.limit = own


@pytest.fixture(scope="session")
def nvcc_available() -> Toolchain:
    """The toolchain found by the normal search; skips the requesting test when there is none."""
    try:
        return find_toolchain()
    except ToolchainError as exc:
        pytest.skip(f"no CUDA toolchain: {exc}")


@pytest.fixture(scope="session")
def compile_example(nvcc_available: Toolchain) -> Callable[..., CompileResult]:
    """`compile_example("matmul", arch="sm_80")` compiles `examples/matmul.cu` (results are cached)."""

    def _compile(name: str, arch: str = "sm_75") -> CompileResult:
        file_name = name if name.endswith(".cu") else f"{name}.cu"
        return compile_cuda(EXAMPLES_DIR / file_name, options=CompileOptions(arch=arch))

    return _compile
