"""The change budget's base (podsizer.baseline): the applied record's originals, the template as admitted,
and the plan measured from them by every consumer."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.baseline import Baseline, from_template, recorded
from podsizer.cluster import template_resources
from podsizer.keys import APPLIED_KEY
from podsizer.limitrange import ClusterPolicy
from podsizer.modes import Resolved
from podsizer.plan import plan_pod
from podsizer.podspec import CurrentResources, container_slots, quantity
from podsizer.policy import LimitPolicy, PlanPolicy
from tests.support.hypo import examples
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

AUTO = Resolved("auto")
REC = recommendation(containers=[crec("main", {"cpu": "1000m", "memory": "64Mi"})])


def _record(*changes: tuple[str, str, str | None, str], name: str = "deployment-web") -> str:
    listed = [
        {"container": "main", "containerType": "containers", "field": f, "resource": r, "from": a, "to": b}
        for f, r, a, b in changes
    ]
    return orjson.dumps({"recommendation": name, "changes": listed}).decode()


def test_the_record_gives_the_original_of_each_value_it_names() -> None:
    text = _record(("requests", "cpu", "20m", "80m"), ("limits", "cpu", None, "160m"))
    assert recorded({APPLIED_KEY: text}, "deployment-web") == {
        ("containers", "main", "requests", "cpu"): "20m",
        ("containers", "main", "limits", "cpu"): None,
    }


@pytest.mark.parametrize(
    "text",
    ["not json", "[]", '{"recommendation": "deployment-web", "changes": 3}', _record(name="deployment-other"),
     '{"recommendation": "deployment-web", "changes": [{"container": 1}, {"containerType": "x"}]}',
     _record(("requests", "cpu", "20m", "80m")) + " " * (256 * 1024)],
)  # fmt: skip
def test_a_record_that_is_not_ours_gives_no_original(text: str) -> None:
    assert recorded({APPLIED_KEY: text}, "deployment-web") == {}


def test_the_template_counts_as_the_apiserver_admits_it_with_limitrange_defaults() -> None:
    limit_range = {"spec": {"limits": [{"type": "Container", "default": {"memory": "256Mi"},
                                        "defaultRequest": {"cpu": "100m", "memory": "128Mi"}}]}}  # fmt: skip
    cluster = ClusterPolicy.of([limit_range], [])
    template = [CurrentResources("main", {}, {"cpu": "2"})]
    assert from_template(template, cluster) == {
        ("containers", "main", "requests", "cpu"): "2",  # a missing request defaults to the limit
        ("containers", "main", "limits", "cpu"): "2",
        ("containers", "main", "requests", "memory"): "134217728",  # the LimitRange's defaults
        ("containers", "main", "limits", "memory"): "268435456",
    }
    assert from_template(template) == {
        ("containers", "main", "requests", "cpu"): "2",
        ("containers", "main", "limits", "cpu"): "2",
    }  # no LimitRange: memory is not known from the template (another plugin may set it)


def test_a_resized_pod_is_planned_from_its_template_and_needs_no_change() -> None:
    pod = replicaset_pod(containers=[container("main", {"cpu": "80m", "memory": "64Mi"})])
    template = [CurrentResources("main", {"cpu": "20m", "memory": "64Mi"}, {})]
    plan = plan_pod(pod, REC, PlanPolicy(), AUTO, template=template)
    assert (plan.skip, plan.changes) == ("no-change", ())
    assert [(c.old, c.new) for c in plan.recorded or ()] == [("20m", "80m")]
    assert plan_pod(pod, REC, PlanPolicy(), AUTO).changes[0].new == "320m"  # from the pod itself: 4x again


def test_a_value_moved_off_its_target_is_brought_back_from_the_original() -> None:
    pod = replicaset_pod(
        containers=[container("main", {"cpu": "300m", "memory": "64Mi"})],
        annotations={APPLIED_KEY: _record(("requests", "cpu", "20m", "80m"))},
    )
    plan = plan_pod(pod, REC, PlanPolicy(), AUTO)
    assert [(c.field, c.resource, c.old, c.new) for c in plan.changes] == [("requests", "cpu", "300m", "80m")]
    assert [(c.old, c.new) for c in plan.record] == [("20m", "80m")]


def test_a_record_of_a_thousand_containers_restores_each_of_them() -> None:
    many = 1000
    pod = replicaset_pod(containers=[container(f"c{i}", {"cpu": "80m"}) for i in range(many)])
    rec_changes = [{"container": f"c{i}", "containerType": "containers", "field": "requests",
                    "resource": "cpu", "from": "20m", "to": "80m"} for i in range(many)]  # fmt: skip
    text = orjson.dumps({"recommendation": "deployment-web", "changes": rec_changes}).decode()
    restored = Baseline.of({APPLIED_KEY: text}, "deployment-web").restored(container_slots(pod))
    assert len(restored) == many


def _workload(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


def test_the_cluster_cache_keeps_each_kinds_template_resources() -> None:
    resources = {"requests": {"cpu": "1", "ephemeral-storage": "1Gi"}, "limits": {"memory": 2**30}}
    pod_spec = {
        "containers": [{"name": "main", "resources": resources}],
        "initContainers": [{"name": "setup"}],
    }
    deployment = template_resources("Deployment", _workload("Deployment", {"template": {"spec": pod_spec}}))
    cronjob = template_resources(
        "CronJob", _workload("CronJob", {"jobTemplate": {"spec": {"template": {"spec": pod_spec}}}})
    )
    expected = (
        CurrentResources("setup", {}, {}, True),
        CurrentResources("main", {"cpu": "1"}, {"memory": str(2**30)}),
    )
    assert deployment == cronjob == expected
    assert template_resources("Rollout", _workload("Rollout", {"workloadRef": {"name": "web"}})) is None


# ---- a forged record (the pod's owner writes podsizer.io/applied) never widens the budget ----------------

FORGED = [  # (recommended cpu, the record's cpu request `from`, the record's memory limit `from`)
    ("64", "16", "256Mi"),  # large `from`: 4x of 16 cores
    ("25m", "64", "256Mi"),  # large `from` pulls a small recommendation up to 16 cores
    ("64", None, "256Mi"),  # `from` absent: no factor at all
    ("400m", "100m", None),  # memory limit absent: the limit removed
]


@pytest.mark.parametrize(("wanted", "cpu_from", "limit_from"), FORGED)
def test_the_webhook_admits_a_pod_with_a_forged_record_as_without_it(
    wanted: str, cpu_from: str | None, limit_from: str | None
) -> None:
    """A template (100m, memory 64Mi limited to 256Mi) carrying a record its owner wrote: admission gives
    what it gives without the record (cpu within 4x of 100m, the limit kept), not a value measured from
    the record's `from`."""
    rec = recommendation(containers=[crec("main", {"cpu": wanted, "memory": "64Mi"})])
    hook = admitter(rec, default_mode="auto")
    main = container("main", {"cpu": "100m", "memory": "64Mi"}, {"memory": "256Mi"})
    plain = replicaset_pod(containers=[main])
    forged = replicaset_pod(
        containers=[copy.deepcopy(main)],
        annotations={APPLIED_KEY: _record(("requests", "cpu", cpu_from, "100m"),
                                          ("limits", "memory", limit_from, "256Mi"))},
    )  # fmt: skip
    honest = resources_of(apply_reply(plain, hook.review(review(plain))[0]), "main")
    after = resources_of(apply_reply(forged, hook.review(review(forged))[0]), "main")
    assert after == honest
    assert Decimal("0.025") <= quantity(after["requests"]["cpu"]) <= Decimal("0.4")  # type: ignore[operator]


