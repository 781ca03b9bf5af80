"""The real node's footprint on this machine, made and removed in one place: a private mount namespace, a
cgroup root, a bridge and one NAT rule; what a killed session left is removed by the next one.

- **A mount namespace of its own** (`unshare --mount`, held by a `sleep`): containerd, its shims and the
  kubelet run in it (`nsenter --mount`), so their mounts (overlayfs snapshots, volume tmpfs, network
  namespaces) go away with it, and the paths they hardcode (/run/containerd, /run/netns, /var/lib/cni,
  /var/log/pods, /var/log/containers) are private tmpfs, not the machine's; /var/lib/kubelet is the node's
  own folder. The kubelet sets six kernel tunables (vm.overcommit_memory=1, kernel.panic=10, ...) when they
  differ; this machine is shared, so in the namespace each differing /proc/sys file is covered by a
  read-only file holding the kubelet's value and the kubelet runs with protectKernelDefaults (it only reads
  them). The kernel's behaviour is unchanged.
- **A cgroup root** `/podsizer-realnode` in every cgroup v1 hierarchy (the kubelet's cgroupRoot, cgroupfs
  driver): pods' cgroups live under it and are killed and removed with it.
- **A bridge** `podsizer-rn0` (10.213.0.1/24): the pods' network (Debian's CNI bridge and host-local
  plugins), the kubelet's address, no gateway to the outside (no forwarding, no masquerade: nothing leaves).
- **One NAT rule**: pods reach the `kubernetes` Service (10.0.0.1:443) at the apiserver on 127.0.0.1, as
  kube-proxy would route it (DNAT; route_localnet on the bridge only).

A state file records the namespace, the owner and the rule; the next session removes what a killed one left.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from tests.controlplane.processes import ManagedProcess

BRIDGE = "podsizer-rn0"
SUBNET = "10.213.0.0/24"
GATEWAY = "10.213.0.1"  # the bridge's address: the kubelet's node IP and the pods' route to this machine
PREFIX = 24
POD_RANGE_START = "10.213.0.10"
KUBERNETES_SERVICE = ("10.0.0.1", 443)  # the apiserver's Service address (tests.controlplane.cluster range)
CGROUP_ROOT = "podsizer-realnode"
CGROUP_FS = Path("/sys/fs/cgroup")
PRIVATE_DIRS = ("/run/containerd", "/run/netns", "/var/lib/cni", "/var/log/pods", "/var/log/containers")
# The kubelet's root dir holds paths it never takes from --root-dir (device-plugins/kubelet.sock, pki/): the
# node's own folder is bound there, on disk, readable from this side.
KUBELET_DIR = "/var/lib/kubelet"
# What the kubelet sets when they differ (pkg/kubelet/cm/container_manager_linux.go setupKernelTunables).
KUBELET_TUNABLES = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
STATE_FILE = Path("/tmp/podsizer-realnode.json")
LOCK_FILE = Path("/tmp/podsizer-realnode.lock")
RULE_COMMENT = "podsizer-realnode"


class HostError(RuntimeError):
    """The node's footprint could not be made; the message names the command and its error."""


@dataclass(frozen=True)
class State:
    """What a session put on this machine, for the next one to remove if this one was killed."""

    owner: int  # the test process
    mount_ns: int  # inode of the node's mount namespace
    apiserver_port: int
    created_dirs: tuple[str, ...]


