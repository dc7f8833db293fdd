"""Markdown for hovers and for the full kernel report (`kerncast.showReport`).

Reads the typed report (`KernelReport` and the model results it holds: time, power, energy, launch,
occupancy); each part that is missing says "not available" and why when the report's notes tell.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from kerncast.analysis.finding import Finding
from kerncast.analysis.power.events import EventEnergy
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.rules import is_code, rule
from kerncast.analysis.timing.estimate import DEFAULT_TIME_MODEL, TIME_MODELS
from kerncast.server.convert import (
    ANNOTATION_HINT,
    energy_uj,
    fmt_dim,
    fmt_energy_uj,
    fmt_time,
    fmt_watts,
    gpu_label,
    launch_known,
    launch_text,
)
from kerncast.server.units import drivers_text, models_text, time_range

NA = "_not available_"
BAR_WIDTH = 12


def _num(v: Any, digits: int = 3) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _pair(v: Any) -> bool:
    """Two numbers (an interval or a range)."""
    return isinstance(v, list | tuple) and len(v) == 2 and all(isinstance(x, int | float) for x in v)


def _notes_about(k: KernelReport, *words: str) -> str:
    hits = [n for n in k.notes if any(w in n.lower() for w in words)]
    return f" ({hits[0]})" if hits else ""


def _bar(value: float, largest: float) -> str:
    if largest <= 0:
        return ""
    n = round(abs(value) / largest * BAR_WIDTH)
    return ("█" * n) or "▏"


#: a report's model name -> its key in `models`
_MODEL_KEYS = {"thesis-scheduler": "thesis"}


def time_section(k: KernelReport) -> list[str]:
    """The shown model's answer first (time, range, bottleneck: one line each), then that model's own parts;
    the other models come last, in `other_models_section`, so the hover leads with one answer."""
    t = k.time
    if t is None or fmt_time(t.us) is None:
        return [f"**Time** {NA}{_notes_about(k, 'time', 'launch', 'gpu')}"]
    out = [f"**Time ≈ {fmt_time(t.us)}**" + (f" ({t.model} model)" if t.model else "")]
    rng = time_range(t)
    out.append(f"Range {rng[0]} – {rng[1]}" + (f": {t.range_basis}" if t.range_basis else "")
               if rng else f"Range {NA}")
    out.append(f"Bottleneck: **{t.bottleneck}**" if t.bottleneck else f"Bottleneck: {NA}")
    extra = []
    if isinstance(t.cycles, int | float):
        extra.append(f"{t.cycles:.4g} cycles")
    if t.waves is not None:
        extra.append(f"{_num(t.waves)} waves")
    if extra:
        out.append("; ".join(extra))
    return out + time_breakdown(t)


#: the kerncast model's parts in its report's `detail`: key -> what the row says
KERNCAST_PARTS = {
    "kerncast_kernel_duration_us": "kernel duration (on the GPU)",
    "kerncast_compute_us": "compute: issue and latency chain",
    "kerncast_memory_us": "DRAM and L2 traffic",
    "kerncast_launch_us": "launch and block dispatch",
    "kerncast_host_launch_us": "host launch overhead",
}


def time_breakdown(t: Any) -> list[str]:
    """The parts of the shown model's own time: the kerncast model's compute / memory / launch terms (which
    overlap, so they are not a sum), or the thesis scheduler's Eq. 4.8 terms (which add up); none for a model
    that has no parts, rather than another model's."""
    if t.model == TIME_MODELS[DEFAULT_TIME_MODEL]:
        rows = {label: t.detail[key] for key, label in KERNCAST_PARTS.items()
                if isinstance(t.detail.get(key), int | float)}
        head = "Parts of this time (they overlap: the time is not their sum)"
    elif t.model == TIME_MODELS["thesis"]:
        rows = {key: v for key, v in t.breakdown.items() if isinstance(v, int | float)}
        head = "Parts of this time (they add up)"
    else:
        return []
    if not rows:
        return []
    largest = max(abs(v) for v in rows.values())
    out = ["", head, "", "| part | time | |", "|---|---:|---|"]
    out += [f"| {label} | {fmt_time(v) or _num(v)} | {_bar(v, largest)} |" for label, v in rows.items()]
    return out


