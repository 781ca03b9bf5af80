"""Benchmark: the ways to read raw 60 s usage samples from a real Prometheus and VictoriaMetrics, compared.

One synthetic cluster (bench_prometheus.Cluster: N containers x D days at 60 s, CPU counter + working set) is
backfilled into Prometheus (promtool) and imported into VictoriaMetrics from the same text. Each read path
then fetches both series of every container, one request per namespace and metric, one request at a time,
and the table gives, per path: the server's CPU seconds (from /proc), the bytes on the wire, this process'
decode CPU seconds, the samples that came back, and each figure's ratio to today's path (queries.py's own
range queries: rate(...[2m]) and max_over_time(...[1m]) at a 60 s step, decoded by parse_matrix). A second
table times the JSON decoders on today's answers.

    nice .venv/bin/python bench/bench_read_paths.py --containers 500

Remote read and the decoder comparison use protobuf, cramjam and msgspec (in the dev install).
The XOR-chunk remote read is decoded by the recommender's own decoder (recommender/input/prometheus/
xorchunks.py: no maintained Python decoder of Prometheus chunks exists), as the recommender reads it:
declared counts first, then batch by batch; before the table, its samples are checked against the samples
answer.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import cramjam
import httpx
import msgspec
import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_prometheus import Cluster  # noqa: E402

from recommender.input.prometheus import queries  # noqa: E402
from recommender.input.prometheus.caps import Origin  # noqa: E402
from recommender.input.prometheus.client import parse_matrix  # noqa: E402
from recommender.input.prometheus.export import measured, parsed  # noqa: E402
from recommender.input.prometheus.prompb import RemoteRead, remote_read_messages  # noqa: E402
from recommender.input.prometheus.remoteread import RemoteReadCodec  # noqa: E402
from recommender.input.prometheus.xorchunks import batches, declared, decode_range  # noqa: E402
from recommender.model import FloatArray  # noqa: E402
from tests.integration.prometheus.server import Server, cpu_seconds, running_prometheus  # noqa: E402
from tests.integration.victoriametrics.server import flush, import_text, running_victoria_metrics  # noqa: E402

CPU, MEM = queries.CPU_METRIC, queries.MEM_METRIC
IDENTITY = {"Accept-Encoding": "identity"}


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    step: int
    namespaces: list[str]

    @property
    def days(self) -> int:
        return round((self.end - self.start) / 86400)


@dataclass
class Figures:
    server_cpu: float = 0.0
    wire_bytes: int = 0
    decode_s: float = 0.0
    samples: int = 0
    series: int = 0
    requests: int = 0


Read = Callable[[httpx.Client, Window, str, str, Figures], None]
"""One request: (client, window, namespace, metric, figures to add to)."""


def _decode(fig: Figures, body: bytes, decode: Callable[[bytes], list[tuple[int, int]]]) -> None:
    t0 = time.process_time()  # CPU time: other work on the machine does not count
    sizes = decode(body)
    fig.decode_s += time.process_time() - t0
    fig.wire_bytes += len(body)
    fig.series += len(sizes)
    fig.samples += sum(n for n, _ in sizes)
    fig.requests += 1


def _matrix_sizes(body: bytes) -> list[tuple[int, int]]:
    result = parse_matrix(body)
    if result is None:
        raise SystemExit(f"parse_matrix could not read an answer: {body[:300]!r}")
    return [(int(ts.size), 0) for _, ts, _ in result]


def _post(client: httpx.Client, path: str, form: dict[str, str]) -> bytes:
    r = client.post(path, data=form, headers=IDENTITY)
    if r.status_code != 200:
        raise SystemExit(f"{path} {form}: {r.status_code} {r.text[:500]}")
    return r.content


def range_query(promql: Callable[[str, str], str]) -> Read:
    def read(client: httpx.Client, w: Window, ns: str, metric: str, fig: Figures) -> None:
        form = {"query": promql(metric, ns), "start": f"{w.start:.0f}", "end": f"{w.end:.0f}"}
        form["step"] = f"{w.step}"
        _decode(fig, _post(client, "/api/v1/query_range", form), _matrix_sizes)

    return read


def today(metric: str, ns: str) -> str:
    """The product's own range queries (queries.py at the default step and rate window)."""
    w = queries.Window(seconds=0)
    return queries.cpu_rate(ns, w) if metric == CPU else queries.memory_peak(ns, w)


