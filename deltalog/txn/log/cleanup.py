"""Expired-log cleanup, per PROTOCOL "Metadata Cleanup" and Delta Spark's ``MetadataCleanup``.

Files of ``_delta_log`` (commits, checkpoints, ``.crc``) are deleted only when

- ``delta.enableExpiredLogCleanup`` is true (the default);
- they belong to versions *before* a complete checkpoint ``c`` (so the state at ``c`` and
  every newer version stays reconstructable; the newest state is never touched), ``c`` at
  most the version ``_last_checkpoint`` names: without that file nothing is deleted, as in
  Delta (a corrupt one counts as naming the newest complete checkpoint);
- the last file before ``c`` is at or before the cutoff: UTC midnight of
  ``now - delta.logRetentionDuration`` (30 days by default). File times are made monotonic
  first (a file of a newer version not after the previous file counts as its time + 1 ms),
  and a checkpoint whose time needed that is no boundary, so time travel by timestamp keeps
  working for the versions that remain. The walk is Delta's ``BufferingLogDeletionIterator``
  (:mod:`deltalog.txn.log.log_deletion`).

After deleting expired files it deletes the V2 checkpoint sidecars no remaining checkpoint
references (PROTOCOL "Metadata Cleanup", steps 4 and 5), keeping any written since midnight
UTC of the day before (an in-progress checkpoint's).

On a table with ``checkpointProtection`` (:mod:`deltalog.txn.protocol.checkpoint_protection`)
these rules already meet the feature's: the files removed always end at a complete
checkpoint ``c`` that stays, no checkpoint is created during cleanup, and commits are deleted
before checkpoints. This is Delta's ``metadataCleanupAllowed`` (its check for a checkpoint at
the cleanup boundary), so checkpoints before ``delta.requireCheckpointProtectionBeforeVersion``
go only with every commit behind them.

The same pass removes temp files a killed writer left behind, once they are older than
:data:`STALE_TEMP_AGE_MS` (an hour; no live writer holds a temp file that long):
``_delta_log/.<name>.<hex>.tmp`` (local publishes, checkpoints through a rename) and the
Redis lock's ``_delta_log/.tmp/<N>.json.<uuid>`` when version ``N`` is already in the
snapshot (a newer temp may still be needed to repair a claimed version).
"""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from deltalog.txn.log.last_checkpoint import read_last_checkpoint
from deltalog.txn.log.log_deletion import expired_log_files
from deltalog.txn.log.log_segment import LogListing, parse_listing
from deltalog.txn.protocol.file_names import (
    LAST_CHECKPOINT,
    SIDECAR_DIR,
    listing_prefix,
    log_path,
)

if TYPE_CHECKING:
    from deltalog.logstores.base import FileStatus
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = [
    "STALE_TEMP_AGE_MS",
    "cleanup_cutoff",
    "cleanup_expired_logs",
    "cleanup_stale_temp_files",
    "cleanup_unreferenced_sidecars",
    "expired_log_statuses",
]

log = logging.getLogger(__name__)

#: Temp files older than this are leftovers of a crashed writer.
STALE_TEMP_AGE_MS = 3600 * 1000
_TEMP_RE = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
_LOCK_TEMP_RE = re.compile(r"^(\d{20})\.json\.[0-9a-f-]{32,36}$")


def cleanup_cutoff(now_ms: int, retention_ms: int, granularity: str = "day") -> int:
    """``now - retention`` truncated to midnight UTC (``granularity`` ``"minute"``: to the
    minute, as Delta's ``DROP FEATURE ... TRUNCATE HISTORY``), in ms."""
    moment = datetime.fromtimestamp((now_ms - retention_ms) / 1000, tz=timezone.utc)
    if granularity == "minute":
        truncated = moment.replace(second=0, microsecond=0)
    else:
        truncated = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return int(truncated.timestamp() * 1000)


def expired_log_statuses(dlog: SnapshotManagement, cutoff_ms: int) -> list[FileStatus]:
    """The commits, checkpoints and ``.crc`` files cleanup deletes for ``cutoff_ms``: Delta's
    ``listExpiredDeltaLogs`` (:func:`~deltalog.txn.log.log_deletion.expired_log_files`
    before the checkpoint ``_last_checkpoint`` names; none without it)."""
    statuses = list(dlog.store.list_from(log_path(dlog.log_uri, listing_prefix(0))))
    newest = _last_checkpoint_version(dlog, parse_listing(statuses))
    if newest is None:
        return []
    return expired_log_files(statuses, cutoff_ms, newest - 1)


