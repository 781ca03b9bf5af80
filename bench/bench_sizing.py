"""Prints the time to size N workloads in one run (the snapshot indexed once) next to the previous path
(each workload scanning the whole snapshot), and the per-workload cost, so linearity shows as a flat column.

Goal: 10,000 workloads sized in under 2 s on 2 cores. The CPU column (this process' CPU time)
is the figure to compare when other work shares the machine.

Run: .venv/bin/python -m bench.bench_sizing [N ...]      (default: 1000 2000 4000 10000)
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta

import numpy as np

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB
from podsizer.sizing_policy import SizingPolicy
from recommender.model import (
    Autoscaler,
    ContainerUsage,
    Quantiles,
    TimeSeries,
    UsageSnapshot,
    WorkloadDemand,
    WorkloadUsage,
)
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RunIndex, recommend, recommend_workload, run_ceilings

END = datetime(2026, 12, 1, tzinfo=UTC)
START = END - timedelta(days=7)
PREVIOUS_UP_TO = 4000
"""The previous path is quadratic; above this N it would take minutes and is not run."""


def _container(ref: WorkloadRef, name: str, rng: np.random.Generator) -> ContainerUsage:
    cpu, mem = float(rng.lognormal(-1.5, 1.0)), float(rng.lognormal(5.5, 1.0)) * MIB
    q_cpu = Quantiles(cpu, cpu * 1.2, cpu * 1.3, cpu * 1.5, cpu * 1.8, cpu, cpu * 1.7, cpu * 0.2)
    q_mem = Quantiles(mem, mem * 1.02, mem * 1.04, mem * 1.05, mem * 1.06, mem, mem * 1.055, mem * 0.9)
    return ContainerUsage(ref, name, q_cpu, q_mem, cpu, mem, 10080, START, END, pods=int(rng.integers(1, 6)))


def snapshot(n: int, seed: int = 7) -> UsageSnapshot:
    """n workloads in 50 namespaces, two containers each; one in ten under an HPA with a week of demand."""
    rng = np.random.default_rng(seed)
    hours = np.arange(24 * 7)
    containers: list[ContainerUsage] = []
    autoscalers: list[Autoscaler] = []
    demand: list[WorkloadDemand] = []
    for i in range(n):
        ref = WorkloadRef(f"ns-{i % 50}", "Deployment", f"app-{i}")
        containers += [_container(ref, "app", rng), _container(ref, "sidecar", rng)]
        if i % 10 == 0:
            autoscalers.append(Autoscaler(ref, "HorizontalPodAutoscaler", ref.name, 2, 10, {"cpu": 70}))
            cpu = TimeSeries(START, 3600.0, 1.0 + 0.3 * np.sin(2 * np.pi * hours / 24))
            demand.append(WorkloadDemand(ref, cpu, TimeSeries(START, 3600.0, np.full(hours.size, 2e9))))
    return UsageSnapshot(START, END, tuple(containers), autoscalers=tuple(autoscalers), demand=tuple(demand))


def _previous(snap: UsageSnapshot, policy: SizingPolicy, prices: PriceTable) -> int:
    """The previous path: each workload filtered the whole snapshot (the scans engine.py made before)."""
    ceilings = run_ceilings(snap, policy)
    sized = 0
    for workload in snap.workloads():
        usage = WorkloadUsage(
            tuple(c for c in snap.containers if c.workload == workload),
            tuple(g for g in snap.gpus if g.workload == workload),
            next((a for a in snap.autoscalers if a.workload == workload), None),
            next((d for d in snap.demand if d.workload == workload), None),
        )
        index = RunIndex({workload: usage}, {n.name: n for n in snap.nodes})
        recommend_workload(workload, snap, policy, prices, END, (), ceilings, index)
        sized += 1
    return sized


def main(sizes: list[int]) -> None:
    policy, prices = SizingPolicy(), PriceTable.load(None)
    print(
        f"{'workloads':>10} {'indexed s':>10} {'CPU s':>7} {'ms/workload':>12} "
        f"{'previous s':>11} {'ratio':>7}",
        flush=True,
    )
    for n in sizes:
        snap = snapshot(n)
        t0, c0 = time.perf_counter(), time.process_time()
        run = recommend(snap, policy, prices, END)
        indexed, cpu = time.perf_counter() - t0, time.process_time() - c0
        if len(run.recommendations) != n:
            raise SystemExit(f"sized {len(run.recommendations)} of {n} workloads: {run.skipped[:3]}")
        previous = ""
        ratio = ""
        if n <= PREVIOUS_UP_TO:
            t0 = time.perf_counter()
            _previous(snap, policy, prices)
            took = time.perf_counter() - t0
            previous, ratio = f"{took:.2f}", f"{took / indexed:.1f}x"
        print(
            f"{n:>10} {indexed:>10.2f} {cpu:>7.2f} {indexed / n * 1000:>12.3f} {previous:>11} {ratio:>7}",
            flush=True,
        )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 2000, 4000, 10000])
