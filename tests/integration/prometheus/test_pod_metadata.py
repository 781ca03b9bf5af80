"""Through a real Prometheus: pods' podsizer.io/ annotations reach the plan through
kube-state-metrics (kube_pod_annotations), so `podsizer recommend --source prometheus`, `explain`, the
console over Prometheus, the webhook and the updater state the same changes. kube-state-metrics decoding
knew only podsizer.io/exclude and podsizer.io/mode: podsizer.io/gpu and podsizer.io/allow-large-change came
back as podsizer_io_gpu and podsizer_io_allow_large_change, so the opt-ins the webhook honoured were off."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from podsizer.api import WorkloadRef
from podsizer.keys import ALLOW_LARGE_CHANGE_KEY, GPU_KEY, MODE_KEY, UPDATE_MODE_KEY
from podsizer.resources import GPU
from recommender.output.store import JsonFileStore
from tests.integration.agreement import entry_points as ep
from tests.integration.agreement.cases import Pinned, generate
from tests.integration.agreement.test_entry_points_agree import Run, disagreements, environment
from tests.support.openmetrics import backfill, write_dataset

from .conftest import PROMTOOL
from .server import running_prometheus

pytestmark = pytest.mark.integration

GPU_RESIZE = WorkloadRef("shop", "Deployment", "pinned-0")
LARGE_CHANGE = WorkloadRef("shop", "Deployment", "pinned-1")
PINNED = (
    # 4 GPUs at 2 % activity: one is enough, written only with the opt-in
    Pinned({GPU_KEY: "resize", MODE_KEY: "auto", UPDATE_MODE_KEY: "recreate"}, gpus=4, gpu_activity=0.02),
    # 4 cores and 4Gi requested, 2 % of them used: far beyond the 4x change factor, which the opt-in lifts
    Pinned({ALLOW_LARGE_CHANGE_KEY: "true", MODE_KEY: "auto", UPDATE_MODE_KEY: "recreate"}, level=0.02),
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """12 random workloads and the two pinned ones as kube-state-metrics, cAdvisor and dcgm-exporter
    series in a real Prometheus; every entry point reads them from there."""
    if not Path(PROMTOOL).exists():
        pytest.skip("promtool not installed (Debian package prometheus)")
    root = tmp_path_factory.mktemp("pod-metadata")
    end = datetime.fromtimestamp(int(time.time()) // 3600 * 3600, UTC)
    cases = generate(22, 12, end, PINNED)
    backfill(
        write_dataset(cases.dataset(), root / "om", info_step_s=3600.0), root / "tsdb", promtool=PROMTOOL
    )
    JsonFileStore(root / "store.json").put_many(cases.seeded_store())
    with running_prometheus(root / "tsdb", retention_days=10) as server:
        env = environment(root, {}) | {
            "PODSIZER_SOURCE": "prometheus",
            "PODSIZER_CONSOLE_SOURCE": "prometheus",
            "PODSIZER_PROMETHEUS_URL": server.url,
            "PODSIZER_AS_OF": end.isoformat(),
            "PODSIZER_QUERY_STEP": "1h",  # the series are hourly: one point a step, a rate over two
            "PODSIZER_CPU_RATE_WINDOW": "2h",
        }
        env.pop("PODSIZER_SOURCE_FILE")
        shown = ep.recommend(env, root)
        with ThreadPoolExecutor(3) as pool:
            said = (
                pool.submit(ep.explain, env, root, sorted(shown)),
                pool.submit(ep.console, env, root),
                pool.submit(ep.webhook, env, root, cases.cases),
            )
            explained, console, webhook = (f.result() for f in said)
        updater = ep.updater(env, root / "store.json", cases.cases)
    yield Run("prometheus", cases.seed, cases.cases, shown, explained, console, webhook, updater)


def _resources(said: ep.Said) -> set[str]:
    return {c[3] for c in said.changes}


def test_podsizer_io_gpu_from_kube_state_metrics_lets_every_entry_point_resize_gpus(run: Run) -> None:
    shown = run.recommend[GPU_RESIZE]
    gpu = {(c[2], c[4], c[5]) for c in shown.changes if c[3] == GPU}
    assert gpu == {("requests", Decimal(4), Decimal(1)), ("limits", Decimal(4), Decimal(1))}, shown
    for said in (run.explain, run.console, run.webhook, run.updater):
        assert said[GPU_RESIZE].changes == shown.changes


def test_podsizer_io_allow_large_change_from_kube_state_metrics_lifts_the_factor_everywhere(run: Run) -> None:
    shown = run.recommend[LARGE_CHANGE]
    cpu = next(c for c in shown.changes if c[2:4] == ("requests", "cpu"))
    assert cpu[4] == 4 and cpu[5] is not None and cpu[5] < Decimal(1)  # below 4 cores / 4
    for said in (run.explain, run.console, run.webhook, run.updater):
        assert said[LARGE_CHANGE].changes == shown.changes


def test_every_entry_point_states_the_same_changes_from_prometheus(run: Run) -> None:
    found = {str(c.workload): d for c in run.cases if (d := disagreements(run, c))}
    assert not found, f"AGREEMENT_SEED={run.seed}: {found}"
    assert len(run.recommend) >= len(run.cases) // 2 and {GPU_RESIZE, LARGE_CHANGE} <= set(run.recommend)
