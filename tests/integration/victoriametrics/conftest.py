"""Session fixtures: the Prometheus tests' 7 days of history imported into a real VictoriaMetrics, once for
one unlabelled cluster and once for two clusters ("east", "west") told apart by a `cluster` label."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.integration.prometheus.history import (
    CLUSTER_CPU_SCALE,
    History,
    cluster_history,
    history_families,
    series_count,
)
from tests.support.openmetrics import write_families

from .server import VICTORIA_METRICS, Server, flush, import_text, running_victoria_metrics

REQUIRE_ENV = "PODSIZER_REQUIRE_VICTORIAMETRICS"


@dataclass(frozen=True)
class Loaded:
    """A running VictoriaMetrics and the history of each cluster it holds (key None: no cluster label)."""

    server: Server
    histories: dict[str | None, History]
    timings: dict[str, float]

    @property
    def end(self) -> datetime:
        return next(iter(self.histories.values())).end


def workloads(h: History) -> set[tuple[str, str, str]]:
    """(namespace, kind, name) of every workload h's owner links and StatefulSet pods make: a link's
    owner, or the linked object itself when it has none (a bare Job)."""
    owned = {(o.namespace, o.owner_kind, o.owner_name) for o in h.owners if o.owner_kind}
    bare = {(o.namespace, o.kind, o.name) for o in h.owners if not o.owner_kind}
    sets = {(p.namespace, "StatefulSet", p.owner_name or "") for p in h.pods if p.owner_kind == "StatefulSet"}
    return owned | bare | sets


def require_victoria_metrics() -> None:
    """Skips when victoria-metrics is missing, unless REQUIRE_ENV is set (CI): then the test fails."""
    if Path(VICTORIA_METRICS).exists():
        return
    reason = f"{VICTORIA_METRICS} is not installed (Debian package victoria-metrics; scripts/system-deps.sh)"
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{REQUIRE_ENV} is set but {reason}", pytrace=False)
    pytest.skip(f"VICTORIAMETRICS SKIPPED: {reason}; set {REQUIRE_ENV}=1 to make this a failure")


def _now() -> datetime:
    return datetime.fromtimestamp(int(time.time()) // 60 * 60, UTC)


def _load(root: Path, clusters: dict[str | None, History]) -> Iterator[Loaded]:
    t = [time.perf_counter()]
    files: list[Path] = []
    expected = 0
    for name, h in clusters.items():
        families = history_families(h, name)
        expected += series_count(families)
        out = root / "om" / (name or "single")
        files += write_families(families, out, h.start.timestamp(), h.end.timestamp(), workers=2)
    t.append(time.perf_counter())
    with running_victoria_metrics(root / "data") as server:
        t.append(time.perf_counter())
        import_text(server.url, files, workers=2)
        flush(server.url, expected, min(h.start.timestamp() for h in clusters.values()))
        t.append(time.perf_counter())
        timings = {"generate+write": t[1] - t[0], "start": t[2] - t[1], "import+flush": t[3] - t[2]}
        yield Loaded(server, clusters, timings)


@pytest.fixture(scope="session")
def vm_single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    """The history of tests/integration/prometheus, without a cluster label."""
    require_victoria_metrics()
    end = _now()
    yield from _load(tmp_path_factory.mktemp("vm-single"), {None: cluster_history(end, "east")})


@pytest.fixture(scope="session")
def vm_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    """East's and west's histories (same workload names, different CPU use), each series labelled cluster=."""
    require_victoria_metrics()
    end = _now()
    histories: dict[str | None, History] = {c: cluster_history(end, c) for c in CLUSTER_CPU_SCALE}
    yield from _load(tmp_path_factory.mktemp("vm-clusters"), histories)
