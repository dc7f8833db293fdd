"""The kernel report as one self-contained HTML page (`kerncast report --html`).

The page is opened from disk, often in a browser with other pages open, and shows text that comes from the
analysed code (kernel names, source lines, file names, messages quoting them): all such text goes through
`html.escape`, the page carries no script at all, and its Content-Security-Policy forbids every script,
remote load and form, so that even a mistake here cannot run anything. Styles and the charts are inline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from kerncast.analysis.report import FileReport, KernelReport
from kerncast.server.render_text import launch_dims
from kerncast.server.roofline_svg import KernelPoint, Roofs, point_of, roofline_svg
from kerncast.server.units import fmt_energy_uj, fmt_time

#: no script, no remote anything: images only as inline data, styles only inline
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'; form-action 'none'; " \
      "base-uri 'none'"

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; border-top: 2px solid #ccc; padding-top: .6em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: 2px 8px; text-align: left; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre, code, td.src { font-family: ui-monospace, monospace; white-space: pre; }
.share { display: inline-block; height: 10px; background: #d62728; vertical-align: middle; }
.bar { display: inline-block; height: 14px; background: #1f77b4; vertical-align: middle; }
.row { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; } .row > div { max-width: 600px; }
svg.roofline text { font-size: 11px; fill: #333; } svg.roofline .plot { fill: #fafafa; stroke: #999; }
svg.roofline .grid { stroke: #e4e4e4; } svg.roofline .roof-sp { stroke: #222; }
svg.roofline .roof-dp { stroke: #777; stroke-dasharray: 6 3; }
svg.roofline .roof-other { stroke: #1f77b4; stroke-dasharray: 2 3; }
.finding-error { color: #b00; } .finding-warning { color: #a60; }
"""


@dataclass(slots=True)
class GpuFigures:
    """One kernel on another GPU: its report there, and the chart's roofs and point for that GPU."""

    roofs: Roofs
    kernel: KernelReport
    point: KernelPoint | None


@dataclass(slots=True)
class PageInput:
    """What the page shows: the report on the main GPU, its roofs, the source text and the other GPUs."""

    report: FileReport
    roofs: Roofs
    source: str
    #: other GPUs' figures by kernel name (same order for every kernel)
    others: dict[str, list[GpuFigures]] = field(default_factory=dict)


def _t(us: float | None) -> str:
    return escape(fmt_time(us) or "unknown")


def _summary(k: KernelReport) -> str:
    """Time, range, bottleneck, power, energy, registers and occupancy, as a two-column table."""
    rows = []
    if k.time is not None:
        rng = k.time.range_us
        span = f" (range {_t(rng[0])} to {_t(rng[1])})" if rng else ""
        rows.append(("time", f"{_t(k.time.us)}{span}, {escape(k.time.model)} model"))
        rows.append(("bottleneck", escape(k.time.bottleneck)))
    if k.power is not None:
        rows.append(("power", f"{k.power.watts:.0f} W"))
    if k.energy is not None:
        rows.append(("energy", escape(fmt_energy_uj(k.energy.uj) or "unknown") + " (power x predicted time)"))
    if k.launch is not None:
        rows.append(("launch", escape(launch_dims(k.launch.to_json()))))
    rows.append(("registers/thread", escape(str(k.registers if k.registers is not None else "unknown"))))
    if k.occupancy is not None:
        occ = k.occupancy.to_json()
        rows.append(("occupancy", f"{occ.get('occupancy', 0):.0%}, limited by {escape(str(occ.get('limiter')))}"))
    body = "".join(f"<tr><th>{a}</th><td>{b}</td></tr>" for a, b in rows)
    return f'<table class="summary">{body}</table>'


def _breakdown(k: KernelReport) -> str:
    """The shown model's time split, one bar per part, each scaled to the predicted time.

    The kerncast model overlaps its compute and memory lines (the time is not their sum), so its parts are
    drawn side by side rather than stacked; the other models have no split of their own, so the thesis
    scheduler's Eq. 4.8 terms are shown, and labelled as that model's.
    """
    t = k.time
    if t is None:
        return ""
    if t.model == "kerncast" and "kerncast_compute_us" in t.detail:
        parts = {"compute": t.detail.get("kerncast_compute_us"), "memory": t.detail.get("kerncast_memory_us"),
                 "launch": t.detail.get("kerncast_launch_us")}
        title = "kerncast model: compute and memory lines overlap; the time is the longer one plus what is left"
    else:
        parts = {name.removesuffix("_us").replace("_", " "): v for name, v in t.breakdown.items()}
        title = ("the thesis scheduler's terms (Eq. 4.8)" if t.model.startswith("thesis") else
                 f"the {t.model} model gives no split: the thesis scheduler's terms (Eq. 4.8), another model's, "
                 "for orientation only")
    shown = {n: float(v) for n, v in parts.items() if isinstance(v, int | float) and v > 0}
    if not shown:
        return ""
    top = max([*shown.values(), t.us])
    rows = "".join(f'<tr><td>{escape(n)}</td><td class="num">{_t(v)}</td><td><span class="bar" '
                   f'style="width:{300 * v / top:.0f}px"></span></td></tr>' for n, v in shown.items())
    return f'<div class="breakdown"><h3>time breakdown</h3><p>{escape(title)}</p><table>{rows}</table></div>'


