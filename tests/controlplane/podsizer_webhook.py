"""The podsizer webhook as a real process (`python -m webhook`, TLS), registered with the apiserver by URL."""

from __future__ import annotations

import ssl
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from certs.generate import generate_bundle, write_bundle
from tests.controlplane.cluster import ADMISSION_CLIENT
from tests.controlplane.kube import create_objects
from tests.controlplane.processes import ManagedProcess, free_port

E2E_NAMESPACE_LABEL = "podsizer.io/e2e-webhook"
WEBHOOK_NAME = "mutate-pods.podsizer.io"


class WebhookProcessError(RuntimeError):
    """The webhook process did not become ready; the message carries its log tail."""


class WebhookProcess:
    """`python -m webhook` on 127.0.0.1:<port> with a certificate from the certs package; restartable."""

    def __init__(
        self,
        workdir: Path,
        kubeconfig: Path,
        settings: Mapping[str, str] | None = None,
        root: Path | None = None,
        client_ca: Path | None = None,
    ) -> None:
        """`client_ca`: /mutate only for the apiserver's client certificate (CN ADMISSION_CLIENT) it signed,
        as the chart sets it up; the probes and /metrics, read here without a certificate, stay open."""
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.settings = dict(settings or {})
        if client_ca is not None:
            self.settings.setdefault("client-ca-file", str(client_ca))
            self.settings.setdefault("client-allowed-names", ADMISSION_CLIENT)
        self.root = root or Path(__file__).resolve().parents[2]
        self.port = free_port()
        bundle = generate_bundle(
            "podsizer-webhook", "podsizer", extra_dns=["localhost"], ip_addresses=["127.0.0.1"]
        )
        self.ca_bundle = bundle.ca_bundle
        self.tls = write_bundle(bundle, workdir / "webhook-tls")
        self.log_path = workdir / "logs" / "webhook.log"
        self._proc: ManagedProcess | None = None
        self._starts = 0

    @property
    def url(self) -> str:
        """The /mutate URL the apiserver calls."""
        return f"https://127.0.0.1:{self.port}/mutate"

    def _ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.tls["ca.crt"]))

    def argv(self) -> list[str]:
        """The command line: every setting as its flag."""
        flags = {
            "host": "127.0.0.1",
            "port": str(self.port),
            "tls-cert-file": str(self.tls["tls.crt"]),
            "tls-key-file": str(self.tls["tls.key"]),
            "store": "crd",
            "kubeconfig": str(self.kubeconfig),
            **self.settings,
        }
        return [sys.executable, "-m", "webhook", *(f"--{k}={v}" for k, v in flags.items())]

    def start(self, timeout_s: float = 60.0) -> None:
        """Starts the process and waits until /readyz answers 200 (the recommendation store is loaded)."""
        self._starts += 1
        proc = ManagedProcess(f"webhook#{self._starts}", self.argv(), self.log_path, cwd=self.root)
        self._proc = proc
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        while time.monotonic() < deadline:
            if proc.exit_code() is not None:
                raise WebhookProcessError(f"webhook exited before it was ready:\n{proc.describe_failure()}")
            try:
                answer = httpx.get(f"https://127.0.0.1:{self.port}/readyz", verify=self._ssl(), timeout=2.0)
                if answer.status_code == 200:
                    return
                last = f"HTTP {answer.status_code} {answer.text[:200]}"
            except httpx.HTTPError as e:
                last = repr(e)
            time.sleep(0.3)
        proc.stop()
        raise WebhookProcessError(
            f"webhook not ready after {timeout_s:.0f} s ({last}):\n{proc.describe_failure()}"
        )

    def kill(self) -> None:
        """SIGKILLs the process (no graceful shutdown), as a crash would."""
        if self._proc is not None:
            self._proc.kill()

    def stop(self) -> None:
        """Stops the process gracefully."""
        if self._proc is not None:
            self._proc.stop()

    def describe(self) -> str:
        """State and log tail, for failure messages."""
        return self._proc.describe_failure() if self._proc is not None else "webhook never started"

    def review_count(self, outcome: str, reason: str) -> float:
        """podsizer_webhook_reviews_total{outcome, reason} from the process's /metrics."""
        text = httpx.get(f"https://127.0.0.1:{self.port}/metrics", verify=self._ssl(), timeout=5.0).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if (
                    sample.name == "podsizer_webhook_reviews_total"
                    and sample.labels.get("outcome") == outcome
                    and sample.labels.get("reason") == reason
                ):
                    return float(sample.value)
        return 0.0


def mutating_webhook_configuration(
    name: str, url: str, ca_bundle_b64: str, namespace_labels: Mapping[str, str], timeout_s: int = 5
) -> dict[str, Any]:
    """The chart's MutatingWebhookConfiguration, clientConfig.url instead of a Service (no kube-proxy)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": WEBHOOK_NAME,
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": url, "caBundle": ca_bundle_b64},
                "failurePolicy": "Ignore",
                "matchPolicy": "Equivalent",
                "reinvocationPolicy": "IfNeeded",
                "sideEffects": "None",
                "timeoutSeconds": timeout_s,
                "namespaceSelector": {"matchLabels": dict(namespace_labels)},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods"],
                        "scope": "Namespaced",
                    }
                ],
            }
        ],
    }


def register_webhook(
    api_client: client.ApiClient, name: str, hook: WebhookProcess, namespace_labels: Mapping[str, str]
) -> None:
    """Creates (or replaces) the MutatingWebhookConfiguration pointing the apiserver at `hook`."""
    api = client.AdmissionregistrationV1Api(api_client)
    body = mutating_webhook_configuration(name, hook.url, hook.ca_bundle, namespace_labels)
    try:
        api.delete_mutating_webhook_configuration(name)
    except client.ApiException as e:
        if e.status != 404:
            raise
    create_objects(api_client, [body])
