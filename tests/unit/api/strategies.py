"""Hypothesis strategies for valid Recommendations whose every value survives the wire's rounding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import strategies as st

from podsizer.api.identity import SUPPORTED_KINDS, WorkloadRef
from podsizer.api.quantity import MIB, checked_quantity
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Forecast,
    GpuRecommendation,
    Recommendation,
    Window,
)

RESOURCES = (
    "cpu",
    "memory",
    "ephemeral-storage",
    "hugepages-2Mi",
    "nvidia.com/gpu",
    "nvidia.com/gpu.shared",
    "nvidia.com/mig-1g.10gb",
    "nvidia.com/mig-3g.40gb",
)
_SUFFIXES = ("", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "Pi", "e3", "E-2")

dns_labels = st.from_regex(r"[a-z]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True)
qualified_names = st.builds(
    lambda prefix, name: f"{prefix}/{name}" if prefix else name,
    st.one_of(st.none(), st.from_regex(r"[a-z0-9]{1,8}(\.[a-z0-9]{1,8}){0,2}", fullmatch=True)),
    st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?", fullmatch=True),
)
resource_names = st.one_of(st.sampled_from(RESOURCES), qualified_names)
times = st.datetimes(
    min_value=datetime(1990, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]),
)
texts = st.text(max_size=40)


def _is_quantity(resource: str, text: str) -> bool:
    try:
        checked_quantity(resource, text)
    except ValueError:
        return False
    return True


def quantity_for(resource: str) -> st.SearchStrategy[str]:
    """Well-formed, non-negative, int64-safe quantity strings for `resource`, in every notation."""
    number = st.one_of(
        st.integers(0, 10**6).map(str),
        st.builds(lambda i, f: f"{i}.{f}", st.integers(0, 9999), st.integers(0, 999)),
        st.integers(0, 999).map(lambda f: f".{f}"),
    )
    return st.builds(lambda n, s: n + s, number, st.sampled_from(_SUFFIXES)).filter(
        lambda q: _is_quantity(resource, q)
    )


def quantities() -> st.SearchStrategy[dict[str, str]]:
    pair = resource_names.flatmap(lambda r: quantity_for(r).map(lambda q: (r, q)))
    return st.lists(pair, max_size=4, unique_by=lambda p: p[0]).map(dict)


def _fraction(digits: int) -> st.SearchStrategy[float]:
    """Non-negative values with at most `digits` decimals: rounding on the wire leaves them unchanged."""
    scale = 10**digits
    return st.integers(0, 10**5 * scale).map(lambda k: k / scale)


confidences = st.integers(0, 10**4).map(lambda k: k / 10**4)
int64s = st.integers(0, 2**63 - 1)


def containers() -> st.SearchStrategy[ContainerRecommendation]:
    return st.builds(
        ContainerRecommendation,
        name=dns_labels,
        requests=quantities(),
        limits=quantities(),
        confidence=confidences,
        reason=texts,
        low_confidence=st.booleans(),
    )


def gpus() -> st.SearchStrategy[GpuRecommendation]:
    return st.builds(
        GpuRecommendation,
        model=texts,
        allocated=int64s,
        sm_active_p95=confidences,
        fb_used_max_bytes=int64s,
        idle=st.booleans(),
        idle_since=st.none() | times,
        suggested_resource=st.none() | resource_names,
        hourly_cost=st.none() | _fraction(6),
        wasted_hourly_cost=st.none() | _fraction(6),
        activity_signal=st.sampled_from(["SM_ACTIVE", "GR_ENGINE_ACTIVE", "GPU_UTIL"]),
    )


def forecasts() -> st.SearchStrategy[Forecast]:
    return st.builds(
        Forecast,
        horizon_days=st.floats(0, 3650, allow_nan=False),
        cpu_cores_peak=_fraction(6),
        memory_bytes_peak=st.integers(0, 2**53).map(float),
        method=texts,
    )


def _bound(resource: str) -> st.SearchStrategy[float]:
    """Base-unit bounds that the wire's formatting (millicores, Mi, whole counts) keeps exactly."""
    if resource == "cpu":
        return st.integers(1, 10**9).map(lambda m: m / 1000)
    if resource in ("memory", "ephemeral-storage"):
        return st.integers(1, 10**9).map(lambda k: float(k * MIB))
    return st.integers(0, 2**53).map(float)


def _bounds() -> st.SearchStrategy[dict[str, float]]:
    pair = st.sampled_from(RESOURCES).flatmap(lambda r: _bound(r).map(lambda v: (r, v)))
    return st.lists(pair, max_size=3, unique_by=lambda p: p[0]).map(dict)


def _ordered(container: str, low: dict[str, float], high: dict[str, float]) -> ContainerPolicy:
    """min <= max for every resource bounded on both sides."""
    both = low.keys() & high.keys()
    lows = {k: min(v, high[k]) if k in both else v for k, v in low.items()}
    highs = {k: max(v, low[k]) if k in both else v for k, v in high.items()}
    return ContainerPolicy(container, lows, highs)


def policies() -> st.SearchStrategy[ContainerPolicy]:
    return st.builds(_ordered, st.just("*") | dns_labels, _bounds(), _bounds())


def _window(start: datetime, length: timedelta, samples: int) -> Window:
    return Window(start, start + length, samples)


def recommendations() -> st.SearchStrategy[Recommendation]:
    return st.builds(
        Recommendation,
        target=st.builds(
            WorkloadRef, dns_labels, st.sampled_from(sorted(SUPPORTED_KINDS)), dns_labels, st.just("") | texts
        ),
        generated_at=times,
        window=st.builds(_window, times, st.timedeltas(timedelta(0), timedelta(days=60)), int64s),
        sizing_mode=st.sampled_from(["static", "autopilot"]),
        containers=st.lists(containers(), max_size=3).map(tuple),
        reason=texts,
        gpu=st.none() | gpus(),
        forecast=st.none() | forecasts(),
        policy=st.lists(policies(), max_size=2).map(tuple),
        resource_version=st.none() | st.text(min_size=1, max_size=12),
    )
