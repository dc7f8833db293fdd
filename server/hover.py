"""Markdown for hovers and for the full kernel report (`kerncast.showReport`).

Reads the JSON forms of a kernel's report; each part that is missing says "not available" and why when the
report's notes tell.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.rules import is_code, rule
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
from kerncast.server.units import time_range

NA = "_not available_"
BAR_WIDTH = 12


def _num(v: Any, digits: int = 3) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _notes_about(k: dict[str, Any], *words: str) -> str:
    hits = [n for n in k.get("notes") or [] if any(w in n.lower() for w in words)]
    return f" ({hits[0]})" if hits else ""


def _bar(value: float, largest: float) -> str:
    if largest <= 0:
        return ""
    n = round(abs(value) / largest * BAR_WIDTH)
    return ("█" * n) or "▏"


#: a report's model name -> its key in `models`
_MODEL_KEYS = {"thesis-scheduler": "thesis"}


def time_section(k: dict[str, Any]) -> list[str]:
    t = k.get("time")
    if not t or fmt_time(t.get("us")) is None:
        return [f"**Time** {NA}{_notes_about(k, 'time', 'launch', 'gpu')}"]
    out = [f"**Time ≈ {fmt_time(t['us'])}**" + (f" ({t['model']})" if t.get("model") else "")
           + (f", bottleneck **{t['bottleneck']}**" if t.get("bottleneck") else "")]
    rng = time_range(t)
    if rng:
        out.append(f"Range {rng[0]} – {rng[1]}"
                   + (f": {t['range_basis']}" if t.get("range_basis") else ""))
    models = t.get("models") or {}
    others = [f"{name} {fmt_time(v)}" for name, v in models.items()
              if isinstance(v, int | float) and name != _MODEL_KEYS.get(t.get("model"), t.get("model"))]
    if others:
        out.append("Other models: " + ", ".join(others))
    extra = []
    if isinstance(t.get("cycles"), int | float):
        extra.append(f"{t['cycles']:.4g} cycles")
    if t.get("waves") is not None:
        extra.append(f"{_num(t['waves'])} waves")
    if extra:
        out.append("; ".join(extra))
    breakdown = t.get("breakdown") or {}
    if isinstance(breakdown, dict) and breakdown:
        numeric = {key: v for key, v in breakdown.items() if isinstance(v, int | float)}
        largest = max((abs(v) for v in numeric.values()), default=0.0)
        out += ["", "| part | value | |", "|---|---:|---|"]
        out += [f"| {key} | {_num(v)} | {_bar(v, largest)} |" for key, v in numeric.items()]
        out.append("")
    mwp = fmt_time(t.get("mwp_cwp_us"))
    out.append(f"MWP-CWP estimate: {mwp}" + (f" ({t['mwp_cwp_class']})" if t.get("mwp_cwp_class") else "")
               if mwp else f"MWP-CWP estimate: {NA}")
    roof = t.get("roofline_us")
    if isinstance(roof, list | tuple) and len(roof) == 2 and all(isinstance(x, int | float) for x in roof):
        lo, hi = fmt_time(roof[0]), fmt_time(roof[1])
        out.append(f"Roofline range: {lo} – {hi}" if lo != hi else f"Roofline bound: {lo}")
    else:
        out.append(f"Roofline range: {NA}")
    return out


def power_section(k: dict[str, Any]) -> list[str]:
    p = k.get("power")
    if not p or fmt_watts(p.get("watts")) is None:
        return [f"**Power** {NA}{_notes_about(k, 'power')}"]
    line = f"**Power ≈ {fmt_watts(p['watts'])}**"
    iv = p.get("interval")
    if isinstance(iv, list | tuple) and len(iv) == 2 and all(isinstance(x, int | float) for x in iv):
        line += f" (90% interval {iv[0]:.0f}–{iv[1]:.0f} W)"
    if p.get("model"):
        line += f", model: {p['model']}"
    if p.get("trained_on"):
        line += f" (trained on {p['trained_on']})"
    out = [line]
    expl = [e for e in p.get("explanation") or [] if isinstance(e, dict)]
    if expl:
        def w(e: dict[str, Any], key: str) -> float:
            v = e.get(key)
            return float(v) if isinstance(v, int | float) else 0.0

        largest = max(max(abs(w(e, "watts")), abs(w(e, "lime_watts"))) for e in expl)
        out += ["", "| feature | value | SHAP W | LIME W | |", "|---|---:|---:|---:|---|"]
        for e in expl:
            label = e.get("name") or e.get("feature") or "?"
            sign = "+" if w(e, "watts") >= 0 else "−"
            lime = _num(e.get("lime_watts")) if e.get("lime_watts") is not None else "–"
            shap = _num(e.get("watts")) if e.get("watts") is not None else "–"
            out.append(f"| {label} | {_num(e.get('value'))} | {shap} | {lime} | {sign}{_bar(w(e, 'watts'), largest)} |")
        out.append("")
    for a in p.get("assumptions") or []:
        out.append(f"- power model assumed: {a}")
    return out


#: Source lines listed in the hover's per-line energy table (the JSON and the text report list them all).
ENERGY_TABLE_LINES = 8


def energy_section(k: dict[str, Any]) -> list[str]:
    e = fmt_energy_uj(energy_uj(k.get("energy")))
    if not e:
        return [f"**Energy** {NA}{_notes_about(k, 'energy')}"]
    iv = (k.get("energy") or {}).get("interval")
    if isinstance(iv, list | tuple) and len(iv) == 2 and all(isinstance(x, int | float) for x in iv):
        out = [f"**Energy ≈ {e}** (90% interval {fmt_energy_uj(iv[0])} – {fmt_energy_uj(iv[1])}; "
               "power × predicted time)"]
    else:
        out = [f"**Energy ≈ {e}**"]
    return out + event_energy_table(k.get("energy") or {})


def event_energy_table(energy: dict[str, Any]) -> list[str]:
    """The per-event model's total and its split over source lines (largest first)."""
    ev = energy.get("event_model")
    if not isinstance(ev, dict) or not ev.get("lines"):
        return []
    out = ["", f"Per-event model: {fmt_energy_uj(ev.get('uj'))} (dynamic {fmt_energy_uj(ev.get('dynamic_uj'))}, "
               f"constant {fmt_energy_uj(ev.get('constant_uj'))}, idle {fmt_energy_uj(ev.get('idle_uj'))})",
           "", "| line | share | events |", "|---:|---:|---|"]
    for ln in ev["lines"][:ENERGY_TABLE_LINES]:
        events = ", ".join(f"{name} {uj / ln['uj']:.0%}" for name, uj in list(ln.get("events", {}).items())[:3]
                           if ln.get("uj"))
        out.append(f"| {ln.get('line')} | {ln.get('share', 0):.0%} | {events} |")
    return out


