"""RESTORE: set a table's files back to those of an earlier version (or timestamp).

Delta's ``RestoreTableCommand`` in the txn layer: one commit that

- removes (``dataChange=true``) every active file that is not in the target version,
- re-adds (``dataChange=true``) every file of the target version that is not active now,
  after checking that each still exists in storage, and its deletion-vector file too:
  files deleted by VACUUM cannot come back, and the restore is refused with
  :class:`RestoreMissingFilesError` naming them (Delta checks only the data files, and would
  commit a version no reader can read when just the deletion vector was vacuumed);
- brings back the target's metadata (schema, partitioning, properties), committed even
  when unchanged as Delta's ``commitLarge`` commits it, except identity columns'
  high-water marks, which stay at the latest (as in Delta), brings
  back the target's clustering columns (none if it was not clustered), and commits the
  target's protocol merged with the latest (a restore never downgrades it, unless
  ``allow_protocol_downgrade``: Delta's ``spark.databricks.delta.restore.protocolDowngradeAllowed``).

With ``ignore_missing_files`` (Delta's ``spark.sql.files.ignoreMissingFiles``) the check for
vacuumed files is skipped and they are re-added as Delta does, for readers that skip them too.

The commit is Delta's ``commitLarge``: written at the version after the read one, without
conflict resolution, so any concurrent commit makes it fail with ``ConcurrentWriteError``
rather than be silently undone. The commit carries Delta's ``RESTORE`` parameters
(``version``, ``timestamp``) and metrics (``tableSizeAfterRestore``,
``numOfFilesAfterRestore``, ``numRemovedFiles``, ``numRestoredFiles``,
``removedFilesSize``, ``restoredFilesSize``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from deltalog.txn.commit.operations import Restore
from deltalog.txn.log.data_files import missing_files, name_missing
from deltalog.txn.log.history import version_at_timestamp
from deltalog.txn.protocol.actions import Action, AddFile, DomainMetadata
from deltalog.txn.protocol.clustering import CLUSTERING_DOMAIN, clustering_domain
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.identity import with_merged_high_water_marks
from deltalog.txn.protocol.protocol_requirements import merge_protocols
from deltalog.txn.protocol.time_zones import parse_timestamp_text

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = ["RestoreMissingFilesError", "RestoreResult", "restore"]

log = logging.getLogger(__name__)


class RestoreToLatestVersionError(DeltaLogError, ValueError):
    """The version to restore to (given, or found by a timestamp) is the table's latest:
    Delta requires an earlier one (``RestoreTableCommand``'s "Version to restore should be
    less then last available version")."""

    def __init__(self, table_uri: str, version: int, latest: int) -> None:
        super().__init__(
            f"cannot restore {table_uri} to version {version}: the latest version is {latest}; "
            "restore to an earlier version (nothing was committed)"
        )
        self.table_uri = table_uri
        self.version = version
        self.latest = latest


class RestoreMissingFilesError(DeltaLogError):
    """Data or deletion-vector files of the target version are gone from storage (vacuumed):
    the restore cannot bring them back."""

    def __init__(self, table_uri: str, version: int, missing: list[str]) -> None:
        shown = name_missing(missing)
        super().__init__(
            f"cannot restore {table_uri} to version {version}: {len(missing)} of its data or "
            f"deletion-vector files no longer exist (removed by VACUUM?): {shown}. Restore to a later "
            "version whose files still exist; "
            "nothing was committed."
        )
        self.table_uri = table_uri
        self.version = version
        self.missing = missing


@dataclass
class RestoreResult:
    """The outcome of :func:`restore`."""

    table_uri: str
    version: int
    restored_version: int
    metrics: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table_uri,
            "version": self.version,
            "restored_version": self.restored_version,
            "metrics": dict(self.metrics),
        }


def restore(
    delta_log: DeltaLog,
    version: int | None = None,
    timestamp: datetime | int | str | None = None,
    *,
    lock: str | CommitLock | None = None,
    enforce_retention: bool = True,
    ignore_missing_files: bool = False,
    allow_protocol_downgrade: bool = False,
) -> RestoreResult:
    """Restore the table to ``version`` or to the version current at ``timestamp``.

    Raises :class:`RestoreToLatestVersionError` when the target is the latest version,
    :class:`RestoreMissingFilesError` when target files were vacuumed,
    :class:`~deltalog.txn.protocol.errors.VersionNotFoundError` for a version the log cannot
    rebuild, and, as Delta 4.1+ does,
    :class:`~deltalog.txn.log.time_travel_retention.TimeTravelBeyondDeletedFileRetentionDurationError`
    for a target older than ``delta.deletedFileRetentionDuration`` unless
    ``enforce_retention=False`` (or the storage option
    ``spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration=false``);
    in every case nothing is committed. ``ignore_missing_files`` skips the check for vacuumed
    files (Delta's ``spark.sql.files.ignoreMissingFiles``); ``allow_protocol_downgrade`` commits
    the target version's protocol as it was (Delta's ``restore.protocolDowngradeAllowed``).
    """
    if (version is None) == (timestamp is None):
        raise ValueError("restore needs exactly one of version= or timestamp=")
    delta_log.require_table()
    target = _target(delta_log, version, timestamp, enforce_retention)
    txn = delta_log.start_transaction(lock=lock)
    latest = txn.snapshot
    if target.version >= latest.version:
        raise RestoreToLatestVersionError(delta_log.table_uri, target.version, latest.version)
    txn.read_whole_table()

    target_files = {f.logical_key: f for f in target.files}
    latest_files = {f.logical_key: f for f in latest.files}
    to_add = [f for key, f in target_files.items() if key not in latest_files]
    to_remove = [f for key, f in latest_files.items() if key not in target_files]
    missing = [] if ignore_missing_files else missing_files(delta_log.store, delta_log.table_uri, to_add)
    if missing:
        raise RestoreMissingFilesError(delta_log.table_uri, target.version, missing)

    now = int(time.time() * 1000)
    actions: list[Action] = [f.remove(now, data_change=True) for f in to_remove]
    actions.extend(replace(f, data_change=True) for f in to_add)
    actions.extend(_restored_clustering(target, latest))
    _restore_metadata(txn, target, latest)
    _restore_protocol(txn, target, latest, allow_protocol_downgrade)

    metrics = _restore_metrics(target, to_add, to_remove)
    committed = txn.commit_large(actions, _restore_operation(target, timestamp, metrics))
    log.info(
        "restored %s to version %d as version %d (%d files restored, %d removed)",
        delta_log.table_uri,
        target.version,
        committed,
        len(to_add),
        len(to_remove),
    )
    return RestoreResult(delta_log.table_uri, committed, target.version, metrics)


