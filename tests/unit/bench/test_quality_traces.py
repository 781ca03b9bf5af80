"""The quality benchmark's trace generator: deterministic per seed, the patterns it promises, the T split."""

from __future__ import annotations

import numpy as np
import pytest

from bench.quality.traces import HISTORY, MINUTES_PER_DAY, TOTAL, Cluster, evaluation, generate, history


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return generate(14)


def _arrays(c: Cluster) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for p in c.patterns:
        for pod in p.pods:
            out += [pod.cpu[name] for name in p.containers] + [pod.memory[name] for name in p.containers]
        out += [a for g in p.gpus for a in (g.sm_active, g.fb_used_mib)]
    return out


def test_the_same_seed_gives_identical_traces(cluster: Cluster) -> None:
    again = generate(14)
    assert [p.name for p in again.patterns] == [p.name for p in cluster.patterns]
    a, b = _arrays(cluster), _arrays(again)
    assert len(a) == len(b) > 0
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_another_seed_gives_other_traces(cluster: Cluster) -> None:
    a, b = _arrays(cluster), _arrays(generate(15))
    assert sum(not np.array_equal(x, y) for x, y in zip(a, b, strict=False)) > len(a) // 2


def test_there_are_at_least_twenty_named_patterns(cluster: Cluster) -> None:
    names = [p.name for p in cluster.patterns]
    assert len(names) >= 20
    assert len(set(names)) == len(names)
    for wanted in ("steady", "daily", "weekly", "trend", "rollout-down", "rollout-up", "leak", "jvm-heap",
                   "jvm-gc", "batch", "cron", "startup", "hpa-web", "canary", "oom", "sidecar", "multi",
                   "spiky", "gpu-train", "gpu-infer", "gpu-idle"):  # fmt: skip
        assert wanted in names


def test_every_pod_has_per_minute_usage_of_every_container(cluster: Cluster) -> None:
    pods = [(p, pod) for p in cluster.patterns for pod in p.pods]
    assert pods
    for p, pod in pods:
        assert 0 <= pod.first < pod.last <= TOTAL
        for c in p.containers:
            assert pod.cpu[c].size == pod.memory[c].size == pod.last - pod.first
            assert np.all(pod.cpu[c] >= 0) and np.all(pod.memory[c] > 0)


def test_history_and_evaluation_split_at_t(cluster: Cluster) -> None:
    p = next(p for p in cluster.patterns if p.name == "steady")
    _, cpu_h, _ = history(p, "app")
    _, cpu_e, _ = evaluation(p, "app")
    assert [c.size for c in cpu_h] == [HISTORY]
    assert [c.size for c in cpu_e] == [TOTAL - HISTORY]
    assert np.array_equal(np.concatenate(cpu_h + cpu_e), p.pods[0].cpu["app"])


def test_rollout_down_replaces_the_old_replicaset_with_lower_use(cluster: Cluster) -> None:
    p = next(p for p in cluster.patterns if p.name == "rollout-down")
    old = [pod for pod in p.pods if pod.owner_name == p.replicasets[0]]
    new = [pod for pod in p.pods if pod.owner_name == p.replicasets[1]]
    assert len(old) == len(new) == 2
    assert all(pod.last == new[0].first < HISTORY for pod in old)
    assert np.mean(new[0].cpu["app"]) < 0.3 * np.mean(old[0].cpu["app"])
    pods, _, _ = evaluation(p, "app")
    assert pods == new


def test_oom_pattern_is_killed_at_its_limit_in_history(cluster: Cluster) -> None:
    p = next(p for p in cluster.patterns if p.name == "oom")
    pod = p.pods[0]
    limit = pod.limits["app"]["memory"]
    assert pod.ooms
    assert all(m < HISTORY and pod.memory["app"][m] == limit for _, m in pod.ooms)
    assert pod.memory["app"][:HISTORY].max() <= limit < pod.memory["app"][HISTORY:].max()


def test_batch_worker_bursts_twenty_minutes_every_four_hours(cluster: Cluster) -> None:
    p = next(p for p in cluster.patterns if p.name == "batch")
    busy = p.pods[0].cpu["worker"] > 0.5
    assert busy.sum() == pytest.approx(TOTAL / 240 * 20, abs=20)
    assert np.median(p.pods[0].cpu["worker"]) < 0.05


def test_hpa_replica_count_varies(cluster: Cluster) -> None:
    p = next(p for p in cluster.patterns if p.name == "hpa-web")
    alive = np.zeros(TOTAL)
    for pod in p.pods:
        alive[pod.first : pod.last] += 1
    assert alive.min() >= 2 and alive.max() <= 8 and alive.max() - alive.min() >= 3
    assert p.hpa is not None and p.hpa.cpu_target == 0.7


def test_gpu_patterns_carry_gpu_series_over_the_whole_span(cluster: Cluster) -> None:
    gpus = {p.name: p.gpus for p in cluster.patterns if p.gpus}
    assert set(gpus) == {"gpu-train", "gpu-infer", "gpu-idle"}
    sm = {name: float(np.mean(g[0].sm_active)) for name, g in gpus.items()}
    assert sm["gpu-train"] > 0.8 > sm["gpu-infer"] > 0.1 > 0.02 > sm["gpu-idle"]
    assert all(g[0].sm_active.size == TOTAL == 9 * MINUTES_PER_DAY for g in gpus.values())
