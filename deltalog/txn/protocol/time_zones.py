"""Spark's session time zone (``spark.sql.session.timeZone``) as a Python ``tzinfo``.

Spark takes the setting as Java's ``ZoneId.of`` does: a region id (``America/Los_Angeles``),
``UTC``/``Z``, or a fixed offset (``-08:00``, ``+8``, ``GMT+05:30``). Everything that reads
a timestamp as Spark would (a partition filter's text, ``timestampAsOf``, the partitions a
generated column's filter derives) reads the zone here, so they all agree.

:func:`parse_timestamp_text` reads a timestamp string as Spark's ``CAST(... AS TIMESTAMP)``
(``stringToTimestamp``) does, so a time given to ``timestampAsOf`` or ``startingTimestamp``
means what it means to Delta: ``2024-5-1``, ``2024-05``, ``2024-05-01 12:00 -0800`` or
``...T12:00:00 America/Los_Angeles`` are times, ``20240501`` or ``2024-W18-3`` are not.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "arrow_time_zone",
    "arrow_zone_name",
    "parse_date_text",
    "parse_timestamp_text",
    "session_time_zone",
    "wall_clock_instants",
]

#: Java's ``ZoneOffset.of`` forms (``+h``, ``+hh``, ``+hh:mm``, ``+hhmm``, ``+hh:mm:ss``,
#: ``+hhmmss``), after an optional ``UTC``/``GMT``/``UT`` prefix (``ZoneId.of``)
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])(?:(\d)|(\d{2})(?:(:?)(\d{2})(?:\4(\d{2}))?)?)")

#: Java's ``ZoneId.SHORT_IDS``, which Spark's ``DateTimeUtils.getZoneId`` reads zones with
_SHORT_IDS = {
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo",
    "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo",
    "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare",
    "CNT": "America/St_Johns",
    "CST": "America/Chicago",
    "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa",
    "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00",
    "MST": "-07:00",
    "HST": "-10:00",
}


def _java_zone_id(name: str) -> str:
    """``name`` as Spark's ``getZoneId`` hands it to ``ZoneId.of``: ``+h:mm`` and ``+hh:m``
    padded (forms Spark accepted before 3.0), then a short id replaced by its zone."""
    name = re.sub(r"([+-])(\d):", r"\g<1>0\2:", name, count=1)
    name = re.sub(r"([+-])(\d\d):(\d)$", r"\1\2:0\3", name, count=1)
    return _SHORT_IDS.get(name, name)


def _fixed_offset(offset: re.Match[str]) -> dt.tzinfo | None:
    """A ``ZoneOffset.of`` match as a fixed zone; None beyond Java's range (18 hours, minutes
    and seconds below 60)."""
    hours = int(offset.group(2) or offset.group(3))
    minutes, seconds = int(offset.group(5) or 0), int(offset.group(6) or 0)
    if minutes > 59 or seconds > 59:
        return None
    delta = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
    if delta > dt.timedelta(hours=18):
        return None
    return dt.timezone(-delta if offset.group(1) == "-" else delta)


def session_time_zone(name: str | None) -> dt.tzinfo | None:
    """``name`` (a region id, a short id such as ``PST``, or an offset such as ``+08:00``) as
    a tzinfo, read as Spark's ``DateTimeUtils.getZoneId`` reads it; None when it is empty or
    not a zone Java and Python know (the caller then keeps its zone-free behaviour)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not name or not name.strip():
        return None
    name = _java_zone_id(name.strip())
    offset = _OFFSET.fullmatch(name)
    if offset:
        return _fixed_offset(offset)
    if name in ("Z", "UT"):
        return dt.timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # a path-like name fails to open
        return None


def arrow_time_zone(name: str | None) -> str | None:
    """The session time zone ``name`` as Arrow names a zone (a region id, or ``+08:00``);
    None when :func:`session_time_zone` does not know it."""
    zone = session_time_zone(name)
    return None if zone is None else arrow_zone_name(zone)


def arrow_zone_name(zone: dt.tzinfo) -> str:
    """A zone of :func:`session_time_zone` as Arrow names it."""
    key = getattr(zone, "key", None)
    if isinstance(key, str):
        return key
    offset = zone.utcoffset(None) or dt.timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def wall_clock_instants(value: pa.ChunkedArray | pa.Array, time_zone: str | None) -> pa.ChunkedArray | pa.Array:
    """Zone-free timestamps ``value`` read as wall-clock times of the session's ``time_zone``
    (Arrow's name, :func:`arrow_time_zone`): the instants Spark gives them (``CAST(d AS
    TIMESTAMP)`` of a date, ``date_trunc`` of one: local times), as zoned timestamps. A time a
    clock change repeats takes its earlier instant; one it skips, the first instant after the
    gap -- Spark's too for a midnight, the only wall-clock time a date gives; Spark shifts
    another skipped time by the gap's length. Without a zone, or for values that are not
    zone-free timestamps, ``value`` as it is (read as UTC)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (time_zone and pa.types.is_timestamp(value.type) and value.type.tz is None):
        return value
    return pc.assume_timezone(value, timezone=time_zone, ambiguous="earliest", nonexistent="latest")


_TIMESTAMP_TEXT = re.compile(
    r"\s*(?P<year>[+-]?\d{4,6})(?:-(?P<month>\d{1,2})(?:-(?P<day>\d{1,2})"
    r"(?:[ T](?P<hour>\d{1,2})(?::(?P<minute>\d{1,2})(?::(?P<second>\d{1,2})(?:\.(?P<fraction>\d*))?"
    r"\s*(?P<zone>[A-Za-z+-][\w/+:-]*)?)?)?)?)?)?\s*"
)


def parse_timestamp_text(text: str) -> dt.datetime | None:
    """``text`` as Spark casts a string to a timestamp (``[+-]yyyy[-[m]m[-[d]d[ |T][h]h[:[m]m
    [:[s]s[.fraction][zone]]]]]``, fields of one or two digits, a zone only after the seconds,
    read as :func:`session_time_zone` reads it): naive when it names no zone; None when
    Spark's cast gives null (Delta then refuses the time as ``DELTA_TIMESTAMP_INVALID``)."""
    m = _TIMESTAMP_TEXT.fullmatch(text)
    if m is None:
        return None
    zone = None
    if m["zone"] is not None:
        zone = session_time_zone(m["zone"])
        if zone is None:
            return None
    fraction = (m["fraction"] or "")[:6].ljust(6, "0")
    try:
        value = dt.datetime(
            int(m["year"]),
            int(m["month"] or 1),
            int(m["day"] or 1),
            int(m["hour"] or 0),
            int(m["minute"] or 0),
            int(m["second"] or 0),
            int(fraction),
        )
    except ValueError:  # a field out of range (month 13, day 31 of April, year beyond 9999)
        return None
    return value if zone is None else value.replace(tzinfo=zone)


_DATE_TEXT = re.compile(
    r"\s*(?P<year>[+-]?\d{4,6})(?:-(?P<month>\d{1,2})(?:-(?P<day>\d{1,2})(?:[ T].*)?)?)?\s*", re.DOTALL
)


def parse_date_text(text: str) -> dt.date | None:
    """``text`` as Spark casts a string to a date (``stringToDate``: ``[+-]yyyy[-[m]m[-[d]d]]``,
    fields of one or two digits, anything after a space or ``T`` following the day ignored);
    None when Spark's cast gives null."""
    m = _DATE_TEXT.fullmatch(text)
    if m is None:
        return None
    try:
        return dt.date(int(m["year"]), int(m["month"] or 1), int(m["day"] or 1))
    except ValueError:
        return None
