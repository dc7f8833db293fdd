"""Snapshots of Kerncast's JSON reports, and their comparison: the check that a change meant to keep behaviour
(a module moved, a type renamed) leaves every report byte-identical.

    nice .venv/bin/python benchmarks/report_snapshot.py write OUT PATH... [--gpu v100] [--sample N] [--jobs 2]
    .venv/bin/python benchmarks/report_snapshot.py compare BEFORE AFTER

`write` analyses every `.cu`/`.ptx` file named or found below each PATH (a folder gives at most `--sample` of its
files, taken at an even stride through its sorted listing, so that the same files are chosen each time) and
writes each report's strict JSON (`kerncast analyze --format json`'s form of one file) to OUT, one file per
input, named by the input's path. Two settings take out what varies from one run to the next by nature rather
than by the code: the memory stage's time budget is raised far past any kernel's need (its 2 s default makes an
`analysis-budget` finding depend on the machine's load), and LIME's sampled explanation is off (the exact
contributions stay). Nothing else is left out.

`compare` lists the inputs whose report differs (with the first differing line), or is missing from one side,
and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.strict_json import dumps_strict

SUFFIXES = (".cu", ".ptx")
#: far beyond any kernel's memory analysis, so that the budget never decides a report
UNBOUNDED_BUDGET_S = 1e6


def inputs(paths: list[Path], sample: int) -> list[Path]:
    """The files to analyse: each file given, and up to `sample` files of each folder given, evenly spread."""
    out: list[Path] = []
    for path in paths:
        if path.is_file():
            out.append(path)
            continue
        found = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        step = max(1, len(found) // sample) if sample > 0 else 1
        out.extend(found[::step][:sample] if sample > 0 else found)
    return out


def snapshot_name(path: Path) -> str:
    """A file name for the report of `path`: readable, and unique through a hash of the whole path."""
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"{path.name}.{digest}.json"


def report_json(path: Path, gpu: str) -> str:
    """The strict JSON of the report of one file, as `kerncast analyze --format json` prints it."""
    options = AnalysisOptions(gpu=gpu, budget_s=UNBOUNDED_BUDGET_S, lime=False,
                              include_dirs=[str(path.parent)])
    return dumps_strict(analyze_file(path, options=options).to_json()) + "\n"


def _write_one(job: tuple[Path, Path, str]) -> str:
    path, out, gpu = job
    (out / snapshot_name(path)).write_text(report_json(path, gpu), encoding="utf-8")
    return str(path)


def write(out: Path, paths: list[Path], gpu: str, sample: int, jobs: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    files = inputs([p.resolve() for p in paths], sample)
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        for done in pool.map(_write_one, [(p, out, gpu) for p in files]):
            print(done, flush=True)
    (out / "INPUTS").write_text("".join(f"{p}\n" for p in files), encoding="utf-8")
    print(f"{len(files)} reports written to {out}")
    return 0


def compare(before: Path, after: Path) -> int:
    names_before = {p.name for p in before.glob("*.json")}
    names_after = {p.name for p in after.glob("*.json")}
    problems = [f"only in {before}: {n}" for n in sorted(names_before - names_after)]
    problems += [f"only in {after}: {n}" for n in sorted(names_after - names_before)]
    same = 0
    for name in sorted(names_before & names_after):
        a = (before / name).read_bytes()
        b = (after / name).read_bytes()
        if a == b:
            same += 1
            continue
        diff = difflib.unified_diff(a.decode().splitlines(), b.decode().splitlines(), lineterm="", n=0)
        first = next((line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")), "")
        problems.append(f"differs: {name}: {first[:300]}")
    for line in problems:
        print(line)
    total = len(names_before | names_after)
    print(f"{same} of {total} reports byte-identical; {len(problems)} differ or are missing")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="analyse the files and write their JSON reports to OUT")
    w.add_argument("out", type=Path)
    w.add_argument("paths", nargs="+", type=Path)
    w.add_argument("--gpu", default=AnalysisOptions().gpu)
    w.add_argument("--sample", type=int, default=40, help="files per folder given (0: all)")
    w.add_argument("--jobs", type=int, default=2)
    c = sub.add_parser("compare", help="compare two snapshot folders byte for byte")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "write":
        return write(args.out, args.paths, args.gpu, args.sample, args.jobs)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
