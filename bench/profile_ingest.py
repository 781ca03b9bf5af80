"""Profile harness: PrometheusSource.dataset() and aggregate() on a fake client (no server, no HTTP/JSON).

Feeds the real PrometheusSource a client answering its real queries with synthetic, already-parsed answers
for N containers (one per pod, Deployments of 2 replicas) x 7 days at 5-minute steps (with gaps, late
starts and restarts), and prints the CPU time (time.process_time) of dataset() (and how much of it the
fake spent making answers) and of the aggregation separately, with peak RSS; --tracemalloc adds each
phase's peak traced allocation (slower), --profile prints the top cProfile entries. HTTP and JSON parsing
are left out: bench_prometheus.py measures the whole path against a real Prometheus.

    nice -n 10 .venv/bin/python bench/profile_ingest.py --containers 10000
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recommender.input.prometheus import PrometheusSource  # noqa: E402
from recommender.input.prometheus.client import InstantResult, Labels, RangeResult  # noqa: E402
from recommender.input.prometheus.queries import MARK  # noqa: E402

MI = 2**20
T = TypeVar("T")
END = datetime(2026, 12, 1, tzinfo=UTC)


class FakeClient:
    """Answers PrometheusSource's queries for a synthetic cluster, namespace by namespace on demand."""

    def __init__(self, containers: int, namespaces: int, seed: int = 1) -> None:
        self.seed = seed
        self.cpu_s = 0.0  # CPU time spent making answers (not the source's): taken off dataset()'s figure
        self.ns_names = [f"ns-{k:02d}" for k in range(namespaces)]
        self.members: dict[str, list[int]] = {ns: [] for ns in self.ns_names}
        for i in range(containers):
            self.members[self.ns_names[(i // 2) % namespaces]].append(i)

    def _timed(self, make: Callable[[], T]) -> T:
        t0 = time.process_time()
        try:
            return make()
        finally:
            self.cpu_s += time.process_time() - t0

    def series(self, matches: list[str], start: object, end: object) -> list[Labels]:
        return self._timed(lambda: self._series(matches, start, end))

    def query(self, promql: str, at: object) -> InstantResult:
        return self._timed(lambda: self._query(promql, at))

    def query_range_split(self, promql: str, lo: float, hi: float, step: float) -> RangeResult:
        return self._timed(lambda: self._query_range_split(promql, lo, hi, step))

    @staticmethod
    def _pod(i: int) -> tuple[str, str]:
        rs = f"app-{i // 2:05d}-6d8f9c7b5"
        return rs, f"{rs}-{'ab'[i % 2]}{i:05d}"

    @staticmethod
    def _ns(promql: str) -> str:
        return promql.split('namespace="', 1)[1].split('"', 1)[0]

    def label_values(self, label: str, match: str, start: object, end: object) -> list[str]:
        return list(self.ns_names)

    def _series(self, matches: list[str], start: object, end: object) -> list[Labels]:
        ns = self._ns(matches[0])
        out: list[Labels] = []
        for i in self.members[ns]:
            rs, pod = self._pod(i)
            common = {"namespace": ns, "pod": pod}
            out.append({"__name__": "kube_pod_owner", **common, "owner_kind": "ReplicaSet",
                        "owner_name": rs, "owner_is_controller": "true"})  # fmt: skip
            out.append({"__name__": "kube_pod_labels", **common, "label_app": rs[:9]})
            if i % 2 == 0:
                out.append({"__name__": "kube_replicaset_owner", "namespace": ns, "replicaset": rs,
                            "owner_kind": "Deployment", "owner_name": rs[:9],
                            "owner_is_controller": "true"})  # fmt: skip
        return out

    def _query(self, promql: str, at: object) -> InstantResult:
        if "kube_pod_container_resource" not in promql:
            return []  # autoscalers, nodes
        ns = self._ns(promql)
        out: InstantResult = []
        for i in self.members[ns]:
            _, pod = self._pod(i)
            key = {"namespace": ns, "pod": pod, "container": "main"}
            out.append(({**key, MARK: "count"}, 10080.0))
            for kind in ("requests", "limits"):
                out.append(({**key, MARK: kind, "resource": "cpu", "node": "n1"}, 0.5))
                out.append(({**key, MARK: kind, "resource": "memory", "node": "n1"}, 512.0 * MI))
        return out

    def _query_range_split(self, promql: str, lo: float, hi: float, step: float) -> RangeResult:
        if "namespace=" not in promql:
            return []  # GPUs
        ns = self._ns(promql)
        idx = self.members[ns]
        ts = np.arange(lo, hi + step / 2, step, dtype=np.float64)
        rng = np.random.default_rng([self.seed, self.ns_names.index(ns), int("rate(" in promql)])
        if promql.startswith("rate("):
            values = np.abs(
                rng.uniform(0.01, 2.0, (len(idx), 1)) * (1 + 0.05 * rng.standard_normal((len(idx), ts.size)))
            )
        else:
            values = rng.uniform(64, 4096, (len(idx), 1)) * MI + rng.normal(0, 4 * MI, (len(idx), ts.size))
        values[:, 7::97] = np.nan  # gaps
        out: RangeResult = []
        for row, i in enumerate(idx):
            _, pod = self._pod(i)
            labels = {"namespace": ns, "pod": pod, "container": "main"}
            # each series its own arrays, as parse_matrix gives them; some pods start late, some restart
            cut = ts.size // 3 if i % 7 == 3 else 0
            out.append((labels, ts[cut:].copy(), values[row, cut:].copy()))
            if i % 11 == 5:
                out.append(({**labels, "id": "restarted"}, ts[-100:].copy(), 1.01 * values[row, -100:]))
        return out


class _InlineExecutor:
    """A ThreadPoolExecutor stand-in running each task at submit, so cProfile sees the namespace work."""

    def __init__(self, max_workers: int) -> None:
        pass

    def __enter__(self) -> _InlineExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, fn: object, *args: object) -> Future[object]:
        fut: Future[object] = Future()
        try:
            fut.set_result(fn(*args))  # type: ignore[operator]
        except Exception as exc:
            fut.set_exception(exc)
        return fut


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--containers", type=int, default=10_000)
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--tracemalloc", action="store_true", help="also trace each phase's peak allocation")
    ap.add_argument("--profile", action="store_true", help="print the top cProfile entries (cumulative)")
    args = ap.parse_args()

    fake = FakeClient(args.containers, args.namespaces)
    src = PrometheusSource(fake, concurrency=1)  # type: ignore[arg-type]
    start = END - timedelta(days=args.days)
    prof = cProfile.Profile() if args.profile else None
    if prof:
        import recommender.input.prometheus.source as source_module

        setattr(source_module, "ThreadPoolExecutor", _InlineExecutor)  # noqa: B010 - a module attribute
    if args.tracemalloc:
        tracemalloc.start()
    gc.collect()
    base = _rss_mib()

    def phase(name: str, fn: object) -> object:
        if args.tracemalloc:
            tracemalloc.reset_peak()
        t0 = time.process_time()
        if prof:
            prof.enable()
        out = fn()  # type: ignore[operator]
        if prof:
            prof.disable()
        cpu = time.process_time() - t0
        traced = (
            f", traced peak {tracemalloc.get_traced_memory()[1] / MI:.0f} MiB" if args.tracemalloc else ""
        )
        print(f"{name:10s} cpu {cpu:6.2f} s, peak RSS so far {_rss_mib():.0f} MiB{traced}")
        return out

    raw = phase("dataset", lambda: src.dataset(start, END))
    print(f"  of which the fake client making answers: {fake.cpu_s:.2f} s (not the source's work)")
    snap = phase("aggregate", lambda: src.usage(raw))  # type: ignore[arg-type]
    print(f"{len(snap.containers)} container usages (RSS before: {base:.0f} MiB)")  # type: ignore[attr-defined]
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
