"""A fake Prometheus on 127.0.0.1 answering the recommender's queries from a small dataset, with faults
(the query API only: remote read and the export API answer 404, so `auto` reads by range queries).

One namespace `shop`, Deployment `web` -> ReplicaSet `web-6d4b` -> two pods with container `app` (about 0.2
cores, 200 MiB), 5-minute points over the asked range. The queries are matched loosely by the metric names
recommender/input/prometheus/queries.py puts in them. Modes (`FakeProm.mode`):

- ok: the dataset as it is.
- outlier: one memory point of 2^64-1 bytes.  overflow: one CPU and one memory point of 1e300.
- absurd: every CPU and memory point 1e300 (a persistent absurd series).  absurd-cpu: every CPU point 1e300.
- negative: every CPU and memory point negative.  nan: NaN, +Inf and -Inf points, and a `1e400`.
- huge: every CPU and memory range answer padded with `pad_bytes` of junk series whatever its time range,
  streamed chunked (no Content-Length: the client cannot know the size before reading).
- Any mode: `wide` extra container series of bare pods in every CPU and memory answer (its size grows
  with the time range asked, as a large namespace's does).
- slow: every answer waits `delay` seconds first.  trickle: answers sent one byte per `delay` seconds.
- 5xx: the next `failures` requests answer 503, then ok.
- Any mode: with `token` set, a request without `Authorization: Bearer <token>` gets 401.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

NAMESPACE = "shop"
PODS = ("web-6d4b-a", "web-6d4b-b")
CPU_CORES = 0.2
MEMORY_BYTES = 200 * 2**20
STEP = 300.0

Json = dict[str, Any]


@dataclass
class FakeProm:
    """The fault switches and what the fake has seen; read and changed by the test while it serves."""

    mode: str = "ok"
    token: str | None = None
    delay: float = 0.0
    failures: int = 0
    pad_bytes: int = 0
    wide: int = 0  # extra container series (bare pods) in every CPU and memory answer: size grows with range
    requests: int = 0
    unauthorized: int = 0
    non_finite_sent: int = 0  # NaN, +-Inf and out-of-double values in the answers sent so far
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def point(self, metric: str, t: float, i: int, n: int) -> str:
        """The value at time t (point i of the n asked) of one pod's CPU or memory series in this mode."""
        normal = CPU_CORES if metric == "cpu" else MEMORY_BYTES
        k = int(t // STEP)  # values follow the time, not the range asked: split answers agree
        mode, middle = self.mode, i == n // 2
        if mode == "outlier" and metric == "memory" and middle:
            return str(2**64 - 1)
        if (mode == "overflow" and middle) or mode == "absurd" or (mode == "absurd-cpu" and metric == "cpu"):
            return "1e300"
        if mode == "negative":
            return "-5" if metric == "cpu" else "-1048576"
        if mode == "nan" and k % 4 == 0:
            with self.lock:
                self.non_finite_sent += 1
            return ("NaN", "+Inf", "-Inf", "1e400")[(k // 4) % 4]
        return repr(normal * (1 + 0.1 * ((k * 7) % 5) / 4))


def _series_labels() -> list[Json]:
    out: list[Json] = [
        {
            "__name__": "kube_replicaset_owner",
            "namespace": NAMESPACE,
            "replicaset": "web-6d4b",
            "owner_kind": "Deployment",
            "owner_name": "web",
            "owner_is_controller": "true",
        }
    ]
    for pod in PODS:
        out.append(
            {
                "__name__": "kube_pod_owner",
                "namespace": NAMESPACE,
                "pod": pod,
                "owner_kind": "ReplicaSet",
                "owner_name": "web-6d4b",
                "owner_is_controller": "true",
            }
        )
    return out


def _facts(mode: str) -> list[Json]:
    """Requests, limits and sample counts; the first pod's limits and count broken in the value modes."""
    broken = {"overflow": ("1e300", "1e300"), "nan": ("+Inf", "NaN"), "negative": ("-1", "-5")}
    out: list[Json] = []
    for pod in PODS:
        base = {"namespace": NAMESPACE, "pod": pod, "container": "app", "node": "n1"}
        limit, count = broken.get(mode, ("1", "2016")) if pod == PODS[0] else ("1", "2016")
        for kind, cpu, mem in (("requests", "0.5", "536870912"), ("limits", limit, "1073741824")):
            out.append({"metric": base | {"podsizer_q": kind, "resource": "cpu"}, "value": [0, cpu]})
            out.append({"metric": base | {"podsizer_q": kind, "resource": "memory"}, "value": [0, mem]})
        out.append({"metric": base | {"podsizer_q": "count"}, "value": [0, count]})
    return out


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProm
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        self._answer(parse_qs(urlsplit(self.path).query))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if urlsplit(self.path).path in ("/api/v1/read", "/api/v1/export"):
            with self.fake.lock:  # the query API only (as Thanos): the raw reads are not offered
                self.fake.paths.append(urlsplit(self.path).path)
            self._send(404, b"404 page not found")
            return
        self._answer(parse_qs(body.decode()))

    def _answer(self, form: dict[str, list[str]]) -> None:
        fake = self.fake
        path = urlsplit(self.path).path
        with fake.lock:
            fake.requests += 1
            fake.paths.append(path)
            failing = fake.mode == "5xx" and fake.failures > 0
            if failing:
                fake.failures -= 1
        if fake.token is not None and self.headers.get("Authorization") != f"Bearer {fake.token}":
            with fake.lock:
                fake.unauthorized += 1
            self._send(401, b'{"status":"error","errorType":"unauthorized","error":"bad token"}')
            return
        if failing:
            self._send(503, b'{"status":"error","errorType":"unavailable","error":"overloaded"}')
            return
        if fake.mode == "slow":
            time.sleep(fake.delay)
        data = self._data(path, form)
        if fake.mode == "huge" and path == "/api/v1/query_range" and data["result"]:
            self._stream_padded(data)
            return
        self._send(200, json.dumps({"status": "success", "data": data}).encode())

    def _stream_padded(self, data: Json) -> None:
        """The answer plus pad_bytes of junk series, chunked (no Content-Length), built as it is sent."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        head = json.dumps({"status": "success", "data": data})[: -len("]}}")]
        junk = "".join(
            f',{{"metric":{{"pod":"pad-{i}","junk":"{"x" * 900}"}},"values":[]}}' for i in range(64)
        )
        parts = [head] + [junk] * (self.fake.pad_bytes // len(junk) + 1) + ["]}}"]
        try:
            for part in parts:  # bounded: pad_bytes / ~60 KB parts
                raw = part.encode()
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def _data(self, path: str, form: dict[str, list[str]]) -> Any:
        query = form.get("query", [""])[0]
        if path.startswith("/api/v1/label/"):
            return [NAMESPACE]
        if path == "/api/v1/series":
            return _series_labels()
        if path == "/api/v1/query":
            facts = _facts(self.fake.mode) if "kube_pod_container_resource" in query else []
            if facts and self.fake.mode == "nan":
                with self.fake.lock:
                    self.fake.non_finite_sent += 2  # the first pod's CPU limit and sample count
            return {"resultType": "vector", "result": facts}
        return {"resultType": "matrix", "result": self._matrix(query, form)}

    def _matrix(self, query: str, form: dict[str, list[str]]) -> list[Json]:
        metric = "cpu" if "container_cpu_usage" in query else "memory" if "working_set" in query else ""
        if not metric:
            return []
        start, end, step = (float(form[k][0]) for k in ("start", "end", "step"))
        n = int((end - start) // step) + 1
        out: list[Json] = []
        for pod in PODS:
            labels = {"namespace": NAMESPACE, "pod": pod, "container": "app"}
            values = [[start + i * step, self.fake.point(metric, start + i * step, i, n)] for i in range(n)]
            out.append({"metric": labels, "values": values})
        for k in range(self.fake.wide):
            labels = {"namespace": NAMESPACE, "pod": f"bare-{k:05d}", "container": "app", "image": "x" * 40}
            values = [[start + i * step, repr(CPU_CORES + int(start / STEP + i) % 7 / 100)] for i in range(n)]
            out.append({"metric": labels, "values": values})
        return out

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.fake.mode != "trickle":
            self.wfile.write(body)
            return
        deadline = time.monotonic() + 30
        for i in range(len(body)):  # bounded: at most len(body) bytes and 30 s
            if time.monotonic() > deadline:
                break
            try:
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            except OSError:
                return
            time.sleep(self.fake.delay)


@dataclass
class Served:
    """A running fake: its URL, switches and stop()."""

    fake: FakeProm
    server: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        return None  # a client that stops reading (the byte cap, a timeout) is expected here


def serve(fake: FakeProm) -> Served:
    """Serve `fake` on a free port of 127.0.0.1 from a daemon thread."""
    handler = type("Handler", (_Handler,), {"fake": fake})
    server = _Server(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-prometheus", daemon=True)
    thread.start()
    return Served(fake, server, thread)
