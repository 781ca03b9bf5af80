"""Damping across passes (updater.damping): a Recommendation that reverses or flaps is not followed pass
after pass; a first recommendation and a genuine change still are, once."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.api import WorkloadRef
from podsizer.podspec import Change
from tests.support.hypo import examples
from tests.unit.updater.builders import NOW, WEB
from tests.unit.updater.sim import PASS_INTERVAL, Resources, SimCluster, created, simple_rec
from tests.unit.updater.test_convergence import resources
from updater.damping import MAX_SEEN, OSCILLATING, SETTLING, Damper, History, Settling, Target

HOUR = timedelta(hours=1)
TEMPLATE = {"requests": {"cpu": "100m", "memory": "128Mi"}}
BIG = simple_rec({"cpu": "1000m", "memory": "1Gi"})
SMALL = simple_rec({"cpu": "25m", "memory": "32Mi"})
SETTLE = Settling(HOUR, 0.10)


def _cpu(value: str) -> Target:
    return Target(((("main", "requests", "cpu"), Decimal(value)),))


def _history(*values: tuple[timedelta, str]) -> History:
    history = History()
    for after, value in values:
        history = history.observe(_cpu(value), NOW + after, SETTLE)
    return history


def _reasons(sim: SimCluster) -> Counter[str]:
    return Counter(reason for _, _, reason in sim.decisions)


# ---- what reverses, what is only a change ----------------------------------------------------------------


def test_a_value_that_went_up_and_came_back_is_oscillating_with_its_values_and_times() -> None:
    minutes = timedelta(minutes=15)
    history = _history((0 * minutes, "1"), (1 * minutes, "0.025"), (2 * minutes, "1"))
    held = history.hold(_cpu("1"), NOW + 2 * minutes, SETTLE)
    assert held is not None
    reason, detail = held
    assert reason == OSCILLATING
    assert "main requests.cpu 1000m -> 25m -> 1000m" in detail
    assert "2026-12-03 03:00" in detail and "2026-12-03 03:30" in detail  # when each was seen


def test_a_move_that_stops_short_of_where_it_was_is_not_a_reversal() -> None:
    """100m -> 200m -> 150m: down again, but not back to 100m: a change, not an oscillation; 100m then is."""
    history = _history((timedelta(0), "0.1"), (timedelta(minutes=10), "0.2"), (timedelta(minutes=20), "0.15"))
    assert history.hold(_cpu("0.15"), NOW + timedelta(minutes=20), SETTLE) is None
    history = history.observe(_cpu("0.1"), NOW + timedelta(minutes=30), SETTLE)
    held = history.hold(_cpu("0.1"), NOW + timedelta(minutes=30), SETTLE)
    assert held is not None and held[0] == OSCILLATING


def test_a_reversal_older_than_the_settling_period_no_longer_holds() -> None:
    history = _history((timedelta(0), "1"), (timedelta(minutes=10), "0.025"), (timedelta(minutes=20), "1"))
    later = NOW + timedelta(minutes=20) + HOUR
    assert history.hold(_cpu("1"), later, SETTLE) is None
    assert history.observe(_cpu("1"), later, SETTLE).seen[-1].target == _cpu("1")


def test_changes_within_the_threshold_are_not_targets() -> None:
    history = _history((timedelta(0), "1"), (timedelta(minutes=1), "1.05"), (timedelta(minutes=2), "0.97"))
    assert [s.target for s in history.seen] == [_cpu("1")]


def test_another_value_acted_on_within_the_period_waits_and_then_is_followed() -> None:
    """A genuine growth right after an action: settling until the period since that action is over."""
    history = _history((timedelta(0), "1")).act(_cpu("1"), NOW)
    history = history.observe(_cpu("4"), NOW + timedelta(minutes=5), SETTLE)
    held = history.hold(_cpu("4"), NOW + timedelta(minutes=5), SETTLE)
    assert held is not None and held[0] == SETTLING
    assert "1000m acted on at 2026-12-03 03:00" in held[1] and "not before 2026-12-03 04:00" in held[1]
    assert history.hold(_cpu("4"), NOW + HOUR, SETTLE) is None
    assert history.hold(_cpu("1"), NOW + timedelta(minutes=5), SETTLE) is None  # the same target: on


def test_no_settling_period_damps_nothing() -> None:
    off = Settling(timedelta(0), 0.10)
    damper = Damper(off)
    damper.observe(WEB, BIG, NOW)
    damper.observe(WEB, SMALL, NOW + timedelta(minutes=1))
    assert damper.hold(WEB, BIG, _changes(), NOW + timedelta(minutes=2)) is None


def _changes() -> tuple[Change, ...]:
    return (Change("containers", 0, "main", "requests", "cpu", "100m", "400m"),)


def test_memory_is_bounded_per_workload_and_in_workloads() -> None:
    history = History()
    for i in range(3 * MAX_SEEN):
        history = history.observe(_cpu("1" if i % 2 else "2"), NOW + timedelta(seconds=i), SETTLE)
    assert len(history.seen) == MAX_SEEN
    damper = Damper(SETTLE, keep=2)
    others = [WorkloadRef("shop", "Deployment", f"w{i}") for i in range(3)]
    for when, ref in enumerate(others):
        damper.observe(ref, BIG, NOW + timedelta(seconds=when))
        damper.acted(ref, BIG, _changes(), NOW + timedelta(seconds=when))
    later = NOW + timedelta(minutes=1)
    assert damper.hold(others[0], SMALL, _changes(), later) is None  # forgotten: a first target again
    assert damper.hold(others[2], SMALL, _changes(), later) is not None


# ---- the updater over passes (tests/unit/updater/sim.py) --------------------------------------------------


def _alternating(sim: SimCluster, passes: int, every: timedelta = PASS_INTERVAL) -> None:
    for i in range(passes):
        sim.recommend(SMALL if i % 2 else BIG)
        sim.passes(1, every)


def test_an_alternating_recommendation_is_followed_once_not_every_pass() -> None:
    """1000m/1Gi <-> 25m/32Mi every pass (15 min) for 10 passes: each pod is evicted once, to the first
    target, then the workload is held as oscillating (the probe saw 7 evictions of one pod in 8 passes)."""
    sim = created(SimCluster(TEMPLATE, BIG, "recreate"), 2, [TEMPLATE])
    _alternating(sim, 10)
    assert Counter(a.kind for a in sim.timeline) == {"evicted": 2}
    assert {a.at for a in sim.timeline} == {NOW + PASS_INTERVAL}
    later = {reason for at, _, reason in sim.decisions if at >= NOW + 3 * PASS_INTERVAL}
    assert later == {OSCILLATING}  # one reason while it flaps (at its target or not): one Event per pod
    held = [m for pod, reason, m in sim.events if pod in sim.pods and "target-oscillating" in m]
    assert len(held) == 2  # once per pod, not every pass
    assert "main requests.cpu 1000m -> 25m -> 1000m (seen 2026-12-03 03:15 UTC, 2026-12-03 03:30" in held[0]
    assert "held until the target holds for 3h" in held[0]


def test_in_place_an_alternating_recommendation_is_resized_once() -> None:
    sim = created(SimCluster(TEMPLATE, BIG, "in-place-or-recreate"), 1, [TEMPLATE])
    _alternating(sim, 12)
    assert [a.kind for a in sim.timeline] == ["resized"]


def test_a_target_that_holds_after_flapping_is_followed_once_a_settling_period_later() -> None:
    sim = created(SimCluster(TEMPLATE, BIG, "recreate", settling_seconds=HOUR.total_seconds()), 2, [TEMPLATE])
    _alternating(sim, 6)
    flapped = len(sim.timeline)
    sim.recommend(SMALL)
    sim.passes(8)  # two hours at 25m/32Mi
    followed = sim.timeline[flapped:]
    assert len(followed) == 2 and all(a.rec is SMALL for a in followed)
    assert min(a.at for a in followed) - max(a.at for a in sim.timeline[:flapped]) >= HOUR
    assert sim.passes(4)[len(sim.timeline) :] == []


def test_a_first_recommendation_and_a_growth_after_the_period_are_followed_at_once() -> None:
    sim = created(SimCluster(TEMPLATE, simple_rec({"cpu": "200m", "memory": "128Mi"}), "in-place-or-recreate",
                             settling_seconds=HOUR.total_seconds()), 1, [TEMPLATE])  # fmt: skip
    sim.passes(1)
    assert [a.at for a in sim.timeline] == [NOW + PASS_INTERVAL]  # the first pass
    sim.passes(4)  # an hour: nothing to do
    sim.recommend(simple_rec({"cpu": "400m", "memory": "128Mi"}))
    sim.passes(1)
    assert [a.at for a in sim.timeline] == [NOW + PASS_INTERVAL, NOW + 6 * PASS_INTERVAL]
    assert OSCILLATING not in _reasons(sim) and SETTLING not in _reasons(sim)


def test_in_dry_run_the_oscillating_workload_is_recorded_as_held() -> None:
    sim = created(SimCluster(TEMPLATE, BIG, "recreate", dry_run=True), 2, [TEMPLATE])
    _alternating(sim, 8)
    assert len(sim.timeline) == 2 and sim.actions == []  # would evict each pod once; nothing done
    labels = {"action": "skipped", "reason": OSCILLATING, "dry_run": "true"}
    assert (sim.registry.get_sample_value("podsizer_updater_actions_total", labels) or 0) >= 1


# ---- the property: any recommendations at any pass times -------------------------------------------------

CPUS = ("25m", "100m", "400m", "1000m", "4000m")  # each more than the threshold from the next
MEMORIES = ("32Mi", "128Mi", "512Mi", "1Gi")
GAP = st.integers(min_value=1, max_value=240).map(lambda m: timedelta(minutes=m))


def _monotone(values: list[int]) -> bool:
    pairs = list(itertools.pairwise(values))
    return all(a <= b for a, b in pairs) or all(a >= b for a, b in pairs)


@settings(max_examples=examples(300), deadline=None)
@given(
    template=resources(),
    steps=st.lists(
        st.tuples(st.integers(0, len(CPUS) - 1), st.integers(0, len(MEMORIES) - 1), GAP),
        min_size=1,
        max_size=12,
    ),
    replicas=st.integers(min_value=1, max_value=3),
    admitted=st.booleans(),
    mode=st.sampled_from(["recreate", "in-place-or-recreate"]),
    webhook=st.booleans(),
)
def test_any_recommendations_at_any_times_move_a_value_at_most_once_per_settling_period(
    template: Resources,
    steps: list[tuple[int, int, timedelta]],
    replicas: int,
    admitted: bool,
    mode: str,
    webhook: bool,
) -> None:
    """Actions within a settling period of each other (resizes and evictions, on any pods of the
    workload) follow the same value of every resource they both change; a sequence that then holds is
    followed (its last passes hold nothing and do nothing); a monotone sequence is never oscillating."""
    recs = [simple_rec({"cpu": CPUS[c], "memory": MEMORIES[m]}) for c, m, _ in steps]
    sim = SimCluster(template, recs[0], mode, webhook=webhook, settling_seconds=HOUR.total_seconds())
    created(sim, replicas, None if admitted else [template])
    for rec, (_, _, gap) in zip(recs, steps, strict=True):
        sim.recommend(rec)
        sim.passes(1, gap)
    for a in sim.timeline:
        for b in sim.timeline:
            if timedelta(0) < b.at - a.at < HOUR:
                for container, resource in a.touched & b.touched:
                    wanted = [x.rec.container(container).requests[resource] for x in (a, b)]  # type: ignore[union-attr]
                    assert wanted[0] == wanted[1], (a, b)
    sim.passes(8)  # the last recommendation holds for two hours
    tail = [reason for at, _, reason in sim.decisions if at > sim.now - 2 * PASS_INTERVAL]
    assert not {OSCILLATING, SETTLING} & set(tail), tail
    assert [a for a in sim.timeline if a.at > sim.now - 2 * PASS_INTERVAL] == []
    if _monotone([c for c, _, _ in steps]) and _monotone([m for _, m, _ in steps]):
        assert OSCILLATING not in _reasons(sim)