def raw_selector(metric: str, ns: str) -> str:
    return f'{metric}{{namespace="{ns}",container!=""}}'


def instant_range_selector(client: httpx.Client, w: Window, ns: str, metric: str, fig: Figures) -> None:
    """An instant query of `metric[7d]` answers every raw sample in the range, as a matrix."""
    seconds = int(w.end - w.start) + w.step
    form = {"query": f"{raw_selector(metric, ns)}[{seconds}s]", "time": f"{w.end:.0f}"}
    _decode(fig, _post(client, "/api/v1/query", form), _matrix_sizes)


REMOTE_READ_HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Read-Version": "0.1.0",
    **IDENTITY,
}


def post_remote_read(
    client: httpx.Client, messages: RemoteRead, w: Window, ns: str, metric: str, chunked: bool
) -> bytes:
    """One /api/v1/read of `metric` in namespace `ns` over the window: samples, or streamed XOR chunks."""
    req = messages.read_request()
    q = req.queries.add()  # type: ignore[attr-defined]
    q.start_timestamp_ms, q.end_timestamp_ms = int(w.start * 1000), int(w.end * 1000)
    for name, value in (("__name__", metric), ("namespace", ns)):
        m = q.matchers.add()
        m.type, m.name, m.value = 0, name, value
    req.accepted_response_types.append(1 if chunked else 0)  # type: ignore[attr-defined]
    body = bytes(cramjam.snappy.compress_raw(req.SerializeToString()))
    r = client.post("/api/v1/read", content=body, headers=REMOTE_READ_HEADERS)
    if r.status_code != 200:
        raise SystemExit(f"remote read: {r.status_code} {r.text[:500]}")
    return r.content


def remote_read(messages: RemoteRead, chunked: bool) -> Read:
    def read(client: httpx.Client, w: Window, ns: str, metric: str, fig: Figures) -> None:
        decode = _chunked_sizes(messages) if chunked else _sample_sizes(messages)
        _decode(fig, post_remote_read(client, messages, w, ns, metric, chunked), decode)

    return read


def _sample_sizes(messages: RemoteRead) -> Callable[[bytes], list[tuple[int, int]]]:
    def decode(body: bytes) -> list[tuple[int, int]]:
        resp = messages.read_response.FromString(bytes(cramjam.snappy.decompress_raw(body)))
        out = []
        for ts in resp.results[0].timeseries:  # type: ignore[attr-defined]
            samples = ts.samples
            t = np.fromiter((s.timestamp for s in samples), dtype=np.int64, count=len(samples))
            v = np.fromiter((s.value for s in samples), dtype=np.float64, count=len(samples))
            out.append((int(t.size), int(v.size)))
        return out

    return decode


def chunked_series(body: bytes) -> Iterator[tuple[FloatArray, FloatArray]]:
    """Each series of a streamed answer: its XOR chunks decoded as the recommender decodes them (counted,
    then batch by batch) and joined."""
    origin = Origin("bench", "/api/v1/read", "remote read")
    found = RemoteReadCodec().answer(body, origin)
    counts = declared(found.data, found.starts)
    parts = [decode_range(found.data, found.starts, counts, lo, hi) for lo, hi in batches(counts)]
    times = np.concatenate([p.timestamps_ms for p in parts]) if parts else np.empty(0, np.int64)
    values = np.concatenate([p.values for p in parts]) if parts else np.empty(0)
    ends = np.concatenate([[0], np.cumsum(np.bincount(found.series_of, weights=counts).astype(np.int64))])
    for a, b in zip(ends[:-1].tolist(), ends[1:].tolist(), strict=True):
        yield times[a:b] / 1000.0, values[a:b]


def _chunked_sizes(messages: RemoteRead) -> Callable[[bytes], list[tuple[int, int]]]:
    def decode(body: bytes) -> list[tuple[int, int]]:
        return [(int(t.size), int(v.size)) for t, v in chunked_series(body)]

    return decode


