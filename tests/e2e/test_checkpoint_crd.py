"""CrdCheckpointStore on the real apiserver: UsageCheckpoints round-trip byte for byte, a dropped workload's
object is deleted, an unchanged one is not rewritten, clusters stay apart, a damaged object is reported,
and the chart's recommender ServiceAccount may do all of it (the webhook's may not)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from podsizer.api.identity import WorkloadRef
from podsizer.keys import CLUSTER_LABEL
from recommender.checkpoints.base import BlobKey
from recommender.checkpoints.crdstore import (
    KIND,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    MAX_BLOB_BYTES,
    PLURAL,
    CrdCheckpointStore,
)
from tests.controlplane.chart import RELEASE_NAMESPACE
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import wait_for
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

G, V = "podsizer.io", "v1alpha1"


@pytest.fixture
def two_namespaces(
    podsizer_crds: list[dict[str, Any]], make_namespace: Callable[..., str]
) -> tuple[str, str]:
    return make_namespace(webhook=False), make_namespace(webhook=False)


def _cluster() -> str:
    """A cluster name of this test alone: a store deletes every object of its cluster it is not given."""
    return f"e2e-{uuid.uuid4().hex[:8]}"


def _stored(admin_client: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    obj = client.CustomObjectsApi(admin_client).get_namespaced_custom_object(G, V, namespace, PLURAL, name)
    assert isinstance(obj, dict)
    return obj


def _names(admin_client: client.ApiClient, cluster: str) -> list[tuple[str, str]]:
    listed = client.CustomObjectsApi(admin_client).list_cluster_custom_object(
        G, V, PLURAL, label_selector=f"{CLUSTER_LABEL}={cluster}"
    )
    assert isinstance(listed, dict)
    return sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in listed["items"])


def test_blobs_round_trip_byte_for_byte_across_namespaces(
    admin_client: client.ApiClient, two_namespaces: tuple[str, str]
) -> None:
    a, b = two_namespaces
    cluster = _cluster()
    store = CrdCheckpointStore(admin_client, cluster)
    blobs: dict[BlobKey, bytes] = {
        WorkloadRef(a, "Deployment", "web", cluster): os.urandom(4096),
        WorkloadRef(a, "CronJob", "nightly", cluster): b"",
        WorkloadRef(b, "StatefulSet", "pg", cluster): os.urandom(MAX_BLOB_BYTES),  # the largest that fits
    }
    result = store.write(blobs)
    assert (result.written, result.deleted, result.failed) == (3, 0, ())
    assert result.bytes == 4096 + MAX_BLOB_BYTES

    back = CrdCheckpointStore(admin_client, cluster).read()
    assert back.unreadable == ()
    assert back.blobs == blobs
    obj = _stored(admin_client, a, "deployment-web")
    assert obj["kind"] == KIND
    assert obj["metadata"]["labels"] == {MANAGED_BY_LABEL: MANAGED_BY, CLUSTER_LABEL: cluster}
    assert obj["spec"]["targetRef"] == {"kind": "Deployment", "name": "web"}
    assert obj["spec"]["cluster"] == cluster and obj["spec"]["bytes"] == 4096


def test_a_dropped_workload_loses_its_object_and_an_unchanged_one_is_not_rewritten(
    admin_client: client.ApiClient, two_namespaces: tuple[str, str]
) -> None:
    a, b = two_namespaces
    cluster = _cluster()
    store = CrdCheckpointStore(admin_client, cluster)
    web, pg, api = (
        WorkloadRef(a, "Deployment", "web", cluster),
        WorkloadRef(b, "StatefulSet", "pg", cluster),
        WorkloadRef(b, "Deployment", "api", cluster),
    )
    store.write({web: b"web v1", pg: b"pg v1", api: b"api v1"})
    web_version = _stored(admin_client, a, "deployment-web")["metadata"]["resourceVersion"]
    api_version = _stored(admin_client, b, "deployment-api")["metadata"]["resourceVersion"]

    result = store.write({web: b"web v1", api: b"api v2"})
    assert (result.written, result.deleted, result.failed) == (1, 1, ())
    assert _names(admin_client, cluster) == sorted([(a, "deployment-web"), (b, "deployment-api")])
    assert _stored(admin_client, a, "deployment-web")["metadata"]["resourceVersion"] == web_version
    assert _stored(admin_client, b, "deployment-api")["metadata"]["resourceVersion"] != api_version
    assert store.read().blobs == {web: b"web v1", api: b"api v2"}


def test_another_clusters_objects_are_neither_read_nor_deleted(
    admin_client: client.ApiClient, two_namespaces: tuple[str, str]
) -> None:
    a, b = two_namespaces
    east, west = _cluster(), _cluster()
    east_store, west_store = CrdCheckpointStore(admin_client, east), CrdCheckpointStore(admin_client, west)
    east_store.write({WorkloadRef(a, "Deployment", "web", east): b"east"})
    west_store.write({WorkloadRef(b, "Deployment", "web", west): b"west"})
    single = CrdCheckpointStore(admin_client, "")  # a single-cluster store: objects without a cluster label
    single.write({WorkloadRef(a, "Job", "once"): b"single"})

    assert east_store.read().blobs == {WorkloadRef(a, "Deployment", "web", east): b"east"}
    assert single.read().blobs == {WorkloadRef(a, "Job", "once"): b"single"}
    assert east_store.write({}).deleted == 1
    assert _names(admin_client, east) == []
    assert _names(admin_client, west) == [(b, "deployment-web")]
    assert west_store.read().blobs == {WorkloadRef(b, "Deployment", "web", west): b"west"}
    assert single.write({}).deleted == 1  # leaves no cluster-less object to the rest of the session


def test_a_damaged_object_is_reported_while_the_others_are_read(
    admin_client: client.ApiClient, two_namespaces: tuple[str, str]
) -> None:
    a, b = two_namespaces
    cluster = _cluster()
    store = CrdCheckpointStore(admin_client, cluster)
    good = WorkloadRef(a, "Deployment", "good", cluster)
    store.write({good: b"fine"})
    damaged = {
        "apiVersion": f"{G}/{V}",
        "kind": KIND,
        "metadata": {
            "name": "deployment-bad",
            "namespace": b,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY, CLUSTER_LABEL: cluster},
        },
        "spec": {
            "targetRef": {"kind": "Deployment", "name": "bad"},
            "cluster": cluster,
            "data": "not base64!",
            "bytes": 3,
        },
    }
    client.CustomObjectsApi(admin_client).create_namespaced_custom_object(G, V, b, PLURAL, damaged)

    result = store.read()
    assert result.blobs == {good: b"fine"}
    (line,) = result.unreadable
    assert line.startswith(f"UsageCheckpoint {b}/deployment-bad: spec.data is not base64")


@pytest.fixture
def chart_roles(chart_rbac: bool, podsizer_crds: list[dict[str, Any]]) -> None:
    if not chart_rbac:
        pytest.skip("no helm to render charts/podsizer with (scripts/build_tools.py tools builds it)")


def test_the_recommender_service_account_keeps_checkpoints_and_the_webhooks_cannot_read_them(
    control_plane: ControlPlane, two_namespaces: tuple[str, str], chart_roles: None
) -> None:
    a, b = two_namespaces
    cluster = _cluster()
    recommender = control_plane.client_for_service_account(RELEASE_NAMESPACE, "podsizer-recommender")
    # RBAC is informer-fed in the apiserver: the first allowed call marks the roles as seen.
    wait_for(lambda: client.CustomObjectsApi(recommender).list_cluster_custom_object(G, V, PLURAL), "role")
    store = CrdCheckpointStore(recommender, cluster)
    web, pg = WorkloadRef(a, "Deployment", "web", cluster), WorkloadRef(b, "StatefulSet", "pg", cluster)
    assert store.write({web: b"1", pg: b"2"}).written == 2
    result = store.write({web: b"1b"})  # replace and delete
    assert (result.written, result.deleted, result.failed) == (1, 1, ())
    assert store.read().blobs == {web: b"1b"}

    webhook = control_plane.client_for_service_account(RELEASE_NAMESPACE, "podsizer-webhook")
    with pytest.raises(client.ApiException) as refused:
        client.CustomObjectsApi(webhook).list_cluster_custom_object(G, V, PLURAL)
    assert refused.value.status == 403


def test_a_namespace_admin_cannot_forge_a_checkpoint(
    control_plane: ControlPlane, admin_client: client.ApiClient, two_namespaces: tuple[str, str]
) -> None:
    """The checksum is not keyed: RBAC is what keeps forged checkpoints out. The built-in admin and edit
    roles do not reach usagecheckpoints (the CRD aggregates to neither), so a namespace's own admin cannot
    write one there (docs/install.md "Usage checkpoints")."""
    a, _ = two_namespaces
    rbac = client.RbacAuthorizationV1Api(admin_client)
    for role in ("admin", "edit"):
        rbac.create_namespaced_role_binding(a, {
            "metadata": {"name": f"ns-{role}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"ns-{role}"}],
        })  # fmt: skip
    body = {
        "apiVersion": f"{G}/{V}",
        "kind": KIND,
        "metadata": {"name": "deployment-web", "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {
            "targetRef": {"kind": "Deployment", "name": "web"},
            "cluster": "",
            "data": "AA==",
            "bytes": 1,
        },
    }
    for role in ("admin", "edit"):
        user = client.CustomObjectsApi(control_plane.client_for_user(f"ns-{role}"))
        # the binding is seen once the user may do what the role grants (RBAC is informer-fed)
        wait_for(lambda u=user: client.CoreV1Api(u.api_client).list_namespaced_pod(a) is not None, "role")
        with pytest.raises(client.ApiException) as refused:
            user.create_namespaced_custom_object(G, V, a, PLURAL, body)
        assert refused.value.status == 403
