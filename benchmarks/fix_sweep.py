"""Do Kerncast's fixes keep their promise on real code? Every fix offered on code bases on disk, applied and checked.

For each `.cu` file below the given directories, the file is analysed; then every fix with edits that any
finding offers (safe, unsafe, and snippets too) is applied on its own to the file's text, and that text is
compiled and analysed again at the file's own path, as the editor's unsaved text, so that its includes, its
includers and its `main()` resolve as before. Nothing is written, except a fragment compiled through the file
that #includes it, which is written in place and put back: run it on scratch checkouts. The check is
`analysis.fixing`'s, the one `kerncast analyze --fix` makes before it keeps a fix: the finding is gone, nvcc
says nothing new, and no other finding appears. It prints how many fixes of each kind were offered and how
many kept their promise, and one line per broken promise.

    nice .venv/bin/python benchmarks/fix_sweep.py /tmp/corpus/cuda-samples /tmp/corpus/rodinia \\
        [-I /tmp/corpus/cuda-samples/Common] [--gpu h100] [--jobs 2] [--json OUT]

Fetches nothing: give it checkouts of public CUDA code (NVIDIA's cuda-samples, Rodinia).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kerncast.analysis.finding import Finding, Fix
from kerncast.analysis.fixing import OverlappingEdits, apply_edits, broken_promises, trial_analysis
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.report import FileReport


@dataclass(slots=True)
class Tried:
    """One fix applied on one file."""

    file: str
    line: int
    code: str
    kind: str
    applicability: str
    kernel: str | None
    problems: list[str] = field(default_factory=list)


def sweep_file(path: str, options: AnalysisOptions) -> list[Tried]:
    """Every fix offered on one file, each applied alone to the original text and checked."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # `--fix` leaves such files alone too
    out = []
    analyse = trial_analysis(p, options)
    before = analyse(text)
    for finding in before.all_findings():
        for fix in finding.fixes():
            if fix.edits:
                out.append(_try(analyse, text, before, finding, fix, path))
    return out


def _try(analyse: Callable[[str], FileReport], text: str, before: FileReport, finding: Finding, fix: Fix,
         path: str) -> Tried:
    """One fix applied alone to the original text, analysed and checked."""
    tried = Tried(path, finding.line, str(finding.code), str(fix.kind), fix.applicability, finding.kernel)
    try:
        tried.problems = broken_promises(before, analyse(apply_edits(text, fix.edits)), finding, fix)
    except OverlappingEdits as exc:
        tried.problems = [str(exc)]
    except Exception:  # a crash is a finding of this sweep, not a reason to stop it
        tried.problems = ["crash: " + traceback.format_exc(limit=3)]
    return tried


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="code base directories (already on disk)")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[], help="extra include directory")
    ap.add_argument("--gpu", default="h100", help="GPU profile the files are analysed for (default h100)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--json", type=Path, default=None, help="also write every tried fix to this file")
    args = ap.parse_args(argv)
    files = sorted(str(f) for d in args.dirs for f in d.rglob("*.cu") if f.is_file())
    options = AnalysisOptions(gpu=args.gpu, include_dirs=[str(d) for d in args.include_dirs], lime=False)
    with ProcessPoolExecutor(args.jobs) as pool:
        tried = [t for ts in pool.map(sweep_file, files, [options] * len(files)) for t in ts]
    offered = Counter((t.kind, t.applicability) for t in tried)
    kept = Counter((t.kind, t.applicability) for t in tried if not t.problems)
    print(f"{len(files)} files, {len(tried)} fixes applied, {sum(kept.values())} kept their promise")
    for key in sorted(offered):
        print(f"  {key[0]} ({key[1]}): {kept[key]} of {offered[key]}")
    for t in tried:
        if t.problems:
            print(f"{t.file}:{t.line}: {t.kind} for {t.code}" + (f" in {t.kernel}" if t.kernel else "")
                  + ": " + "; ".join(p.splitlines()[0][:300] for p in t.problems))
    if args.json:
        args.json.write_text(json.dumps([asdict(t) for t in tried], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