def vm_export(client: httpx.Client, w: Window, ns: str, metric: str, fig: Figures) -> None:
    """VictoriaMetrics' export API: one JSON line per series with its raw values and timestamps (ms),
    decoded as the recommender decodes it."""
    form = {"match[]": raw_selector(metric, ns), "start": f"{w.start:.0f}", "end": f"{w.end:.0f}"}

    def decode(body: bytes) -> list[tuple[int, int]]:
        origin = Origin("bench", "/api/v1/export", "export")  # read as the recommender reads it
        lines = measured(body, round((w.end - w.start) * 1000), origin)
        sizes = [np.diff(part.offsets) for part, _ in parsed(lines, origin)]
        return [(int(n), int(n)) for n in np.concatenate(sizes)] if sizes else []

    _decode(fig, _post(client, "/api/v1/export", form), decode)


def xor_agrees(server: Server, messages: RemoteRead, w: Window) -> str:
    """Whether the XOR chunks of the first namespace's CPU counters decode to the samples answer's values."""
    with httpx.Client(base_url=server.url, timeout=600.0) as client:
        answers = [
            post_remote_read(client, messages, w, w.namespaces[0], CPU, chunked) for chunked in (False, True)
        ]
    resp = messages.read_response.FromString(bytes(cramjam.snappy.decompress_raw(answers[0])))
    want = [[s.value for s in ts.samples] for ts in resp.results[0].timeseries]  # type: ignore[attr-defined]
    got = [v.tolist() for _, v in chunked_series(answers[1])]
    return f"{sum(map(len, got)):,} samples, {'equal' if sorted(got) == sorted(want) else 'DIFFERENT'}"


def measure(server: Server, read: Read, w: Window) -> tuple[Figures, float]:
    fig = Figures()
    with httpx.Client(base_url=server.url, timeout=600.0) as client:
        cpu0, t0 = cpu_seconds(server.pid), time.perf_counter()
        for ns in w.namespaces:
            for metric in (CPU, MEM):
                read(client, w, ns, metric, fig)
        wall = time.perf_counter() - t0
        fig.server_cpu = cpu_seconds(server.pid) - cpu0
    return fig, wall


def load(cluster: Cluster, data_dir: Path, vm_url: str, workers: int) -> None:
    """Each 2 h window as OpenMetrics text: backfilled into Prometheus' TSDB and imported into VM."""
    offsets = cluster.counter_offsets()
    om = data_dir.parent / "om"
    om.mkdir(exist_ok=True)

    def one(k: int) -> None:
        path = om / f"{cluster.windows[k]}.om"
        path.write_text(cluster.text(k, offsets, 600))
        cmd = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(path), str(data_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"promtool failed on {path}: {done.stderr[-1000:]}")
        import_text(vm_url, [path], workers=1)
        path.unlink()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, range(len(cluster.windows))))


class Matrix(msgspec.Struct):
    """One series of a range answer, as msgspec decodes it."""

    metric: dict[str, str]
    values: list[tuple[float, str]]


class Data(msgspec.Struct):
    resultType: str
    result: list[Matrix]


class Answer(msgspec.Struct):
    status: str
    data: Data


