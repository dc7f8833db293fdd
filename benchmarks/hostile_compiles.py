"""Hostile inputs through the command line and the language server: wall time, and the peak memory of the whole
process tree (Kerncast and every compiler process it starts), against the configured compile memory limit.

The cases are those a cloned repository can hold: `#include "/dev/zero"`, `#include "/dev/urandom"`, a 40-level
macro bomb, a `.cu` that is a link to `/dev/zero`, a FIFO named `pipe.cu`, a GPU profile that is a FIFO, and a
function-like macro bomb, which no scan before nvcc catches and only the memory limit stops, and two such bombs at
once (`analyze -j 2` on a folder; both opened together in the server), whose compiles share the limit. Each CLI
case runs in a fresh process; the tree's resident memory is summed over /proc every 10 ms while it runs.

    .venv/bin/python benchmarks/hostile_compiles.py [--memory-mb N] [--no-server]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fuzz_memory import RawClient  # the tests' raw JSON-RPC client, loaded once for the benchmarks
from kerncast.analysis.toolchain import default_compile_memory_mb

ROOT = Path(__file__).resolve().parent.parent
#: a case still running after this long is killed and reported as such
LIMIT_S = 120.0
POLL_S = 0.01


def object_bomb(levels: int = 40) -> str:
    lines = ["#define A0 x x", *(f"#define A{i} A{i - 1} A{i - 1}" for i in range(1, levels + 1))]
    return "\n".join([*lines, f"int v = A{levels};", "__global__ void k() {}", ""])


def function_bomb(levels: int = 20) -> str:
    lines = ["#define F0(x) x x", *(f"#define F{i}(x) F{i - 1}(F{i - 1}(x))" for i in range(1, levels + 1))]
    return "\n".join([*lines, f"int v = F{levels}(1);", "__global__ void k() {}", ""])


def make_cases(folder: Path) -> dict[str, tuple[Path, list[str]]]:
    """Case name -> (the file analysed, extra CLI arguments)."""
    cases: dict[str, tuple[Path, list[str]]] = {}
    for name, device in (("include-dev-zero", "/dev/zero"), ("include-dev-urandom", "/dev/urandom")):
        path = folder / f"{name}.cu"
        path.write_text(f'#include "{device}"\n__global__ void k() {{}}\n')
        cases[name] = (path, [])
    bomb = folder / "macro-bomb-40.cu"
    bomb.write_text(object_bomb())
    cases["macro-bomb-40-levels"] = (bomb, [])
    fbomb = folder / "function-macro-bomb.cu"
    fbomb.write_text(function_bomb())
    cases["function-macro-bomb"] = (fbomb, [])
    pair = folder / "two-bombs"
    pair.mkdir()
    for name in ("a.cu", "b.cu"):
        (pair / name).write_text(function_bomb())
    cases["two-function-macro-bombs-j2"] = (pair, ["-j", "2"])  # two workers, the limit shared between them
    link = folder / "zero.cu"
    link.symlink_to("/dev/zero")
    cases["cu-linked-to-dev-zero"] = (link, [])
    fifo = folder / "pipe.cu"
    os.mkfifo(fifo)
    cases["fifo-pipe.cu"] = (fifo, [])
    profile = folder / "gpu.toml"
    os.mkfifo(profile)
    cases["gpu-profile-fifo"] = (ROOT / "examples" / "transpose.cu", ["--gpu", str(profile)])
    return cases


# ------------------------------------------------------------------------------------------ the process tree


def _parents() -> dict[int, int]:
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            out[int(entry.name)] = int(stat[stat.rindex(b")") + 2:].split()[1])
    return out


def tree(root: int) -> list[int]:
    """`root` and every process below it."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass
class Peak:
    """The largest sum of the tree's RSS seen, the largest single process, and the most processes at once."""

    tree_mb: float = 0.0
    process_mb: float = 0.0
    processes: int = 0

    def sample(self, root: int, exclude_mb: float = 0.0) -> None:
        sizes = [rss_mb(pid) for pid in tree(root)]
        self.tree_mb = max(self.tree_mb, sum(sizes) - exclude_mb)
        self.process_mb = max(self.process_mb, max(sizes, default=0.0))
        self.processes = max(self.processes, len(sizes))


