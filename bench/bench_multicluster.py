"""Benchmark: one `podsizer recommend` over two clusters of N containers each in one VictoriaMetrics.

Both clusters ("east", "west") are bench_prometheus.py's synthetic cluster (Deployments of 2 replicas,
one container each; different seeds, so different usage), every series labelled cluster=<name> as a
multi-cluster store holds them, imported through /api/v1/import/prometheus. Then `podsizer recommend -o json`
runs with --cluster-label cluster, once with --clusters all and once per cluster, and prints for each the
wall time, the queries the server answered (its own request counters) and the workloads per cluster.
With --prometheus the same text is backfilled with promtool into a real Prometheus and measured alike.

    nice -n 10 .venv/bin/python bench/bench_multicluster.py --containers 1000 --days 7 [--prometheus]

7 days at 60 s is 40 M cAdvisor samples for the two clusters: about 2.5 minutes to generate and import on
2 cores (~265 k samples/s, the Python text generation being most of it); promtool backfill is slower.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_prometheus import Cluster  # noqa: E402
from podsizer.api.resource import recommendation_from_resource  # noqa: E402
from podsizer.settings import run_reporting_errors  # noqa: E402
from recommender.commands import add_recommend_arguments, run_recommend  # noqa: E402
from recommender.wiring import Wiring  # noqa: E402
from tests.integration.prometheus.server import running_prometheus  # noqa: E402
from tests.integration.victoriametrics.server import flush, running_victoria_metrics  # noqa: E402
from tests.support.openmetrics import run_forked  # noqa: E402

CLUSTERS = {"east": 1, "west": 2}
"""Cluster name -> the synthetic cluster's seed."""
LABEL = "cluster"


def labelled(text: str, cluster: str) -> str:
    """Cluster's OpenMetrics text with LABEL=cluster on every sample (bench_prometheus writes no braces
    other than label sets)."""
    return text.replace("{", f'{{{LABEL}="{cluster}",')


def clusters(args: argparse.Namespace, end: int) -> dict[str, Cluster]:
    return {
        name: Cluster(args.containers, args.namespaces, args.days, args.step, end, seed=seed)
        for name, seed in CLUSTERS.items()
    }


def jobs(cs: dict[str, Cluster]) -> list[tuple[str, int]]:
    return [(name, k) for name, c in cs.items() for k in range(len(c.windows))]


def load_victoria_metrics(args: argparse.Namespace, url: str, end: int) -> None:
    """Generates every (cluster, 2 h window) text and POSTs it, `workers` forked processes at once."""
    cs = clusters(args, end)
    offsets = {name: c.counter_offsets() for name, c in cs.items()}
    todo = jobs(cs)

    def work(i: int) -> None:
        name, k = todo[i]
        body = labelled(cs[name].text(k, offsets[name], args.info_step), name)
        r = httpx.post(f"{url}/api/v1/import/prometheus", content=body.encode(), timeout=600.0)
        if r.status_code != 204:
            raise SystemExit(f"import failed: {r.status_code} {r.text[:500]}")

    run_forked(list(range(len(todo))), work, args.workers)
    # per cluster: CPU counter + working set per container, pod owner + CPU request per pod, RS owner per 2
    start = min(c.start for c in cs.values())
    flush(url, len(cs) * args.containers * 9 // 2, start, timeout=600.0)


def backfill_prometheus(args: argparse.Namespace, data_dir: Path, end: int) -> None:
    """Writes every (cluster, window) text and backfills it with promtool, `workers` at once."""
    cs = clusters(args, end)
    offsets = {name: c.counter_offsets() for name, c in cs.items()}
    todo = jobs(cs)
    om_dir = data_dir.parent / "om"
    om_dir.mkdir(exist_ok=True)
    data_dir.mkdir(exist_ok=True)

    def work(i: int) -> None:
        name, k = todo[i]
        path = om_dir / f"{name}-{k}.om"
        path.write_text(labelled(cs[name].text(k, offsets[name], args.info_step), name))
        cmd = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(path), str(data_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"promtool failed on {path}: {done.stderr[-1000:]}")
        path.unlink()

    run_forked(list(range(len(todo))), work, args.workers)


def recommend(url: str, end: int, days: int, clusters_arg: str, store: Path) -> tuple[float, Counter[str]]:
    """Wall seconds of one `podsizer recommend -o json` and its workloads per cluster."""
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    argv = ["--source", "prometheus", "--prometheus-url", url, "--no-progress", "-o", "json"]
    argv += ["--cluster-label", LABEL, "--clusters", clusters_arg, "--window-days", str(days)]
    args = parser.parse_args([*argv, "--store-file", str(store)])
    wiring = Wiring(clock=lambda: datetime.fromtimestamp(end, UTC))
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        rc = run_reporting_errors("recommend", lambda a: run_recommend(a, wiring), args)
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"recommend --clusters {clusters_arg} exited {rc}")
    items = json.loads(out.getvalue())["items"]
    return wall, Counter(recommendation_from_resource(i).target.cluster or "(none)" for i in items)


