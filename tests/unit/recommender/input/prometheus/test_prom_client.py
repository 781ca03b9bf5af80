"""PromClient: form-encoded POSTs, NaN handling, errors as SourceError naming URL and cause, step choice."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import httpx
import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.input.prometheus.client import MAX_POINTS_PER_SERIES, PromClient, parse_matrix, step_for
from recommender.model import SourceError
from tests.support.hypo import examples

URL = "http://prom.example:9090"
END = datetime(2026, 12, 1, tzinfo=UTC)


def client(handler: Callable[[httpx.Request], httpx.Response]) -> PromClient:
    return PromClient(URL, transport=httpx.MockTransport(handler))


def ok(data: object) -> httpx.Response:
    return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))


def test_query_posts_form_and_keeps_nan_and_inf_as_nan() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        vec = [
            {"metric": {"pod": "a"}, "value": [1, "0.25"]},
            {"metric": {"pod": "b"}, "value": [1, "NaN"]},
            {"metric": {"pod": "c"}, "value": [1, "+Inf"]},
        ]
        return ok({"resultType": "vector", "result": vec})

    got = client(handler).query('up{job="x"}', END)
    assert got[0] == ({"pod": "a"}, 0.25)
    assert math.isnan(got[1][1]) and math.isnan(got[2][1])
    req = seen[0]
    assert req.method == "POST" and req.url.path == "/api/v1/query"
    assert req.headers["content-type"] == "application/x-www-form-urlencoded"
    form = parse_qs(req.content.decode())
    assert form == {"query": ['up{job="x"}'], "time": [f"{END.timestamp():.3f}"]}


def test_query_range_returns_arrays_with_nan_for_non_finite() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        form = parse_qs(req.content.decode())
        assert req.url.path == "/api/v1/query_range" and form["step"] == ["60"]
        values = [[100, "1"], [160, "-Inf"], [220, "3"]]
        return ok({"resultType": "matrix", "result": [{"metric": {"pod": "a"}, "values": values}]})

    ((labels, ts, vs),) = client(handler).query_range("x", END - timedelta(hours=1), END, 60)
    assert labels == {"pod": "a"}
    assert ts.tolist() == [100.0, 160.0, 220.0]
    assert vs[0] == 1.0 and np.isnan(vs[1]) and vs[2] == 3.0


def test_http_error_carries_status_and_prometheus_error_text() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        body = {
            "status": "error",
            "errorType": "bad_data",
            "error": "1:5: parse error: unclosed left parenthesis",
        }
        return httpx.Response(400, content=orjson.dumps(body))

    with pytest.raises(
        SourceError, match=r"prom\.example:9090.*HTTP 400 \(bad_data\).*unclosed left parenthesis"
    ):
        client(handler).query("sum(", END)


def test_non_json_body_is_reported_with_status_and_snippet() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>Bad Gateway</html>")

    with pytest.raises(SourceError, match=r"HTTP 502 with a body that is not JSON.*Bad Gateway"):
        client(handler).query("up", END)


def test_unreachable_server_names_the_url() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    with pytest.raises(
        SourceError, match=r"Prometheus at http://prom\.example:9090/api/v1/query is unreachable"
    ):
        client(handler).query("up", END)


def test_timeout_is_reported_as_such() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=req)

    with pytest.raises(SourceError, match="timed out"):
        client(handler).query("up", END)


def test_instant_query_answered_with_matrix_is_an_error() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return ok({"resultType": "matrix", "result": []})

    with pytest.raises(SourceError, match="instant vector was expected"):
        client(handler).query("up[5m]", END)


def test_malformed_vector_is_an_error() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return ok({"resultType": "vector", "result": [{"metric": {}}]})

    with pytest.raises(SourceError, match="malformed vector"):
        client(handler).query("up", END)


def test_label_values_uses_get_with_match_and_window() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        assert req.method == "GET" and req.url.path == "/api/v1/label/namespace/values"
        assert req.url.params.get_list("match[]") == ['m{container!=""}']
        return ok(["shop", "batch"])

    assert client(handler).label_values("namespace", 'm{container!=""}', END - timedelta(days=1), END) == [
        "batch",
        "shop",
    ]


def test_step_for_keeps_seven_days_at_one_minute() -> None:
    assert step_for(END - timedelta(days=7), END, 60) == 60.0


def test_step_for_widens_long_windows_under_the_point_limit() -> None:
    step = step_for(END - timedelta(days=30), END, 60)
    assert step > 60 and (30 * 86400) // step + 1 <= MAX_POINTS_PER_SERIES


@settings(max_examples=examples(1000))
@given(span=st.integers(0, 400 * 86400), min_step=st.integers(1, 7200))
def test_step_for_is_the_smallest_allowed_step(span: int, min_step: int) -> None:
    step = step_for(0, span, min_step)
    assert step >= min_step
    assert span // step + 1 <= MAX_POINTS_PER_SERIES
    smaller = step - 1
    assert smaller < min_step or span // smaller + 1 > MAX_POINTS_PER_SERIES - 1


def test_step_for_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="min_step"):
        step_for(0, 10, 0)
    with pytest.raises(ValueError, match="before start"):
        step_for(10, 0, 60)


def _matrix_body(result: list[dict[str, object]], **extra: object) -> bytes:
    return orjson.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}, **extra})


def _reference(result: list[dict[str, object]]) -> list[tuple[dict[str, str], list[float], list[float]]]:
    out = []
    for s in result:
        pts: list[list[object]] = s["values"]  # type: ignore[assignment]
        vs = [float(str(p[1])) for p in pts]
        out.append(
            (
                dict(s["metric"]),
                [float(str(p[0])) for p in pts],
                [v if math.isfinite(v) else math.nan for v in vs],
            )
        )  # type: ignore[arg-type]
    return out


def _same(got: object, want: list[tuple[dict[str, str], list[float], list[float]]]) -> bool:
    assert got is not None
    pairs = list(zip(got, want, strict=True))  # type: ignore[call-overload]
    return all(
        g[0] == w[0] and g[1].tolist() == w[1] and np.array_equal(g[2], np.array(w[2]), equal_nan=True)
        for g, w in pairs
    )


def test_parse_matrix_reads_points_with_labels_that_look_like_json_markers() -> None:
    result: list[dict[str, object]] = [
        {
            "metric": {"pod": 'a{"metric":', "x": '],[,"values":[[1,"2"]]'},
            "values": [[1.5, "NaN"], [2, "+Inf"]],
        },
        {"metric": {}, "values": []},
        {"metric": {"pod": 'b\\"c\u00e9'}, "values": [[1700000000.123, "1e-07"], [1700000060, "-2.5"]]},
    ]
    assert _same(parse_matrix(_matrix_body(result)), _reference(result))


@settings(max_examples=examples(500))
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from(["pod", "namespace", "c"]), st.text(max_size=8), max_size=3),
            st.lists(st.tuples(st.integers(0, 2**32), st.floats(width=64)), max_size=5),
        ),
        max_size=4,
    )
)
def test_parse_matrix_agrees_with_a_full_json_parse(
    series: list[tuple[dict[str, str], list[tuple[int, float]]]],
) -> None:
    def text(v: float) -> str:
        return (
            "NaN" if math.isnan(v) else ("+Inf" if v == math.inf else "-Inf" if v == -math.inf else repr(v))
        )

    result: list[dict[str, object]] = [
        {"metric": labels, "values": [[t, text(v)] for t, v in pts]} for labels, pts in series
    ]
    assert _same(parse_matrix(_matrix_body(result)), _reference(result))


def test_parse_matrix_reads_warnings_and_infos_at_the_end_and_leaves_other_layouts_to_the_slow_parse() -> (
    None
):
    """Prometheus ends an answer with warnings or infos (a forced slow parse would cost a Python object per
    point); anything else it does not know stays with the full parser."""
    result: list[dict[str, object]] = [{"metric": {"pod": "a"}, "values": [[100, "1"], [160, "2"]]}]
    for extra in ({"warnings": ["partial ]}"]}, {"infos": ["x"], "warnings": []}):
        assert _same(parse_matrix(_matrix_body(result, **extra)), _reference(result))
    assert parse_matrix(_matrix_body(result, stats={"series": 1})) is None
    assert parse_matrix(b'{"status":"success","data":{"resultType":"vector","result":[]}}') is None
    histograms: list[dict[str, object]] = [{"metric": {"pod": "a"}, "histograms": [[100, {"count": "1"}]]}]
    assert parse_matrix(_matrix_body(histograms)) is None

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=_matrix_body(result, warnings=["partial"]))

    ((labels, ts, vs),) = client(handler).query_range("x", END - timedelta(hours=1), END, 60)
    assert (labels, ts.tolist(), vs.tolist()) == ({"pod": "a"}, [100.0, 160.0], [1.0, 2.0])


def test_answers_are_uncompressed_unless_asked() -> None:
    seen: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req.headers["accept-encoding"])
        return ok({"resultType": "vector", "result": []})

    client(handler).query("x", END)
    PromClient(URL, transport=httpx.MockTransport(handler), compress=True).query("x", END)
    assert seen == ["identity", "gzip, deflate"]
