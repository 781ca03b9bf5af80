"""Benchmark: `podsizer recommend`'s read (PrometheusSource.collect()) over N containers x 7 days x 60 s in a
real, backfilled Prometheus, next to the previous read path in the same run.

For each N (--containers 200,2000: a list) one synthetic cluster is backfilled and served, then each read
path runs in a process of its own (bench/collect_once.py, so each peak RSS is its own): this tree's (one
reading: the window streamed chunk by chunk into the usage states, read the cheapest way the server offers:
remote read's XOR chunks on Prometheus) first, with --query-too this tree by range queries, then the tree at
--baseline (the previous read path: range queries, every sample of the window in memory, aggregated at
once), extracted with git archive.
Printed side by side: wall time, own CPU, peak RSS and RSS per container, Prometheus CPU (total and per
container), queries, usages, and how far the two paths' p50/p95/max of CPU and memory are apart.

    nice -n 10 .venv/bin/python bench/bench_prometheus.py --containers 200,2000

The CPU-seconds figures are the ones to compare (wall time depends on what else runs); --compress asks
for gzip answers, which more than doubles Prometheus' figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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


def generate(args: argparse.Namespace, data_dir: Path, end: int) -> None:
    """Child process: writes each 2 h window, backfills it with promtool, deletes it; `workers` at once."""
    cluster = Cluster(int(args.containers), args.namespaces, args.days, args.step, end)
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


BASELINE = "6964a75"
"""The last commit with the previous read path (before the one reading of the usage model)."""


def baseline_tree(ref: str, into: Path) -> Path:
    """The project's recommender and podsizer packages at `ref`, extracted under `into`."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "recommender", "podsizer"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def measure(
    tree: Path,
    server_url: str,
    pid: int,
    window: tuple[float, float],
    args: argparse.Namespace,
    read: str | None = None,
) -> dict[str, object]:
    """One collect() by the tree's code in a child process: its figures, with Prometheus' CPU meanwhile;
    `read`: PODSIZER_PROMETHEUS_READ for this tree (None: the tree's default)."""
    out = Path(tempfile.mkstemp(prefix="collect-", suffix=".json")[1])
    child = [
        sys.executable,
        str(ROOT / "bench" / "collect_once.py"),
        str(tree),
        server_url,
        str(window[0]),
        str(window[1]),
        str(args.concurrency),
        "1" if args.compress else "0",
        str(out),
        *([read] if read else []),
    ]
    prom0 = cpu_seconds(pid)
    subprocess.run(child, check=True, cwd=tempfile.gettempdir())  # no tree on the path but the one named
    figures: dict[str, object] = json.loads(out.read_text())
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        name = (
            f"{'new' if tree == ROOT else 'old'}-{read or 'default'}-{int(window[1] - window[0])}-{out.name}"
        )
        out.rename(args.keep / name)
    else:
        out.unlink()
    figures["prom_cpu_s"] = cpu_seconds(pid) - prom0
    if not str(figures["module"]).startswith(str(tree.resolve())):
        raise SystemExit(f"the child read {figures['module']}, not the tree {tree}")
    return figures


FIGURES = ("CPU p50", "CPU p95", "CPU max", "memory p50", "memory p95", "memory max")


def apart(new: dict[str, object], old: dict[str, object]) -> list[tuple[str, float, float]]:
    """Per figure (FIGURES) over the containers both paths report: the largest relative difference and
    the share of containers within 2 % (a histogram bucket)."""
    a, b = cast(dict[str, list[float]], new["usages"]), cast(dict[str, list[float]], old["usages"])
    common = sorted(set(a) & set(b))
    out = []
    for i, name in enumerate(FIGURES):
        diffs = [abs(a[k][i] - b[k][i]) / abs(b[k][i]) for k in common if b[k][i]]
        within = sum(d <= 0.02 for d in diffs) / len(diffs) if diffs else 1.0
        out.append((name, max(diffs, default=0.0), within))
    return out


