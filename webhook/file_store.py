"""Standalone store: poll the JSON RecommendationList file and swap in a new snapshot when it changes."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import orjson

from podsizer.api.listdoc import DEFAULT_MAX_FILE_BYTES, read_list_file
from podsizer.snapshot import SnapshotHolder, parse_store_document

log = logging.getLogger("podsizer.webhook.store")


class FileStoreLoader:
    """A bad file (unreadable, not JSON, wrong kind, not a regular file, larger than `max_bytes`) keeps the
    last good snapshot; bad items are skipped."""

    def __init__(
        self,
        path: Path,
        holder: SnapshotHolder,
        clock: Callable[[], datetime],
        poll_interval: float = 5.0,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.path = path
        self.holder = holder
        self.clock = clock
        self.poll_interval = poll_interval
        self.max_bytes = max_bytes
        self.last_error: str | None = None
        self._stamp: tuple[str, int, int, int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def load_once(self) -> bool:
        """Check the file; True when a new snapshot was swapped in."""
        try:
            real = os.path.realpath(self.path)
            st = os.stat(real)
            stamp = (real, st.st_ino, st.st_mtime_ns, st.st_size)
            if stamp == self._stamp:
                self.holder.touch(self.clock())
                return False
            raw = read_list_file(Path(real), self.max_bytes)
            doc = orjson.loads(raw)
            snapshot = parse_store_document(doc, str(self.path), self.clock, self.holder.cluster_name)
        except (OSError, ValueError) as exc:  # orjson.JSONDecodeError is a ValueError
            self.last_error = f"{self.path}: {exc}"
            log.error("store: cannot load %s (keeping the last good snapshot): %s", self.path, exc)
            return False
        self._stamp = stamp
        self.last_error = None
        self.holder.swap(snapshot)
        log.info(
            "store: loaded %d recommendations from %s (%d skipped)",
            len(snapshot),
            self.path,
            len(snapshot.skipped),
        )
        return True

    def start(self) -> None:
        self.load_once()
        self._thread = threading.Thread(target=self._loop, name="podsizer-file-store", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_interval):
            self.load_once()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
