"""One change budget per workload: over many passes the updater acts on each pod at most once and stops, for
any template, Recommendation and running pods; the two cases that once did not converge are named tests."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.api.quantity import format_cpu, format_memory
from podsizer.keys import APPLIED_KEY
from podsizer.podspec import quantity
from tests.support.hypo import examples
from tests.unit.updater.sim import Resources, SimCluster, created, simple_rec

MIB = 2**20


def _main(sim: SimCluster) -> list[tuple[str | None, str | None]]:
    return [(r["requests"].get("cpu"), r["requests"].get("memory")) for r in map(sim.main, sorted(sim.pods))]


def test_recreate_100m_128mi_to_1000m_1gi_evicts_each_pod_once_not_forever() -> None:
    """Template 100m/128Mi, recommendation 1000m/1Gi: pods from before podsizer are evicted once each and
    come back at 400m/512Mi (4x), which is what admission gives: never evicted again."""
    template = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    sim = created(SimCluster(template, simple_rec({"cpu": "1000m", "memory": "1Gi"})), 2, [template])
    actions = sim.passes(12)
    assert Counter(kind for kind, _ in actions) == {"evicted": 2}
    assert len({name for _, name in actions}) == 2  # each pod once
    assert _main(sim) == [("400m", "512Mi"), ("400m", "512Mi")]


def test_pods_admitted_at_4x_are_already_at_their_target() -> None:
    template = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    sim = created(SimCluster(template, simple_rec({"cpu": "1000m", "memory": "1Gi"})), 3)
    assert _main(sim) == [("400m", "512Mi")] * 3
    assert sim.passes(12) == []


def test_in_place_raises_a_running_pod_once_not_4_16_64_256_cores() -> None:
    """in-place-or-recreate, template 4 cores/4Gi, an absurd recommendation: one resize to 16 cores/16Gi,
    then nothing (not 4 -> 16 -> 64 -> 256 cores and 4Gi -> 4Ti pass after pass)."""
    template = {"requests": {"cpu": "4", "memory": "4Gi"}}
    rec = simple_rec({"cpu": "1000", "memory": "16Ti"})
    sim = created(SimCluster(template, rec, "in-place-or-recreate"), 2, [template])
    actions = sim.passes(8)
    assert Counter(kind for kind, _ in actions) == {"resized": 2}
    assert len({name for _, name in actions}) == 2
    assert _main(sim) == [("16000m", "16384Mi")] * 2


def test_a_pod_resized_in_place_keeps_its_target_when_the_recommendation_moves() -> None:
    template = {"requests": {"cpu": "1", "memory": "1Gi"}}
    sim = created(SimCluster(template, simple_rec({"cpu": "8", "memory": "8Gi"}), "in-place-or-recreate"), 2,
                  [template])  # fmt: skip
    sim.passes(3)
    sim.recommend(simple_rec({"cpu": "16", "memory": "16Gi"}))  # still beyond 4x of the template
    before = len(sim.actions)
    assert sim.passes(6)[before:] == []
    assert _main(sim) == [("4000m", "4096Mi")] * 2


def test_a_pod_that_would_come_back_the_same_is_not_evicted() -> None:
    """A pod admitted from an older template (100m, 4x: 400m, its record says so) whose workload's template
    is now 1600m (a StatefulSet with OnDelete keeps the pod): from its record the target is 300m, but a
    replacement would be admitted at 400m (1600m / 4), what it runs with: no eviction."""
    record = {"recommendation": "deployment-web", "changes": [
        {"container": "main", "containerType": "containers", "field": "requests", "resource": "cpu",
         "from": "100m", "to": "400m"}]}  # fmt: skip
    sim = SimCluster({"requests": {"cpu": "1600m", "memory": "128Mi"}},
                     simple_rec({"cpu": "300m", "memory": "128Mi"}))  # fmt: skip
    for _ in range(2):
        pod = sim.template_pod()
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "400m", "memory": "128Mi"}}
        pod["metadata"].setdefault("annotations", {})[APPLIED_KEY] = json.dumps(record)
        sim.run(pod)
    assert sim.passes(6) == []
    assert _main(sim) == [("400m", "128Mi")] * 2


def test_replacements_the_webhook_did_not_size_are_not_evicted_again() -> None:
    """The webhook down (failurePolicy Ignore): each pod from before is evicted once; its replacement
    comes back at the template, without a record, and evicting it again would bring it back the same."""
    template = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    sim = created(SimCluster(template, simple_rec({"cpu": "1000m", "memory": "1Gi"}), webhook=False), 2)
    before = set(sim.pods)
    actions = sim.passes(12)
    assert Counter(kind for kind, _ in actions) == {"evicted": 2}
    assert {name for _, name in actions} == before  # the two from before, once each; no replacement
    assert _main(sim) == [("100m", "128Mi")] * 2


def _forge(sim: SimCluster, cpu_from: str | None = None) -> None:
    """The pods' owner rewrites each pod's podsizer.io/applied: cpu `from` the given value (None: the pod's
    own value now), as anyone who may patch the pod can."""
    for pod in sim.pods.values():
        own = sim.main(pod["metadata"]["name"])["requests"]["cpu"]
        record = {"recommendation": "deployment-web", "changes": [
            {"container": "main", "containerType": "containers", "field": "requests", "resource": "cpu",
             "from": cpu_from or own, "to": own}]}  # fmt: skip
        pod["metadata"].setdefault("annotations", {})[APPLIED_KEY] = json.dumps(record)


def test_a_forged_record_on_running_pods_does_not_widen_the_budget() -> None:
    """in-place-or-recreate, pods admitted at 400m (100m x 4, the recommendation 64 cores) whose record the
    owner rewrites to `from: 16` cores: nothing changes (not a resize to 64 cores measured from 16)."""
    template = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    rec = simple_rec({"cpu": "64", "memory": "128Mi"})
    sim = created(SimCluster(template, rec, "in-place-or-recreate"), 2)
    _forge(sim, "16")
    assert sim.passes(4) == []
    assert _main(sim) == [("400m", "128Mi")] * 2


def test_a_record_rewritten_every_pass_to_the_pods_own_value_does_not_ratchet() -> None:
    """in-place-or-recreate, template 100m, recommendation 64 cores: each pass the owner writes the pod's
    current cpu as its original; the pods stay at 400m (not 400m -> 1600m -> 6400m in place)."""
    template = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    sim = created(SimCluster(template, simple_rec({"cpu": "64", "memory": "128Mi"}), "in-place-or-recreate"),
                  2, [template])  # fmt: skip
    for _ in range(5):
        _forge(sim)
        sim.passes(1)
    assert all(quantity(cpu) == Decimal("0.4") for cpu, _ in _main(sim)), _main(sim)


# ---- the property: any template, recommendation and running pods ---------------------------------------

CPU_M = st.integers(min_value=10, max_value=64_000)
MEM_MI = st.integers(min_value=16, max_value=256 * 1024)
THRESHOLD_LOW, THRESHOLD_HIGH = Decimal("0.9"), Decimal("1.1")
RATIO = st.sampled_from([None, Decimal(1), Decimal("1.5"), Decimal(2), Decimal(4)])


@st.composite
def resources(draw: st.DrawFn) -> Resources:
    """cpu and memory requests (either may be missing) and limits at a ratio (or none)."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for resource, draw_value, fmt, unit in (
        ("cpu", CPU_M, format_cpu, Decimal("0.001")),
        ("memory", MEM_MI, format_memory, Decimal(MIB)),
    ):
        value = Decimal(draw(draw_value)) * unit
        if draw(st.booleans()) or resource == "cpu":
            requests[resource] = fmt(float(value))
        ratio = draw(RATIO)
        if ratio is not None:
            limits[resource] = fmt(float(value * ratio))
    return {"requests": requests, "limits": limits}


