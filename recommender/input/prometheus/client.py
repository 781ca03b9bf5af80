"""A small Prometheus HTTP API client: instant and range queries, label values, errors as SourceError."""

from __future__ import annotations

import math
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx
import numpy as np
import orjson

from podsizer.settings.names import where
from recommender.input.deadline import Deadlines, DeadlineTransport, ExchangeStopped, environment_proxy
from recommender.model import FloatArray, SourceError

# Prometheus refuses range queries that would return more than this many points per series.
MAX_POINTS_PER_SERIES = 11_000
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# An answer over the byte cap is asked again over halves of its time range, down to this many pieces.
MAX_SPLIT_PARTS = 16
NON_FINITE = "non-finite"

Labels = dict[str, str]
SeriesIdentity = tuple[tuple[str, str], ...]
InstantResult = list[tuple[Labels, float]]
RangeResult = list[tuple[Labels, FloatArray, FloatArray]]


def _unix(t: datetime | float) -> float:
    return t.timestamp() if isinstance(t, datetime) else float(t)


def series_identity(labels: Labels) -> SeriesIdentity:
    """What makes two label sets one series: the pieces of a split answer, a series sent in pieces, the
    answers of consecutive time ranges."""
    return tuple(sorted(labels.items()))


def point_pieces(start: float, end: float, step: float) -> list[tuple[float, float]]:
    """[start, end] on the step grid from start, cut into consecutive ranges of at most
    MAX_POINTS_PER_SERIES points (one range when it fits)."""
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    span = (MAX_POINTS_PER_SERIES - 1) * step
    out: list[tuple[float, float]] = []
    lo = start
    while True:
        hi = min(end, lo + span)
        out.append((lo, hi))
        if hi >= end:
            return out
        lo = hi + step


def step_for(start: datetime | float, end: datetime | float, min_step: float) -> float:
    """The smallest step >= min_step (whole seconds) that keeps every series under Prometheus' point limit."""
    if min_step <= 0:
        raise ValueError(f"min_step must be positive, got {min_step}")
    span = _unix(end) - _unix(start)
    if span < 0:
        raise ValueError("end is before start")
    # points = floor(span / step) + 1 must stay below MAX_POINTS_PER_SERIES
    needed = math.ceil(span / (MAX_POINTS_PER_SERIES - 1)) if span > 0 else 0
    return float(max(math.ceil(min_step), needed))


_R = TypeVar("_R")
_T = TypeVar("_T", int, float)


def split_over_time(
    fetch: Callable[[_T, _T], _R],
    ranges: list[tuple[_T, _T]],
    halves: Callable[[_T, _T], tuple[tuple[_T, _T], tuple[_T, _T]] | None],
    max_parts: int = MAX_SPLIT_PARTS,
) -> list[_R]:
    """fetch over each of the consecutive `ranges`, in time order; a range whose answer is over the byte
    cap (AnswerTooLarge) is asked again as the two `halves` of it, the earlier first, at most
    `max_parts` - 1 halvings in all: with at most max_response_bytes read at a time, the same answers.
    AnswerTooLarge, naming the share of the range, when a piece that cannot be halved (None) or one past
    the last halving allowed is still over."""
    todo = [(lo, hi, 1) for lo, hi in reversed(ranges)]  # earliest popped first
    parts, done = 1, []
    while todo:
        lo, hi, share = todo.pop()
        try:
            done.append(fetch(lo, hi))
            continue
        except AnswerTooLarge as exc:
            split = halves(lo, hi) if parts < max_parts else None
            if split is None:
                raise AnswerTooLarge(f"{exc} (even over 1/{share} of the time range)") from exc
        (a, b), (c, d) = split
        todo += [(c, d, share * 2), (a, b, share * 2)]
        parts += 1
    return done


class AnswerTooLarge(SourceError):
    """An answer larger than max_response_bytes (read no further); the message names the setting."""


