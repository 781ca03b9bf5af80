"""PromClient against a hostile Prometheus: byte cap, time splits, non-finite samples, token rotation."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import orjson
import pytest

from podsizer.settings import RecommenderSettings
from recommender.input.prometheus import caps
from recommender.input.prometheus.auth import BearerTokenFile
from recommender.input.prometheus.client import AnswerTooLarge, PromClient
from recommender.input.prometheus.ksm import identity
from recommender.model import SourceError

URL = "http://prom.example:9090"


def matrix(series: list[tuple[dict[str, str], list[tuple[float, str]]]]) -> bytes:
    result = [{"metric": labels, "values": [[t, v] for t, v in pts]} for labels, pts in series]
    return orjson.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def client(handler: Callable[[httpx.Request], httpx.Response], **kw: object) -> PromClient:
    return PromClient(URL, transport=httpx.MockTransport(handler), **kw)  # type: ignore[arg-type]


class Chunks(httpx.SyncByteStream):
    """A body without Content-Length, counting how much of it was read."""

    def __init__(self, chunk: bytes, count: int) -> None:
        self.chunk, self.count, self.sent = chunk, count, 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.count):
            self.sent += len(self.chunk)
            yield self.chunk


def test_an_answer_over_the_byte_cap_is_not_read_past_it_and_names_the_setting() -> None:
    body = Chunks(b"x" * 4096, 10_000)  # 40 MB if read whole

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=body)

    with pytest.raises(AnswerTooLarge, match="PODSIZER_PROMETHEUS_MAX_RESPONSE_BYTES") as err:
        client(handler, max_response_bytes=65536).query("up", 0)
    assert "65536 bytes" in str(err.value)
    assert body.sent <= 65536 + 4096


def test_a_declared_content_length_over_the_cap_is_refused_before_reading() -> None:
    body = Chunks(b"x" * 4096, 100)

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=body, headers={"Content-Length": str(4096 * 100)})

    with pytest.raises(AnswerTooLarge):
        client(handler, max_response_bytes=8192).query("up", 0)
    assert body.sent == 0


def test_query_range_split_halves_the_range_until_each_answer_fits_and_joins_the_series() -> None:
    asked: list[tuple[float, float]] = []

    def handler(req: httpx.Request) -> httpx.Response:
        form = parse_qs(req.content.decode())
        lo, hi, step = (float(form[k][0]) for k in ("start", "end", "step"))
        asked.append((lo, hi))
        n = int((hi - lo) // step) + 1
        pts = [(lo + i * step, str(lo + i * step)) for i in range(n)]
        return httpx.Response(200, content=matrix([({"pod": "a"}, pts), ({"pod": "b"}, pts)]))

    whole = client(handler).query_range("x", 0, 99 * 60, 60)
    asked.clear()
    capped = client(handler, max_response_bytes=2500).query_range_split("x", 0, 99 * 60, 60)
    assert len(asked) > 2
    assert [lab for lab, _, _ in capped] == [lab for lab, _, _ in whole]
    for (_, ts, vs), (_, wts, wvs) in zip(capped, whole, strict=True):
        assert ts.tolist() == wts.tolist() and vs.tolist() == wvs.tolist()


def test_query_range_split_gives_up_after_max_parts_with_the_setting_named() -> None:
    calls = 0

    def handler(req: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(200, content=b"x" * 10_000)

    with pytest.raises(AnswerTooLarge, match="PODSIZER_PROMETHEUS_MAX_RESPONSE_BYTES"):
        client(handler, max_response_bytes=2048).query_range_split("x", 0, 1000 * 60, 60, max_parts=4)
    assert calls <= 7  # at most 4 pieces, each split piece asked once before splitting


def test_non_finite_values_become_nan_and_are_counted() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path.endswith("query_range"):
            pts = [(0.0, "1"), (60.0, "NaN"), (120.0, "+Inf"), (180.0, "1e400"), (240.0, "-Inf")]
            return httpx.Response(200, content=matrix([({"pod": "a"}, pts)]))
        vec = [{"metric": {"pod": "a"}, "value": [0, "NaN"]}, {"metric": {"pod": "b"}, "value": [0, "2"]}]
        data = {"resultType": "vector", "result": vec}
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))

    c = client(handler)
    seen: list[tuple[str, int]] = []
    c.rejections.subscribe(lambda reason, n: seen.append((reason, n)))
    ((_, _, vs),) = c.query_range("x", 0, 240, 60)
    assert vs[0] == 1 and all(math.isnan(v) for v in vs[1:])
    (_, a), (_, b) = c.query("x", 0)
    assert math.isnan(a) and b == 2
    assert c.rejections.counts() == {"non-finite": 5}
    assert sum(n for _, n in seen) == 5


def test_an_impossible_sample_count_is_unknown_not_a_huge_int() -> None:
    facts = [
        ({"namespace": "n", "pod": "p", "container": "c", "podsizer_q": "count"}, 1e300),
        ({"namespace": "n", "pod": "q", "container": "c", "podsizer_q": "count"}, -3.0),
        ({"namespace": "n", "pod": "r", "container": "c", "podsizer_q": "count"}, 12.0),
    ]
    assert identity([], facts).samples == {("n", "r", "c"): 12}


def test_the_byte_cap_setting_takes_quantities() -> None:
    assert RecommenderSettings(prometheus_max_response_bytes="64Mi").prometheus_max_response_bytes == 2**26  # type: ignore[arg-type]
    assert RecommenderSettings().prometheus_max_response_bytes == 64 * 2**20


# --- bearer token file ---------------------------------------------------------------------------


def token_server(accepted: list[str]) -> tuple[Callable[[httpx.Request], httpx.Response], list[str]]:
    sent: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        sent.append(req.headers.get("Authorization", ""))
        if req.headers.get("Authorization") not in [f"Bearer {t}" for t in accepted]:
            return httpx.Response(401, content=b'{"status":"error","error":"unauthorized"}')
        return httpx.Response(200, content=b'{"status":"success","data":["ns"]}')

    return handler, sent


def test_the_token_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one\n")
    accepted = ["one"]
    handler, sent = token_server(accepted)
    c = client(handler, auth=BearerTokenFile(path))
    assert c.label_values("namespace", "up", 0, 1) == ["ns"]
    path.write_text("second\n")
    accepted[:] = ["second"]
    assert c.label_values("namespace", "up", 0, 1) == ["ns"]
    assert sent == ["Bearer one", "Bearer second"]


def test_a_401_rereads_the_file_once_and_retries_with_a_new_token(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("aaaa")
    stamp = os.stat(path)
    accepted = ["aaaa"]
    handler, sent = token_server(accepted)
    c = client(handler, auth=BearerTokenFile(path))
    c.label_values("namespace", "up", 0, 1)
    path.write_text("bbbb")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # same inode, size, mtime: stat cannot tell
    accepted[:] = ["bbbb"]
    assert c.label_values("namespace", "up", 0, 1) == ["ns"]
    assert sent == ["Bearer aaaa", "Bearer aaaa", "Bearer bbbb"]


def test_a_401_with_an_unchanged_token_is_not_retried(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("stale")
    handler, sent = token_server(["fresh"])
    with pytest.raises(SourceError, match="401"):
        client(handler, auth=BearerTokenFile(path)).label_values("namespace", "up", 0, 1)
    assert sent == ["Bearer stale"]


def test_the_last_token_is_kept_while_the_file_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one")
    auth = BearerTokenFile(path)
    assert auth.token() == "one"
    path.unlink()
    assert auth.token() == "one"


def test_a_token_file_never_read_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="bearer token file"):
        BearerTokenFile(tmp_path / "missing").token()


def test_a_range_answer_of_too_many_series_is_asked_again_over_halves_counted_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A million minimal series would take some 600 MB to parse: counted first (MAX_SERIES_PER_ANSWER),
    the answer is asked again over halves of its range, and a namespace still over it is skipped."""
    monkeypatch.setattr(caps, "MAX_SERIES_PER_ANSWER", 4)
    asked: list[float] = []

    def handler(req: httpx.Request) -> httpx.Response:
        form = parse_qs(req.content.decode())
        start, end = float(form["start"][0]), float(form["end"][0])
        asked.append(end - start)
        pods = 6 if end - start > 600 else 3  # fewer pods over a shorter range (churn)
        return httpx.Response(200, content=matrix([({"pod": f"p{i}"}, [(start, "1")]) for i in range(pods)]))

    found = client(handler).query_range_split("x", 0, 1200, 60)
    assert asked[0] == 1200 and len(asked) == 3 and len(found) == 3

    def crowded(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=matrix([({"pod": f"p{i}"}, [(0, "1")]) for i in range(5)]))

    with pytest.raises(
        AnswerTooLarge, match=rf"{URL}/api/v1/query_range answered range query 'x' with more than 4"
    ):
        client(crowded).query_range_split("x", 0, 1200, 60)


