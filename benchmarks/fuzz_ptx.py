"""Fuzzing the whole pipeline: mutated real PTX through the analysis and every output format.

The seeds are nvcc's own PTX for the repository's `.cu` files (examples/ and tests/kernels/), one kernel per
seed so that a case stays cheap. Each case applies a few mutations (line edits, token and byte insertions,
extreme integers, shift amounts and array sizes, deep operand nesting, an `exit;`-only body, repeated guarded
branches), analyses the text as a `.ptx` file, and writes the report as text, JSON and SARIF. A case is
counted as

- an uncaught exception: anything escaping `analyze_file` or a writer (a crash in a real session);
- over the limit: more than `SLOW_S` seconds for the case (measured, never asserted), counted by wall time
  and, separately, by CPU time (this process plus ptxas), since a shared machine stretches wall time;
- non-strict JSON: the JSON or SARIF text contains NaN/Infinity or does not parse with a strict parser.

Cases are numbered; case `i` of seed set `--seed N` is reproducible from those two numbers alone.

    nice -n 19 .venv/bin/python benchmarks/fuzz_ptx.py --cases 100000 [--start 0] [--out fuzz.json]

ptxas is a subprocess (tens of milliseconds), so by default only every `--ptxas-every`-th case runs it; the
others analyse without register figures, which the pipeline handles as a note.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import random
import re
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.strict_json import finite_copy
from kerncast.server.cmd_analyze import format_report

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the power model's predictions are tiny; threads only cost

ROOT = Path(__file__).resolve().parent.parent
SEED_SOURCES = ("examples", "tests/kernels")
SLOW_S = 10.0
#: a case still running after this long is stopped (and counted as over the limit)
HARD_STOP_S = 120
NO_TOOLCHAIN = "/nonexistent/kerncast-fuzz/nvcc"

FRAGMENTS = ["{", "}", ";", ",", "[", "]", "(", ")", "@", "!", "%r1", "%p1", "%rd1", "bra $L__BB0_1;", ".reg",
             ".b32", ".shared", ".loc 1 2 3", ".file 1 \"x.cu\"", "ld.global.f32", "0f3F800000", "0d7FF0000000000000",
             "-", "+", "<", ">", "|", "\"", "/*", "//", ".entry", ".func", "0x", "\n", "\t", "::", "9999999999",
             "%tid.x", "%ctaid.y", ".pred", "exit;", "ret;", "bar.sync 0;", ".maxntid 0, 0, 0"]
EXTREME_INTS = ["0", "-1", "1", "31", "32", "63", "64", "65", "2147483647", "2147483648", "4294967295",
                "4294967296", "9223372036854775807", "9223372036854775808", "18446744073709551615",
                "-9223372036854775808", "1000000000000000000000000000000", "0x7fffffffffffffff", "0xffffffff"]
_INT_RE = re.compile(r"(?<![\w%$.])-?(?:0[xX][0-9a-fA-F]+|\d+)(?![\w.])")
_ENTRY_RE = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.entry\s", re.MULTILINE)
_TYPES = [".u32", ".s32", ".u64", ".s64", ".b32", ".b64", ".f32", ".f64", ".u16", ".pred", ".b8"]
_SPACES = [".global", ".shared", ".local", ".const", ".param"]


# ------------------------------------------------------------------------------------------------ seeds

def split_kernels(ptx: str) -> list[str]:
    """One PTX text per `.entry`: the module header (version, target, globals) plus that kernel alone."""
    starts = [m.start() for m in _ENTRY_RE.finditer(ptx)]
    if not starts:
        return [ptx]
    header = ptx[:starts[0]]
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(ptx)
        out.append(header + ptx[start:end])
    return out


def compile_seeds(arch: str = "sm_80") -> list[str]:
    """PTX of every repository `.cu` under SEED_SOURCES, compiled by the project's own compile step."""
    seeds: list[str] = []
    for folder in SEED_SOURCES:
        for path in sorted((ROOT / folder).glob("*.cu")):
            result = compile_cuda(path, options=CompileOptions(arch=arch), with_resources=False)
            if result.ok and result.ptx:
                seeds.extend(split_kernels(result.ptx))
    return seeds


