"""Which requests a workload's pods had when they differ: every table shows one "current" value (the
newest pod's), and this says how many pods had which."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from podsizer.api.quantity import format_resource


@dataclass(frozen=True)
class RequestSet:
    """One container's requests as some of a workload's pods had them, and how many pods."""

    requests: Mapping[str, float]
    pods: int


def request_mix(per_pod: Iterable[Mapping[str, float]]) -> tuple[RequestSet, ...]:
    """The distinct request sets among the pods (one mapping a pod), most pods first; one set (or none):
    the pods agree."""
    pods = list(per_pod)
    if not pods:
        return ()
    if all(r == pods[0] for r in pods[1:]):  # the usual case, without sorting every pod's items
        return (RequestSet(dict(sorted(pods[0].items())), len(pods)),)
    counts = Counter(tuple(sorted(r.items())) for r in pods)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(RequestSet(dict(items), n) for items, n in ranked)


def describe(mix: tuple[RequestSet, ...]) -> str:
    """'pods differ: 2 request cpu 500m, 1 requests cpu 250m; now: the newest pod's' naming only the
    resources that differ; "" when the pods agree."""
    if len(mix) < 2:
        return ""
    names = sorted({k for s in mix for k in s.requests})
    differing = [k for k in names if len({s.requests.get(k) for s in mix}) > 1]
    parts = []
    for s in mix:
        values = " ".join(
            f"{k} {format_resource(k, s.requests[k])}" if k in s.requests else f"{k} unset" for k in differing
        )
        parts.append(f"{s.pods} {'requests' if s.pods == 1 else 'request'} {values}")
    return "pods differ: " + ", ".join(parts) + "; now: the newest pod's"
