"""The `energy-hotspot` finding: the line with the largest share of a kernel's per-event dynamic energy.

By default only that one line is reported (information), and only when it stands out (see `energy_hotspots`);
the per-event split it reads is the power package's (`power/events.py`).
"""

from __future__ import annotations

from kerncast.analysis.finding import Finding
from kerncast.analysis.power.events import GLOBAL, SHARED, EventEnergy
from kerncast.analysis.rules import Code

#: A hotspot holds at least this many times the even share of its kernel's lines (a design choice, not a fit).
HOTSPOT_OVER_EVEN = 2.0
#: Energy-hotspot findings per kernel by default: the top line only.
MAX_HOTSPOTS_PER_KERNEL = 1


def _reason(event: EventEnergy, line) -> str:
    """The line's largest event category, with the request shape that drives it."""
    category, uj = line.top_event()
    text = f"{category}: {uj / line.uj:.0%} of the line"
    if category in GLOBAL and line.sectors_per_request is not None:
        text += f", {line.sectors_per_request:g} sectors/request"
    elif category in SHARED and line.wavefronts_per_request is not None:
        text += f", {line.wavefronts_per_request:g} wavefronts/request"
    return text


def energy_hotspots(event: EventEnergy, kernel: str, threshold_share: float = 0.2,
                    max_findings: int = MAX_HOTSPOTS_PER_KERNEL) -> list[Finding]:
    """`energy-hotspot` findings for the top `max_findings` lines of the per-event split.

    A line qualifies when it holds at least `threshold_share` of the dynamic energy placed on the file's lines
    and at least `HOTSPOT_OVER_EVEN` times the share every line would have if the energy were spread evenly:
    in a three-line kernel every line holds a third, which makes none of them a hotspot. The range is the whole
    line (the pipeline narrows it to the line's text).
    """
    total = event.line_dynamic_uj
    if total <= 0 or not event.lines:
        return []
    even = 1.0 / len(event.lines)
    out = []
    for line in sorted(event.lines, key=lambda ln: -ln.uj)[:max_findings]:
        share = line.uj / total
        if share < max(threshold_share, HOTSPOT_OVER_EVEN * even):
            break
        category, _ = line.top_event()
        reason = _reason(event, line)
        out.append(Finding(
            code=Code.ENERGY_HOTSPOT, severity="information", line=line.line, column=1, end_line=line.line,
            end_column=1000, message=f"{reason}; the line takes {share:.0%} of the kernel's dynamic energy",
            detail={"share": round(share, 4), "uj": line.uj, "reason": category,
                    "events": {k: round(v / line.uj, 4) for k, v in line.events.items()},
                    "sectors_per_request": line.sectors_per_request,
                    "wavefronts_per_request": line.wavefronts_per_request},
            kernel=kernel))
    return out
