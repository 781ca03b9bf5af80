"""The robust rules' fast path (nothing to change: the quantiles come back as they are) gives exactly what
applying every rule gives, on any quantiles, finite or not."""

from __future__ import annotations

import math
from dataclasses import astuple

from hypothesis import example, given
from hypothesis import strategies as st

from recommender.model import Quantiles
from recommender.sizing.robust import Evidence, _applied, robust_quantiles

value = st.one_of(
    st.floats(0.0, 64.0),
    st.floats(-1.0, 1.0),
    st.sampled_from([0.0, 1e300, math.inf, math.nan, -0.0]),
)


@st.composite
def quantiles(draw: st.DrawFn) -> Quantiles:
    points = sorted(draw(st.lists(st.floats(0.0, 64.0), min_size=5, max_size=5)))
    if draw(st.booleans()):  # anything at all, not only ordered well-behaved points
        points = draw(st.lists(value, min_size=5, max_size=5))
    p50, p90, p95, p99, peak = points
    return Quantiles(
        p50,
        p90,
        p95,
        p99,
        peak,
        draw(value),
        draw(st.one_of(st.none(), value, st.just(peak / 20))),
        draw(st.one_of(st.none(), value)),
        draw(st.one_of(st.none(), value, st.just(peak / 20))),
    )


evidence = st.builds(Evidence, st.sampled_from([0, 150, 10_000]), st.booleans())


@given(quantiles(), st.sampled_from([0.5, 16.0, 256.0]), st.booleans(), evidence)
@example(Quantiles(0.0, 0.0, 0.0, 0.0, 0.0, -0.0), 0.5, False, Evidence())  # -0.0 is 0.0 all the same
def test_the_fast_path_equals_every_rule_applied(
    q: Quantiles, ceiling: float, negatives_seen: bool, seen: Evidence
) -> None:
    try:
        want = _applied("cpu", q, (ceiling, "the ceiling"), negatives_seen, "", seen)
    except ValueError as exc:
        want_error: str | None = str(exc)
    else:
        want_error = None
    try:
        got = robust_quantiles("cpu", q, ceiling, "the ceiling", negatives_seen, "", seen)
    except ValueError as exc:
        assert str(exc) == want_error
        return
    assert want_error is None
    assert _same(got[0], want[0]) and got[1] == want[1]


def _same(a: Quantiles, b: Quantiles) -> bool:
    """Every field equal as a number (-0.0 is 0.0), NaN where the other is NaN, None where it is None."""
    for x, y in zip(astuple(a), astuple(b), strict=True):
        if x is None or y is None:
            if x is not y:
                return False
        elif not (x == y or (math.isnan(x) and math.isnan(y))):
            return False
    return True


def test_well_behaved_quantiles_come_back_as_they_are_and_the_rules_agree() -> None:
    q = Quantiles(0.2, 0.3, 0.35, 0.4, 0.5, 0.22, 0.45, 0.1)
    got, notes = robust_quantiles("cpu", q, 16.0, "the ceiling")
    assert got is q and notes == []  # the fast path
    assert _applied("cpu", q, (16.0, "the ceiling"), False, "") == (q, [])
