"""Standalone store: every Recommendation in one JSON RecommendationList file, replaced atomically.

The webhook polls this file, so a write never leaves half a file behind: the new content goes to a
temporary file in the same directory, is fsynced, then os.replace()d over the old one (and the
directory is fsynced). A file that is not a valid RecommendationList is never overwritten: reading
or writing it raises StoreError naming the file, and the user fixes or moves it; so does a file that is
not a regular file or is larger than the cap (PODSIZER_STORE_FILE_MAX_BYTES), which is never read, and a
write that would make the file larger than the cap is refused, the old file kept. Items the codec rejects
are kept as they are on write, skipped (with a log line) on read.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from podsizer.api.identity import WorkloadRef
from podsizer.api.listdoc import (
    DEFAULT_MAX_FILE_BYTES,
    LIST_KIND,
    ListDocumentError,
    ListFileError,
    list_document,
    list_items,
    read_list_file,
    unwritable_size,
)
from podsizer.api.resource import (
    ContainerPolicy,
    Recommendation,
    RecommendationError,
    object_name,
    recommendation_from_resource,
    recommendation_to_resource,
)
from recommender.output.store.base import StoreError, bounds_of, merge_for_update
from recommender.tempfiles import atomic_write as _atomic_write
from recommender.tempfiles import remove_stale_writes

log = logging.getLogger("podsizer.store")

_Key = tuple[str, str, str]
_Items = list[dict[str, Any]]
_Recs = list[Recommendation]
_Failures = list[tuple[Recommendation, Exception]]


def _key_of(item: Mapping[str, Any]) -> _Key | None:
    """(cluster, namespace, name): two clusters' `web` are two items ("" cluster: a single-cluster setup)."""
    meta, status = item.get("metadata"), item.get("status")
    if not isinstance(meta, Mapping):
        return None
    ns, name = meta.get("namespace"), meta.get("name")
    cluster = status.get("cluster") if isinstance(status, Mapping) else None
    if isinstance(ns, str) and isinstance(name, str):
        return (cluster if isinstance(cluster, str) else "", ns, name)
    return None


def _rec_key(rec: Recommendation) -> _Key:
    return (rec.target.cluster, rec.namespace, rec.name)


def _sort_key(item: Any) -> _Key:
    return (_key_of(item) if isinstance(item, Mapping) else None) or ("", "", "")


class JsonFileStore:
    """A RecommendationStore in one JSON file; safe for one writer process and any number of readers."""

    def __init__(
        self, path: str | Path, clean_temp_files: bool = True, max_bytes: int = DEFAULT_MAX_FILE_BYTES
    ) -> None:
        """`clean_temp_files`: remove stale temp files of an interrupted write (remove_stale_writes);
        `max_bytes`: the most bytes of the file read or written."""
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        if clean_temp_files:
            remove_stale_writes(self.path)

    def __repr__(self) -> str:
        return f"JsonFileStore({str(self.path)!r})"

    def _read_items(self) -> _Items:
        """The raw items; [] when the file does not exist yet; StoreError when it is not a valid list."""
        try:
            raw = read_list_file(self.path, self.max_bytes)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot read the recommendation store: {_why(exc)}") from exc
        except ListFileError as exc:
            raise StoreError(f"{exc} (left untouched; nothing was read)") from exc
        where = f"{self.path}: not a valid {LIST_KIND} (left untouched; fix or move it)"
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise StoreError(f"{where}: invalid JSON: {exc}") from exc
        try:
            return list_items(doc)
        except ListDocumentError as exc:
            raise StoreError(f"{where}: {exc}") from exc

    def _decode(self, items: Sequence[Any]) -> _Recs:
        out: _Recs = []
        for i, item in enumerate(items):
            try:
                out.append(recommendation_from_resource(item))
            except (RecommendationError, ValueError) as exc:
                log.warning("%s: items[%d] (%s) skipped: %s", self.path, i, object_name(item), exc)
        return out

    def list(self) -> _Recs:
        """Every valid recommendation in the file, sorted by cluster, namespace and name."""
        with self._lock:
            return self._decode(self._read_items())

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        return next((r for r in self.list() if r.target == ref), None)

    def bounds(self) -> Mapping[WorkloadRef, tuple[ContainerPolicy, ...]]:
        return bounds_of(self.list())

    def put(self, rec: Recommendation) -> None:
        """Create or update one recommendation (one atomic file write)."""
        failed = self.put_many([rec])
        if failed:
            raise failed[0][1]

    def put_many(self, recs: Sequence[Recommendation]) -> _Failures:
        """Create or update many with one atomic write; a recommendation that cannot be encoded fails
        alone, a file that cannot be read or written fails them all (StoreError)."""
        with self._lock:
            items = self._read_items()
            index: dict[_Key, int] = {}
            for i, item in enumerate(items):
                key = _key_of(item) if isinstance(item, Mapping) else None
                if key is not None:
                    index[key] = i
            failed: _Failures = []
            for rec in recs:
                try:
                    new = recommendation_to_resource(rec)
                except (ValueError, TypeError) as exc:
                    failed.append((rec, StoreError(f"{self.path}: {rec.target}: cannot encode: {exc}")))
                    continue
                new["metadata"].pop("resourceVersion", None)
                key = _rec_key(rec)
                if key in index:
                    items[index[key]] = merge_for_update(items[index[key]], new)
                else:
                    index[key] = len(items)
                    items.append(new)
            if not recs or len(failed) < len(recs):  # an empty run still leaves a valid file
                items.sort(key=_sort_key)
                self._write(items)
            return failed

    def _write(self, items: _Items) -> None:
        data = orjson.dumps(list_document(items), option=orjson.OPT_INDENT_2) + b"\n"
        if len(data) > self.max_bytes:  # its readers would refuse it: the old file stays
            raise StoreError(f"{unwritable_size(self.path, len(data), self.max_bytes)}; the old file is kept")
        target = Path(os.path.realpath(self.path))
        try:
            _atomic_write(target, data)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the recommendation store: {_why(exc)}") from exc


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)
