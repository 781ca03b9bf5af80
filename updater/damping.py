"""Damping across passes: a workload's recommended target is acted on at most once per settling period, and
not while it reverses (docs/updater.md "Damping"), so a flapping Recommendation cannot evict pod after pod."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from podsizer.api import Recommendation, WorkloadRef
from podsizer.api.quantity import format_resource
from podsizer.kube.times import format_shown
from podsizer.podspec import Change, quantity
from podsizer.settings.duration import show
from updater.threshold import off_by_more

OSCILLATING = "target-oscillating"  # the target reversed within the settling period: held until it holds
SETTLING = "target-settling"  # another target was acted on within the settling period: not yet
MAX_SEEN = 32  # targets kept per workload: more changes than this within one period are an oscillation too

Key = tuple[str, str, str]
"""(container, field, resource) of one recommended value."""


@dataclass(frozen=True)
class Target:
    """A workload's recommended values as the updater saw them: each container's requests and limits."""

    amounts: tuple[tuple[Key, Decimal], ...]

    @staticmethod
    def of(rec: Recommendation) -> Target:
        out: list[tuple[Key, Decimal]] = []
        for c in rec.containers:
            for field_, values in (("requests", c.requests), ("limits", c.limits)):
                for resource, text in sorted(values.items()):
                    amount = quantity(text)
                    if amount is not None:
                        out.append(((c.name, field_, resource), amount))
        return Target(tuple(out))

    def only(self, touched: Collection[tuple[str, str]]) -> Target:
        """The values of the `touched` (container, resource) pairs, both fields."""
        return Target(tuple((k, v) for k, v in self.amounts if (k[0], k[2]) in touched))

    def moved(self, other: Target, fraction: float) -> bool:
        """Whether `other` differs: a value added or removed, or one more than `fraction` off."""
        mine, theirs = dict(self.amounts), dict(other.amounts)
        if mine.keys() != theirs.keys():
            return True
        return any(off_by_more(mine[k], theirs[k], fraction) for k in mine)


@dataclass(frozen=True)
class Seen:
    """A target and when a pass first saw it."""

    at: datetime
    target: Target


@dataclass(frozen=True)
class Settling:
    """period: how long a target must hold before another is acted on (0: no damping); fraction: what
    counts as a change (the update threshold)."""

    period: timedelta
    fraction: float

    @property
    def off(self) -> bool:
        return self.period <= timedelta(0)


@dataclass(frozen=True)
class Acted:
    """One recommended value the updater last acted on (resized or evicted a pod to follow it), and when."""

    key: Key
    amount: Decimal
    at: datetime


@dataclass(frozen=True)
class History:
    """One workload's targets: each change a pass saw within the settling period (oldest first, with the
    one in force when the period began) and each value last acted on."""

    seen: tuple[Seen, ...] = ()
    acted: tuple[Acted, ...] = ()

    def observe(self, target: Target, now: datetime, settling: Settling) -> History:
        seen = self.recent(now, settling)
        if not seen or seen[-1].target.moved(target, settling.fraction):
            seen = (*seen, Seen(now, target))[-MAX_SEEN:]
        return History(seen, self.acted)

    def recent(self, now: datetime, settling: Settling) -> tuple[Seen, ...]:
        """The targets seen since the period began, after the one in force then."""
        start = now - settling.period
        first = next((i for i, s in enumerate(self.seen) if s.at >= start), len(self.seen))
        return self.seen[max(0, first - 1) :]

    def act(self, target: Target, now: datetime) -> History:
        """`target`'s values acted on at `now` (the others as they were)."""
        keys = {k for k, _ in target.amounts}
        kept = tuple(a for a in self.acted if a.key not in keys)
        return History(self.seen, (*kept, *(Acted(k, v, now) for k, v in target.amounts)))

    def hold(self, target: Target, now: datetime, settling: Settling) -> tuple[str, str] | None:
        """Why an action following `target` (the values it changes) may not be taken now (reason,
        detail), or None."""
        if settling.off or not target.amounts:
            return None
        oscillating = self.oscillating(target, now, settling)
        if oscillating is not None:
            return oscillating
        wanted = dict(target.amounts)
        for a in self.acted:
            within = now - a.at < settling.period
            if a.key in wanted and within and off_by_more(a.amount, wanted[a.key], settling.fraction):
                name = f"{a.key[0]} {a.key[1]}.{a.key[2]}"
                return SETTLING, (
                    f"{name} {_show(a.key[2], a.amount)} acted on at {format_shown(a.at)}; "
                    f"{_show(a.key[2], wanted[a.key])} not before {format_shown(a.at + settling.period)} "
                    f"(settling period {_period(settling)})"
                )
        return None

    def oscillating(self, target: Target, now: datetime, settling: Settling) -> tuple[str, str] | None:
        """(OSCILLATING, detail) when one of `target`'s values reversed within the period, else None."""
        if settling.off:
            return None
        reversed_ = reversal(self.recent(now, settling), [k for k, _ in target.amounts], settling.fraction)
        if reversed_ is None:
            return None
        return OSCILLATING, f"{reversed_}; held until the target holds for {_period(settling)}"


