"""A real Prometheus scraping the real node's kubelet as kube-prometheus does.

Prometheus 3 from its Go module (the tools module, with only its Kubernetes service discovery): Debian's
prometheus 2.42 is built without kubernetes_sd_configs ("field kubernetes_sd_configs not found in type
config.ScrapeConfig"), and kube-prometheus finds kubelets through the kubelet Service's endpoints."""

from __future__ import annotations

import time
from pathlib import Path
from string import Template
from typing import Any

import httpx
import yaml
from kubernetes import client

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import create_from_yaml
from tests.controlplane.processes import ManagedProcess, free_port

HERE = Path(__file__).resolve().parent
OBJECTS = HERE / "monitoring.yaml"
CONFIG_TEMPLATE = HERE / "prometheus.yml"
NAMESPACE, SERVICE_ACCOUNT = "monitoring", "prometheus-k8s"
SCRAPE_INTERVAL_S = 5
PATHS = {"/metrics/cadvisor": 1, "/metrics/resource": 4}  # path -> the ServiceMonitor endpoint's index

# kube-prometheus's metricRelabelings of the cadvisor endpoint, verbatim.
CADVISOR_DROPS: list[dict[str, Any]] = [
    {
        "source_labels": ["__name__"],
        "action": "drop",
        "regex": "container_(network_tcp_usage_total|network_udp_usage_total|tasks_state"
        "|cpu_load_average_10s)",
    },
    {
        "source_labels": ["__name__", "pod", "namespace"],
        "action": "drop",
        "regex": "(container_spec_.*|container_file_descriptors|container_sockets|container_threads_max"
        "|container_threads|container_start_time_seconds|container_last_seen);;",
    },
    {
        "source_labels": ["__name__", "container"],
        "action": "drop",
        "regex": "(container_blkio_device_usage_total);.+",
    },
]


def _relabelings() -> list[dict[str, Any]]:
    """prometheus-operator's relabelling of a ServiceMonitor endpoints target (Service app.kubernetes.io/name
    =kubelet, port https-metrics), then the ServiceMonitor's own: metrics_path from __metrics_path__."""
    meta = "__meta_kubernetes_"
    return [
        {"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"},
        {
            "action": "keep",
            "regex": "(kubelet);true",
            "source_labels": [
                f"{meta}service_label_app_kubernetes_io_name",
                f"{meta}service_labelpresent_app_kubernetes_io_name",
            ],
        },
        {"action": "keep", "regex": "https-metrics", "source_labels": [f"{meta}endpoint_port_name"]},
        {
            "source_labels": [f"{meta}endpoint_address_target_kind", f"{meta}endpoint_address_target_name"],
            "separator": ";",
            "regex": "Node;(.*)",
            "replacement": "${1}",
            "target_label": "node",
        },
        {
            "source_labels": [f"{meta}endpoint_address_target_kind", f"{meta}endpoint_address_target_name"],
            "separator": ";",
            "regex": "Pod;(.*)",
            "replacement": "${1}",
            "target_label": "pod",
        },
        {"source_labels": [f"{meta}namespace"], "target_label": "namespace"},
        {"source_labels": [f"{meta}service_name"], "target_label": "service"},
        {"source_labels": [f"{meta}pod_name"], "target_label": "pod"},
        {"source_labels": [f"{meta}pod_container_name"], "target_label": "container"},
        {"source_labels": [f"{meta}service_name"], "target_label": "job", "replacement": "${1}"},
        {
            "source_labels": [f"{meta}service_label_app_kubernetes_io_name"],
            "target_label": "job",
            "regex": "(.+)",
            "replacement": "${1}",
        },
        {"target_label": "endpoint", "replacement": "https-metrics"},
        {"source_labels": ["__metrics_path__"], "target_label": "metrics_path", "action": "replace"},
    ]


