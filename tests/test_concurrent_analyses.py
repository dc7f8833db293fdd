"""Analyses from two threads at once, as the language server runs them, never hang.

A tool started with fork() runs the at-fork handlers of every C library the process has loaded; OpenBLAS's
stops its worker threads and waits for them, which never happens while another thread is inside a BLAS call
(the power model's LIME fit), and the process hung with no CPU use. Tools are started without fork()."""

from __future__ import annotations

import faulthandler
import os
import tempfile
import threading

import pytest
from kerncast.analysis import toolchain
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.toolchain import COMPILE_SLOTS, run_tool

_forks: list[str] = []
_counting = threading.Event()


def _before_fork() -> None:
    if _counting.is_set():
        _forks.append(threading.current_thread().name)


os.register_at_fork(before=_before_fork)  # stays for the session: it counts only while a test asks it to


@pytest.mark.parametrize("prlimit", [True, False], ids=["prlimit", "python-launcher"])
def test_a_tool_run_starts_without_fork(prlimit: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python calls the at-fork handlers, its own and the C libraries', when it forks (a `preexec_fn` makes
    it); a tool run must not (vfork runs none), with or without util-linux's prlimit, and still runs under its
    memory limit."""
    if not prlimit:
        monkeypatch.setattr(toolchain, "limit_wrapper", lambda: None)
    elif toolchain.limit_wrapper() is None:
        pytest.skip("util-linux's prlimit is not installed here")
    _counting.set()
    try:
        run = run_tool(["/bin/sh", "-c", "ulimit -v"], 30, memory_mb=1024)
    finally:
        _counting.clear()
    assert _forks == []
    assert run.returncode == 0 and run.stdout.strip() == str(1024 // COMPILE_SLOTS * 1024), run


def test_two_files_analysed_from_two_threads_at_once(compile_example) -> None:
    """Two PTX files (ptxas runs for each while the other's power model fits LIME) from two threads: both
    finish. On a hang the test fails with every thread's stack instead of waiting forever."""
    files = []
    for name in ("vector_add", "saxpy"):
        result = compile_example(name)
        assert result.ok and result.ptx
        files.append((f"/tmp/kerncast-threads-{name}.ptx", result.ptx))
    reports: dict[str, FileReport] = {}

    def analyse(path: str, text: str) -> None:
        reports[path] = analyze_file(path, text=text, options=AnalysisOptions(lime=True))

    threads = [threading.Thread(target=analyse, args=f, daemon=True) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    if any(t.is_alive() for t in threads):
        with tempfile.TemporaryFile("w+") as stacks:
            faulthandler.dump_traceback(stacks, all_threads=True)
            stacks.seek(0)
            raise AssertionError("analyses from two threads did not finish in 300 s:\n" + stacks.read())
    assert sorted(reports) == sorted(path for path, _ in files)
    for report in reports.values():
        assert report.kernels and all(k.power is not None for k in report.kernels), report.findings
