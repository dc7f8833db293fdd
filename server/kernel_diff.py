"""Two analyses of a file set side by side, kernel by kernel (matched by name): old and new time, power,
energy, registers and occupancy, and the findings added or gone, as text, JSON or a markdown table.

Findings are matched by code, not by line: an edit above a kernel moves its lines, and a finding that only
moved is neither added nor gone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.report import FileReport, KernelReport
from kerncast.server.units import fmt_energy_uj, fmt_time


@dataclass(slots=True)
class KernelChange:
    """One kernel in the old and new analysis; `old` or `new` is None when it was added or removed."""

    name: str
    old: KernelReport | None
    new: KernelReport | None
    findings_added: list[str] = field(default_factory=list)
    findings_gone: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.old is None:
            return "added"
        return "removed" if self.new is None else "kept"

    def time_ratio(self) -> float | None:
        """New time / old time (above 1: slower); None when either time is unknown."""
        o, n = _figures(self.old), _figures(self.new)
        if o["time_us"] and n["time_us"]:
            return n["time_us"] / o["time_us"]
        return None


def _figures(k: KernelReport | None) -> dict[str, Any]:
    """A kernel's compared figures (all None for a missing kernel or an unknown figure)."""
    if k is None:
        return {"time_us": None, "watts": None, "energy_uj": None, "registers": None, "occupancy": None}
    return {"time_us": k.time.us if k.time else None, "watts": k.power.watts if k.power else None,
            "energy_uj": k.energy.uj if k.energy else None, "registers": k.registers,
            "occupancy": k.occupancy.to_json().get("occupancy") if k.occupancy else None}


def _kernels(report: FileReport) -> dict[str, KernelReport]:
    return {k.name: k for k in report.all_kernels()}


def compare_reports(old: FileReport, new: FileReport) -> list[KernelChange]:
    """Every kernel of either report, in the new file's order, then the removed ones in the old order."""
    before, after = _kernels(old), _kernels(new)
    out = []
    for name in [*after, *(n for n in before if n not in after)]:
        o, n = before.get(name), after.get(name)
        old_codes = Counter(str(f.code) for f in o.findings) if o else Counter()
        new_codes = Counter(str(f.code) for f in n.findings) if n else Counter()
        out.append(KernelChange(name, o, n, sorted((new_codes - old_codes).elements()),
                                sorted((old_codes - new_codes).elements())))
    return out


def slower_than(changes: list[KernelChange], percent: float) -> list[KernelChange]:
    """The kernels whose new time is more than `percent` % above their old time."""
    return [c for c in changes if (r := c.time_ratio()) is not None and r > 1 + percent / 100]


def _speed(ratio: float | None) -> str:
    if ratio is None:
        return ""
    if abs(ratio - 1) < 0.005:
        return "same time"
    return f"{1 / ratio:.2f}x faster" if ratio < 1 else f"{ratio:.2f}x slower"


def _pair(old: Any, new: Any, fmt: Any) -> str:
    a, b = (fmt(old) if old is not None else "-"), (fmt(new) if new is not None else "-")
    return a if a == b else f"{a} -> {b}"


def _cells(c: KernelChange) -> list[str]:
    """Time (with the speed-up), power, energy, registers, occupancy and findings of one kernel."""
    o, n = _figures(c.old), _figures(c.new)
    speed = _speed(c.time_ratio())
    findings = ", ".join([*(f"+{x}" for x in c.findings_added), *(f"-{x}" for x in c.findings_gone)])
    return [_pair(o["time_us"], n["time_us"], fmt_time) + (f" ({speed})" if speed else ""),
            _pair(o["watts"], n["watts"], lambda w: f"{w:.0f} W"),
            _pair(o["energy_uj"], n["energy_uj"], fmt_energy_uj),
            _pair(o["registers"], n["registers"], str),
            _pair(o["occupancy"], n["occupancy"], lambda x: f"{x:.0%}"),
            findings or "no change"]


def summary(changes: list[KernelChange], same_within: float = 0.01) -> str:
    """One line: how many kernels got faster, slower (beyond `same_within`), were added or removed."""
    ratios = [r for c in changes if (r := c.time_ratio()) is not None]
    counts = {"faster": sum(r < 1 - same_within for r in ratios), "slower": sum(r > 1 + same_within for r in ratios),
              "added": sum(c.status == "added" for c in changes),
              "removed": sum(c.status == "removed" for c in changes)}
    parts = [f"{n} {what}" for what, n in counts.items() if n]
    return f"{len(changes)} kernel{'s' if len(changes) != 1 else ''}: " + (", ".join(parts) or "no change in time")


def diff_text(changes: list[KernelChange], old_label: str, new_label: str) -> str:
    """For people: one block per kernel."""
    out = [f"{old_label} -> {new_label}: {summary(changes)}"]
    labels = ("time", "power", "energy", "registers", "occupancy", "findings")
    for c in changes:
        out.append("")
        out.append(f"kernel {c.name}" + ("" if c.status == "kept" else f" ({c.status})"))
        out.extend(f"  {label}: {cell}" for label, cell in zip(labels, _cells(c), strict=True))
    if not changes:
        out.append("no kernel in either version")
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    """A table cell: pipes and line breaks would end the cell, and a `<` could open an HTML tag."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def _md_code(text: str) -> str:
    """A code span in a table cell (a kernel name, a path): shown verbatim, so only what would end the span
    or the cell is replaced."""
    return "`" + text.replace("`", "'").replace("|", "\\|").replace("\n", " ") + "`"


def diff_markdown(changes: list[KernelChange], old_label: str, new_label: str) -> str:
    """A table fit for a pull-request comment."""
    out = [f"Kerncast: {_md_code(old_label)} -> {_md_code(new_label)}: {_md(summary(changes))}", "",
           "| kernel | time | power | energy | registers | occupancy | findings |",
           "|---|---|---|---|---|---|---|"]
    for c in changes:
        name = _md_code(c.name) + ("" if c.status == "kept" else f" ({c.status})")
        out.append("| " + " | ".join([name, *(_md(x) for x in _cells(c))]) + " |")
    return "\n".join(out) + "\n"


def diff_json(changes: list[KernelChange], old_label: str, new_label: str, gpu: str) -> dict[str, Any]:
    """For programs: every figure as a number (None when unknown)."""
    return {"old": old_label, "new": new_label, "gpu": gpu, "summary": summary(changes), "kernels": [
        {"name": c.name, "status": c.status, "old": _figures(c.old), "new": _figures(c.new),
         "time_ratio": c.time_ratio(), "findings_added": c.findings_added, "findings_gone": c.findings_gone}
        for c in changes]}
