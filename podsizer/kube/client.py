"""The one Kubernetes client factory of every role: which configuration, in which order, and one error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from podsizer.settings import setting_error

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def kube_api_client(kubeconfig: Path | None) -> ApiClient:
    """An ApiClient with a configuration of its own (the kubernetes package's global default is never
    changed): from `kubeconfig` when given, else the pod's service account when running in a cluster, else
    $KUBECONFIG or ~/.kube/config. A SettingsError naming the kubeconfig setting when none works."""
    from kubernetes import client, config

    configuration = client.Configuration()
    if kubeconfig is not None:
        tried = str(kubeconfig)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        tried = "in-cluster"
    else:
        tried = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        if tried == "in-cluster":
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=tried, client_configuration=configuration)
    except Exception as exc:  # the library raises ConfigException, OSError, yaml and key errors alike
        where = tried if tried == "in-cluster" else f"kubeconfig {tried}"
        raise setting_error("kubeconfig", f"cannot configure the Kubernetes client ({where}): {exc}") from exc
    return client.ApiClient(configuration)
