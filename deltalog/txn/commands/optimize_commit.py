"""OPTIMIZE's commit against concurrent commits: Delta's ``OptimizeExecutor.commitAndRetry``.

OPTIMIZE plans and rewrites its bins once. Its transaction records as read only the files
it compacts (Delta's ``trackFilesRead(filesToProcess)``) and commits at snapshot isolation,
so concurrent appends never conflict. When the commit still conflicts (a winner removed a
compacted file, changed the metadata or the protocol), a new transaction is opened on the
latest snapshot: if every compacted file is still there, the same deletion vector
included, and the partition columns did not change, the same actions are committed again
from it; otherwise the conflict is raised (a DELETE that removed a compacted file, or gave
it a deletion vector, fails OPTIMIZE with ``ConcurrentDeleteReadError``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from deltalog.txn.commit.commit_errors import DeltaConcurrentModificationError
from deltalog.txn.commit.operations import Operation
from deltalog.txn.protocol.actions import Action, AddFile

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog

__all__ = ["commit_and_retry"]

log = logging.getLogger(__name__)


def commit_and_retry(
    delta_log: DeltaLog,
    txn: OptimisticTransaction,
    actions: Sequence[Action],
    operation: Operation,
    compacted: Sequence[AddFile],
    *,
    max_attempts: int,
    lock: str | CommitLock | None = None,
) -> tuple[int, int]:
    """Commit ``actions`` (which compact the files ``compacted``, recorded as read by
    ``txn``); after a conflict, again from a new transaction while the compacted files are
    all still in the table, at most ``max_attempts`` times. Returns (version, attempts)."""
    attempt = 1
    while True:
        try:
            return txn.commit(actions, operation), attempt
        except DeltaConcurrentModificationError as exc:
            retry = delta_log.start_transaction(lock=lock)
            if attempt >= max_attempts or not _still_compactable(txn, retry, compacted):
                raise
            log.info("%s %s: retrying the commit after %s", operation.name, delta_log.table_uri, exc)
            retry.track_files_read(compacted)
            txn, attempt = retry, attempt + 1


def _still_compactable(
    read: OptimisticTransaction, latest: OptimisticTransaction, compacted: Sequence[AddFile]
) -> bool:
    """Every compacted file (path and deletion vector) is live in ``latest`` and the
    partition columns are the ones ``read`` planned with."""
    if latest.partition_columns != read.partition_columns:
        return False
    live = {f.logical_key for f in latest.snapshot.files}
    missing = [f.path for f in compacted if f.logical_key not in live]
    if missing:
        log.warning("compacted files were changed concurrently: %s; aborting the compaction", ", ".join(missing))
    return not missing
