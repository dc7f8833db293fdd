"""How long the memory and divergence analysis takes per kernel, on every example and corpus kernel.

Compiles each `.cu` once (nvcc time is not counted), then times `analyze_memory` alone, best of several
runs per kernel, with the block shape of the file's first `// kerncast: block=` annotation or 256 threads.

    .venv/bin/python benchmarks/memory_speed.py [files...]
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx

ROOT = Path(__file__).resolve().parent.parent
REPEAT = 5


def _block(source: str) -> tuple[int, int, int]:
    m = re.search(r"kerncast:\s*block=([\d,]+)", source)
    dims = [int(x) for x in m.group(1).split(",")] if m else [256]
    return tuple((dims + [1, 1])[:3])  # type: ignore[return-value]


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or sorted([*ROOT.glob("examples/*.cu"), *ROOT.glob("tests/kernels/*.cu")])
    times: list[float] = []
    print(f"{'kernel':<48} {'instrs':>6} {'ms':>8}")
    for path in files:
        source = path.read_text()
        result = compile_cuda(path, options=CompileOptions(arch="sm_75"))
        if result.ptx is None:
            print(f"{path.name}: did not compile")
            continue
        module = parse_ptx(result.ptx)
        block = _block(source)
        for fn in module.kernels:
            cfg = build_cfg(fn)
            loops = find_loops(cfg)
            best = float("inf")
            for _ in range(REPEAT):
                t0 = time.perf_counter()
                analyze_memory(module, fn, cfg, loops, block, {}, {}, Thresholds(), cuda_source=source)
                best = min(best, time.perf_counter() - t0)
            times.append(best * 1e3)
            print(f"{path.name + ':' + fn.name:<48.48} {len(fn.body):>6} {best * 1e3:>8.2f}")
    if times:
        print(f"\n{len(times)} kernels: median {statistics.median(times):.2f} ms, max {max(times):.2f} ms, "
              f"total {sum(times):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
