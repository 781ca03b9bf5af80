"""Records each decision: a Kubernetes Event on the pod and on its workload, a metric, a log line.

Skips are recorded once per pod and reason (a pass runs every few seconds; the same skip is not news)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from podsizer.api import WorkloadRef
from updater.decide import Action
from updater.kube import EventType, Subject, UpdaterApi
from updater.metrics import UpdaterMetrics

log = logging.getLogger("podsizer.updater")

REASONS: Mapping[tuple[str, bool], str] = {
    ("resized", False): "PodsizerResized",
    ("evicted", False): "PodsizerEvicted",
    ("skipped", False): "PodsizerSkipped",
    ("resized", True): "PodsizerWouldResize",
    ("evicted", True): "PodsizerWouldEvict",
    ("skipped", True): "PodsizerSkipped",
}


def describe(action: Action, dry_run: bool) -> str:
    """The Event message and log text: what was (or would be) done, why, and the changes."""
    changes = ", ".join(
        f"{c.container} {c.field}.{c.resource} {c.old or '-'} -> {c.new or '-'}" for c in action.changes
    )
    verb = {"resized": "resize in place", "evicted": "evict", "skipped": "skip"}[action.kind]
    text = f"{'dry-run: would ' if dry_run and action.kind != 'skipped' else ''}{verb} ({action.reason})"
    if changes:
        text += f": {changes}"
    if action.restarts:
        text += f"; restarts {', '.join(action.restarts)} (resizePolicy RestartContainer)"
    if action.detail:
        text += f"; {action.detail}"
    return text


class Recorder:
    """Events, metric and log line for each decision; remembers the last skip per pod (bounded)."""

    def __init__(
        self, api: UpdaterApi, metrics: UpdaterMetrics, dry_run: bool, remember: int = 10_000
    ) -> None:
        self.api = api
        self.metrics = metrics
        self.dry_run = dry_run
        self.remember = remember
        self._last: OrderedDict[str, str] = OrderedDict()

    def _news(self, uid: str, action: Action) -> bool:
        key = f"{action.kind}:{action.reason}"
        if action.kind == "skipped" and self._last.get(uid) == key:
            return False
        self._last[uid] = key
        self._last.move_to_end(uid)
        while len(self._last) > self.remember:
            self._last.popitem(last=False)
        return True

    def record(
        self, pod: Mapping[str, Any], workload: WorkloadRef, action: Action, dry_run: bool | None = None
    ) -> None:
        """dry_run None: the recorder's own setting (a failed real action is recorded as not dry-run)."""
        dry = self.dry_run if dry_run is None else dry_run
        subject = Subject.of_pod(pod)
        if not self._news(subject.uid or f"{subject.namespace}/{subject.name}", action):
            return
        self.metrics.action(action.kind, action.reason, dry)
        message = describe(action, dry)
        level = logging.INFO if action.kind != "skipped" else logging.DEBUG
        log.log(level, "%s/%s (%s): %s", subject.namespace, subject.name, workload, message)
        type_: EventType = "Warning" if action.kind == "skipped" and action.changes else "Normal"
        reason = REASONS[(action.kind, dry)]
        self.api.event(subject, type_, reason, message)
        self.api.event(Subject.of_workload(workload), type_, reason, f"pod {subject.name}: {message}")
