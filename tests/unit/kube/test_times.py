"""podsizer.kube.times: the one RFC 3339 format, written in UTC with a Z, read back with a Z or an offset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console import fmt
from podsizer.kube.times import format_micro, format_seconds, format_shown, format_time, parse_time, read_time

PARIS = timezone(timedelta(hours=1))
T = datetime(2026, 12, 4, 22, 30, 5, 120000, tzinfo=PARIS)


def test_each_format_writes_utc_with_a_z() -> None:
    assert format_time(T) == "2026-12-04T21:30:05.120000Z"
    assert format_time(T.replace(microsecond=0)) == "2026-12-04T21:30:05Z"
    assert format_seconds(T) == "2026-12-04T21:30:05Z"
    assert format_micro(T.replace(microsecond=0)) == "2026-12-04T21:30:05.000000Z"


def test_parse_reads_a_z_an_offset_and_a_bare_time_as_utc() -> None:
    assert parse_time("2026-12-04T21:30:05Z") == datetime(2026, 12, 4, 21, 30, 5, tzinfo=UTC)
    assert parse_time("2026-12-04T22:30:05.12+01:00") == T
    assert parse_time("2026-12-04T21:30:05").tzinfo == UTC


def test_a_text_that_is_no_time_is_named_by_parse_and_none_for_read() -> None:
    with pytest.raises(ValueError, match=r"invalid RFC 3339 time 'yesterday'"):
        parse_time("yesterday")
    assert read_time("yesterday") is None
    assert read_time(None) is None
    assert read_time(1733350205) is None
    assert read_time("2026-12-04T21:30:05Z") == datetime(2026, 12, 4, 21, 30, 5, tzinfo=UTC)


moments = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2999, 1, 1), timezones=st.just(UTC))


@given(moments)
def test_every_format_reads_back_as_the_moment_it_wrote(moment: datetime) -> None:
    assert parse_time(format_time(moment)) == moment
    assert parse_time(format_micro(moment)) == moment
    assert parse_time(format_seconds(moment)) == moment.replace(microsecond=0)


def test_reports_explanations_and_the_console_show_a_time_alike() -> None:
    """One shown form (format_shown): UTC to the minute, in the report tables, explain and the pages."""
    assert format_shown(T) == "2026-12-04 21:30 UTC"
    assert fmt.when(T) == format_shown(T)