def reversal(seen: Sequence[Seen], keys: Collection[Key], fraction: float) -> str | None:
    """The first value among `keys` that moved away and came back to (or past) where it was, described
    with its values and times; None when none did."""
    f = Decimal(repr(fraction))
    for key in keys:
        series = [(s.at, dict(s.target.amounts).get(key)) for s in seen]
        points = [(at, v) for at, v in series if v is not None]
        found = _back(points, f)
        if found is not None:
            shown = " -> ".join(_show(key[2], points[i][1]) for i in found)
            when = ", ".join(format_shown(points[i][0]) for i in found)
            return f"{key[0]} {key[1]}.{key[2]} {shown} (seen {when})"
    return None


def _back(points: Sequence[tuple[datetime, Decimal]], f: Decimal) -> tuple[int, int, int] | None:
    """Indexes (start, away, back) of a move beyond `f` up then back to at most start x (1 + f), or down
    then back to at least start x (1 - f); None when the values never reverse."""
    for i, (_, start) in enumerate(points):
        high = low = i
        for k in range(i + 1, len(points)):
            value = points[k][1]
            if points[high][1] > start * (1 + f) and value <= start * (1 + f):
                return i, high, k
            if points[low][1] < start * (1 - f) and value >= start * (1 - f):
                return i, low, k
            high = k if value > points[high][1] else high
            low = k if value < points[low][1] else low
    return None


def _show(resource: str, value: Decimal) -> str:
    return format_resource(resource, float(value))


def _period(settling: Settling) -> str:
    return show(settling.period.total_seconds())


class Damper:
    """Each workload's History, kept for the `keep` workloads seen most recently (a restart forgets all)."""

    def __init__(self, settling: Settling, keep: int = 10_000) -> None:
        self.settling = settling
        self.keep = keep
        self._histories: OrderedDict[WorkloadRef, History] = OrderedDict()

    def observe(self, workload: WorkloadRef, rec: Recommendation, now: datetime) -> None:
        """Called once a pass per workload the updater may act on: remembers its target when it changed."""
        if self.settling.off:
            return
        history = self._histories.get(workload, History())
        self._histories[workload] = history.observe(Target.of(rec), now, self.settling)
        self._histories.move_to_end(workload)
        while len(self._histories) > self.keep:
            self._histories.popitem(last=False)

    def hold(
        self, workload: WorkloadRef, rec: Recommendation, changes: Sequence[Change], now: datetime
    ) -> tuple[str, str] | None:
        """Why an action with `changes` toward `rec` must wait (reason, detail), or None."""
        history = self._histories.get(workload)
        if history is None:
            return None
        return history.hold(Target.of(rec).only(_touched(changes)), now, self.settling)

    def oscillating(
        self, workload: WorkloadRef, rec: Recommendation, now: datetime
    ) -> tuple[str, str] | None:
        """(OSCILLATING, detail) while any of `rec`'s values reverses within the period, else None."""
        history = self._histories.get(workload)
        return None if history is None else history.oscillating(Target.of(rec), now, self.settling)

    def acted(
        self, workload: WorkloadRef, rec: Recommendation, changes: Sequence[Change], now: datetime
    ) -> None:
        """An action with `changes` toward `rec` was taken (or, in dry-run, recorded)."""
        history = self._histories.get(workload)
        if history is not None:
            self._histories[workload] = history.act(Target.of(rec).only(_touched(changes)), now)


def _touched(changes: Sequence[Change]) -> set[tuple[str, str]]:
    return {(c.container, c.resource) for c in changes}
