"""The updater's passes wait for the watches they read (the e2e harness waits on the same rule)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from updater.cli import watches_synced

NEEDED = ("pods", "recommendations", "replicasets", "namespaces", "deployments", "statefulsets")


def _informer(name: str, synced: bool) -> Any:
    event = threading.Event()
    if synced:
        event.set()
    return SimpleNamespace(name=name, synced=event)


def test_a_pass_waits_for_every_watch_it_reads_and_not_for_optional_ones() -> None:
    ready = [_informer(n, True) for n in (*NEEDED, "daemonsets", "poddisruptionbudgets")]
    assert watches_synced([*ready, _informer("rollouts", False), _informer("deploymentconfigs", False)])
    for name in ("daemonsets", "poddisruptionbudgets", "pods"):
        others = [i for i in ready if i.name != name]
        assert not watches_synced([*others, _informer(name, False)]), name
