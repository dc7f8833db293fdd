"""`kerncast gpus`: list the GPU profiles and say which parts of each are measured and which are estimated.

A prediction is only as good as the profile under it, so the listing shows, per profile, the sections that are
fully measured (thesis microbenchmarks, published microbenchmarks of the same chip, vendor or driver figures)
and those that hold estimates, with the count of measured values where a section is mixed.
"""

from __future__ import annotations

import argparse
import json
import sys

from kerncast.analysis.gpus import GpuProfile, ProfileError, list_profiles, load_profile

#: short names for the sections in the text table
_SHORT = {
    "device": "device",
    "units": "units",
    "limits": "limits",
    "latency": "latency",
    "throughput": "throughput",
    "global_latency": "gm-latency",
    "global_throughput": "gm-tp",
    "shared_throughput": "sm-tp",
    "launch_overhead": "launch",
    "power": "power",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `kerncast gpus`."""
    parser.add_argument(
        "profiles",
        nargs="*",
        metavar="ID_OR_PATH",
        help="profile ids or paths to profile .toml files (default: every shipped profile)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")


def summarize(profile: GpuProfile) -> dict:
    """One profile as plain values: identity, size, clock, and measured vs estimated per section."""
    counts = profile.calibration_counts()
    summary = profile.calibration_summary()
    return {
        "id": profile.id,
        "name": profile.name,
        "arch": profile.arch,
        "compute_capability": profile.cc,
        "sm_count": profile.sm_count,
        "core_clock_mhz": profile.core_clock_mhz,
        "mem_bandwidth_gbs": profile.mem_bandwidth_gbs,
        "latency_basis": profile.latency_basis,
        "calibrated": profile.calibrated,
        "sections": {
            name: {"calibrated": summary[name], "measured": counts[name][0], "values": counts[name][1]}
            for name in summary
        },
        "path": profile.path,
    }


def _section_text(name: str, info: dict) -> str:
    short = _SHORT.get(name, name)
    measured, total = info["measured"], info["values"]
    if total == 0:
        return f"{short} (none)"
    if info["calibrated"] or measured == 0:
        return short
    return f"{short} {measured}/{total}"


def render_text(rows: list[dict]) -> str:
    """The table `kerncast gpus` prints: one line per profile, measured and estimated sections."""
    header = ("ID", "NAME", "CC", "SMS", "CLOCK", "MEASURED", "ESTIMATED (measured/values)")
    lines = []
    for r in rows:
        measured = [_SHORT.get(n, n) for n, i in r["sections"].items() if i["calibrated"]]
        estimated = [_section_text(n, i) for n, i in r["sections"].items() if not i["calibrated"]]
        lines.append(
            (
                r["id"],
                r["name"],
                r["compute_capability"],
                str(r["sm_count"]),
                f"{r['core_clock_mhz']:g} MHz",
                ", ".join(measured) or "-",
                ", ".join(estimated) or "-",
            )
        )
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(len(header) - 1)]
    out = []
    for row in [header, *lines]:
        cells = [row[i].ljust(widths[i]) for i in range(len(widths))]
        out.append("  ".join([*cells, row[-1]]).rstrip())
    out.append("")
    out.append(
        "measured: thesis or published microbenchmarks of the same chip, vendor or driver figures; "
        "estimated: inferred or derived (each value's source is in its profile file)."
    )
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Print the profiles; exit status 1 when a named profile cannot be loaded."""
    names = args.profiles or list_profiles()
    rows, status = [], 0
    for name in names:
        try:
            rows.append(summarize(load_profile(name)))
        except ProfileError as exc:
            print(f"kerncast gpus: {exc}", file=sys.stderr)
            status = 1
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    elif rows:
        print(render_text(rows))
    return status
