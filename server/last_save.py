"""The change of each kernel since the document's last save: the server keeps the report published before
the latest one, and the lens and hover say how each kernel's predicted time, energy and findings moved
("1.9x faster than the last save, 2 findings fixed").

Kernels are matched by name with `kernel_diff.compare_reports` (the matcher of `kerncast diff`). Keeping the
two reports is all a save pays: the comparison is made when a lens or hover first asks for it, after the
diagnostics went out, and only between analyses under the same settings (a GPU switch is not a speed-up).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerncast.analysis.report import FileReport
from kerncast.server.kernel_diff import KernelChange, compare_reports

#: a relative change of time or energy below this is the model's noise, not a change: nothing is said
SAME_WITHIN = 0.005


@dataclass(slots=True)
class _History:
    """One document's latest published report and the one before it (same settings)."""

    fingerprint: str
    result_key: str
    latest: FileReport
    previous: FileReport | None = None
    changes: dict[str, KernelChange] | None = field(default=None)


class LastSaves:
    """Per open document, its previous analysis, and the per-kernel comparison made on demand."""

    def __init__(self) -> None:
        self._docs: dict[str, _History] = {}

    def note(self, doc: str, fingerprint: str, result_key: str, report: FileReport) -> None:
        """Record a published analysis; the one it replaces becomes the baseline. A re-publication of the
        same analysis (a save without an edit) keeps the baseline, and new settings start afresh."""
        old = self._docs.get(doc)
        if old is not None and old.result_key == result_key:
            old.latest = report
            return
        previous = old.latest if old is not None and old.fingerprint == fingerprint else None
        self._docs[doc] = _History(fingerprint, result_key, report, previous)

    def forget(self, doc: str) -> None:
        self._docs.pop(doc, None)

    def change(self, doc: str, report: FileReport, kernel: str) -> str | None:
        """The phrase for `kernel` of the published `report`, or None when nothing changed or nothing is
        known (no earlier save, or `report` is not the latest one recorded)."""
        history = self._docs.get(doc)
        if history is None or history.previous is None or history.latest is not report:
            return None
        if history.changes is None:
            history.changes = {c.name: c for c in compare_reports(history.previous, report)}
        found = history.changes.get(kernel)
        return change_phrase(found) if found is not None else None


def _ratio(old: float | None, new: float | None) -> float | None:
    return new / old if old and new else None


def _times(x: float) -> str:
    """"1.9x", "12x", and "1.04x" where one decimal would round a real change to "1.0x"."""
    if x >= 10:
        return f"{x:.0f}x"
    return f"{x:.1f}x" if x >= 1.1 else f"{x:.2f}x"


def change_phrase(c: KernelChange) -> str | None:
    """"1.9x faster than the last save, energy -45%, 2 findings fixed"; None for an unchanged kernel and for
    one that is new (there is nothing to compare it with)."""
    if c.old is None or c.new is None:
        return None
    parts = []
    speed = c.time_ratio()
    if speed is not None and abs(speed - 1) >= SAME_WITHIN:
        parts.append(f"{_times(1 / speed)} faster" if speed < 1 else f"{_times(speed)} slower")
    energy = _ratio(c.old.energy.uj if c.old.energy else None, c.new.energy.uj if c.new.energy else None)
    if energy is not None and abs(energy - 1) >= SAME_WITHIN:
        parts.append(f"energy {energy - 1:+.0%}")
    if c.findings_gone:
        n = len(c.findings_gone)
        parts.append(f"{n} finding{'s' if n != 1 else ''} fixed")
    if c.findings_added:
        n = len(c.findings_added)
        parts.append(f"{n} new finding{'s' if n != 1 else ''}")
    if not parts:
        return None
    if speed is not None and abs(speed - 1) >= SAME_WITHIN:
        return f"{parts[0]} than the last save" + "".join(f", {p}" for p in parts[1:])
    return "since the last save: " + ", ".join(parts)


def with_change(markdown: str, phrase: str | None) -> str:
    """The hover's markdown with the change since the last save right after the answer (the time, range and
    bottleneck lines stay first; the change is the next thing read), or after the leading paragraph of a hover
    that has no bottleneck line."""
    if not phrase:
        return markdown
    line = f"**Since the last save:** {phrase}"
    at = markdown.find("Bottleneck:")
    if at >= 0:
        end = markdown.find("\n", at)
        end = len(markdown) if end < 0 else end
        return f"{markdown[:end]}\n\n{line}{markdown[end:]}"
    head, sep, rest = markdown.partition("\n\n")
    return f"{head}\n\n{line}\n\n{rest}" if sep else f"{head}\n\n{line}"
