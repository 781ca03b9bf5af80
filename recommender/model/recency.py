"""Recency: the one rule for how much each sample counts by its age and by its pod's template.

- Age: a sample of age `a` (seconds before the newest sample of its container) weighs
  2^(-a / half_life) (VPA's decaying histograms; half_life 0 or None: every sample weighs 1). Weights are
  relative to the newest sample of the container, so long windows never underflow to all-zero; a
  percentile does not change when every weight is scaled alike.
- Template: pods owned by a ReplicaSet or ReplicationController (Deployment, Argo Rollout,
  DeploymentConfig) carry their template in that owner. A template with no pod alive at the end
  (no sample within LIVE_SLACK_S of the container's newest sample) has been replaced. Once the templates
  alive at the end have `template_full_history_s` of history, the replaced templates' pods are left out
  entirely (percentiles, peak, per-replica level and OOM kills); before that their samples weigh
  1 - history / template_full_history_s (in percentiles; their peak still counts). Templates alive at
  the end (a canary next to its stable ReplicaSet, a rollout in progress, a rollback) are never down-
  weighted; pods of other owners (StatefulSet, DaemonSet, Job) are one template.
- Percentiles of weighted samples (`weighted_quantiles`): the sorted samples sit at the midpoints of
  their cumulative weight, linearly interpolated; max, second-highest and min stay unweighted (a peak
  is a peak however old: memory is floored at it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from recommender.model import FloatArray

DAY_S = 86400.0
DEFAULT_HALF_LIFE_S = DAY_S  # VPA's default
LIVE_SLACK_S = 3600.0  # a pod with a sample within this of the newest sample is alive at the end
TEMPLATE_OWNERS = ("ReplicaSet", "ReplicationController")


@dataclass(frozen=True)
class Recency:
    """How samples weigh: half_life_s (None or 0: no decay) and the replaced-template rule."""

    half_life_s: float | None = DEFAULT_HALF_LIFE_S
    template_full_history_s: float = DAY_S

    def __post_init__(self) -> None:
        if self.half_life_s is not None and not self.half_life_s >= 0:
            raise ValueError(f"half_life_s must be >= 0 or None, got {self.half_life_s}")
        if not self.template_full_history_s > 0:
            raise ValueError(f"template_full_history_s must be positive, got {self.template_full_history_s}")

    @property
    def decays(self) -> bool:
        return bool(self.half_life_s)

    def age_weights(self, timestamps: FloatArray, newest: float) -> FloatArray:
        """2^(-(newest - t) / half_life) per timestamp (1 where the decay is off)."""
        if not self.half_life_s:
            return np.ones(timestamps.shape)
        return np.exp2((np.asarray(timestamps, dtype=np.float64) - newest) / self.half_life_s)


DEFAULT = Recency()
"""The settings' defaults: a 24 h half-life and the replaced-template rule."""
OFF = Recency(half_life_s=None)
"""No decay (the replaced-template rule still applies)."""


@dataclass(frozen=True)
class PodSpan:
    """One pod's series of a container: its template (None: not a templated owner) and sample span."""

    template: str | None
    first: float
    last: float


def template_of(owner_kind: str | None, owner_name: str | None) -> str | None:
    """The pod template a pod's direct owner stands for (a ReplicaSet's or RC's name), else None."""
    return owner_name if owner_kind in TEMPLATE_OWNERS and owner_name else None


@dataclass(frozen=True)
class TemplateVerdict:
    """The template rule's outcome for one container: a weight per pod series, and what was replaced."""

    weights: tuple[float, ...]
    replaced: tuple[str, ...] = ()
    """The replaced templates (ReplicaSet / ReplicationController names), sorted; () when none."""
    history_s: float = 0.0
    """History of the templates still running when some were replaced."""

    def note(self, pods: int | None = None) -> str:
        """One line for the reason a user reads ("" when nothing was replaced); `pods`: the pod series of
        the templates weighed down (default: one per weight below 1)."""
        if not self.replaced:
            return ""
        if pods is None:
            pods = sum(1 for w in self.weights if w < 1.0)
        names = ", ".join(self.replaced)
        hours = self.history_s / 3600.0
        old = min(self.weights)
        if old <= 0.0:
            return (
                f"replaced template {names} left out ({pods} pod series; the running one has {hours:.0f} h)"
            )
        return f"replaced template {names} weighed x{old:.2f} (the running one has {hours:.1f} h of history)"


def template_rule(spans: Sequence[PodSpan], recency: Recency) -> TemplateVerdict:
    """Weight of each pod's samples by the template rule (module docstring): 1, a fraction, or 0."""
    templates = {s.template for s in spans}
    if len(templates) < 2 or None in templates:
        return TemplateVerdict((1.0,) * len(spans))
    newest = max(s.last for s in spans)
    live = {s.template for s in spans if s.last >= newest - LIVE_SLACK_S}
    if live == templates:
        return TemplateVerdict((1.0,) * len(spans))
    history = newest - min(s.first for s in spans if s.template in live)
    old = max(0.0, 1.0 - history / recency.template_full_history_s)
    weights = tuple(1.0 if s.template in live else old for s in spans)
    return TemplateVerdict(weights, tuple(sorted(str(t) for t in templates - live)), history)


def template_weights(spans: Sequence[PodSpan], recency: Recency) -> list[float]:
    """The template rule's weight of each pod's samples (template_rule)."""
    return list(template_rule(spans, recency).weights)


def weighted_quantiles(m: FloatArray, w: FloatArray, qs: Sequence[float]) -> FloatArray:
    """Weighted quantiles of each row of m (finite values, positive total weight per row), shape
    (len(qs), rows): sorted samples at the midpoints of their cumulative weight, linear between,
    clamped to the lowest and highest sample. One argsort per row; every row's positions are searched
    at once (row r's positions, within [0, 1], shifted by 2r into one ascending array)."""
    rows, n = m.shape
    order = np.argsort(m, axis=1)
    v = np.take_along_axis(m, order, axis=1)
    pos = np.take_along_axis(w, order, axis=1)
    del order
    half = pos * 0.5
    np.cumsum(pos, axis=1, out=pos)
    total = pos[:, -1:].copy()
    pos -= half
    del half
    pos /= np.where(total > 0, total, 1.0)
    pos += 2.0 * np.arange(rows)[:, None]
    flat, base = pos.reshape(-1), np.arange(rows) * n
    out = np.empty((len(qs), rows))
    for k, q in enumerate(qs):
        target = q + 2.0 * np.arange(rows)
        hi = np.minimum(np.searchsorted(flat, target, side="left") - base, n - 1)
        lo = np.maximum(hi - 1, 0)
        p_lo, p_hi = flat[base + lo], flat[base + hi]
        span = p_hi - p_lo
        frac = np.clip(np.divide(target - p_lo, span, out=np.zeros(rows), where=span > 0), 0.0, 1.0)
        v_lo, v_hi = v[np.arange(rows), lo], v[np.arange(rows), hi]
        diff = v_hi - v_lo  # numpy's lerp: exact at both ends
        out[k] = np.where(frac >= 0.5, v_hi - diff * (1.0 - frac), v_lo + diff * frac)
    return out


def weighted_mean(m: FloatArray, w: FloatArray) -> FloatArray:
    """Each row's weighted mean."""
    total = w.sum(axis=1)
    return np.asarray((m * w).sum(axis=1) / np.where(total > 0, total, 1.0), dtype=np.float64)
