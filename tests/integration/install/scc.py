"""Checks a pod spec against an OpenShift SecurityContextConstraints object, one field at a time."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

# Pod volume source field -> SCC volumes[] name (FSType); the names are the same camelCase keys.
_NON_SOURCE_VOLUME_KEYS = frozenset({"name"})
_SECCOMP_RUNTIME_DEFAULT = ("runtime/default", "RuntimeDefault")


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(group) or []:
            yield f"{group}[{c.get('name')}]", c


def _seccomp_allowed(scc: Mapping[str, Any]) -> list[str]:
    # The stored upstream fixture spells it `seccompProfile`; the current API spells it `seccompProfiles`.
    return list(scc.get("seccompProfiles") or scc.get("seccompProfile") or [])


def _seccomp_ok(profile: Mapping[str, Any] | None, allowed: list[str]) -> bool:
    if not allowed or "*" in allowed:
        return True
    if profile is None:
        return False
    ptype = profile.get("type")
    if ptype == "RuntimeDefault":
        return any(a in _SECCOMP_RUNTIME_DEFAULT for a in allowed)
    if ptype == "Localhost":
        return f"localhost/{profile.get('localhostProfile')}" in allowed
    return ptype == "Unconfined" and "unconfined" in allowed


def violations(spec: Mapping[str, Any], scc: Mapping[str, Any]) -> list[str]:
    """Every reason the SCC would refuse this pod spec (empty when admissible).

    Defaulting SCC fields (requiredDropCapabilities, allowPrivilegeEscalation, seccomp) are required to be
    explicit in the spec, so the same spec also passes Kubernetes' "restricted" Pod Security Standard.
    Range strategies (MustRunAsRange, MustRunAs without ranges) mean the namespace assigns the value, so a
    spec that fixes it would fall outside the range: it must leave it unset.
    """
    out: list[str] = []
    pod_sc: Mapping[str, Any] = spec.get("securityContext") or {}
    for field, allow in (
        ("hostNetwork", "allowHostNetwork"),
        ("hostPID", "allowHostPID"),
        ("hostIPC", "allowHostIPC"),
    ):
        if spec.get(field) and not scc.get(allow):
            out.append(f"spec.{field} is true but {allow} is false")

    allowed_volumes = set(scc.get("volumes") or [])
    for vol in spec.get("volumes") or []:
        sources = [k for k in vol if k not in _NON_SOURCE_VOLUME_KEYS]
        for src in sources:
            if "*" not in allowed_volumes and src not in allowed_volumes:
                out.append(
                    f"volume {vol.get('name')}: type {src} not in allowed volumes {sorted(allowed_volumes)}"
                )
            if src == "hostPath" and not scc.get("allowHostDirVolumePlugin"):
                out.append(f"volume {vol.get('name')}: hostPath but allowHostDirVolumePlugin is false")

    run_as_user = (scc.get("runAsUser") or {}).get("type")
    if (
        run_as_user in ("MustRunAsRange", "MustRunAs")
        and "runAsUser" in pod_sc
        and "uid" not in scc["runAsUser"]
    ):
        out.append(
            f"pod securityContext.runAsUser is fixed ({pod_sc['runAsUser']}); {run_as_user} assigns it"
        )
    if (
        (scc.get("fsGroup") or {}).get("type") == "MustRunAs"
        and "fsGroup" in pod_sc
        and not (scc.get("fsGroup") or {}).get("ranges")
    ):
        out.append(f"pod securityContext.fsGroup is fixed ({pod_sc['fsGroup']}); MustRunAs assigns it")
    if (scc.get("supplementalGroups") or {}).get("type") == "MustRunAs" and pod_sc.get("supplementalGroups"):
        out.append("pod securityContext.supplementalGroups set; MustRunAs assigns them")
    selinux = (scc.get("seLinuxContext") or {}).get("type")
    if (
        selinux == "MustRunAs"
        and pod_sc.get("seLinuxOptions")
        and not scc["seLinuxContext"].get("seLinuxOptions")
    ):
        out.append("pod securityContext.seLinuxOptions set; MustRunAs assigns the namespace's level")

    seccomp_allowed = _seccomp_allowed(scc)
    pod_seccomp = pod_sc.get("seccompProfile")
    if pod_seccomp is not None and not _seccomp_ok(pod_seccomp, seccomp_allowed):
        out.append(f"pod seccompProfile {pod_seccomp} not in {seccomp_allowed}")

    required_drop = set(scc.get("requiredDropCapabilities") or [])
    allowed_add = set(scc.get("allowedCapabilities") or [])
    for where, c in _containers(spec):
        sc: Mapping[str, Any] = c.get("securityContext") or {}
        caps: Mapping[str, Any] = sc.get("capabilities") or {}
        if sc.get("privileged") and not scc.get("allowPrivilegedContainer"):
            out.append(f"{where}: privileged but allowPrivilegedContainer is false")
        if not scc.get("allowPrivilegeEscalation") and sc.get("allowPrivilegeEscalation") is not False:
            out.append(
                f"{where}: allowPrivilegeEscalation must be false (SCC allowPrivilegeEscalation: false)"
            )
        dropped = set(caps.get("drop") or [])
        if not required_drop <= dropped:
            out.append(
                f"{where}: capabilities.drop {sorted(dropped)} lacks required "
                f"{sorted(required_drop - dropped)}"
            )
        added = set(caps.get("add") or [])
        if "*" not in allowed_add and not added <= allowed_add:
            out.append(f"{where}: capabilities.add {sorted(added - allowed_add)} not in allowedCapabilities")
        if (
            run_as_user in ("MustRunAsRange", "MustRunAs")
            and "runAsUser" in sc
            and "uid" not in scc["runAsUser"]
        ):
            out.append(f"{where}: runAsUser is fixed ({sc['runAsUser']}); {run_as_user} assigns it")
        if (
            selinux == "MustRunAs"
            and sc.get("seLinuxOptions")
            and not scc["seLinuxContext"].get("seLinuxOptions")
        ):
            out.append(f"{where}: seLinuxOptions set; MustRunAs assigns the namespace's level")
        if scc.get("readOnlyRootFilesystem") and sc.get("readOnlyRootFilesystem") is not True:
            out.append(f"{where}: readOnlyRootFilesystem must be true")
        effective_seccomp = sc.get("seccompProfile", pod_seccomp)
        if not _seccomp_ok(effective_seccomp, seccomp_allowed):
            out.append(f"{where}: seccompProfile {effective_seccomp} not in {seccomp_allowed}")
        for port in c.get("ports") or []:
            if port.get("hostPort") and not scc.get("allowHostPorts"):
                out.append(f"{where}: hostPort {port['hostPort']} but allowHostPorts is false")
    return out


def policy_violations(spec: Mapping[str, Any]) -> list[str]:
    """podsizer's own rules beyond the SCC: non-root, read-only root filesystem with /tmp as an emptyDir."""
    out: list[str] = []
    pod_sc: Mapping[str, Any] = spec.get("securityContext") or {}
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    for where, c in _containers(spec):
        sc: Mapping[str, Any] = c.get("securityContext") or {}
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
            out.append(f"{where}: runAsNonRoot must be true")
        if sc.get("readOnlyRootFilesystem") is not True:
            out.append(f"{where}: readOnlyRootFilesystem must be true")
        tmp = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") == "/tmp"]
        if not tmp or "emptyDir" not in volumes.get(tmp[0]["name"], {}):
            out.append(f"{where}: /tmp must be an emptyDir mount (the root filesystem is read-only)")
    return out
