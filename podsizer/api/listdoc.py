"""The RecommendationList document: the JSON file store the recommender writes and the webhook reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from podsizer.api.quantity import MIB, exact_quantity
from podsizer.api.wire import API_GROUP, API_VERSION
from podsizer.cappedfile import FileRefused, read_capped

LIST_KIND = "RecommendationList"
LIST_API_VERSION = f"{API_GROUP}/{API_VERSION}"
DEFAULT_MAX_FILE_BYTES = 64 * MIB
"""The store file's default cap: at about 1.6 KB a workload (measured on the demo's store) 64Mi holds some
40,000 workloads, which the webhook loads in about 340 MiB (its chart's limit is 512Mi)."""
MIN_MAX_FILE_BYTES = MIB  # some 600 workloads: a smaller cap refuses a small cluster's own store
MAX_MAX_FILE_BYTES = 1024 * MIB  # loading a 1Gi store takes some 5.5 GiB: past it, the crd store


class ListDocumentError(ValueError):
    """The document itself is not a RecommendationList; the message names what is wrong."""


ListFileError = FileRefused
"""The store file is not one to read: not a regular file, or larger than the cap."""


def read_list_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of the store file `path`, read only when it is a regular file of at most `max_bytes`
    (podsizer.cappedfile: a device, a FIFO or a larger file is ListFileError, nothing read);
    FileNotFoundError when absent, OSError when it cannot be read."""
    return read_capped(path, max_bytes, _cap(max_bytes), "a store file")


def unwritable_size(path: Path, size: int, max_bytes: int) -> ListFileError:
    """The error of a store file that a write would make `size` bytes, more than its readers read."""
    return ListFileError(f"{path}: not written: {size} bytes, more than {_cap(max_bytes)}")


def _cap(max_bytes: int) -> str:
    from podsizer.settings.names import where  # the settings import this package: not at module level

    return f"the store file's cap of {exact_quantity('memory', max_bytes)} ({where('store_file_max_bytes')})"


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
