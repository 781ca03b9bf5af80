"""Chart downsampling (bucket peaks) and the server-rendered SVG."""

from __future__ import annotations

import re

import numpy as np
import pytest

from console.series import downsample_max
from console.svg import line_chart
from console.views import ChartOut, LineOut, ReferenceOut


def test_downsample_keeps_each_bucket_peak() -> None:
    ts = np.arange(1000, dtype=np.float64)
    values = np.zeros(1000)
    values[503] = 7.0
    out_t, out_v = downsample_max(ts, values, 10)
    assert len(out_t) == 10
    assert out_v[5] == 7.0 and sum(v or 0.0 for v in out_v) == 7.0
    assert out_t[0] == pytest.approx(999 / 20)


def test_downsample_short_series_unchanged_and_nan_becomes_none() -> None:
    out_t, out_v = downsample_max(np.array([1.0, 2.0, 3.0]), np.array([0.5, np.nan, 0.7]), 10)
    assert out_t == [1.0, 2.0, 3.0] and out_v == [0.5, None, 0.7]


def test_downsample_rejects_mismatched_lengths_and_zero_points() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        downsample_max(np.zeros(3), np.zeros(4), 10)
    with pytest.raises(ValueError, match="points must be >= 1"):
        downsample_max(np.zeros(3), np.zeros(3), 0)


def _chart(values: list[float | None]) -> ChartOut:
    ts = [1_700_000_000.0 + 300 * i for i in range(len(values))]
    return ChartOut(
        key="cpu",
        title="CPU <usage>",
        unit="cores",
        lines=[LineOut(label="web", timestamps=ts, values=values)],
        references=[ReferenceOut(label="web request", value=2.0)],
    )


def test_svg_breaks_lines_at_gaps_and_counts_points() -> None:
    svg = line_chart(_chart([0.1, 0.2, None, 0.4, 0.5, 0.6]))
    polylines = re.findall(r'<polyline[^>]*points="([^"]+)"', svg)
    assert [len(p.split()) for p in polylines] == [2, 3]
    assert 'data-points="5"' in svg
    assert "CPU &lt;usage&gt;" in svg  # escaped


def test_svg_places_points_by_value_with_the_reference_line_on_the_same_scale() -> None:
    svg = line_chart(_chart([0.0, 2.0]), width=200, height=130)
    (points,) = re.findall(r' points="([^"]+)"', svg)
    (_, y_zero), (_, y_two) = (map(float, p.split(",")) for p in points.split())
    ref_y = float(re.search(r'class="reference"[^>]*y1="([0-9.]+)"', svg).group(1))  # type: ignore[union-attr]
    assert y_two < y_zero
    assert ref_y == pytest.approx(y_two)


def test_marks_are_drawn_as_red_vertical_lines_with_their_label() -> None:
    from console.svg import line_chart
    from console.views import ChartOut, LineOut, MarkOut

    chart = ChartOut(
        key="memory",
        title="Memory",
        unit="bytes",
        lines=[LineOut(label="api", timestamps=[0.0, 60.0, 120.0], values=[1.0, 2.0, 3.0])],
        references=[],
        marks=[MarkOut(label="OOM kill api-1/api at 511Mi", timestamp=60.0)],
    )
    svg = line_chart(chart)
    assert svg.count('<line class="mark"') == 1 and 'data-mark="OOM kill api-1/api at 511Mi"' in svg
