"""The demo data set with one storefront pod's CPU request changed by hand, so its pods differ."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from recommender.input.demo_cluster import build_demo_dataset
from recommender.model.raw import RawDataset

WORKLOAD = "storefront"
EDITED_CPU = 1.0  # the other two pods request 2 cores


def demo_with_differing_pods(now: datetime) -> RawDataset:
    """The demo, the first storefront pod (by name) requesting EDITED_CPU cores instead of 2."""
    raw = build_demo_dataset(now)
    edited = min(p.name for p in raw.pods if (p.owner_name or "").startswith(WORKLOAD + "-"))
    pods = tuple(
        dataclasses.replace(p, requests={c: {**r, "cpu": EDITED_CPU} for c, r in p.requests.items()})
        if p.name == edited
        else p
        for p in raw.pods
    )
    return dataclasses.replace(raw, pods=pods)
