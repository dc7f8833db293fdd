"""Locating the CUDA compiler (nvcc) and assembler (ptxas) and running them safely.

The search order puts the user's explicit choice first, then the pip wheels of the `cuda` extra (found with
NVIDIA's `cuda-pathfinder`), then `PATH`, then `CUDA_HOME`/`CUDA_PATH` and `/usr/local/cuda`. Every failure
ends in one `ToolchainError` whose message says what was searched and how to fix it, because a missing
compiler is the most common first-run problem and a traceback does not tell the user what to install.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

try:
    import resource
except ImportError:  # Windows: no address-space limit; the timeout still holds
    resource = None  # type: ignore[assignment]

INSTALL_HINT = ("install the CUDA compiler with `pip install 'kerncast[cuda]'`, "
                "or set nvccPath to an nvcc executable")
HOST_COMPILER_HINT = "install g++ (Debian: apt-get install g++)"
_EXE = ".exe" if sys.platform == "win32" else ""
_VERSION_RE = re.compile(r"release\s+(\d+\.\d+)(?:,\s*V(\d+(?:\.\d+)+))?")
_version_cache: dict[Path, str] = {}
#: Toolkit roots tried last, after CUDA_HOME and CUDA_PATH.
DEFAULT_CUDA_ROOTS: tuple[Path, ...] = (Path("/usr/local/cuda"),)


#: the longest a tool may run; larger timeouts are refused (a thread wait cannot take more than ~2^31 s)
MAX_TIMEOUT_S = 3600.0
#: what a shown value is cut to, so that a huge setting never floods a message
SHOWN_CHARS = 80
#: nvcc hands -D values, -I directories and the source path to the host compiler through `sh -c`, inside
#: double quotes; these characters would end the quoting or start a substitution there
SHELL_CHARS = frozenset("$`\"'\\;|&<>\n\r\0")
#: what a define's value may not hold: nvcc writes each define in double quotes for its shell and escapes a double
#: quote there (so CMake's `-DPROJECT_VERSION="1.2.0"` arrives intact, and a single quote is plain text), but not a
#: `$`, a backtick or a backslash; `;|&<>` are refused too, for a shell that nvcc might not quote
DEFINE_UNSAFE_CHARS = SHELL_CHARS - {'"', "'"}
#: what an include directory may not hold: one whose path the shell would interpret reaches nvcc as a link with a
#: plain name (`compile._shell_safe_dir`), so only what no path or link can hold is refused
PATH_IMPOSSIBLE_CHARS = frozenset("\n\r\0")
MAX_DEFINE_CHARS = 4096
MAX_PATH_CHARS = 4096
_DEFINE_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\([A-Za-z0-9_, ]*\))?")


#: the most memory a compile gets by default, in MiB, and the share of the machine's memory when that is less
DEFAULT_COMPILE_MEMORY_MB = 4096
COMPILE_MEMORY_SHARE = 0.5
#: compiler runs (nvcc with its stages, or ptxas) one process lets run at once; each gets this share of the limit
COMPILE_SLOTS = 2
#: the least a memory limit may be: each of the COMPILE_SLOTS compiles needs some hundreds of MiB of address space
#: (nvcc and its children) to start
MIN_COMPILE_MEMORY_MB = 512


def machine_memory_mb() -> int | None:
    """The machine's physical memory in MiB, or None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1 << 20)
    except (AttributeError, ValueError, OSError):
        return None


def default_compile_memory_mb() -> int:
    """min(DEFAULT_COMPILE_MEMORY_MB, half the machine's memory), for all the compiles a process runs at once: a
    hostile input (an `#include` of a device, a macro bomb) fails on its own share long before the machine runs
    short, while real code compiles in well under a GiB."""
    total = machine_memory_mb()
    share = int(total * COMPILE_MEMORY_SHARE) if total else DEFAULT_COMPILE_MEMORY_MB
    return max(MIN_COMPILE_MEMORY_MB, min(DEFAULT_COMPILE_MEMORY_MB, share))


