"""Job pods at admission: the watched Job cache gives Pod -> Job -> CronJob (or the bare Job) from memory."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from podsizer.api import ContainerRecommendation, WorkloadRef
from podsizer.cluster import MetadataCache, OwnerCache, start_cluster_watches
from podsizer.owners import resolve_pod
from podsizer.snapshot import SnapshotHolder
from tests.unit.webhook.builders import (
    admitter,
    apply_reply,
    holder_with,
    recommendation,
    replicaset_pod,
    resources_of,
    review,
)

RUN = "report-29467800"  # the CronJob controller's name for a run: <cronjob>-<scheduled minute>


def _job(name: str, cronjob: str | None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "annotations": annotations or {}}
    if cronjob is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "CronJob", "name": cronjob, "controller": True, "uid": "u"}
        ]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta}


def job_pod(job: str) -> dict[str, Any]:
    """A pod as the Job controller creates it: generateName, job-name labels, the Job as controller."""
    pod = replicaset_pod()
    pod["metadata"] = {
        "generateName": f"{job}-",
        "namespace": "shop",
        "labels": {"batch.kubernetes.io/job-name": job, "job-name": job},
        "annotations": {},
        "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": job, "controller": True, "uid": "j"}
        ],
    }
    pod["spec"]["restartPolicy"] = "Never"
    return pod


def _cache(*jobs: dict[str, Any]) -> OwnerCache:
    cache = OwnerCache()
    cache.handler("Job").replace(list(jobs))
    return cache


def test_a_cronjob_run_pod_resolves_to_the_cronjob_from_the_watched_jobs() -> None:
    cache = _cache(_job(RUN, "report"))
    assert resolve_pod(job_pod(RUN), "shop", cache) == WorkloadRef("shop", "CronJob", "report")


def test_a_job_without_a_cronjob_is_its_own_workload() -> None:
    cache = _cache(_job("train-llama", None))
    assert resolve_pod(job_pod("train-llama"), "shop", cache) == WorkloadRef("shop", "Job", "train-llama")


def test_a_job_added_by_a_watch_event_resolves_and_a_deleted_one_falls_back_to_the_store() -> None:
    cache = OwnerCache()
    assert resolve_pod(job_pod(RUN), "shop", cache) is None  # not seen yet, no store
    cache.handler("Job").event("ADDED", _job(RUN, "report"))
    assert resolve_pod(job_pod(RUN), "shop", cache) == WorkloadRef("shop", "CronJob", "report")
    cache.handler("Job").event("DELETED", _job(RUN, "report"))
    snapshot = holder_with(recommendation(kind="CronJob", name="report")).current()
    assert snapshot is not None
    assert resolve_pod(job_pod(RUN), "shop", cache, snapshot.has) == WorkloadRef("shop", "CronJob", "report")
    assert resolve_pod(job_pod(RUN), "shop", cache) is None


def test_a_cronjob_run_pod_is_mutated_from_the_cronjobs_recommendation_in_auto_mode() -> None:
    rec = recommendation(
        kind="CronJob",
        name="report",
        containers=[
            ContainerRecommendation(
                "main", {"cpu": "750m", "memory": "1536Mi"}, {"memory": "1920Mi"}, 1.0, "sized"
            )
        ],
    )
    adm = admitter(rec, owners=_cache(_job(RUN, "report")))
    pod = job_pod(RUN)
    reply, _ = adm.review(review(pod))
    patched = apply_reply(pod, reply)
    assert resources_of(patched, "main")["requests"] == {"cpu": "750m", "memory": "1536Mi"}
    applied = patched["metadata"]["annotations"]["podsizer.io/applied"]
    assert '"recommendation":"cronjob-report"' in applied.replace(" ", "")


def test_the_cluster_watches_feed_jobs_to_the_owner_and_metadata_caches_and_watch_cronjobs() -> None:
    stop = threading.Event()
    stop.set()  # nothing runs: only the informers' wiring is looked at
    owners, meta = OwnerCache(), MetadataCache()
    informers = start_cluster_watches(
        ApiClient(), SnapshotHolder(), owners, meta, lambda: datetime.now(UTC), stop
    )
    by_name = {i.name: i for i in informers}
    assert getattr(by_name["jobs"].list_fn, "__name__", "") == "list_job_for_all_namespaces"
    assert getattr(by_name["cronjobs"].list_fn, "__name__", "") == "list_cron_job_for_all_namespaces"
    by_name["jobs"].handler.replace(
        iter([_job(RUN, "report"), _job("train", None, {"podsizer.io/mode": "off"})])
    )
    by_name["cronjobs"].handler.event(
        "ADDED",
        {"metadata": {"name": "report", "namespace": "shop", "annotations": {"podsizer.io/mode": "auto"}}},
    )
    assert resolve_pod(job_pod(RUN), "shop", owners) == WorkloadRef("shop", "CronJob", "report")
    train = meta.workload(WorkloadRef("shop", "Job", "train"))
    report = meta.workload(WorkloadRef("shop", "CronJob", "report"))
    assert train is not None and train.annotations == {"podsizer.io/mode": "off"}
    assert report is not None and report.annotations == {"podsizer.io/mode": "auto"}
