"""The demo dataset is deterministic and holds every workload kind and special case, as seen through
the aggregated snapshot."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api import WorkloadRef
from recommender.input.demo_cluster import DemoSource, build_demo_dataset
from recommender.input.file import dataset_to_json
from recommender.model import GpuUsage, UsageSnapshot
from recommender.model.aggregate import aggregate

NOW = datetime(2026, 12, 2, 14, 7, 31, tzinfo=UTC)
BATCH = ("CronJob", "Job")  # short runs by design: their own confidence rule


@pytest.fixture(scope="module")
def snap() -> UsageSnapshot:
    return aggregate(build_demo_dataset(NOW), source="demo")


def _gpu(snap: UsageSnapshot, name: str) -> list[GpuUsage]:
    return [g for g in snap.gpus if g.workload.name == name]


def test_same_inputs_give_identical_output() -> None:
    assert dataset_to_json(build_demo_dataset(NOW)) == dataset_to_json(build_demo_dataset(NOW))


def test_seed_changes_the_samples_not_the_shape() -> None:
    a, b = build_demo_dataset(NOW, seed=1), build_demo_dataset(NOW, seed=2)
    assert dataset_to_json(a) != dataset_to_json(b)
    assert len(a.containers) == len(b.containers)


def test_every_sample_lies_on_the_step_grid_within_the_days_before_now() -> None:
    """With `now` off the grid the first grid point once lay before now - days, so a window
    of `days` (what `recommend --source demo` reads) dropped it, and postgres' init-chmod with it."""
    assert NOW.timestamp() % 600  # off the 10-minute grid
    raw = build_demo_dataset(NOW, days=3, step_seconds=600)
    ts = raw.containers[0].timestamps
    assert ts.size == 3 * 144 and not (ts % 600).any()
    assert ts[0] >= (NOW - timedelta(days=3)).timestamp() and ts[-1] < NOW.timestamp()
    assert raw.start == datetime.fromtimestamp(ts[0], UTC) and raw.end == NOW


def test_every_workload_kind_is_present(snap: UsageSnapshot) -> None:
    kinds = {w.kind for w in snap.workloads()}
    assert kinds == {
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "Rollout",
        "DeploymentConfig",
        "CronJob",
        "Job",
    }
    assert {w.namespace for w in snap.workloads()} == {"shop", "ml", "platform", "legacy", "analytics"}


def test_deployer_and_hook_pods_are_skipped_and_absent(snap: UsageSnapshot) -> None:
    skipped = {str(s.subject) for s in snap.skipped if "deployer or hook" in s.reason}
    assert skipped == {"legacy/pod/billing-7-deploy", "legacy/pod/billing-7-hook-pre"}
    (billing,) = [
        c for c in snap.containers if c.workload == WorkloadRef("legacy", "DeploymentConfig", "billing")
    ]
    assert billing.cpu_cores.max < 1.0  # the hook ran at 3.5 cores in the same container name
    assert billing.pods == 4  # two revisions x two replicas


def test_over_and_under_provisioned(snap: UsageSnapshot) -> None:
    by = {(c.workload.name, c.container): c for c in snap.containers}
    web = by[("storefront", "web")]
    assert web.cpu_cores.p99 < 0.25 * web.current_requests["cpu"]
    api = by[("checkout-api", "api")]
    assert api.cpu_cores.p95 > 2 * api.current_requests["cpu"]


def test_oom_killed_pod_near_its_limit(snap: UsageSnapshot) -> None:
    (api,) = [c for c in snap.containers if c.workload.name == "checkout-api"]
    limit = api.current_limits["memory"]
    assert api.oom_kill_memory_bytes is not None
    assert 0.95 * limit < api.oom_kill_memory_bytes <= limit
    assert api.memory_bytes.max > 0.95 * limit


def test_low_confidence_workload_has_six_hours(snap: UsageSnapshot) -> None:
    (flags,) = [c for c in snap.containers if c.workload.name == "feature-flags"]
    assert flags.last_seen - flags.first_seen <= timedelta(hours=6)
    others = [
        c
        for c in snap.containers
        if c.workload.name != "feature-flags" and not c.init_container and c.workload.kind not in BATCH
    ]
    assert min(c.last_seen - c.first_seen for c in others) > timedelta(days=6)


def test_hpa_workload_scales_with_steady_per_replica_use(snap: UsageSnapshot) -> None:
    (hpa,) = snap.autoscalers
    assert hpa.workload == WorkloadRef("shop", "Deployment", "search")
    assert hpa.target_utilization == {"cpu": 0.7}
    (search,) = [c for c in snap.containers if c.workload.name == "search"]
    assert search.pods > hpa.max_replicas  # new pods on every scale-up
    assert 0.5 < search.per_replica_cpu_cores < 0.75
    (demand,) = [d for d in snap.demand if d.workload.name == "search"]
    assert np.nanmax(demand.cpu_cores.values) > 3 * np.nanmin(demand.cpu_cores.values)


def test_rollout_and_statefulset_details(snap: UsageSnapshot) -> None:
    raw = build_demo_dataset(NOW)
    rollout_rs = [o for o in raw.owners if o.owner_kind == "Rollout"]
    assert len(rollout_rs) == 2
    hashes = {
        p.labels.get("rollouts-pod-template-hash")
        for p in raw.pods
        if p.owner_name in {o.name for o in rollout_rs}
    }
    assert len(hashes) == 2 and None not in hashes
    init = [c for c in snap.containers if c.workload.name == "postgres" and c.init_container]
    assert [c.container for c in init] == ["init-chmod"]


