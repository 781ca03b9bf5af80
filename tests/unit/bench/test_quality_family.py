"""The randomised trace family (bench/quality/family.py) and its runner's pieces: deterministic per seed,
every family drawn and doing what it says, one namespace per seed, the regression rule's verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from bench.quality import family
from bench.quality.family_run import (
    BALANCED,
    DEFAULT,
    KRR99,
    VPA,
    cpu_table,
    rule_breaks,
    settings_of,
    split_by_namespace,
)
from bench.quality.score import Total
from bench.quality.traces import HISTORY, MINUTES_PER_DAY, TOTAL, Cluster, Pattern


@pytest.fixture(scope="module")
def seeds() -> dict[int, Cluster]:
    return {s: family.generate(s, 100) for s in (2001, 2002, 2003)}


@pytest.fixture(scope="module")
def seed(seeds: dict[int, Cluster]) -> Cluster:
    return seeds[2001]


def _arrays(c: Cluster) -> list[np.ndarray]:
    return [
        a
        for p in c.patterns
        for pod in p.pods
        for name in p.containers
        for a in (pod.cpu[name], pod.memory[name])
    ]


def _of(c: Cluster, name: str) -> list[Pattern]:
    return [p for p in c.patterns if family.family_of(p.name) == name]


def _load(p: Pattern) -> np.ndarray:
    """The workload's CPU per minute summed over its live pods (main container)."""
    out = np.zeros(TOTAL)
    for pod in p.pods:
        out[pod.first : pod.last] += pod.cpu["app"]
    return out


def test_the_same_seed_gives_the_same_workloads_and_another_seed_others(seeds: dict[int, Cluster]) -> None:
    again = family.generate(2001, 100)
    assert [p.name for p in again.patterns] == [p.name for p in seeds[2001].patterns]
    assert all(np.array_equal(a, b) for a, b in zip(_arrays(again), _arrays(seeds[2001]), strict=True))
    assert [p.name for p in seeds[2002].patterns] != [p.name for p in seeds[2001].patterns]


def test_a_seed_is_one_namespace_of_uniquely_named_workloads(seed: Cluster) -> None:
    assert {p.namespace for p in seed.patterns} == {"family-2001"}
    assert len({p.name for p in seed.patterns}) == len(seed.patterns) == 100
    assert {family.family_of(p.name) for p in seed.patterns} <= set(family.FAMILIES)


def test_every_family_is_drawn_over_a_few_seeds(seeds: dict[int, Cluster]) -> None:
    drawn = {family.family_of(p.name) for c in seeds.values() for p in c.patterns}
    assert drawn == set(family.FAMILIES)


def test_every_pod_has_usage_of_every_container_within_the_nine_days(seed: Cluster) -> None:
    for p in seed.patterns:
        assert p.pods
        for pod in p.pods:
            assert 0 <= pod.first < pod.last <= TOTAL
            for c in p.containers:
                assert pod.cpu[c].size == pod.memory[c].size == pod.last - pod.first
                assert np.all(pod.cpu[c] >= 0) and np.all(pod.memory[c] > 0)


def test_heavy_day_workloads_have_weekdays_busier_than_the_rest(seeds: dict[int, Cluster]) -> None:
    heavy = [p for c in seeds.values() for p in _of(c, "heavy-day")]
    assert heavy
    for p in heavy:
        by_day = _load(p)[: 7 * MINUTES_PER_DAY].reshape(7, MINUTES_PER_DAY).mean(axis=1)
        assert by_day.max() > 1.3 * np.median(by_day)  # one or two days at 1.5..4 x


def test_step_and_rollout_workloads_change_level_and_stay(seeds: dict[int, Cluster]) -> None:
    downs = [p for c in seeds.values() for name in ("step-down", "rollout-down") for p in _of(c, name)]
    assert downs
    for p in downs:
        load = _load(p)
        assert load[HISTORY:].mean() < 0.9 * load[:MINUTES_PER_DAY].mean()
    rollouts = [p for c in seeds.values() for name in ("rollout-up", "rollout-down") for p in _of(c, name)]
    assert rollouts and all(len(p.replicasets) == 2 for p in rollouts)  # a new ReplicaSet


