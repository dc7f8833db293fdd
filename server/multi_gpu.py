"""One file analysed for several GPUs (`--gpu a100,h100`): each kernel's time, power, energy and bottleneck on
each GPU, side by side, as text and as JSON.

Each GPU gets its own full analysis (its own compile target, occupancy and models), so a figure here is the
one `kerncast analyze --gpu ID` prints for that GPU alone. The analyses share one kernel cache, as the language
server's analyses of a document do: GPUs of one architecture (h100, h200) get the same PTX, so ptxas runs and
the PTX is parsed once for all of them, while each kernel's report is made per GPU (the profile is in its key).

The first GPU's report is the main one: its JSON keeps every single-GPU key as it is, and the per-GPU figures
are added beside them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

from kerncast.analysis.gpus.profile import list_profiles
from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.strict_json import dumps_strict
from kerncast.server.units import fmt_energy_uj, fmt_time


def split_gpus(text: str) -> list[str]:
    """The GPU ids of a comma list, in order and each once (ValueError on an empty entry or unknown id).

    A profile file (a path ending in .toml) is taken as it is; in a list of several, an id must be shipped, so a
    typo stops the command before any GPU is analysed.
    """
    gpus: list[str] = []
    for part in text.split(","):
        gpu = part.strip()
        if not gpu:
            raise ValueError(f"--gpu {text!r}: an empty GPU id in the list")
        if gpu not in gpus:
            gpus.append(gpu)
    known = set(list_profiles())
    unknown = [g for g in gpus if g not in known and not g.endswith(".toml")]
    if len(gpus) > 1 and unknown:
        raise ValueError(f"unknown GPU profile {', '.join(unknown)} (see `kerncast gpus`)")
    return gpus


def analyse_on_gpus(path: str, options: AnalysisOptions, gpus: list[str]) -> list[FileReport]:
    """The file's report on each GPU, in the order of `gpus`."""
    cache = KernelCache()
    return [analyze_file(path, options=replace(options, gpu=gpu), cache=cache) for gpu in gpus]


def kernel_figures(gpu: str, k: KernelReport | None) -> dict[str, Any]:
    """A kernel's headline figures on one GPU (Nones where the analysis has none)."""
    t = k.time if k is not None else None
    p = k.power if k is not None else None
    e = k.energy if k is not None else None
    return {"gpu": gpu, "time_us": t.us if t else None,
            "range_us": list(t.range_us) if t is not None and t.range_us is not None else None,
            "bottleneck": t.bottleneck if t else None, "watts": p.watts if p else None,
            "energy_uj": e.uj if e else None}


def per_gpu_json(reports: list[FileReport]) -> dict[str, Any]:
    """The first GPU's JSON with, for several GPUs, `gpus` (the ids) and each kernel's `per_gpu` list."""
    main = reports[0].to_json()
    if len(reports) == 1:
        return main
    main["gpus"] = [r.gpu for r in reports]
    for key in ("kernels", "included_kernels"):
        for kj in main[key]:
            kj["per_gpu"] = [kernel_figures(r.gpu, r.kernel(kj["mangled"]) or r.kernel(kj["name"])) for r in reports]
    return main


def per_gpu_text(reports: list[FileReport]) -> str:
    """One table per kernel: its time, power, energy and bottleneck on each GPU."""
    out = [f"{reports[0].file}: {len(reports)} GPUs ({', '.join(r.gpu for r in reports)})"]
    for r in reports:
        out.extend(f"  {r.gpu}: {f.severity} [{f.code}] {f.message}" for f in r.findings)
    for k in reports[0].all_kernels():
        out.append("")
        out.append(f"kernel {k.name}")
        for r in reports:
            fig = kernel_figures(r.gpu, r.kernel(k.mangled) or r.kernel(k.name))
            rng = fig["range_us"]
            span = f" (range {fmt_time(rng[0])} to {fmt_time(rng[1])})" if rng else ""
            watts = f"{fig['watts']:.0f} W" if fig["watts"] is not None else "unknown"
            out.append(f"  {r.gpu:<10} time {fmt_time(fig['time_us']) or 'unknown'}{span}, power {watts}, "
                       f"energy {fmt_energy_uj(fig['energy_uj']) or 'unknown'}, "
                       f"bottleneck {fig['bottleneck'] or 'unknown'}")
    return "\n".join(out) + "\n"


def run_analyze(args: Any, options: AnalysisOptions) -> int:
    """`kerncast analyze FILE --gpu a,b`: the per-GPU table (text) or the first GPU's JSON with the others'."""
    if len(args.paths) != 1 or os.path.isdir(args.paths[0]):
        print("kerncast: --gpu with several GPUs takes one file", file=sys.stderr)
        return 2
    if args.format == "sarif" or args.fix or args.diff:
        print("kerncast: --gpu with several GPUs gives text or JSON, without --fix or --diff", file=sys.stderr)
        return 2
    try:
        gpus = split_gpus(args.gpu)
    except ValueError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    reports = analyse_on_gpus(args.paths[0], options, gpus)
    if args.format == "json":
        sys.stdout.write(dumps_strict(per_gpu_json(reports)) + "\n")
    else:
        sys.stdout.write(per_gpu_text(reports))
    return 0 if all(r.ok for r in reports) else 1