class SampleRejections:
    """Samples left out of Prometheus answers, by reason (thread-safe); sinks see every addition."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._sinks: list[Callable[[str, int], None]] = []

    def subscribe(self, sink: Callable[[str, int], None]) -> None:
        """Calls sink(reason, count) for every later addition (e.g. a metrics counter)."""
        with self._lock:
            self._sinks.append(sink)

    def add(self, reason: str, count: int) -> None:
        if count <= 0:
            return
        with self._lock:
            self._counts[reason] = self._counts.get(reason, 0) + count
            sinks = list(self._sinks)
        for sink in sinks:
            sink(reason, count)

    def counts(self) -> dict[str, int]:
        """Samples left out so far, by reason."""
        with self._lock:
            return dict(self._counts)


PROBE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Probe:
    """What one request of the connectivity check got back."""

    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class _Answer:
    status: int
    body: bytes | bytearray  # as read: no copy of up to max_response_bytes
    content_type: str = ""


def _too_large(url: str, what: str, limit: int) -> AnswerTooLarge:
    return AnswerTooLarge(
        f"Prometheus at {url} answered {what} with more than {limit} bytes, the most "
        f"{where('prometheus_max_response_bytes')} allows; raise it or size fewer namespaces at once"
    )


class PromClient:
    """Talks to one Prometheus server; every failure becomes a SourceError naming the URL and the cause.

    Answers come uncompressed unless compress=True: gzip of the per-namespace range answers costs
    Prometheus about three times the CPU of evaluating them (measured on 2.42); turn it on only where
    the link to Prometheus, not its CPU, is the bottleneck.

    Hostile answers: at most max_response_bytes of each body is read (AnswerTooLarge past it; see
    query_range_split), each request takes at most `timeout` in all (connect, TLS, sending, headers and
    body, however slowly the server trickles them: recommender/input/deadline.py; `stop()` ends the
    requests in progress within about a second), non-finite values are counted in
    `rejections`, and `auth` (e.g. BearerTokenFile) is httpx's auth hook. `verify` is httpx's: True (the
    system's CAs), False, or an ssl.SSLContext (a CA bundle, a client certificate; see connection.py).
    """

    def __init__(
        self,
        base_url: str,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        compress: bool = False,
        auth: httpx.Auth | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.rejections = SampleRejections()
        self.deadlines = Deadlines()
        self._answer_sinks: list[Callable[[str], None]] = []
        if transport is None:
            transport = DeadlineTransport(self.deadlines, verify, environment_proxy(self.base_url))
        sent = {"Accept-Encoding": "gzip, deflate" if compress else "identity"} | dict(headers or {})
        self._http = httpx.Client(
            base_url=self.base_url,
            transport=transport,
            timeout=timeout,
            headers=sent,
            auth=auth,
            verify=verify,
        )

    def close(self) -> None:
        self._http.close()

    def stop(self) -> None:
        """The process is stopping: the requests in progress end within about a second (SourceError), and
        every later one fails at once."""
        self.deadlines.stop()

    def on_answer(self, sink: Callable[[str], None]) -> None:
        """Calls sink(what) after every complete answer from now on (set up before the first request): the
        server is answering, which keeps a long cycle live (recommender/health.py)."""
        self._answer_sinks.append(sink)

    def __enter__(self) -> PromClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, path: str, form: list[tuple[str, str]], what: str, *, get: bool = False) -> _Answer:
        """The answer's status and body, streamed: never more than max_response_bytes of body and never
        longer than the timeout in all (a trickling answer cannot hold a run)."""
        return self._exchange(self._request(path, form, get), path, what)

    def _exchange(self, request: httpx.Request, path: str, what: str) -> _Answer:
        url = f"{self.base_url}{path}"
        deadline = time.monotonic() + self.timeout
        phase = "no answer"
        try:
            with self.deadlines.exchange(self.timeout):
                resp = self._http.send(request, stream=True)
                phase = "body not complete"
                try:
                    body = self._body(resp, url, what, deadline)
                finally:
                    resp.close()
            for sink in self._answer_sinks:
                sink(f"an answer to {path}")
            return _Answer(resp.status_code, body, resp.headers.get("Content-Type", ""))
        except ExchangeStopped as exc:
            raise SourceError(f"Prometheus at {url}: {what} abandoned: the recommender is stopping") from exc
        except httpx.TimeoutException as exc:
            raise SourceError(self._late(path, what, _timed_out_phase(exc, phase))) from exc
        except httpx.HTTPError as exc:
            raise SourceError(f"Prometheus at {url} is unreachable: {exc}") from exc

    def _late(self, path: str, what: str, phase: str) -> str:
        return (
            f"Prometheus at {self.base_url} timed out: no complete answer to {path} within "
            f"{self.timeout:g}s ({phase}) for {what}; {where('prometheus_timeout_seconds')} bounds each "
            "request as a whole"
        )

    def _request(self, path: str, form: list[tuple[str, str]], get: bool) -> httpx.Request:
        """GET with the form as the query string (when there is one), else a form-encoded POST."""
        if get:
            return self._http.build_request("GET", f"{path}?{urlencode(form)}" if form else path)
        return self._http.build_request("POST", path, content=urlencode(form).encode(), headers=_FORM)

    def probe(self, path: str, form: list[tuple[str, str]], *, get: bool = False) -> Probe:
        """One request as the queries send it: status, content type and at most 64 KiB of the body.
        httpx errors are not wrapped: the connectivity check (preflight.py) tells them apart. At most the
        timeout in all, as every request."""
        with self.deadlines.exchange(self.timeout):
            resp = self._http.send(self._request(path, form, get), stream=True)
            try:
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) >= PROBE_BYTES:
                        break
                content_type = resp.headers.get("Content-Type", "")
                return Probe(resp.status_code, content_type, bytes(body[:PROBE_BYTES]))
            finally:
                resp.close()

    def _body(self, resp: httpx.Response, url: str, what: str, deadline: float) -> bytearray:
        limit = self.max_response_bytes
        declared = resp.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(url, what, limit)
        body = bytearray()
        for chunk in resp.iter_bytes():
            if len(body) + len(chunk) > limit:
                raise _too_large(url, what, limit)
            body += chunk
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout(f"answer not complete after {self.timeout:g}s", request=resp.request)
        return body

    def _call(
        self,
        path: str,
        form: list[tuple[str, str]],
        what: str,
        *,
        get: bool = False,
    ) -> Any:
        return self._data(self._send(path, form, what, get=get), path, what)

    def _data(self, resp: _Answer, path: str, what: str) -> Any:
        url = f"{self.base_url}{path}"
        try:
            body = orjson.loads(resp.body)
        except orjson.JSONDecodeError as exc:
            snippet = resp.body[:200].decode("utf-8", "replace").strip()
            raise SourceError(
                f"Prometheus at {url} answered HTTP {resp.status} with a body that is not JSON "
                f"({exc}) for {what}: {snippet!r}"
            ) from exc
        if not isinstance(body, dict):
            raise SourceError(f"Prometheus at {url} answered {what} with unexpected JSON: not an object")
        if resp.status != 200 or body.get("status") != "success":
            err = body.get("error") or "no error text"
            etype = body.get("errorType") or "unknown"
            raise SourceError(
                f"Prometheus at {url} answered HTTP {resp.status} ({etype}) to {what}: {str(err)[:500]}"
            )
        data = body.get("data")
        if data is None:
            raise SourceError(f"Prometheus at {url} answered {what} without a 'data' field")
        return data

    def query(self, promql: str, at: datetime | float) -> InstantResult:
        """Instant query at `at`: one (labels, value) per series; NaN/Inf become NaN (counted as rejected)."""
        data = self._call(
            "/api/v1/query", [("query", promql), ("time", f"{_unix(at):.3f}")], f"query {promql!r}"
        )
        try:
            rtype = data["resultType"]
            result = data["result"]
            if rtype == "vector":
                return [(dict(s["metric"]), self._value(s["value"][1])) for s in result]
            if rtype == "scalar":
                return [({}, self._value(result[1]))]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise SourceError(
                f"Prometheus at {self.base_url} sent a malformed vector for {promql!r}: {exc}"
            ) from exc
        raise SourceError(
            f"Prometheus at {self.base_url} answered {promql!r} with a {rtype}; "
            "an instant vector was expected"
        )

    def query_range(
        self, promql: str, start: datetime | float, end: datetime | float, step: float
    ) -> RangeResult:
        """Range query: (labels, timestamps, values) per series; NaN/Inf become NaN (counted as rejected),
        points with a non-finite timestamp are left out, and those before 1970, from the year 3000 on or not
        after the point before (counted as impossible). Before the points are parsed (caps.py): more than
        MAX_SERIES_PER_ANSWER series, or more than SLOW_PARSE_POINTS in a layout parse_matrix does not read,
        is OverAnswerCap (asked again over halves); a series of more points than the range has steps is
        Implausible."""
        from recommender.input.prometheus import caps  # caps builds on this module's errors

        form = [
            ("query", promql),
            ("start", f"{_unix(start):.3f}"),
            ("end", f"{_unix(end):.3f}"),
            ("step", f"{step:g}"),
        ]
        what = f"range query {promql!r}"
        resp = self._send("/api/v1/query_range", form, what)
        origin = caps.Origin(self.base_url, "/api/v1/query_range", what)
        steps = caps.steps_in(_unix(start), _unix(end), step)
        past = f"the range asked has {steps - 1:,} steps"
        if resp.status == 200:
            caps.check_series(resp.body, origin)
            try:
                fast = parse_matrix(resp.body, steps)
            except caps.PointsPastSteps as exc:
                raise caps.implausible(origin, str(exc), past, bomb=False) from exc
            if fast is not None:
                return caps.possible(self._finite(fast), self.rejections)
            caps.check_slow_parse(resp.body, origin)
        data = self._data(resp, "/api/v1/query_range", what)
        out: RangeResult = []
        try:
            if data["resultType"] != "matrix":
                raise SourceError(
                    f"Prometheus at {self.base_url} answered range query {promql!r} with a "
                    f"{data['resultType']}; a matrix was expected"
                )
            for s in data["result"]:
                pts = s["values"]
                if len(pts) > steps:
                    raise caps.implausible(origin, f"a series of {len(pts):,} points", past, bomb=False)
                ts = np.fromiter((p[0] for p in pts), dtype=np.float64, count=len(pts))
                vs = np.fromiter((float(p[1]) for p in pts), dtype=np.float64, count=len(pts))
                out.append(({str(k): str(v) for k, v in s["metric"].items()}, ts, vs))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise SourceError(f"{origin.at} sent a malformed matrix for {promql!r}: {exc}") from exc
        return caps.possible(self._finite(out), self.rejections)

    def query_range_split(
        self, promql: str, start: float, end: float, step: float, max_parts: int = MAX_SPLIT_PARTS
    ) -> RangeResult:
        """query_range over consecutive pieces of at most MAX_POINTS_PER_SERIES points each (a fine step
        over a long window: 7 days at 60 s is 10,081 points, 30 days 43,201); an answer over
        max_response_bytes is asked again over halves of its time range (on the step grid), down to
        max_parts pieces; the pieces joined per series: the same result as one answer, with at most
        max_response_bytes read at a time. AnswerTooLarge when a piece is still over."""

        def halves(lo: float, hi: float) -> tuple[tuple[float, float], tuple[float, float]] | None:
            points = int((hi - lo) // step) + 1
            if points < 2:
                return None
            mid = lo + ((points - 1) // 2) * step  # on the step grid
            return (lo, mid), (mid + step, hi)

        pieces = split_over_time(
            lambda lo, hi: self.query_range(promql, lo, hi, step),
            point_pieces(start, end, step),
            halves,
            max_parts,
        )
        return pieces[0] if len(pieces) == 1 else _joined(pieces)

    def _value(self, raw: str) -> float:
        v = float(raw)
        if math.isfinite(v):
            return v
        self.rejections.add(NON_FINITE, 1)
        return math.nan

    def _finite(self, result: RangeResult) -> RangeResult:
        """Non-finite values as NaN (counted), points with a non-finite timestamp left out."""
        out: RangeResult = []
        for labels, ts, vs in result:
            bad = ~np.isfinite(vs)
            self.rejections.add(NON_FINITE, int(np.count_nonzero(bad)))
            vs[bad] = np.nan
            keep = np.isfinite(ts)
            out.append((labels, ts, vs) if keep.all() else (labels, ts[keep], vs[keep]))
        return out

    def raw_read(
        self, path: str, body: bytes, headers: Mapping[str, str], what: str
    ) -> tuple[int, str, bytes | bytearray]:
        """One POST of a binary body (a remote read): status, content type and body, read with the same cap
        and timeout as every answer."""
        request = self._http.build_request("POST", path, content=body, headers=dict(headers))
        answer = self._exchange(request, path, what)
        return answer.status, answer.content_type, answer.body

    def raw_form(
        self, path: str, form: list[tuple[str, str]], what: str
    ) -> tuple[int, str, bytes | bytearray]:
        """One form POST whose answer is not the JSON API's envelope (VictoriaMetrics' export): status,
        content type and body, read with the same cap and timeout as every answer."""
        answer = self._send(path, form, what)
        return answer.status, answer.content_type, answer.body

    def series(self, matches: list[str], start: datetime | float, end: datetime | float) -> list[Labels]:
        """Label sets (with __name__) of the series matching any of `matches` in [start, end]; index only."""
        form = [("match[]", m) for m in matches]
        form += [("start", f"{_unix(start):.3f}"), ("end", f"{_unix(end):.3f}")]
        data = self._call("/api/v1/series", form, f"series {', '.join(matches)}")
        if not isinstance(data, list) or not all(isinstance(v, dict) for v in data):
            raise SourceError(f"Prometheus at {self.base_url} sent a malformed series list")
        return [dict(v) for v in data]

    def label_values(
        self, label: str, match: str, start: datetime | float, end: datetime | float
    ) -> list[str]:
        """Values of `label` on series matching `match` in [start, end] (index lookup, no sample reads)."""
        form = [("match[]", match), ("start", f"{_unix(start):.3f}"), ("end", f"{_unix(end):.3f}")]
        data = self._call(
            f"/api/v1/label/{label}/values", form, f"label values of {label} for {match}", get=True
        )
        if not isinstance(data, list) or not all(isinstance(v, str) for v in data):
            raise SourceError(f"Prometheus at {self.base_url} sent malformed label values for {label}")
        return sorted(data)


_FORM = {"Content-Type": "application/x-www-form-urlencoded"}
_PHASES = {
    httpx.ConnectTimeout: "connection not established",
    httpx.WriteTimeout: "request not sent",
    httpx.PoolTimeout: "no free connection",
}


def _timed_out_phase(exc: httpx.TimeoutException, phase: str) -> str:
    """How far an exchange got before its deadline: `phase` (no answer: the headers were not complete),
    or the step before, as the timeout says."""
    if phase == "no answer":
        return _PHASES.get(type(exc), "headers not complete")
    return phase


def _joined(pieces: list[RangeResult]) -> RangeResult:
    """The pieces of one range query (in time order) as one result: each series' points concatenated."""
    merged: dict[SeriesIdentity, tuple[Labels, list[FloatArray], list[FloatArray]]] = {}
    for piece in pieces:
        for labels, ts, vs in piece:
            _, tss, vss = merged.setdefault(series_identity(labels), (labels, [], []))
            tss.append(ts)
            vss.append(vs)
    return [(labels, np.concatenate(tss), np.concatenate(vss)) for labels, tss, vss in merged.values()]


