"""Atomic file writes (`atomic_write`), and the stale temp files of one killed mid-write, removed at start.

A writer holds an exclusive flock on its temp file while it writes (`hold_lock`), so a temp file nobody
has locked is an orphan of a killed writer and goes at once (after a short settle time that covers the
instant between creating the file and locking it). Where locks cannot be tested, age decides: older than
a minute is no write in progress (an atomic write takes well under a second).
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import glob
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("podsizer.tempfiles")

STALE_AFTER_SECONDS = 60.0
SETTLE_SECONDS = 2.0


def hold_lock(fd: int) -> None:
    """Mark the temp file open on `fd` as being written (released when the fd is closed)."""
    with contextlib.suppress(OSError):  # no locks on this filesystem: the cleaner falls back to age
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _unlocked(path: str) -> bool | None:
    """True when no process holds a lock on the file, False when one does, None when it cannot be told."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    finally:
        os.close(fd)  # closing releases our probe lock
    return True


def _orphan(path: str, age: float, stale_after: float) -> bool:
    unlocked = _unlocked(path)
    if unlocked is None:
        return age > stale_after
    return unlocked and age >= SETTLE_SECONDS


def remove_stale_temp_files(
    directory: Path,
    pattern: str,
    stale_after: float = STALE_AFTER_SECONDS,
    now: Callable[[], float] = time.time,
) -> tuple[Path, ...]:
    """Remove regular files in `directory` (not below) whose name matches the glob `pattern` and that no
    writer holds (not locked, a couple of seconds old; or, where locks cannot be tested, older than
    `stale_after`); returns what was removed. Never raises: trouble is logged and the file passed over."""
    removed: list[Path] = []
    freed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        log.debug("temp files: cannot list %s: %s", directory, exc)
        return ()
    for entry in entries:
        if not fnmatch.fnmatchcase(entry.name, pattern):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not entry.is_file(follow_symlinks=False) or not _orphan(
                entry.path, now() - st.st_mtime, stale_after
            ):
                continue
            os.unlink(entry.path)
        except OSError as exc:
            log.warning("temp files: cannot remove stale %s: %s", entry.path, exc)
            continue
        removed.append(Path(entry.path))
        freed += st.st_size
    if removed:
        log.warning(
            "temp files: removed %d stale temporary file(s) of an interrupted write in %s (%d bytes): %s",
            len(removed),
            directory,
            freed,
            ", ".join(p.name for p in removed[:10]),
        )
    return tuple(removed)


def temp_pattern(name: str) -> str:
    """The glob matching the temporary files atomic_write makes for a target named `name`."""
    return f".{glob.escape(name)}.*.tmp"


def remove_stale_writes(path: Path) -> tuple[Path, ...]:
    """The stale temp files of an interrupted atomic_write to `path` removed (remove_stale_temp_files),
    looked for next to the file a link at `path` points to; what a file store does at start."""
    target = Path(os.path.realpath(path))
    return remove_stale_temp_files(target.parent, temp_pattern(target.name))


def atomic_write(target: Path, data: bytes) -> None:
    """tmp file in the same directory (created if missing) + fsync + os.replace + fsync of the directory;
    OSError when any step fails (the temp file is removed then)."""
    directory = target.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    hold_lock(fd)  # tells a starting process that this temp file is being written, not orphaned
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