@settings(max_examples=examples(300))
@given(
    template=resources(),
    wanted=st.tuples(CPU_M, MEM_MI),
    running=st.lists(st.one_of(st.none(), resources()), min_size=1, max_size=3),
    mode=st.sampled_from(["recreate", "in-place-or-recreate"]),
    webhook=st.booleans(),
)
def test_the_updater_acts_on_each_pod_at_most_once_and_stops(
    template: Resources, wanted: tuple[int, int], running: list[Resources | None], mode: str, webhook: bool
) -> None:
    """Pods admitted from the template (None) or running with other values (created before podsizer, or
    changed since), the webhook up or down: each is resized or evicted at most once, no replacement is
    evicted (with the webhook up none is touched: it comes back at its target), the last passes do
    nothing, and every request stays within the change factor of the template."""
    rec = simple_rec({"cpu": format_cpu(wanted[0] / 1000), "memory": format_memory(wanted[1] * MIB)})
    sim = SimCluster(template, rec, mode, webhook=webhook)
    for r in running:
        created(sim, 1, None if r is None else [r])
    first = set(sim.pods)
    actions = sim.passes(6)
    acted = [name for _, name in actions]
    assert len(acted) == len(set(acted)), actions
    assert {name for kind, name in actions if kind == "evicted"} <= first, actions  # never a replacement
    if webhook:
        assert set(acted) <= first, actions  # replacements come back at their target
    assert sim.passes(3)[len(actions) :] == []
    for name in sim.pods:
        if name in first and name not in acted:
            continue  # left as it runs (within the threshold of its target)
        for resource in ("cpu", "memory"):
            origin = quantity(template["requests"].get(resource) or template["limits"].get(resource))
            now = quantity(sim.main(name)["requests"].get(resource))
            if origin is not None and now is not None:
                # the factor, and the threshold: a value within 10 % of its target is left as it is
                assert origin / 4 * THRESHOLD_LOW <= now <= origin * 4 * THRESHOLD_HIGH, (
                    resource,
                    origin,
                    now,
                )