def check_memory_mb(value: object) -> int:
    """A compile memory limit in MiB: an integer of at least MIN_COMPILE_MEMORY_MB; ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_COMPILE_MEMORY_MB:
        raise ValueError(f"compile memory limit {shown(value)} rejected: expected a whole number of MiB, at "
                         f"least {MIN_COMPILE_MEMORY_MB}")
    return value


class ToolchainError(Exception):
    """nvcc, ptxas or the host compiler is missing or unusable; the message says how to fix it."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`repr(value)` cut to `limit` characters, with the full length said, for messages about user input."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def check_define(define: str) -> str:
    """`NAME`, `NAME=VALUE` or `NAME(args)=VALUE` with no shell metacharacter but quotes; ValueError names it.

    nvcc passes defines on to the host compiler through a shell, inside double quotes it escapes: a value such
    as `$(cmd)` would run `cmd`, so a define is data and is refused rather than escaped, while the quotes of a
    string define (`VERSION="1.2.0"`, as CMake writes it) reach the compiler as they are.
    """
    if not isinstance(define, str):
        raise ValueError(f"define {shown(define)} rejected: expected NAME or NAME=VALUE text")
    if len(define) > MAX_DEFINE_CHARS:
        raise ValueError(f"define {shown(define)} rejected: longer than {MAX_DEFINE_CHARS} characters")
    name, _, value = define.strip().partition("=")
    if not _DEFINE_NAME_RE.fullmatch(name):
        raise ValueError(f"define {shown(define)} rejected: {shown(name)} is not a macro name "
                         "(expected NAME or NAME=VALUE)")
    bad = sorted(set(define) & DEFINE_UNSAFE_CHARS)
    if bad:
        raise ValueError(f"define {shown(define)} rejected: it contains {', '.join(map(repr, bad))}, which "
                         "the compiler's shell would interpret; only NAME or NAME=VALUE without "
                         "shell characters is allowed")
    return define.strip()


def check_path(path: str, what: str) -> str:
    """A path that reaches a compiler command line: text without shell metacharacters; ValueError otherwise."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"{what} {shown(path)} rejected: expected a non-empty path")
    if len(path) > MAX_PATH_CHARS:
        raise ValueError(f"{what} {shown(path)} rejected: longer than {MAX_PATH_CHARS} characters")
    bad = sorted(set(path) & unsafe_path_chars())
    if bad:
        raise ValueError(f"{what} {shown(path)} rejected: it contains {', '.join(map(repr, bad))}, which the "
                         "compiler's shell would interpret")
    return path


def check_include_dir(path: str) -> str:
    """An include directory: any path text (one the compiler's shell would interpret is handed to nvcc as a
    link), but not empty, not huge, and without a newline or NUL; ValueError otherwise. A workspace named
    `Bob's proj` is a folder like any other."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"include directory {shown(path)} rejected: expected a non-empty path")
    if len(path) > MAX_PATH_CHARS:
        raise ValueError(f"include directory {shown(path)} rejected: longer than {MAX_PATH_CHARS} characters")
    if set(path) & PATH_IMPOSSIBLE_CHARS:
        raise ValueError(f"include directory {shown(path)} rejected: it contains a newline or NUL")
    return path


def unsafe_path_chars() -> frozenset[str]:
    """Characters a path may not hold on a compiler command line (a Windows path keeps its backslashes)."""
    return SHELL_CHARS - {"\\"} if os.name == "nt" else SHELL_CHARS


def is_shell_safe_path(path: str | Path) -> bool:
    """Whether `path` can be handed to nvcc as it is."""
    return not set(str(path)) & unsafe_path_chars()


def check_timeout(seconds: object) -> float:
    """A tool timeout in seconds, in (0, MAX_TIMEOUT_S]; ValueError with the value shown otherwise."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds) \
            or not 0 < seconds <= MAX_TIMEOUT_S:
        raise ValueError(f"timeout {shown(seconds)} rejected: expected seconds above 0 and at most "
                         f"{MAX_TIMEOUT_S:g}")
    return float(seconds)


@contextmanager
def tool_temp_dir(prefix: str, remove_later: bool = False) -> Iterator[Path]:
    """Kerncast's own temporary directory for one tool run, removed whatever happens.

    The tools get it as TMPDIR/TMP/TEMP (see `run_tool`), so nvcc's `tmpxft_*` intermediates live inside it
    and go with it, also after a timeout. With `remove_later`, a directory left normally (its tools have ended
    and its output was read) is removed by a background thread (`finish_removals` waits for it), not by the
    caller: removing a directory is a synchronous journal update, 2 to 4 ms on a file system mounted with
    `discard`, that a language server's save would otherwise wait for twice (nvcc's and ptxas's). The
    interpreter's exit waits for the removals handed over.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    except BaseException:
        _remove_tree(path)
        raise
    if remove_later:
        try:
            _REMOVER.submit(_remove_tree, path)
            return
        except RuntimeError:  # the interpreter is exiting (a worker thread's last compile): no new thread now
            pass
    _remove_tree(path)