def scrape_jobs(plane: ControlPlane, token_file: Path) -> list[dict[str, Any]]:
    """The kubelet jobs for /metrics/cadvisor and /metrics/resource (kube-prometheus's endpoint settings)."""
    jobs = []
    for path, index in PATHS.items():
        job: dict[str, Any] = {
            "job_name": f"serviceMonitor/{NAMESPACE}/kubelet/{index}",
            "honor_labels": True,
            "metrics_path": path,
            "scheme": "https",
            "authorization": {"type": "Bearer", "credentials_file": str(token_file)},
            "tls_config": {"insecure_skip_verify": True},
            "kubernetes_sd_configs": [
                {
                    "role": "endpoints",
                    "namespaces": {"names": ["kube-system"]},
                    "api_server": plane.server,
                    "tls_config": {"ca_file": str(plane.ca_file)},
                    "authorization": {"type": "Bearer", "credentials_file": str(token_file)},
                }
            ],
            "relabel_configs": _relabelings(),
        }
        if path == "/metrics/cadvisor":
            job["honor_timestamps"] = False
            job["metric_relabel_configs"] = CADVISOR_DROPS
        jobs.append(job)
    return jobs


def install(admin: client.ApiClient, node_name: str) -> None:
    """kube-prometheus's ServiceAccount and roles, the kubelet Service, and its Endpoints for `node_name` at
    the address and port the kubelet reports (status.addresses InternalIP, daemonEndpoints)."""
    create_from_yaml(admin, OBJECTS)
    node = client.CoreV1Api(admin).read_node(node_name)
    ip = next(a.address for a in node.status.addresses if a.type == "InternalIP")
    port = node.status.daemon_endpoints.kubelet_endpoint.port
    endpoints = client.V1Endpoints(
        metadata=client.V1ObjectMeta(
            name="kubelet",
            namespace="kube-system",
            labels={"app.kubernetes.io/name": "kubelet", "k8s-app": "kubelet"},
        ),
        subsets=[
            client.V1EndpointSubset(
                addresses=[
                    client.V1EndpointAddress(
                        ip=ip, target_ref=client.V1ObjectReference(kind="Node", name=node_name)
                    )
                ],
                ports=[client.CoreV1EndpointPort(name="https-metrics", port=port, protocol="TCP")],
            )
        ],
    )
    client.CoreV1Api(admin).create_namespaced_endpoints("kube-system", endpoints)


class ScrapingPrometheus:
    """Prometheus on 127.0.0.1 scraping the kubelet through kube-prometheus's jobs, with the token of
    monitoring/prometheus-k8s (the kubelet asks the apiserver: TokenReview, then SubjectAccessReview for
    nodes/metrics)."""

    def __init__(self, plane: ControlPlane, workdir: Path, binary: Path) -> None:
        self.plane = plane
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.process: ManagedProcess | None = None
        self.log_path = plane.log_dir / "prometheus-realnode.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> None:
        token = self.workdir / "prometheus.token"
        token.write_text(self.plane.service_account_token(NAMESPACE, SERVICE_ACCOUNT, expiration_s=6 * 3600))
        token.chmod(0o600)
        text = Template(CONFIG_TEMPLATE.read_text()).substitute(
            interval=f"{SCRAPE_INTERVAL_S}s",
            timeout=f"{SCRAPE_INTERVAL_S}s",
            jobs=yaml.safe_dump(scrape_jobs(self.plane, token), sort_keys=False),
        )
        config = self.workdir / "prometheus.yml"
        config.write_text(text)
        self.process = ManagedProcess(
            "prometheus-realnode",
            [
                str(self.binary),
                f"--config.file={config}",
                f"--storage.tsdb.path={self.workdir / 'prometheus-data'}",
                "--storage.tsdb.retention.time=1d",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            self.log_path,
        )
        deadline = time.monotonic() + timeout_s
        while not self._ready():
            if self.process.exit_code() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not come up: {self.process.describe_failure()}")
            time.sleep(0.2)

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def targets(self) -> list[dict[str, Any]]:
        """The active targets (job, scrapeUrl, health, lastError)."""
        answer = httpx.get(f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=10).json()
        targets: list[dict[str, Any]] = answer["data"]["activeTargets"]
        return targets

    def wait_until_scraped(self, timeout_s: float = 120.0) -> list[dict[str, Any]]:
        """Both kubelet targets discovered and up (scraped once without error)."""
        deadline = time.monotonic() + timeout_s
        targets: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            targets = self.targets()
            if len(targets) == len(PATHS) and all(t["health"] == "up" for t in targets):
                return targets
            time.sleep(1)
        raise RuntimeError(f"kubelet targets not up after {timeout_s:.0f} s: {targets}")

    def query(self, promql: str) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=30).json()
        if answer.get("status") != "success":
            raise RuntimeError(f"query {promql!r}: {answer}")
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
