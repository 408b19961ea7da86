"""Conflict checking between a transaction and the commits that won the race.

Follows Delta's ``ConflictChecker.checkConflicts``; for each winning commit, in order:

1. protocol: the winner changed the protocol -> this client must still be able to write
   it, this transaction must not change it too, and the winner must not drop a feature
   this transaction read (:class:`ProtocolChangedError`);
2. metadata: the winner changed metadata -> :class:`MetadataChangedError`, unless this
   transaction leaves the metadata alone and the change is one Delta resolves (enabling
   deletion vectors, in-commit timestamps, V2 checkpoints, row tracking, name column
   mapping: :mod:`~deltalog.txn.commit.metadata_conflicts`); then the winner's metadata
   is adopted;
3. domain metadata: both touch one domain -> :class:`ConcurrentTransactionError` (the
   row-tracking high-water mark is reassigned by the transaction instead);
4. application transactions: the winner set an app id this transaction read
   -> :class:`ConcurrentTransactionError`;
   then row tracking (un)backfill (Delta's ``resolveRowTrackingBackfillConflicts`` and
   ``resolveRowTrackingUnBackfillConflicts``): a ``ROW TRACKING BACKFILL`` /
   ``UNBACKFILL`` batch drops the files the winner added or removed (an unbackfill also
   re-adds the winner's adds without their ids, and fails when a backfill batch won); the
   ids a winning batch gave files are copied into this transaction's removes and re-adds;
5. concurrent append: the winner added files this transaction should have read, by
   isolation level, blind appends, partition predicates and whole-table reads
   -> :class:`ConcurrentAppendError` (never when either side is a (un)backfill batch);
6. delete-read: the winner removed a file this transaction read (or any file, after a
   whole-table read) -> :class:`ConcurrentDeleteReadError`;
7. delete-delete: the winner removed a file this transaction removes too
   -> :class:`ConcurrentDeleteDeleteError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NoReturn

from deltalog.txn.commit.commit_errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    DeltaConcurrentModificationError,
    MetadataChangedError,
    ProtocolChangedError,
)
from deltalog.txn.commit.isolation import IsolationLevel
from deltalog.txn.commit.metadata_conflicts import dropped_features, resolve_metadata_conflict
from deltalog.txn.commit.operations import RowTrackingBackfill, RowTrackingUnBackfill
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    decode_path,
)
from deltalog.txn.protocol.identity import winner_is_identity_only
from deltalog.txn.protocol.partition_filters import PartitionPredicate

__all__ = ["CurrentTransactionInfo", "WinningCommit", "check_conflicts"]

ROW_TRACKING_BACKFILL = RowTrackingBackfill.name
ROW_TRACKING_UNBACKFILL = RowTrackingUnBackfill.name


@dataclass
class WinningCommit:
    """The actions of one commit that landed after this transaction's read version."""

    version: int
    actions: Sequence[Action]

    @cached_property
    def commit_info(self) -> CommitInfo | None:
        return next((a for a in self.actions if isinstance(a, CommitInfo)), None)

    @property
    def operation(self) -> str | None:
        return None if self.commit_info is None else self.commit_info.operation

    @cached_property
    def protocol(self) -> Protocol | None:
        return next((a for a in self.actions if isinstance(a, Protocol)), None)

    @cached_property
    def metadata(self) -> Metadata | None:
        return next((a for a in self.actions if isinstance(a, Metadata)), None)

    @cached_property
    def added_files(self) -> list[AddFile]:
        return [a for a in self.actions if isinstance(a, AddFile)]

    @cached_property
    def removed_files(self) -> list[RemoveFile]:
        return [a for a in self.actions if isinstance(a, RemoveFile)]

    @cached_property
    def app_ids(self) -> set[str]:
        return {a.app_id for a in self.actions if isinstance(a, SetTransaction)}

    @cached_property
    def domains(self) -> set[str]:
        return {a.domain for a in self.actions if isinstance(a, DomainMetadata)}

    @property
    def identity_only_metadata_update(self) -> bool:
        """The commit's metadata change only moved identity high-water marks."""
        return self.commit_info is not None and winner_is_identity_only(self.commit_info.extra)

    @property
    def is_blind_append(self) -> bool:
        """As Delta: only an explicit ``isBlindAppend=true`` counts (absent means no)."""
        return bool(self.commit_info is not None and self.commit_info.is_blind_append)


