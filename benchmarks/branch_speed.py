"""How the memory analysis scales with guarded branches: PTX with N `@%p bra` (each skipping one store).

Every branch is the `if (threadIdx.x < k) out[tid] = k;` shape nvcc emits, nested one after the other, so
the dominator tree is a chain N deep: an analysis that walks that chain per block is quadratic. Prints, per
N, the seconds of `analyze_memory` (best of a few runs), its deterministic work counter and whether it hit
the time budget. The target is 1,000 branches in under 1 s.

    .venv/bin/python benchmarks/branch_speed.py [N ...]
"""

from __future__ import annotations

import sys
import time

from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import Thresholds
from kerncast.analysis.ptx import parse_ptx

REPEAT = 3


def guarded_branches_ptx(n: int) -> str:
    """A kernel of `n` guarded branches, each around one global store: `if (tid >= k % 64) out[tid] = k`."""
    lines = [".version 7.0", ".target sm_75", ".address_size 64", "",
             ".visible .entry guarded(.param .u64 out, .param .u32 n)", "{",
             f"  .reg .pred %p<{n + 2}>;", "  .reg .b32 %r<8>;", "  .reg .b64 %rd<8>;",
             "  ld.param.u64 %rd1, [out];", "  cvta.to.global.u64 %rd2, %rd1;",
             "  mov.u32 %r1, %tid.x;", "  mul.wide.u32 %rd3, %r1, 4;", "  add.s64 %rd4, %rd2, %rd3;"]
    for i in range(n):
        lines += [f"  setp.ge.u32 %p{i + 1}, %r1, {i % 64};", f"  @%p{i + 1} bra L{i};",
                  f"  st.global.u32 [%rd4], {i};", f"L{i}:"]
    lines += ["  ret;", "}"]
    return "\n".join(lines) + "\n"


def measure(n: int, block: tuple[int, int, int] | None = (256, 1, 1)) -> tuple[float, int, int]:
    """(best seconds, work units, skipped instructions) of the memory analysis of `n` guarded branches."""
    module = parse_ptx(guarded_branches_ptx(n))
    fn = module.kernels[0]
    best, work, skipped = float("inf"), 0, 0
    for _ in range(REPEAT):
        cfg = build_cfg(fn)
        loops = find_loops(cfg)
        start = time.perf_counter()
        result = analyze_memory(module, fn, cfg, loops, block, {}, {}, Thresholds())
        best = min(best, time.perf_counter() - start)
        work, skipped = result.work, result.skipped
    return best, work, skipped


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [100, 400, 1000, 2000]
    print(f"{'branches':>8} {'block':>7} {'seconds':>8} {'work':>8} {'skipped':>8}")
    for n in sizes:
        for block in ((256, 1, 1), None):
            s, work, skipped = measure(n, block)
            print(f"{n:>8} {'256' if block else 'unknown':>7} {s:>8.3f} {work:>8} {skipped:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
