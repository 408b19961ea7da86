"""Row tracking backfill and unbackfill in batches of commits, as Delta's
``RowTrackingBackfillCommand`` / ``RowTrackingUnBackfillCommand`` (``BackfillExecutor``).

Enabling row tracking on an existing table (:func:`backfill_row_tracking`, run by
:func:`deltalog.txn.commands.alter.set_table_properties` before the property commit; a
suspended table with files to backfill, or a file without ``numRecords``, is refused first):

1. ``UPGRADE PROTOCOL`` adding ``rowTracking`` (and ``domainMetadata``), unless the protocol
   has it: from then on every writer gives the files it adds row ids, so what is left to
   backfill can only shrink;
2. ``ROW TRACKING BACKFILL`` commits (``operationParameters.batchId`` 0, 1, ...), each
   re-adding (``dataChange=false``) up to ``max_files_per_commit`` live files without a
   ``baseRowId``; the commit assigns their ids above the high-water mark, as any commit does.

Dropping the feature (:func:`unbackfill_row_tracking`, after ``delta.rowTrackingSuspended``
is set) re-adds the files that have ids without them, in ``ROW TRACKING UNBACKFILL`` batches.

A batch reads the latest snapshot, takes the first ``max_files_per_commit`` candidates and
records them as read. The loop stops after a batch with fewer files than the limit, or once
``max_files_factor`` times the table's file count have been processed (so a stream of
concurrent writers cannot keep it going). Conflicts (``deltalog.txn.commit.conflicts``, as
Delta's ``ConflictChecker``): a batch drops the files a concurrent commit added or removed
(their ids came from that commit, or they are gone) and never fails on a concurrent append;
an unbackfill batch also strips the ids of files a concurrent commit added with ids, and
fails when a concurrent backfill batch won.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.txn.commit.operations import RowTrackingBackfill, RowTrackingUnBackfill, UpgradeProtocol
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import AddFile
from deltalog.txn.protocol.errors import RowTrackingError
from deltalog.txn.protocol.protocol_versions import dependency_closure, table_features_protocol

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.operations import Operation
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "DEFAULT_MAX_FILES_FACTOR",
    "DEFAULT_MAX_FILES_PER_COMMIT",
    "BackfillLimits",
    "backfill_row_tracking",
    "unbackfill_row_tracking",
]

log = logging.getLogger(__name__)

#: Delta's ``spark.databricks.delta.backfill.maxNumFiles`` default (keeps a commit under ~100 MB)
DEFAULT_MAX_FILES_PER_COMMIT = 22_000
#: Delta's ``spark.databricks.delta.backfill.maxNumFilesFactor`` default
DEFAULT_MAX_FILES_FACTOR = 3.0


@dataclass(frozen=True)
class BackfillLimits:
    """How a (un)backfill splits its work: at most ``max_files_per_commit`` files a commit,
    at most ``max_files_factor`` x the table's file count in all."""

    max_files_per_commit: int = DEFAULT_MAX_FILES_PER_COMMIT
    max_files_factor: float = DEFAULT_MAX_FILES_FACTOR

    def __post_init__(self) -> None:
        if isinstance(self.max_files_per_commit, bool) or not isinstance(self.max_files_per_commit, int):
            raise RowTrackingError(f"max_files_per_commit must be an integer, got {self.max_files_per_commit!r}")
        if self.max_files_per_commit <= 0:
            raise RowTrackingError(f"max_files_per_commit must be positive, got {self.max_files_per_commit}")
        if not math.isfinite(self.max_files_factor) or self.max_files_factor <= 0:
            raise RowTrackingError(f"max_files_factor must be greater than zero, got {self.max_files_factor}")


def backfill_row_tracking(
    delta_log: DeltaLog, limits: BackfillLimits | None = None, *, lock: str | CommitLock | None = None
) -> int | None:
    """Delta's ``RowTrackingBackfillCommand``: add ``rowTracking`` to the protocol, then give
    every live file row ids in ``ROW TRACKING BACKFILL`` batches. Returns the last version
    committed (None when nothing was)."""
    snapshot = delta_log.require_table()
    _refuse_before_upgrade(snapshot)
    last = _upgrade_protocol(delta_log, lock)
    batches = _run_batches(
        delta_log, limits or BackfillLimits(), lock, _without_row_ids, _backfill_batch, RowTrackingBackfill
    )
    return batches if batches is not None else last


