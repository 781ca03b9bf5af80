"""Resize status, QoS class, the resize patch body, PodMetrics usage and API outcomes."""

from __future__ import annotations

from podsizer.podspec import Change
from tests.unit.updater.builders import pod
from updater.kube import _outcome, container_memory
from updater.pods import slim
from updater.resize import qos_class, resize_body, resize_status


def test_no_condition_and_no_field_is_no_resize() -> None:
    assert resize_status(pod()).state == "none"


def test_pending_deferred_and_in_progress_conditions() -> None:
    deferred = pod(conditions=[{"type": "PodResizePending", "status": "True", "reason": "Deferred"}])
    progress = pod(conditions=[{"type": "PodResizeInProgress", "status": "True"}])
    done = pod(conditions=[{"type": "PodResizeInProgress", "status": "False"}])
    assert [resize_status(p).state for p in (deferred, progress, done)] == ["deferred", "in-progress", "none"]


def test_qos_classes() -> None:
    assert qos_class([({}, {})]) == "BestEffort"
    assert qos_class([({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})]) == "Guaranteed"
    assert qos_class([({}, {"cpu": "1", "memory": "1Gi"})]) == "Guaranteed"  # requests default to limits
    assert qos_class([({"cpu": "1"}, {})]) == "Burstable"


def test_the_resize_body_names_containers_and_carries_only_changed_values() -> None:
    p = pod()
    p["spec"]["initContainers"] = [{"name": "proxy", "restartPolicy": "Always", "resources": {}}]
    changes = [
        Change("containers", 0, "app", "requests", "cpu", "1", "250m"),
        Change("containers", 0, "app", "limits", "memory", None, "1Gi"),
        Change("initContainers", 0, "proxy", "requests", "memory", None, "64Mi"),
    ]
    assert resize_body(p, changes) == {
        "spec": {
            "containers": [
                {"name": "app", "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}}
            ],
            "initContainers": [{"name": "proxy", "resources": {"requests": {"memory": "64Mi"}}}],
        }
    }


def test_pod_metrics_give_memory_per_container() -> None:
    metrics = {"containers": [{"name": "app", "usage": {"cpu": "10m", "memory": "256Mi"}}, {"name": "x"}]}
    assert container_memory(metrics) == {"app": 256 * 2**20}
    assert container_memory({"containers": []}) is None


class _Exc(Exception):
    def __init__(self, status: int) -> None:
        self.status, self.body = status, f"status {status}"


def test_api_errors_map_to_outcomes() -> None:
    assert [_outcome(_Exc(s))[0] for s in (429, 404, 409, 422, 403, 500)] == [
        "pdb-blocked",
        "gone",
        "gone",
        "rejected",
        "forbidden",
        "error",
    ]


def test_the_pod_cache_keeps_only_what_the_decision_reads() -> None:
    p = pod()
    p["spec"]["containers"][0]["env"] = [{"name": "SECRET", "value": "x"}]
    p["spec"]["volumes"] = [{"name": "v"}]
    kept = slim(p)
    assert "volumes" not in kept["spec"] and "env" not in kept["spec"]["containers"][0]
    assert kept["spec"]["containers"][0]["resources"] == p["spec"]["containers"][0]["resources"]
    assert kept["metadata"]["ownerReferences"] == p["metadata"]["ownerReferences"]
