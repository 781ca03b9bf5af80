"""PODSIZER_QUERY_STEP, PODSIZER_CPU_RATE_WINDOW, PODSIZER_RECENCY_HALF_LIFE: parsing, validation, wiring;
and range queries cut into pieces under Prometheus' 11,000-point limit."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from urllib.parse import parse_qs

import httpx
import orjson
import pytest

from podsizer.settings import RecommenderSettings, SettingsError
from podsizer.settings.duration import seconds, show
from podsizer.settings.loader import load
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus.client import MAX_POINTS_PER_SERIES, point_pieces
from recommender.wiring import build_source


def _load(**env: str) -> RecommenderSettings:
    return load(RecommenderSettings, env={f"PODSIZER_{k.upper()}": v for k, v in env.items()})


@pytest.mark.parametrize(
    ("text", "secs"), [("60", 60.0), ("90s", 90.0), ("1m", 60.0), ("2m30s", 150.0), ("24h", 86400.0)]
)
def test_durations_read_as_seconds(text: str, secs: float) -> None:
    assert seconds(text) == secs


def test_durations_show_in_their_shortest_text() -> None:
    assert [show(60), show(120), show(86400), show(90)] == ["1m", "2m", "1d", "1m30s"]


def test_the_defaults_are_the_scrape_resolution_and_vpas_half_life() -> None:
    s = _load()
    assert (s.query_step, s.cpu_rate_window, s.recency_half_life) == (60, 120, 86400.0)


def test_step_window_and_half_life_accept_durations() -> None:
    s = _load(query_step="30s", cpu_rate_window="1m30s", recency_half_life="12h")
    assert (s.query_step, s.cpu_rate_window, s.recency_half_life) == (30, 90, 43200.0)


@pytest.mark.parametrize("off", ["0", "off", "OFF"])
def test_the_half_life_can_be_turned_off(off: str) -> None:
    assert _load(recency_half_life=off).recency_half_life == 0.0


def test_a_rate_window_shorter_than_the_step_names_both_settings() -> None:
    with pytest.raises(SettingsError) as err:
        _load(query_step="5m", cpu_rate_window="2m")
    message = str(err.value)
    assert "PODSIZER_CPU_RATE_WINDOW (--cpu-rate-window)" in message
    assert "PODSIZER_QUERY_STEP (--query-step) 300s" in message


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        (
            "query_step",
            "0",
            "PODSIZER_QUERY_STEP (--query-step): '0' is outside the allowed range, above 0s to 1h",
        ),
        ("query_step", "1.5s", "PODSIZER_QUERY_STEP (--query-step): 1.5s is not a whole"),
        (
            "cpu_rate_window",
            "2x",
            "PODSIZER_CPU_RATE_WINDOW (--cpu-rate-window): not a duration",
        ),
        ("recency_half_life", "soon", "PODSIZER_RECENCY_HALF_LIFE (--recency-half-life): not a duration"),
    ],
)
def test_bad_values_name_the_setting(name: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        _load(**{name: value})


def test_the_wiring_hands_the_settings_to_the_sources() -> None:
    s = _load(query_step="30s", cpu_rate_window="1m", recency_half_life="off")
    prom = build_source(s, datetime(2026, 11, 2, tzinfo=UTC))
    assert isinstance(prom, PrometheusSource)
    assert (prom.resolution_s, prom.rate_s, prom.recency.half_life_s) == (30, 60, None)
    demo = build_source(_load(source="demo", recency_half_life="6h"), datetime(2026, 11, 2, tzinfo=UTC))
    assert demo.recency.half_life_s == 21600.0  # type: ignore[attr-defined]


def test_a_range_within_the_point_limit_is_one_piece() -> None:
    assert point_pieces(0.0, 7 * 86400.0, 60.0) == [(0.0, 7 * 86400.0)]  # 10,081 points


def test_a_longer_range_is_cut_into_consecutive_pieces_on_the_grid() -> None:
    pieces = point_pieces(0.0, 30 * 86400.0, 60.0)  # 43,201 points
    assert len(pieces) == 4
    assert pieces[0][0] == 0.0 and pieces[-1][1] == 30 * 86400.0
    for (_, hi), (lo, _) in itertools.pairwise(pieces):
        assert lo == hi + 60.0  # no point twice, none skipped
    assert all((hi - lo) / 60.0 + 1 <= MAX_POINTS_PER_SERIES for lo, hi in pieces)


def test_a_long_range_query_is_asked_in_pieces_and_joined() -> None:
    asked: list[tuple[float, float]] = []

    def prom(req: httpx.Request) -> httpx.Response:
        form = parse_qs(req.content.decode())
        lo, hi, step = (float(form[k][0]) for k in ("start", "end", "step"))
        asked.append((lo, hi))
        assert (hi - lo) / step + 1 <= MAX_POINTS_PER_SERIES
        n = int((hi - lo) // step) + 1
        values = [[lo + i * step, "1"] for i in range(n)]
        data = {"resultType": "matrix", "result": [{"metric": {"pod": "p"}, "values": values}]}
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))

    with PromClient("http://prom", transport=httpx.MockTransport(prom)) as c:
        ((labels, ts, vs),) = c.query_range_split("up", 0.0, 20 * 86400.0, 60.0)
    assert len(asked) == 3
    assert labels == {"pod": "p"} and ts.size == vs.size == 20 * 1440 + 1
    assert (ts[1:] - ts[:-1] == 60.0).all()
