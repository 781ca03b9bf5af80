"""The Recommendation snapshot: moved to podsizer.snapshot (shared with the updater); re-exported here."""

from podsizer.snapshot import (
    RecommendationSnapshot,
    SnapshotHolder,
    SnapshotProvider,
    parse_store_document,
)

__all__ = ["RecommendationSnapshot", "SnapshotHolder", "SnapshotProvider", "parse_store_document"]
