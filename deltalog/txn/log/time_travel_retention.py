"""Time travel within ``delta.deletedFileRetentionDuration``, as Delta Spark 4.1+ enforces it.

VACUUM deletes the data files that only versions older than the table's
``delta.deletedFileRetentionDuration`` (one week by default) need, so reading such a version
may fail, or, once VACUUM ran, cannot work. Delta Spark refuses it up front
(``SnapshotManagement.enforceTimeTravelWithinDeletedFileRetentionDuration``, since "Block Time
Travel beyond DeletedFileRetentionDuration", #5022):

- a snapshot whose timestamp is older than ``now - retention`` is refused with
  ``DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION``;
- the retention is the *latest* snapshot's ``delta.deletedFileRetentionDuration``;
- the snapshot's timestamp is its in-commit timestamp when those are enabled, else its commit
  file's modification time (Delta's ``Snapshot.timestamp``; not made monotonic);
- the latest version is always allowed, however old.

Delta checks it only where it asks ``getSnapshotAt`` to: time-travel reads (``versionAsOf``,
``timestampAsOf``, SQL ``VERSION AS OF``), batch change-feed reads (their starting version),
RESTORE, and CLONE of a given version. Not streaming sources (``startingVersion``,
``startingTimestamp``, change feeds), not ``DESCRIBE HISTORY``, not the reads of older
snapshots commands make for themselves. Here likewise: :meth:`SnapshotManagement.snapshot`
checks it when called with ``enforce_retention=True``, which those entry points pass.

Delta's switch is the session conf
``spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration``
(default true). deltalog also reads it, or ``deltalog.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration``,
from the storage options of the ``DeltaLog`` (a ``format("deltalog")`` option is one):
``false`` turns the check off.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from deltalog.txn.protocol.errors import DeltaLogError

if TYPE_CHECKING:
    from deltalog.logstores.options import StorageOptions
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "ENFORCE_CONF",
    "ENFORCE_KEYS",
    "TimeTravelBeyondDeletedFileRetentionDurationError",
    "enforce_time_travel_within_retention",
    "enforcement_enabled",
]

#: Delta's session conf (``DeltaSQLConf.ENFORCE_TIME_TRAVEL_WITHIN_DELETED_FILE_RETENTION_DURATION``).
ENFORCE_CONF = "spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"
#: Storage-option keys that turn the check off when set to ``false``.
ENFORCE_KEYS = ("deltalog.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration", ENFORCE_CONF)

_ERROR_CLASS = "DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION"
_HOUR_MS = 3_600_000


class TimeTravelBeyondDeletedFileRetentionDurationError(DeltaLogError, ValueError):
    """Time travel to a version whose snapshot is older than the table's
    ``delta.deletedFileRetentionDuration`` (Delta's
    ``DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION``): VACUUM may have
    deleted files it needs. Nothing was read or committed."""

    error_class = _ERROR_CLASS

    def __init__(self, table_uri: str, version: int, timestamp_ms: int, latest_version: int, retention_ms: int) -> None:
        hours = retention_ms // _HOUR_MS  # Delta prints whole hours
        committed = datetime.fromtimestamp(timestamp_ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")
        super().__init__(
            f"{_ERROR_CLASS}: Cannot time travel beyond delta.deletedFileRetentionDuration ({hours} HOURS) set on "
            f"the table. Version {version} of {table_uri} was committed at {committed}, longer ago than that, so "
            "VACUUM may already have deleted files it needs. Read a later version (the latest, "
            f"{latest_version}, is always allowed), or set a longer delta.deletedFileRetentionDuration on the "
            "table to keep more history (files VACUUM already deleted do not come back). To time travel anyway, "
            f"set {ENFORCE_CONF}=false: a Spark session conf, an option of format('deltalog'), or a storage "
            f"option (also {ENFORCE_KEYS[0]}); in Python, pass enforce_retention=False."
        )
        self.table_uri = table_uri
        self.version = version
        self.timestamp_ms = timestamp_ms
        self.latest_version = latest_version
        self.retention_hours = hours


def enforcement_enabled(options: StorageOptions) -> bool:
    """Whether storage ``options`` leave the check on (the first of :data:`ENFORCE_KEYS`
    set is not ``false``; names are case-insensitive, as Spark lower-cases options)."""
    return options.on_unless_false(*ENFORCE_KEYS)


def enforce_time_travel_within_retention(target: Snapshot, latest: Snapshot, now_ms: int | None = None) -> None:
    """Refuse ``target`` when its timestamp is older than ``now - retention`` of ``latest``
    (Delta's ``enforceTimeTravelWithinDeletedFileRetentionDuration``); the latest version
    always passes. Raises :class:`TimeTravelBeyondDeletedFileRetentionDurationError`."""
    if target.version >= latest.version:
        return
    retention_ms = int(latest.properties.deleted_file_retention.total_seconds() * 1000)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if target.timestamp < now - retention_ms:
        raise TimeTravelBeyondDeletedFileRetentionDurationError(
            target.table_uri, target.version, target.timestamp, latest.version, retention_ms
        )
