"""What an editor shows beside the text besides diagnostics, lenses and hovers: the report page for a view
inside the editor, and each hot line's share of its kernel's cost for a line decoration.

Both answer for the published analysis seen from the current text (`textmap.View`): a line typed or changed
since the analysis gets nothing, and the page's line numbers are the analysed text's. Lines below
`MIN_LINE_SHARE` of their kernel are left out, so a decoration marks only where the cost is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kerncast.analysis.report import FileReport
from kerncast.server.units import fmt_energy_uj

#: a line below this share of its kernel's dynamic energy is not marked
MIN_LINE_SHARE = 0.01


def line_costs(report: FileReport, line_out: Callable[[int], int | None]) -> list[dict[str, Any]]:
    """Per hot source line of the file's own kernels: its 0-based line in the current text (`line_out` maps an
    analysed 0-based line there, None for a line changed since), its share of the kernel's dynamic energy, the
    energy and a short label; the hottest first where two kernels share a line."""
    out: dict[int, dict[str, Any]] = {}
    for k in report.kernels:
        event = k.energy.event if k.energy is not None else None
        if event is None or event.dynamic_uj <= 0:
            continue
        for entry in event.lines:
            share = entry.uj / event.dynamic_uj
            line = line_out(entry.line - 1) if entry.line >= 1 else None
            if share < MIN_LINE_SHARE or line is None:
                continue
            label = f"{share:.0%} of {k.name}'s energy ({fmt_energy_uj(entry.uj)})"
            if line not in out or out[line]["share"] < share:
                out[line] = {"line": line, "share": round(share, 4), "uj": entry.uj, "kernel": k.name,
                             "label": label}
    return sorted(out.values(), key=lambda c: c["line"])
