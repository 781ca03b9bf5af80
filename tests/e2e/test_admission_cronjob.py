"""CronJob -> the real cronjob and job controllers -> the apiserver calls the webhook -> each run's pod
carries the CronJob's Recommendation (Pod -> Job -> CronJob resolved from the webhook's watched Jobs)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from tests.controlplane.kube import Manifest, create_objects, to_dict, wait_for, wait_for_pods
from tests.controlplane.podsizer_webhook import WebhookProcess
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import pod_template, wait_until_webhook_acts
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

APPLIED = "podsizer.io/applied"
TEMPLATE_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "128Mi"},
}
RECOMMENDED = {"cpu": "250m", "memory": "96Mi"}
# keep-ratio, the webhook's default limit policy: the template's limits are twice its requests
EXPECTED = {"requests": {"cpu": "250m", "memory": "96Mi"}, "limits": {"cpu": "500m", "memory": "192Mi"}}

NamespaceFactory = Callable[..., str]


def _cronjob(name: str, schedule: str, *, suspend: bool = False) -> Manifest:
    template = pod_template({"app": name}, TEMPLATE_RESOURCES)
    template["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "suspend": suspend,
            "concurrencyPolicy": "Forbid",  # pods never run here (no kubelet): one run at a time is plenty
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": template}},
        },
    }


def _recommend(admin: client.ApiClient, namespace: str, cronjob: str) -> None:
    rec = simple_recommendation(WorkloadRef(namespace, "CronJob", cronjob), {"main": RECOMMENDED})
    put_recommendation(admin, rec)


def _mutated(pod: Manifest) -> bool:
    return bool(pod["spec"]["containers"][0]["resources"] == EXPECTED)


def _assert_applied(pod: Manifest, recommendation: str) -> None:
    assert pod["spec"]["containers"][0]["resources"] == EXPECTED
    record = json.loads(pod["metadata"]["annotations"][APPLIED])
    assert record["recommendation"] == recommendation


def _owner_ref(owner: Manifest) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _wait_for_recommendation_snapshot(admin: client.ApiClient, cronjob: Manifest) -> None:
    """Until the webhook's Recommendation snapshot holds the CronJob's: a dry-run pod of a run the Job
    cache cannot know (`<cronjob>-<minute>`, never created) resolves by the run's name and the snapshot."""
    meta = cronjob["metadata"]
    probe_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{meta['name']}-1", "namespace": meta["namespace"], "uid": str(uuid.uuid4())},
        "spec": cronjob["spec"]["jobTemplate"]["spec"],
    }
    wait_until_webhook_acts(admin, probe_job, _mutated, f"the webhook to load cronjob-{meta['name']}")


def test_the_cronjob_controllers_run_gets_the_cronjobs_recommendation_in_auto_mode(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto")
    _recommend(admin_client, ns, "report")
    batch = client.BatchV1Api(admin_client)
    (stored,) = create_objects(admin_client, [_cronjob("report", "* * * * *", suspend=True)], namespace=ns)
    _wait_for_recommendation_snapshot(admin_client, stored)
    batch.patch_namespaced_cron_job("report", ns, {"spec": {"suspend": False}})

    def run() -> Manifest | None:  # the cronjob controller fires at the next minute (it syncs every 10 s)
        jobs = to_dict(admin_client, batch.list_namespaced_job(ns))["items"]
        owned = [
            j for j in jobs if any(r["kind"] == "CronJob" for r in j["metadata"].get("ownerReferences", []))
        ]
        return owned[0] if owned else None

    job = wait_for(run, f"the cronjob controller to create a Job of {ns}/report", timeout_s=150)
    assert job["metadata"]["name"].startswith("report-")
    (pod,) = wait_for_pods(admin_client, ns, "Job", job["metadata"]["name"], count=1)
    _assert_applied(pod, "cronjob-report")


def test_a_job_created_from_a_cronjob_resolves_through_the_watched_job_cache(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    """`kubectl create job --from=cronjob/backup manual-run`: the Job's name says nothing about its CronJob,
    so only the webhook's watch of batch/v1 Jobs (the Job's ownerReference) leads to the Recommendation."""
    ns = make_namespace(mode="auto")
    _recommend(admin_client, ns, "backup")
    (cronjob,) = create_objects(admin_client, [_cronjob("backup", "0 3 * * *", suspend=True)], namespace=ns)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "manual-run",
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "ownerReferences": [_owner_ref(cronjob)],
        },
        "spec": {**cronjob["spec"]["jobTemplate"]["spec"], "suspend": True},  # no pod until the cache has it
    }
    create_objects(admin_client, [job], namespace=ns)
    batch = client.BatchV1Api(admin_client)
    stored = to_dict(admin_client, batch.read_namespaced_job("manual-run", ns))
    wait_until_webhook_acts(admin_client, stored, _mutated, "the webhook to resolve Job manual-run")
    batch.patch_namespaced_job("manual-run", ns, {"spec": {"suspend": False}})
    (pod,) = wait_for_pods(admin_client, ns, "Job", "manual-run", count=1)
    _assert_applied(pod, "cronjob-backup")
