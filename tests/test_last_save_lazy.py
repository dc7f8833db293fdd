"""A save pays for keeping the previous analysis, not for comparing it: `LastSaves.note` (called once the
diagnostics are published) only records the report, and the per-kernel comparison is made when a lens or hover
first asks for the change, once per published report."""

from __future__ import annotations

import pytest
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.timing.estimate import TimeEstimate
from kerncast.server import last_save


def _report(us: float) -> FileReport:
    time = TimeEstimate(us=us, cycles=us * 1e3, model="kerncast", breakdown={}, waves=1, occupancy=None,
                        bottleneck="memory")
    return FileReport(file="k.cu", gpu="v100", kernels=[KernelReport(name="k", mangled="_Z1kv", line=3, time=time)])


def test_the_comparison_waits_for_the_first_question(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = last_save.compare_reports

    def counting(old: FileReport, new: FileReport):
        calls.append(1)
        return real(old, new)

    monkeypatch.setattr(last_save, "compare_reports", counting)
    saves = last_save.LastSaves()
    saves.note("doc", "settings", "first", _report(20.0))
    newer = _report(10.0)
    saves.note("doc", "settings", "second", newer)
    assert calls == []  # two saves published: nothing compared yet
    assert saves.change("doc", newer, "k") == "2.0x faster than the last save"
    assert saves.change("doc", newer, "k") is not None
    assert calls == [1]  # compared once, at the first question, and kept
