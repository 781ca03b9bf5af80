"""CertApi over the kubernetes client: read/replace the webhook's Secrets, patch the webhook's caBundle."""

from __future__ import annotations

import base64
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path

from kubernetes import client

from certs.renew import RenewError, SecretData
from podsizer.apierrors import KubeApiError, failing_as
from podsizer.kube.client import kube_api_client

STRATEGIC_MERGE = "application/strategic-merge-patch+json"


class KubeCertApi:
    """Only get/update on the two Secrets and patch on the one MutatingWebhookConfiguration (the chart's
    RBAC grants exactly these, by resourceNames)."""

    def __init__(self, kubeconfig: Path | None = None) -> None:
        api = kube_api_client(kubeconfig)
        self._core = client.CoreV1Api(api)
        self._admission = client.AdmissionregistrationV1Api(api)

    def read_secret(self, namespace: str, name: str) -> SecretData | None:
        try:
            with failing_as(f"cannot read Secret {namespace}/{name}"):
                secret = self._core.read_namespaced_secret(name, namespace)
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise RenewError(str(exc)) from exc
        data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
        meta = secret.metadata or client.V1ObjectMeta()
        return SecretData(
            data, meta.resource_version or "", secret.type or "Opaque", meta.labels, meta.annotations
        )

    def replace_secret(self, namespace: str, name: str, old: SecretData, data: Mapping[str, bytes]) -> None:
        """Replace the Secret's data, keeping its type, labels and annotations (Helm's ownership marks);
        the resourceVersion makes a concurrent change fail instead of being overwritten."""
        body = client.V1Secret(
            api_version="v1",
            kind="Secret",
            type=old.type,
            metadata=client.V1ObjectMeta(
                name=name,
                namespace=namespace,
                resource_version=old.resource_version or None,
                labels=dict(old.labels or {}),
                annotations=dict(old.annotations or {}),
            ),
            data={k: base64.b64encode(v).decode("ascii") for k, v in data.items()},
        )
        try:
            with failing_as(f"cannot update Secret {namespace}/{name}"):
                self._core.replace_namespaced_secret(name, namespace, body)
        except KubeApiError as exc:
            raise RenewError(str(exc)) from exc

    def patch_ca_bundle(self, configuration: str, webhooks: Sequence[str], ca_bundle_b64: str) -> None:
        """A strategic merge patch: webhooks merge by name, so no read (and no `get` grant) is needed."""
        body = {"webhooks": [{"name": w, "clientConfig": {"caBundle": ca_bundle_b64}} for w in webhooks]}
        patch = self._admission.patch_mutating_webhook_configuration
        try:
            with failing_as(f"cannot patch MutatingWebhookConfiguration {configuration}"):
                # Clients from v34 on default to a JSON patch and take _content_type; older ones choose
                # strategic merge for a dict body themselves.
                if "_content_type" in inspect.signature(patch).parameters:
                    patch(configuration, body, _content_type=STRATEGIC_MERGE)
                else:
                    patch(configuration, body)
        except KubeApiError as exc:
            raise RenewError(str(exc)) from exc
