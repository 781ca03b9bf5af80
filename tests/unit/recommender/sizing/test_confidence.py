"""Confidence from history span and sample count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage, Quantiles
from recommender.sizing.confidence import confidence, history_days, is_low

T0 = datetime(2026, 11, 1, tzinfo=UTC)
Q = Quantiles(1.0, 1.0, 1.0, 1.0, 1.0, 1.0)


def usage(days: float, samples: int) -> ContainerUsage:
    return ContainerUsage(
        WorkloadRef("ns", "StatefulSet", "db"), "main", Q, Q, 1.0, 1.0, samples, T0, T0 + timedelta(days=days)
    )


@pytest.mark.parametrize(
    ("days", "samples", "expected"),
    [
        (7.0, 1000, 1.0),
        (14.0, 50000, 1.0),  # capped at 1
        (3.5, 50000, 0.5),  # span limits
        (7.0, 250, 0.25),  # samples limit
        (1.0, 100, 0.1),  # the smaller of the two
        (0.0, 0, 0.0),
    ],
)
def test_confidence_is_the_smaller_of_span_and_sample_scores(
    days: float, samples: int, expected: float
) -> None:
    assert confidence(usage(days, samples), SizingPolicy()) == pytest.approx(expected)


def test_low_confidence_below_threshold() -> None:
    policy = SizingPolicy(confidence_threshold=0.5)
    assert is_low(confidence(usage(2.0, 5000), policy), policy)
    assert not is_low(confidence(usage(3.5, 5000), policy), policy)


def test_history_days_never_negative() -> None:
    u = ContainerUsage(
        WorkloadRef("ns", "DaemonSet", "d"), "c", Q, Q, 1.0, 1.0, 10, T0, T0 - timedelta(hours=1)
    )
    assert history_days(u) == 0.0
