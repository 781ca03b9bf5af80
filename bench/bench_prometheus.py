"""Benchmark: PrometheusSource.collect() over N containers x 7 days x 60 s in a real, backfilled Prometheus.

Prints wall time of collect(), peak RSS of this process and of Prometheus, the number of queries sent, and the
same statistics computed with numpy on an in-memory (containers, samples) array as the lower bound.

    nice -n 10 .venv/bin/python bench/bench_prometheus.py --containers 1000

The Prometheus CPU-seconds figure is the one to compare (wall time depends on what else runs); --compress
asks for gzip answers, which more than doubles that figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recommender.input.prometheus import PromClient, PrometheusSource  # noqa: E402
from recommender.model import FloatArray  # noqa: E402
from tests.integration.prometheus.server import cpu_seconds, rss_bytes, running_prometheus  # noqa: E402
from tests.support.openmetrics import BLOCK_SECONDS, format_rows, run_forked, series_prefix  # noqa: E402

MI = 2**20


class Cluster:
    """Synthetic cluster: `containers` pods (one container each) in Deployments of 2 replicas."""

    def __init__(
        self, containers: int, namespaces: int, days: int, step: int, end: int, seed: int = 1
    ) -> None:
        self.n, self.step, self.seed = containers, step, seed
        self.end = end - end % BLOCK_SECONDS  # block-aligned so every window is full
        self.start = self.end - days * 86400
        rng = np.random.default_rng(seed)
        self.cpu_base = rng.uniform(0.01, 2.0, containers)
        self.mem_base = rng.uniform(64, 4096, containers) * MI
        # both replicas of a Deployment in one namespace, where its ReplicaSet owner series is
        self.ns = [f"ns-{(i // 2) % namespaces:02d}" for i in range(containers)]
        self.deploy = [f"app-{i // 2:05d}" for i in range(containers)]
        self.rs = [f"{d}-6d8f9c7b5" for d in self.deploy]
        self.pod = [f"{r}-{'ab'[i % 2]}{i:05d}" for i, r in enumerate(self.rs)]
        self.windows = list(range(self.start, self.end, BLOCK_SECONDS))

    def timestamps(self, k: int) -> FloatArray:
        lo = self.windows[k]
        return np.arange(lo, lo + BLOCK_SECONDS, self.step, dtype=np.float64)

    def window(self, k: int) -> tuple[FloatArray, FloatArray]:
        """CPU cores and memory bytes of every container over window k (deterministic per window)."""
        rng = np.random.default_rng([self.seed, k])
        t = self.timestamps(k).size
        cores = self.cpu_base[:, None] * (1 + 0.05 * rng.standard_normal((self.n, t)))
        mem = self.mem_base[:, None] + rng.normal(0, 4 * MI, (self.n, t))
        return np.abs(cores), mem

    def counter_offsets(self) -> FloatArray:
        """CPU counter value at the start of each window (cumulative core-seconds)."""
        incs = np.array([self.window(k)[0].sum(axis=1) * self.step for k in range(len(self.windows))])
        return np.vstack([np.zeros(self.n), np.cumsum(incs, axis=0)[:-1]])

    def text(self, k: int, offsets: FloatArray, info_step: int) -> str:
        ts = self.timestamps(k)
        cores, mem = self.window(k)
        counter = offsets[k][:, None] + np.cumsum(cores * self.step, axis=1)
        labels = [
            {
                "container": "main",
                "id": f"/kubepods/pod{i}/main",
                "image": "registry.example.com/app:1",
                "job": "kubelet",
                "namespace": self.ns[i],
                "node": f"node-{i % 200:03d}",
                "pod": self.pod[i],
            }
            for i in range(self.n)
        ]
        info_ts = ts[:: max(1, info_step // self.step)]
        ones = np.ones((self.n, info_ts.size))
        parts = [
            "# TYPE container_cpu_usage_seconds counter\n",
            format_rows(
                [series_prefix("container_cpu_usage_seconds_total", lab) for lab in labels],
                ts,
                counter,
                False,
            ),
            "# TYPE container_memory_working_set_bytes gauge\n",
            format_rows(
                [series_prefix("container_memory_working_set_bytes", lab) for lab in labels], ts, mem, True
            ),
            "# TYPE kube_pod_owner gauge\n",
            format_rows(
                [
                    series_prefix(
                        "kube_pod_owner",
                        {
                            "namespace": self.ns[i],
                            "pod": self.pod[i],
                            "owner_kind": "ReplicaSet",
                            "owner_name": self.rs[i],
                            "owner_is_controller": "true",
                        },
                    )
                    for i in range(self.n)
                ],
                info_ts,
                ones,
                True,
            ),
            "# TYPE kube_replicaset_owner gauge\n",
            format_rows(
                [
                    series_prefix(
                        "kube_replicaset_owner",
                        {
                            "namespace": self.ns[i],
                            "replicaset": self.rs[i],
                            "owner_kind": "Deployment",
                            "owner_name": self.deploy[i],
                            "owner_is_controller": "true",
                        },
                    )
                    for i in range(0, self.n, 2)
                ],
                info_ts,
                ones[::2],
                True,
            ),
            "# TYPE kube_pod_container_resource_requests gauge\n",
            format_rows(
                [
                    series_prefix(
                        "kube_pod_container_resource_requests",
                        {
                            "namespace": self.ns[i],
                            "pod": self.pod[i],
                            "container": "main",
                            "resource": "cpu",
                            "unit": "core",
                        },
                    )
                    for i in range(self.n)
                ],
                info_ts,
                np.repeat(np.round(self.cpu_base * 1.5, 2)[:, None], info_ts.size, axis=1),
                False,
            ),
            "# EOF\n",
        ]
        return "".join(parts)


class CountingTransport(httpx.HTTPTransport):
    """The real transport, counting requests."""

    count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return super().handle_request(request)


def generate(args: argparse.Namespace, data_dir: Path, end: int) -> None:
    """Child process: writes each 2 h window, backfills it with promtool, deletes it; `workers` at once."""
    cluster = Cluster(args.containers, args.namespaces, args.days, args.step, end)
    backfill(cluster, data_dir, args.info_step, args.workers)


def backfill(cluster: Cluster, data_dir: Path, info_step: int, workers: int) -> None:
    """Writes each of the cluster's windows as OpenMetrics, backfills it with promtool, deletes it."""
    t0 = time.perf_counter()
    offsets = cluster.counter_offsets()
    print(f"  counter offsets: {time.perf_counter() - t0:.1f} s", flush=True)
    om_dir = data_dir.parent / "om"
    om_dir.mkdir(exist_ok=True)
    data_dir.mkdir(exist_ok=True)

    def work(k: int) -> None:
        path = om_dir / f"{cluster.windows[k]}.om"
        path.write_text(cluster.text(k, offsets, info_step))
        cmd = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(path), str(data_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"promtool failed on {path}: {done.stderr[-1000:]}")
        path.unlink()

    run_forked(list(range(len(cluster.windows))), work, workers)


