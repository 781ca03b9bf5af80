"""Text from outside (metrics labels, AdmissionReviews, store files) shown in a message or log line:
escaped so that it cannot forge a line or a terminal colour, and bounded so that it cannot flood a log.

`shown(value)` is how a name or value that came from outside enters a message: its repr (every control
character escaped, quotes around it), cut to a length. `one_line(text)` escapes the control characters of
a message composed elsewhere (an exception's text). Every role logs through `configure_logging`, whose
formatter applies `one_line` to each message, so no log line can be forged even where a call forgot
`shown`; a traceback keeps its own lines.
"""

from __future__ import annotations

import logging
import sys

MAX_SHOWN_CHARS = 200
"""The most characters of one outside value a message or log line shows."""
_LARGEST_SHOWN_INT_BITS = 256  # a larger integer is described, never converted to (thousands of) digits


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """`value` for a message: the repr of a string or number, its first `limit` characters when longer
    (with its length); the type's name for anything else. A huge string's repr is never built."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value)} characters)"
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value.bit_length() > _LARGEST_SHOWN_INT_BITS
    ):
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, bool | int | float) or value is None:
        return repr(value)
    return type(value).__name__


def one_line(text: str, limit: int | None = None) -> str:
    """`text` with each character that is not printable (newline, carriage return, ESC, other control
    and separator characters) written as its escape (\\n, \\x1b, \\u2028); cut to `limit` characters."""
    cut = text if limit is None or len(text) <= limit else text[:limit]
    out = cut if cut.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    return out if cut is text else f"{out}... ({len(text) - len(cut)} more characters)"


class OneLineFormatter(logging.Formatter):
    """A Formatter whose message part is always one line: `one_line` of the formatted message."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        if record.message.isprintable():
            return super().formatMessage(record)
        safe = logging.makeLogRecord(record.__dict__)
        safe.message = one_line(record.message)
        return super().formatMessage(safe)


def configure_logging(level: str, fmt: str) -> None:
    """The process's logging: records at `level` and above to stderr in `fmt`, each message one line
    (as logging.basicConfig, a no-op when the root logger already has a handler)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(fmt))
    logging.basicConfig(level=level.upper(), handlers=[handler])
