"""One `PrometheusSource.collect()` of a window, in a process of its own, from the source tree named: a
measuring child of bench/bench_prometheus.py (its peak RSS is that of one read path alone).

    python bench/collect_once.py TREE URL START END CONCURRENCY COMPRESS OUT.json [READ]

Writes wall seconds, own CPU seconds, peak RSS, queries sent, the module file read from (so the parent
can check which tree ran) and every container's p50, p95 and max of CPU and memory to OUT.json. It
imports nothing of the project before TREE is first on sys.path (CountingTransport: bench_incremental's too).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx


class CountingTransport(httpx.HTTPTransport):
    """The real transport, counting requests."""

    count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return super().handle_request(request)


def _own_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str]) -> None:
    tree, url, start, end, concurrency, compress, out, *read = argv
    sys.path.insert(0, tree)
    import recommender
    from recommender.input.prometheus import PromClient, PrometheusSource

    transport = CountingTransport()
    window = (datetime.fromtimestamp(float(start), UTC), datetime.fromtimestamp(float(end), UTC))
    with PromClient(url, timeout=1200.0, transport=transport, compress=compress == "1") as client:
        # READ (PODSIZER_PROMETHEUS_READ) only where given: a tree before the read paths has no such setting
        source = PrometheusSource(client, concurrency=int(concurrency), **({"read": read[0]} if read else {}))
        cpu0, t0 = _own_cpu(), time.perf_counter()
        snap = source.collect(*window)
        wall, cpu = time.perf_counter() - t0, _own_cpu() - cpu0
    usages = {
        f"{u.workload.namespace}/{u.workload.name}/{u.container}": [
            u.cpu_cores.p50,
            u.cpu_cores.p95,
            u.cpu_cores.max,
            u.memory_bytes.p50,
            u.memory_bytes.p95,
            u.memory_bytes.max,
        ]
        for u in snap.containers
    }
    figures = {
        "wall_s": wall,
        "own_cpu_s": cpu,
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "queries": transport.count,
        "module": str(Path(recommender.__file__).resolve()),
        "usages": usages,
    }
    Path(out).write_text(json.dumps(figures))


if __name__ == "__main__":
    main(sys.argv[1:])