def decoders(server: Server, w: Window) -> Iterator[tuple[str, float, float]]:
    """(decoder, seconds over today's answers, ratio to parse_matrix) for the JSON decoders tried."""

    typed = msgspec.json.Decoder(Answer)

    def by_msgspec(body: bytes) -> None:
        for s in typed.decode(body).data.result:
            np.array([p[0] for p in s.values]), np.array([float(p[1]) for p in s.values])

    def by_orjson(body: bytes) -> None:
        for s in orjson.loads(body)["data"]["result"]:
            pts = s["values"]
            (
                np.fromiter((p[0] for p in pts), np.float64, len(pts)),
                np.fromiter((float(p[1]) for p in pts), np.float64, len(pts)),
            )

    bodies = []
    with httpx.Client(base_url=server.url, timeout=600.0) as client:
        for ns in w.namespaces:
            for metric in (CPU, MEM):
                form = {"query": today(metric, ns), "start": f"{w.start:.0f}", "end": f"{w.end:.0f}"}
                bodies.append(_post(client, "/api/v1/query_range", {**form, "step": f"{w.step}"}))
    base = 0.0
    for name, fn in (
        ("parse_matrix (orjson labels + numpy)", parse_matrix),
        ("msgspec typed structs", by_msgspec),
        ("orjson full parse + numpy.fromiter", by_orjson),
    ):
        t0 = time.process_time()
        for body in bodies:
            fn(body)
        took = time.process_time() - t0
        base = base or took
        yield name, took, took / base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--containers", type=int, default=500)
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--prometheus", default="/usr/bin/prometheus", help="the Prometheus binary to measure")
    args = ap.parse_args()
    end = int(time.time()) // 60 * 60
    cluster = Cluster(args.containers, args.namespaces, args.days, 60, end)
    w = Window(cluster.start, cluster.end - 60, 60, sorted(set(cluster.ns)))
    print(f"containers={args.containers} namespaces={len(w.namespaces)} days={args.days} step=60s")
    messages = remote_read_messages()
    prom_paths: list[tuple[str, Read]] = [
        ("range rate[2m] + max_over_time[1m] (today)", range_query(today)),
        ("range raw counter + gauge, 60 s", range_query(raw_selector)),
        ("instant query of selector[7d]", instant_range_selector),
        ("remote read, samples", remote_read(messages, chunked=False)),
        ("remote read, streamed XOR chunks", remote_read(messages, chunked=True)),
    ]
    vm_paths: list[tuple[str, Read]] = [
        ("range rate[2m] + max_over_time[1m] (today)", range_query(today)),
        ("instant query of selector[7d]", instant_range_selector),
        ("export API (JSON lines)", vm_export),
    ]
    import tests.integration.prometheus.server as prom_server

    prom_server.PROMETHEUS = args.prometheus
    with tempfile.TemporaryDirectory(prefix="bench-read-") as tmp:
        data = Path(tmp) / "prom" / "data"
        data.mkdir(parents=True)
        with running_victoria_metrics(Path(tmp) / "vm" / "data") as vm:
            t0 = time.perf_counter()
            load(cluster, data, vm.url, args.workers)
            flush(vm.url, 2 * args.containers, cluster.start, timeout=300)
            print(f"generate + backfill + import: {time.perf_counter() - t0:.1f} s")
            rows = [("VictoriaMetrics", name, *measure(vm, read, w)) for name, read in vm_paths]
        with running_prometheus(data, retention_days=args.days + 2, ready_timeout=300) as prom:
            print(f"XOR chunks decoded vs the samples answer: {xor_agrees(prom, messages, w)}")
            rows = [("Prometheus", name, *measure(prom, read, w)) for name, read in prom_paths] + rows
            decoded = list(decoders(prom, w))
    table(rows, args.containers)
    print("\nJSON decoders on today's range answers (same bodies, this process):")
    for name, took, ratio in decoded:
        print(f"  {name:<40} {took:7.2f} s  {ratio:5.2f}x")


def table(rows: list[tuple[str, str, Figures, float]], containers: int) -> None:
    print(
        f"\n{'server':<16}{'read path':<42}{'srv CPU s':>10}{'ms/ctr':>8}{'MiB wire':>10}"
        f"{'decode s':>9}{'wall s':>8}{'samples':>12}{'CPU x':>7}{'wire x':>7}{'dec x':>7}"
    )
    base: dict[str, Figures] = {}
    for server, name, fig, wall in rows:
        b = base.setdefault(server, fig)
        print(
            f"{server:<16}{name:<42}{fig.server_cpu:>10.2f}{1000 * fig.server_cpu / containers:>8.1f}"
            f"{fig.wire_bytes / 2**20:>10.1f}{fig.decode_s:>9.2f}{wall:>8.1f}{fig.samples:>12,}"
            f"{fig.server_cpu / max(b.server_cpu, 1e-9):>7.2f}{fig.wire_bytes / max(b.wire_bytes, 1):>7.2f}"
            f"{fig.decode_s / max(b.decode_s, 1e-9):>7.2f}"
        )
    print("ratios (x): to the first row of the same server")


if __name__ == "__main__":
    main()
