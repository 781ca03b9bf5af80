"""Kubernetes resource name syntax (cpu, memory, nvidia.com/gpu, nvidia.com/mig-1g.10gb): a qualified name."""

from __future__ import annotations

import re

# A DNS-1123 subdomain prefix (at most 253 characters), then a name part of at most 63 characters.
_PREFIX = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def is_resource_name(name: str) -> bool:
    """True for a valid resource name: `[prefix/]name`, as Kubernetes validates qualified names."""
    prefix, slash, local = name.rpartition("/")
    if slash and not (len(prefix) <= 253 and _PREFIX.fullmatch(prefix)):
        return False
    return len(local) <= 63 and _NAME.fullmatch(local) is not None


def check_resource_name(name: str) -> str:
    """`name` when it is a valid resource name; ValueError naming it otherwise."""
    if not is_resource_name(name):
        raise ValueError(f"invalid resource name {name!r}")
    return name