_MATRIX_HEAD = b'{"status":"success","data":{"resultType":"matrix","result":['
_SERIES = b'{"metric":'
_VALUES = b',"values":['
_NOT_NUMBERS = b'[]"}'


def parse_matrix(body: bytes | bytearray, max_points: int | None = None) -> RangeResult | None:
    """Reads a successful matrix answer without building a Python object per sample; None if unsure;
    caps.PointsPastSteps for a series of more than `max_points` points (counted before they are parsed).

    Prometheus writes `{"metric":{...},"values":[[t,"v"],...]}` per series, and may end the answer with
    warnings or infos. Inside JSON strings every quote is escaped, so the markers cannot occur in a label
    value; only the label sets go through orjson and each series' points become one comma-separated run of
    numbers for numpy. Anything else in the answer (native histograms, a layout this does not recognise)
    returns None and the caller parses the whole body the ordinary way.
    """
    if not body.startswith(_MATRIX_HEAD) or b'"histograms"' in body:
        return None
    tail = _data_end(body)
    if tail < 0:
        return None
    out: RangeResult = []
    chunks = body[len(_MATRIX_HEAD) : tail].split(_SERIES)
    if chunks[0]:
        return None
    try:
        for chunk in chunks[1:]:
            cut = chunk.index(_VALUES)
            labels = orjson.loads(chunk[:cut])
            points = chunk[cut + len(_VALUES) :]
            if points.startswith(b"["):
                n = points.count(b"],[") + 1
                if max_points is not None and n > max_points:
                    from recommender.input.prometheus.caps import PointsPastSteps  # builds on this module

                    raise PointsPastSteps(n)
                nums = np.fromstring(bytes(points.translate(None, _NOT_NUMBERS)), dtype=np.float64, sep=",")
            elif points.startswith(b"]"):
                nums, n = np.empty(0), 0
            else:
                return None
            if not isinstance(labels, dict) or nums.size != 2 * n:
                return None
            vs = nums[1::2].copy()
            vs[~np.isfinite(vs)] = np.nan
            out.append(({str(k): str(v) for k, v in labels.items()}, nums[0::2].copy(), vs))
    except (ValueError, orjson.JSONDecodeError):
        return None
    return out


_TRAILERS = (b'],"warnings":[', b'],"infos":[')


def _data_end(body: bytes | bytearray) -> int:
    """Where the matrix's result ends (its `]` before the data object's `}`): the answer's end, or where
    Prometheus' warnings or infos follow (nothing else may); -1 when neither."""
    if body.endswith(b"]}}"):
        return len(body) - 3
    found = [i for i in (body.find(b"]}" + t[1:]) for t in _TRAILERS) if i >= 0]
    if not found:
        return -1
    tail = min(found)
    try:
        extra = orjson.loads(b"{" + body[tail + 3 :])
    except orjson.JSONDecodeError:
        return -1
    return tail if isinstance(extra, dict) and set(extra) <= {"warnings", "infos"} else -1