def other_models_section(k: KernelReport) -> list[str]:
    """The alternatives to the shown answers, folded at the end: the other time models (and the roofline's
    bounds) and the per-event model's own energy total, each said to be an alternative, with the default named."""
    t = k.time
    out: list[str] = []
    if t is not None and fmt_time(t.us) is not None:
        shown = _MODEL_KEYS.get(t.model, t.model)
        others = [f"{name} {fmt_time(v)}" for name, v in t.models.items()
                  if isinstance(v, int | float) and name != shown]
        if others:
            out.append("Other models: " + ", ".join(others))
        mwp = fmt_time(t.mwp_cwp_us)
        out.append(f"MWP-CWP estimate: {mwp}" + (f" ({t.mwp_cwp_class})" if t.mwp_cwp_class else "")
                   if mwp else f"MWP-CWP estimate: {NA}")
        if _pair(t.roofline_us):
            lo, hi = fmt_time(t.roofline_us[0]), fmt_time(t.roofline_us[1])  # type: ignore[index]
            out.append(f"Roofline range: {lo} – {hi}" if lo != hi else f"Roofline bound: {lo}")
        else:
            out.append(f"Roofline range: {NA}")
    ev = k.energy.event if k.energy is not None else None
    if ev is not None and ev.total_uj > 0:
        out.append(f"Per-event energy model's own total: {fmt_energy_uj(ev.total_uj)} (dynamic "
                   f"{fmt_energy_uj(ev.dynamic_uj)}, constant {fmt_energy_uj(ev.constant_uj)}, "
                   f"idle {fmt_energy_uj(ev.idle_uj)})")
    if not out:
        return []
    default = TIME_MODELS[DEFAULT_TIME_MODEL]
    head = (f"**Other models** — alternatives for comparison, not the answer: the time above is the "
            f"{t.model if t is not None and t.model else default} model's (Kerncast's default is {default}; "
            "`--time-model` picks another), the energy above is power × that time")
    return [head, "", *[f"- {line}" for line in out]]


def power_section(k: KernelReport) -> list[str]:
    p = k.power
    if p is None or fmt_watts(p.watts) is None:
        return [f"**Power** {NA}{_notes_about(k, 'power')}"]
    line = f"**Power ≈ {fmt_watts(p.watts)}**"
    if _pair(p.interval):
        line += f" (90% interval {p.interval[0]:.0f}–{p.interval[1]:.0f} W)"
    if p.model:
        line += f", model: {p.model}"
    if p.trained_on:
        line += f" (trained on {p.trained_on})"
    out = [line, *power_models_lines(p)]
    if p.explanation:
        def w(v: Any) -> float:
            return float(v) if isinstance(v, int | float) else 0.0

        largest = max(max(abs(w(e.watts)), abs(w(e.lime_watts))) for e in p.explanation)
        out += ["", "| feature | value | SHAP W | LIME W | |", "|---|---:|---:|---:|---|"]
        for e in p.explanation:
            label = e.name or e.feature or "?"
            sign = "+" if w(e.watts) >= 0 else "−"
            lime = _num(e.lime_watts) if e.lime_watts is not None else "–"
            shap = _num(e.watts) if e.watts is not None else "–"
            out.append(f"| {label} | {_num(e.value)} | {shap} | {lime} | {sign}{_bar(w(e.watts), largest)} |")
        out.append("")
    for a in p.assumptions:
        out.append(f"- power model assumed: {a}")
    return out


def power_models_lines(p: Any) -> list[str]:
    """Both power models side by side, and the event model's physical drivers (beside the statistical model's
    feature contributions, which the table below lists)."""
    out = []
    both = models_text(p.models or {})
    if both:
        out += ["", f"Models: {both}"]
    drivers = drivers_text(p.drivers or [])
    if drivers:
        out += ["", f"Physical drivers (event model): {drivers}"]
    return out


#: Source lines listed in the hover's per-line energy table (the JSON lists them all; the text report those of
#: at least 1%).
ENERGY_TABLE_LINES = 8