def test_idle_gpu_pod(snap: UsageSnapshot) -> None:
    (nb,) = _gpu(snap, "notebook")
    tail = nb.activity_series.values[-30 * 12 :]
    assert np.nanmax(tail) < 0.05
    assert np.nanmax(nb.activity_series.values) > 0.3


def test_activity_signal_fallbacks(snap: UsageSnapshot) -> None:
    signals = {g.workload.name: g.activity_signal for g in snap.gpus}
    assert signals["llm-pretrain"] == "SM_ACTIVE"
    assert signals["notebook"] == "SM_ACTIVE"
    assert signals["bert-finetune"] == "GR_ENGINE_ACTIVE"
    assert signals["reranker"] == "GR_ENGINE_ACTIVE"
    assert signals["embeddings"] == "GPU_UTIL"


def test_gpu_pods_and_nodes(snap: UsageSnapshot) -> None:
    nodes = {n.name: n for n in snap.nodes}
    train = _gpu(snap, "llm-pretrain")
    assert len(train) == 2 and all(g.gpu_count == 8 for g in train)
    assert all(
        nodes[g.node].instance_type == "p5.48xlarge" and nodes[g.node].capacity_type == "spot" for g in train
    )
    assert all(nodes[g.node].labels["karpenter.sh/capacity-type"] == "spot" for g in train)
    (bert,) = _gpu(snap, "bert-finetune")
    assert bert.gpu_count == 4 and nodes[bert.node].instance_type == "p4d.24xlarge"
    assert nodes[bert.node].capacity_type == "on-demand"
    assert nodes[bert.node].labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    (rr,) = _gpu(snap, "reranker")
    assert rr.fb_used_max_mib < 4000 and rr.activity.p95 < 0.12  # fits 1g.5gb
    emb = _gpu(snap, "embeddings")
    assert len(emb) == 2 and all(nodes[g.node].instance_type == "g6e.xlarge" for g in emb)
    free = [s for s in snap.skipped if s.reason == "GPU not attached to a pod"]
    assert len(free) == 3


def test_demo_source_collects_the_window() -> None:
    calls: list[tuple[int, int, str]] = []
    source = DemoSource(NOW, days=2)
    snap = source.collect(NOW - timedelta(days=1), NOW, lambda d, t, w: calls.append((d, t, w)))
    assert snap.source == "demo"
    assert snap.window_start == NOW - timedelta(days=1)
    assert all(c.first_seen >= NOW - timedelta(days=1) for c in snap.containers)
    assert calls[-1][0] == calls[-1][1]


def test_removing_the_demo_deployer_and_hook_pods_changes_nothing(snap: UsageSnapshot) -> None:
    raw = build_demo_dataset(NOW)
    deployers = {"billing-7-deploy", "billing-7-hook-pre"}
    assert deployers <= {c.pod for c in raw.containers}
    without = replace(
        raw,
        pods=tuple(p for p in raw.pods if p.name not in deployers),
        containers=tuple(c for c in raw.containers if c.pod not in deployers),
    )
    other = aggregate(without, source="demo")
    assert other.containers == snap.containers
    for a, b in zip(snap.demand, other.demand, strict=True):
        np.testing.assert_array_equal(a.cpu_cores.values, b.cpu_cores.values)
        np.testing.assert_array_equal(a.memory_bytes.values, b.memory_bytes.values)


def test_the_nightly_cronjob_is_one_workload_of_a_run_a_night_with_pods_only_while_running(
    snap: UsageSnapshot,
) -> None:
    raw = build_demo_dataset(NOW)
    runs = [o for o in raw.owners if o.owner_kind == "CronJob"]
    assert len(runs) == 7 and all(o.name.startswith("nightly-report-") for o in runs)
    (report,) = [
        c for c in snap.containers if c.workload == WorkloadRef("analytics", "CronJob", "nightly-report")
    ]
    assert (report.runs, report.pods) == (7, 7)
    step = 300
    assert report.samples == 7 * (45 * 60 // step)  # ~45 minutes a night, nothing between runs
    assert 1.0 < report.cpu_cores.p50 < 1.4  # busy while running: gaps are not zeros


def test_the_training_job_is_a_bare_job_running_its_one_run_on_an_a100(snap: UsageSnapshot) -> None:
    job = WorkloadRef("ml", "Job", "train-resnet")
    (trainer,) = [c for c in snap.containers if c.workload == job]
    assert trainer.runs == 1 and trainer.last_seen - trainer.first_seen < timedelta(hours=10)
    assert snap.window_end - trainer.last_seen <= timedelta(minutes=5)  # still running at the end
    (gpu,) = [g for g in snap.gpus if g.workload == job]
    assert gpu.gpu_count == 1 and gpu.activity_signal == "GR_ENGINE_ACTIVE" and gpu.activity.p50 > 0.6
    raw = build_demo_dataset(NOW)
    (held,) = [g for g in raw.gpus if g.pod.startswith("train-resnet-")]
    (free,) = [g for g in raw.gpus if (g.hostname, g.gpu_index, g.pod) == (held.hostname, "5", "")]
    assert free.timestamps.max() < held.timestamps.min()  # reported without a pod until the Job took it
