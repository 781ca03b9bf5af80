"""Server-rendered inline SVG line charts: no JavaScript, no network, testable as text."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from html import escape

from console import fmt
from console.views import ChartOut

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
REFERENCE_COLOURS = ("#555555", "#b8860b", "#006400", "#8b008b")
WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 14, 30


def _nice_max(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * exp:
            return float(m * exp)
    return float(10 * exp)


def _axis_scale(unit: str, peak: float) -> float:
    """The display unit the axis ticks count in (GiB or MiB for sizes), so ticks are round there."""
    if unit == "bytes":
        return fmt.GIB if peak >= fmt.GIB else fmt.MIB
    if unit == "MiB":
        return 1024.0 if peak >= 1024.0 else 1.0
    return 1.0


def _time(ts: float, span: float) -> str:
    fmt_ = "%H:%M" if span <= 36 * 3600 else "%m-%d %H:%M"
    return datetime.fromtimestamp(ts, tz=UTC).strftime(fmt_)


def line_chart(chart: ChartOut, width: int = WIDTH, height: int = HEIGHT) -> str:
    """An <svg> with one polyline per contiguous run of points of each line, dashed reference lines,
    y ticks in the chart's unit and UTC time ticks. data-points counts the plotted (non-null) points."""
    ts_all = [t for line in chart.lines for t in line.timestamps] + [m.timestamp for m in chart.marks]
    vals = [v for line in chart.lines for v in line.values if v is not None]
    refs = [r.value for r in chart.references]
    t0, t1 = (min(ts_all), max(ts_all)) if ts_all else (0.0, 1.0)
    span = (t1 - t0) or 1.0
    # Ratios keep a 0-100 % axis so an idle GPU looks idle; sizes get round binary ticks.
    peak = max([*vals, *refs], default=0.0) * 1.05
    if chart.unit == "ratio":
        y_max = 1.0
    else:
        scale = _axis_scale(chart.unit, peak)
        y_max = _nice_max(peak / scale) * scale
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - t0) / span * plot_w

    def y(v: float) -> float:
        return TOP + plot_h - min(v, y_max) / y_max * plot_h

    out = [
        f'<svg class="chart" data-chart="{escape(chart.key)}" data-points="{len(vals)}" '
        f'width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(chart.title)}">',
        f"<title>{escape(chart.title)}</title>",
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#ccc"/>',
    ]
    for i in range(5):
        v = y_max * i / 4
        yy = y(v)
        out.append(f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + plot_w}" y2="{yy:.1f}" stroke="#eee"/>')
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">'
            f"{escape(fmt.by_unit(chart.unit, v))}</text>"
        )
    for i in range(5):
        t = t0 + span * i / 4
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        out.append(
            f'<text class="tick" x="{x(t):.1f}" y="{height - 10}" text-anchor="{anchor}">'
            f"{escape(_time(t, span))}</text>"
        )
    for i, line in enumerate(chart.lines):
        colour = PALETTE[i % len(PALETTE)]
        run: list[str] = []
        runs: list[list[str]] = []
        for t, maybe in zip(line.timestamps, line.values, strict=True):
            if maybe is None:
                if run:
                    runs.append(run)
                run = []
                continue
            run.append(f"{x(t):.1f},{y(maybe):.1f}")
        if run:
            runs.append(run)
        for r in runs:
            out.append(
                f'<polyline class="series" data-line="{escape(line.label)}" fill="none" stroke="{colour}" '
                f'stroke-width="1.5" points="{" ".join(r)}"/>'
            )
    for i, ref in enumerate(chart.references):
        colour = REFERENCE_COLOURS[i % len(REFERENCE_COLOURS)]
        yy = y(ref.value)
        out.append(
            f'<line class="reference" data-reference="{escape(ref.label)}" x1="{LEFT}" y1="{yy:.1f}" '
            f'x2="{LEFT + plot_w}" y2="{yy:.1f}" stroke="{colour}" stroke-dasharray="6 4"/>'
        )
        # Alternate ends so labels of close lines do not overlap.
        lx, anchor = (LEFT + plot_w - 4, "end") if i % 2 == 0 else (LEFT + 4, "start")
        out.append(
            f'<text class="ref-label" x="{lx}" y="{yy - 3:.1f}" text-anchor="{anchor}" '
            f'fill="{colour}">{escape(ref.label)} {escape(fmt.by_unit(chart.unit, ref.value))}</text>'
        )
    for mark in chart.marks:
        xx = x(mark.timestamp)
        out.append(
            f'<line class="mark" data-mark="{escape(mark.label)}" x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" '
            f'y2="{TOP + plot_h}" stroke="#c00" stroke-width="2"><title>{escape(mark.label)}</title></line>'
        )
        out.append(f'<text class="mark-label" x="{xx + 3:.1f}" y="{TOP + 11}" fill="#c00">OOM</text>')
    out.append("</svg>")
    return "".join(out)


def legend(chart: ChartOut) -> str:
    """An HTML legend naming each line in its colour."""
    items = [
        f'<li><span class="swatch c{i % len(PALETTE)}"></span>{escape(line.label)}</li>'
        for i, line in enumerate(chart.lines)
    ]
    return f'<ul class="legend">{"".join(items)}</ul>'
