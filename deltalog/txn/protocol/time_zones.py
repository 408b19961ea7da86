"""Spark's session time zone (``spark.sql.session.timeZone``) as a Python ``tzinfo``.

Spark takes the setting as Java's ``ZoneId.of`` does: a region id (``America/Los_Angeles``),
``UTC``/``Z``, or a fixed offset (``-08:00``, ``+8``, ``GMT+05:30``). Everything that reads
a timestamp as Spark would (a partition filter's text, ``timestampAsOf``, the partitions a
generated column's filter derives) reads the zone here, so they all agree.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["session_time_zone"]

_OFFSET = re.compile(r"(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?")


def session_time_zone(name: str | None) -> dt.tzinfo | None:
    """``name`` (a region id, or an offset such as ``+08:00``) as a tzinfo; None when it is
    empty or not a zone Python knows (the caller then keeps its zone-free behaviour)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not name:
        return None
    name = name.strip()
    offset = _OFFSET.fullmatch(name)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        delta = dt.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0))
        return dt.timezone(sign * delta)
    if name.upper() == "Z":
        return dt.timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # a path-like name fails to open
        return None