def lower_bound(args: argparse.Namespace, end: int) -> float:
    """Seconds numpy needs for the same statistics over in-memory (containers, samples) arrays."""
    cluster = Cluster(args.containers, args.namespaces, args.days, args.step, end)
    cores = np.hstack([cluster.window(k)[0] for k in range(len(cluster.windows))])
    mem = np.hstack([cluster.window(k)[1] for k in range(len(cluster.windows))])
    t0 = time.perf_counter()
    for arr in (cores, mem):
        np.quantile(arr, [0.5, 0.9, 0.95, 0.99], axis=1)
        arr.max(axis=1)
        arr.mean(axis=1)
    return time.perf_counter() - t0


def _own_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--containers", type=int, default=10_000)
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--step", type=int, default=60, help="sample interval, seconds")
    ap.add_argument("--info-step", type=int, default=600, help="kube-state-metrics sample interval, seconds")
    ap.add_argument("--workers", type=int, default=2, help="parallel writers/promtool runs (xargs -P)")
    ap.add_argument("--concurrency", type=int, default=3, help="parallel namespace queries in collect()")
    ap.add_argument("--compress", action="store_true", help="ask Prometheus for gzip answers (PromClient)")
    ap.add_argument("--generate-into", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--end", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.generate_into is not None:
        generate(args, args.generate_into, args.end)
        return

    end = int(time.time()) // 60 * 60
    samples = args.containers * args.days * 86400 // args.step
    print(f"containers={args.containers} namespaces={args.namespaces} days={args.days} step={args.step}s")
    print(f"cAdvisor samples: {2 * samples:,} (CPU counter + working set)")
    with tempfile.TemporaryDirectory(prefix="bench-prom-") as tmp:
        data_dir = Path(tmp) / "data"
        t0 = time.perf_counter()
        child = [sys.executable, __file__, *sys.argv[1:], "--generate-into", str(data_dir), "--end", str(end)]
        subprocess.run(child, check=True)
        gen_s = time.perf_counter() - t0
        print(f"generate + write + backfill: {gen_s:.1f} s ({2 * samples / gen_s:,.0f} samples/s)")
        cluster = Cluster(args.containers, args.namespaces, args.days, args.step, end)
        window_end = datetime.fromtimestamp(cluster.end - args.step, UTC)
        window_start = window_end - timedelta(days=args.days) + timedelta(seconds=args.step)
        with running_prometheus(data_dir, retention_days=args.days + 2, ready_timeout=300) as server:
            prom_rss_idle = rss_bytes(server.pid)
            transport = CountingTransport()
            with PromClient(server.url, timeout=600.0, transport=transport, compress=args.compress) as client:
                source = PrometheusSource(client, concurrency=args.concurrency)
                prom_cpu0, own_cpu0 = cpu_seconds(server.pid), _own_cpu()
                t0 = time.perf_counter()
                snap = source.collect(window_start, window_end)
                collect_s = time.perf_counter() - t0
                prom_cpu, own_cpu = cpu_seconds(server.pid) - prom_cpu0, _own_cpu() - own_cpu0
            requests = transport.count
            prom_rss = rss_bytes(server.pid)
        own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"collect(): {collect_s:.1f} s, {requests} Prometheus queries, {len(snap.containers)} usages")
    print(
        f"CPU time during collect(): Prometheus {prom_cpu:.1f} s, this process {own_cpu:.1f} s "
        f"(load-independent; wall time depends on what else runs, load average {os.getloadavg()[0]:.1f})"
    )
    print(f"peak RSS of this process: {own_peak / 2**20:.0f} MiB")
    print(f"Prometheus RSS: {prom_rss_idle / 2**20:.0f} MiB idle, {prom_rss / 2**20:.0f} MiB after collect()")
    numpy_s = lower_bound(args, end)
    print(f"numpy lower bound (quantiles+max+mean of CPU and memory, in memory): {numpy_s:.2f} s")
    print(f"ratio collect()/numpy: {collect_s / numpy_s:.1f}x")
    print(
        f"targets: collect < 60 s: {'met' if collect_s < 60 else 'MISSED'}; "
        f"RSS < 2 GB: {'met' if own_peak < 2e9 else 'MISSED'}"
    )
    os.sync()


if __name__ == "__main__":
    main()