def _new_remover() -> ThreadPoolExecutor:
    """The thread that removes the temporary directories handed over by `tool_temp_dir(remove_later=True)`, in
    order; not a daemon, so that the interpreter's exit waits for what is queued. A forked worker makes its own
    (its parent's thread does not exist in it, and its parent removes what it queued)."""
    global _REMOVER
    _REMOVER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kerncast-cleanup")
    return _REMOVER


_REMOVER = _new_remover()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_remover)


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():  # a child still writing at the first attempt; it has been killed by now
        shutil.rmtree(path, ignore_errors=True)


def finish_removals() -> None:
    """Wait until every temporary directory handed over for removal so far is removed."""
    _REMOVER.submit(int).result()


@dataclass(frozen=True)
class Toolchain:
    """One consistent CUDA toolkit: nvcc and the ptxas that belongs to it (their PTX versions must agree)."""

    nvcc: Path
    ptxas: Path
    version: str
    origin: str  # "setting" | "cuda-pathfinder" | "PATH" | "CUDA_HOME"


@dataclass(frozen=True)
class ToolRun:
    """Outcome of one tool invocation: exit status and both output streams (or a timeout)."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    #: the address-space limit the tool ran under, in MiB (None: none)
    memory_mb: int | None = None
    #: the limit of all the process's compiles together that `memory_mb` is a share of, in MiB
    budget_mb: int | None = None

    @property
    def killed(self) -> bool:
        """Whether a signal ended the tool or one of its stages (the out-of-memory killer, a user's kill): its
        output is no verdict on the code. nvcc says so of a stage (`'cicc' died due to signal 9`), as the gcc
        driver does of cc1plus."""
        return self.returncode < 0 or bool(_KILLED_RE.search(self.output))

    @property
    def out_of_memory(self) -> bool:
        """Whether the tool (or one of its children) ran out of the memory it was allowed."""
        return self.memory_mb is not None and bool(_OUT_OF_MEMORY_RE.search(self.output))

    @property
    def transient(self) -> bool:
        """A failure that says nothing lasting about the input: a timeout, a signal, the memory limit. Such a
        result is never cached: the next request runs the tool again."""
        return self.timed_out or self.killed or self.out_of_memory

    @property
    def output(self) -> str:
        """stdout and stderr together; nvcc splits its messages between the two."""
        return (self.stdout + "\n" + self.stderr).strip("\n")


_KILLED_RE = re.compile(r"died due to signal|Killed signal terminated program|terminated by signal")
_OUT_OF_MEMORY_RE = re.compile(r"out of memory|memory exhausted|Cannot allocate memory|std::bad_alloc|"
                               r"Out of memory|failed to allocate|unable to allocate", re.IGNORECASE)


#: the tools this process is running now, so that a stop request reaches every one, whichever thread waits on it
_RUNNING: set[subprocess.Popen] = set()
#: the exit status a stop request asked for (None: none): every tool run from then on raises SystemExit with it
_stop_status: int | None = None


def stop_tools(status: int) -> None:
    """Kill the process group of every tool running now and make each later `run_tool` raise SystemExit(status).

    Made for a signal handler: it takes no lock, so it cannot wait on the thread it interrupted. Tools that worker
    threads wait on (ptxas) end too; their threads would otherwise hold the interpreter's exit until they finish.
    """
    global _stop_status
    _stop_status = status
    for proc in list(_RUNNING):  # a copy made in one step: a thread may add or remove meanwhile
        _kill_group(proc)


def resume_tools() -> None:
    """Tools may run again (the stop request was served)."""
    global _stop_status
    _stop_status = None


def _check_stop() -> None:
    if _stop_status is not None:
        raise SystemExit(_stop_status)


#: one slot per compiler run: with COMPILE_SLOTS runs at once, their shares add up to the process's limit
_slots = threading.BoundedSemaphore(COMPILE_SLOTS)


def _new_slots() -> None:
    """A forked worker starts with every slot free, whatever the threads of its parent held at the fork."""
    global _slots
    _slots = threading.BoundedSemaphore(COMPILE_SLOTS)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_slots)


def compile_share_mb(budget_mb: int) -> int:
    """The address space of one compiler run, in MiB: its share of the limit of all a process's compiles."""
    return budget_mb // COMPILE_SLOTS


def run_tool(args: list[str], timeout_s: float, cwd: str | Path | None = None,
             env: dict[str, str] | None = None, temp_dir: str | Path | None = None,
             memory_mb: int | None = None, bound_memory: bool = True,
             cancel: threading.Event | None = None, started: Callable[[], object] | None = None) -> ToolRun:
    """Run a command (argument list, no shell) under a memory limit, and kill its whole process group if it
    overruns its time.

    nvcc starts cicc, cudafe++ and the host compiler as children; killing only nvcc on a timeout would
    leave them running, so the command gets its own session and the group is killed. `temp_dir` becomes
    the tool's TMPDIR, TMP and TEMP. The timeout is held to (0, MAX_TIMEOUT_S] whatever the caller passes.
    `memory_mb` (default `default_compile_memory_mb()`) bounds all the tools this process runs together: at most
    COMPILE_SLOTS run at once (a caller waits for a free slot), and each process of each gets its share of the
    limit as address space (RLIMIT_AS, inherited by its children): an input that makes the preprocessor
    allocate without end fails with "out of memory" instead of taking the machine. nvcc runs its stages one
    after another, so one run's peak is about one stage's, and the process tree's stays under the limit.
    `bound_memory=False` is for a built GPU program (the calibration harness): the CUDA driver reserves virtual
    address space for the whole of the GPU's and the host's memory when it creates a context, so under any
    compile-sized RLIMIT_AS its first CUDA call fails with "out of memory".
    When `cancel` is set while the tool runs (its result is no longer wanted: the document was closed), its
    group is killed as on a timeout, and the run ends as one killed by SIGKILL (`ToolRun.transient`); set
    before the tool got its slot, the tool is not started, and the run ends so at once.
    `started` is called once the tool's process exists, before its end is awaited: the caller's work that can
    overlap the tool (the source scan beside nvcc) starts then, not before, since a Python thread started
    earlier holds the interpreter while this one needs it to start the tool.
    """
    budget_mb = default_compile_memory_mb() if memory_mb is None else memory_mb
    with _slots:
        return _run_in_slot(args, timeout_s, cwd, env, temp_dir, budget_mb, bound_memory, cancel, started)


#: seconds between two looks at a tool run's cancel signal
CANCEL_POLL_S = 0.2
#: the signal a cancelled run ends by (the exit status of one cancelled before it started, too)
_SIGKILL = int(getattr(signal, "SIGKILL", 9))


def _run_in_slot(args: list[str], timeout_s: float, cwd: str | Path | None, env: dict[str, str] | None,
                 temp_dir: str | Path | None, budget_mb: int, bound_memory: bool = True,
                 cancel: threading.Event | None = None, started: Callable[[], object] | None = None) -> ToolRun:
    """`run_tool`'s work, once it holds a slot."""
    share_mb = compile_share_mb(budget_mb)
    bounded = bound_memory and resource is not None  # no address-space limit on Windows
    memory_mb: int | None = share_mb if bounded else None
    timeout_s = min(max(timeout_s, 0.001), MAX_TIMEOUT_S) if math.isfinite(timeout_s) else MAX_TIMEOUT_S
    if temp_dir is not None:
        env = dict(os.environ if env is None else env, TMPDIR=str(temp_dir), TMP=str(temp_dir),
                   TEMP=str(temp_dir))
    popen_kwargs: dict[str, object] = {}
    if os.name == "posix":
        popen_kwargs["start_new_session"] = True
    command = args
    if bounded:
        limit = share_mb << 20
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        if hard != resource.RLIM_INFINITY:  # a limit may only be lowered
            limit = min(limit, hard)
        command = _limited(args, limit)
    _check_stop()
    if cancel is not None and cancel.is_set():  # cancelled while it waited for a slot: not started at all
        return ToolRun(-_SIGKILL, "", "", timed_out=False, memory_mb=memory_mb, budget_mb=budget_mb)
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, cwd=cwd, env=env, text=True, errors="replace",
                                **popen_kwargs)
    except OSError as exc:
        raise ToolchainError(f"cannot run {args[0]}: {exc.strerror or exc}; {INSTALL_HINT}") from exc
    _RUNNING.add(proc)
    try:
        _check_stop()  # a stop request that came while the tool started did not see it
        if started is not None:
            started()
        out, err = _communicate(proc, timeout_s, cancel)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return ToolRun(proc.returncode, out, err, timed_out=True, memory_mb=memory_mb, budget_mb=budget_mb)
    except BaseException:  # Ctrl-C, or SIGTERM turned into SystemExit: the tool's own session would outlive us
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        _RUNNING.discard(proc)
    _check_stop()  # killed by a stop request: its output says nothing about the input
    if command is not args and proc.returncode in _EXEC_FAILED and err.startswith(_PRLIMIT_EXEC_FAILED):
        # the wrapper could not start the tool, where Popen itself would have raised
        why = err.strip().splitlines()[0].rpartition(": ")[2]
        raise ToolchainError(f"cannot run {args[0]}: {why}; {INSTALL_HINT}")
    return ToolRun(proc.returncode, out, err, timed_out=False, memory_mb=memory_mb, budget_mb=budget_mb)


