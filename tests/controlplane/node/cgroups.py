"""What the kernel enforces on a real node's container: its cgroup v1 files, found from the pod's status."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.controlplane.node.host import CGROUP_FS, CGROUP_ROOT

UNLIMITED = 2**63 - 4096  # memory.limit_in_bytes without a limit (PAGE_COUNTER_MAX pages)
QOS_DIRS = {"Guaranteed": "", "Burstable": "burstable", "BestEffort": "besteffort"}


@dataclass(frozen=True)
class ContainerCgroup:
    """One container's cgroup values: CPU shares and CFS quota (cpu), memory limit, usage and working set
    (memory: usage minus inactive file pages, cAdvisor's and the kubelet's definition), CPU time (cpuacct)."""

    path: str
    cpu_shares: int
    cfs_quota_us: int
    cfs_period_us: int
    memory_limit_bytes: int
    memory_usage_bytes: int
    working_set_bytes: int
    cpu_usage_seconds: float
    oom_kills: int
    pids: tuple[int, ...]

    @property
    def cpu_limit_cores(self) -> float | None:
        return None if self.cfs_quota_us < 0 else self.cfs_quota_us / self.cfs_period_us


def container_path(pod: dict[str, Any], container: str) -> str:
    """The cgroup path (below each hierarchy) the kubelet's cgroupfs driver gave `container` of `pod` (a
    pod as the API returns it, camelCase): <root>/kubepods[/<qos>]/pod<uid>/<container id>."""
    status = pod.get("status", {})
    cid = next(
        (s.get("containerID", "") for s in status.get("containerStatuses") or [] if s["name"] == container),
        "",
    )
    if not cid:
        raise LookupError(f"pod {pod['metadata']['name']}: container {container} has no containerID yet")
    qos = QOS_DIRS[status["qosClass"]]
    parts = [
        CGROUP_ROOT,
        "kubepods",
        *([qos] if qos else []),
        f"pod{pod['metadata']['uid']}",
        cid.split("//")[-1],
    ]
    return "/".join(parts)


def _read(hierarchy: str, path: str, name: str) -> str:
    return (CGROUP_FS / hierarchy / path / name).read_text()


def read(path: str) -> ContainerCgroup:
    """The values of the container cgroup at `path` (as container_path gives it)."""
    stat = dict(line.split() for line in _read("memory", path, "memory.stat").splitlines())
    usage = int(_read("memory", path, "memory.usage_in_bytes"))
    inactive_file = int(stat.get("total_inactive_file", stat.get("inactive_file", "0")))
    oom = dict(line.split() for line in _read("memory", path, "memory.oom_control").splitlines())
    procs = tuple(int(p) for p in _read("pids", path, "cgroup.procs").split())
    return ContainerCgroup(
        path=path,
        cpu_shares=int(_read("cpu", path, "cpu.shares")),
        cfs_quota_us=int(_read("cpu", path, "cpu.cfs_quota_us")),
        cfs_period_us=int(_read("cpu", path, "cpu.cfs_period_us")),
        memory_limit_bytes=int(_read("memory", path, "memory.limit_in_bytes")),
        memory_usage_bytes=usage,
        working_set_bytes=max(0, usage - inactive_file),
        cpu_usage_seconds=int(_read("cpuacct", path, "cpuacct.usage")) / 1e9,
        oom_kills=int(oom.get("oom_kill", "0")),
        pids=procs,
    )


def of(pod: dict[str, Any], container: str) -> ContainerCgroup:
    """The cgroup values of `container` of `pod`."""
    return read(container_path(pod, container))


def process_ids(pid: int) -> dict[str, str]:
    """A process's Uid/Gid/Groups lines of /proc/<pid>/status (real, effective, saved, fs)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Uid", "Gid", "Groups"):
            out[key] = value.strip()
    return out


def root_mount_options(pid: int) -> list[str]:
    """The mount options of a process's root filesystem ("ro" for a read-only root), from its mountinfo."""
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/":
            return fields[5].split(",")
    raise LookupError(f"no / in /proc/{pid}/mountinfo")
