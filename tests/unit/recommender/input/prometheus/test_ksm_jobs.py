"""kube-state-metrics' kube_job_owner in the identity series: Pod -> Job -> CronJob, and bare Jobs."""

from __future__ import annotations

from podsizer.api import WorkloadRef
from podsizer.owners import OwnerGraph, PodOwner, Skipped
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.ksm import identity
from recommender.model.raw import OwnerLink


def _pod_owner(pod: str, job: str) -> dict[str, str]:
    return {
        "__name__": "kube_pod_owner",
        "namespace": "batch",
        "pod": pod,
        "owner_kind": "Job",
        "owner_name": job,
        "owner_is_controller": "true",
    }


def _job_owner(job: str, kind: str, name: str) -> dict[str, str]:
    controller = "<none>" if kind == "<none>" else "true"
    return {
        "__name__": "kube_job_owner",
        "namespace": "batch",
        "job_name": job,
        "owner_kind": kind,
        "owner_name": name,
        "owner_is_controller": controller,
    }


SERIES = [
    _pod_owner("report-29467800-abcde", "report-29467800"),
    _pod_owner("report-29469240-fghij", "report-29469240"),
    _pod_owner("train-klmno", "train"),
    _job_owner("report-29467800", "CronJob", "report"),
    _job_owner("report-29469240", "CronJob", "report"),
    _job_owner("train", "<none>", "<none>"),
]


def test_kube_job_owner_is_one_of_the_identity_series_queried_per_namespace() -> None:
    assert q.IDENTITY_SERIES["kube_job_owner"] == "job_owner"
    (job,) = [m for m in q.identity_series("batch") if m.startswith("kube_job_owner{")]
    assert 'namespace="batch"' in job


def test_job_owner_series_become_cronjob_links_and_bare_jobs() -> None:
    got = identity(SERIES, [])
    assert sorted(got.owners, key=lambda o: o.name) == [
        OwnerLink("batch", "Job", "report-29467800", "CronJob", "report"),
        OwnerLink("batch", "Job", "report-29469240", "CronJob", "report"),
        OwnerLink("batch", "Job", "train", "", ""),
    ]


def test_a_controller_series_wins_over_a_none_series_of_the_same_job_whatever_the_order() -> None:
    for series in (
        [_job_owner("train", "<none>", "<none>"), _job_owner("train", "CronJob", "nightly")],
        [_job_owner("train", "CronJob", "nightly"), _job_owner("train", "<none>", "<none>")],
    ):
        assert identity(series, []).owners == [OwnerLink("batch", "Job", "train", "CronJob", "nightly")]


def test_every_run_of_a_cronjob_resolves_to_the_cronjob_and_a_bare_job_to_itself() -> None:
    got = identity(SERIES, [])
    graph = OwnerGraph.build(
        [PodOwner(p.namespace, p.name, p.owner_kind, p.owner_name) for p in got.pods],
        [(o.namespace, o.kind, o.name, o.owner_kind, o.owner_name) for o in got.owners],
    )
    report = WorkloadRef("batch", "CronJob", "report")
    assert graph.resolve("batch", "report-29467800-abcde") == report
    assert graph.resolve("batch", "report-29469240-fghij") == report
    assert graph.resolve("batch", "train-klmno") == WorkloadRef("batch", "Job", "train")


def test_a_job_pod_without_a_kube_job_owner_series_is_skipped_not_a_workload_of_its_own() -> None:
    got = identity([_pod_owner("report-29467800-abcde", "report-29467800")], [])
    graph = OwnerGraph.build([PodOwner("batch", "report-29467800-abcde", "Job", "report-29467800")], [])
    assert got.owners == []
    skipped = graph.resolve("batch", "report-29467800-abcde")
    assert isinstance(skipped, Skipped) and "Job/report-29467800 has no known controller" in skipped.reason
