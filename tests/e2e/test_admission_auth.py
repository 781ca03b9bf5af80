"""Authenticated admission with the real apiserver: it presents its client certificate (its
AdmissionConfiguration, tests/controlplane/cluster.py) and the webhook verifies it, as the chart installs
them; the kubelet's probes (HTTPS, no client certificate) are answered; a forged review gets nothing."""

from __future__ import annotations

import ssl
from collections.abc import Callable

import httpx
import orjson
import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Manifest, create_objects, wait_for_pods
from tests.controlplane.podsizer_webhook import WebhookProcess
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import deployment_replicaset, wait_until_webhook_acts, workload
from tests.support.progress import TEST_TIMEOUT_S
from tests.unit.webhook.builders import replicaset_pod, review

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

TEMPLATE = {"requests": {"cpu": "100m", "memory": "64Mi"}}
RECOMMENDED = {"cpu": "250m", "memory": "96Mi"}
NamespaceFactory = Callable[..., str]


def _kubelet() -> ssl.SSLContext:
    """What an httpGet probe with scheme HTTPS does: TLS, no client certificate, the server not verified."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    return ctx


def _rejected(hook: WebhookProcess, code: str) -> float:
    text = httpx.get(f"https://127.0.0.1:{hook.port}/metrics", verify=_kubelet(), timeout=5.0).text
    for line in text.splitlines():
        if line.startswith(f'podsizer_webhook_rejected_requests_total{{code="{code}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_the_apiservers_calls_are_verified_and_mutate_pods(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto")
    before = _rejected(podsizer_webhook, "401"), _rejected(podsizer_webhook, "403")
    put_recommendation(
        admin_client, simple_recommendation(WorkloadRef(ns, "Deployment", "web"), {"main": RECOMMENDED})
    )
    create_objects(admin_client, [workload("apps/v1", "Deployment", "web", 0, TEMPLATE)], namespace=ns)
    rs = deployment_replicaset(admin_client, ns)

    def patched(pod: Manifest) -> bool:
        return "podsizer.io/applied" in (pod["metadata"].get("annotations") or {})

    wait_until_webhook_acts(admin_client, rs, patched, "the webhook to answer the apiserver")
    client.AppsV1Api(admin_client).patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 1}})
    (pod,) = wait_for_pods(admin_client, ns, "ReplicaSet", rs["metadata"]["name"], count=1)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == RECOMMENDED
    assert (_rejected(podsizer_webhook, "401"), _rejected(podsizer_webhook, "403")) == before


def test_kubelet_style_probes_and_scrapes_without_a_client_certificate_are_answered(
    podsizer_webhook: WebhookProcess,
) -> None:
    base = f"https://127.0.0.1:{podsizer_webhook.port}"
    answers = [
        httpx.get(base + path, verify=_kubelet(), timeout=5.0) for path in ("/healthz", "/readyz", "/metrics")
    ]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert b"podsizer_webhook_reviews_total" in answers[2].content


def test_a_forged_review_from_inside_the_cluster_gets_nothing(
    control_plane: ControlPlane, podsizer_webhook: WebhookProcess
) -> None:
    """Without a client certificate: 401 and no recommendation; with one from the cluster's own CA (what a
    user or a pod may get signed): the handshake fails, as the webhook trusts only the apiserver's CA."""
    pod = replicaset_pod(annotations={"podsizer.io/allow-large-change": "true", "podsizer.io/mode": "auto"})
    body = orjson.dumps(review(pod))
    url = f"https://127.0.0.1:{podsizer_webhook.port}/mutate"
    forged = httpx.post(url, content=body, verify=_kubelet(), timeout=5.0)
    assert forged.status_code == 401 and b"patch" not in forged.content
    user = control_plane.user_cert("intruder")
    ctx = _kubelet()
    ctx.load_cert_chain(str(user.cert), str(user.key))
    with pytest.raises(httpx.HTTPError):
        httpx.post(url, content=body, verify=ctx, timeout=5.0)