# ------------------------------------------------------------------------------------------------ mutations

def _replace_int(rng: random.Random, line: str) -> str:
    hits = list(_INT_RE.finditer(line))
    if not hits:
        return line
    m = rng.choice(hits)
    return line[:m.start()] + rng.choice(EXTREME_INTS) + line[m.end():]


def _body_range(lines: list[str]) -> tuple[int, int]:
    """(first, last) indexes of the kernel body's lines, between its outer braces."""
    opens = [i for i, ln in enumerate(lines) if ln.strip() == "{"]
    closes = [i for i, ln in enumerate(lines) if ln.strip() == "}"]
    if not opens or not closes or closes[-1] <= opens[0]:
        return 0, len(lines) - 1
    return opens[0] + 1, closes[-1] - 1


def mutate(rng: random.Random, text: str) -> str:
    """A few random mutations of `text` (see the module docstring for the kinds)."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        if not lines:
            lines = [""]
        kind = rng.choice(["delete", "duplicate", "swap", "insert", "bytes", "truncate", "replace", "int",
                           "int", "shift", "array", "nest", "exit_only", "branches", "type", "space"])
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines[j:j] = [lines[i]] * rng.choice([1, 1, 2, 8])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "insert":
            pos = rng.randint(0, len(lines[i]))
            lines[i] = lines[i][:pos] + rng.choice(FRAGMENTS) + lines[i][pos:]
        elif kind == "bytes":
            pos = rng.randint(0, len(lines[i]))
            junk = "".join(chr(rng.choice([rng.randint(1, 127), rng.randint(128, 0x2FFF)])) for _ in range(3))
            lines[i] = lines[i][:pos] + junk + lines[i][pos:]
        elif kind == "truncate":
            lines = lines[:i + 1]
            lines[-1] = lines[-1][:rng.randint(0, len(lines[-1]))]
        elif kind == "replace":
            lines[i] = lines[i].replace(rng.choice(["%", ".", ",", ";", "[", "{", "0", "]"]), "", 1)
        elif kind == "int":
            candidates = [k for k, ln in enumerate(lines) if _INT_RE.search(ln)]
            if candidates:
                k = rng.choice(candidates)
                lines[k] = _replace_int(rng, lines[k])
        elif kind == "shift":
            first, last = _body_range(lines)
            op = rng.choice(["shr.s32", "shr.u32", "shl.b32", "shr.u64", "shl.b64"])
            reg = "%rd" if op.endswith("64") else "%r"
            lines.insert(rng.randint(first, last + 1),
                         f"\t{op} \t{reg}1, {reg}2, {rng.choice(EXTREME_INTS)};")
        elif kind == "array":
            lines.insert(_body_range(lines)[0], f"\t{rng.choice(_SPACES)} .align 4 .b8 fz{i}"
                                                f"[{rng.choice(EXTREME_INTS)}];")
        elif kind == "nest":
            depth = rng.choice([2, 8, 80, 2000])
            lines.insert(_body_range(lines)[0], "\tmov.b32 \t%r1, " + "{" * depth + "%r2" + "}" * depth + ";")
        elif kind == "exit_only":
            first, last = _body_range(lines)
            lines[first:last + 1] = ["\texit;"]
        elif kind == "branches":
            first, last = _body_range(lines)
            count = rng.choice([2, 10, 60])
            block = []
            for n in range(count):
                block += [f"\tsetp.ne.s32 \t%p1, %r1, {n};", f"\t@%p1 bra \t$L__FZ{i}_{n};",
                          "\tadd.s32 \t%r1, %r1, 1;", f"$L__FZ{i}_{n}:"]
            lines[last + 1:last + 1] = block
        elif kind == "type":
            lines[i] = lines[i].replace(rng.choice(_TYPES), rng.choice(_TYPES), 1)
        else:
            lines[i] = lines[i].replace(rng.choice(_SPACES), rng.choice(_SPACES), 1)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ running

def _count(json_key: str) -> Any:
    """A counter of `Tally`: `add` sums it, `to_json` writes it under `json_key`."""
    return field(default=0, metadata={"json": json_key, "merge": operator.add})


def _slowest(json_key: str) -> Any:
    """A worst case of `Tally`: `add` keeps the larger, `to_json` writes it (rounded) under `json_key`."""
    return field(default=0.0, metadata={"json": json_key, "merge": max})


@dataclass
class Tally:
    """What a run found; `failures` keeps the first few of each kind with the case number to replay it."""

    cases: int = _count("cases")
    uncaught: int = _count("uncaught_exceptions")
    slow: int = _count("over_10_s")
    slow_cpu: int = _count("over_10_s_cpu")
    non_strict: int = _count("non_strict_json")
    nulled_reports: int = _count("reports_with_nulled_numbers")
    parse_errors: int = _count("ptx_syntax_errors")
    analysed: int = _count("kernels_analysed_cases")
    max_s: float = _slowest("slowest_case_s")
    max_cpu_s: float = _slowest("slowest_case_cpu_s")
    errors: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        """Fold another run's tally (of other cases) into this one."""
        for f in fields(self):
            if "merge" in f.metadata:
                setattr(self, f.name, f.metadata["merge"](getattr(self, f.name), getattr(other, f.name)))
        self.errors.update(other.errors)
        self.failures.extend(other.failures[:20])

    def to_json(self) -> dict[str, Any]:
        figures = {f.metadata["json"]: round(getattr(self, f.name), 3) for f in fields(self) if "json" in f.metadata}
        return {**figures, "exceptions": dict(self.errors), "failures": self.failures[:50]}


