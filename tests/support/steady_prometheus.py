"""A fake Prometheus on 127.0.0.1 that answers what `podsizer recommend` asks (no pods, no GPUs, no nodes)
and its remote reads with steady chunks (tests/support/remoteread.steady_chunk): honest ones (120 samples
15 s apart, an idle container's) or decompression bombs, for the bomb's integration test and
bench/bench_hostile.py.

    with SteadyPrometheus(series=300, chunks=NAIVE_BOMB) as server:
        ...  # podsizer recommend --prometheus-url server.url --namespaces bomb
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

import orjson

from recommender.input.prometheus.prompb import remote_read_messages
from recommender.input.prometheus.remoteread import CONTENT_TYPE
from tests.support.remoteread import _uvarint, read_request, steady_chunk

NAMESPACE = "bomb"
FRAME_BYTES = 1 << 20
"""A frame's bytes at most, as Prometheus' --storage.remote.read-max-bytes-in-frame."""


@dataclass(frozen=True)
class Chunks:
    """How each series' chunks are cut: `samples` each, `interval_ms` apart; their stated span their own."""

    name: str
    samples: int
    interval_ms: int


HONEST = Chunks("honest", 120, 15_000)
NAIVE_BOMB = Chunks("naive bomb", 65_535, 1_000)
"""The most samples the format lets a chunk declare, 16 KB of bytes."""
PLAUSIBLE_BOMB = Chunks("plausible bomb", 4096, 1_000)
"""The most samples a chunk may declare (caps.MAX_CHUNK_SAMPLES), one a second: decoded in bounded batches."""

_EMPTY = {
    "/api/v1/query": {"resultType": "vector", "result": []},
    "/api/v1/query_range": {"resultType": "matrix", "result": []},
    "/api/v1/series": [],
    "/api/v1/status/buildinfo": {"version": "2.53.0"},
}


class SteadyPrometheus:
    """Serves until stopped; `reads` counts the remote reads answered."""

    def __init__(self, series: int, chunks: Chunks) -> None:
        self.series, self.chunks = series, chunks
        self.reads = 0
        self._messages = remote_read_messages()
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> SteadyPrometheus:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=10)

    def answer(self, request: bytes) -> bytes:
        """The streamed answer to one read: each series' chunks from the range's start until past its end."""
        matchers, start, end, _ = read_request(request)
        metric = next(v for n, op, v in matchers if (n, op) == ("__name__", "="))
        with self._lock:
            self.reads += 1
        c = self.chunks
        reach = c.samples * c.interval_ms
        firsts = range(start - start % reach, end + 1, reach)
        chunks = [
            (t0, t0 + (c.samples - 1) * c.interval_ms, steady_chunk(t0, c.samples, c.interval_ms, 1e8))
            for t0 in firsts
        ]
        out, frame = bytearray(), self._messages.chunked_read_response()
        for i in range(self.series):
            s = frame.chunked_series.add()  # type: ignore[attr-defined]
            for name, value in (
                ("__name__", metric),
                ("container", "c"),
                ("namespace", NAMESPACE),
                ("pod", f"p{i}"),
            ):
                label = s.labels.add()
                label.name, label.value = name, value
            for lo, hi, data in chunks:
                chunk = s.chunks.add()
                chunk.min_time_ms, chunk.max_time_ms, chunk.type, chunk.data = lo, hi, 1, data
            if frame.ByteSize() >= FRAME_BYTES or i == self.series - 1:
                body = frame.SerializeToString()
                out += _uvarint(len(body)) + b"\0\0\0\0" + body
                frame = self._messages.chunked_read_response()
        return bytes(out)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def _send(self, body: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._api(self.path.split("?")[0])

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                path = self.path.split("?")[0]
                if path == "/api/v1/read":
                    self._send(server.answer(body), CONTENT_TYPE)
                else:
                    self._api(path)

            def _api(self, path: str) -> None:
                data = [NAMESPACE] if path.startswith("/api/v1/label/") else _EMPTY.get(path)
                if data is None:
                    self.send_error(404)
                    return
                self._send(orjson.dumps({"status": "success", "data": data}), "application/json")

        return Handler


@dataclass(frozen=True)
class Ran:
    """One `podsizer recommend`: its exit status, stderr, peak RSS (its own, from wait4) and wall time."""

    status: int
    stderr: str
    rss_bytes: int
    seconds: float


def recommend(url: str, root: Path, *flags: str, timeout: float = 600.0) -> Ran:
    """`podsizer recommend` of the fake's namespace, the code of `root` (a checkout, run with this venv),
    in a process of its own: killed past `timeout`."""
    argv = [sys.executable, "-c", "import sys; from podsizer.cli import main; sys.exit(main())", "recommend"]
    argv += ["--prometheus-url", url, "--namespaces", NAMESPACE, "--no-progress", "-o", "json", *flags]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")}
    env |= {"PYTHONPATH": str(root), "KUBECONFIG": str(root / "no-such-kubeconfig")}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as cwd, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout:
                proc.kill()
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    return Ran(proc.returncode, text, usage.ru_maxrss * 1024, time.monotonic() - started)