def energy_section(k: KernelReport) -> list[str]:
    """One energy figure (the shown power × the shown time) and where it goes, in shares, by the per-event
    model; that model's own total is an alternative and sits with the other models."""
    energy = k.energy
    e = fmt_energy_uj(energy_uj(energy))
    if energy is None or not e:
        return [f"**Energy** {NA}{_notes_about(k, 'energy')}"]
    iv = energy.interval_uj
    if _pair(iv):
        out = [f"**Energy ≈ {e}** (90% interval {fmt_energy_uj(iv[0])} – {fmt_energy_uj(iv[1])}; "
               "power × predicted time)"]
    else:
        out = [f"**Energy ≈ {e}** (power × predicted time)"]
    return out + event_energy_table(energy.event)


def event_energy_table(ev: EventEnergy | None) -> list[str]:
    """The split of the energy above by the per-event model: its dynamic / constant / idle shares, and the
    dynamic part's shares over source lines (largest first). Shares, not joules: the per-event model's own
    total differs from power × time, and a second total would leave the reader two answers."""
    if ev is None or not ev.lines or ev.total_uj <= 0:
        return []
    total = ev.total_uj
    out = ["", f"Split of this energy (per-event model, shares): dynamic {ev.dynamic_uj / total:.0%}, "
               f"constant {ev.constant_uj / total:.0%}, idle {ev.idle_uj / total:.0%}",
           "", "| line | share of dynamic | events |", "|---:|---:|---|"]
    placed = ev.line_dynamic_uj
    for ln in sorted(ev.lines, key=lambda ln: -ln.uj)[:ENERGY_TABLE_LINES]:
        top = sorted(ln.events.items(), key=lambda kv: -kv[1])[:3]
        events = ", ".join(f"{name} {uj / ln.uj:.0%}" for name, uj in top if ln.uj)
        share = ln.uj / placed if placed > 0 else 0.0
        out.append(f"| {ln.line} | {share:.0%} | {events} |")
    return out


def launch_section(k: KernelReport) -> list[str]:
    launch = k.launch
    if launch is None:
        return [f"**Launch** unknown — {ANNOTATION_HINT}{_notes_about(k, 'launch')}"]
    head = f"**Launch** `{launch_text(launch)}`" + ("" if launch_known(launch) else f" (assumed — {ANNOTATION_HINT})")
    out = [head, ""]
    rows = [("grid", launch.grid, fmt_dim(launch.grid.value)), ("block", launch.block, fmt_dim(launch.block.value)),
            ("dynamic_shared_bytes", launch.dynamic_shared_bytes, _num(launch.dynamic_shared_bytes.value))]
    if not k.loops:  # no loop mapped to a source line: the launch's one count is all there is
        rows.append(("loops", launch.loops, _num(launch.loops.value)))
    out += ["| | value | from |", "|---|---|---|"]
    for key, sourced, value in rows:
        where = f"{sourced.source}: {sourced.detail}" if sourced.detail else sourced.source
        out.append(f"| {key} | {value} | {where} |")
    out += loop_rows(k)
    for name, p in launch.params.items():
        out.append(f"| param `{name}` | {_num(p.value)} | {p.source} |")
    if launch.assumptions:
        out += ["", "Assumed: " + "; ".join(str(a) for a in launch.assumptions)]
    return out


def loop_rows(k: KernelReport) -> list[str]:
    """One launch-table row per loop: the trip count the prediction used for it and where it came from (read
    from the code, the launch, an annotation, or a guess), instead of the launch's single default count."""
    out = []
    where = f"{os.path.basename(k.file)} " if k.file else ""
    for lp in k.loops:
        count = "unknown" if lp.trip_count is None else str(lp.trip_count)
        source = lp.trip_source or "unknown"
        how = f"{source}: {lp.trip_detail}" if lp.trip_detail else source
        out.append(f"| loop at {where}line {lp.header_line} | {count} | {how} |")
    return out


def resources_section(k: KernelReport) -> list[str]:
    regs = "unknown" if k.registers is None else str(k.registers)
    smem = "unknown" if k.shared_bytes is None else f"{k.shared_bytes} B"
    line = f"Registers/thread: {regs} · static shared memory: {smem}"
    if k.resources is not None and (spills := k.resources.spill_text()):
        line += f" · {spills}"
    occ = k.occupancy
    if occ is not None and isinstance(occ.occupancy, int | float):
        occ_line = (f"Occupancy: {occ.occupancy:.0%} ({occ.active_warps_per_sm} of "
                    f"{occ.max_warps_per_sm} warps/SM, limited by {occ.limiter})")
    else:
        occ_line = f"Occupancy: {NA}"
    return [line, occ_line]


