"""Delta's time travel in a table path (``DeltaTimeTravelSpec``): ``<path>@v<version>`` and
``<path>@<yyyyMMddHHmmssSSS>``, as ``spark.read.format("delta").load(path + "@v3")`` reads."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

__all__ = ["at_syntax"]


#: Delta's ``DeltaTimeTravelSpec``: ``<path>@v<version>`` and ``<path>@<yyyyMMddHHmmssSSS>``
_AT_VERSION = re.compile(r"^(?P<path>.*)@[vV](?P<version>\d+)$")
_AT_TIMESTAMP = re.compile(r"^(?P<path>.*)@(?P<ts>\d{17})$")


def at_syntax(
    path: str, storage_options: Mapping[str, str], logstore: str | None, time_zone: str | None = None
) -> tuple[str, int | None, str | None] | None:
    """Delta's time travel in a path (``extractIfPathContainsTimeTravel``): ``<path>@v3`` is
    version 3 of ``<path>``, ``<path>@20240501120000000`` its state at that time
    (``yyyyMMddHHmmssSSS``, a local time of the session ``time_zone`` as Delta's
    ``DeltaTimeTravelSpec`` reads it, UTC without one; read as a ``timestampAsOf``), unless a
    table exists at the path as written (a directory really named ``t@v0``). None when the
    path holds no such suffix; else ``(path, version, timestamp)``."""
    from deltalog.contrib.spark.predicates import in_session_time_zone
    from deltalog.contrib.spark.tablelog import open_log

    version = _AT_VERSION.match(path)
    stamp = _AT_TIMESTAMP.match(path)
    if version is None and stamp is None:
        return None
    if open_log(path, storage_options, logstore).update().version >= 0:
        return None
    if version is not None:
        return version.group("path"), int(version.group("version")), None
    assert stamp is not None
    when = datetime.strptime(stamp.group("ts")[:14], "%Y%m%d%H%M%S")
    text = f"{when:%Y-%m-%d %H:%M:%S}.{stamp.group('ts')[14:]}"
    return stamp.group("path"), None, in_session_time_zone(text, time_zone)
