"""The real node's kubelet v1.35: its credentials, its configuration on cgroup v1, the process."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kubeconfig import write_kubeconfig
from tests.controlplane.node.containerd import SOCKET
from tests.controlplane.node.host import CGROUP_ROOT, GATEWAY
from tests.controlplane.processes import ManagedProcess, free_port

NODE_NAME = "realnode-0"
LABEL = "podsizer.io/realnode"  # on the Node; realnode pods select it and tolerate the taint of that key
TAINT = {"key": LABEL, "value": "true", "effect": "NoSchedule"}  # other tests' pods stay on kwok nodes
TOLERATION = {"key": LABEL, "operator": "Exists", "effect": "NoSchedule"}


def config(plane: ControlPlane, workdir: Path, port: int, healthz_port: int) -> dict[str, object]:
    """KubeletConfiguration: cgroup v1 allowed (failCgroupV1: false, Kubernetes 1.35 refuses it otherwise),
    cgroupfs under the node's cgroup root, containerd's CRI socket, serving on the bridge address with the
    apiserver's webhook authentication and authorization (Prometheus' token is checked as in a cluster),
    kernel defaults only read (NodeHost shows the kubelet its values), evictions and image GC off (this
    shared machine's disk and memory are not the node's to manage), no cluster DNS."""
    (workdir / "resolv.conf").write_text("")
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{CGROUP_ROOT}",
        "containerRuntimeEndpoint": f"unix://{SOCKET}",
        "address": GATEWAY,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(plane.ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "registerWithTaints": [TAINT],
        "resolvConf": str(workdir / "resolv.conf"),
        "podLogsDir": str(workdir / "pod-logs"),
        "protectKernelDefaults": True,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "makeIPTablesUtilChains": False,  # KUBE-FIREWALL and its canaries: kube-proxy's, not this machine's
        "maxPods": 30,
        "serializeImagePulls": False,
        "nodeStatusUpdateFrequency": "5s",
    }


class Kubelet:
    """The kubelet as system:node:NODE_NAME (a client certificate from the test CA, group system:nodes: the
    Node authorizer and NodeRestriction apply), in the node's mount namespace."""

    def __init__(self, plane: ControlPlane, workdir: Path, nsenter: list[str], binary: Path) -> None:
        self.plane = plane
        self.workdir = workdir
        self.nsenter = nsenter
        self.binary = binary
        self.port = free_port()
        self.healthz_port = free_port()
        self.process: ManagedProcess | None = None
        self.log_path = workdir / "logs" / "kubelet.log"

    def start(self) -> None:
        assert self.plane.ca is not None
        cert = self.plane.ca.issue_client("kubelet", f"system:node:{NODE_NAME}", ["system:nodes"])
        kubeconfig = write_kubeconfig(
            self.workdir / "kubelet.kubeconfig",
            self.plane.server,
            self.plane.ca_file,
            f"system:node:{NODE_NAME}",
            cert=cert,
        )
        conf = self.workdir / "kubelet.yaml"
        conf.write_text(yaml.safe_dump(config(self.plane, self.workdir, self.port, self.healthz_port)))
        self.process = ManagedProcess(
            "kubelet",
            [
                *self.nsenter,
                str(self.binary),
                f"--config={conf}",
                f"--kubeconfig={kubeconfig}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={GATEWAY}",
                f"--node-labels={LABEL}=true",
                "--v=1",
            ],
            self.log_path,
        )

    @property
    def url(self) -> str:
        """Where the kubelet serves /metrics/cadvisor, /metrics/resource, /pods (HTTPS, self-signed)."""
        return f"https://{GATEWAY}:{self.port}"

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