class _HardStop(BaseException):
    """Raised by the alarm in a case that runs far past the limit (a hang)."""


def _strict(text: str) -> bool:
    """Whether `text` parses as JSON that has no NaN or Infinity constants."""
    def refuse(token: str) -> Any:
        raise ValueError(token)

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


def run_case(text: str, options: Any) -> tuple[str, float, bool]:
    """Analyse and write one case: ("ok" | "syntax" | "non-strict" | "exception:<Type>", seconds, nulled)."""
    start = time.perf_counter()
    report = analyze_file("fuzz_case.ptx", text=text, options=options)
    format_report(report, "text")
    nulled: list[dict[str, str]] = []
    finite_copy(report.to_json(), "$", nulled)
    outputs = [format_report(report, "json"), format_report(report, "sarif")]  # what `kerncast analyze` writes
    seconds = time.perf_counter() - start
    if not all(_strict(out) for out in outputs):
        return "non-strict", seconds, bool(nulled)
    if any(f.code == "ptx-syntax-error" for f in report.findings):
        return "syntax", seconds, bool(nulled)
    return "ok", seconds, bool(nulled)


def run(seeds: list[str], start: int, count: int, seed: int, ptxas_every: int,
        progress_every: int = 0, progress: Any = None, ptxas_only: bool = False) -> Tally:
    """Cases `start` .. `start + count - 1`; each is reproducible from (seed, case number).

    Every `progress_every` cases, `progress(tally, next_case)` is called (the CLI saves the counts so far,
    so that a run stopped early still reports exact figures). `ptxas_only` runs just the cases of the
    range that run ptxas (to re-check them after a change to the ptxas step alone).
    """
    fast = AnalysisOptions(lime=False, nvcc_path=NO_TOOLCHAIN)
    full = AnalysisOptions(lime=False)
    tally = Tally()
    run_case(seeds[0], full)  # warm-up, not counted: the first analysis loads the power model and imports
    use_alarm = hasattr(signal, "SIGALRM") and os.name == "posix"
    if use_alarm:
        signal.signal(signal.SIGALRM, _raise_hard_stop)
    for case in range(start, start + count):
        if ptxas_only and not (ptxas_every and case % ptxas_every == 0):
            continue
        rng = random.Random(seed * 1_000_003 + case)
        text = mutate(rng, rng.choice(seeds))
        options = full if ptxas_every and case % ptxas_every == 0 else fast
        tally.cases += 1
        began, cpu_began = time.perf_counter(), _cpu_seconds()
        if use_alarm:
            signal.alarm(HARD_STOP_S)
        try:
            outcome, seconds, nulled = run_case(text, options)
        except _HardStop:
            outcome, seconds, nulled = "exception:HardStop", time.perf_counter() - began, False
        except Exception as exc:  # noqa: BLE001 - counting these is the point of the harness
            outcome, seconds, nulled = f"exception:{type(exc).__name__}", time.perf_counter() - began, False
            tally.failures.append({"case": case, "seed": seed, "kind": outcome,
                                   "traceback": traceback.format_exc(limit=-8)[-2500:]})
        finally:
            if use_alarm:
                signal.alarm(0)
        tally.max_s = max(tally.max_s, seconds)
        cpu = _cpu_seconds() - cpu_began
        tally.max_cpu_s = max(tally.max_cpu_s, cpu)
        if cpu > SLOW_S:
            tally.slow_cpu += 1
        tally.nulled_reports += nulled
        if seconds > SLOW_S:
            tally.slow += 1
            tally.failures.append({"case": case, "seed": seed, "kind": "slow", "seconds": round(seconds, 2),
                                   "cpu_seconds": round(cpu, 2)})
        if outcome.startswith("exception:"):
            tally.uncaught += 1
            tally.errors[outcome.split(":", 1)[1]] += 1
        elif outcome == "non-strict":
            tally.non_strict += 1
            tally.failures.append({"case": case, "seed": seed, "kind": "non-strict"})
        elif outcome == "syntax":
            tally.parse_errors += 1
        else:
            tally.analysed += 1
        if progress_every and tally.cases % progress_every == 0 and progress is not None:
            progress(tally, case + 1)
    return tally


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (ptxas): what a case costs on an idle machine,
    as opposed to its wall time, which on a shared machine also holds the time spent waiting for a core."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _raise_hard_stop(signum: int, frame: Any) -> None:
    raise _HardStop()