def _last_checkpoint_version(dlog: SnapshotManagement, listing: LogListing) -> int | None:
    """The newest checkpoint cleanup may keep as its boundary: the version ``_last_checkpoint``
    names, None without that file, the newest complete checkpoint listed when it is corrupt
    (Delta's ``listExpiredDeltaLogs`` through ``readLastCheckpointFile``)."""
    info = read_last_checkpoint(dlog.store, dlog.log_uri)
    if info is not None:
        return info.version
    if not any(status.name == LAST_CHECKPOINT for status in listing.others):
        return None
    checkpoints = listing.complete_checkpoints()
    return checkpoints[-1].version if checkpoints else None


def cleanup_stale_temp_files(dlog: SnapshotManagement, snapshot: Snapshot, *, now_ms: int | None = None) -> int:
    """Delete temp files of ``_delta_log`` older than :data:`STALE_TEMP_AGE_MS`; the count."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - STALE_TEMP_AGE_MS
    stale = [
        s
        for s in dlog.store.list_from(f"{dlog.log_uri}/.!")  # "!" sorts before every name char
        if _TEMP_RE.match(s.name) and s.modification_time < cutoff
    ]
    for status in dlog.store.list_from(f"{dlog.log_uri}/.tmp/0"):
        m = _LOCK_TEMP_RE.match(status.name)
        if m and int(m.group(1)) <= snapshot.version and status.modification_time < cutoff:
            stale.append(status)
    for status in stale:
        dlog.store.delete(status.path)
    if stale:
        log.info("deleted %d stale temp file(s) in the log of %s", len(stale), dlog.table_uri)
    return len(stale)


def cleanup_unreferenced_sidecars(dlog: SnapshotManagement, *, now_ms: int | None = None) -> int:
    """Delete the files of ``_delta_log/_sidecars`` that no checkpoint in the log references
    and that are older than midnight UTC of the day before ``now``; the count deleted."""
    from deltalog.txn.log.checkpoint_reader import read_checkpoint

    now = int(time.time() * 1000) if now_ms is None else now_ms
    keep_after = cleanup_cutoff(now, 24 * 3600 * 1000)
    try:
        sidecars = list(dlog.store.list_from(f"{dlog.log_uri}/{SIDECAR_DIR}/0"))
    except FileNotFoundError:
        return 0
    old = [s for s in sidecars if s.modification_time < keep_after]
    if not old:
        return 0
    referenced: set[str] = set()
    listing = parse_listing(dlog.store.list_from(log_path(dlog.log_uri, listing_prefix(0))))
    for checkpoint in listing.complete_checkpoints():
        if checkpoint.kind == "multipart":
            continue  # V1 spec only: never has sidecars
        contents = read_checkpoint(dlog.store, dlog.log_uri, checkpoint)
        referenced.update(sidecar.path.rsplit("/", 1)[-1] for sidecar in contents.sidecars)
    doomed = [s for s in old if s.name not in referenced]
    for status in doomed:
        dlog.store.delete(status.path)
    if doomed:
        log.info("deleted %d unreferenced sidecar file(s) of %s", len(doomed), dlog.table_uri)
    return len(doomed)


def cleanup_expired_logs(
    dlog: SnapshotManagement, snapshot: Snapshot, *, now_ms: int | None = None, retention_ms: int | None = None
) -> int:
    """Delete expired log files and stale temp files; returns how many were deleted.

    ``retention_ms`` replaces ``delta.logRetentionDuration`` with a cutoff truncated to the
    minute and runs even when ``delta.enableExpiredLogCleanup`` is off: Delta's explicit
    ``cleanUpExpiredLogs`` of ``DROP FEATURE ... TRUNCATE HISTORY``."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    temps = cleanup_stale_temp_files(dlog, snapshot, now_ms=now)
    props = snapshot.properties
    if retention_ms is not None:
        cutoff = cleanup_cutoff(now, retention_ms, "minute")
    elif not props.enable_expired_log_cleanup:
        log.debug("expired-log cleanup disabled for %s", dlog.table_uri)
        return temps
    else:
        cutoff = cleanup_cutoff(now, int(props.log_retention.total_seconds() * 1000))
    doomed = expired_log_statuses(dlog, cutoff)
    if not doomed:
        return temps
    # commits (and their .crc) go before any checkpoint: a cleanup cut short never leaves
    # commits that a removed checkpoint hid (checkpointProtection's requirement d)
    doomed.sort(key=lambda s: ".checkpoint." in s.name)
    for status in doomed:
        dlog.store.delete(status.path)
    deleted = len(doomed)
    log.info("deleted %d expired log file(s) of %s", deleted, dlog.table_uri)
    return deleted + temps + cleanup_unreferenced_sidecars(dlog, now_ms=now)
