"""Durations in settings: Prometheus-style text ("90s", "1m", "2m30s", "24h", "1d") or plain seconds."""

from __future__ import annotations

import math
import re

HOUR = 3600
DAY = 24 * HOUR
WEEK = 7 * DAY
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def seconds(value: object) -> object:
    """A duration as seconds (float); other input unchanged for the field's own validation. "90" and 90
    are seconds; "1m30s" is 90; ValueError for text that is neither."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return value
    if isinstance(value, int | float):
        return float(value)
    text = value.strip().lower()
    if re.fullmatch(r"-?\d+(\.\d+)?", text):
        return float(text)
    if not text or _PART.sub("", text):
        raise ValueError(f"not a duration: {value!r} (e.g. 60s, 2m, 1h30m, 24h, or seconds)")
    total = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(text))
    if not math.isfinite(total):
        raise ValueError(f"not a finite duration: {value!r}")
    return total


def show(value: float, days: bool = True) -> str:
    """Seconds as the shortest duration text: 60 -> 1m, 86400 -> 1d (24h without days), 90 -> 1m30s,
    0.5 -> 0.5s."""
    if value <= 0 or value != int(value):
        return f"{value:g}s"
    rest, out = int(value), ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))[0 if days else 1 :]:
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out
