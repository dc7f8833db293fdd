"""The statically decided rules on real code: every finding of the chosen codes over public CUDA code bases.

Fetches nothing. Give it directories (checkouts of e.g. NVIDIA's cuda-samples and Rodinia); it analyses a
seeded sample of the `.cu` files below each that define a kernel (the whole pipeline, for one GPU profile)
and writes every finding of the chosen codes, with the source line it sits on and its related lines, so that a
reader can judge each one by hand. It prints per code: files analysed, files that did not compile, findings,
and the wall time; `--out` writes the findings as JSON lines for the review.

    nice .venv/bin/python benchmarks/rule_sweep.py /tmp/corpus/cuda-samples /tmp/corpus/rodinia \\
        [--codes launch-configuration,barrier-divergence] [--gpu h100] [--max-files 40] [--seed 1]
        [--budget 140] [--out findings.jsonl] [--containing __syncthreads] [--include DIR ...]

Include directories: each file's own directory, plus every directory named `common`, `Common`, `inc` or
`include` within three levels of the code base root (cuda-samples' `Common/`), plus each `--include` (a
library's headers kept outside the swept folder, e.g. CUTLASS's `include/` and `tools/util/include/` for its
`examples/`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

DEFAULT_CODES = ("launch-configuration", "barrier-divergence", "local-memory", "fp64-in-fp32", "slow-integer-division",
                 "shared-tiling")
_INCLUDE_NAMES = {"common", "Common", "inc", "include"}


def include_dirs(root: Path) -> list[str]:
    """The shared header directories of a code base, within three levels of its root."""
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_dir() and p.name in _INCLUDE_NAMES and len(p.relative_to(root).parts) <= 3:
            out.append(str(p))
    return out


def kernel_files(root: Path, must_contain: str = "") -> list[Path]:
    """The `.cu` files below `root` that define a kernel (and contain `must_contain`)."""
    out = []
    for p in sorted(root.rglob("*.cu")):
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
            if "__global__" in text and must_contain in text:
                out.append(p)
        except OSError:
            continue
    return out


def _line(lines: list[str], n: int | None) -> str:
    return lines[n - 1].strip() if n and 1 <= n <= len(lines) else ""


def sweep(roots: list[Path], codes: set[str], gpu: str, max_files: int, seed: int, budget: float,
          out: Path | None, must_contain: str = "", extra_includes: list[str] | None = None) -> int:
    start = time.monotonic()
    counts: Counter[str] = Counter()
    files = failed = 0
    sink = out.open("w", encoding="utf-8") if out is not None else None
    try:
        for root in roots:
            candidates = kernel_files(root, must_contain)
            random.Random(seed).shuffle(candidates)
            # no LIME weights: no finding depends on them, and they took most of each analysis
            options = AnalysisOptions(gpu=gpu, include_dirs=include_dirs(root) + list(extra_includes or ()), lime=False)
            root_start = time.monotonic()
            for path in candidates[:max_files]:
                if time.monotonic() - root_start > budget:
                    print(f"{root}: time budget of {budget:.0f} s reached", file=sys.stderr)
                    break
                report = analyze_file(path, options=options)
                files += 1
                if not report.ok:
                    failed += 1
                    continue
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
                for f in report.all_findings():
                    if f.code not in codes or f.file is not None:
                        continue
                    counts[f.code] += 1
                    if sink is not None:
                        row = {"code": f.code, "severity": f.severity, "file": str(path.relative_to(root.parent)),
                               "line": f.line, "kernel": f.kernel, "message": f.message, "source": _line(lines, f.line),
                               "related": [{"line": r.line, "source": _line(lines, r.line)} for r in f.related]}
                        sink.write(json.dumps(row) + "\n")
    finally:
        if sink is not None:
            sink.close()
    print(f"files analysed: {files} ({failed} did not compile); wall {time.monotonic() - start:.0f} s")
    for code in sorted(codes):
        print(f"{code}: {counts[code]} findings")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--codes", default=",".join(DEFAULT_CODES))
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--max-files", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=140.0,
                    help="seconds per code base; its files after it are not started")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--containing", default="", help="only files whose text contains this (e.g. __syncthreads)")
    ap.add_argument("--include", action="append", default=[], metavar="DIR",
                    help="a further include directory for every file (repeatable)")
    args = ap.parse_args(argv)
    missing = [str(r) for r in args.roots if not r.is_dir()]
    if missing:
        print(f"not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    return sweep(args.roots, {c.strip() for c in args.codes.split(",") if c.strip()}, args.gpu, args.max_files,
                 args.seed, args.budget, args.out, args.containing, [str(Path(d).resolve()) for d in args.include])


if __name__ == "__main__":
    raise SystemExit(main())
