"""``DeltaLog``: the entry point to a table's transaction log.

It reads the log (listing, snapshots, time travel: :class:`SnapshotManagement`), writes
checkpoints, cleans up expired log files, returns the history, and opens transactions. It
sits above the log and the commit layers and below the commands (OPTIMIZE, VACUUM,
RESTORE), which it never imports: see ``docs/architecture.md``.
"""

from __future__ import annotations

from collections.abc import Callable

from deltalog.txn.commit.isolation import IsolationLevel
from deltalog.txn.commit.locks.base import CommitLock
from deltalog.txn.commit.settings import EngineSettings
from deltalog.txn.commit.transaction import OptimisticTransaction
from deltalog.txn.log.checkpoint_writer import CheckpointResult, write_checkpoint
from deltalog.txn.log.cleanup import cleanup_expired_logs
from deltalog.txn.log.history import CommitRecord, history
from deltalog.txn.log.snapshot import Snapshot
from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["DeltaLog"]


class DeltaLog(SnapshotManagement):
    """The transaction log of the Delta table at ``table_uri``."""

    #: The settings of a transaction opened without any (:meth:`start_transaction`): an
    #: integration binds its session here (its ``engineInfo``, the session's
    #: ``commitInfo.userMetadata``), called at each transaction as Delta reads its session
    #: conf at each commit, so every command run on this log commits with them. None: the
    #: storage options' (:meth:`EngineSettings.from_options`).
    settings_source: Callable[[], EngineSettings] | None = None

    def history(self, limit: int | None = None) -> list[CommitRecord]:
        """The table's commits, newest first (``DESCRIBE HISTORY``)."""
        return history(self, limit)

    def checkpoint(
        self, snapshot: Snapshot | None = None, *, part_size: int | None = None, v2_format: str = "parquet"
    ) -> CheckpointResult:
        """Write a checkpoint of ``snapshot`` (latest by default) and ``_last_checkpoint``
        (a UUID-named V2 checkpoint in ``v2_format`` when ``delta.checkpointPolicy=v2``)."""
        return write_checkpoint(self, snapshot or self.require_table(), part_size=part_size, v2_format=v2_format)

    def cleanup_expired_logs(
        self, snapshot: Snapshot | None = None, *, now_ms: int | None = None, retention_ms: int | None = None
    ) -> int:
        """Delete log files as the protocol's metadata-cleanup rules allow; the count deleted
        (``retention_ms``: see :func:`~deltalog.txn.log.cleanup.cleanup_expired_logs`)."""
        return cleanup_expired_logs(self, snapshot or self.require_table(), now_ms=now_ms, retention_ms=retention_ms)

    def start_transaction(
        self,
        *,
        lock: str | CommitLock | None = None,
        single_writer: bool = False,
        isolation_level: IsolationLevel | str | None = None,
        settings: EngineSettings | None = None,
        snapshot: Snapshot | None = None,
    ) -> OptimisticTransaction:
        """Open an optimistic transaction on ``snapshot`` (the latest by default).

        ``lock`` picks the commit lock (``"auto"`` by default: the store's own conditional
        write or atomic rename when it has one; see ``docs/locks.md``). Without ``settings``,
        the :attr:`settings_source`'s."""
        if settings is None and self.settings_source is not None:
            settings = self.settings_source()
        return OptimisticTransaction(
            self,
            lock=lock,
            single_writer=single_writer,
            isolation_level=isolation_level,
            settings=settings,
            snapshot=snapshot,
        )
