"""reinvocationPolicy IfNeeded: a second call for the same pod (after another webhook changed it) changes
nothing podsizer already did; the maximum change factor is one budget, and podsizer.io/applied keeps the
original values."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.keys import APPLIED_KEY, DRY_RUN_KEY
from podsizer.policy import Mode
from tests.support.hypo import examples
from tests.unit.webhook.builders import (
    admitter,
    apply_reply,
    container,
    crec,
    decode_patch,
    recommendation,
    replicaset_pod,
    resources_of,
    review,
)


def _inject_sidecar(pod: dict[str, Any]) -> dict[str, Any]:
    """What a sidecar injector does between the two calls."""
    out = copy.deepcopy(pod)
    out["spec"]["containers"].append(container("istio-proxy", {"cpu": "100m", "memory": "128Mi"}))
    return out


def _record(pod: dict[str, Any], key: str = APPLIED_KEY) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = orjson.loads(pod["metadata"]["annotations"][key])["changes"]
    return changes


def test_a_re_invoked_webhook_does_not_apply_the_factor_twice() -> None:
    """20m with a 1000m recommendation: 80m at the first call (4x) and still 80m after the second, not
    320m; the record still says from 20m."""
    rec = recommendation(containers=[crec("main", {"cpu": "1000m", "memory": "64Mi"})])
    hook = admitter(rec, default_mode="auto")
    pod = replicaset_pod(containers=[container("main", {"cpu": "20m", "memory": "64Mi"})])

    first = apply_reply(pod, hook.review(review(pod))[0])
    assert resources_of(first, "main")["requests"]["cpu"] == "80m"
    injected = _inject_sidecar(first)
    reply, decision = hook.review(review(injected))
    second = apply_reply(injected, reply)

    assert decode_patch(reply) == []
    assert decision.reason == "no-change"
    assert resources_of(second, "main")["requests"]["cpu"] == "80m"
    assert [(c["resource"], c["from"], c["to"]) for c in _record(second)] == [("cpu", "20m", "80m")]


def test_a_container_injected_before_the_second_call_is_sized_and_the_record_keeps_the_first() -> None:
    rec = recommendation(
        containers=[crec("main", {"cpu": "1000m", "memory": "64Mi"}), crec("istio-proxy", {"cpu": "50m"})]
    )
    hook = admitter(rec, default_mode="auto")
    pod = replicaset_pod(containers=[container("main", {"cpu": "20m", "memory": "64Mi"})])
    injected = _inject_sidecar(apply_reply(pod, hook.review(review(pod))[0]))

    second = apply_reply(injected, hook.review(review(injected))[0])
    assert resources_of(second, "main")["requests"]["cpu"] == "80m"
    assert resources_of(second, "istio-proxy")["requests"]["cpu"] == "50m"
    recorded = {(c["container"], c["resource"]): (c["from"], c["to"]) for c in _record(second)}
    assert recorded == {("main", "cpu"): ("20m", "80m"), ("istio-proxy", "cpu"): ("100m", "50m")}


def test_a_record_of_another_recommendation_is_not_an_original() -> None:
    rec = recommendation(containers=[crec("main", {"cpu": "1000m", "memory": "64Mi"})])
    stale = {"recommendation": "deployment-other", "changes": [
        {"container": "main", "containerType": "containers", "field": "requests", "resource": "cpu",
         "from": "1m", "to": "4m"}]}  # fmt: skip
    pod = replicaset_pod(
        containers=[container("main", {"cpu": "20m", "memory": "64Mi"})],
        annotations={APPLIED_KEY: orjson.dumps(stale).decode()},
    )
    after = apply_reply(pod, admitter(rec, default_mode="auto").review(review(pod))[0])
    assert resources_of(after, "main")["requests"]["cpu"] == "80m"


AMOUNT_M = st.integers(min_value=1, max_value=200_000)


@settings(max_examples=examples(1000))
@given(
    current=st.lists(st.tuples(AMOUNT_M, st.none() | AMOUNT_M), min_size=1, max_size=3),
    wanted=st.lists(AMOUNT_M, min_size=1, max_size=3),
    mode=st.sampled_from(["auto", "dry-run"]),
    large=st.booleans(),
)
def test_a_second_call_changes_nothing_of_what_the_first_did(
    current: list[tuple[int, int | None]], wanted: list[int], mode: Mode, large: bool
) -> None:
    """Any pod and Recommendation: the second call's patch is empty; in auto mode the record is the
    first call's (from the original values)."""
    containers = [
        container(f"c{i}", {"cpu": f"{req}m"}, {"cpu": f"{lim}m"} if lim is not None else None)
        for i, (req, lim) in enumerate(current)
    ]
    recs = [crec(f"c{i}", {"cpu": f"{w}m"}) for i, w in enumerate(wanted)]
    annotations = {"podsizer.io/allow-large-change": "true"} if large else {}
    hook = admitter(recommendation(containers=recs), default_mode=mode)
    pod = replicaset_pod(containers=containers, annotations=annotations)

    first = apply_reply(pod, hook.review(review(pod))[0])
    reply, _ = hook.review(review(_inject_sidecar(first)))
    assert decode_patch(reply) == []
    key = APPLIED_KEY if mode == "auto" else DRY_RUN_KEY
    if key in first["metadata"]["annotations"]:
        originals = {c["container"]: c["from"] for c in _record(first, key) if c["field"] == "requests"}
        assert all(originals[name] == f"{req}m" for name, (req, _) in zip(
            (f"c{i}" for i in range(len(current))), current, strict=True) if name in originals)  # fmt: skip