def launch_section(k: dict[str, Any]) -> list[str]:
    launch = k.get("launch")
    if not launch:
        return [f"**Launch** unknown — {ANNOTATION_HINT}{_notes_about(k, 'launch')}"]
    src = launch.get("source") or {}
    detail = launch.get("detail") or {}
    head = f"**Launch** `{launch_text(launch)}`" + ("" if launch_known(launch) else f" (assumed — {ANNOTATION_HINT})")
    out = [head, ""]
    rows = [("grid", fmt_dim(launch.get("grid"))), ("block", fmt_dim(launch.get("block"))),
            ("dynamic_shared_bytes", _num(launch.get("dynamic_shared_bytes"))), ("loops", _num(launch.get("loops")))]
    out += ["| | value | from |", "|---|---|---|"]
    for key, value in rows:
        where = src.get(key, "?") if isinstance(src, dict) else "?"
        if detail.get(key):
            where = f"{where}: {detail[key]}"
        out.append(f"| {key} | {value} | {where} |")
    params = launch.get("params") or {}
    psrc = src.get("params", {}) if isinstance(src, dict) else {}
    for name, value in params.items():
        out.append(f"| param `{name}` | {_num(value)} | {psrc.get(name, '?')} |")
    assumptions = launch.get("assumptions") or []
    if assumptions:
        out += ["", "Assumed: " + "; ".join(str(a) for a in assumptions)]
    return out


