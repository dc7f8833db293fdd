"""The server's conversions on their own: lens titles, hover markdown and code-action edits from typed reports.

These read the typed KernelReport and the model results it holds (time, power, energy, launch, occupancy),
including parts that are missing, which must read "not available" rather than fail.
"""

from __future__ import annotations

from dataclasses import replace

from kerncast.analysis.compile import KernelResources
from kerncast.analysis.finding import Finding, Fix, TextEdit
from kerncast.analysis.launch import Launch, Sourced
from kerncast.analysis.occupancy import Occupancy
from kerncast.analysis.power.events import EnergyConstants, EventEnergy, LineEnergy
from kerncast.analysis.power.results import Contribution, EnergyEstimate, PowerPrediction
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.rules import rule
from kerncast.analysis.timing.estimate import TimeEstimate
from kerncast.server import actions, convert, hover
from lsprotocol import types as lsp

TIME = TimeEstimate(us=12.3, cycles=16000.0, model="thesis-scheduler",
                    breakdown={"schedule_us": 9.0, "launch_overhead_us": 3.3}, waves=2, occupancy=None,
                    bottleneck="memory", mwp_cwp_us=14.0, mwp_cwp_class="memory-bound", roofline_us=(10.0, 13.5))
LAUNCH = Launch(kernel="saxpy", grid=Sourced((1024, 1, 1), "launch-site"), block=Sourced((256, 1, 1), "launch-site"),
                dynamic_shared_bytes=Sourced(0, "launch-site"), params={}, loops=Sourced(10, "default"))
FULL = KernelReport(
    "saxpy", "_Z5saxpyifPKfPf", 3, resources=KernelResources("_Z5saxpyifPKfPf", registers=16), shared_bytes=0,
    time=TIME,
    power=PowerPrediction(watts=87.4, interval=(70.0, 101.0), model="xgboost-thesis@v100", trained_on="",
                          explanation=[Contribution("f_glob", "global memory share", 0.4, 12.5, 10.0),
                                       Contribution("f_sp", "SP share", 0.3, -4.0, -3.0)]),
    energy=EnergyEstimate(uj=1100.0, interval_uj=(880.0, 1250.0)), launch=LAUNCH,
    occupancy=Occupancy(active_blocks_per_sm=8, active_warps_per_sm=64, max_warps_per_sm=64, occupancy=1.0,
                        limiter="warps", limits={}),
)


def test_lens_title_with_every_number() -> None:
    assert convert.kernel_summary(FULL, "v100") == "≈ 12.3 µs · 87 W · 1.1 mJ on V100 SXM2 @ <<<1024, 256>>>"


def test_lens_title_says_what_is_unknown() -> None:
    bare = KernelReport("k", "k", 1)
    assert convert.kernel_summary(bare, "v100") == (
        "time not available · power not available · energy not available on V100 SXM2 @ launch unknown — "
        "add // kerncast: grid=… block=…")
    assumed = replace(FULL, launch=replace(LAUNCH, grid=Sourced((1024, 1, 1), "default"),
                                           block=Sourced((256, 1, 1), "default")))
    assert "@ assumed <<<1024, 256>>> — add // kerncast:" in convert.kernel_summary(assumed, "v100")


def test_hover_markdown_with_power_table() -> None:
    text = hover.kernel_markdown(FULL, "v100", "sm_75")
    assert text.startswith("### saxpy — on V100 SXM2 (sm_75)")
    assert "**Time ≈ 12.3 µs** (thesis-scheduler model)\nRange _not available_\nBottleneck: **memory**" in text
    assert "Parts of this time (they add up)" in text  # the thesis scheduler's own Eq. 4.8 terms
    assert "MWP-CWP estimate: 14 µs (memory-bound)" in text and "Roofline range: 10 µs – 13.5 µs" in text
    assert "**Power ≈ 87 W** (90% interval 70–101 W), model: xgboost-thesis@v100" in text
    assert "| global memory share | 0.4 | 12.5 | 10 | +████████████ |" in text
    assert "| SP share | 0.3 | -4 | -3 | −████ |" in text
    assert "**Energy ≈ 1.1 mJ** (90% interval 880 µJ – 1.25 mJ; power × predicted time)" in text
    assert "| grid | 1024 | launch-site |" in text and "| loops | 10 | default |" in text