@dataclass
class CurrentTransactionInfo:
    """What the losing transaction read and wants to write."""

    table_uri: str
    isolation_level: IsolationLevel
    is_blind_append: bool
    partitioned: bool
    read_predicates: list[PartitionPredicate] = field(default_factory=list)
    read_file_paths: set[str] = field(default_factory=set)  # decoded paths
    #: the partition values of each file read (decoded path -> values), for the delete-read hint
    read_file_partitions: dict[str, Mapping[str, str | None]] = field(default_factory=dict)
    #: the read partition columns as (name, key in ``partitionValues``), in partition column order
    #: (Delta's ``partitionSchemaAtReadTime``), for the partition hint of a conflict
    partition_columns: tuple[tuple[str, str], ...] = ()
    read_whole_table: bool = False
    read_app_ids: set[str] = field(default_factory=set)
    changes_metadata: bool = False
    changes_protocol: bool = False
    #: the files this transaction removes: decoded path -> the remove's partition values
    removed_paths: dict[str, Mapping[str, str | None] | None] = field(default_factory=dict)
    domains: set[str] = field(default_factory=set)
    check_protocol: Callable[[Protocol], None] | None = None
    #: the protocol the transaction read (None: a new table)
    read_protocol: Protocol | None = None
    #: the protocol and metadata the transaction commits on top of: the read ones, then
    #: each winner's as conflict checking adopts them
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    #: False once a winner enabled row tracking (the commit cannot claim it preserved row ids)
    row_tracking_preserved: bool = True
    #: files a winner re-added to give them row ids (decoded path -> baseRowId,
    #: defaultRowCommitVersion): this transaction's removes and re-adds of them copy those
    backfilled_row_ids: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    #: ``commitInfo.operation`` of this transaction (a row tracking (un)backfill batch is
    #: resolved differently, as Delta's ``isRowTrackingBackfillTxn``)
    operation: str | None = None
    #: a (un)backfill batch: paths of its re-adds a winner added or removed (dropped from it)
    backfill_dropped: set[str] = field(default_factory=set)
    #: an unbackfill batch: a winner's adds with row ids, to re-add without them
    unbackfilled: dict[str, AddFile] = field(default_factory=dict)
    #: the commit's protocol drops ``rowTracking``: winners are resolved as by an unbackfill
    #: batch (Delta's ``checkProtocolCompatibility``)
    drops_row_tracking: bool = False


def _partition_hint(current: CurrentTransactionInfo, values: Mapping[str, str | None] | None) -> str | None:
    """Delta's ``getPrettyPartitionMessage``: ``[name=value, ...]`` over the read partition
    columns in their order (logical names; a missing or null value is ``null``); None for an
    unpartitioned table or a file without partition values."""
    if not current.partition_columns or not values:
        return None
    shown = (f"{name}={_or_null(values.get(key))}" for name, key in current.partition_columns)
    return "[" + ", ".join(shown) + "]"


def _or_null(value: str | None) -> str:
    return "null" if value is None else value


def _conflict(
    error: type[DeltaConcurrentModificationError],
    detail: str,
    current: CurrentTransactionInfo,
    winner: WinningCommit,
    partition: str | None = None,
) -> NoReturn:
    raise error(
        detail,
        winning_version=winner.version,
        winning_operation=winner.operation,
        partition=partition,
        table=current.table_uri,
    )


