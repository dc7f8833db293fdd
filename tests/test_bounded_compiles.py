"""Hostile inputs cost a message, not the machine: every compile runs under a memory limit and a timeout, inputs
are read only when they are regular files (also behind a link) and under a size cap, and a compile that failed
for a reason that says nothing about the code (a signal, the memory limit, a missing tool) is never cached.

Real processes throughout: the CLI in a subprocess, real nvcc, real FIFOs and device links, real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kerncast.analysis import toolchain
from kerncast.analysis.compile import CompileOptions, clear_cache, compile_cuda
from kerncast.analysis.input_files import InputRefused, InputTooLarge, read_regular_file
from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import PTXAS_STOPPED, analyze_file
from kerncast.analysis.toolchain import (
    COMPILE_SLOTS,
    MIN_COMPILE_MEMORY_MB,
    ToolchainError,
    default_compile_memory_mb,
    machine_memory_mb,
    run_tool,
)
from processes import descendants

REPO = Path(__file__).resolve().parent.parent
TRANSPOSE = REPO / "examples" / "transpose.cu"
#: each hostile case must end well before this (the issue's bound is 30 s; the subprocess is killed after it)
LIMIT_S = 60


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", *args], capture_output=True,
                          text=True, timeout=LIMIT_S, cwd=REPO)


def object_bomb(levels: int = 40) -> str:
    lines = ["#define A0 x x", *(f"#define A{i} A{i - 1} A{i - 1}" for i in range(1, levels + 1))]
    return "\n".join([*lines, f"int v = A{levels};", "__global__ void k() {}", ""])


def function_bomb(levels: int = 20) -> str:
    """Each level doubles twice through function-like macros, which the preflight scan does not count: only the
    memory limit stops it."""
    lines = ["#define F0(x) x x", *(f"#define F{i}(x) F{i - 1}(F{i - 1}(x))" for i in range(1, levels + 1))]
    return "\n".join([*lines, f"int v = F{levels}(1);", "__global__ void k() {}", ""])


# ------------------------------------------------------------------------------------------ reading inputs


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.cu"
    os.mkfifo(fifo)
    with pytest.raises(InputRefused, match=r"named pipe \(FIFO\)"):
        read_regular_file(fifo, 1 << 20)  # opened with O_NONBLOCK: returns at once, no writer needed


def test_a_link_to_a_device_is_refused_and_named(tmp_path: Path) -> None:
    link = tmp_path / "zero.cu"
    link.symlink_to("/dev/zero")
    with pytest.raises(InputRefused, match=r"a link to /dev/zero\) is a character device"):
        read_regular_file(link, 1 << 20)


def test_a_file_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.ptx"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(InputTooLarge) as info:
        read_regular_file(big, 1024)
    assert info.value.size == 2048 and info.value.limit == 1024
    assert read_regular_file(big, 2048) == b"x" * 2048


@pytest.mark.parametrize("name", ["pipe.cu", "pipe.ptx"])
def test_cli_refuses_a_fifo_source(tmp_path: Path, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    proc = run_cli(str(fifo))
    assert proc.returncode == 1
    assert f"cannot read {fifo}: {fifo} is a named pipe (FIFO): Kerncast reads only regular files" in proc.stderr


@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_fix_and_diff_refuse_a_fifo_without_blocking(tmp_path: Path, mode: str) -> None:
    fifo = tmp_path / "pipe.cu"
    os.mkfifo(fifo)
    proc = run_cli(str(fifo), mode)
    assert proc.returncode == 1
    assert f"kerncast: {fifo}: not fixed: {fifo} is a named pipe (FIFO): Kerncast reads only regular files" \
        in proc.stderr


def test_cli_refuses_a_source_that_links_to_dev_zero(tmp_path: Path) -> None:
    link = tmp_path / "zero.cu"
    link.symlink_to("/dev/zero")
    proc = run_cli(str(link))
    assert proc.returncode == 1
    assert "(a link to /dev/zero) is a character device: Kerncast reads only regular files" in proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "device-link"])
def test_cli_refuses_a_gpu_profile_that_is_not_a_regular_file(nvcc_available, tmp_path: Path, kind: str) -> None:
    profile = tmp_path / "mine.toml"
    if kind == "fifo":
        os.mkfifo(profile)
    else:
        profile.symlink_to("/dev/zero")
    proc = run_cli(str(TRANSPOSE), "--gpu", str(profile))
    assert proc.returncode != 0
    assert "Kerncast reads only regular files" in proc.stdout + proc.stderr


def test_a_header_that_links_to_a_device_is_refused_before_nvcc(nvcc_available, tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "zero.h").symlink_to("/dev/zero")
    (tmp_path / "inc" / "wrap.h").write_text('#pragma once\n#include "zero.h"\n')
    src = tmp_path / "k.cu"
    src.write_text('#include <cuda_runtime.h>\n#include "inc/wrap.h"\n__global__ void k() {}\n')
    result = compile_cuda(src, options=CompileOptions(arch="sm_75"))
    (error,) = [d for d in result.diagnostics if d.severity == "error"]
    assert (error.line, error.column) == (2, 10)  # on the source's #include that leads there
    assert "zero.h" in error.message and "a link to /dev/zero" in error.message
    assert "character device" in error.message and "included by" in error.message


@pytest.mark.parametrize("spelled", ["<pipe.h>", '"pipe.h"', "</dev/zero>"])
def test_an_include_of_a_fifo_or_of_a_device_in_brackets_is_refused(nvcc_available, tmp_path: Path,
                                                                    spelled: str) -> None:
    os.mkfifo(tmp_path / "pipe.h")
    src = tmp_path / "k.cu"
    src.write_text(f"#include {spelled}\n__global__ void k() {{}}\n")
    result = compile_cuda(src, options=CompileOptions(arch="sm_75", include_dirs=[str(tmp_path)]))
    (error,) = result.diagnostics
    kind = "a character device" if "dev" in spelled else "a named pipe (FIFO)"
    assert (error.line, error.column) == (1, 10) and f"which is {kind}, not a source file" in error.message


# ------------------------------------------------------------------------------------------ through the CLI


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_cli_include_of_a_device_is_a_message_on_its_line(nvcc_available, tmp_path: Path, device: str) -> None:
    src = tmp_path / "dev.cu"
    src.write_text(f'// reads a device\n#include "{device}"\n__global__ void k() {{}}\n')
    proc = run_cli(str(src))
    assert proc.returncode == 1
    assert f'{src}:2:10: error: not compiled: #include "{device}" names {device}, which is a character device' \
        in proc.stderr


def test_cli_macro_bomb_is_refused_before_nvcc(nvcc_available, tmp_path: Path) -> None:
    src = tmp_path / "bomb.cu"
    src.write_text(object_bomb())
    proc = run_cli(str(src))
    assert proc.returncode == 1
    assert f"{src}:41:1: error: not compiled: macro A40 expands to more than" in proc.stderr


def test_an_unused_bomb_and_ordinary_macros_compile(nvcc_available, tmp_path: Path) -> None:
    src = tmp_path / "defined.cu"
    src.write_text(object_bomb().replace("int v = A40;\n", "") + "#define N 4\n#define M (N * N)\nint w = M;\n")
    result = compile_cuda(src, options=CompileOptions(arch="sm_75"))
    assert result.ok, [d.message for d in result.diagnostics]


def test_cli_function_macro_bomb_hits_the_memory_limit(nvcc_available, tmp_path: Path) -> None:
    src = tmp_path / "fbomb.cu"
    src.write_text(function_bomb())
    proc = run_cli(str(src), "--compile-memory-mb", "512")
    assert proc.returncode == 1
    assert "nvcc ran out of its 256 MiB share of the 512 MiB compile memory limit (compileMemoryMB" in proc.stderr


def test_cli_refuses_a_memory_limit_below_the_minimum() -> None:
    proc = run_cli(str(TRANSPOSE), "--compile-memory-mb", "10")
    assert proc.returncode == 2
    assert "compile memory limit 10 rejected" in proc.stderr


def test_the_default_limit_is_a_share_of_the_machine() -> None:
    total = machine_memory_mb()
    assert total is not None
    assert default_compile_memory_mb() == max(MIN_COMPILE_MEMORY_MB, min(4096, total // 2))


def test_the_memory_limit_reaches_the_tool_s_children() -> None:
    """RLIMIT_AS is set in the child before exec, so every process the tool starts inherits it."""
    run = run_tool(["/bin/sh", "-c", "ulimit -v"], 10, memory_mb=600)
    assert run.returncode == 0 and run.stdout.strip() == str(600 // COMPILE_SLOTS * 1024)


def test_the_memory_limit_holds_without_prlimit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where util-linux's `prlimit` is missing, a Python launcher sets the limit and executes the tool."""
    monkeypatch.setattr(toolchain, "limit_wrapper", lambda: None)
    run = run_tool(["/bin/sh", "-c", "ulimit -v"], 10, memory_mb=600)
    assert run.returncode == 0 and run.stdout.strip() == str(600 // COMPILE_SLOTS * 1024)


@pytest.mark.parametrize("wrapped", [True, False], ids=["prlimit", "python-launcher"])
def test_a_tool_that_cannot_start_is_a_toolchain_error(wrapped: bool, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing or non-executable tool is "cannot run ...", whether `prlimit` or the Python launcher starts
    it."""
    if not wrapped:
        monkeypatch.setattr(toolchain, "limit_wrapper", lambda: None)
    elif toolchain.limit_wrapper() is None:
        pytest.skip("util-linux's prlimit is not installed here")
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    for tool, why in ((str(tmp_path / "missing-tool"), "No such file"), (str(plain), "Permission denied")):
        with pytest.raises(ToolchainError, match=f"cannot run {tool}: {why}"):
            run_tool([tool], 10, memory_mb=600)


def test_no_more_tools_run_at_once_than_their_shares_of_the_limit_allow(tmp_path: Path) -> None:
    """The limit holds for the process's compiles together: each gets 1/COMPILE_SLOTS of it as address space,
    and a further one waits for a slot. Each run writes its start and its end to one log; read back in order,
    no more than COMPILE_SLOTS are ever running."""
    log = tmp_path / "log"
    script = f'echo "start $(ulimit -v)" >> {log}; sleep 0.3; echo end >> {log}'
    with ThreadPoolExecutor(max_workers=COMPILE_SLOTS + 2) as pool:
        runs = list(pool.map(lambda _: run_tool(["/bin/sh", "-c", script], 30, memory_mb=1024),
                             range(COMPILE_SLOTS + 2)))
    assert all(r.returncode == 0 and r.memory_mb == 1024 // COMPILE_SLOTS for r in runs)
    running, most = 0, 0
    for line in log.read_text().splitlines():
        if line.startswith("start"):
            assert line == f"start {1024 // COMPILE_SLOTS * 1024}"
            running += 1
        else:
            running -= 1
        most = max(most, running)
    assert most == COMPILE_SLOTS


def test_cli_workers_share_the_memory_limit(nvcc_available, tmp_path: Path) -> None:
    """`-j 3` with a 1024 MiB limit: two workers (each needs MIN_COMPILE_MEMORY_MB), each compile a quarter."""
    for name in ("a.cu", "b.cu", "c.cu"):
        (tmp_path / name).write_text(function_bomb())
    proc = run_cli(str(tmp_path), "-j", "3", "--compile-memory-mb", "1024")
    assert proc.returncode == 1
    assert "kerncast: 2 workers instead of 3: each needs 512 MiB of the 1024 MiB compile memory limit" in proc.stderr
    assert proc.stderr.count("nvcc ran out of its 256 MiB share of the 512 MiB compile memory limit") == 3


# ------------------------------------------------------------------------------------------ nothing transient is cached


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_compile_killed_mid_way_is_not_cached_and_the_next_call_compiles(nvcc_available, tmp_path: Path) -> None:
    clear_cache()
    src = tmp_path / "transpose.cu"
    src.write_bytes(TRANSPOSE.read_bytes())
    options = CompileOptions(arch="sm_75")
    results = []
    worker = threading.Thread(target=lambda: results.append(compile_cuda(src, options=options)))
    worker.start()
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and worker.is_alive() and time.monotonic() < deadline:
        for pid in descendants(os.getpid()):
            if "cicc" in _command(pid) or "cudafe" in _command(pid):  # a stage of nvcc, mid-compile
                os.kill(pid, signal.SIGKILL)
                killed = pid
                break
        time.sleep(0.005)
    worker.join(120)
    assert killed is not None, "no nvcc stage was seen to kill"
    (first,) = results
    assert not first.ok
    assert any("died due to signal" in d.message and "nothing is cached" in d.message for d in first.diagnostics), \
        [d.message for d in first.diagnostics]
    second = compile_cuda(src, options=options)  # the same unchanged file: compiled again, not the failure
    assert second.ok and second.ptx and ".entry" in second.ptx


def _path_with(tmp_path: Path, name: str, script: str | None) -> str:
    """A PATH of one folder holding `gcc`, `g++`, `cc` and `c++` as `script` (none when None)."""
    folder = tmp_path / name
    folder.mkdir()
    if script is not None:
        for compiler in ("gcc", "g++", "cc", "c++"):
            path = folder / compiler
            path.write_text(script)
            path.chmod(0o755)
    return str(folder)


def test_a_missing_host_compiler_then_installed_works_on_the_same_file(nvcc_available, tmp_path: Path,
                                                                       monkeypatch) -> None:
    clear_cache()
    src = tmp_path / "host.cu"
    src.write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    options = CompileOptions(arch="sm_75", nvcc_path=str(nvcc_available.nvcc))
    real_path = os.environ["PATH"]
    monkeypatch.setenv("PATH", _path_with(tmp_path, "no-gcc", None))
    with pytest.raises(ToolchainError, match="apt-get install g"):
        compile_cuda(src, options=options)
    monkeypatch.setenv("PATH", real_path)  # g++ "installed"
    result = compile_cuda(src, options=options)
    assert result.ok, [d.message for d in result.diagnostics]


def test_a_host_compiler_killed_during_nvcc_s_probe_does_not_say_install_gpp(nvcc_available, tmp_path: Path,
                                                                            monkeypatch) -> None:
    """nvcc first runs the host compiler to learn its properties; killed there (by a signal), the compile fails
    with what happened, without telling the user to install g++ (it is installed), and is not cached."""
    clear_cache()
    src = tmp_path / "probe.cu"
    src.write_text("__global__ void k(float *x) { x[threadIdx.x] = 2.0f; }\n")
    options = CompileOptions(arch="sm_75", nvcc_path=str(nvcc_available.nvcc))
    real_path = os.environ["PATH"]
    monkeypatch.setenv("PATH", _path_with(tmp_path, "killed-gcc", "#!/bin/sh\nkill -9 $$\n"))
    first = compile_cuda(src, options=options)
    assert not first.ok
    messages = " ".join(d.message for d in first.diagnostics)
    assert "died due to signal 9" in messages and "nothing is cached" in messages
    assert "install g++" not in messages
    monkeypatch.setenv("PATH", real_path)
    second = compile_cuda(src, options=options)
    assert second.ok, [d.message for d in second.diagnostics]


def test_a_compile_over_the_memory_limit_is_not_cached(nvcc_available, tmp_path: Path) -> None:
    clear_cache()
    src = tmp_path / "fbomb.cu"
    src.write_text(function_bomb())
    first = compile_cuda(src, options=CompileOptions(arch="sm_75", memory_mb=600))
    assert [d.message for d in first.diagnostics] == [
        "nvcc ran out of its 300 MiB share of the 600 MiB compile memory limit (compileMemoryMB, "
        "--compile-memory-mb; each of the compiles that may run at once gets an equal share); the file, or a header "
        "or macro it uses, needs more than that"]
    again = compile_cuda(src, options=CompileOptions(arch="sm_75", memory_mb=600))
    assert again is not first and not again.ok  # compiled again: a cached result is the same object


def test_kernels_left_without_ptxas_numbers_by_a_stopped_ptxas_are_not_kept(tmp_path: Path, compile_example) -> None:
    """ptxas stopped by its time limit (a signal or the memory limit likewise) leaves registers unknown for now:
    those kernel reports stay out of the kernel cache, so the next analysis asks ptxas again."""
    ptx = compile_example("transpose").ptx
    path = tmp_path / "transpose.ptx"
    cache = KernelCache()
    stopped = analyze_file(path, text=ptx, options=AnalysisOptions(gpu="v100", lime=False, timeout_s=0.001),
                           cache=cache)
    assert any(n.startswith(PTXAS_STOPPED) for n in stopped.notes), stopped.notes
    assert all(k.registers is None for k in stopped.kernels) and len(stopped.kernels) == 3
    assert len(cache) == 0
    finished = analyze_file(path, text=ptx, options=AnalysisOptions(gpu="v100", lime=False), cache=cache)
    assert all(k.registers for k in finished.kernels) and len(cache) == 3  # a lasting answer is kept
