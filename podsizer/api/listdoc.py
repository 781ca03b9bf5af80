"""The RecommendationList document: the JSON file store the recommender writes and the webhook reads."""

from __future__ import annotations

from typing import Any

from podsizer.api.wire import API_GROUP, API_VERSION

LIST_KIND = "RecommendationList"
LIST_API_VERSION = f"{API_GROUP}/{API_VERSION}"


class ListDocumentError(ValueError):
    """The document itself is not a RecommendationList; the message names what is wrong."""


def list_items(doc: Any) -> list[Any]:
    """The raw items of a parsed RecommendationList ([] when it has none); items are not decoded here."""
    if not isinstance(doc, dict):
        raise ListDocumentError(f"expected a JSON object ({LIST_KIND}), got {type(doc).__name__}")
    if doc.get("kind") != LIST_KIND:
        raise ListDocumentError(f"kind: expected {LIST_KIND!r}, got {doc.get('kind')!r}")
    if doc.get("apiVersion") != LIST_API_VERSION:
        raise ListDocumentError(f"apiVersion: expected {LIST_API_VERSION!r}, got {doc.get('apiVersion')!r}")
    items = doc.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise ListDocumentError(f"items: expected a list, got {type(items).__name__}")
    return items


def list_document(items: list[Any]) -> dict[str, Any]:
    """The RecommendationList wrapping already encoded items."""
    return {"apiVersion": LIST_API_VERSION, "kind": LIST_KIND, "items": items}
