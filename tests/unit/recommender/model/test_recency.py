"""Recency (recommender.model.recency): age decay, weighted percentiles, the replaced-template rule, and
aggregate() applying them (the rollout that cut use from ~1 core to 245m)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.sizing_policy import SizingPolicy
from recommender.model.aggregate import aggregate
from recommender.model.histogram import CPU_BUCKETS
from recommender.model.raw import ContainerSamples, OomKill, OwnerLink, PodInfo, RawDataset
from recommender.model.recency import (
    DAY_S,
    OFF,
    PodSpan,
    Recency,
    template_of,
    template_weights,
    weighted_quantiles,
)
from recommender.sizing.static import size_static
from tests.support.hypo import examples

END = datetime(2026, 11, 2, tzinfo=UTC)
START = END - timedelta(days=7)
STEP = 60.0
MIB = 2.0**20


# ---- age decay ----------------------------------------------------------------------------------


def test_a_sample_one_half_life_old_weighs_half() -> None:
    w = Recency(half_life_s=3600.0).age_weights(np.array([0.0, 3600.0, 7200.0]), newest=7200.0)
    assert w.tolist() == [0.25, 0.5, 1.0]


def test_half_life_zero_or_off_weighs_every_sample_alike() -> None:
    ts = np.array([0.0, 1e6, 2e6])
    assert Recency(half_life_s=0.0).age_weights(ts, 2e6).tolist() == [1.0, 1.0, 1.0]
    assert OFF.age_weights(ts, 2e6).tolist() == [1.0, 1.0, 1.0]
    assert not OFF.decays and Recency().decays


def test_a_negative_half_life_is_rejected() -> None:
    with pytest.raises(ValueError, match="half_life_s"):
        Recency(half_life_s=-1.0)


# ---- weighted percentiles -----------------------------------------------------------------------


def test_equal_weights_give_the_midpoint_percentiles() -> None:
    m = np.array([[4.0, 1.0, 3.0, 2.0]])  # sorted 1..4 at cumulative-weight midpoints .125 .375 .625 .875
    q = weighted_quantiles(m, np.ones_like(m), [0.125, 0.5, 0.875, 0.99, 0.01])
    assert q[:, 0].tolist() == [1.0, 2.5, 4.0, 4.0, 1.0]


def test_heavier_samples_pull_the_percentile() -> None:
    m = np.array([[1.0, 10.0]])
    light_old, heavy_new = weighted_quantiles(m, np.array([[1.0, 9.0]]), [0.5]), np.array([[9.0, 1.0]])
    assert light_old[0, 0] > 5.5  # the heavy 10 dominates
    assert weighted_quantiles(m, heavy_new, [0.5])[0, 0] < 5.5


def test_rows_are_independent_and_one_sample_is_every_percentile() -> None:
    m = np.array([[1.0, 2.0, 3.0], [7.0, 7.0, 7.0]])
    q = weighted_quantiles(m, np.array([[1.0, 1.0, 1.0], [0.1, 5.0, 1.0]]), [0.5])
    assert q[0].tolist() == [2.0, 7.0]  # one column per row
    assert weighted_quantiles(np.array([[5.0]]), np.array([[0.3]]), [0.01, 0.99])[:, 0].tolist() == [5.0, 5.0]


@settings(max_examples=examples(400))
@given(
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40),
    st.lists(st.floats(1e-3, 1e3), min_size=40, max_size=40),
    st.floats(0.0, 1.0),
)
def test_a_weighted_percentile_lies_within_the_samples_and_grows_with_q(
    values: list[float], weights: list[float], q: float
) -> None:
    m = np.array([values])
    w = np.array([weights[: len(values)]])
    lo, mid, hi = weighted_quantiles(m, w, [0.0, q, 1.0])[:, 0]
    assert min(values) == lo <= mid <= hi == max(values)


def test_the_weighted_percentile_is_the_scaled_weights_one() -> None:
    rng = np.random.default_rng(3)
    m, w = rng.random((2, 500)), rng.random((2, 500)) + 0.01
    np.testing.assert_allclose(weighted_quantiles(m, w, [0.9]), weighted_quantiles(m, 1e-200 * w, [0.9]))


# ---- template rule ------------------------------------------------------------------------------


def test_only_replicaset_and_rc_owners_name_a_template() -> None:
    assert template_of("ReplicaSet", "web-5f8b") == "web-5f8b"
    assert template_of("ReplicationController", "billing-7") == "billing-7"
    assert template_of("StatefulSet", "db") is None
    assert template_of("Job", "report-1") is None


def test_a_replaced_template_is_left_out_once_the_current_has_a_day() -> None:
    old, new = PodSpan("web-old", 0.0, 5.5 * DAY_S), PodSpan("web-new", 5.5 * DAY_S, 7 * DAY_S)
    assert template_weights([old, old, new, new], Recency()) == [0.0, 0.0, 1.0, 1.0]


def test_a_replaced_template_fades_while_the_current_is_young() -> None:
    old, new = PodSpan("web-old", 0.0, 6.75 * DAY_S), PodSpan("web-new", 6.75 * DAY_S, 7 * DAY_S)
    assert template_weights([old, new], Recency()) == [pytest.approx(0.75), 1.0]


def test_templates_alive_at_the_end_keep_their_weight() -> None:
    stable, canary = PodSpan("web-stable", 0.0, 7 * DAY_S), PodSpan("web-canary", 0.0, 7 * DAY_S - 600)
    assert template_weights([stable, stable, canary], Recency()) == [1.0, 1.0, 1.0]
    # a rollback: the old template's pods run again at the end
    first, back = PodSpan("web-old", 0, 3 * DAY_S), PodSpan("web-old", 6 * DAY_S, 7 * DAY_S)
    new = PodSpan("web-new", 3 * DAY_S, 6 * DAY_S)
    assert template_weights([first, back, new], Recency()) == [1.0, 1.0, 0.0]


def test_pods_without_a_template_are_never_weighed_down() -> None:
    spans = [PodSpan(None, 0.0, DAY_S), PodSpan(None, 2 * DAY_S, 7 * DAY_S)]
    assert template_weights(spans, Recency()) == [1.0, 1.0]


# ---- aggregate: the rollout that cut use from ~1 core to 245m -----------------------------------


def _pod(name: str, rs: str, lo: float, hi: float, cpu: float, mib: float) -> ContainerSamples:
    ts = np.arange(START.timestamp() + lo, START.timestamp() + hi, STEP)
    wiggle = 1 + 0.05 * np.sin(np.arange(ts.size))
    return ContainerSamples("shop", name, "app", ts, cpu * wiggle, mib * MIB * wiggle)


def _rollout(at_day: float, ooms: tuple[OomKill, ...] = ()) -> RawDataset:
    at = at_day * DAY_S
    pods = [
        ("web-old-1", "web-old", 0.0, at, 1.0, 900.0),
        ("web-old-2", "web-old", 0.0, at, 1.0, 900.0),
        ("web-new-1", "web-new", at, 7 * DAY_S, 0.245, 420.0),
        ("web-new-2", "web-new", at, 7 * DAY_S, 0.245, 420.0),
    ]
    return RawDataset(
        START,
        END,
        tuple(PodInfo("shop", p, "n1", "ReplicaSet", rs) for p, rs, *_ in pods),
        tuple(OwnerLink("shop", "ReplicaSet", rs, "Deployment", "web") for rs in ("web-old", "web-new")),
        tuple(_pod(*p) for p in pods),
        ooms=ooms,
    )


def test_after_a_rollout_the_replaced_replicaset_no_longer_counts() -> None:
    kill = OomKill("shop", "web-old-1", "app", START + timedelta(days=1), 950 * MIB)
    (usage,) = aggregate(_rollout(5.5, (kill,)), source="t").containers
    assert usage.cpu_cores.p99 < 0.27 and usage.cpu_cores.max < 0.27  # the new template's ~245m only
    assert usage.memory_bytes.max < 450 * MIB  # the old 900 MiB peak is gone with its template
    assert usage.oom_kill_memory_bytes is None  # and so is the old template's OOM kill
    assert usage.pods == 4 and usage.first_seen == START  # history facts count every pod
    assert usage.recency_note == "replaced template web-old left out (2 pod series; the running one has 36 h)"


def test_the_reason_says_the_replaced_template_was_left_out() -> None:
    (usage,) = aggregate(_rollout(5.5), source="t").containers
    sized = size_static(usage, SizingPolicy())
    assert "replaced template web-old left out (2 pod series; the running one has 36 h)" in sized.reason
    assert sized.requests["cpu"] < 0.35  # sized from the running template's ~245m


def test_without_the_rule_the_old_replicaset_dominates() -> None:
    (usage,) = aggregate(_rollout(5.5), source="t", recency=Recency(template_full_history_s=1e12)).containers
    assert usage.cpu_cores.max > 1.0  # the replaced pods still count (weight ~1) in the peak


def test_a_fresh_rollout_keeps_the_old_template_at_a_weight() -> None:
    (usage,) = aggregate(_rollout(6.9), source="t", recency=OFF).containers
    assert usage.cpu_cores.max > 1.0  # 2.4 h of the new template: the old one still counts
    assert usage.cpu_cores.p50 > 0.9  # by a weight of 0.9 per sample against 2.4 h of 245m
    note = "replaced template web-old weighed x0.90 (the running one has 2.4 h of history)"
    assert usage.recency_note == note


def test_decay_moves_the_percentiles_towards_recent_use() -> None:
    ts = np.arange(START.timestamp(), END.timestamp(), STEP)
    rising = np.where(ts < START.timestamp() + 5 * DAY_S, 0.2, 0.6)  # the last 2 days at 600m
    sample = ContainerSamples("shop", "db-0", "pg", ts, rising, np.full(ts.size, 100 * MIB))
    raw = RawDataset(START, END, (PodInfo("shop", "db-0", "n1", "StatefulSet", "db"),), (), (sample,))
    (flat,) = aggregate(raw, source="t", recency=OFF).containers
    (decayed,) = aggregate(raw, source="t").containers
    assert flat.cpu_cores.p50 == pytest.approx(0.2, abs=CPU_BUCKETS.resolution(0.2))  # 5 of 7 days at 200m
    # the last 2 days weigh 3/4 of the window
    assert decayed.cpu_cores.p50 == pytest.approx(0.6, abs=CPU_BUCKETS.resolution(0.6))
    assert decayed.cpu_cores.max == flat.cpu_cores.max
