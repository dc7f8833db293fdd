"""Plain-text rendering of a FileReport for the terminal (`kerncast analyze --format text`).

Only formatting lives here: every number comes from the report, so the CLI and the editor agree.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.finding import Finding
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.server.units import drivers_text, fmt_energy_uj, fmt_time, models_text, time_range

#: in the text report, source lines below this share of a kernel's dynamic energy are summed into one line
MINOR_LINE_SHARE = 0.01


def _fmt_bytes(n: int | None) -> str:
    return "unknown" if n is None else f"{n} B"


def launch_dims(launch: dict[str, Any]) -> str:
    """`<<<grid, block, dynamic shared bytes>>>` of a launch's JSON, "?" for an unknown grid or block (the text
    report and the HTML page write a launch alike)."""
    grid, block = launch.get("grid"), launch.get("block")
    g = "?" if grid is None else "x".join(str(v) for v in grid)
    b = "?" if block is None else "x".join(str(v) for v in block)
    return f"<<<{g}, {b}, {launch.get('dynamic_shared_bytes', 0)}>>>"


def _fmt_launch(launch: dict[str, Any] | None) -> str | None:
    if not launch:
        return None
    src = launch.get("source", {})
    where = ", ".join(f"{k} from {v}" for k, v in src.items() if isinstance(v, str)) if isinstance(src, dict) else ""
    return launch_dims(launch) + (f"  ({where})" if where else "")


def _finding_line(f: Finding) -> str:
    where = f"{f.file}:" if f.file is not None else ""
    return f"  {where}{f.line}:{f.column} {f.severity} [{f.code}] {f.message}"


def _kernel_lines(k: KernelReport) -> list[str]:
    data = k.to_json()
    where = f"{k.file} " if k.file is not None else ""  # a kernel of an included header: its lines are the header's
    out = [f"kernel {k.name}  ({where}line {k.line if k.line is not None else '?'}, {k.mangled})"]
    regs = "unknown" if k.registers is None else str(k.registers)
    spills = k.resources.spill_text() if k.resources is not None else ""
    spills = f", {spills}" if spills else ""
    out.append(f"  registers/thread: {regs}, static shared memory: {_fmt_bytes(k.shared_bytes)}{spills}")
    mix = ", ".join(f"{n} {t}" for t, n in k.instruction_mix.items())
    out.append(f"  instructions: {k.instruction_count} ({mix})")
    for lp in k.loops:
        span = f"lines {lp.lines[0]}-{lp.lines[1]}" if lp.lines else "no line info"
        trips = f", trip count {lp.trip_count} ({lp.trip_source})" if lp.trip_count is not None else ""
        out.append(f"  loop at line {lp.header_line} ({span}, depth {lp.depth}{trips})")
        if lp.trip_detail and lp.trip_source == "ptx":
            out.append(f"    {lp.trip_detail}")
    launch = _fmt_launch(data.get("launch"))
    if launch:
        out.append(f"  launch: {launch}")
        out.extend(f"    assumed: {a}" for a in k.launch.assumptions if k.launch is not None)
    occ = data.get("occupancy")
    if occ:
        out.append(f"  occupancy: {occ.get('occupancy', 0):.0%} ({occ.get('active_warps_per_sm')} warps/SM, "
                   f"limited by {occ.get('limiter')})")
    t = data.get("time")
    if t:
        lo, hi = t.get("roofline_us") or (None, None)
        roof = f", roofline {fmt_time(lo)} to {fmt_time(hi)}" if lo is not None and hi is not None else ""
        mwp = f", MWP-CWP {fmt_time(t['mwp_cwp_us'])}" if t.get("mwp_cwp_us") is not None else ""
        rng = time_range(k.time) if k.time is not None else None
        span = f", range {rng[0]} to {rng[1]}" if rng else ""
        out.append(f"  time: {fmt_time(t['us'])} ({t.get('model')}; bottleneck {t.get('bottleneck')}){span}{mwp}"
                   f"{roof}")
    p = data.get("power")
    if p:
        lo, hi = p.get("interval", (None, None))
        trained = f", trained on {p['trained_on']}" if p.get("trained_on") else ""
        out.append(f"  power: {p['watts']:.0f} W (90% interval {lo:.0f}-{hi:.0f} W; {p.get('model')}{trained})")
        out.extend(power_model_lines(p))
    e = data.get("energy")
    if e:
        out.append(f"  energy: {fmt_energy_uj(e['uj'])} (power x predicted time)")
        out.extend(_event_lines(e.get("event_model")))
    out.extend(_finding_line(f) for f in k.findings)
    out.extend(f"  note: {n}" for n in k.notes)
    return out


def power_model_lines(p: dict) -> list[str]:
    """Both power models' answers and the event model's physical drivers, one line each."""
    out = []
    both = models_text(p.get("models") or {})
    if both:
        out.append(f"    models: {both}")
    drivers = drivers_text([(d.get("driver", "?"), float(d.get("share", 0.0))) for d in p.get("drivers") or []])
    if drivers:
        out.append(f"    drivers: {drivers}")
    return out


def _event_lines(ev: dict | None) -> list[str]:
    """The per-event energy model's total and its per-line table.

    Lines with at least `MINOR_LINE_SHARE` of the dynamic energy are listed; the rest are summed into one
    line, because a kernel's index arithmetic otherwise fills the report with rows of "0%" (the JSON and
    SARIF reports keep every line).
    """
    if not ev:
        return []
    out = [f"  per-event energy: {fmt_energy_uj(ev['uj'])} (dynamic {fmt_energy_uj(ev['dynamic_uj'])}, "
           f"constant {fmt_energy_uj(ev['constant_uj'])}, idle {fmt_energy_uj(ev['idle_uj'])})"]
    lines = ev.get("lines", [])
    minor = [ln for ln in lines if ln["share"] < MINOR_LINE_SHARE]
    for ln in lines:
        if ln["share"] >= MINOR_LINE_SHARE:
            events = ", ".join(f"{name} {uj / ln['uj']:.0%}" for name, uj in ln["events"].items()) if ln["uj"] else ""
            out.append(f"    line {ln['line']}: {ln['share']:.0%} of the dynamic energy ({events})")
    if minor:
        share = sum(ln["share"] for ln in minor)
        out.append(f"    {len(minor)} more line{'s' if len(minor) > 1 else ''}, each below {MINOR_LINE_SHARE:.0%}: "
                   f"{share:.1%} of the dynamic energy together")
    return out


def render_file_report(report: FileReport) -> str:
    """The report as lines of text, one block per kernel."""
    lines = [f"{report.file}: GPU {report.gpu}, target {report.arch}"
             + (f", {report.toolkit}" if report.toolkit else "")]
    lines.extend(_finding_line(f) for f in report.findings)
    lines.extend(f"note: {n}" for n in report.notes)
    for k in report.all_kernels():
        lines.append("")
        lines.extend(_kernel_lines(k))
    return "\n".join(lines) + "\n"