@dataclass
class Outcome:
    case: str
    via: str
    seconds: float
    exit_status: int | None
    peak_tree_mb: float
    peak_process_mb: float
    peak_processes: int
    message: str


# ------------------------------------------------------------------------------------------ the command line


def run_cli(case: str, path: Path, extra: list[str], memory_mb: int) -> Outcome:
    command = [sys.executable, "-m", "kerncast.server", "analyze", str(path), "--compile-memory-mb", str(memory_mb),
               *extra]
    with tempfile.TemporaryFile() as err:
        began = time.monotonic()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
        peak = Peak()
        while proc.poll() is None and time.monotonic() - began < LIMIT_S:
            peak.sample(proc.pid)
            time.sleep(POLL_S)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        seconds = time.monotonic() - began
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    lines = [ln for ln in stderr.splitlines() if "error" in ln] or stderr.splitlines() or ["(no message)"]
    return Outcome(case, "cli", round(seconds, 2), proc.returncode, round(peak.tree_mb), round(peak.process_mb),
                   peak.processes, lines[0][:240])


# ------------------------------------------------------------------------------------------ the language server


def run_server(cases: dict[str, tuple[Path, list[str]]], memory_mb: int) -> list[Outcome]:
    """Each readable case opened in one real server (its text sent, as an editor sends it) and saved; the tree's
    memory above the idle server's is what the compile cost."""
    server = RawClient()
    out = []
    try:
        server.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {},
            "initializationOptions": {"compileMemoryMB": memory_mb, "gpu": "v100"}}})
        server.wait(lambda m: m.get("id") == 1, 120)
        server.send({"method": "initialized", "params": {}})
        time.sleep(2)
        for case, (path, extra) in cases.items():
            if path.is_dir():  # every file of the folder opened at once: the server's analyses run side by side
                out.append(_open_at_once(server, case, sorted(path.glob("*.cu"))))
            elif not extra and path.is_file() and not path.is_symlink():
                # an editor cannot read a FIFO or a device to send its text; the CLI cases cover them
                out.append(_open_at_once(server, case, [path]))
            time.sleep(0.5)
    finally:
        server.close()
    return out


def _open_at_once(server: Any, case: str, paths: list[Path]) -> Outcome:
    """Open `paths` one right after the other and wait for each one's diagnostics; the tree's memory above the
    idle server's is what their compiles cost together."""
    pid = server.proc.pid
    idle = sum(rss_mb(p) for p in tree(pid))
    peak = Peak()
    began = time.monotonic()
    for path in paths:
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": path.as_uri(), "languageId": "cuda", "version": 1, "text": path.read_text()}}})
    waiting, message = {p.as_uri() for p in paths}, "(no diagnostics within the limit)"
    while waiting and time.monotonic() - began < LIMIT_S:
        peak.sample(pid, exclude_mb=idle)
        try:
            published = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                    and m["params"]["uri"] in waiting, POLL_S)
        except TimeoutError:
            continue
        waiting.discard(published["params"]["uri"])
        diagnostics = published["params"]["diagnostics"]
        message = diagnostics[0]["message"][:240] if diagnostics else "(no diagnostics)"
    seconds = time.monotonic() - began
    for path in paths:
        server.send({"method": "textDocument/didClose",
                     "params": {"textDocument": {"uri": path.as_uri()}}})
    return Outcome(case, "server", round(seconds, 2), None, round(peak.tree_mb), round(peak.process_mb),
                   peak.processes, message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memory-mb", type=int, default=default_compile_memory_mb(),
                        help="compile memory limit (default: Kerncast's default on this machine)")
    parser.add_argument("--no-server", action="store_true", help="the command line only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kerncast-hostile-") as tmp:
        cases = make_cases(Path(tmp))
        outcomes = [run_cli(case, path, extra, args.memory_mb) for case, (path, extra) in cases.items()]
        if not args.no_server:
            outcomes += run_server(cases, args.memory_mb)
    print(json.dumps({"compile_memory_mb": args.memory_mb, "cases": [asdict(o) for o in outcomes]}, indent=2))
    worst = max(o.peak_tree_mb for o in outcomes)
    slowest = max(o.seconds for o in outcomes)
    print(f"slowest case {slowest:.1f} s; largest process-tree peak {worst} MB "
          f"({'under' if worst < args.memory_mb else 'OVER'} the {args.memory_mb} MiB limit)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