def report(n: int, runs: list[tuple[str, dict[str, object]]], ref: str) -> None:
    """The runs side by side (the first: this tree's default) with each figure's ratio to the last (the
    previous read path), and how far the first's p50/p95/max are from the last's."""

    def row(what: str, key: str, scale: float = 1.0, fmt: str = "{:,.1f}") -> None:
        values = [float(cast(float, f[key])) * scale for _, f in runs]
        base = values[-1]
        ratio = f"{values[0] / base:.2f}x" if base else "-"
        cells = "".join(f" {fmt.format(v):>16}" for v in values)
        print(f"  {what:<28}{cells} {ratio:>9}")

    for _, f in runs:
        f["usages_n"] = len(cast(dict[str, object], f["usages"]))
        f["rss_per_container"] = float(cast(float, f["peak_rss"])) / n
        f["prom_ms_per_container"] = float(cast(float, f["prom_cpu_s"])) * 1000 / n
    heads = "".join(f" {name:>16}" for name, _ in runs)
    print(f"N={n:,} containers   {heads} {'first/last':>9}   (previous: {ref})")
    row("wall s", "wall_s")
    row("own CPU s", "own_cpu_s")
    row("peak RSS MiB", "peak_rss", 1 / MI, "{:,.0f}")
    row("peak RSS KiB per container", "rss_per_container", 1 / 1024, "{:,.1f}")
    row("Prometheus CPU s", "prom_cpu_s")
    row("Prometheus CPU ms/container", "prom_ms_per_container", 1.0, "{:,.2f}")
    row("queries", "queries", 1.0, "{:,.0f}")
    row("usages", "usages_n", 1.0, "{:,.0f}")
    print(f"  {runs[0][0]} vs {runs[-1][0]}, per container: largest difference, share within 2 %")
    for name, worst, within in apart(runs[0][1], runs[-1][1]):
        print(f"    {name:<12} {100 * worst:8.2f} %  {100 * within:6.1f} %")
    print("  (a p50 between two replicas of different levels may fall on either side: the rank ties)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--containers", default="200,2000", help="comma-separated Ns, one cluster each")
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--step", type=int, default=60, help="sample interval, seconds")
    ap.add_argument("--info-step", type=int, default=600, help="kube-state-metrics sample interval, seconds")
    ap.add_argument("--workers", type=int, default=2, help="parallel writers/promtool runs (xargs -P)")
    ap.add_argument("--concurrency", type=int, default=3, help="parallel namespace queries in collect()")
    ap.add_argument("--compress", action="store_true", help="ask Prometheus for gzip answers (PromClient)")
    ap.add_argument("--baseline", default=BASELINE, help="git revision of the previous read path")
    ap.add_argument("--keep", type=Path, help="keep each run's figures and per-container usages (JSON) here")
    ap.add_argument(
        "--query-too",
        action="store_true",
        help="also this tree by range queries (PODSIZER_PROMETHEUS_READ=query)",
    )
    ap.add_argument("--generate-into", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--end", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.generate_into is not None:
        generate(args, args.generate_into, args.end)
        return
    sizes = [int(n) for n in str(args.containers).split(",")]
    if not sizes or min(sizes) < 2:
        raise SystemExit(
            f"--containers: a comma-separated list of whole numbers >= 2, got {args.containers!r}"
        )
    with tempfile.TemporaryDirectory(prefix="bench-prom-") as tmp:
        old_tree = baseline_tree(args.baseline, Path(tmp) / "baseline")
        for n in sizes:
            run_one(n, args, Path(tmp) / f"n{n}", old_tree)
    os.sync()


def run_one(n: int, args: argparse.Namespace, tmp: Path, old_tree: Path) -> None:
    """One cluster of n containers backfilled and served; both read paths measured against it."""
    end = int(time.time()) // 60 * 60
    samples = n * args.days * 86400 // args.step
    print(f"containers={n} namespaces={args.namespaces} days={args.days} step={args.step}s", flush=True)
    print(f"cAdvisor samples: {2 * samples:,} (CPU counter + working set)", flush=True)
    data_dir = tmp / "data"
    tmp.mkdir(parents=True)
    t0 = time.perf_counter()
    child = [
        sys.executable,
        __file__,
        f"--containers={n}",
        f"--namespaces={args.namespaces}",
        f"--days={args.days}",
        f"--step={args.step}",
        f"--info-step={args.info_step}",
        f"--workers={args.workers}",
        "--generate-into",
        str(data_dir),
        "--end",
        str(end),
    ]
    subprocess.run(child, check=True)
    gen_s = time.perf_counter() - t0
    print(f"generate + write + backfill: {gen_s:.1f} s ({2 * samples / gen_s:,.0f} samples/s)", flush=True)
    cluster = Cluster(n, args.namespaces, args.days, args.step, end)
    window_end = cluster.end - args.step
    window = (window_end - args.days * 86400 + args.step, float(window_end))
    with running_prometheus(data_dir, retention_days=args.days + 2, ready_timeout=300) as server:
        idle = rss_bytes(server.pid)
        runs = [("this tree", measure(ROOT, server.url, server.pid, window, args))]  # first: the colder cache
        if args.query_too:
            runs.append(("by queries", measure(ROOT, server.url, server.pid, window, args, "query")))
        runs.append(("previous", measure(old_tree, server.url, server.pid, window, args)))
        print(f"Prometheus RSS: {idle / MI:.0f} MiB idle, {rss_bytes(server.pid) / MI:.0f} MiB after all")
    report(n, runs, args.baseline)
    print(f"load average {os.getloadavg()[0]:.1f} (wall time depends on what else runs)", flush=True)


if __name__ == "__main__":
    main()
