"""aggregate(): owner resolution, exclusion of deployer/hook pods, quantiles, per-replica steady state,
OOM, requests, GPU signals and demand, checked against hand-built raw datasets. Percentiles and means come
from the usage states' histograms: within a bucket (CPU_BUCKETS.resolution) of the exact ones."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api import WorkloadRef
from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.model import Quantiles, UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.histogram import CPU_BUCKETS, MEMORY_BUCKETS
from recommender.model.raw import ContainerSamples, GpuSamples, OomKill, OwnerLink, PodInfo, RawDataset
from recommender.model.recency import OFF
from recommender.model.samples import clip

START = datetime(2026, 11, 25, tzinfo=UTC)
T0 = START.timestamp()
STEP = 300.0
N = 24  # two hours
TS = T0 + STEP * np.arange(N)
END = START + timedelta(seconds=STEP * N)
MIB = 1024.0 * 1024.0


def samples(
    ns: str, pod: str, container: str, cpu: float | np.ndarray, mem: float | np.ndarray, ts: np.ndarray = TS
) -> ContainerSamples:
    cpu_a = np.broadcast_to(np.asarray(cpu, dtype=np.float64), ts.shape).copy()
    mem_a = np.broadcast_to(np.asarray(mem, dtype=np.float64), ts.shape).copy()
    return ContainerSamples(ns, pod, container, ts, cpu_a, mem_a)


def gpu(
    pod: str,
    uuid: str,
    *,
    sm: float | None = None,
    gr: float | None = None,
    util: float | None = None,
    used: float = 1000.0,
    free: float = 39000.0,
    reserved: float = 500.0,
    container: str = "main",
    mig: str | None = None,
    mig_id: str | None = None,
    ts: np.ndarray = TS,
) -> GpuSamples:
    def arr(v: float | None) -> np.ndarray | None:
        return None if v is None else np.full(ts.size, v)

    return GpuSamples(
        "ml",
        pod,
        container,
        "gpu-node",
        "0",
        uuid,
        "NVIDIA A100-SXM4-40GB",
        ts,
        np.full(ts.size, used),
        np.full(ts.size, free),
        reserved,
        arr(sm),
        arr(gr),
        arr(util),
        None,
        mig,
        mig_id,
    )


PODS = (
    PodInfo("shop", "web-abc-1", "n1", "ReplicaSet", "web-abc", requests={"web": {"cpu": 0.5}}),
    PodInfo(
        "shop", "canary-xyz-1", "n1", "ReplicaSet", "canary-xyz", labels={"rollouts-pod-template-hash": "xyz"}
    ),
    PodInfo(
        "legacy",
        "cart-3-q8w7e",
        "n2",
        "ReplicationController",
        "cart-3",
        labels={"deploymentconfig": "cart", "deployment": "cart-3"},
    ),
    PodInfo("shop", "db-0", "n2", "StatefulSet", "db"),
    PodInfo("platform", "agent-abcde", "n1", "DaemonSet", "agent"),
)
OWNERS = (
    OwnerLink("shop", "ReplicaSet", "web-abc", "Deployment", "web"),
    OwnerLink("shop", "ReplicaSet", "canary-xyz", "Rollout", "canary"),
    OwnerLink("legacy", "ReplicationController", "cart-3", "DeploymentConfig", "cart"),
)
CONTAINERS = (
    samples("shop", "web-abc-1", "web", 0.2, 100 * MIB),
    samples("shop", "canary-xyz-1", "app", 0.3, 200 * MIB),
    samples("legacy", "cart-3-q8w7e", "cart", 0.4, 300 * MIB),
    samples("shop", "db-0", "db", 0.5, 400 * MIB),
    samples("platform", "agent-abcde", "agent", 0.01, 20 * MIB),
)
BASE = RawDataset(START, END, PODS, OWNERS, CONTAINERS)

# Deployer and hook pods of cart-3, with huge usage in the app container's name.
DEPLOYER_PODS = (
    PodInfo(
        "legacy",
        "cart-3-deploy",
        "n2",
        "ReplicationController",
        "cart-3",
        labels={"openshift.io/deployer-pod-for.name": "cart-3"},
        requests={"deployment": {"cpu": 0.0}},
    ),
    PodInfo(
        "legacy",
        "cart-3-hook-pre",
        "n2",
        None,
        None,
        labels={"openshift.io/deployer-pod.type": "hook-pre", "openshift.io/deployer-pod-for.name": "cart-3"},
        requests={"cart": {"cpu": 1.0, "memory": 1024 * MIB}},
    ),
)
DEPLOYER_SAMPLES = (
    samples("legacy", "cart-3-deploy", "deployment", 8.0, 16 * 1024 * MIB),
    samples("legacy", "cart-3-hook-pre", "cart", 12.0, 32 * 1024 * MIB),
)
DEPLOYER_GPUS = (gpu("cart-3-hook-pre", "GPU-hook", sm=0.99, container="cart"),)


def by_workload(snap: UsageSnapshot) -> dict[tuple[WorkloadRef, str], Quantiles]:
    return {(c.workload, c.container): c.cpu_cores for c in snap.containers}


@pytest.mark.parametrize(
    ("namespace", "kind", "name", "container", "cpu"),
    [
        ("shop", "Deployment", "web", "web", 0.2),
        ("shop", "Rollout", "canary", "app", 0.3),
        ("legacy", "DeploymentConfig", "cart", "cart", 0.4),
        ("shop", "StatefulSet", "db", "db", 0.5),
        ("platform", "DaemonSet", "agent", "agent", 0.01),
    ],
)
def test_each_kind_resolves_to_its_workload(
    namespace: str, kind: str, name: str, container: str, cpu: float
) -> None:
    snap = aggregate(BASE, source="test")
    q = by_workload(snap)[(WorkloadRef(namespace, kind, name), container)]
    assert q.p50 == pytest.approx(cpu, abs=CPU_BUCKETS.resolution(cpu))
    assert snap.skipped == ()


def test_deployer_and_hook_pods_change_nothing() -> None:
    with_deployers = replace(
        BASE,
        pods=BASE.pods + DEPLOYER_PODS,
        containers=BASE.containers + DEPLOYER_SAMPLES,
        gpus=DEPLOYER_GPUS,
        ooms=(OomKill("legacy", "cart-3-hook-pre", "cart", START, 32 * 1024 * MIB),),
    )
    a = aggregate(BASE, source="test")
    b = aggregate(with_deployers, source="test")
    assert a.containers == b.containers
    assert b.gpus == ()
    assert [d.workload for d in a.demand] == [d.workload for d in b.demand]
    for da, db in zip(a.demand, b.demand, strict=True):
        np.testing.assert_array_equal(da.cpu_cores.values, db.cpu_cores.values)
        np.testing.assert_array_equal(da.memory_bytes.values, db.memory_bytes.values)
    subjects = {str(s.subject): s.reason for s in b.skipped}
    assert "deployer or hook" in subjects["legacy/pod/cart-3-deploy"]
    assert "deployer or hook" in subjects["legacy/pod/cart-3-hook-pre"]


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        (PodInfo("shop", "bare", "n1", None, None), "no controller"),
        (PodInfo("shop", "job-x", "n1", "Job", "nightly"), "owner Job/nightly has no known controller"),
        (PodInfo("shop", "orphan-1", "n1", "ReplicaSet", "gone"), "no known controller"),
    ],
)
def test_unowned_pods_are_skipped_with_reason(pod: PodInfo, reason: str) -> None:
    raw = replace(
        BASE, pods=(*BASE.pods, pod), containers=(*BASE.containers, samples("shop", pod.name, "x", 5, 5))
    )
    snap = aggregate(raw, source="test")
    assert all(c.container != "x" for c in snap.containers)
    skipped = {str(s.subject): s.reason for s in snap.skipped}
    assert reason in skipped[f"shop/pod/{pod.name}"]


def test_samples_without_pod_info_are_skipped() -> None:
    raw = replace(BASE, containers=(*BASE.containers, samples("shop", "ghost", "x", 1, 1)))
    snap = aggregate(raw, source="test")
    assert "no owner information" in {str(s.subject): s.reason for s in snap.skipped}["shop/pod/ghost"]


def _web(
    pods: list[tuple[str, np.ndarray, np.ndarray]],
    ooms: tuple[OomKill, ...] = (),
    infos: dict[str, PodInfo] | None = None,
) -> UsageSnapshot:
    infos = infos or {}
    raw = RawDataset(
        START,
        END,
        tuple(infos.get(p, PodInfo("shop", p, "n1", "ReplicaSet", "web-abc")) for p, _, _ in pods),
        OWNERS,
        tuple(ContainerSamples("shop", p, "web", TS[: cpu.size], cpu, mem) for p, cpu, mem in pods),
        ooms=ooms,
    )
    return aggregate(raw, source="test", recency=OFF)  # unweighted: test_recency.py weighs


def test_quantiles_over_all_finite_samples_of_all_pods() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.random(N), rng.random(N) * 3
    a[3] = np.nan
    snap = _web([("web-abc-1", a, np.full(N, 1.0)), ("web-abc-2", b, np.full(N, 2.0))])
    (usage,) = snap.containers
    pooled = np.concatenate([a[np.isfinite(a)], b])
    exact = Quantiles.of(pooled)
    got = usage.cpu_cores
    ranks = np.quantile(pooled, [0.5, 0.9, 0.95, 0.99], method="inverted_cdf")  # the sample at each rank
    for name, want in zip(("p50", "p90", "p95", "p99", "mean"), [*ranks, exact.mean], strict=True):
        assert getattr(got, name) == pytest.approx(want, abs=CPU_BUCKETS.resolution(want)), name
    assert (got.max, got.second_max) == (exact.max, exact.second_max)  # peaks are kept exactly
    assert usage.samples == 2 * N  # memory is finite at the NaN cpu sample
    assert usage.pods == 2
    assert usage.first_seen == START
    assert usage.last_seen == START + timedelta(seconds=STEP * (N - 1))


def test_per_replica_is_the_pooled_median_of_every_pods_samples() -> None:
    pods = [
        (f"web-abc-{i}", np.full(N, float(v)), np.full(N, float(v) * MIB)) for i, v in enumerate((1, 2, 10))
    ]
    (usage,) = _web(pods).containers
    assert usage.per_replica_cpu_cores == pytest.approx(2.0, abs=CPU_BUCKETS.resolution(2.0))
    mib2 = 2.0 * MIB
    assert usage.per_replica_memory_bytes == pytest.approx(mib2, abs=MEMORY_BUCKETS.resolution(mib2))
    # a fourth pod at 10 with few samples: the pooled median stays 2 (the median of each pod's median
    # would be 6); one rule for every path, the one the histograms can keep
    pods += [("web-abc-9", np.full(4, 10.0), np.full(4, 10.0 * MIB))]
    (usage,) = _web(pods).containers
    assert usage.per_replica_cpu_cores == pytest.approx(2.0, abs=CPU_BUCKETS.resolution(2.0))
    assert usage.per_replica_cpu_cores == usage.cpu_cores.p50


@pytest.mark.parametrize(
    ("cpu", "mem", "reason"),
    [
        (np.full(N, np.nan), np.full(N, 1.0), "no finite cpu samples"),
        (np.full(N, 1.0), np.full(N, np.nan), "no finite memory samples"),
        (np.full(N, np.nan), np.full(N, np.nan), "no finite cpu or memory samples"),
    ],
)
def test_container_without_finite_samples_is_skipped(cpu: np.ndarray, mem: np.ndarray, reason: str) -> None:
    snap = _web([("web-abc-1", cpu, mem)])
    assert snap.containers == ()
    assert {str(s.subject): s.reason for s in snap.skipped}["shop/Deployment/web/container/web"] == reason


def test_a_window_longer_than_the_daily_peaks_held_keeps_its_highest_sample() -> None:
    """20 days, the highest CPU and memory samples on the first (older than the 16 days of peaks held)."""
    ts = T0 + 3600.0 * np.arange(20 * 24)
    cpu, mem = np.full(ts.size, 0.5), np.full(ts.size, 100 * MIB)
    cpu[3], mem[5] = 4.0, 900 * MIB
    raw = RawDataset(
        START,
        START + timedelta(days=20),
        (PodInfo("shop", "web-abc-1", "n1", "ReplicaSet", "web-abc"),),
        OWNERS,
        (ContainerSamples("shop", "web-abc-1", "web", ts, cpu, mem),),
    )
    (usage,) = aggregate(raw, source="test").containers
    assert (usage.cpu_cores.max, usage.memory_bytes.max) == (4.0, 900 * MIB)
    assert usage.cpu_cores.second_max == 0.5


def test_oom_is_max_memory_at_a_kill() -> None:
    ooms = (
        OomKill("shop", "web-abc-1", "web", START, 500 * MIB),
        OomKill("shop", "web-abc-2", "web", START, 510 * MIB),
        OomKill("shop", "web-abc-2", "other", START, 900 * MIB),
    )
    snap = _web([("web-abc-1", np.ones(N), np.ones(N)), ("web-abc-2", np.ones(N), np.ones(N))], ooms)
    assert snap.containers[0].oom_kill_memory_bytes == 510 * MIB


def test_requests_and_limits_come_from_the_latest_pod() -> None:
    old = PodInfo(
        "shop",
        "web-abc-1",
        "n1",
        "ReplicaSet",
        "web-abc",
        requests={"web": {"cpu": 1.0}},
        limits={"web": {"memory": 1.0}},
    )
    new = PodInfo(
        "shop",
        "web-abc-2",
        "n1",
        "ReplicaSet",
        "web-abc",
        requests={"web": {"cpu": 0.25}},
        limits={"web": {"memory": 512 * MIB}},
    )
    # web-abc-1 (the older spec) is listed last, but web-abc-2 was seen last.
    snap = _web(
        [("web-abc-2", np.ones(N), np.ones(N)), ("web-abc-1", np.ones(N - 5), np.ones(N - 5))],
        infos={"web-abc-1": old, "web-abc-2": new},
    )
    usage = snap.containers[0]
    assert usage.current_requests == {"cpu": 0.25}
    assert usage.current_limits == {"memory": 512 * MIB}


def test_init_container_flag() -> None:
    info = PodInfo("shop", "db-0", "n2", "StatefulSet", "db", init_containers=("init",))
    raw = RawDataset(
        START,
        END,
        (info,),
        (),
        (samples("shop", "db-0", "db", 1, 1), samples("shop", "db-0", "init", 1, 1, TS[:1])),
    )
    flags = {c.container: c.init_container for c in aggregate(raw, source="t").containers}
    assert flags == {"db": False, "init": True}


def test_demand_is_hourly_sum_over_pods_of_means() -> None:
    cpu1 = np.r_[np.full(12, 1.0), np.full(12, 3.0)]
    cpu2 = np.r_[np.full(6, 2.0), np.full(6, 4.0), np.full(12, np.nan)]
    snap = _web([("web-abc-1", cpu1, np.full(N, 10.0)), ("web-abc-2", cpu2, np.full(N, 5.0))])
    (demand,) = snap.demand
    assert demand.cpu_cores.step_seconds == 3600
    assert demand.cpu_cores.start == START
    np.testing.assert_allclose(demand.cpu_cores.values, [1.0 + 3.0, 3.0])
    np.testing.assert_allclose(demand.memory_bytes.values, [15.0, 15.0])


@pytest.mark.parametrize("gap", [False, True])
def test_demand_when_samples_end_before_the_window(gap: bool) -> None:
    cpu = np.r_[np.full(11, 1.0), 13.0]  # the first hour only; its last sample counts
    if gap:
        cpu[4] = np.nan
    (demand,) = _web([("web-abc-1", cpu, np.ones(12))]).demand
    expected = (11.0 - gap + 13.0) / (12 - gap)
    assert demand.cpu_cores.values[0] == pytest.approx(expected)
    assert np.isnan(demand.cpu_cores.values[1])


def test_demand_hour_without_samples_is_nan() -> None:
    cpu = np.r_[np.full(12, np.nan), np.full(12, 2.0)]
    (demand,) = _web([("web-abc-1", cpu, np.ones(N))]).demand
    assert np.isnan(demand.cpu_cores.values[0])
    assert demand.cpu_cores.values[1] == 2.0


GPU_POD = PodInfo("ml", "train-0", "gpu-node", "StatefulSet", "train")


def _gpu_snap(*gpus: GpuSamples) -> UsageSnapshot:
    raw = RawDataset(START, END, (GPU_POD,), (), (samples("ml", "train-0", "main", 1, 1),), gpus=gpus)
    return aggregate(raw, source="t")


@pytest.mark.parametrize(
    ("kwargs", "signal", "p50"),
    [
        ({"sm": 0.4, "gr": 0.5, "util": 60.0}, "SM_ACTIVE", 0.4),
        ({"gr": 0.5, "util": 60.0}, "GR_ENGINE_ACTIVE", 0.5),
        ({"util": 60.0}, "GPU_UTIL", 0.6),
    ],
)
def test_gpu_activity_signal_preference(kwargs: dict[str, float], signal: str, p50: float) -> None:
    (usage,) = _gpu_snap(gpu("train-0", "GPU-1", **kwargs)).gpus
    assert usage.activity_signal == signal
    assert usage.activity.p50 == pytest.approx(p50)


def test_gpu_signal_must_exist_on_every_gpu_of_the_pod() -> None:
    (usage,) = _gpu_snap(gpu("train-0", "GPU-1", sm=0.4, gr=0.5), gpu("train-0", "GPU-2", gr=0.7)).gpus
    assert usage.activity_signal == "GR_ENGINE_ACTIVE"
    assert usage.activity.p50 == pytest.approx(0.6)  # mean over the two GPUs


def test_gpu_without_any_signal_is_skipped() -> None:
    snap = _gpu_snap(gpu("train-0", "GPU-1"))
    assert snap.gpus == ()
    assert any("no GPU activity signal" in s.reason for s in snap.skipped)


def test_gpu_count_framebuffer_and_identity() -> None:
    (usage,) = _gpu_snap(
        gpu("train-0", "GPU-1", sm=0.2, used=1000, free=39000, reserved=960),
        gpu("train-0", "GPU-2", sm=0.4, used=3000, free=37000, reserved=960),
    ).gpus
    assert usage.workload == WorkloadRef("ml", "StatefulSet", "train")
    assert (usage.pod, usage.node, usage.container) == ("train-0", "gpu-node", "main")
    assert usage.gpu_count == 2
    assert usage.uuids == ("GPU-1", "GPU-2")
    assert usage.fb_used_max_mib == 4000
    assert usage.fb_total_mib == 2 * 40960
    assert usage.mig_profile is None


def test_mig_instances_count_separately() -> None:
    (usage,) = _gpu_snap(
        gpu("train-0", "GPU-1", gr=0.1, mig="3g.40gb", mig_id="1"),
        gpu("train-0", "GPU-1", gr=0.3, mig="3g.40gb", mig_id="2"),
    ).gpus
    assert usage.gpu_count == 2
    assert usage.mig_profile == "3g.40gb"
    assert usage.uuids == ("GPU-1",)


def test_activity_series_is_five_minute_max() -> None:
    ts = T0 + 60.0 * np.arange(N * 5)  # one sample a minute
    act = np.tile([0.1, 0.9, 0.2, 0.3, 0.4], N)
    g = replace(gpu("train-0", "GPU-1", sm=0.0, ts=ts), sm_active=act)
    (usage,) = _gpu_snap(g).gpus
    assert usage.activity_series.step_seconds == 300
    assert usage.activity_series.start == START
    np.testing.assert_allclose(usage.activity_series.values, np.full(N, 0.9))


def test_gpu_not_attached_to_a_pod_is_listed_as_skipped() -> None:
    free = replace(gpu("", "GPU-free", gr=0.0), namespace="", container="")
    snap = _gpu_snap(free)
    assert snap.gpus == ()
    skipped = {s.subject: s.reason for s in snap.skipped}
    assert skipped[Subject.of_gpu("gpu-node", "GPU-free")] == "GPU not attached to a pod"
    assert str(Subject.of_gpu("gpu-node", "GPU-free")) == "gpu/gpu-node/GPU-free"


def test_clip_keeps_only_the_window() -> None:
    cut = START + timedelta(hours=1)
    raw = clip(BASE, cut, END)
    assert raw.start == cut
    assert all(c.timestamps.min() >= cut.timestamp() for c in raw.containers)
    snap = aggregate(raw, source="t")
    assert all(c.samples == N // 2 for c in snap.containers)


def test_clip_cuts_containers_and_gpus_to_the_same_window() -> None:
    """One window rule for every kind of series: start <= t < end; a series wholly outside is dropped."""
    cut = START + timedelta(hours=1)
    later = TS + 3 * 3600.0  # wholly after END
    raw = replace(BASE, gpus=(gpu("p", "GPU-a", sm=0.5), gpu("p", "GPU-b", sm=0.5, ts=later)))
    clipped = clip(raw, cut, END)
    kept = [c.timestamps for c in clipped.containers] + [g.timestamps for g in clipped.gpus]
    assert len(clipped.gpus) == 1 and kept
    assert all(t.min() >= cut.timestamp() and t.max() < END.timestamp() and t.size == N // 2 for t in kept)
    (g,) = clipped.gpus
    assert g.sm_active is not None and g.sm_active.size == N // 2 and g.gr_engine_active is None


def test_a_pre_reduced_series_brings_its_raw_sample_count() -> None:
    web = replace(CONTAINERS[0], samples=5 * N)  # each point the peak of five raw samples
    snap = aggregate(replace(BASE, containers=(web,)), source="t")
    (usage,) = snap.containers
    assert usage.samples == 5 * N
    assert usage.memory_bytes.max == 100 * MIB


def test_clip_scales_the_raw_sample_count_of_a_pre_reduced_series() -> None:
    web = replace(CONTAINERS[0], samples=5 * N)
    raw = clip(replace(BASE, containers=(web,)), START, START + timedelta(hours=1))
    assert raw.containers[0].samples == 5 * N // 2


def test_source_skips_are_passed_on_to_the_snapshot() -> None:
    empty = Skipped(Subject.of_namespace("quiet"), "no container CPU or memory series in the window")
    snap = aggregate(replace(BASE, skipped=(empty,)), source="t")
    assert empty in snap.skipped


def test_a_given_resolver_replaces_the_datasets_owner_graph() -> None:
    def everything_is_db(namespace: str, pod: str) -> WorkloadRef | Skipped:
        return WorkloadRef(namespace, "StatefulSet", "db")

    snap = aggregate(replace(BASE, pods=(), owners=()), source="t", resolve=everything_is_db)
    assert {str(c.workload) for c in snap.containers} == {
        "shop/StatefulSet/db",
        "legacy/StatefulSet/db",
        "platform/StatefulSet/db",
    }
