"""Cluster-mode caches fed by informers: moved to podsizer.cluster (shared with the updater); re-exported."""

from podsizer.cluster import (
    CrdWatchLoader,
    MetadataCache,
    NodeCache,
    ObjectMeta,
    OwnerCache,
    PolicyCache,
    node_allocatable,
    start_cluster_watches,
)
from podsizer.keys import PREFIX

__all__ = [
    "PREFIX",
    "CrdWatchLoader",
    "MetadataCache",
    "NodeCache",
    "ObjectMeta",
    "OwnerCache",
    "PolicyCache",
    "node_allocatable",
    "start_cluster_watches",
]