CPU_M = st.integers(min_value=1, max_value=512_000)


@settings(max_examples=examples(500))
@given(
    current=st.tuples(CPU_M, st.none() | st.integers(min_value=0, max_value=512_000)),
    wanted=CPU_M,
    forged=st.tuples(st.none() | CPU_M, st.none() | CPU_M),
    policy=st.sampled_from(["keep-ratio", "cap", "leave", "recommended"]),
)
def test_no_record_takes_a_value_beyond_the_factor_of_the_pods_own(
    current: tuple[int, int | None], wanted: int, forged: tuple[int | None, int | None], policy: LimitPolicy
) -> None:
    """Any pod (cpu request, maybe a limit), any recommendation, any record of cpu `from` values (or
    absent): the planned cpu request and limit stay within 4x of the pod's own and none is removed."""
    request, extra = current
    limit = None if extra is None else request + extra  # a valid pod: the limit at or above the request
    pod = replicaset_pod(
        containers=[container("main", {"cpu": f"{request}m"}, {"cpu": f"{limit}m"} if limit else None)],
        annotations={APPLIED_KEY: _record(
            ("requests", "cpu", None if forged[0] is None else f"{forged[0]}m", f"{request}m"),
            ("limits", "cpu", None if forged[1] is None else f"{forged[1]}m", f"{limit}m"))},
    )  # fmt: skip
    rec = recommendation(containers=[crec("main", {"cpu": f"{wanted}m"})])
    plan = plan_pod(pod, rec, PlanPolicy(limit_policy=policy), AUTO)
    after: dict[tuple[str, str], str | None] = {(c.field, c.resource): c.new for c in plan.changes}
    for field_, own in (("requests", request), ("limits", limit)):
        if own is None:
            continue
        value = quantity(after.get((field_, "cpu"), f"{own}m"))
        assert value is not None, (field_, plan)
        if policy != "recommended" or field_ == "requests":
            assert Decimal(own) / 4000 <= value <= Decimal(own) * 4 / 1000, (field_, value, plan)
