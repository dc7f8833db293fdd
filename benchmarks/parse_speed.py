"""Time the PTX front end: parse + CFG + loops + dependence DAGs of a PTX file of about 10,000 instructions.

The PTX is real nvcc output: a kernel whose constant-trip loop nvcc fully unrolls, compiled from a .cu this
script writes. Prints instruction count and the median time over several runs.

    .venv/bin/python benchmarks/parse_speed.py [--instructions 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.deps import all_dependences
from kerncast.analysis.loops import find_loops
from kerncast.analysis.ptx import parse_ptx

KERNEL = """
__global__ void unrolled(const float *a, const float *b, float *out, int stride)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < {trips}; ++k) {{
        acc += a[i + k * stride] * b[k] + (float)(k & 7);
    }}
    for (int j = 0; j < stride; ++j) {{
        acc *= 0.5f;
    }}
    out[i] = acc;
}}
"""


def build_ptx(trips: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "unrolled.cu"
        src.write_text(KERNEL.format(trips=trips))
        result = compile_cuda(src, options=CompileOptions(arch="sm_80"))
    if not result.ok or result.ptx is None:
        sys.exit(f"nvcc failed: {result.diagnostics}")
    return result.ptx


def analyse(ptx: str) -> int:
    module = parse_ptx(ptx)
    count = 0
    for fn in module.functions:
        cfg = build_cfg(fn)
        find_loops(cfg)
        all_dependences(cfg)
        count += len(fn.body)
    return count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    trips = max(1, args.instructions // 5)
    ptx = build_ptx(trips)
    while (n := analyse(ptx)) < args.instructions:
        trips = int(trips * args.instructions / n) + 1
        ptx = build_ptx(trips)
    samples = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        analyse(ptx)
        samples.append(time.perf_counter() - t0)
    print(f"PTX: {len(ptx) / 1024:.0f} KiB, {n} instructions")
    print(f"parse + CFG + loops + dependence DAGs: median {statistics.median(samples) * 1000:.1f} ms, "
          f"min {min(samples) * 1000:.1f} ms over {args.repeat} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
