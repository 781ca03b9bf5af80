"""The pods and owner links seen in the window, kept between cycles: a delta cycle looks up only the
series of its own interval (a 7-day series lookup costs Prometheus more than an hour of samples)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from recommender.model.raw import OwnerLink, PodInfo, RawDataset

PodKey = tuple[str, str]
OwnerKey = tuple[str, str, str]


@dataclass
class KnownPods:
    """Every pod and owner link seen since the window's start, with when (epoch seconds) it was last seen.
    `complete`: filled from a read of the whole window (until then a cycle must look up the window)."""

    pods: dict[PodKey, PodInfo] = field(default_factory=dict)
    owners: dict[OwnerKey, OwnerLink] = field(default_factory=dict)
    seen: dict[PodKey | OwnerKey, float] = field(default_factory=dict)
    complete: bool = False

    def update(self, raw: RawDataset, at: float) -> None:
        """Adds the dataset's pods and owner links, seen at `at`; a pod's newer facts replace the older,
        except requests and limits the newer read did not see (no sample in its interval)."""
        for p in raw.pods:
            key = (p.namespace, p.name)
            old = self.pods.get(key)
            if old is not None and not p.requests and not p.limits:
                p = replace(p, requests=old.requests, limits=old.limits)
            self.pods[key] = p
            self.seen[key] = at
        for o in raw.owners:
            okey = (o.namespace, o.kind, o.name)
            self.owners[okey] = o
            self.seen[okey] = at

    def forget_before(self, t: float) -> None:
        """Drops what was last seen before `t` (out of the window)."""
        for key in [k for k, at in self.seen.items() if at < t]:
            del self.seen[key]
            if len(key) == 2:
                self.pods.pop(key, None)
            else:
                self.owners.pop(key, None)

    def applied(self, raw: RawDataset) -> RawDataset:
        """The dataset with every known pod and owner link (its own are among them: update first)."""
        return replace(raw, pods=tuple(self.pods.values()), owners=tuple(self.owners.values()))
