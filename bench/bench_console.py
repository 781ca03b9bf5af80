"""Prints the server time to render the console's overview (first page, a filtered and sorted page, the
JSON API) and a workload page at 1,000 and 10,000 synthetic workloads (goal: first page at 10,000 < 1 s).

Run: .venv/bin/python -m bench.bench_console [runs]
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

import numpy as np
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.data import (
    Chart,
    ContainerRow,
    Line,
    Meta,
    PodDetail,
    PodRow,
    Reference,
    StaticConsoleData,
    WorkloadDetail,
    WorkloadRow,
)
from podsizer.api.identity import WorkloadRef

GIB = 1024.0**3
NOW = datetime(2026, 12, 2, tzinfo=UTC)
KINDS = ("Deployment", "StatefulSet", "DaemonSet", "DeploymentConfig")


def _container(name: str, i: int) -> ContainerRow:
    cpu = 0.25 + (i % 17) / 8
    mem = (0.5 + (i % 13) / 4) * GIB
    return ContainerRow(
        name=name,
        current_requests={"cpu": cpu, "memory": mem},
        recommended_requests={"cpu": cpu * 0.6, "memory": mem * 0.7},
        recommended_limits={"memory": mem * 0.9},
        confidence=0.3 + (i % 7) / 10,
        low_confidence=i % 11 == 0,
        reason=f"p99 {cpu * 0.5:.3f} cores + 15% margin; memory p99 + 15% margin (workload {i})",
        current_limits={"memory": mem},
        planned_requests={"cpu": cpu * 0.6, "memory": mem * 0.7},
        planned_limits={"memory": mem * 0.9},
    )


def synthetic(n: int) -> StaticConsoleData:
    """n workloads over 50 namespaces and 3 clusters (so the cluster column is drawn), two containers and
    three pods each; one workload with history."""
    rows = tuple(
        WorkloadRow(
            workload=WorkloadRef(f"ns-{i % 50:02d}", KINDS[i % 4], f"app-{i:05d}", f"cluster-{i % 3}"),
            mode=("off", "dry-run", "auto")[i % 3],
            mode_source="default",
            sizing_mode="autopilot" if i % 5 == 0 else "static",
            reason="static: no horizontal autoscaler",
            pods=tuple(f"app-{i:05d}-{j}" for j in range(3)),
            containers=(_container("app", i), _container("sidecar", i + 1)),
            replicas=3,
            replicas_basis="pods present at the window's end",
        )
        for i in range(n)
    )
    ts = (NOW - timedelta(days=7)).timestamp() + 300.0 * np.arange(2016, dtype=np.float64)
    cpu = 0.5 + 0.2 * np.sin(np.arange(2016) / 40.0)
    target = rows[0].workload
    charts = (Chart("cpu", "CPU", "cores", (Line("app", ts, cpu),), (Reference("app request", 0.25),)),)
    details = tuple(
        PodDetail(PodRow(target.namespace, p, "node-1", target, False), charts) for p in rows[0].pods
    )
    return StaticConsoleData(
        info=Meta("synthetic", NOW, NOW - timedelta(days=7), NOW),
        workload_rows=rows,
        details=details,
        workload_details=(WorkloadDetail(target, charts),),
    )


def _time(client: TestClient, path: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(path)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (path, response.status_code)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 3
    cases = (
        ("overview, first page", "/"),
        (
            "overview, sorted by savings, filtered",
            "/?sort=savings&order=desc&namespace=ns-07&has_savings=true",
        ),
        ("overview, page 20", "/?page=20"),
        ("overview, one cluster, sorted by cluster", "/?cluster=cluster-1&sort=cluster"),
        ("GET /api/overview (first page)", "/api/overview"),
        ("workload page", "/workloads/ns-00/Deployment/app-00000?cluster=cluster-0"),
    )
    print(f"{'case':<40} {'1,000 (s)':>10} {'10,000 (s)':>11}")
    results: dict[str, list[float]] = {label: [] for label, _ in cases}
    for n in (1_000, 10_000):
        with TestClient(create_console_app(synthetic(n))) as client:
            client.get("/")  # templates compiled once per app
            for label, path in cases:
                results[label].append(_time(client, path, runs))
    for label, (small, large) in results.items():
        print(f"{label:<40} {small:>10.3f} {large:>11.3f}")
    first = results["overview, first page"][1]
    print(f"goal: first page at 10,000 under 1 s: {'met' if first < 1.0 else 'NOT met'} ({first:.3f} s)")
    return 0 if first < 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