def check_conflicts(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    """Raise the first conflict between ``current`` and ``winner``, in Delta's order."""
    _check_protocol(current, winner)
    _check_winning_metadata(current, winner)
    _check_domains(current, winner)
    _check_app_ids(current, winner)
    _resolve_backfill(current, winner)
    _resolve_unbackfill(current, winner)
    _check_added_files(current, winner)
    _check_deleted_read(current, winner)
    _check_deleted_deleted(current, winner)


def _check_protocol(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    # 1. protocol
    if winner.protocol is not None:
        if current.check_protocol is not None:
            current.check_protocol(winner.protocol)
        if current.changes_protocol:
            detail = "both transactions change the protocol"
            if winner.version == 0:
                detail += " (this happens when multiple writers are writing to an empty directory)"
            _conflict(ProtocolChangedError, detail, current, winner)
        if current.read_protocol is not None:
            dropped = dropped_features(winner.protocol, current.read_protocol)
            if dropped:
                _conflict(
                    ProtocolChangedError,
                    f"the winning commit dropped the table feature(s) {', '.join(sorted(dropped))}",
                    current,
                    winner,
                )
        current.protocol = winner.protocol


def _check_winning_metadata(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    # 2. metadata
    if winner.metadata is None:
        return
    if winner.identity_only_metadata_update and not current.changes_metadata:
        # a winner that only moved identity high-water marks does not fail a transaction
        # that changes no metadata (Delta's checkNoMetadataUpdates)
        current.metadata = winner.metadata
        return
    _check_metadata(current, winner, winner.metadata)


def _check_domains(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    # 3. domain metadata; the row tracking domain is resolved (this transaction's action is
    # kept, as Delta's checkIfDomainMetadataConflict: its ids are reassigned above the winner's)
    clashing_domains = (winner.domains & current.domains) - {row_tracking.ROW_TRACKING_DOMAIN}
    if clashing_domains:
        _conflict(
            ConcurrentTransactionError,
            f"a conflicting metadata domain {sorted(clashing_domains)[0]} is added",
            current,
            winner,
        )


def _check_app_ids(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    # 4. application transactions
    clashing_apps = winner.app_ids & current.read_app_ids
    if clashing_apps:
        _conflict(
            ConcurrentTransactionError,
            f"application id(s) {', '.join(sorted(clashing_apps))} were committed concurrently",
            current,
            winner,
        )


def _check_deleted_read(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    # 6. delete-read (5. concurrent append: _check_added_files); as Delta, a file read is
    # looked for first (the hint names its partition), then a whole-table read (no hint)
    if not winner.removed_files:
        return
    for removed in winner.removed_files:
        path = decode_path(removed.path)
        if path in current.read_file_paths:
            _conflict(
                ConcurrentDeleteReadError,
                f"{path} was read by this transaction and removed concurrently",
                current,
                winner,
                _partition_hint(current, current.read_file_partitions.get(path)),
            )
    if current.read_whole_table:
        removed = winner.removed_files[0]
        _conflict(
            ConcurrentDeleteReadError,
            f"this transaction read the whole table and {decode_path(removed.path)} was removed",
            current,
            winner,
        )


def _check_deleted_deleted(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    # 7. delete-delete; the hint names the partition of this transaction's remove, as Delta
    if winner.removed_files and current.removed_paths:
        for removed in winner.removed_files:
            path = decode_path(removed.path)
            if path in current.removed_paths:
                _conflict(
                    ConcurrentDeleteDeleteError,
                    f"{path} was removed by both transactions",
                    current,
                    winner,
                    _partition_hint(current, current.removed_paths[path]),
                )


def _resolve_backfill(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    """Delta's ``resolveRowTrackingBackfillConflicts``. A backfill batch drops the files the
    winner added or removed (they have ids from the winner, or are gone) and no longer
    counts them as read. A winning batch, or a commit that enabled row tracking and
    re-added files itself, gave files ids: this transaction's removes and re-adds of them
    carry those ids."""
    if current.operation == ROW_TRACKING_BACKFILL:
        touched = _touched_paths(winner)
        current.backfill_dropped |= touched
        current.read_file_paths -= touched
    enabled = winner.metadata is not None and row_tracking.enabled_property(winner.metadata)
    if winner.operation == ROW_TRACKING_BACKFILL or enabled:
        for add in winner.added_files:
            if not add.data_change and add.base_row_id is not None:
                ids = (add.base_row_id, add.default_row_commit_version)
                current.backfilled_row_ids[decode_path(add.path)] = ids


def _resolve_unbackfill(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    """Delta's ``resolveRowTrackingUnBackfillConflicts``: an unbackfill batch (or the commit
    dropping ``rowTracking``) drops the files the winner added or removed and re-adds without
    ids the winner's adds that have them (a writer that ignored ``delta.rowTrackingSuspended``);
    a winning backfill batch fails an unbackfill batch."""
    if current.operation != ROW_TRACKING_UNBACKFILL and not current.drops_row_tracking:
        return
    if current.operation == ROW_TRACKING_UNBACKFILL and winner.operation == ROW_TRACKING_BACKFILL:
        _conflict(
            ConcurrentTransactionError,
            "DELTA_ROW_TRACKING_BACKFILL_RUNNING_CONCURRENTLY_WITH_UNBACKFILL: a row tracking enablement ran "
            "concurrently with this row tracking disablement; retry the disablement once the enablement is done",
            current,
            winner,
        )
    touched = _touched_paths(winner)
    current.backfill_dropped |= touched
    current.read_file_paths -= touched
    for path in touched:
        current.unbackfilled.pop(path, None)
    for add in winner.added_files:
        if add.base_row_id is not None or add.default_row_commit_version is not None:
            stripped = replace(add, data_change=False, base_row_id=None, default_row_commit_version=None)
            current.unbackfilled[decode_path(add.path)] = stripped


def _touched_paths(winner: WinningCommit) -> set[str]:
    return {decode_path(a.path) for a in winner.actions if isinstance(a, (AddFile, RemoveFile))}


def _is_backfill(operation: str | None) -> bool:
    return operation in (ROW_TRACKING_BACKFILL, ROW_TRACKING_UNBACKFILL)


def _check_metadata(current: CurrentTransactionInfo, winner: WinningCommit, winning: Metadata) -> None:
    resolution = None
    if not current.changes_metadata and current.metadata is not None and current.protocol is not None:
        resolution = resolve_metadata_conflict(current.metadata, winning, current.protocol, winner.commit_info)
    if resolution is not None:
        current.metadata = resolution.metadata
        if resolution.row_tracking_enabled:
            current.row_tracking_preserved = False
        return
    detail = (
        "both transactions change the table's metadata"
        if current.changes_metadata
        else "the table's schema, partitioning or properties changed after this transaction read it"
    )
    if winner.version == 0:
        detail += " (the table was created concurrently)"
    _conflict(MetadataChangedError, detail, current, winner)


def _check_added_files(current: CurrentTransactionInfo, winner: WinningCommit) -> None:
    level = current.isolation_level
    if level is IsolationLevel.SNAPSHOT_ISOLATION or current.is_blind_append:
        return
    if _is_backfill(current.operation) or _is_backfill(winner.operation):
        # an (un)backfill batch changes no data: nothing to read again (Delta's
        # skipCheckedAppendsIfExistsRowTrackingBackfillTransaction)
        return
    if level is IsolationLevel.WRITE_SERIALIZABLE and not current.changes_metadata:
        candidates = [] if winner.is_blind_append else winner.added_files
    else:
        candidates = winner.added_files
    if winner.metadata is not None and row_tracking.enabled_property(winner.metadata):
        # the commit that switched row tracking on re-added live files to give them row
        # ids (dataChange=false): no new data (Delta skips backfill commits here)
        candidates = [a for a in candidates if a.data_change]
    if not candidates:
        return
    conflicting: AddFile | None = None
    if current.read_whole_table or not current.partitioned:
        # as Delta, whatever was read: a transaction that is no blind append depends on
        # the whole of an unpartitioned table
        conflicting = candidates[0]
    else:
        for add in candidates:
            if any(p.matches(add.partition_values) for p in current.read_predicates):
                conflicting = add
                break
    if conflicting is not None:
        hint = _partition_hint(current, conflicting.partition_values)
        _conflict(
            ConcurrentAppendError,
            f"{decode_path(conflicting.path)} was added" + (f" to partition {hint}" if hint else ""),
            current,
            winner,
            hint,
        )
