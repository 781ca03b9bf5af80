"""Every `podsizer.io/` label and annotation key, defined once: each part and decoder reads them here."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PREFIX = "podsizer.io/"

MODE_KEY = "podsizer.io/mode"  # off | dry-run | auto
EXCLUDE_KEY = "podsizer.io/exclude"  # "true": opted out entirely
GPU_KEY = "podsizer.io/gpu"  # keep | resize
ALLOW_LARGE_CHANGE_KEY = "podsizer.io/allow-large-change"  # "true": lifts the maximum change factor
UPDATE_MODE_KEY = "podsizer.io/update-mode"  # off | initial | recreate | in-place-or-recreate
ALLOW_SINGLE_REPLICA_KEY = "podsizer.io/allow-single-replica"  # "true": the updater may evict a lone pod
APPLIED_KEY = "podsizer.io/applied"  # written in auto mode: what changed, from which Recommendation
DRY_RUN_KEY = "podsizer.io/dry-run"  # written in dry-run: exactly the changes auto mode would make
CLUSTER_LABEL = "podsizer.io/cluster"  # on UsageCheckpoint objects: the cluster they hold

READ_KEYS: tuple[str, ...] = (
    MODE_KEY,
    EXCLUDE_KEY,
    GPU_KEY,
    ALLOW_LARGE_CHANGE_KEY,
    UPDATE_MODE_KEY,
    ALLOW_SINGLE_REPLICA_KEY,
)
"""The keys podsizer reads from pods, workloads and namespaces (what a metrics source must carry)."""

WRITTEN_KEYS: tuple[str, ...] = (APPLIED_KEY, DRY_RUN_KEY, CLUSTER_LABEL)
ALL_KEYS: tuple[str, ...] = READ_KEYS + WRITTEN_KEYS

_EMPTY: Mapping[str, str] = MappingProxyType({})


def ours(raw: object) -> Mapping[str, str]:
    """The `podsizer.io/` keys of a label or annotation map, as text (others, e.g.
    last-applied-configuration, are never read and would cost memory for every pod and workload kept)."""
    if not isinstance(raw, Mapping):
        return _EMPTY
    kept = {str(k): str(v) for k, v in raw.items() if str(k).startswith(PREFIX)}
    return MappingProxyType(kept) if kept else _EMPTY
