"""Progress on stderr for long runs: an updating line on a TTY, periodic plain lines elsewhere."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import IO


class ProgressPrinter:
    """A Progress callback for stderr: an updating `\\r[12/40] what` line on a TTY, else a plain
    line at most every `interval` seconds (short runs print nothing)."""

    def __init__(
        self,
        stream: IO[str],
        tty: bool,
        *,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.tty = tty
        self.interval = interval
        self.clock = clock
        self._last = clock()
        self._width = 0
        self._printed = False
        self._state: tuple[int, int, str] | None = None

    def __call__(self, done: int, total: int, what: str) -> None:
        self._state = (done, total, what)
        now = self.clock()
        text = f"[{done}/{total}] {what}"
        if self.tty:
            if now - self._last < 0.1 and done < total and self._printed:
                return
            cols = shutil.get_terminal_size((100, 20)).columns - 1
            text = text[:cols]
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            if now - self._last < self.interval:
                return
            self.stream.write(text + "\n")
        self.stream.flush()
        self._last = now
        self._printed = True

    def finish(self) -> None:
        """Clear the TTY line; off a TTY, a last line when earlier ones were printed."""
        if not self._printed:
            return
        if self.tty:
            self.stream.write("\r" + " " * self._width + "\r")
        elif self._state is not None:
            done, total, what = self._state
            self.stream.write(f"[{done}/{total}] {what}\n")
        self.stream.flush()