#: util-linux's exit statuses for a command it could not execute (found but not runnable, not found)
_EXEC_FAILED = (126, 127)
#: how util-linux's `prlimit` begins the message of a command it could not execute
_PRLIMIT_EXEC_FAILED = "prlimit: failed to execute"


@functools.cache
def limit_wrapper() -> str | None:
    """util-linux's `prlimit`, which sets a limit on itself and then executes the command in its place (same
    process, so the same process group and pid); None where it is not installed."""
    return shutil.which("prlimit") if sys.platform.startswith("linux") else None


#: `prlimit --as` in Python, for where util-linux's is not installed (an interpreter's start: tens of ms); it
#: says that it could not execute the tool in prlimit's words (`_PRLIMIT_EXEC_FAILED`)
_SET_LIMIT_THEN_EXEC = """import os, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"prlimit: failed to execute {sys.argv[2]}: {exc.strerror}\\n")
    sys.exit(127)
"""


def _limited(args: list[str], limit: int) -> list[str]:
    """The command line that runs `args` under an address-space limit of `limit` bytes.

    Python cannot use vfork for a child that runs a function before exec, and a plain fork of the language
    server (a few hundred MB of Python objects) copies its page tables and makes the child wait for a CPU
    before it can exec: on a loaded 2-core machine that was 20 ms per nvcc or ptxas start, against 1.5 ms with
    vfork (benchmarks/spawn_cost.py). `prlimit --as` sets the same RLIMIT_AS in the child and executes the
    tool, which every process it starts inherits, so the limit holds as before. Without `prlimit`, a Python
    launcher does the same (`_SET_LIMIT_THEN_EXEC`), slower to start but still no fork: a fork runs the
    at-fork handlers of every loaded C library with the interpreter lock held, and OpenBLAS's stops its worker
    threads and waits for them, which never happens while another thread is in a BLAS call (the power model's
    LIME fit of a second analysis): two analyses in two threads hung with no CPU use."""
    wrapper = limit_wrapper()
    if wrapper is not None:
        return [wrapper, f"--as={limit}:{limit}", "--", *args]
    return [sys.executable, "-I", "-S", "-c", _SET_LIMIT_THEN_EXEC, str(limit), *args]