def vm_queries(url: str) -> int:
    return _counter_sum(
        url, "vm_http_requests_total", ("/api/v1/query", "/api/v1/query_range", "/api/v1/label")
    )


def prom_queries(url: str) -> int:
    return _counter_sum(
        url, "prometheus_http_requests_total", ("/api/v1/query", "/api/v1/query_range", "/api/v1/label")
    )


def _counter_sum(url: str, metric: str, paths: tuple[str, ...]) -> int:
    """The server's own count of query API requests (from its /metrics, which VictoriaMetrics refreshes
    once a second: wait that long first)."""
    time.sleep(1.5)
    total = 0.0
    for line in httpx.get(f"{url}/metrics", timeout=30.0).text.splitlines():
        if line.startswith(metric + "{") and any(f'"{p}' in line for p in paths):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def measure(name: str, url: str, count: Callable[[str], int], end: int, days: int, store: Path) -> list[str]:
    rows = []
    for arg in ("all", *CLUSTERS):
        before = count(url)
        wall, per = recommend(url, end, days, arg, store)
        queries = count(url) - before
        workloads = ", ".join(f"{c}={n}" for c, n in sorted(per.items()))
        rows.append(f"{name:<16} {arg:<6} {wall:>8.1f} s {queries:>8} queries   workloads: {workloads}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--containers", type=int, default=1000, help="containers per cluster")
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--step", type=int, default=60, help="sample interval, seconds")
    ap.add_argument("--info-step", type=int, default=600, help="kube-state-metrics sample interval, seconds")
    ap.add_argument("--workers", type=int, default=2, help="parallel generate+import processes")
    ap.add_argument(
        "--prometheus", action="store_true", help="also backfill a real Prometheus and measure it"
    )
    args = ap.parse_args()

    now = int(time.time()) // 60 * 60
    end = Cluster(1, 1, args.days, args.step, now).end  # block-aligned, as the generator cuts windows
    samples = 2 * len(CLUSTERS) * args.containers * args.days * 86400 // args.step
    print(
        f"clusters={len(CLUSTERS)} containers/cluster={args.containers} namespaces={args.namespaces} "
        f"days={args.days} step={args.step}s cAdvisor samples={samples:,} cores={os.cpu_count()}"
    )
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-mc-") as tmp:
        store = Path(tmp) / "absent.json"
        with running_victoria_metrics(Path(tmp) / "vm", ready_timeout=120) as vm:
            t0 = time.perf_counter()
            load_victoria_metrics(args, vm.url, end)
            load_s = time.perf_counter() - t0
            print(
                f"VictoriaMetrics generate+import+flush: {load_s:.1f} s ({samples / load_s:,.0f} samples/s)"
            )
            rows += measure("VictoriaMetrics", vm.url, vm_queries, end, args.days, store)
        if args.prometheus:
            t0 = time.perf_counter()
            backfill_prometheus(args, Path(tmp) / "prom", end)
            print(f"Prometheus generate+backfill: {time.perf_counter() - t0:.1f} s")
            with running_prometheus(Path(tmp) / "prom", retention_days=args.days + 2, ready_timeout=300) as p:
                rows += measure("Prometheus", p.url, prom_queries, end, args.days, store)
    print(f"{'backend':<16} {'--clusters':<6} {'wall':>10} {'queries':>16}")
    print("\n".join(rows))
    load = os.getloadavg()[0]
    print(f"(load average {load:.1f} on {os.cpu_count()} cores; wall time depends on what else runs)")


if __name__ == "__main__":
    main()
