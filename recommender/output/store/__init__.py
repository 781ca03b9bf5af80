"""Recommendation stores: a JSON file when standalone, the Recommendation custom resource in a cluster."""

from recommender.output.store.base import RecommendationStore, StoreError, merge_for_update
from recommender.output.store.crd import CrdStore
from recommender.output.store.jsonfile import JsonFileStore

__all__ = [
    "CrdStore",
    "JsonFileStore",
    "RecommendationStore",
    "StoreError",
    "merge_for_update",
]