def replay(seeds: list[str], case: int, seed: int) -> str:
    """The text of one case, to reproduce a failure."""
    rng = random.Random(seed * 1_000_003 + case)
    return mutate(rng, rng.choice(seeds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0, help="first case number (to run in chunks)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--ptxas-every", type=int, default=50, help="run ptxas on every N-th case (0: never)")
    parser.add_argument("--out", type=Path, default=None, help="write the counts as JSON here")
    parser.add_argument("--replay", type=int, default=None, help="print the text of this case and stop")
    parser.add_argument("--progress", type=int, default=250, help="save the counts every N cases")
    parser.add_argument("--ptxas-only", action="store_true",
                        help="run only the cases of the range that run ptxas (every --ptxas-every-th)")
    args = parser.parse_args(argv)
    seeds = compile_seeds()
    if not seeds:
        print("no seeds: nvcc could not compile the repository's .cu files", file=sys.stderr)
        return 2
    if args.replay is not None:
        sys.stdout.write(replay(seeds, args.replay, args.seed))
        return 0
    began = time.time()

    def save(tally: Tally, next_case: int, final: bool = False) -> dict[str, Any]:
        result = {"seeds": len(seeds), "start": args.start, "next_case": next_case, "seed": args.seed,
                  "finished": final, "wall_s": round(time.time() - began), **tally.to_json()}
        if args.out:
            partial = args.out.with_suffix(".tmp")
            partial.write_text(json.dumps(result, indent=2) + "\n")
            partial.replace(args.out)
        print(json.dumps({k: v for k, v in result.items() if k not in ("failures", "exceptions")}), flush=True)
        return result

    signal.signal(signal.SIGTERM, _raise_stop)
    tally = Tally()
    try:
        tally = run(seeds, args.start, args.cases, args.seed, args.ptxas_every, args.progress, save,
                    args.ptxas_only)
        save(tally, args.start + args.cases, final=True)
    except _Stopped:
        print("stopped: the counts of the cases completed so far are in the last progress line", flush=True)
    return 0 if tally.uncaught == tally.slow == tally.non_strict == 0 else 1


class _Stopped(BaseException):
    """SIGTERM: stop between cases; the saved progress holds the exact counts so far."""


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stopped()


if __name__ == "__main__":
    sys.exit(main())