def kernel_markdown(k: KernelReport, gpu: str, arch: str | None, full: bool = False,
                    compiler: str | None = None, file_notes: Sequence[str] = (), gpu_name: str | None = None) -> str:
    """Hover (and, with `full`, the report) of one kernel; `compiler` names the nvcc that produced its PTX, and
    `file_notes` say how the file was compiled (its target, its build flags, relocatable code), which every
    kernel's numbers depend on."""
    title = f"### {k.name} — on {gpu_label(gpu, gpu_name)}" + (f" ({arch})" if arch else "")
    where = f"{os.path.basename(k.file)} " if k.file else ""  # a kernel of an included header: its lines are there
    parts = [title, ""] + ([f"Defined in `{k.file}`", ""] if k.file else [])
    parts += time_section(k) + [""]
    parts += power_section(k) + [""]
    parts += energy_section(k) + [""]
    parts += launch_section(k) + [""]
    parts += resources_section(k)
    if k.findings:
        parts += ["", "**Findings**"]
        parts += [f"- {where}line {f.line}: `{f.code}` {f.message}" for f in k.findings]
    if full:
        if k.instruction_mix:
            parts += ["", f"Instructions: {k.instruction_count} ("
                      + ", ".join(f"{n} {t}" for t, n in k.instruction_mix.items()) + ")"]
        for lp in k.loops:
            trips = f", trip count {lp.trip_count} ({lp.trip_source})" if lp.trip_count is not None else ""
            how = f": {lp.trip_detail}" if lp.trip_detail else ""  # how it was read, or why it is assumed
            parts.append(f"- loop at {where}line {lp.header_line} (depth {lp.depth}{trips}){how}")
        for a in k.time.assumptions if k.time is not None else []:
            parts.append(f"- time model assumed: {a}")
        parts.append(f"\nMangled name: `{k.mangled}`")
    if other := other_models_section(k):
        parts += ["", *other]
    if k.notes:
        parts += ["", *[f"_note: {n}_" for n in k.notes]]
    if compiler:
        parts += ["", f"_compiled by {compiler}" + (f" for {arch}_" if arch else "_")]
    parts += [f"_{n}_" for n in file_notes]
    return "\n".join(parts).rstrip() + "\n"


def finding_markdown(f: Finding) -> str:
    """A flagged line's hover: the finding, its numbers and what to do."""
    out = [f"**{f.code}** ({f.severity}): {f.message}"]
    if f.detail:
        out += ["", "| | |", "|---|---|"]
        out += [f"| {key} | {_num(v)} |" for key, v in f.detail.items()
                if key != "advice" and not isinstance(v, dict | list)]
    known = is_code(str(f.code))
    fix_advice = (f.fix.description or str(f.fix.kind)) if f.fix is not None else None
    advice = fix_advice or f.detail.get("advice") or (rule(str(f.code)).remedy if known else None)
    if advice:
        out += ["", f"**What to do:** {advice}"]
    for r in f.related:
        out.append(f"- see line {r.line}: {r.message}")
    if known:
        spec = rule(str(f.code))
        ncu = f" · Nsight Compute: {spec.ncu_rule}" if spec.ncu_rule else ""
        out += ["", f"[{spec.title}]({spec.href}){ncu} · `kerncast rules {spec.code.value}`"]
    return "\n".join(out) + "\n"


def file_markdown(report: FileReport) -> str:
    """Every kernel's full report, for a file without a kernel under the cursor."""
    parts = [kernel_markdown(k, report.gpu or "?", report.arch, full=True, compiler=report.compiler,
                             file_notes=report.notes, gpu_name=report.gpu_name)
             for k in report.kernels]
    return "\n---\n".join(parts) if parts else "No kernel in this file.\n"


def watts_label(k: KernelReport) -> str:
    return fmt_watts(k.power.watts if k.power is not None else None) or "power not available"
