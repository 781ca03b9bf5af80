"""The updater's decision per pod: modes, threshold, in place or eviction, GPU, memory floor, resize state."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest

from podsizer.policy import PlanPolicy
from tests.unit.updater.builders import NOW, facts, pod, rec, stamp
from updater.budget import Ledger
from updater.decide import Action, PodFacts, UpdaterPolicy, decide
from updater.threshold import Band

POLICY = UpdaterPolicy(PlanPolicy(default_mode="auto"))
GIB = Decimal(2**30)


def _decide(f: PodFacts, policy: UpdaterPolicy = POLICY, ledger: Ledger | None = None) -> Action:
    return decide(f, policy, ledger or Ledger(), NOW)


@pytest.mark.parametrize("mode", ["off", "initial"])
def test_admission_only_and_off_update_modes_never_act(mode: str) -> None:
    action = _decide(facts(pod(), rec(), mode))
    assert (action.kind, action.reason) == ("skipped", f"update-mode-{mode}")


def test_in_place_or_recreate_resizes_in_place_with_the_pod_plan_values() -> None:
    action = _decide(facts(pod(), rec(cpu="250m", memory="512Mi")))
    assert action.kind == "resized"
    app = action.body["spec"]["containers"][0]
    assert app["name"] == "app"
    assert app["resources"]["requests"] == {"cpu": "250m", "memory": "512Mi"}


def test_recreate_mode_evicts_instead_of_resizing() -> None:
    action = _decide(facts(pod(), rec(), "recreate"))
    assert (action.kind, action.reason) == ("evicted", "recreate")


def test_a_pod_within_ten_percent_is_left_alone() -> None:
    action = _decide(facts(pod(requests={"cpu": "260m", "memory": "530Mi"}, limits={}), rec()))
    assert (action.kind, action.reason) == ("skipped", "within-threshold")


def test_a_pod_within_ten_percent_but_outside_the_band_is_acted_on() -> None:
    f = facts(pod(requests={"cpu": "260m", "memory": "530Mi"}, limits={}), rec())
    banded = replace(f, bands={"app": Band(lower={"cpu": "300m"}, upper={"cpu": "1"})})
    assert _decide(banded).kind == "resized"


def test_a_gpu_change_is_never_made_in_place() -> None:
    gpu_pod = pod(
        requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}, limits={"nvidia.com/gpu": "2"}
    )
    policy = UpdaterPolicy(PlanPolicy(default_mode="auto", gpu_resize=True))
    action = _decide(facts(gpu_pod, rec(gpu="1"), policy=policy.plan), policy)
    assert (action.kind, action.reason) == ("evicted", "gpu-change")
    assert any(c.resource == "nvidia.com/gpu" for c in action.changes)


def test_a_memory_limit_is_never_lowered_below_current_usage() -> None:
    f = facts(pod(limits={"memory": "2Gi"}), rec(mem_limit="768Mi"), usage={"app": GIB})
    policy = UpdaterPolicy(PlanPolicy(default_mode="auto", limit_policy="recommended"))
    action = _decide(f, policy)
    assert (action.kind, action.reason) == ("skipped", "memory-below-usage")


def test_a_memory_limit_above_usage_is_lowered_in_place() -> None:
    f = facts(pod(limits={"memory": "2Gi"}), rec(mem_limit="768Mi"), usage={"app": GIB / 4})
    policy = UpdaterPolicy(PlanPolicy(default_mode="auto", limit_policy="recommended"))
    action = _decide(f, policy)
    assert action.kind == "resized"
    assert action.body["spec"]["containers"][0]["resources"]["limits"]["memory"] == "768Mi"


def test_a_memory_limit_decrease_with_unknown_usage_is_not_done_in_place() -> None:
    policy = UpdaterPolicy(PlanPolicy(default_mode="auto", limit_policy="recommended"))
    action = _decide(facts(pod(limits={"memory": "2Gi"}), rec(mem_limit="768Mi")), policy)
    assert (action.kind, action.reason) == ("evicted", "memory-usage-unknown")


def test_a_qos_class_change_is_recreated_not_resized() -> None:
    guaranteed = pod(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"})
    policy = UpdaterPolicy(PlanPolicy(default_mode="auto", limit_policy="cap"))
    action = _decide(facts(guaranteed, rec()), policy)
    assert (action.kind, action.reason) == ("evicted", "qos-change")


def test_resize_policy_restart_container_is_reported() -> None:
    p = pod(resize_policy=[{"resourceName": "memory", "restartPolicy": "RestartContainer"}])
    action = _decide(facts(p, rec()))
    assert (action.kind, action.restarts) == ("resized", ("app",))


def test_restart_policy_never_with_a_restarting_resize_is_recreated() -> None:
    p = pod(
        resize_policy=[{"resourceName": "memory", "restartPolicy": "RestartContainer"}],
        restart_policy="Never",
    )
    assert _decide(facts(p, rec())).reason == "restart-not-allowed"


def _pending(reason: str, since: timedelta) -> dict[str, str]:
    return {
        "type": "PodResizePending",
        "status": "True",
        "reason": reason,
        "lastTransitionTime": stamp(NOW - since),
    }


def test_an_infeasible_resize_falls_back_to_eviction_at_once() -> None:
    p = pod(conditions=[_pending("Infeasible", timedelta(seconds=1))])
    assert _decide(facts(p, rec())).reason == "resize-infeasible"
    assert _decide(facts(p, rec())).kind == "evicted"


def test_a_deferred_resize_waits_then_falls_back_after_the_timeout() -> None:
    young = pod(conditions=[_pending("Deferred", timedelta(seconds=30))])
    old = pod(conditions=[_pending("Deferred", timedelta(seconds=301))])
    assert (_decide(facts(young, rec())).kind, _decide(facts(young, rec())).reason) == (
        "skipped",
        "resize-deferred",
    )
    assert (_decide(facts(old, rec())).kind, _decide(facts(old, rec())).reason) == (
        "evicted",
        "resize-deferred-timeout",
    )


def test_an_in_progress_resize_past_the_timeout_falls_back() -> None:
    cond = {
        "type": "PodResizeInProgress",
        "status": "True",
        "lastTransitionTime": stamp(NOW - timedelta(hours=1)),
    }
    assert _decide(facts(pod(conditions=[cond]), rec())).reason == "resize-in-progress-timeout"


def test_the_old_status_resize_field_is_read() -> None:
    p = pod()
    p["status"]["resize"] = "Infeasible"
    assert _decide(facts(p, rec())).reason == "resize-infeasible"


def test_a_rejected_resize_is_recreated_next_time() -> None:
    assert _decide(facts(pod(), rec(), rejected=True)).reason == "resize-rejected"


def test_a_pod_in_admission_dry_run_mode_is_never_updated() -> None:
    f = facts(pod(), rec(), policy=PlanPolicy(default_mode="dry-run"))
    assert (_decide(f).kind, f.permission.mode) == ("skipped", "initial")


def test_a_pod_that_is_not_running_is_skipped() -> None:
    assert _decide(facts(pod(phase="Pending"), rec())).reason == "not-running"


def test_a_single_replica_workload_is_not_evicted_without_its_annotation() -> None:
    action = _decide(facts(pod(), rec(), "recreate", replicas=1))
    assert (action.kind, action.reason) == ("skipped", "single-replica")


def test_a_single_replica_workload_is_evicted_with_its_annotation() -> None:
    f = facts(
        pod(),
        rec(),
        "recreate",
        replicas=1,
        workload_annotations={"podsizer.io/allow-single-replica": "true"},
    )
    assert _decide(f).kind == "evicted"


def test_a_single_replica_workload_may_still_be_resized_in_place() -> None:
    assert _decide(facts(pod(), rec(), replicas=1)).kind == "resized"


def test_an_old_style_in_progress_resize_without_a_time_is_waited_for() -> None:
    p = pod()
    p["status"]["resize"] = "InProgress"
    action = _decide(facts(p, rec()))
    assert (action.kind, action.reason) == ("skipped", "resize-in-progress")
