"""The one RFC 3339 time format of the Kubernetes API and podsizer's documents: written in UTC with a Z,
read with a Z or an offset (a time without one is UTC); and the one way reports and pages show a time."""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC with a Z suffix; fractional seconds only when there are any."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def format_seconds(value: datetime) -> str:
    """RFC 3339 in whole seconds, as metav1.Time holds it (an Event's timestamps)."""
    return format_time(value.replace(microsecond=0))


def format_micro(value: datetime) -> str:
    """RFC 3339 with exactly six fractional digits, as metav1.MicroTime requires (a Lease's times)."""
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def format_shown(value: datetime) -> str:
    """A time as reports, explanations and the console's pages show it to people: UTC, to the minute."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def parse_time(value: str) -> datetime:
    """An RFC 3339 time as an aware datetime; one without an offset is taken as UTC. ValueError naming the
    text when it is not one."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"invalid RFC 3339 time {value!r}") from exc
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def read_time(value: object) -> datetime | None:
    """A time field of an object read from the API: the time, or None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None
