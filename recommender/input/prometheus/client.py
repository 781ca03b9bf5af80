"""A small Prometheus HTTP API client: instant and range queries, label values, errors as SourceError."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import httpx
import numpy as np
import orjson

from recommender.model import FloatArray, SourceError

# Prometheus refuses range queries that would return more than this many points per series.
MAX_POINTS_PER_SERIES = 11_000

Labels = dict[str, str]
InstantResult = list[tuple[Labels, float]]
RangeResult = list[tuple[Labels, FloatArray, FloatArray]]


def _unix(t: datetime | float) -> float:
    return t.timestamp() if isinstance(t, datetime) else float(t)


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


def _value(raw: str) -> float:
    v = float(raw)
    return v if math.isfinite(v) else math.nan


class PromClient:
    """Talks to one Prometheus server; every failure becomes a SourceError naming the URL and the cause.

    Answers come uncompressed unless compress=True: gzip of the per-namespace range answers costs
    Prometheus about three times the CPU of evaluating them (measured on 2.42); turn it on only where
    the link to Prometheus, not its CPU, is the bottleneck.
    """

    def __init__(
        self,
        base_url: str,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        compress: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        sent = {"Accept-Encoding": "gzip, deflate" if compress else "identity"} | dict(headers or {})
        self._http = httpx.Client(base_url=self.base_url, transport=transport, timeout=timeout, headers=sent)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PromClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(
        self, path: str, form: list[tuple[str, str]], what: str, *, get: bool = False
    ) -> httpx.Response:
        url = f"{self.base_url}{path}"
        try:
            if get:
                return self._http.get(f"{path}?{urlencode(form)}")
            return self._http.post(path, content=urlencode(form).encode(), headers=_FORM)
        except httpx.TimeoutException as exc:
            raise SourceError(f"Prometheus at {url} timed out answering {what}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise SourceError(f"Prometheus at {url} is unreachable: {exc}") from exc

    def _call(
        self,
        path: str,
        form: list[tuple[str, str]],
        what: str,
        *,
        get: bool = False,
    ) -> Any:
        return self._data(self._send(path, form, what, get=get), path, what)

    def _data(self, resp: httpx.Response, path: str, what: str) -> Any:
        url = f"{self.base_url}{path}"
        try:
            body = orjson.loads(resp.content)
        except orjson.JSONDecodeError as exc:
            snippet = resp.text[:200].strip()
            raise SourceError(
                f"Prometheus at {url} answered HTTP {resp.status_code} with a body that is not JSON "
                f"({exc}) for {what}: {snippet!r}"
            ) from exc
        if not isinstance(body, dict):
            raise SourceError(f"Prometheus at {url} answered {what} with unexpected JSON: not an object")
        if resp.status_code != 200 or body.get("status") != "success":
            err = body.get("error") or "no error text"
            etype = body.get("errorType") or "unknown"
            raise SourceError(
                f"Prometheus at {url} answered HTTP {resp.status_code} ({etype}) to {what}: {err}"
            )
        data = body.get("data")
        if data is None:
            raise SourceError(f"Prometheus at {url} answered {what} without a 'data' field")
        return data

    def query(self, promql: str, at: datetime | float) -> InstantResult:
        """Instant query at `at`: one (labels, value) per series; NaN/Inf become NaN."""
        data = self._call(
            "/api/v1/query", [("query", promql), ("time", f"{_unix(at):.3f}")], f"query {promql!r}"
        )
        try:
            rtype = data["resultType"]
            result = data["result"]
            if rtype == "vector":
                return [(dict(s["metric"]), _value(s["value"][1])) for s in result]
            if rtype == "scalar":
                return [({}, _value(result[1]))]
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
        """Range query: (labels, timestamps, values) per series; NaN/Inf become NaN."""
        form = [
            ("query", promql),
            ("start", f"{_unix(start):.3f}"),
            ("end", f"{_unix(end):.3f}"),
            ("step", f"{step:g}"),
        ]
        what = f"range query {promql!r}"
        resp = self._send("/api/v1/query_range", form, what)
        if resp.status_code == 200:
            fast = parse_matrix(resp.content)
            if fast is not None:
                return fast
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
                ts = np.fromiter((p[0] for p in pts), dtype=np.float64, count=len(pts))
                vs = np.fromiter((float(p[1]) for p in pts), dtype=np.float64, count=len(pts))
                vs[~np.isfinite(vs)] = np.nan
                out.append((dict(s["metric"]), ts, vs))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise SourceError(
                f"Prometheus at {self.base_url} sent a malformed matrix for {promql!r}: {exc}"
            ) from exc
        return out

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

_MATRIX_HEAD = b'{"status":"success","data":{"resultType":"matrix","result":['
_SERIES = b'{"metric":'
_VALUES = b',"values":['
_NOT_NUMBERS = b'[]"}'


def parse_matrix(body: bytes) -> RangeResult | None:
    """Reads a successful matrix answer without building a Python object per sample; None if unsure.

    Prometheus writes `{"metric":{...},"values":[[t,"v"],...]}` per series. Inside JSON strings every quote
    is escaped, so the two markers cannot occur in a label value; only the label sets go through orjson and
    each series' points become one comma-separated run of numbers for numpy. Anything else in the answer
    (warnings, native histograms, a layout this does not recognise) returns None and the caller parses the
    whole body the ordinary way.
    """
    if not body.startswith(_MATRIX_HEAD) or b'"histograms"' in body or b'"warnings"' in body:
        return None
    tail = body.rfind(b"]}")
    if tail < 0 or body[tail:] != b"]}}":
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
                nums = np.fromstring(points.translate(None, _NOT_NUMBERS), dtype=np.float64, sep=",")
                n = points.count(b"],[") + 1
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
