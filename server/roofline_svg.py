"""The roofline chart of a kernel as inline SVG: log-log axes, the GPU's compute and bandwidth roofs, and the
kernel's point at its arithmetic intensity and predicted throughput with its time range as an error bar.

Only drawing lives here. The numbers come from the analysis: the work is the boat hull model's compute
operations (FMA counted twice, as the vendor peak counts it), the bytes the DRAM traffic the kerncast time
model counts, and the roofs the same profile figures the roofline range uses, so the chart and the reported
range cannot disagree. Every text is escaped; the SVG holds no script, link or external reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

from kerncast.analysis.timing.roofline import compute_peaks

WIDTH, HEIGHT = 560, 340
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 20, 50

#: colours of the kernel's point on the chart's GPU, then of the other GPUs' points
POINT_COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


@dataclass(frozen=True, slots=True)
class Roofs:
    """A GPU's roofs: the FP32 and FP64 compute peaks (ops/s, FMA twice) and the DRAM bandwidth (bytes/s)."""

    gpu: str
    sp_ops: float
    dp_ops: float
    bandwidth: float


@dataclass(frozen=True, slots=True)
class KernelPoint:
    """A kernel on a GPU: its work, DRAM bytes and predicted time with range (microseconds)."""

    gpu: str
    ops: float
    dram_bytes: float
    us: float
    low_us: float
    high_us: float

    @property
    def intensity(self) -> float | None:
        """Operations per DRAM byte; None when the launch moves no DRAM byte (its data stays in the L2)."""
        return self.ops / self.dram_bytes if self.dram_bytes > 0 else None

    def throughput(self, us: float) -> float:
        """Operations per second at a time of `us` microseconds."""
        return self.ops / (us * 1e-6)


def roofs_of(profile: Any) -> Roofs:
    """The roofs of a GPU profile: the roofline range's own peaks (`compute_peaks`) and DRAM bandwidth."""
    sp_ops, dp_ops = compute_peaks(profile)
    return Roofs(gpu=profile.name, sp_ops=sp_ops, dp_ops=dp_ops, bandwidth=profile.mem_bandwidth_gbs * 1e9)


def point_of(gpu: str, kernel: Any) -> KernelPoint | None:
    """The kernel's point, or None when its time, work or DRAM bytes are unknown (nothing to place)."""
    t = kernel.time
    if t is None or not t.us:
        return None
    ops, dram = t.detail.get("compute_ops"), t.detail.get("dram_bytes")
    if not ops or ops <= 0 or dram is None or dram < 0:
        return None
    low, high = t.range_us if t.range_us is not None else (t.us, t.us)
    return KernelPoint(gpu=gpu, ops=float(ops), dram_bytes=float(dram), us=t.us, low_us=low, high_us=high)


def _span(values: list[float]) -> tuple[float, float]:
    """Whole decades around the positive values, at least two decades wide."""
    lo = math.floor(math.log10(min(values)))
    hi = math.ceil(math.log10(max(values)))
    if hi - lo < 2:
        lo, hi = lo - 1, hi + 1
    return float(lo), float(hi)


class _Axes:
    """Log-log mapping from (intensity, ops/s) to SVG pixels."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float]) -> None:
        self.x, self.y = x, y

    def px(self, value: float) -> float:
        frac = (math.log10(value) - self.x[0]) / (self.x[1] - self.x[0])
        return LEFT + frac * (WIDTH - LEFT - RIGHT)

    def py(self, value: float) -> float:
        frac = (math.log10(value) - self.y[0]) / (self.y[1] - self.y[0])
        return HEIGHT - BOTTOM - frac * (HEIGHT - TOP - BOTTOM)


def _label_y(wanted: float, taken: list[float]) -> float:
    """A roof label's baseline: `wanted`, moved down past any label already within a line's height of it
    (two GPUs' roofs are often close: an A100's FP32 peak is 1.2x a V100's)."""
    y = wanted
    while any(abs(y - t) < 12 for t in taken):
        y += 12
    taken.append(y)
    return y


def _roof_line(axes: _Axes, peak: float, bandwidth: float, css: str, label: str, taken: list[float]) -> list[str]:
    """A roof: the bandwidth slope up to the ridge point, then flat at the peak."""
    x0, x1 = 10 ** axes.x[0], 10 ** axes.x[1]
    ridge = peak / bandwidth
    start = max(x0, 10 ** axes.y[0] / bandwidth)
    pts = [(start, start * bandwidth)]
    if x0 < ridge < x1:
        pts.append((ridge, peak))
    pts.append((x1, min(peak, x1 * bandwidth)))
    path = " ".join(f"{axes.px(a):.1f},{axes.py(b):.1f}" for a, b in pts)
    return [f'<polyline class="{css}" points="{path}" fill="none" stroke-width="2"/>',
            f'<text x="{WIDTH - RIGHT - 4}" y="{_label_y(axes.py(peak) - 4, taken):.1f}" text-anchor="end" '
            'class="roof-label">'
            f"{escape(label)}</text>"]


def _grid(axes: _Axes) -> list[str]:
    """Decade grid lines and their labels, and the axis titles."""
    out = []
    for e in range(int(axes.x[0]), int(axes.x[1]) + 1):
        x = axes.px(10.0 ** e)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}"/>')
        out.append(f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{10.0 ** e:g}</text>')
    for e in range(int(axes.y[0]), int(axes.y[1]) + 1):
        y = axes.py(10.0 ** e)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{10.0 ** (e - 9):g}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 12}" text-anchor="middle">'
               "arithmetic intensity (operations per DRAM byte)</text>")
    out.append(f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})">Gop/s</text>')
    return out