def test_hover_lists_the_per_event_energy_of_every_line() -> None:
    event = EventEnergy(dynamic_uj=400.0, constant_uj=300.0, idle_uj=600.0, by_event={}, by_component={},
                        lines=[LineEnergy(10, 100.0, {"global loads": 100.0}),
                               LineEnergy(12, 300.0, {"integer arithmetic": 60.0, "global stores": 240.0})],
                        constants=EnergyConstants("Volta", {}, 0.0, "test", False))
    text = hover.kernel_markdown(replace(FULL, energy=replace(FULL.energy, event=event)), "v100", "sm_75")
    # the energy heading stays the one total; the event model's split is in shares, its own total folded below
    assert "Split of this energy (per-event model, shares): dynamic 31%, constant 23%, idle 46%" in text
    assert "- Per-event energy model's own total: 1.3 mJ (dynamic 400 µJ, constant 300 µJ, idle 600 µJ)" in text
    assert text.index("**Other models**") > text.index("**Launch**")
    assert "| 12 | 75% | global stores 80%, integer arithmetic 20% |" in text
    assert "| 10 | 25% | global loads 100% |" in text


def test_hover_markdown_with_nothing_predicted() -> None:
    bare = KernelReport("k", "k", 1, notes=["no power prediction: model missing"])
    text = hover.kernel_markdown(bare, "v100", None)
    assert "**Time** _not available_" in text
    assert "**Power** _not available_ (no power prediction: model missing)" in text
    assert "**Launch** unknown — add // kerncast:" in text and "Occupancy: _not available_" in text


def _doc(text: str, versioned: bool = True) -> actions.Doc:
    return actions.Doc(uri="file:///t.cu", version=3, lines=text.splitlines(), versioned=versioned)


def test_library_edits_convert_to_zero_based_lsp_edits() -> None:
    edit = actions.to_lsp_edit(TextEdit(3, 31, 3, 33, "33"))
    assert edit.range == lsp.Range(lsp.Position(2, 30), lsp.Position(2, 32)) and edit.new_text == "33"


def test_actions_are_versioned_only_for_clients_that_take_it() -> None:
    text = "__global__ void k()\n{\n    __shared__ float tile[32][32];\n    x = tile[threadIdx.x][0];\n}\n"

    f = Finding("shared-bank-conflict", "warning", 4, 5, 4, 20, "m",
                fix=Fix("pad-shared-array", "pad 'tile'", {"array": "tile", "line": 3},
                        [TextEdit(3, 31, 3, 33, "33")]))
    report = FileReport(file="/t.cu", gpu="v100", kernels=[KernelReport("k", "_Z1kv", 1, findings=[f])])
    rng = lsp.Range(lsp.Position(3, 0), lsp.Position(3, 0))
    sent = convert.to_diagnostics(report, "file:///t.cu", text.splitlines())
    versioned = actions.code_actions(report, _doc(text, True), rng, sent, [], "v100")
    plain = actions.code_actions(report, _doc(text, False), rng, sent, [], "v100")
    assert versioned[0].edit.document_changes[0].text_document.version == 3
    assert versioned[0].edit.changes is None
    assert plain[0].edit.document_changes is None and list(plain[0].edit.changes) == ["file:///t.cu"]
    assert versioned[0].diagnostics[0].code == "shared-bank-conflict"


def test_finding_hover_links_its_rule() -> None:
    f = Finding("divergent-branch", "warning", 3, 5, 3, 20, "divergent branch: condition depends on threadIdx.x")
    text = hover.finding_markdown(f)
    spec = rule("divergent-branch")
    assert f"[{spec.title}]({spec.href})" in text and "ThreadDivergence" in text
    assert f"**What to do:** {spec.remedy}" in text  # no fix and no advice: the rule says what to do


def test_lens_and_hover_show_the_time_range() -> None:
    timed = replace(FULL, time=replace(TIME, model="kerncast", range_us=(9.0, 16.0),
                                       range_basis="best case all latency hidden; worst case no overlap",
                                       models={"kerncast": 12.3, "thesis": 40.0, "mwp-cwp": 14.0}))
    assert convert.kernel_summary(timed, "v100").startswith("≈ 12.3 µs (9 µs–16 µs) · 87 W")
    text = hover.kernel_markdown(timed, "v100", "sm_75")
    assert "Range 9 µs – 16 µs: best case all latency hidden; worst case no overlap" in text
    assert "Other models: thesis 40 µs, mwp-cwp 14 µs" in text


def test_hover_says_how_the_file_was_compiled() -> None:
    """The file's notes (an architecture other than the profile's, relocatable code) reach every kernel's hover."""
    note = "compiled for sm_75, the oldest architecture this nvcc supports: the v100 profile is compute capability 7.0"
    md = hover.kernel_markdown(FULL, "v100", "sm_75", compiler="nvcc 13.5 (pip wheels: /x/nvcc)", file_notes=[note])
    assert md.rstrip().endswith(f"_{note}_")
    assert "_compiled by nvcc 13.5 (pip wheels: /x/nvcc) for sm_75_" in md
    assert note not in hover.kernel_markdown(FULL, "v100", "sm_75")
    report = FileReport(file="/t.cu", gpu="v100", kernels=[FULL], arch="sm_75", notes=[note])
    assert note in hover.file_markdown(report)