def resources_section(k: dict[str, Any]) -> list[str]:
    regs = "unknown" if k.get("registers") is None else str(k["registers"])
    smem = "unknown" if k.get("shared_bytes") is None else f"{k['shared_bytes']} B"
    line = f"Registers/thread: {regs} · static shared memory: {smem}"
    if k.get("spill_stores") or k.get("spill_loads"):
        line += f" · spills {k.get('spill_stores') or 0} B stored / {k.get('spill_loads') or 0} B loaded"
    occ = k.get("occupancy")
    if occ and isinstance(occ.get("occupancy"), int | float):
        occ_line = (f"Occupancy: {occ['occupancy']:.0%} ({occ.get('active_warps_per_sm')} of "
                    f"{occ.get('max_warps_per_sm')} warps/SM, limited by {occ.get('limiter')})")
    else:
        occ_line = f"Occupancy: {NA}"
    return [line, occ_line]


def kernel_markdown(k: dict[str, Any], gpu: str, arch: str | None, full: bool = False,
                    compiler: str | None = None) -> str:
    """Hover (and, with `full`, the report) of one kernel; `compiler` names the nvcc that produced its PTX."""
    title = f"### {k.get('name')} — on {gpu_label(gpu)}" + (f" ({arch})" if arch else "")
    parts = [title, ""]
    parts += time_section(k) + [""]
    parts += power_section(k) + [""]
    parts += energy_section(k) + [""]
    parts += launch_section(k) + [""]
    parts += resources_section(k)
    findings = k.get("findings") or []
    if findings:
        parts += ["", "**Findings**"]
        parts += [f"- line {f['line']}: `{f['code']}` {f['message']}" for f in findings]
    if full:
        mix = k.get("instruction_mix") or {}
        if mix:
            parts += ["", f"Instructions: {k.get('instruction_count')} ("
                      + ", ".join(f"{n} {t}" for t, n in mix.items()) + ")"]
        for lp in k.get("loops") or []:
            trips = f", trip count {lp['trip_count']} ({lp.get('trip_source')})" \
                if lp.get("trip_count") is not None else ""
            how = f": {lp['trip_detail']}" if lp.get("trip_detail") and lp.get("trip_source") == "ptx" else ""
            parts.append(f"- loop at line {lp.get('header_line')} (depth {lp.get('depth')}{trips}){how}")
        t = k.get("time") or {}
        for a in t.get("assumptions") or []:
            parts.append(f"- time model assumed: {a}")
        parts.append(f"\nMangled name: `{k.get('mangled')}`")
    notes = k.get("notes") or []
    if notes:
        parts += ["", *[f"_note: {n}_" for n in notes]]
    if compiler:
        parts += ["", f"_compiled by {compiler}" + (f" for {arch}_" if arch else "_")]
    return "\n".join(parts).rstrip() + "\n"


def finding_markdown(f: dict[str, Any]) -> str:
    """A flagged line's hover: the finding, its numbers and what to do."""
    out = [f"**{f['code']}** ({f['severity']}): {f['message']}"]
    detail = f.get("detail") or {}
    if detail:
        out += ["", "| | |", "|---|---|"]
        out += [f"| {key} | {_num(v)} |" for key, v in detail.items()
                if key != "advice" and not isinstance(v, dict | list)]
    fix = f.get("fix")
    known = is_code(str(f.get("code")))
    advice = (fix or {}).get("description") or (fix or {}).get("kind") or detail.get("advice") or \
        (rule(str(f["code"])).remedy if known else None)
    if advice:
        out += ["", f"**What to do:** {advice}"]
    for r in f.get("related") or []:
        out.append(f"- see line {r.get('line')}: {r.get('message')}")
    if known:
        spec = rule(str(f["code"]))
        ncu = f" · Nsight Compute: {spec.ncu_rule}" if spec.ncu_rule else ""
        out += ["", f"[{spec.title}]({spec.href}){ncu} · `kerncast rules {spec.code.value}`"]
    return "\n".join(out) + "\n"


def file_markdown(report: dict[str, Any]) -> str:
    """Every kernel's full report, for a file without a kernel under the cursor."""
    parts = [kernel_markdown(k, report.get("gpu", "?"), report.get("arch"), full=True,
                             compiler=report.get("compiler"))
             for k in report.get("kernels") or []]
    return "\n---\n".join(parts) if parts else "No kernel in this file.\n"


def watts_label(k: dict[str, Any]) -> str:
    return fmt_watts((k.get("power") or {}).get("watts")) or "power not available"
