"""The Kubernetes client of the in-cluster roles (webhook, updater): one way to configure it, one error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from podsizer.settings import setting_error

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def in_cluster_api_client(kubeconfig: Path | None) -> ApiClient:
    """An ApiClient from `kubeconfig`, else the pod's service account (also made the kubernetes package's
    default configuration); a SettingsError naming kubeconfig when neither works."""
    from kubernetes import client, config

    try:
        if kubeconfig is not None:
            config.load_kube_config(config_file=str(kubeconfig))
        else:
            config.load_incluster_config()
    except Exception as exc:
        msg = f"cannot configure the Kubernetes client ({kubeconfig or 'in-cluster'}): {exc}"
        raise setting_error("kubeconfig", msg) from exc
    return client.ApiClient()
