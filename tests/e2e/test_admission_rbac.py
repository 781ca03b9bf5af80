"""The chart's ServiceAccount roles on the real apiserver: each part gets what it needs, nothing more."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from podsizer.api import API_GROUP, API_VERSION, PLURAL, WorkloadRef, recommendation_to_resource
from tests.controlplane.chart import RELEASE_NAMESPACE
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import api_error_message, wait_for
from tests.controlplane.recommendations import simple_recommendation
from tests.controlplane.rollouts import ArgoRolloutsBuild
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]


@pytest.fixture
def chart_roles(chart_rbac: bool, podsizer_crds: list[dict[str, object]]) -> None:
    if not chart_rbac:
        pytest.skip("no helm to render charts/podsizer with (scripts/build_tools.py tools builds it)")


def _sa(control_plane: ControlPlane, name: str) -> client.ApiClient:
    return control_plane.client_for_service_account(RELEASE_NAMESPACE, name)


def _refused(call: Callable[..., object], *args: object) -> str:
    """The apiserver's 403 message for call(*args); fails the test if the call is allowed."""
    with pytest.raises(client.ApiException) as refused:
        call(*args)
    assert refused.value.status == 403, refused.value
    return api_error_message(refused.value)


def test_webhook_reads_what_it_watches_and_writes_nothing(
    control_plane: ControlPlane,
    admin_client: client.ApiClient,
    chart_roles: None,
    argo_rollouts_build: ArgoRolloutsBuild,  # its CRDs are installed: Rollouts can be listed
) -> None:
    webhook = _sa(control_plane, "podsizer-webhook")
    custom, core = client.CustomObjectsApi(webhook), client.CoreV1Api(webhook)
    # RBAC is informer-fed in the apiserver: the first allowed call marks the roles as seen.
    wait_for(lambda: custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL), "webhook role")
    client.AppsV1Api(webhook).list_replica_set_for_all_namespaces()
    core.list_replication_controller_for_all_namespaces()
    core.list_namespace()
    custom.list_cluster_custom_object("argoproj.io", "v1alpha1", "rollouts")
    custom.list_cluster_custom_object("apps.openshift.io", "v1", "deploymentconfigs")
    client.BatchV1Api(webhook).list_job_for_all_namespaces()  # Pod -> Job -> CronJob
    client.BatchV1Api(webhook).list_cron_job_for_all_namespaces()

    rec = recommendation_to_resource(
        simple_recommendation(WorkloadRef("default", "Deployment", "web"), {"main": {"cpu": "1"}})
    )
    message = _refused(custom.create_namespaced_custom_object, API_GROUP, API_VERSION, "default", PLURAL, rec)
    assert 'cannot create resource "recommendations"' in message
    assert 'cannot list resource "secrets"' in _refused(core.list_secret_for_all_namespaces)
    assert 'cannot list resource "secrets"' in _refused(core.list_namespaced_secret, RELEASE_NAMESPACE)
    assert 'cannot create resource "pods"' in _refused(
        core.create_namespaced_pod,
        "default",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": []}},
    )


def test_recommender_writes_recommendations_and_reads_no_secrets(
    control_plane: ControlPlane, admin_client: client.ApiClient, chart_roles: None
) -> None:
    recommender = _sa(control_plane, "podsizer-recommender")
    custom, core = client.CustomObjectsApi(recommender), client.CoreV1Api(recommender)
    wait_for(lambda: custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL), "recommender role")
    rec = simple_recommendation(WorkloadRef("default", "Deployment", "rbac-web"), {"main": {"cpu": "250m"}})
    obj = recommendation_to_resource(rec)
    status = obj.pop("status")
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, "default", PLURAL, obj)
    stored = custom.patch_namespaced_custom_object_status(
        API_GROUP,
        API_VERSION,
        "default",
        PLURAL,
        rec.name,
        {"status": status},
        _content_type="application/merge-patch+json",
    )
    assert isinstance(stored, dict)
    assert stored["status"]["containers"][0]["requests"] == {"cpu": "250m"}
    core.list_pod_for_all_namespaces()
    core.list_node()
    client.BatchV1Api(recommender).list_job_for_all_namespaces()  # Pod -> Job -> CronJob (kube source)
    assert 'cannot list resource "secrets"' in _refused(core.list_secret_for_all_namespaces)
    assert 'cannot get resource "secrets"' in _refused(
        core.read_namespaced_secret, "anything", RELEASE_NAMESPACE
    )
    assert 'cannot delete resource "pods"' in _refused(core.delete_namespaced_pod, "anything", "default")
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, "default", PLURAL, rec.name)