def _refuse_before_upgrade(snapshot: Snapshot) -> None:
    """What Delta's batches would refuse after its protocol upgrade, refused before it: a
    suspended table (one whose files all have ids needs no batch) and a file without
    ``numRecords`` (its row ids cannot be assigned)."""
    candidates = _without_row_ids(snapshot)
    if row_tracking.is_suspended(snapshot.metadata) and candidates:
        raise RowTrackingError(
            f"cannot backfill row ids while {row_tracking.SUSPENDED_KEY} is true; set it to false first"
        )
    missing = [f.path for f in candidates if f.num_records() is None]
    if missing:
        raise RowTrackingError(
            f"[DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS] cannot backfill row ids: {len(missing)} file(s) have no "
            f"numRecords statistic (e.g. {missing[0]}), which row ids need. Rewrite those files with "
            "statistics collected first. Nothing was committed."
        )


def unbackfill_row_tracking(
    delta_log: DeltaLog, limits: BackfillLimits | None = None, *, lock: str | CommitLock | None = None
) -> int | None:
    """Delta's ``RowTrackingUnBackfillCommand``: re-add the live files with row ids without
    them in ``ROW TRACKING UNBACKFILL`` batches (row tracking must be disabled and
    suspended). Returns the last version committed (None when nothing was)."""
    return _run_batches(
        delta_log, limits or BackfillLimits(), lock, _with_row_ids, _unbackfill_batch, RowTrackingUnBackfill
    )


def _upgrade_protocol(delta_log: DeltaLog, lock: str | CommitLock | None) -> int | None:
    """The ``UPGRADE PROTOCOL`` commit adding ``rowTracking`` (writer 7), when needed."""
    txn = delta_log.start_transaction(lock=lock)
    current = txn.snapshot.protocol
    if row_tracking.is_supported(current):
        return None
    txn.upgrade_protocol(table_features_protocol(current.min_reader_version, dependency_closure({"rowTracking"})))
    new = txn.protocol
    assert new is not None
    return txn.commit([], UpgradeProtocol(new_protocol=new.to_dict()))


def _without_row_ids(snapshot: Snapshot) -> list[AddFile]:
    return [f for f in snapshot.files if f.base_row_id is None]


def _with_row_ids(snapshot: Snapshot) -> list[AddFile]:
    return [f for f in snapshot.files if f.base_row_id is not None or f.default_row_commit_version is not None]


def _backfill_batch(snapshot: Snapshot, files: Sequence[AddFile]) -> list[AddFile]:
    """Delta's ``RowTrackingBackfillBatch``: the files re-added as they are; the commit
    assigns their ids."""
    if not row_tracking.is_supported(snapshot.protocol) or row_tracking.is_suspended(snapshot.metadata):
        raise RowTrackingError(
            "cannot backfill row ids: the protocol does not support rowTracking or "
            f"{row_tracking.SUSPENDED_KEY} is true (a concurrent DROP FEATURE rowTracking?)"
        )
    return [dataclasses.replace(f, data_change=False) for f in files]


def _unbackfill_batch(snapshot: Snapshot, files: Sequence[AddFile]) -> list[AddFile]:
    """Delta's ``RowTrackingUnBackfillBatch``: the files re-added without ids."""
    if row_tracking.enabled_property(snapshot.metadata) or not row_tracking.is_suspended(snapshot.metadata):
        raise RowTrackingError(
            "cannot remove row ids while row tracking is enabled or not suspended "
            f"(delta.enableRowTracking=false and {row_tracking.SUSPENDED_KEY}=true first)"
        )
    return [dataclasses.replace(f, data_change=False, base_row_id=None, default_row_commit_version=None) for f in files]


def _run_batches(
    delta_log: DeltaLog,
    limits: BackfillLimits,
    lock: str | CommitLock | None,
    candidates: Callable[[Snapshot], list[AddFile]],
    batch: Callable[[Snapshot, Sequence[AddFile]], list[AddFile]],
    operation: Callable[[int], Operation],
) -> int | None:
    """Delta's ``BackfillExecutor.executeBackfillBatches``: commit batches until one has fewer
    files than the limit or the files processed reach ``factor`` x the table's file count."""
    size = limits.max_files_per_commit
    most = len(delta_log.update().files) * limits.max_files_factor
    batch_id, processed, last = 0, 0, None
    while True:
        txn = delta_log.start_transaction(lock=lock)
        files = candidates(txn.snapshot)[:size]
        if not files:
            return last
        txn.track_files_read(files)
        last = txn.commit(batch(txn.snapshot, files), operation(batch_id))
        log.info("%s batch %d of %s: %d files", operation(batch_id).name, batch_id, delta_log.table_uri, len(files))
        batch_id += 1
        processed += len(files)
        if len(files) < size:
            return last
        if processed >= most:
            log.warning(
                "%s of %s stopped after %d files (%s x the table's files): concurrent writers kept adding work",
                operation(batch_id).name,
                delta_log.table_uri,
                processed,
                limits.max_files_factor,
            )
            return last
