"""PodDisruptionBudgets from a watch: which cover a pod and how many disruptions they allow right now.

The Eviction API stays the authority (it answers 429 when a budget forbids); this only spares the calls
and names the reason while a budget allows none."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from podsizer.selector import Selector, from_label_selector
from updater.podstate import mapping, name_of


@dataclass(frozen=True)
class Budget:
    """One PodDisruptionBudget: its selector and status.disruptionsAllowed."""

    name: str
    selector: Selector | None
    disruptions_allowed: int


def budget_of(obj: Mapping[str, Any]) -> Budget:
    allowed = mapping(obj.get("status")).get("disruptionsAllowed")
    selector = from_label_selector(mapping(obj.get("spec")).get("selector"))
    return Budget(name_of(obj)[1], selector, allowed if type(allowed) is int else 0)


def disruptions_allowed(labels: Mapping[str, str], budgets: Iterable[Budget]) -> int | None:
    """The fewest disruptions the budgets covering these pod labels allow; None when none covers it."""
    allowed = [
        b.disruptions_allowed for b in budgets if b.selector is not None and b.selector.matches(labels)
    ]
    return min(allowed) if allowed else None


class PdbCache:
    """Informer handler: namespace -> its budgets."""

    def __init__(self) -> None:
        self._by_ns: dict[str, dict[str, Budget]] = {}
        self._lock = threading.Lock()

    def budgets(self, namespace: str) -> list[Budget]:
        with self._lock:
            return list(self._by_ns.get(namespace, {}).values())

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        fresh: dict[str, dict[str, Budget]] = {}
        for obj in items:
            fresh.setdefault(name_of(obj)[0], {})[name_of(obj)[1]] = budget_of(obj)
        with self._lock:
            self._by_ns = fresh

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        ns, name = name_of(obj)
        with self._lock:
            if kind == "DELETED":
                self._by_ns.get(ns, {}).pop(name, None)
            else:
                self._by_ns.setdefault(ns, {})[name] = budget_of(obj)
