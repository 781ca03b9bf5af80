"""Pods, owners, requests and OOM kills from the Kubernetes API, for stores without kube-state-metrics.

A Prometheus that scrapes only the kubelets (cAdvisor) has container series but no kube_pod_owner,
kube_pod_container_resource_requests or kube_pod_container_status_last_terminated_reason. For such a
namespace the source reads the same facts from the API of the cluster the settings name (kubeconfig,
in-cluster, ~/.kube/config): what is there now, so pods already deleted are not resolved (their series are
skipped as having no pod), and an OOM kill counts while the pod's last termination says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from recommender.input.prometheus.ksm import Identity

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

log = logging.getLogger("podsizer")


class ApiIdentity:
    """Reads a namespace's identity from the API; the client is made on first use (`connect`: None when no
    cluster is configured, then every namespace stays as kube-state-metrics left it)."""

    def __init__(self, connect: Callable[[], ApiClient | None], timeout: float = 60.0) -> None:
        self._connect = connect
        self._timeout = timeout
        self._lock = threading.Lock()
        self._client: ApiClient | None = None
        self._tried = False
        self._told: set[str] = set()

    def _api(self) -> ApiClient | None:
        with self._lock:
            if not self._tried:
                self._tried = True
                self._client = self._connect()
            return self._client

    def fill(self, namespace: str, found: Identity) -> Identity:
        """`found` (kube-state-metrics' answer) when it knows pods; else the API's pods, owner links and OOM
        kills with `found`'s sample counts (those come from cAdvisor's series)."""
        if found.pods:
            return found
        api = self._api()
        if api is None:
            return found
        from recommender.input.kube import load_namespace

        inventory = load_namespace(api, namespace, timeout=self._timeout)
        with self._lock:
            first = namespace not in self._told
            self._told.add(namespace)
        log.log(
            logging.INFO if first else logging.DEBUG,
            "namespace %s: no kube-state-metrics series; %d pods, their owners, requests and OOM kills read "
            "from the Kubernetes API", namespace, len(inventory.pods),
        )  # fmt: skip
        return Identity(
            list(inventory.pods), list(inventory.owners), set(inventory.oom_killed), found.samples
        )