def _point(axes: _Axes, p: KernelPoint, colour: str, css: str) -> list[str]:
    """The kernel's point with a vertical error bar from its slowest to its fastest time."""
    intensity = p.intensity
    x = axes.px(intensity) if intensity is not None else WIDTH - RIGHT - 8
    y, y_fast, y_slow = axes.py(p.throughput(p.us)), axes.py(p.throughput(p.low_us)), axes.py(p.throughput(p.high_us))
    where = f"{intensity:.3g} ops/byte" if intensity is not None else "no DRAM traffic (the data stays in the L2)"
    title = (f"{p.gpu}: {where}, {p.throughput(p.us) / 1e9:.4g} Gop/s "
             f"({p.us:.4g} us, range {p.low_us:.4g} to {p.high_us:.4g} us)")
    return [f'<g class="{css}">',
            f'<line class="error-bar" x1="{x:.1f}" y1="{y_fast:.1f}" x2="{x:.1f}" y2="{y_slow:.1f}" '
            f'stroke="{colour}" stroke-width="2"/>',
            f'<line x1="{x - 5:.1f}" y1="{y_fast:.1f}" x2="{x + 5:.1f}" y2="{y_fast:.1f}" stroke="{colour}"/>',
            f'<line x1="{x - 5:.1f}" y1="{y_slow:.1f}" x2="{x + 5:.1f}" y2="{y_slow:.1f}" stroke="{colour}"/>',
            f'<circle class="kernel-point" cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{colour}">'
            f"<title>{escape(title)}</title></circle>",
            "</g>"]


def _legend(entries: list[tuple[str, KernelPoint | None]]) -> list[str]:
    """Which colour is which GPU; a point with no DRAM traffic is drawn at the right edge and says so here."""
    out = []
    shown = [(colour, p) for colour, p in entries if p is not None]
    for i, (colour, p) in enumerate(shown):
        y = TOP + 32 + 14 * i
        edge = " (no DRAM traffic: drawn at the right edge)" if p.intensity is None else ""
        out.append(f'<circle cx="{LEFT + 10}" cy="{y - 4}" r="4" fill="{colour}"/>'
                   f'<text x="{LEFT + 18}" y="{y}" class="legend">{escape(p.gpu + edge)}</text>')
    return out


def roofline_svg(roofs: Roofs, point: KernelPoint | None, others: list[tuple[Roofs, KernelPoint]]) -> str:
    """The chart: `roofs` of the report's GPU with `point`, and each other GPU's point (and its roof, dashed)."""
    points = [p for p in [point, *(o[1] for o in others)] if p is not None]
    peaks = [roofs.sp_ops] + [o[0].sp_ops for o in others]
    xs = [roofs.sp_ops / roofs.bandwidth] + [p.intensity for p in points if p.intensity is not None]
    ys = peaks + [p.throughput(p.high_us) for p in points] + [p.throughput(p.low_us) for p in points]
    axes = _Axes(_span(xs), _span(ys))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="roofline" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="roofline chart">',
           f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" '
           f'height="{HEIGHT - TOP - BOTTOM}"/>']
    out.extend(_grid(axes))
    taken: list[float] = []
    out.extend(_roof_line(axes, roofs.sp_ops, roofs.bandwidth, "roof roof-sp",
                          f"{roofs.gpu} FP32 {roofs.sp_ops / 1e12:.3g} Top/s", taken))
    if roofs.dp_ops > 0 and 10 ** axes.y[0] < roofs.dp_ops:
        out.extend(_roof_line(axes, roofs.dp_ops, roofs.bandwidth, "roof roof-dp",
                              f"FP64 {roofs.dp_ops / 1e12:.3g} Top/s", taken))
    out.append(f'<text x="{LEFT + 6}" y="{TOP + 14}" class="roof-label">DRAM {roofs.bandwidth / 1e9:.4g} GB/s</text>')
    for i, (other, p) in enumerate(others, start=1):
        colour = POINT_COLOURS[i % len(POINT_COLOURS)]
        out.extend(_roof_line(axes, other.sp_ops, other.bandwidth, "roof roof-other", other.gpu, taken))
        out.extend(_point(axes, p, colour, "other-gpu"))
    if point is not None:
        out.extend(_point(axes, point, POINT_COLOURS[0], "this-gpu"))
    out.extend(_legend([(POINT_COLOURS[0], point)] + [(POINT_COLOURS[i % len(POINT_COLOURS)], p)
                                                      for i, (_, p) in enumerate(others, start=1)]))
    out.append("</svg>")
    return "\n".join(out)
