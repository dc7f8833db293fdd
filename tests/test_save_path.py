"""What a language server's save waits for between the save and its diagnostics: nothing of Kerncast's own runs
before nvcc starts, and work that can overlap nvcc starts only once nvcc runs (counted and observed, never
timed; benchmarks/nvim_latency.py measures the latency)."""

from __future__ import annotations

import multiprocessing
import tempfile
import threading
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kerncast.analysis import pipeline, source_model, toolchain
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.header_macros import read_included
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "vector_add.cu"


class _WatchedPool:
    """Stands for the pipeline's scan pool: records which tools were running at each submit, then submits."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.running_at_submit: list[list[str]] = []

    def submit(self, fn: Any, *args: Any) -> Future:
        self.running_at_submit.append([Path(str(p.args[-1])).name for p in list(toolchain._RUNNING)])
        return self.pool.submit(fn, *args)


def test_the_source_scan_starts_once_nvcc_runs(nvcc_available, monkeypatch, tmp_path: Path) -> None:
    """Started before nvcc, the scan's thread would hold the interpreter while the analysis starts nvcc."""
    watched = _WatchedPool(pipeline._SCAN_POOL)
    monkeypatch.setattr(pipeline, "_SCAN_POOL", watched)
    source = tmp_path / "vector_add.cu"
    text = EXAMPLE.read_text() + f"\n// {tmp_path.name}\n"  # a text no earlier compile of this process had
    source.write_text(text)
    report = analyze_file(source, text=text, options=AnalysisOptions(lime=False))
    assert [k.name for k in report.kernels] == ["vectorAdd"]
    assert report.kernels[0].launch is not None and report.kernels[0].launch.block.value is not None
    # one scan, submitted while nvcc (its last argument is the source it compiles) was running
    assert watched.running_at_submit == [["vector_add.cu"]]


def test_compile_started_is_called_once_and_not_for_a_cached_result(nvcc_available, tmp_path: Path) -> None:
    source = tmp_path / "vector_add.cu"
    text = EXAMPLE.read_text() + f"\n// {tmp_path.name}\n"
    source.write_text(text)
    running: list[int] = []
    options = CompileOptions(arch="sm_75")
    first = compile_cuda(source, text=text, options=options, with_resources=False,
                         started=lambda: running.append(len(toolchain._RUNNING)))
    assert first.ok and running == [1]  # called once, with nvcc's process running
    again = compile_cuda(source, text=text, options=options, with_resources=False,
                         started=lambda: running.append(-1))
    assert again is first and running == [1]  # a cached result starts no nvcc, so nothing is called


def test_a_tool_directory_is_removed_after_its_caller_left_it(tmp_path: Path, monkeypatch) -> None:
    """Removing a directory costs milliseconds on some file systems: it happens behind the caller's back."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    held = threading.Event()
    toolchain._REMOVER.submit(held.wait, 30)  # the remover is busy until `held` is set
    with toolchain.tool_temp_dir("kerncast-test-", remove_later=True) as scratch:
        (scratch / "out.ptx").write_text("x")
    assert scratch.is_dir()  # left, not yet removed: the caller did not wait for it
    held.set()
    toolchain.finish_removals()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), toolchain.tool_temp_dir("kerncast-test-", remove_later=True) as failed:
        raise RuntimeError("a tool run that failed")
    assert not failed.exists()  # left by an exception: removed at once


def _removes_in_a_forked_child(scratch_root: str) -> bool:
    tempfile.tempdir = scratch_root
    with toolchain.tool_temp_dir("kerncast-child-", remove_later=True) as scratch:
        (scratch / "out.ptx").write_text("x")
    toolchain.finish_removals()  # its own remover: the parent's thread does not exist in a fork
    return not scratch.exists()


def test_a_forked_worker_removes_its_own_directories(tmp_path: Path) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform: the workers of `kerncast analyze` many start fresh")
    toolchain.finish_removals()  # the parent's remover thread exists before the fork
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        assert pool.submit(_removes_in_a_forked_child, str(tmp_path)).result(timeout=60)
    assert list(tmp_path.iterdir()) == []


def test_ptxas_is_running_when_the_analysis_goes_on(compile_example) -> None:
    """The analysis thread, busy with the parse, would otherwise keep the worker from starting ptxas."""
    ptx = compile_example("vector_add").ptx
    job = pipeline.start_ptxas(ptx, AnalysisOptions(lime=False))
    running = [Path(str(p.args[-3])).name for p in list(toolchain._RUNNING)]  # ptxas -v -arch=.. FILE -o OUT
    assert job.done() or running == ["kernel.ptx"]
    assert "_Z9vectorAddPKfS0_Pfi" in job.result(timeout=60).table


def test_a_directory_left_while_the_interpreter_exits_is_removed_at_once(tmp_path: Path, monkeypatch) -> None:
    """A worker thread's last compile during the exit: no thread can take the removal, so the caller does it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    exited = ThreadPoolExecutor(1)
    exited.shutdown()  # refuses new work as the executors do once the interpreter exits
    monkeypatch.setattr(toolchain, "_REMOVER", exited)
    with toolchain.tool_temp_dir("kerncast-test-", remove_later=True) as scratch:
        (scratch / "out.ptx").write_text("x")
    assert not scratch.exists()


def test_a_save_walks_the_files_headers_once_for_all_its_kernels(nvcc_available, monkeypatch, tmp_path: Path) -> None:
    """The scan made while nvcc runs is the one every kernel's launch inference reads: the headers are walked
    once per save, not once more per kernel."""
    (tmp_path / "sizes.h").write_text("#define BLOCK 64\n")
    kernels = "".join(f"__global__ void k{i}(float *y) {{ y[threadIdx.x] = {i}; }}\n" for i in range(4))
    launches = "".join(f"  k{i}<<<2, BLOCK>>>(y);\n" for i in range(4))
    source = tmp_path / "four.cu"
    text = '#include "sizes.h"\n' + kernels + "int main() { float *y = 0;\n" + launches + "}\n"
    source.write_text(text)
    walks: list[str] = []

    def counted(text: str, path: Any, include_dirs: Any = None) -> Any:
        walks.append(Path(path).name)
        return read_included(text, path, include_dirs)

    monkeypatch.setattr(source_model, "read_included", counted)
    report = analyze_file(source, text=text, options=AnalysisOptions(lime=False))
    assert sorted(k.name for k in report.kernels) == [f"k{i}" for i in range(4)]
    assert {k.launch.block.value for k in report.kernels if k.launch is not None} == {(64, 1, 1)}
    assert walks == ["four.cu"]