def run(args: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs a host command; HostError with the command and its output when it fails (if check)."""
    proc = subprocess.run(list(args), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise HostError(
            f"`{' '.join(args)}` exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()}"
        )
    return proc


def cgroup_hierarchies(unified: bool = False) -> list[Path]:
    """The cgroup v1 hierarchies mounted under /sys/fs/cgroup (cpu and cpuacct apart here), and with
    `unified` the cgroup2 mount beside them (runc mirrors a hybrid host's container cgroups there)."""
    kinds = ("cgroup", "cgroup2") if unified else ("cgroup",)
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] in kinds and fields[1].startswith(str(CGROUP_FS) + "/"):
            out.append(Path(fields[1]))
    return sorted(out)


def mount_ns_inode(pid: int) -> int:
    return os.stat(f"/proc/{pid}/ns/mnt").st_ino


def pids_in_mount_ns(inode: int) -> list[int]:
    """Every process whose mount namespace is `inode` (the node's daemons and shims; never this process)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if os.stat(entry / "ns" / "mnt").st_ino == inode:
                out.append(int(entry.name))
    return out


def cgroup_pids(root: str = CGROUP_ROOT) -> list[int]:
    """Every process in the node's cgroup root or below it (the pods' containers)."""
    pids: set[int] = set()
    for hierarchy in cgroup_hierarchies(unified=True):
        base = hierarchy / root
        if base.is_dir():
            for procs in base.rglob("cgroup.procs"):
                with contextlib.suppress(OSError):
                    pids.update(int(p) for p in procs.read_text().split())
    return sorted(pids)


def kill_all(pids: Sequence[int], sig: signal.Signals = signal.SIGKILL) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _wait_gone(list_pids: object, timeout_s: float) -> list[int]:
    assert callable(list_pids)
    deadline = time.monotonic() + timeout_s
    left: list[int] = list_pids()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = list_pids()
    return left


def remove_cgroups(root: str = CGROUP_ROOT) -> list[str]:
    """rmdir the cgroup root in every hierarchy, deepest first; what could not be removed."""
    left = []
    for hierarchy in cgroup_hierarchies(unified=True):
        base = hierarchy / root
        if not base.is_dir():
            continue
        dirs = sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        for path in [*dirs, base]:
            for _ in range(20):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                left.append(str(path))
    return left


def _nat_rule(apiserver_port: int) -> list[str]:
    ip, port = KUBERNETES_SERVICE
    return [
        "PREROUTING",
        "-i",
        BRIDGE,
        "-d",
        f"{ip}/32",
        "-p",
        "tcp",
        "--dport",
        str(port),
        "-m",
        "comment",
        "--comment",
        RULE_COMMENT,
        "-j",
        "DNAT",
        "--to-destination",
        f"127.0.0.1:{apiserver_port}",
    ]


def remove_network(apiserver_port: int | None) -> None:
    """The NAT rule (every copy of it) and the bridge, if there."""
    if apiserver_port is not None:
        while run(["iptables", "-t", "nat", "-D", *_nat_rule(apiserver_port)], check=False).returncode == 0:
            pass
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        run(["ip", "link", "delete", BRIDGE], check=False)


def sweep(state_file: Path = STATE_FILE) -> str:
    """Removes what a killed session left (its state file names it); '' or a line saying what was removed."""
    if not state_file.exists():
        return ""
    try:
        raw = json.loads(state_file.read_text())
        state = State(
            int(raw["owner"]), int(raw["mount_ns"]), int(raw["apiserver_port"]), tuple(raw["created_dirs"])
        )
    except (ValueError, TypeError, KeyError) as exc:
        state_file.unlink()
        return f"unreadable {state_file} removed ({exc})"
    if Path(f"/proc/{state.owner}").exists() and state.owner != os.getpid():
        raise HostError(f"another test session (pid {state.owner}) runs the real node ({state_file})")
    kill_all(cgroup_pids())
    kill_all(pids_in_mount_ns(state.mount_ns))
    _wait_gone(cgroup_pids, 10)
    remove_cgroups()
    remove_network(state.apiserver_port)
    for d in state.created_dirs:
        with contextlib.suppress(OSError):
            os.rmdir(d)
    state_file.unlink()
    return f"removed what session {state.owner} left (cgroups, bridge, NAT rule, processes)"


class NodeHost:
    """The node's footprint; start() makes it, stop() removes it (safe to call twice)."""

    def __init__(self, workdir: Path, apiserver_port: int) -> None:
        self.workdir = workdir
        self.apiserver_port = apiserver_port
        self.holder: ManagedProcess | None = None
        self.mount_ns = 0
        self.swept = ""
        self._lock: IO[str] | None = None
        self._created_dirs: list[str] = []

    def nsenter(self) -> list[str]:
        """The prefix that runs a command in the node's mount namespace."""
        assert self.holder is not None, "not started"
        return ["nsenter", f"--mount=/proc/{self.holder.pid}/ns/mnt", "--"]

    def start(self) -> None:
        self._lock = LOCK_FILE.open("w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HostError(f"another test session holds {LOCK_FILE}: one real node per machine") from None
        self.swept = sweep()
        self._namespace()
        self._record()
        self._private_dirs()
        self._kernel_tunables()
        self._cgroup_root()
        self._network()

    def _namespace(self) -> None:
        own = mount_ns_inode(os.getpid())
        self.holder = ManagedProcess(
            "node-namespace",
            ["unshare", "--mount", "--propagation", "private", "sleep", "infinity"],
            self.workdir / "logs" / "node-namespace.log",
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.holder.exit_code() is not None:
                raise HostError(f"unshare --mount failed: {self.holder.describe_failure()}")
            with contextlib.suppress(OSError):
                if (inode := mount_ns_inode(self.holder.pid)) != own:
                    self.mount_ns = inode
                    return
            time.sleep(0.05)
        raise HostError("unshare --mount: no new mount namespace after 10 s")

    def _record(self) -> None:
        state = State(os.getpid(), self.mount_ns, self.apiserver_port, tuple(self._created_dirs))
        STATE_FILE.write_text(json.dumps(asdict(state)) + "\n")

    def _private_dirs(self) -> None:
        for d in PRIVATE_DIRS:
            if not Path(d).exists():
                Path(d).mkdir(parents=True)
                self._created_dirs.append(d)
            run([*self.nsenter(), "mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", d])
        if not Path(KUBELET_DIR).exists():
            Path(KUBELET_DIR).mkdir(parents=True)
            self._created_dirs.append(KUBELET_DIR)
        (self.workdir / "kubelet").mkdir(exist_ok=True)
        run([*self.nsenter(), "mount", "--bind", str(self.workdir / "kubelet"), KUBELET_DIR])
        self._record()

    def _kernel_tunables(self) -> None:
        values = self.workdir / "kernel-tunables"
        values.mkdir(exist_ok=True)
        for name, wanted in KUBELET_TUNABLES.items():
            path = Path("/proc/sys") / name
            if not path.exists() or path.read_text().strip() == wanted:
                continue
            cover = values / name.replace("/", ".")
            cover.write_text(wanted + "\n")
            run([*self.nsenter(), "mount", "--bind", "-o", "ro", str(cover), str(path)])
            run([*self.nsenter(), "mount", "-o", "remount,bind,ro", str(path)])

    def _cgroup_root(self) -> None:
        for hierarchy in cgroup_hierarchies():
            base = hierarchy / CGROUP_ROOT
            base.mkdir(exist_ok=True)
            if (hierarchy / "cpuset.cpus").exists():  # a new cpuset cgroup starts empty: no task may join it
                for name in ("cpuset.cpus", "cpuset.mems"):
                    (base / name).write_text((hierarchy / name).read_text())

    def _network(self) -> None:
        remove_network(self.apiserver_port)
        run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        run(["ip", "addr", "add", f"{GATEWAY}/{PREFIX}", "dev", BRIDGE])
        run(["ip", "link", "set", BRIDGE, "up"])
        # DNAT to 127.0.0.1 needs route_localnet on the interface the packets come in on (this bridge only).
        Path(f"/proc/sys/net/ipv4/conf/{BRIDGE}/route_localnet").write_text("1\n")
        run(["iptables", "-t", "nat", "-A", *_nat_rule(self.apiserver_port)])

    def stop(self) -> list[str]:
        """Kills the pods' containers and the node's processes, removes the cgroups, the bridge, the rule, the
        private dirs it created; what could not be removed (empty: everything)."""
        problems: list[str] = []
        kill_all(cgroup_pids())
        if self.mount_ns:
            kill_all(pids_in_mount_ns(self.mount_ns), signal.SIGTERM)
            left = _wait_gone(lambda: pids_in_mount_ns(self.mount_ns), 10)
            kill_all(left)
        if left_pids := _wait_gone(cgroup_pids, 10):
            problems.append(f"processes still in the cgroups: {left_pids}")
        if self.holder is not None:
            self.holder.kill()
        problems += [f"cgroup {c} not removed" for c in remove_cgroups()]
        remove_network(self.apiserver_port)
        for d in self._created_dirs:
            with contextlib.suppress(OSError):
                os.rmdir(d)
        self._created_dirs.clear()
        STATE_FILE.unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        self.mount_ns = 0
        return problems


def remove_tree(path: Path) -> None:
    """rm -rf, after the namespace's mounts are gone (they never were on this side)."""
    shutil.rmtree(path, ignore_errors=True)
