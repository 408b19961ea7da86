"""Expired-log cleanup, per PROTOCOL "Metadata Cleanup" and Delta Spark's ``MetadataCleanup``.

Files of ``_delta_log`` (commits, checkpoints, ``.crc``) are deleted only when

- ``delta.enableExpiredLogCleanup`` is true (the default);
- they belong to versions *before* a complete checkpoint ``c`` (so the state at ``c`` and
  every newer version stays reconstructable; the newest state is never touched);
- the newest commit before ``c`` is older than the cutoff: UTC midnight of
  ``now - delta.logRetentionDuration`` (30 days by default). Commit times are made monotonic
  first (a time not after its predecessor's counts as predecessor + 1 ms), so time travel
  by timestamp keeps working for the versions that remain.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from deltalog.txn.log_segment import file_version, parse_listing

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.snapshot import Snapshot

__all__ = ["cleanup_cutoff", "cleanup_expired_logs", "expired_versions_before"]

log = logging.getLogger(__name__)


def cleanup_cutoff(now_ms: int, retention_ms: int) -> int:
    """``now - retention`` truncated to midnight UTC, in ms."""
    moment = datetime.fromtimestamp((now_ms - retention_ms) / 1000, tz=timezone.utc)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return int(midnight.timestamp() * 1000)


def expired_versions_before(dlog: DeltaLog, snapshot: Snapshot, cutoff_ms: int) -> int:
    """The checkpoint version ``c``: files of versions ``< c`` may be deleted (0: none)."""
    listing = parse_listing(dlog.store.list_from(f"{dlog.log_uri}/{0:020d}"))
    checkpoints = [c for c in listing.complete_checkpoints(snapshot.version)]
    if not checkpoints:
        return 0
    # monotonic timestamps per version, from the commit files (checkpoint time if the
    # commit file is gone already)
    versions = sorted(set(listing.commits) | {c.version for c in listing.checkpoints})
    cp_times = {c.version: c.modification_time for c in listing.checkpoints}
    adjusted: dict[int, int] = {}
    prev: int | None = None
    for v in versions:
        status = listing.commits.get(v)
        ts = status.modification_time if status is not None else cp_times.get(v, 0)
        if prev is not None and ts <= prev:
            ts = prev + 1
        adjusted[v] = ts
        prev = ts
    best = 0
    for cp in checkpoints:
        before = [v for v in versions if v < cp.version]
        if not before:
            continue
        if adjusted[before[-1]] <= cutoff_ms:
            best = max(best, cp.version)
    return best


def cleanup_expired_logs(dlog: DeltaLog, snapshot: Snapshot, *, now_ms: int | None = None) -> int:
    """Delete expired log files; returns how many were deleted."""
    props = snapshot.properties
    if not props.enable_expired_log_cleanup:
        log.debug("expired-log cleanup disabled for %s", dlog.table_uri)
        return 0
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = cleanup_cutoff(now, int(props.log_retention.total_seconds() * 1000))
    before = expired_versions_before(dlog, snapshot, cutoff)
    if before <= 0:
        return 0
    deleted = 0
    for status in list(dlog.store.list_from(f"{dlog.log_uri}/{0:020d}")):
        version = file_version(status.name)
        if version is None or version >= before:
            continue
        dlog.store.delete(status.path)
        deleted += 1
    log.info("deleted %d expired log file(s) of %s before version %d", deleted, dlog.table_uri, before)
    return deleted
