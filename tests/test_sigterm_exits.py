"""SIGTERM stops `kerncast analyze` through every `finally`, but never from inside a library: an exception raised
in logging's lock or a pool's shutdown would leave the lock held (the exit then waits forever) or be swallowed
(the run goes on). The handler kills the running compilers at once, those worker threads wait on included."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time

import pytest
from kerncast.analysis.toolchain import resume_tools, run_tool, stop_tools
from kerncast.server.cmd_analyze import _sigterm_exits


class _SignalOnEmit(logging.Handler):
    """Sends this process SIGTERM while logging holds this handler's lock, and stays inside a while."""

    def emit(self, record: logging.LogRecord) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(20):  # the handler runs between these bytecodes, in logging's call, in this frame
            time.sleep(0.01)


def test_a_sigterm_inside_logging_is_served_once_the_library_call_returned() -> None:
    handler = _SignalOnEmit()
    logger = logging.getLogger("kerncast-sigterm-test")
    logger.addHandler(handler)
    logger.propagate = False
    returned = False
    before = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as stopped, _sigterm_exits():
            logger.warning("a record")
            returned = True  # logging's call completed: no exception was raised inside it
    finally:
        logger.removeHandler(handler)
    assert returned and stopped.value.code == 128 + signal.SIGTERM
    assert handler.lock is not None and handler.lock.acquire(blocking=False)  # released, not left held
    handler.lock.release()
    assert signal.getsignal(signal.SIGTERM) is before


def test_stopping_reaches_a_tool_a_worker_thread_waits_on() -> None:
    """A ptxas run in a pool thread is killed at once and its thread ends with SystemExit, instead of the
    interpreter's exit waiting for it; tools run again once the stop was served."""
    outcome: list[BaseException | object] = []

    def work() -> None:
        try:
            outcome.append(run_tool(["sleep", "600"], 700))
        except BaseException as exc:  # noqa: BLE001 - the SystemExit is what the test looks for
            outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    try:
        for _ in range(500):  # the tool has started once `sleep` is a child of this process
            if _children_named("sleep"):
                break
            time.sleep(0.01)
        stop_tools(143)
        thread.join(60)
        assert not thread.is_alive()
        assert isinstance(outcome[0], SystemExit) and outcome[0].code == 143
        assert not _children_named("sleep")
        with pytest.raises(SystemExit):
            run_tool(["true"], 10)
    finally:
        resume_tools()
    assert run_tool(["true"], 10).returncode == 0


def _children_named(name: str) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(os.getpid())], capture_output=True, text=True,
                         check=False).stdout
    return [int(line.split()[0]) for line in out.splitlines() if line.split()[1:] == [name]]
