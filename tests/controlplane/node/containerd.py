"""containerd on the real node: its configuration (CRI, Debian's runc and CNI plugins), process, images."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from tests.controlplane.node.host import BRIDGE, GATEWAY, POD_RANGE_START, SUBNET, HostError
from tests.controlplane.node.parts import NodeParts
from tests.controlplane.processes import ManagedProcess

# containerd's default socket: inside the node's mount namespace /run/containerd is a private tmpfs, and
# the kubelet's cAdvisor finds containerd there (its --containerd default) to label container series.
SOCKET = "/run/containerd/containerd.sock"
NAMESPACE = "k8s.io"  # the CRI plugin's containerd namespace


def config(parts: NodeParts, root: Path, cni_conf_dir: Path, sandbox_image: str) -> str:
    """containerd 2.2's config (version 3): its data under `root`, CRI with runc via the v2 shim (cgroupfs:
    SystemdCgroup false), CNI from Debian's plugin folder, the pause image we import as the sandbox.

    restrict_oom_score_adj: this machine denies CAP_SYS_RESOURCE, so no process may lower its OOM score
    (runc fails "failed to update /proc/self/oom_score_adj: Permission denied" for the kubelet's -998 of a
    sandbox); with it containerd raises any score below its own to its own (as for rootless containerd).
    """
    return f"""version = 3
root = '{root / "root"}'
state = '/run/containerd'
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.internal.v1.tracing']
[grpc]
  address = '{SOCKET}'
[ttrpc]
  address = '{SOCKET}.ttrpc'
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '{sandbox_image}'
  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false
    enable_cdi = false
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '{parts.runc}'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['{parts.cni_dir}']
      conf_dir = '{cni_conf_dir}'
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
"""


def cni_config(ipam_dir: Path) -> str:
    """The pods' network: Debian's bridge plugin on BRIDGE (made by NodeHost, it holds GATEWAY), host-local
    addresses from SUBNET, a default route to this machine. isGateway and ipMasq stay off: the plugin would
    turn on IP forwarding and masquerade, and nothing is to leave this machine."""
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": "podsizer-realnode",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": False,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(ipam_dir),
                        "ranges": [[{"subnet": SUBNET, "gateway": GATEWAY, "rangeStart": POD_RANGE_START}]],
                        "routes": [{"dst": "0.0.0.0/0", "gw": GATEWAY}],
                    },
                }
            ],
        },
        indent=2,
    )


class Containerd:
    """containerd started in the node's mount namespace, with ctr to import images and look at tasks."""

    def __init__(self, parts: NodeParts, workdir: Path, nsenter: Sequence[str]) -> None:
        self.parts = parts
        self.workdir = workdir
        self.nsenter = list(nsenter)
        self.process: ManagedProcess | None = None
        self.log_path = workdir / "logs" / "containerd.log"

    def start(self, timeout_s: float = 60.0) -> None:
        cni = self.workdir / "cni"
        (cni / "net.d").mkdir(parents=True, exist_ok=True)
        (cni / "net.d" / "10-podsizer.conflist").write_text(cni_config(cni / "ipam"))
        conf = self.workdir / "containerd.toml"
        conf.write_text(
            config(self.parts, self.workdir / "containerd", cni / "net.d", self.parts.refs["pause"])
        )
        # the shim is found on PATH, next to containerd
        env = {
            "PATH": f"{self.parts.shim.parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        }
        self.process = ManagedProcess(
            "containerd",
            [*self.nsenter, str(self.parts.containerd), "--config", str(conf)],
            self.log_path,
            env=env,
        )
        deadline = time.monotonic() + timeout_s
        while self.ctr("version", check=False).returncode != 0:
            if self.process.exit_code() is not None or time.monotonic() > deadline:
                raise HostError(f"containerd did not come up: {self.process.describe_failure()}")
            time.sleep(0.2)

    def ctr(
        self, *args: str, check: bool = True, timeout_s: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        """`ctr --address SOCKET -n k8s.io ARGS` in the node's mount namespace."""
        argv = [*self.nsenter, str(self.parts.ctr), "--address", SOCKET, "-n", NAMESPACE, *args]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        if check and proc.returncode != 0:
            raise HostError(f"`ctr {' '.join(args)}` exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
        return proc

    def import_images(self, images: Sequence[str]) -> dict[str, float]:
        """Imports each docker archive (unpacked into overlayfs for the CRI); seconds each took."""
        took = {}
        for image in images:
            start = time.monotonic()
            self.ctr("images", "import", str(self.parts.archives[image]))
            took[image] = time.monotonic() - start
        listed = self.ctr("images", "ls", "-q").stdout.split()
        missing = [self.parts.refs[i] for i in images if self.parts.refs[i] not in listed]
        if missing:
            raise HostError(f"containerd lists no {missing} after the import (has {listed})")
        return took

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