def _communicate(proc: subprocess.Popen, timeout_s: float, cancel: threading.Event | None) -> tuple[str, str]:
    """The tool's output once it ends; TimeoutExpired past `timeout_s`. With `cancel`, its group is killed
    within CANCEL_POLL_S of the signal, and the output so far is returned (the exit status says SIGKILL)."""
    if cancel is None:
        return proc.communicate(timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return proc.communicate(timeout=max(0.0, min(CANCEL_POLL_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if cancel.is_set():
                _kill_group(proc)
                return proc.communicate()
            if time.monotonic() >= deadline:
                raise


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the process group this module started for `proc` (or just `proc` where groups do not exist)."""
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass
    proc.kill()


def toolkit_version(nvcc: Path, timeout_s: float = 30) -> str:
    """The toolkit version ("13.0.88") from `nvcc --version`, cached per nvcc path."""
    cached = _version_cache.get(nvcc)
    if cached is not None:
        return cached
    run = run_tool([str(nvcc), "--version"], timeout_s)
    match = _VERSION_RE.search(run.output)
    if run.timed_out or run.returncode != 0 or not match:
        detail = "timed out" if run.timed_out else (run.output.strip().splitlines() or ["no output"])[-1]
        raise ToolchainError(f"{nvcc} does not work as nvcc (`nvcc --version`: {detail}); {INSTALL_HINT}")
    version = match.group(2) or match.group(1)
    _version_cache[nvcc] = version
    return version


def find_toolchain(nvcc_path: str | None = None) -> Toolchain:
    """Find nvcc and its sibling ptxas: explicit setting, cuda-pathfinder, PATH, CUDA_HOME, /usr/local/cuda.

    An explicit `nvcc_path` (a file, a `bin` directory or a toolkit root) is final: if it is wrong the user
    is told so instead of silently getting a different compiler.
    """
    if nvcc_path:
        nvcc = _nvcc_from_setting(nvcc_path)
        return _toolchain(nvcc, "setting")
    searched: list[str] = []
    for origin, candidate in _search_candidates(searched):
        if candidate is not None:
            return _toolchain(candidate, origin)
    raise ToolchainError("nvcc not found (searched: " + "; ".join(searched) + f"); {INSTALL_HINT}")


def _nvcc_from_setting(setting: str) -> Path:
    """Resolve the nvccPath setting; a directory may be the toolkit's `bin` or its root."""
    try:
        check_path(setting, "the nvccPath setting")
    except ValueError as exc:
        raise ToolchainError(f"{exc}; {INSTALL_HINT}") from None
    path = Path(setting).expanduser()
    if not path.exists():
        raise ToolchainError(f"the nvccPath setting points to {shown(str(path))}, which does not exist; "
                             f"fix the setting or clear it to use the installed toolkit ({INSTALL_HINT})")
    if path.is_dir():
        for candidate in (path / f"nvcc{_EXE}", path / "bin" / f"nvcc{_EXE}"):
            if _is_executable(candidate):
                return candidate
        raise ToolchainError(f"the nvccPath setting points to the directory {path}, which holds no nvcc "
                             f"(looked in {path} and {path / 'bin'})")
    if not _is_executable(path):
        raise ToolchainError(f"the nvccPath setting points to {path}, which is not an executable file")
    return path


def _search_candidates(searched: list[str]):
    """Yield (origin, nvcc path or None) in search order, recording a description of each place looked at."""
    searched.append("pip wheels via cuda-pathfinder")
    yield "cuda-pathfinder", _from_pathfinder()
    searched.append("PATH")
    found = shutil.which("nvcc")
    yield "PATH", Path(found) if found else None
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            searched.append(f"{var}={root}")
            yield "CUDA_HOME", _in_bin(Path(root))
    for root in DEFAULT_CUDA_ROOTS:
        searched.append(str(root))
        yield "CUDA_HOME", _in_bin(root)


def _from_pathfinder() -> Path | None:
    """nvcc from NVIDIA's pip wheels; results outside site-packages are left to the later search steps."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility  # lazy import: optional (the cuda extra)
    except ImportError:
        return None
    try:
        found = find_nvidia_binary_utility("nvcc")
    except Exception:  # noqa: BLE001 - a broken optional locator must not stop the other search steps
        return None
    if not found:
        return None
    parts = Path(found).parts
    if "site-packages" not in parts and "dist-packages" not in parts:
        return None
    return Path(found)


def _in_bin(root: Path) -> Path | None:
    """`root/bin/nvcc` when it is an executable file."""
    candidate = root / "bin" / f"nvcc{_EXE}"
    return candidate if _is_executable(candidate) else None


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _toolchain(nvcc: Path, origin: str) -> Toolchain:
    """Pair nvcc with the ptxas of the same toolkit (a ptxas from another release rejects newer PTX)."""
    ptxas = nvcc.parent / f"ptxas{_EXE}"
    if not _is_executable(ptxas):
        raise ToolchainError(f"found nvcc at {nvcc} ({origin}) but no ptxas next to it at {ptxas}; "
                             f"the toolkit is incomplete: {INSTALL_HINT}")
    return Toolchain(nvcc=nvcc, ptxas=ptxas, version=toolkit_version(nvcc), origin=origin)
