"""The one duration parser: Delta's CalendarInterval spelling for table properties (what
Spark's ``CAST(s AS INTERVAL)`` and Delta's ``parseCalendarInterval`` accept), plus the
compact spellings of deltalog's own settings; and the places that read durations."""

from __future__ import annotations

from datetime import timedelta

import pytest

from deltalog.contrib.redis_lock import RedisLockConfig
from deltalog.durations import InvalidDurationError, parse_duration, parse_interval
from deltalog.errors import CommitLockConfigError, InvalidPropertyError, LogStoreConfigError
from deltalog.logstores.retry import RetryPolicy
from deltalog.txn.protocol.properties import TableProperties


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("interval 7 days", timedelta(days=7)),
        ("5 MINUTES", timedelta(minutes=5)),
        ("inTERval 5 minutes", timedelta(minutes=5)),
        ("interval  2 days", timedelta(days=2)),
        ("1 day 12 hours", timedelta(days=1, hours=12)),
        ("1 week", timedelta(weeks=1)),
        ("2 weeks", timedelta(weeks=2)),
        ("1.5 seconds", timedelta(seconds=1.5)),
        (".5 seconds", timedelta(seconds=0.5)),
        ("+3 days", timedelta(days=3)),
        ("1 microseconds", timedelta(microseconds=1)),
        ("250 milliseconds", timedelta(milliseconds=250)),
        ("-1 day 86400001 milliseconds", timedelta(milliseconds=1)),
        ("1 day -1 microseconds", timedelta(days=1, microseconds=-1)),
    ],
)
def test_delta_interval_spellings(text: str, expected: timedelta) -> None:
    assert parse_interval(text, "delta.logRetentionDuration") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "cannot be blank"),
        ("interval", "not an interval"),
        ("interval1 day", "not an interval"),
        ("foo", "not an interval"),
        ("foo 1 day", "not an interval"),
        ("5days", "not an interval"),
        ("1 hour1 minute", "not an interval"),
        ("1 d", "unknown unit 'd'"),
        ("1 ms", "unknown unit 'ms'"),
        ("1 secs", "unknown unit 'secs'"),
        ("1 nanosecond", "unknown unit"),
        ("1.5 hours", "only seconds can have a fractional part"),
        ("1 month", "months and years are not allowed"),
        ("2 years", "months and years are not allowed"),
        ("-1 day", "must not be negative"),
        ("1 day -86400001 milliseconds", "must not be negative"),
    ],
)
def test_what_delta_refuses_is_a_typed_error_naming_the_setting(text: str, message: str) -> None:
    with pytest.raises(InvalidDurationError, match=message) as info:
        parse_interval(text, "delta.logRetentionDuration")
    assert "delta.logRetentionDuration" in str(info.value)


def test_settings_also_take_the_compact_spelling() -> None:
    assert parse_duration("500ms", "x") == timedelta(milliseconds=500)
    assert parse_duration("15s", "x") == parse_duration("15", "x") == parse_duration(15, "x") == timedelta(seconds=15)
    assert parse_duration("2m", "x") == parse_duration("2min", "x") == timedelta(minutes=2)
    assert parse_duration("1h", "x") == parse_duration("1 hour", "x") == timedelta(hours=1)
    assert parse_duration("1d", "x") == parse_duration("interval 1 day", "x") == timedelta(days=1)
    with pytest.raises(InvalidDurationError, match="x='soon' is not a duration"):
        parse_duration("soon", "x")


def test_table_properties_take_only_delta_spellings() -> None:
    """A value Delta Spark could not read back is refused, as an InvalidPropertyError."""
    assert TableProperties({"delta.logRetentionDuration": "interval 2 weeks"}).log_retention == timedelta(weeks=2)
    with pytest.raises(InvalidPropertyError, match=r"delta\.deletedFileRetentionDuration='7d'"):
        _ = TableProperties({"delta.deletedFileRetentionDuration": "7d"}).deleted_file_retention
    with pytest.raises(InvalidPropertyError, match="months and years"):
        _ = TableProperties({"delta.setTransactionRetentionDuration": "interval 1 month"}).set_transaction_retention


def test_lock_and_store_settings_read_the_same_grammar() -> None:
    """The Redis lock and the storage retries accepted different units before ("1d" in one,
    "min" in the other); both read every spelling now, with their own error types."""
    assert RedisLockConfig.from_uri("redis://h?lease_ttl=2min&entry_ttl=interval 1 day").lease_ttl == 120.0
    policy = RetryPolicy.from_options({"DELTALOG_RETRY_BASE_DELAY": "1d", "DELTALOG_RETRY_MAX_DELAY": "2 minutes"})
    assert (policy.base_delay, policy.max_delay) == (86400.0, 120.0)
    with pytest.raises(CommitLockConfigError, match="not a duration"):
        RedisLockConfig.from_uri("redis://h?lease_ttl=1.5 hours")
    with pytest.raises(LogStoreConfigError, match="not a duration"):
        RetryPolicy.from_options({"DELTALOG_RETRY_BASE_DELAY": "soon"})