def test_oom_workloads_were_killed_at_their_limit_in_history(seeds: dict[int, Cluster]) -> None:
    ooms = [p for c in seeds.values() for p in _of(c, "oom")]
    killed = [p for p in ooms if p.pods[0].ooms]
    assert killed
    for p in killed:
        pod = p.pods[0]
        limit = pod.limits["app"]["memory"]
        assert all(m < HISTORY and pod.memory["app"][m] == limit for _, m in pod.ooms)


def test_hpa_workloads_carry_an_hpa_and_vary_their_replicas(seed: Cluster) -> None:
    hpas = _of(seed, "hpa")
    assert hpas
    for p in hpas:
        assert p.hpa is not None and 0.5 <= p.hpa.cpu_target <= 0.8
        alive = np.zeros(TOTAL)
        for pod in p.pods:
            alive[pod.first : pod.last] += 1
        assert alive.min() >= 2 and alive.max() > alive.min()


def test_heavy_monday_is_three_times_busier_on_mondays() -> None:
    p = family.heavy_monday()
    cpu = p.pods[0].cpu["app"]
    days = cpu.reshape(9, MINUTES_PER_DAY).mean(axis=1)  # minute 0 and T are Mondays: days 0 and 7
    assert days[0] == pytest.approx(3 * np.mean(days[1:7]), rel=0.05)
    assert days[7] == pytest.approx(days[0], rel=0.05)


def _t(pooled: float, memory_over: int = 0) -> Total:
    return Total(1, pooled, pooled, int(memory_over > 0), memory_over, 1.0, 1.0, 0.0, 0.0)


def test_the_rule_breaks_only_where_the_default_is_unsafe_and_krr_p99_safe() -> None:
    per_family = {
        "ok": {DEFAULT: _t(0.010), KRR99: _t(0.010)},
        "both unsafe": {DEFAULT: _t(0.050), KRR99: _t(0.030)},
        "worse": {DEFAULT: _t(0.016), KRR99: _t(0.010)},
        "oom": {DEFAULT: _t(0.0, memory_over=3), KRR99: _t(0.0)},
    }
    assert rule_breaks(per_family) == ["worse", "oom"]


def test_a_recommend_document_splits_by_namespace() -> None:
    doc = {"items": [{"metadata": {"namespace": n}, "i": i} for i, n in enumerate(["a", "b", "a"])]}
    split = split_by_namespace(doc)
    assert {k: [x["i"] for x in v["items"]] for k, v in split.items()} == {"a": [0, 2], "b": [1]}


def test_recommend_arguments_read_as_settings() -> None:
    assert settings_of(("--profile", "balanced", "--cpu-margin", "0.05", "--no-cpu-burst-path")) == {
        "profile": "balanced",
        "cpu_margin": "0.05",
        "cpu_burst_path": False,
    }


def _cpu(cores: float, containers: int = 1) -> Total:
    return Total(containers, 0.0, 0.0, 0, 0, cores, 1.0, 0.0, 0.0)


def test_the_cpu_table_gives_each_familys_cores_the_pairs_gaps_and_the_sum() -> None:
    per_family = {
        "steady": {DEFAULT: _cpu(11.5, 2), KRR99: _cpu(10.0, 2), BALANCED: _cpu(9.0, 2), VPA: _cpu(9.5, 2)},
        "heavy-day": {DEFAULT: _cpu(4.0), KRR99: _cpu(3.0), BALANCED: _cpu(3.5), VPA: _cpu(2.0)},
    }
    rows = [line.split(" | ") for line in cpu_table(per_family, [DEFAULT, BALANCED, VPA, KRR99]).splitlines()]
    assert rows[0][-2:] == [f"{DEFAULT} - {KRR99}", f"{BALANCED} - {VPA} |"]
    by_family = {r[0].strip("| *"): r[1:] for r in rows[2:]}
    assert by_family["steady"] == ["2", "11.5", "9.0", "9.5", "10.0", "+1.5", "-0.5 |"]
    assert by_family["heavy-day"] == ["1", "4.0", "3.5", "2.0", "3.0", "+1.0", "+1.5 |"]
    assert by_family["all"] == ["3", "15.5", "12.5", "11.5", "13.0", "+2.5", "+1.0 |"]
