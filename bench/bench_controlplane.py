"""Prints how long the test control plane takes to start and stop, and its processes' memory once ready.

Run: .venv/bin/python -m bench.bench_controlplane [runs]   (needs scripts/build_tools.py first)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from tests.controlplane.binaries import find_binaries
from tests.controlplane.cluster import ControlPlane


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 3
    binaries, reason = find_binaries()
    if binaries is None:
        print(reason, file=sys.stderr)
        return 2
    starts, stops = [], []
    rss: dict[str, float] = {}
    for _ in range(runs):
        plane = ControlPlane(binaries)
        t0 = time.perf_counter()
        plane.start()
        starts.append(time.perf_counter() - t0)
        rss = {name: _rss_mib(p.pid) for name, p in plane.processes.items()}
        t1 = time.perf_counter()
        plane.stop()
        stops.append(time.perf_counter() - t1)
    print(f"control plane {binaries.version}, etcd {binaries.etcd}, {runs} runs")
    print(
        "start to ready (etcd, apiserver /readyz, controller-manager, scheduler, kwok, default SA, "
        f"{len(plane.node_names)} kwok nodes Ready): "
        f"median {statistics.median(starts):.1f} s, max {max(starts):.1f} s"
    )
    print(f"stop: median {statistics.median(stops):.1f} s")
    for name, mib in rss.items():
        print(f"RSS when ready, {name}: {mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
