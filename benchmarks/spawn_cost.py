"""What starting a tool costs the process that starts it, the size of the language server after an analysis.

nvcc and ptxas run under an address-space limit (`toolchain.run_tool`). Setting that limit from Python between
fork and exec forbids vfork: the whole process (a few hundred MB once the power models are loaded) is forked,
and `Popen` returns only once the child has exec'd. `prlimit --as` sets the same limit in a process started with
vfork. This script loads what the server loads, analyses one file, then starts `/bin/true` alternately both
ways and through `run_tool`, and prints the median wall and CPU time of the start (`Popen` returning) per way.

    .venv/bin/python benchmarks/spawn_cost.py [--runs 30]
"""

from __future__ import annotations

import argparse
import functools
import resource
import statistics
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.toolchain import limit_wrapper, run_tool

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 2048 << 20


def _start(way: str) -> tuple[float, float]:
    """Wall and CPU seconds until the child runs, one way."""
    wall, cpu = time.perf_counter(), time.thread_time()
    if way == "run_tool":
        run_tool(["/bin/true"], 10)
        return time.perf_counter() - wall, time.thread_time() - cpu
    args, kw = ["/bin/true"], {}
    if way == "fork + preexec_fn":
        kw["preexec_fn"] = functools.partial(resource.setrlimit, resource.RLIMIT_AS, (LIMIT, LIMIT))
    else:
        args = [str(limit_wrapper()), f"--as={LIMIT}:{LIMIT}", "--", *args]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True, **kw)
    took = time.perf_counter() - wall, time.thread_time() - cpu
    proc.communicate()
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    analyze_file(ROOT / "benchmarks" / "data" / "kernels20.cu", options=replace(AnalysisOptions(), gpu="v100"))
    with open("/proc/self/statm") as f:
        rss_mb = int(f.read().split()[1]) * resource.getpagesize() >> 20
    ways = ["fork + preexec_fn", "run_tool"] + (["vfork + prlimit"] if limit_wrapper() else [])
    times: dict[str, list[tuple[float, float]]] = {w: [] for w in ways}
    for _ in range(args.runs):
        for way in ways:
            times[way].append(_start(way))
    print(f"process of {rss_mb} MB resident; start of /bin/true, median of {args.runs} (run_tool: the whole run)")
    for way, runs in times.items():
        print(f"{way:<20} wall {statistics.median(w for w, _ in runs) * 1e3:6.2f} ms, "
              f"CPU {statistics.median(c for _, c in runs) * 1e3:6.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
