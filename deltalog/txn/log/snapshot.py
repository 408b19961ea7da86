"""A snapshot: the state of a Delta table at one version.

Built by :class:`~deltalog.txn.log.snapshot_management.SnapshotManagement` from a checkpoint plus commits, or by
:meth:`Snapshot.apply` from an older snapshot plus one commit. ``apply`` costs what the
commit costs, not what the table costs: protocol, metadata, application transactions and
domains are updated at once, while file actions are queued and merged into the Arrow
file tables in one pass the first time files are asked for (or when the queue grows
long), so a run of blind appends never touches the table's file state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.log.replay import (
    CommitBatch,
    FileSource,
    LogState,
    partition_keys,
    reconcile,
    table_to_adds,
    table_to_removes,
)
from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
)
from deltalog.txn.protocol.arrow_build import int64_scalar
from deltalog.txn.protocol.errors import InvalidTableStateError, TableNotFoundError
from deltalog.txn.protocol.features import check_read_supported
from deltalog.txn.protocol.properties import TableProperties
from deltalog.txn.protocol.protocol_requirements import check_features_match_metadata
from deltalog.txn.protocol.schema import StructType, parse_schema

if TYPE_CHECKING:
    from deltalog.logstores.base import FileStatus
    from deltalog.txn.log.checksum import VersionChecksum
    from deltalog.txn.log.log_segment import LogSegment

__all__ = ["Snapshot"]

# Queued commits merged into the file tables at once when either bound is passed, so a
# long run of applies never replays more than this many actions.
_MAX_PENDING_BATCHES = 256
_MAX_PENDING_ACTIONS = 100_000


class Snapshot:
    """The table at :attr:`version` (``-1``: the table does not exist yet)."""

    def __init__(
        self,
        table_uri: str,
        version: int,
        state: LogState,
        timestamp: int | Callable[[], int],
        segment: LogSegment | None = None,
        checkpoint_version: int | None = None,
        pending: tuple[CommitBatch, ...] = (),
        pending_actions: int = 0,
        base: FileSource | None = None,
    ) -> None:
        self.table_uri = table_uri
        self.version = version
        # ``_state``'s protocol/metadata/txns/domains are current. The file actions are
        # ``_base`` (``_state`` itself, or a checkpoint read lazily) plus the commits queued
        # in ``_pending``; ``_files`` merges them on first use.
        self._state = state
        self._base: FileSource = state if base is None else base
        self._pending = pending
        self._pending_actions = pending_actions
        # an int, or the read that yields it (it raises when the commit lacks its in-commit
        # timestamp: the snapshot stays usable, as Delta's lazy ``Snapshot.timestamp``)
        self._timestamp = timestamp
        self.segment = segment
        self.checkpoint_version = checkpoint_version if segment is None else segment.checkpoint_version
        #: this version's checksum (``N.crc``): read with the log, or computed by the commit
        #: that made the snapshot; the file count and size are checked when files load
        self.checksum: VersionChecksum | None = None
        #: whether :attr:`checksum` was read from the ``.crc`` file (then it is validated)
        self.checksum_from_log = False
        #: the listed commit file of :attr:`version` this state was read from, when known:
        #: an update whose listing shows another file there (size, modification time) reads
        #: the log afresh, as Delta's ``LogSegment.equals`` (the table was made again)
        self.last_commit: FileStatus | None = None
        if version >= 0:
            checkpoint = None if segment is None else segment.checkpoint
            where = checkpoint.files[0].path if checkpoint is not None else None
            protocol = _require_protocol_and_metadata(table_uri, version, state, self.checkpoint_version, where)
            check_read_supported(protocol, table_uri)
            if segment is not None:  # loaded from the log; apply_batch checks a changed one
                assert state.metadata is not None
                check_features_match_metadata(protocol, state.metadata, table_uri)

    @property
    def timestamp(self) -> int:
        """The commit timestamp of :attr:`version` in ms: its ``inCommitTimestamp`` when the
        table has in-commit timestamps, else the commit file's modification time."""
        if callable(self._timestamp):
            self._timestamp = self._timestamp()
        return self._timestamp

    def __repr__(self) -> str:
        files = f", files={self.num_files}" if self.files_loaded else ""
        return f"Snapshot({self.table_uri!r}, version={self.version}{files})"

    @property
    def files_loaded(self) -> bool:
        """Whether the file actions are in memory (else they are read on first use)."""
        return "_files" in self.__dict__ or (self._base is self._state and not self._pending)

    @property
    def files_in_memory(self) -> bool:
        """Whether the file actions can be had without reading anything (loaded, or in-memory
        commits still to be merged), so counting them costs no I/O."""
        return self.files_loaded or isinstance(self._base, LogState)

    @property
    def listed_without_checksum(self) -> bool:
        """Whether this snapshot was loaded from a listing that showed no ``.crc`` for its
        version (so there is none to read)."""
        return self.segment is not None and self.segment.checksum is None

    # -- protocol and metadata --------------------------------------------------------

    def _require(self) -> None:
        if self.version < 0:
            raise TableNotFoundError(self.table_uri, "the snapshot is empty (version -1)")

    @property
    def exists(self) -> bool:
        return self.version >= 0

    @property
    def state(self) -> LogState:
        """The fully reconciled state (merges queued file actions)."""
        return self._files

    @property
    def non_file_state(self) -> LogState:
        """Current protocol, metadata, txns and domains; file tables possibly stale."""
        return self._state

    @cached_property
    def _files(self) -> LogState:
        if not self._pending and self._base is self._state:
            state = self._state
        else:
            state = LogState.collect(self._state, self._file_stream())
        if self.checksum is not None and self.checksum_from_log:
            self._validate_file_counts(state, self.checksum)
        return state

    def _validate_file_counts(self, state: LogState, checksum: VersionChecksum) -> None:
        from deltalog.txn.log.checksum import validate_checksum

        size = pc.sum(state.adds.column("size")).as_py() if state.adds.num_rows else 0
        validate_checksum(self, checksum, (int(state.adds.num_rows), int(size or 0)))

    def _file_stream(self) -> Iterator[tuple[pa.Table, pa.Table]]:
        pending = CommitBatch.concat_files(self._pending) if self._pending else None
        return reconcile(self._base, pending)

    def file_batches(self) -> Iterator[tuple[pa.Table, pa.Table]]:
        """The reconciled file actions as ``(adds, removes)`` batches, without loading
        them all into memory when they are not loaded yet (checkpoint writing streams
        through this). Removes are all tombstones, expired or not."""
        files = self.__dict__.get("_files")
        if files is not None or self.files_loaded:
            state = self._files
            yield state.adds, state.removes
            return
        yield from self._file_stream()

    @property
    def file_source(self) -> FileSource | None:
        """Where the file actions not loaded yet come from (None when loaded)."""
        return None if self.files_loaded else self._base

    def adopt_checkpoint(self, source: FileSource) -> None:
        """Read the file actions from ``source`` from now on: a checkpoint just written of
        exactly this snapshot (so an unloaded snapshot never depends on an older
        checkpoint that log cleanup may delete)."""
        if not self.files_loaded:
            self._base = source
            self._pending = ()
            self._pending_actions = 0

    @property
    def protocol(self) -> Protocol:
        self._require()
        assert self._state.protocol is not None
        return self._state.protocol

    @property
    def metadata(self) -> Metadata:
        self._require()
        assert self._state.metadata is not None
        return self._state.metadata

    @cached_property
    def schema(self) -> StructType:
        return parse_schema(self.metadata.schema_string)

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return self.metadata.partition_columns

    @cached_property
    def properties(self) -> TableProperties:
        if self.version < 0:
            return TableProperties({})
        return TableProperties(self.metadata.configuration)

    # -- files ----------------------------------------------------------------------

    @property
    def files_table(self) -> pa.Table:
        """Active files, one row per ``add``, columns as in the checkpoint's ``add`` struct."""
        return self._files.files_table()

    @cached_property
    def files(self) -> list[AddFile]:
        return table_to_adds(self.files_table)

    @property
    def num_files(self) -> int:
        return int(self._files.adds.num_rows)

    @property
    def size_in_bytes(self) -> int:
        if not self.num_files:
            return 0
        total = pc.sum(self._files.adds.column("size")).as_py()
        return int(total) if total is not None else 0

    def min_file_retention_timestamp(self, now_ms: int | None = None) -> int:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return now - int(self.properties.deleted_file_retention.total_seconds() * 1000)

    def tombstones_table(self, now_ms: int | None = None) -> pa.Table:
        """Unexpired ``remove`` actions (``deletionTimestamp`` newer than the retention)."""
        removes = self._files.removes_table()
        if not removes.num_rows:
            return removes
        return removes.filter(self.unexpired_mask(removes, now_ms))

    def unexpired_mask(self, removes: pa.Table, now_ms: int | None = None) -> pa.ChunkedArray:
        """Which rows of a ``remove`` table are unexpired tombstones."""
        cutoff = int64_scalar(self.min_file_retention_timestamp(now_ms))
        ts = pc.fill_null(removes.column("deletionTimestamp"), int64_scalar(0))
        return pc.greater(ts, cutoff)

    @property
    def tombstones(self) -> list[RemoveFile]:
        return table_to_removes(self.tombstones_table())

    # -- transactions and domains --------------------------------------------------------

    def set_transactions_at(self, now_ms: int | None = None) -> dict[str, SetTransaction]:
        """The unexpired application transactions: with ``delta.setTransactionRetentionDuration``
        only those whose ``lastUpdated`` is after ``now - retention`` (one without it expires,
        as Delta's ``InMemoryLogReplay.getTransactions``)."""
        retention = self.properties.set_transaction_retention
        if retention is None:
            return dict(self._state.txns)
        now = int(time.time() * 1000) if now_ms is None else now_ms
        cutoff = now - int(retention.total_seconds() * 1000)
        return {k: t for k, t in self._state.txns.items() if t.last_updated is not None and t.last_updated > cutoff}

    @property
    def set_transactions(self) -> dict[str, SetTransaction]:
        return self.set_transactions_at()

    def txn_version(self, app_id: str) -> int | None:
        t = self.set_transactions.get(app_id)
        return None if t is None else t.version

    @property
    def domain_metadata(self) -> dict[str, DomainMetadata]:
        return dict(self._state.domains)

    # -- evolution ------------------------------------------------------------------

    def apply(self, version: int, actions: Sequence[Action], commit_timestamp: int) -> Snapshot:
        """A new snapshot: this state plus the commit ``version`` made of ``actions``."""
        if version != self.version + 1:
            raise InvalidTableStateError(
                f"cannot apply version {version} to the snapshot at version {self.version} of "
                f"{self.table_uri}: versions must be contiguous"
            )
        batch = CommitBatch()
        batch.add_actions(version, actions)
        keys = set(partition_keys(self._state.metadata)) | set(partition_keys(batch.metadata))
        batch.partition_keys = tuple(sorted(keys))
        snapshot = self.apply_batch(version, batch, commit_timestamp)
        if self.checksum is not None and version > 0:
            from deltalog.txn.log.checksum import derive_checksum

            # carried along without loading files, to seed the next commit's checksum
            snapshot.checksum = derive_checksum(self.checksum, snapshot, actions)
        return snapshot

    def apply_batch(self, version: int, batch: CommitBatch, commit_timestamp: int | Callable[[], int]) -> Snapshot:
        """This state plus the commits ``self.version + 1 .. version`` collected in ``batch``."""
        materialized = self.__dict__.get("_files")
        if materialized is not None:
            state = materialized.with_non_file_actions(batch)
            base: FileSource = state
            pending: tuple[CommitBatch, ...] = ()
            queued = 0
        else:
            state = self._state.with_non_file_actions(batch)
            base = state if self._base is self._state else self._base
            pending, queued = self._pending, self._pending_actions
        if batch.has_file_actions:
            pending = (*pending, batch)
            queued += batch.num_file_actions
            if len(pending) > _MAX_PENDING_BATCHES or queued > _MAX_PENDING_ACTIONS:
                state = LogState.collect(state, reconcile(base, CommitBatch.concat_files(pending)))
                base, pending, queued = state, (), 0
        changed = batch.protocol is not None or batch.metadata is not None
        if changed and state.protocol is not None and state.metadata is not None:
            check_features_match_metadata(state.protocol, state.metadata, self.table_uri)
        return Snapshot(
            self.table_uri, version, state, commit_timestamp, None, self.checkpoint_version, pending, queued, base
        )


def _require_protocol_and_metadata(
    table_uri: str, version: int, state: LogState, checkpoint_version: int | None, checkpoint_file: str | None
) -> Protocol:
    """The state's protocol; a state without protocol or metaData is refused (Delta's
    ``DELTA_STATE_RECOVER_ERROR``), naming the checkpoint file it was read from, if any."""
    if state.protocol is not None and state.metadata is not None:
        return state.protocol
    missing = " and ".join(n for n, v in (("protocol", state.protocol), ("metaData", state.metadata)) if v is None)
    if checkpoint_version is not None:
        why = (
            f"the checkpoint at version {checkpoint_version}{f' ({checkpoint_file})' if checkpoint_file else ''} "
            "lacks it and no later commit holds it; every checkpoint must hold both. Delete that checkpoint "
            "(and _last_checkpoint) to read "
            "the table from its commits"
        )
    else:
        why = "version 0 must hold both. Restore the missing commit files"
    raise InvalidTableStateError(
        f"the Delta log of {table_uri} at version {version} has no {missing} action; the log is damaged ({why})."
    )