def _line_table(k: KernelReport, lines: tuple[str, ...]) -> str:
    """Each source line with dynamic energy: its share of the kernel's dynamic energy beside its text."""
    ev = k.energy.to_json().get("event_model") if k.energy is not None else None
    rows_in = sorted((ev or {}).get("lines", []), key=lambda r: r["line"])
    if not rows_in:
        return "<p>no per-line figures (the per-event energy model did not run for this kernel)</p>"
    rows = []
    for r in rows_in:
        n = int(r["line"])
        text = lines[n - 1] if k.file is None and 1 <= n <= len(lines) else ""
        at = f' data-line="{n}"' if k.file is None else ""  # the editor's view of the page goes to the line
        rows.append(f'<tr{at}><td class="num">{n}</td><td class="num">{r["share"]:.1%}</td>'
                    f'<td><span class="share" style="width:{100 * r["share"]:.0f}px"></span></td>'
                    f'<td class="num">{escape(fmt_energy_uj(r["uj"]) or "")}</td>'
                    f'<td class="src">{escape(text)}</td></tr>')
    return ('<table class="lines"><tr><th>line</th><th colspan="2">share of dynamic energy</th><th>energy</th>'
            f'<th>source</th></tr>{"".join(rows)}</table>')


def _findings(k: KernelReport) -> str:
    """The kernel's findings, each with its expected gain when the analysis gives one."""
    if not k.findings:
        return "<p>no findings</p>"
    items = []
    for f in k.findings:
        gain = f.detail.get("gain") if f.detail else None
        if isinstance(gain, dict) and "speedup" in gain:  # the message already says it in words
            gain = f'{gain["speedup"]:.2f}x, {gain.get("model", "model")}'
        gain_text = f" (gain: {escape(str(gain))})" if gain is not None else ""
        items.append(f'<li class="finding-{escape(f.severity)}">line {f.line}: {escape(f.severity)} '
                     f"[{escape(str(f.code))}] {escape(f.message)}{gain_text}</li>")
    return f'<ul class="findings">{"".join(items)}</ul>'


def _gpu_table(k: KernelReport, main_gpu: str, others: list[GpuFigures]) -> str:
    """The kernel's time, power, energy and bottleneck on each GPU."""
    rows = []
    for gpu, kr in [(main_gpu, k), *((o.roofs.gpu, o.kernel) for o in others)]:
        t, p, e = kr.time, kr.power, kr.energy
        rows.append(f"<tr><td>{escape(gpu)}</td><td class=\"num\">{_t(t.us if t else None)}</td>"
                    f'<td class="num">{f"{p.watts:.0f} W" if p else "unknown"}</td>'
                    f'<td class="num">{escape(fmt_energy_uj(e.uj) if e else "unknown")}</td>'
                    f"<td>{escape(t.bottleneck if t else 'unknown')}</td></tr>")
    return ("<table class=\"gpus\"><tr><th>GPU</th><th>time</th><th>power</th><th>energy</th><th>bottleneck</th>"
            f"</tr>{''.join(rows)}</table>")


def _kernel_section(page: PageInput, k: KernelReport, lines: tuple[str, ...]) -> str:
    others = page.others.get(k.name, [])
    point = point_of(page.roofs.gpu, k)
    chart = roofline_svg(page.roofs, point, [(o.roofs, o.point) for o in others if o.point is not None])
    where = escape(k.file or page.report.file)
    no_point = "" if point is not None else "<p>no point: the kernel's time, work or DRAM bytes are unknown</p>"
    gpus = _gpu_table(k, page.roofs.gpu, others) if others else ""
    return (f'<section class="kernel"><h2>kernel <code>{escape(k.name)}</code></h2>'
            f"<p>{where}, line {escape(str(k.line))}</p>"
            f'<div class="row"><div>{chart}{no_point}</div><div>{_summary(k)}{_breakdown(k)}</div></div>'
            f"{gpus}<h3>per line</h3>{_line_table(k, lines)}<h3>findings</h3>{_findings(k)}</section>")


def render_page(page: PageInput) -> str:
    """The whole page as a string."""
    r = page.report
    lines = tuple(page.source.splitlines())
    head = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>Kerncast report: {escape(r.file)}</title><style>{STYLE}</style></head><body>")
    intro = (f"<h1>Kerncast report: <code>{escape(r.file)}</code></h1>"
             f"<p>GPU {escape(r.gpu)}, target {escape(str(r.arch))}"
             + (f", {escape(r.toolkit)}" if r.toolkit else "") + "</p>")
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes)
    file_findings = "".join(f"<li>{escape(f.severity)} [{escape(str(f.code))}] line {f.line}: {escape(f.message)}"
                            "</li>" for f in r.findings)
    extra = (f"<ul>{file_findings}{notes}</ul>" if notes or file_findings else "")
    kernels = [_kernel_section(page, k, lines) for k in r.all_kernels()]
    if not kernels:
        kernels = ["<p>no kernel was analysed</p>"]
    return head + intro + extra + "".join(kernels) + "</body></html>\n"

