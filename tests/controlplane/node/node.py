"""RealNode: the host footprint, containerd and its images, the kubelet, and Prometheus scraping it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from kubernetes import client

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import wait_for
from tests.controlplane.node import monitoring
from tests.controlplane.node.containerd import Containerd
from tests.controlplane.node.host import NodeHost, remove_tree
from tests.controlplane.node.kubelet import NODE_NAME, Kubelet
from tests.controlplane.node.parts import NodeParts
from tests.controlplane.processes import ManagedProcess


class RealNode:
    """A real node registered with `plane` beside its kwok nodes: start() returns once the Node is Ready,
    the images are imported and Prometheus scrapes the kubelet; stop() removes everything it made.

    `timings` holds the seconds each start step took (node start, each image import, Prometheus up)."""

    def __init__(self, plane: ControlPlane, parts: NodeParts, workdir: Path | None = None) -> None:
        self.plane = plane
        self.parts = parts
        self.workdir = workdir or Path(plane.workdir) / "realnode"
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        self.host = NodeHost(self.workdir, plane.secure_port)
        self.containerd: Containerd | None = None
        self.kubelet: Kubelet | None = None
        self.prometheus: monitoring.ScrapingPrometheus | None = None
        self.timings: dict[str, float] = {}
        self.name = NODE_NAME

    def start(self, timeout_s: float = 180.0) -> None:
        try:
            self._start(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _timed(self, what: str, start: float) -> None:
        self.timings[what] = round(time.monotonic() - start, 1)

    def _start(self, timeout_s: float) -> None:
        t = time.monotonic()
        self.host.start()
        nsenter = self.host.nsenter()
        self.containerd = Containerd(self.parts, self.workdir, nsenter)
        self.containerd.start()
        for image, seconds in self.containerd.import_images(["pause", "load"]).items():
            self.timings[f"import {image}"] = round(seconds, 1)
        self.kubelet = Kubelet(self.plane, self.workdir, nsenter, self.parts.kubelet)
        self.kubelet.start()
        self._wait_ready(timeout_s)
        self._timed("node ready", t)
        t = time.monotonic()
        admin = self.plane.api_client()
        monitoring.install(admin, self.name)
        self.prometheus = monitoring.ScrapingPrometheus(self.plane, self.workdir, self.parts.prometheus)
        self.prometheus.start()
        self.prometheus.wait_until_scraped()
        self._timed("prometheus scraping", t)

    def import_podsizer_image(self) -> None:
        """The podsizer image (500 MB unpacked: imported when a test first needs it)."""
        assert self.containerd is not None
        if self.parts.refs["podsizer"] in self.containerd.ctr("images", "ls", "-q").stdout.split():
            return
        for image, seconds in self.containerd.import_images(["podsizer"]).items():
            self.timings[f"import {image}"] = round(seconds, 1)

    def _wait_ready(self, timeout_s: float) -> None:
        core = client.CoreV1Api(self.plane.api_client())
        kubelet = self.kubelet
        assert kubelet is not None and kubelet.process is not None

        def ready() -> bool:
            for proc in self.processes():
                if proc.exit_code() is not None:
                    raise RuntimeError(f"{proc.name} ended:\n{proc.describe_failure()}")
            node = core.read_node(self.name)
            return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])

        wait_for(ready, f"Node {self.name} Ready", timeout_s, interval_s=1.0)

    def processes(self) -> list[ManagedProcess]:
        parts = [
            self.host.holder,
            *(p.process for p in (self.containerd, self.kubelet, self.prometheus) if p),
        ]
        return [p for p in parts if p is not None]

    def describe(self) -> str:
        """Each process's state and log tail, for a failure message."""
        return "\n\n".join(p.describe_failure() for p in self.processes())

    def copy_logs(self, destination: Path) -> None:
        """The node's logs (containerd, kubelet, the pods' container logs) into `destination`."""
        destination.mkdir(parents=True, exist_ok=True)
        for log in (self.workdir / "logs").glob("*.log"):
            shutil.copy2(log, destination / log.name)
        pods = self.workdir / "pod-logs"
        if pods.is_dir():
            shutil.copytree(pods, destination / "pod-logs", dirs_exist_ok=True)

    def stop(self) -> list[str]:
        """Prometheus, the kubelet, every container, containerd, then the host footprint; what was left."""
        if self.prometheus is not None:
            self.prometheus.stop()
        if self.kubelet is not None:
            self.kubelet.stop()
        if self.containerd is not None:
            self.containerd.stop()
        problems = self.host.stop()
        return problems

    def remove_workdir(self) -> None:
        remove_tree(self.workdir)
