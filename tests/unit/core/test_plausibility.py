"""The plausibility guard in the pod plan: ceilings, the maximum change factor and its opt-in, invalid values,
and the count the webhook keeps of each; the webhook, `recommend` and the console agree on all of it."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from podsizer.api import Recommendation
from podsizer.api.resource import recommendation_from_resource, recommendation_to_resource
from podsizer.keys import ALLOW_LARGE_CHANGE_KEY
from podsizer.modes import Meta, Resolved
from podsizer.plan import PodPlan, plan_pod
from podsizer.plan_view import plan_workload
from podsizer.plausibility import Ceilings
from podsizer.podspec import CurrentResources
from podsizer.policy import PlanPolicy
from podsizer.resources import GPU
from podsizer.settings.base import SharedSettings
from tests.unit.webhook.builders import (
    admitter,
    apply_reply,
    container,
    crec,
    recommendation,
    replicaset_pod,
    resources_of,
    review,
)
from webhook.metrics import WebhookMetrics

AUTO = Resolved("auto")
AUTO_GPU = Resolved("auto", gpu_resize=True)
NO_FACTOR = PlanPolicy(max_change_factor=None)
OUTLIER_MI = "17592186044416Mi"  # 2^64 bytes: one 2^64-1 byte sample, rounded up to whole MiB
CEILING_MI = f"{4 * 2**20}Mi"  # the default memory ceiling, 4Ti


def _changes(plan: PodPlan) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    return {(c.field, c.resource): (c.old, c.new) for c in plan.changes}


def _rules(plan: PodPlan) -> set[tuple[str, str, str]]:
    return {(g.field, g.resource, g.rule) for g in plan.guarded}


def _one_container(
    requests: dict[str, str], limits: dict[str, str] | None = None, **ann: str
) -> dict[str, Any]:
    return replicaset_pod(containers=[container("main", requests, limits)], annotations=ann)


def test_a_2_64_byte_outlier_is_clamped_to_the_memory_ceiling_in_webhook_and_recommend_alike() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "250m", "memory": OUTLIER_MI})])
    pod = _one_container({"cpu": "250m", "memory": "1Gi"}, **{ALLOW_LARGE_CHANGE_KEY: "true"})

    reply, decision = admitter(rec, default_mode="auto").review(review(pod))
    assert resources_of(apply_reply(pod, reply), "main")["requests"]["memory"] == CEILING_MI
    assert {(g.resource, g.rule) for g in decision.guarded} == {("memory", "ceiling")}

    shown = plan_workload(
        rec,
        [CurrentResources.of("main", {"cpu": 0.25, "memory": 2.0**30}, {})],
        PlanPolicy(),
        Meta({}, {ALLOW_LARGE_CHANGE_KEY: "true"}),
    )
    assert shown.containers[0].after("requests", "memory") == CEILING_MI


def test_the_outlier_without_the_opt_in_stops_at_four_times_the_current_request() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "250m", "memory": OUTLIER_MI})])
    plan = plan_pod(_one_container({"cpu": "250m", "memory": "1Gi"}), rec, PlanPolicy(), AUTO)
    assert _changes(plan)[("requests", "memory")] == ("1Gi", "4096Mi")
    assert _rules(plan) == {("requests", "memory", "max-change")}  # 4Gi is under the ceiling


def _stored(cpu: str, memory: str, gpus: str) -> Recommendation:
    """A Recommendation as the store codec reads it (the values are int64-safe, so the codec accepts them)."""
    obj = recommendation_to_resource(
        recommendation(containers=[crec("main", {"cpu": "1", "memory": "1Gi", GPU: "1"}, {GPU: "1"})])
    )
    status = copy.deepcopy(obj["status"])
    status["containers"][0]["requests"] = {"cpu": cpu, "memory": memory, GPU: gpus}
    status["containers"][0]["limits"] = {GPU: gpus}
    return recommendation_from_resource({**obj, "status": status})


def test_stored_1000_cores_1ei_and_1000_gpus_are_clamped_to_the_ceilings() -> None:
    rec = _stored("1000", "1Ei", "1000")
    pod = _one_container({"cpu": "1", "memory": "1Gi", GPU: "1"}, {GPU: "1"})
    plan = plan_pod(pod, rec, NO_FACTOR, AUTO_GPU)
    changes = _changes(plan)
    assert changes[("requests", "cpu")] == ("1", "256000m")
    assert changes[("requests", "memory")] == ("1Gi", CEILING_MI)
    assert changes[("requests", GPU)] == ("1", "16") and changes[("limits", GPU)] == ("1", "16")
    assert {r for r in _rules(plan) if r[2] == "ceiling"} == {
        ("requests", "cpu", "ceiling"),
        ("requests", "memory", "ceiling"),
        ("requests", GPU, "ceiling"),
        ("limits", GPU, "ceiling"),
    }


def test_the_largest_nodes_allocatable_replaces_the_configured_ceiling() -> None:
    nodes = [{"cpu": 16.0, "memory": 64.0 * 2**30}, {"cpu": 64.0, "memory": 256.0 * 2**30, GPU: 8.0}]
    ceilings = Ceilings().from_nodes(nodes)
    assert (ceilings.cpu_cores, ceilings.memory_bytes, ceilings.gpus) == (64.0, 256.0 * 2**30, 8.0)
    assert ceilings.where == "node allocatable" and Ceilings().where == "the configured ceiling"
    rec = _stored("1000", "1Ei", "1000")
    pod = _one_container({"cpu": "1", "memory": "1Gi", GPU: "1"}, {GPU: "1"})
    plan = plan_pod(pod, rec, PlanPolicy(ceilings=ceilings, max_change_factor=None), AUTO_GPU)
    assert {k: v[1] for k, v in _changes(plan).items()} == {
        ("requests", "cpu"): "64000m",
        ("requests", "memory"): "262144Mi",
        ("requests", GPU): "8",
        ("limits", GPU): "8",
    }


def test_a_limit_derived_from_a_clamped_request_is_derived_again_and_stays_under_the_ceiling() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "1000", "memory": "1Gi"})])
    pod = _one_container({"cpu": "100", "memory": "1Gi"}, {"cpu": "200", "memory": "1Gi"})
    plan = plan_pod(pod, rec, NO_FACTOR, AUTO)  # keep-ratio 2: 256 cores -> limit 512, capped at 256
    assert _changes(plan)[("requests", "cpu")] == ("100", "256000m")
    assert _changes(plan)[("limits", "cpu")] == ("200", "256000m")
    assert ("limits", "cpu", "ceiling") in _rules(plan)


@pytest.mark.parametrize(
    ("current", "recommended", "new_request", "new_limit"),
    [
        ("100m", "1000m", "400m", "800m"),  # 10x up: 4x, the keep-ratio limit follows the clamped request
        ("1000m", "100m", "250m", "500m"),  # 10x down: a quarter
        ("100m", "350m", "350m", "700m"),  # within 4x: as recommended
    ],
)
def test_the_request_stays_within_the_maximum_change_factor(
    current: str, recommended: str, new_request: str, new_limit: str
) -> None:
    rec = recommendation(containers=[crec("main", {"cpu": recommended, "memory": "1Gi"})])
    doubled = f"{int(current.removesuffix('m')) * 2}m"
    plan = plan_pod(
        _one_container({"cpu": current, "memory": "1Gi"}, {"cpu": doubled}), rec, PlanPolicy(), AUTO
    )
    assert _changes(plan)[("requests", "cpu")] == (current, new_request)
    assert _changes(plan)[("limits", "cpu")] == (doubled, new_limit)


def test_the_change_factor_without_a_request_compares_with_the_limit_and_without_either_does_not_apply() -> (
    None
):
    rec = recommendation(containers=[crec("main", {"cpu": "4", "memory": "1Gi"})])
    only_limit = plan_pod(_one_container({"memory": "1Gi"}, {"cpu": "500m"}), rec, PlanPolicy("cap"), AUTO)
    assert _changes(only_limit)[("requests", "cpu")] == (None, "2000m")
    nothing = plan_pod(_one_container({"memory": "1Gi"}), rec, PlanPolicy(), AUTO)
    assert _changes(nothing)[("requests", "cpu")] == (None, "4000m")
    assert nothing.guarded == ()


@pytest.mark.parametrize("where", ["pod", "workload", "namespace"])
def test_the_opt_in_annotation_lifts_the_change_factor_at_every_level(where: str) -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "1000m", "memory": "1Gi"})])
    opt_in = Meta({ALLOW_LARGE_CHANGE_KEY: "true"}, {ALLOW_LARGE_CHANGE_KEY: "True"})
    pod = _one_container(
        {"cpu": "100m", "memory": "1Gi"}, **({ALLOW_LARGE_CHANGE_KEY: "TRUE"} if where == "pod" else {})
    )
    plan = plan_pod(
        pod,
        rec,
        PlanPolicy(default_mode="auto"),
        workload=opt_in if where == "workload" else None,
        namespace=opt_in if where == "namespace" else None,
    )
    assert _changes(plan)[("requests", "cpu")] == ("100m", "1000m")
    assert plan.guarded == ()


def test_an_invalid_opt_in_value_is_ignored_and_the_factor_applies() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "1000m", "memory": "1Gi"})])
    pod = _one_container({"cpu": "100m", "memory": "1Gi"}, **{ALLOW_LARGE_CHANGE_KEY: "yes please"})
    plan = plan_pod(pod, rec, PlanPolicy(default_mode="auto"))
    assert _changes(plan)[("requests", "cpu")] == ("100m", "400m")


def test_gpu_counts_stay_within_the_change_factor_unless_opted_in() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "1", "memory": "1Gi", GPU: "8"}, {GPU: "8"})])
    pod = _one_container({"cpu": "1", "memory": "1Gi", GPU: "1"}, {GPU: "1"})
    assert _changes(plan_pod(pod, rec, PlanPolicy(), AUTO_GPU))[("limits", GPU)] == ("1", "4")
    lifted = Resolved("auto", gpu_resize=True, allow_large_change=True)
    assert _changes(plan_pod(pod, rec, PlanPolicy(), lifted))[("limits", GPU)] == ("1", "8")


@pytest.mark.parametrize("bad", ["1e400", "-2", "NaN", "a lot"])
def test_a_non_finite_negative_or_unreadable_value_is_dropped_and_named(bad: str) -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "500m", "memory": bad})])
    plan = plan_pod(_one_container({"cpu": "250m", "memory": "1Gi"}), rec, PlanPolicy(), AUTO)
    assert set(_changes(plan)) == {("requests", "cpu")}
    assert _rules(plan) == {("requests", "memory", "invalid")}
    assert any("dropped" in note for note in plan.notes)


def test_when_the_guard_drops_every_change_the_plan_says_so() -> None:
    rec = recommendation(containers=[crec("main", {"memory": "1e400"})])
    plan = plan_pod(_one_container({"cpu": "250m", "memory": "1Gi"}), rec, PlanPolicy(), AUTO)
    assert plan.skip == "policy-limited" and "dropped" in plan.detail
    assert _rules(plan) == {("requests", "memory", "invalid")}


def test_sane_values_plan_exactly_as_without_the_guard() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "300m", "memory": "768Mi"})])
    pod = _one_container({"cpu": "250m", "memory": "512Mi"}, {"cpu": "500m", "memory": "1Gi"})
    assert plan_pod(pod, rec, PlanPolicy(), AUTO).changes == plan_pod(pod, rec, NO_FACTOR, AUTO).changes
    assert plan_pod(pod, rec, PlanPolicy(), AUTO).guarded == ()


def test_the_webhook_counts_each_guarded_value_by_resource_and_rule_on_every_review() -> None:
    registry = CollectorRegistry()
    metrics = WebhookMetrics(registry, admitter().snapshots, lambda: datetime.now(UTC))
    rec = recommendation(containers=[crec("main", {"cpu": "1000", "memory": OUTLIER_MI})])
    webhook = admitter(rec, default_mode="auto")
    webhook.on_guard = metrics.guarded
    pod = _one_container({"cpu": "100", "memory": "1Gi"})  # cpu: 10x, and past the 256-core ceiling
    for _ in range(2):  # the second review is answered from the decision cache and still counted
        webhook.review(review(pod))

    def count(resource: str, rule: str) -> float | None:
        labels = {"resource": resource, "rule": rule}
        return registry.get_sample_value("podsizer_webhook_plausibility_total", labels)

    assert count("cpu", "max-change") == 2 and count("cpu", "ceiling") == 2
    assert count("memory", "max-change") == 2
    assert count("memory", "ceiling") is None and count("memory", "invalid") is None


def test_a_changed_opt_in_is_never_answered_from_a_cached_decision() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "1000m", "memory": "1Gi"})])
    webhook = admitter(rec, default_mode="auto")
    plain = _one_container({"cpu": "100m", "memory": "1Gi"})
    opted = _one_container({"cpu": "100m", "memory": "1Gi"}, **{ALLOW_LARGE_CHANGE_KEY: "true"})
    first, _ = webhook.review(review(plain))
    second, _ = webhook.review(review(opted))
    assert resources_of(apply_reply(plain, first), "main")["requests"]["cpu"] == "400m"
    assert resources_of(apply_reply(opted, second), "main")["requests"]["cpu"] == "1000m"


def test_settings_describe_the_ceilings_and_factor_every_role_plans_with() -> None:
    env = SharedSettings(max_cpu_cores="64000m", max_memory_bytes="512Gi", max_gpus=8, max_change_factor="")
    policy = env.plan_policy()
    assert policy.ceilings == Ceilings(64.0, 512.0 * 2**30, 8.0)
    assert policy.max_change_factor is None
    assert SharedSettings().plan_policy().max_change_factor == 4.0
