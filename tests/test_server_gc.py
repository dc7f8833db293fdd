"""The language server pauses the cyclic garbage collector from a save's analysis to its publication; pauses
of two documents analysed at once nest, and collection resumes only when the last one ends."""

from __future__ import annotations

import gc

import pytest
from kerncast.server.server import gc_paused


def test_pauses_nest_and_collection_resumes_after_the_last() -> None:
    assert gc.isenabled()
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    second.__enter__()
    assert not gc.isenabled()
    first.__exit__(None, None, None)  # the first document is published while the second is still analysed
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_collection_resumes_when_the_analysis_fails() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("analysis failed")
    assert gc.isenabled()