def test_a_range_series_of_more_points_than_the_range_has_steps_is_refused_before_they_are_parsed() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        points = [(float(t), "1") for t in range(0, 10_000)]
        return httpx.Response(200, content=matrix([({"pod": "p"}, points)]))

    with pytest.raises(
        SourceError, match=r"/api/v1/query_range answered .* a series of 10,000 points, but the range"
    ):
        client(handler).query_range("x", 0, 600, 60)
    warned = (
        matrix([({"pod": "p"}, [(float(t), "1") for t in range(0, 10_000)])])[:-1] + b',"warnings":["w"]}'
    )
    with pytest.raises(SourceError, match=r"a series of 10,000 points"):  # with warnings: the same reading
        client(lambda req: httpx.Response(200, content=warned)).query_range("x", 0, 600, 60)


def test_a_range_answer_only_json_objects_can_read_is_parsed_only_up_to_a_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(caps, "SLOW_PARSE_POINTS", 100)
    body = orjson.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {"pod": f"p{i}"}, "values": [[t, "1"] for t in range(0, 600, 60)], "histograms": []}
            for i in range(20)
        ]}}
    )  # fmt: skip
    with pytest.raises(AnswerTooLarge, match=r"about 2\d\d points in a layout read only as JSON objects"):
        client(lambda req: httpx.Response(200, content=body)).query_range("x", 0, 600, 60)


def test_range_points_at_impossible_times_are_left_out_and_counted() -> None:
    points = [(-60.0, "1"), (0.0, "2"), (60.0, "3"), (30.0, "4"), (120.0, "5"), (4e10, "6")]
    c = client(lambda req: httpx.Response(200, content=matrix([({"pod": "p"}, points)])))
    ((_, ts, vs),) = c.query_range("x", 0, 1e11, 1e9)
    assert ts.tolist() == [0.0, 60.0, 120.0] and vs.tolist() == [2.0, 3.0, 5.0]
    assert c.rejections.counts() == {caps.IMPOSSIBLE_TIME: 3}
