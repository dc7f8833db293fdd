"""What the commands that run on a GPU (`calibrate`, `measure`) share: their exit codes and error reporting."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from kerncast.analysis.calibration.errors import NoGpuError

EXIT_NO_GPU = 2
EXIT_FAILED = 1

T = TypeVar("T")


def run_on_gpu(command: str, work: Callable[[], T], failures: tuple[type[Exception], ...]) -> T | int:
    """`work()`'s result, or the exit code after a one-line message on stderr: EXIT_NO_GPU without a GPU,
    EXIT_FAILED for one of the `failures` (a bad argument, a failed run)."""
    try:
        return work()
    except NoGpuError as exc:
        print(f"kerncast {command}: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    except failures as exc:
        print(f"kerncast {command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