def _target(
    delta_log: DeltaLog, version: int | None, timestamp: datetime | int | str | None, enforce_retention: bool
) -> Snapshot:
    """The snapshot to restore to. A time is looked up as Delta's RESTORE does
    (``getActiveCommitAtTime(canReturnLastCommit = true)``): a time after the last commit
    finds the latest version, which the restore then refuses."""
    if timestamp is not None:
        version = version_at_timestamp(delta_log, timestamp, can_return_last_commit=True)
    return delta_log.snapshot(version=version, enforce_retention=enforce_retention)


def _restore_metadata(txn: OptimisticTransaction, target: Snapshot, latest: Snapshot) -> None:
    """The target's metadata, but identity columns keep the latest high-water marks (Delta's
    ``copySchemaWithMergedHighWaterMarks``): values generated since are never generated again.
    The re-added files are the target version's own, checked against the table's constraints
    when they were written; like Delta's RESTORE, do not check them again."""
    txn.update_metadata(with_merged_high_water_marks(target.metadata, latest.metadata))
    txn.mark_constraints_checked()


def _restore_protocol(txn: OptimisticTransaction, target: Snapshot, latest: Snapshot, allow_downgrade: bool) -> None:
    """Delta's RESTORE protocol: the target version's merged with the latest (never a
    downgrade), or, when a downgrade is allowed, the target version's as it was."""
    if allow_downgrade and target.protocol != latest.protocol:
        txn.downgrade_protocol(target.protocol, lambda _snapshot: True)  # the whole table was read
        return
    current = txn.protocol or latest.protocol
    txn.upgrade_protocol(merge_protocols(current, target.protocol) or current)  # committed even when unchanged


def _restore_operation(target: Snapshot, timestamp: datetime | int | str | None, metrics: dict[str, str]) -> Restore:
    """Delta's RESTORE parameters: the version, or the timestamp as Delta records it."""
    if timestamp is None:
        return Restore(version=target.version, timestamp=None, user_metrics=metrics)
    return Restore(version=None, timestamp=_timestamp_parameter(timestamp), user_metrics=metrics)


def _timestamp_parameter(timestamp: datetime | int | str) -> str:
    """The time as Delta's ``RestoreTableCommand`` records it, ``java.sql.Timestamp``'s text
    (``2024-05-01 12:00:00.0``: the wall time, fraction without trailing zeros), here in the
    zone the time was given in; other values (milliseconds, text Spark cannot read) as given."""
    value = timestamp if isinstance(timestamp, datetime) else None
    if isinstance(timestamp, str):
        value = parse_timestamp_text(timestamp)
    if value is None:
        return str(timestamp)
    fraction = f"{value.microsecond:06d}".rstrip("0") or "0"
    return f"{value:%Y-%m-%d %H:%M:%S}.{fraction}"


def _restored_clustering(target: Snapshot, latest: Snapshot) -> list[DomainMetadata]:
    """The ``delta.clustering`` domain the restore commits (Delta's
    ``handleDomainMetadataForRestoreTable``): the target version's clustering columns, or
    none (``CLUSTER BY NONE``) when the target was not clustered; nothing when it is unchanged."""
    current = latest.domain_metadata.get(CLUSTERING_DOMAIN)
    wanted = target.domain_metadata.get(CLUSTERING_DOMAIN)
    if wanted is not None and not wanted.removed:
        restored = DomainMetadata(CLUSTERING_DOMAIN, wanted.configuration, False)
    elif current is not None and not current.removed:
        restored = clustering_domain([])
    else:
        return []
    return [] if restored == current else [restored]


def _restore_metrics(target: Snapshot, to_add: list[AddFile], to_remove: list[AddFile]) -> dict[str, str]:
    """Delta's RESTORE operation metrics."""
    return {
        "tableSizeAfterRestore": str(target.size_in_bytes),
        "numOfFilesAfterRestore": str(target.num_files),
        "numRemovedFiles": str(len(to_remove)),
        "numRestoredFiles": str(len(to_add)),
        "removedFilesSize": str(sum(f.size for f in to_remove)),
        "restoredFilesSize": str(sum(f.size for f in to_add)),
    }
