"""Files a setting names, read within a cap: a regular file only (never a device, a FIFO or a directory,
which could be read forever), and never more bytes than the cap, checked before a byte is read."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class FileRefused(ValueError):
    """A file not to read: not a regular file, or larger than its cap; the message names the file and the
    cap."""


def read_capped(path: Path, max_bytes: int, cap: str, what: str) -> bytes:
    """The bytes of `path`, read only when it is a regular file of at most `max_bytes` (FileRefused else,
    nothing read); `cap` says the cap and its setting, `what` the file's role ("a store file").
    FileNotFoundError when absent, OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the open
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _kind(info.st_mode)
            raise FileRefused(f"{path}: a {kind}, not a regular file: {what} is never read from one")
        if info.st_size > max_bytes:
            raise FileRefused(f"{path}: {info.st_size} bytes, more than {cap}")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew since fstat
        raise FileRefused(f"{path}: over {max_bytes} bytes, more than {cap}")
    return data


def _kind(mode: int) -> str:
    kinds = {stat.S_ISDIR: "directory", stat.S_ISCHR: "character device", stat.S_ISBLK: "block device"}
    kinds |= {stat.S_ISFIFO: "FIFO", stat.S_ISSOCK: "socket"}
    return next((name for test, name in kinds.items() if test(mode)), "special file")
