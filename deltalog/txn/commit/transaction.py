"""The optimistic transaction: Delta's ``OptimisticTransactionImpl`` in Python.

1. **Open**: read the latest snapshot; ``read_version`` is its version.
2. **Read**: :meth:`~OptimisticTransaction.filter_files` returns the files to scan and
   records the partition predicate and the files read; :meth:`read_whole_table`;
   :meth:`txn_version` records the application id read.
3. **Metadata**: :meth:`update_metadata` at most once; the new metadata is verified and
   the protocol upgraded when the metadata needs features the table lacks.
4. **Commit** reads top to bottom in :meth:`~OptimisticTransaction.commit`: prepare
   (reject what Delta rejects), choose the isolation level, then the commit loop: write
   ``commitInfo`` first and the actions after it as ``N.json`` through the store under the
   commit lock. When another writer got ``N`` first, read the winning commits, check
   conflicts against each in Delta's order, advance the snapshot incrementally and try
   ``latest + 1``, with exponential backoff and jitter, up to ``max_commit_attempts``.
   An ambiguous write is resolved by reading back the commit's ``txnId``. The loop
   returns a :class:`CommitResult` (version, actions, post-commit snapshot, attempts).
5. **Post-commit** (:mod:`deltalog.txn.commit.post_commit`): checkpoint every
   ``delta.checkpointInterval`` versions (and retry a failed one on each commit while it
   is behind, with a warning), clean up expired logs behind it, write the symlink
   manifest, run post-commit hooks (a failing hook is logged; the commit stands).
"""

from __future__ import annotations

import enum
import json
import logging
import random
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from deltalog.logstores.errors import AmbiguousWriteError, FileAlreadyExistsError
from deltalog.txn.commit import row_tracking as row_tracking_commit
from deltalog.txn.commit.action_checks import CommitActionChecks
from deltalog.txn.commit.commit_errors import (
    CommitFailedError,
    ConcurrentWriteError,
    ConstraintsNotCheckedError,
    DropFeatureConflictError,
    DuplicateFileActionError,
    InvalidTransactionError,
    MetadataAlreadyChangedError,
    MissingMetadataError,
    TransactionAlreadyCommittedError,
)
from deltalog.txn.commit.commit_stats import CommitStats
from deltalog.txn.commit.conflicts import CurrentTransactionInfo, WinningCommit, check_conflicts
from deltalog.txn.commit.isolation import IsolationLevel, choose_isolation_level
from deltalog.txn.commit.metadata_checks import (
    refuse_column_mapping_change_with_file_actions,
    refuse_retyped_generated_columns,
    verify_metadata,
)
from deltalog.txn.commit.nested_not_null import enforceable_not_nulls
from deltalog.txn.commit.operation_metrics import file_metrics
from deltalog.txn.commit.operations import Operation, SetTableProperties
from deltalog.txn.commit.post_commit import PostCommitHook, run_post_commit
from deltalog.txn.commit.property_constraints import check_table_property_constraints
from deltalog.txn.commit.settings import EngineSettings
from deltalog.txn.log.checksum import record_commit_checksum
from deltalog.txn.protocol import iceberg_compat, row_tracking
from deltalog.txn.protocol.actions import (
    Action,
    AddCDCFile,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    action_to_line,
    decode_path,
)
from deltalog.txn.protocol.column_mapping import (
    partition_value_keys,
    physical_partition_filters,
    typed_partition_keys,
)
from deltalog.txn.protocol.iceberg_compat import complete_metadata
from deltalog.txn.protocol.identity import identity_commit_tags, update_high_water_marks
from deltalog.txn.protocol.partition_filters import (
    PartitionFilter,
    PartitionPredicate,
    partition_column_types,
)
from deltalog.txn.protocol.properties import InvalidPropertyError, TableProperties
from deltalog.txn.protocol.protocol_requirements import (
    merge_protocols,
    protocol_for_existing_table,
    protocol_for_new_table,
    without_protocol_properties,
)
from deltalog.txn.protocol.protocol_versions import supported_features
from deltalog.txn.protocol.type_widening import stamp_new_type_changes

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["CommitResult", "OptimisticTransaction", "PostCommitHook", "commit_lock_for"]

log = logging.getLogger(__name__)

_LOCKS: weakref.WeakKeyDictionary[Any, dict[tuple[str, bool], CommitLock]] = weakref.WeakKeyDictionary()


def commit_lock_for(delta_log: SnapshotManagement, setting: str | CommitLock | None, single_writer: bool) -> CommitLock:
    """The commit lock of a table, chosen once per (SnapshotManagement, setting) and reused."""
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.locks.selection import choose_commit_lock

    if isinstance(setting, CommitLock):
        return setting
    options = delta_log.storage_options
    if setting is None:
        setting = options.first("deltalog.commitLock", "DELTALOG_COMMIT_LOCK")
    if not single_writer:
        single_writer = options.flag("deltalog.singleWriter", "DELTALOG_SINGLE_WRITER")
    key = (setting or "auto", single_writer)
    per_log = _LOCKS.setdefault(delta_log, {})
    lock = per_log.get(key)
    if lock is None:
        lock = choose_commit_lock(delta_log.store, setting, single_writer=single_writer)
        per_log[key] = lock
    return lock


@dataclass(frozen=True)
class CommitResult:
    """What the commit loop hands to the post-commit phase: the committed ``version``, the
    ``actions`` it holds (``commitInfo`` first when the engine wrote one; empty for
    ``commit_large``, which does not hold its stream) and the table ``snapshot`` at it."""

    version: int
    actions: tuple[Action, ...]
    snapshot: Snapshot
    attempts: int
    winning_versions_checked: tuple[int, ...] = ()
    #: The version was found to hold this transaction's ``txnId`` after an ambiguous write.
    resolved_by_txn_id: bool = False
    #: the snapshot the commit was applied to (None for ``commit_large``, whose actions are
    #: not held: it writes no checksum)
    pre_commit: Snapshot | None = None


@dataclass(frozen=True)
class _PreparedCommit:
    """The checked actions of a commit (protocol and metadata first), their JSON lines and
    how they are committed."""

    actions: list[Action]
    lines: list[str]
    operation: Operation
    level: IsolationLevel
    blind: bool


@dataclass
class _LoopState:
    """Where the commit loop stands: the version it tries next, the snapshot its conflict
    checks have reached, and the conflicts seen so far."""

    version: int
    snapshot: Snapshot
    conflicts_seen: int = 0
    conflict_info: CurrentTransactionInfo | None = None
    #: An earlier attempt whose outcome stayed unknown (e.g. a lock claim made just before
    #: the lock service failed): it may still be published later, so a failure after it
    #: must not be reported as "nothing was written".
    unresolved: AmbiguousWriteError | None = None


class _Written(enum.Enum):
    OURS = "ours"  # the version holds this commit
    ABSENT = "absent"  # an ambiguous write that did not land: retry the same version
    TAKEN = "taken"  # another writer holds the version


class OptimisticTransaction:
    """One optimistic transaction on a Delta table. Use it once: read, then commit."""

    def __init__(
        self,
        delta_log: SnapshotManagement,
        *,
        lock: str | CommitLock | None = None,
        single_writer: bool = False,
        isolation_level: IsolationLevel | str | None = None,
        settings: EngineSettings | None = None,
        snapshot: Snapshot | None = None,
    ) -> None:
        self.delta_log = delta_log
        self.snapshot: Snapshot = snapshot if snapshot is not None else delta_log.update()
        self.read_version: int = self.snapshot.version
        self.settings = settings or EngineSettings.from_options(delta_log.storage_options)
        self._lock_setting = lock
        self._single_writer = single_writer
        if isinstance(isolation_level, str):
            isolation_level = IsolationLevel.parse(isolation_level)
        if isolation_level is IsolationLevel.SNAPSHOT_ISOLATION:
            raise InvalidTransactionError(
                "SnapshotIsolation is not a table isolation level; a commit of only "
                "dataChange=false file actions is downgraded to it automatically"
            )
        self._isolation_override = isolation_level
        self._new_metadata: Metadata | None = None
        #: this transaction turns in-commit timestamps on: each attempt stamps its metadata
        self._enables_ict = False
        self._new_protocol: Protocol | None = None
        self._protocol_set_explicitly = False
        #: a feature drop: re-checks that the table is still clean after each winning commit
        self._drop_revalidation: Callable[[Snapshot], bool] | None = None
        #: a feature drop that protects checkpoints: each attempt names its own version
        self._protects_checkpoints = False
        self._read_predicates: list[PartitionPredicate] = []
        self._read_files: dict[str, Mapping[str, str | None]] = {}  # decoded path -> partition values
        self._read_whole_table = False
        self._read_app_ids: set[str] = set()
        self._hooks: list[PostCommitHook] = []
        self._committed = False
        #: a version holding this commit may exist (see :attr:`may_have_landed`)
        self._may_have_landed = False
        self._constraints_checked = False
        self._row_tracking_materialized = False
        self.txn_id = str(uuid.uuid4())
        self.commit_stats: CommitStats | None = None
        self.committed_version: int | None = None
        self.post_commit_snapshot: Snapshot | None = None

    # -- context manager ----------------------------------------------------------------

    def __enter__(self) -> OptimisticTransaction:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    # -- what the transaction sees --------------------------------------------------------

    @property
    def table_exists(self) -> bool:
        return self.read_version >= 0

    @property
    def metadata(self) -> Metadata | None:
        """The metadata this transaction will commit with (new, or the snapshot's)."""
        if self._new_metadata is not None:
            return self._new_metadata
        return self.snapshot.metadata if self.table_exists else None

    @property
    def protocol(self) -> Protocol | None:
        if self._new_protocol is not None:
            return self._new_protocol
        return self.snapshot.protocol if self.table_exists else None

    @property
    def partition_columns(self) -> tuple[str, ...]:
        metadata = self.metadata
        return () if metadata is None else tuple(metadata.partition_columns)

    @property
    def isolation_level(self) -> IsolationLevel:
        """The table's isolation level (or the override given at start), from the metadata
        this transaction commits with (Delta's ``getDefaultIsolationLevel``): a commit that
        sets ``delta.isolationLevel`` runs at the level it sets."""
        if self._isolation_override is not None:
            return self._isolation_override
        metadata = self.metadata
        if not self.table_exists or metadata is None:
            return IsolationLevel.SERIALIZABLE
        try:
            return IsolationLevel.parse(metadata.properties.isolation_level)
        except InvalidPropertyError as exc:  # written by another engine: refuse before writing
            raise InvalidTransactionError(f"cannot commit to {self.delta_log.table_uri}: {exc}") from exc

    # -- metadata and protocol -----------------------------------------------------------

    def _check_open(self) -> None:
        if self._committed:
            raise TransactionAlreadyCommittedError(
                f"this transaction already committed version {self.committed_version}; "
                "start a new transaction for another commit"
            )

    def update_metadata(
        self, metadata: Metadata, *, creating_table: bool | None = None, removing_column_mapping: bool = False
    ) -> None:
        """Change the table's metadata in this transaction (at most once). ``creating_table``:
        whether the commit creates the table (by default when it does not exist yet; a CLONE
        passes False: Delta then sets no property for IcebergCompat). ``removing_column_mapping``:
        the commit rewrites every file with the logical names (``DROP FEATURE columnMapping``),
        so the metadata may turn column mapping off."""
        self._check_open()
        if self._new_metadata is not None:
            raise MetadataAlreadyChangedError("cannot change the metadata more than once in a transaction")
        old = self.snapshot.metadata if self.table_exists else None
        verify_metadata(metadata, old)
        if old is not None:
            refuse_retyped_generated_columns(old, metadata)
        metadata = complete_metadata(old, metadata, creating_table, removing_column_mapping)
        check_table_property_constraints(metadata, self.snapshot if self.table_exists else None)
        if old is None or metadata.schema_string != old.schema_string:  # Delta checks only a changed schema
            schema = enforceable_not_nulls(metadata.schema_string, self.settings.allow_unenforced_not_null)
            metadata = replace(metadata, schema_string=schema)
        if metadata.created_time is None and not self.table_exists:
            metadata = _with_created_time(metadata)
        metadata = self._with_ict_enablement(metadata)
        self._new_metadata = metadata
        self._upgrade_protocol_for(metadata)
        # the protocol properties went into the protocol; Delta never stores them
        metadata = without_protocol_properties(metadata)
        self._new_metadata = row_tracking.with_materialized_column_names(
            self.protocol, self.snapshot.metadata if self.table_exists else None, metadata
        )

    def update_identity_high_water_marks(self, marks: Mapping[str, Sequence[int]]) -> None:
        """Move the identity columns' high-water marks to the values ``marks`` (per column,
        the values written) in the metadata this commit carries, also after its one
        metadata change (Delta's ``updateIdentityHighWaterMarks`` and
        ``precommitUpdateSchemaWithIdentityHighWaterMarks``: a MERGE that evolves the schema
        and generates identity values)."""
        self._check_open()
        current = self.metadata
        if current is None or not marks:
            return
        updated = update_high_water_marks(current, marks)
        if updated is current:
            return
        if self._new_metadata is None:
            self.update_metadata(updated)
        else:
            self._new_metadata = updated

    def _with_ict_enablement(self, metadata: Metadata) -> Metadata:
        """When in-commit timestamps are switched on for an existing table, record where
        (``delta.inCommitTimestampEnablementVersion`` / ``...Timestamp``), as the protocol
        requires, so time travel knows which commits carry them. A metadata that keeps them on
        but drops that record (a REPLACE, a RESTORE to a version that had them on from commit
        0) keeps the table's (Delta's ``getUpdatedMetadataWithICTEnablementInfo``)."""
        turning_on = metadata.properties.enable_in_commit_timestamps
        if not turning_on or not self.table_exists:
            return metadata
        if self.snapshot.properties.enable_in_commit_timestamps:
            return _with_kept_ict_enablement(metadata, self.snapshot.properties)
        self._enables_ict = True
        # provisional: every attempt re-stamps them with its own version and timestamp
        return _ict_enabled_at(
            metadata, self.read_version + 1, max(int(time.time() * 1000), self.snapshot.timestamp + 1)
        )

    def _stamp_ict_enablement(self, actions: Sequence[Action], version: int, ict: int | None) -> list[Action] | None:
        """``actions`` with the metadata that turns in-commit timestamps on naming the
        attempt's ``version`` and in-commit timestamp (PROTOCOL: the enablement timestamp is
        the ``inCommitTimestamp`` of the enabling commit; Delta's
        ``getUpdatedMetadataWithICTEnablementInfo``, re-run after each conflict), or None
        when this transaction does not turn them on."""
        if not self._enables_ict or ict is None:
            return None
        return [_ict_enabled_at(a, version, ict) if isinstance(a, Metadata) else a for a in actions]

    def _stamp_type_changes(self, actions: Sequence[Action], version: int) -> list[Action] | None:
        """``actions`` with the type changes this commit's metadata adds (``typeWidening-preview``
        tables record their ``tableVersion``) naming the attempt's ``version``, whatever
        version they were planned for (Delta's ``updateTypeWideningMetadata``, run on each
        winner), or None when there are none to move."""
        if self._new_metadata is None or '"tableVersion"' not in self._new_metadata.schema_string:
            return None
        old = json.loads(self.snapshot.metadata.schema_string) if self.table_exists else None
        out: list[Action] = []
        moved = False
        for action in actions:
            if isinstance(action, Metadata):
                schema = stamp_new_type_changes(json.loads(action.schema_string), old, version)
                if schema is not None:
                    action = replace(action, schema_string=json.dumps(schema, separators=(",", ":")))
                    moved = True
            out.append(action)
        return out if moved else None

    def _upgrade_protocol_for(self, metadata: Metadata) -> None:
        current = self.protocol
        if current is None:
            needed = protocol_for_new_table(metadata)
            if not self._protocol_set_explicitly:
                self._new_protocol = needed
            elif (merged := merge_protocols(self._new_protocol or needed, needed)) is not None:
                self._new_protocol = merged
            return
        upgraded = protocol_for_existing_table(current, metadata)
        if upgraded is not None:
            self._new_protocol = upgraded

    def upgrade_protocol(self, protocol: Protocol) -> None:
        """Commit ``protocol`` (merged with what the table has; never a downgrade)."""
        self._check_open()
        if self._protocol_set_explicitly:
            raise DuplicateFileActionError("only one protocol action is allowed per commit")
        self._protocol_set_explicitly = True
        current = self.protocol
        if current is None:
            self._new_protocol = protocol
            if self._new_metadata is not None:
                self._upgrade_protocol_for(self._new_metadata)
            return
        if (
            protocol.min_reader_version < current.min_reader_version
            or protocol.min_writer_version < current.min_writer_version
        ):
            raise InvalidTransactionError(
                f"protocol downgrade from ({current.min_reader_version}, {current.min_writer_version}) "
                f"to ({protocol.min_reader_version}, {protocol.min_writer_version}) is not allowed"
            )
        # As Delta, an explicit protocol action is committed even when it adds nothing (so
        # a concurrent protocol change conflicts with it): the table's protocol, then.
        merged = merge_protocols(current, protocol)
        self._new_protocol = merged if merged is not None else (self._new_protocol or current)

    def downgrade_protocol(
        self, protocol: Protocol, revalidate: Callable[[Snapshot], bool], *, protect_checkpoints: bool = False
    ) -> None:
        """Commit ``protocol``, which drops a feature (``DROP FEATURE``'s downgrade commit).
        ``revalidate(snapshot)`` must say whether the table still meets the dropped feature's
        invariants; it runs on the state after each winning commit, and a false answer fails
        the commit with :class:`DropFeatureConflictError` (Delta's
        ``validateFeatureRemovalAtSnapshot``). With ``protect_checkpoints`` the new metadata's
        ``delta.requireCheckpointProtectionBeforeVersion`` is set to the version each attempt
        writes (Delta moves it past the winners)."""
        self._check_open()
        if self._protocol_set_explicitly or not self.table_exists:
            raise InvalidTransactionError("a protocol downgrade needs an existing table and no other protocol change")
        self._protocol_set_explicitly = True
        self._new_protocol = protocol
        # dropping rowTracking resolves winners as an unbackfill batch does instead (Delta's
        # checkProtocolCompatibility: resolveRowTrackingUnBackfillConflicts)
        self._drop_revalidation = None if self._drops_row_tracking else revalidate
        self._protects_checkpoints = protect_checkpoints
        if self._new_metadata is not None:  # dropping rowTracking drops its column names
            self._new_metadata = row_tracking.with_materialized_column_names(
                protocol, self.snapshot.metadata, self._new_metadata
            )

    @property
    def _drops_row_tracking(self) -> bool:
        """This commit's protocol drops ``rowTracking`` (Delta's ``isFeatureDropped``)."""
        read = self.snapshot.protocol if self.table_exists else None
        return row_tracking.is_supported(read) and not row_tracking.is_supported(self._new_protocol or read)

    def _stamp_checkpoint_protection(self, actions: Sequence[Action], version: int) -> list[Action] | None:
        """``actions`` with the metadata protecting the checkpoints before ``version`` (Delta's
        ``metadataWithCheckpointProtection`` in ``ConflictChecker``), or None when this
        transaction does not protect checkpoints."""
        if not self._protects_checkpoints:
            return None
        from deltalog.txn.protocol.checkpoint_protection import with_checkpoint_protection

        return [with_checkpoint_protection(a, version) if isinstance(a, Metadata) else a for a in actions]

    def _revalidate_drop(self, snapshot: Snapshot, winner: WinningCommit) -> Snapshot | None:
        """A feature drop re-checks the state after ``winner`` (on top of ``snapshot``) right
        after the protocol step of conflict checking, before the metadata one (Delta's
        ``checkProtocolCompatibility``); a winner that changes the protocol fails the drop
        there anyway. Returns that state, or None when nothing was checked."""
        if self._drop_revalidation is None or winner.protocol is not None:
            return None
        after = snapshot.apply(winner.version, winner.actions, _commit_time(winner))
        if not self._drop_revalidation(after):
            raise DropFeatureConflictError(
                "the table uses the dropped feature again",
                winning_version=winner.version,
                winning_operation=winner.operation,
                table=self.delta_log.table_uri,
            )
        return after

    # -- reads -----------------------------------------------------------------------------

    def filter_files(
        self,
        partition_filters: Sequence[PartitionFilter] | None = None,
        data_skipping: Callable[[list[AddFile]], list[AddFile]] | None = None,
    ) -> list[AddFile]:
        """Active files matching the partition filters; records the read for conflict checks.

        ``data_skipping`` drops the files whose statistics rule out the reader's data
        predicate; as Delta's ``filterFiles``, the partition predicate is recorded (a
        concurrent add into those partitions conflicts whatever its statistics) and only
        the files kept are recorded as read (a concurrent removal of a skipped file does
        not)."""
        self._check_open()
        if not self.table_exists:
            self._read_whole_table = True
            return []
        predicate, files = self._files_for_scan(partition_filters)
        if data_skipping is not None:
            files = data_skipping(files)
        self._read_predicates.append(predicate)
        self._track_read(files)
        return files

    def files_for_scan(self, partition_filters: Sequence[PartitionFilter] | None = None) -> list[AddFile]:
        """The active files matching the partition filters, recording nothing (Delta's
        ``snapshot.filesForScan``): a caller that uses only some of them records those with
        :meth:`track_files_read`, as Delta's OPTIMIZE records only the files it compacts."""
        self._check_open()
        return self._files_for_scan(partition_filters)[1] if self.table_exists else []

    def _files_for_scan(
        self, partition_filters: Sequence[PartitionFilter] | None
    ) -> tuple[PartitionPredicate, list[AddFile]]:
        metadata = self.snapshot.metadata
        types = partition_column_types(metadata.schema_string, metadata.partition_columns)
        filters, types = physical_partition_filters(metadata, partition_filters or (), types)
        predicate = PartitionPredicate(filters, types)
        if predicate.is_true:
            return predicate, list(self.snapshot.files)
        return predicate, [f for f in self.snapshot.files if predicate.matches(f.partition_values)]

    def filter_files_in_partitions(self, new_files: Sequence[AddFile]) -> list[AddFile]:
        """Delta's ``filterFiles(newFiles)`` (a dynamic partition overwrite): the active files
        in the partitions of ``new_files`` (null-safe equality of the partition values, compared
        as the columns' types). Records those partitions as read (a concurrent add into one
        conflicts) but not the files returned, as Delta: a concurrent removal of one of them
        is then the delete-delete conflict of this transaction's removes."""
        self._check_open()
        if not self.table_exists:
            self._read_whole_table = True
            return []
        metadata = self.snapshot.metadata
        keys = partition_value_keys(metadata)
        types = partition_column_types(metadata.schema_string, metadata.partition_columns)
        types = dict(zip(keys, (types[c] for c in metadata.partition_columns), strict=True))
        # PROTOCOL: an empty string is a null partition value
        partitions = {tuple((k, f.partition_values.get(k) or None) for k in keys) for f in new_files}
        if not partitions:  # nothing written: a read of no partition (still no blind append)
            self._read_predicates.append(PartitionPredicate([(k, "in", []) for k in keys[:1]], types))
            return []
        predicates = [PartitionPredicate([(k, "=", v) for k, v in values], types) for values in partitions]
        self._read_predicates.extend(predicates)
        keys_of = typed_partition_keys(metadata)  # one set lookup per file, not one predicate per partition
        wanted = {keys_of.key(dict(values)) for values in partitions} - {None}
        return [f for f in self.snapshot.files if keys_of.key(f.partition_values) in wanted]

    def track_files_read(self, files: Iterable[AddFile]) -> None:
        """Record that this transaction read ``files`` (Delta's ``trackFilesRead``): a
        concurrent removal of one of them conflicts."""
        self._check_open()
        self._track_read(files)

    def _track_read(self, files: Iterable[AddFile]) -> None:
        self._read_files.update((decode_path(f.path), f.partition_values) for f in files)

    def read_whole_table(self) -> None:
        """Record that this transaction depends on the whole table."""
        self._check_open()
        self._read_whole_table = True

    def txn_version(self, app_id: str) -> int | None:
        """The latest version committed by application ``app_id`` (records the read)."""
        self._read_app_ids.add(app_id)
        if not self.table_exists:
            return None
        value: int | None = self.snapshot.txn_version(app_id)
        return value

    def mark_constraints_checked(self) -> None:
        """Declare that every row of the data files this transaction adds satisfies the
        table's CHECK constraints and column invariants (the writer evaluated them, e.g.
        with :func:`deltalog.txn.protocol.constraints.table_constraints`). Without it, a commit
        adding data to a table with constraints is refused."""
        self._constraints_checked = True

    def mark_row_tracking_materialized(self) -> None:
        """The rows this commit copies into new files carry their stable row ids and row
        commit versions in the table's materialized columns (as every Delta command writes
        them), so the commit preserves row tracking although it rewrites files
        (``commitInfo.tags["delta.rowTracking.preserved"]``)."""
        self._row_tracking_materialized = True

    def register_post_commit_hook(self, hook: PostCommitHook) -> None:
        if hook not in self._hooks:
            self._hooks.append(hook)

    # -- commit ----------------------------------------------------------------------------

    def commit_if_needed(self, actions: Sequence[Action], operation: Operation) -> int | None:
        """Commit unless Delta's ``commitIfNeeded`` would skip it: nothing to commit (no
        actions, no metadata/protocol change) at an isolation level that need not record
        it. An empty commit is skipped under ``Serializable`` and for an operation that does
        not change data; a data-changing operation (WRITE, DELETE, UPDATE, MERGE) that
        changed nothing on a ``WriteSerializable`` table is recorded, as Delta does (it
        cannot be downgraded to ``SnapshotIsolation``, which alone may skip it there). With
        ``skip_recording_empty_commits`` off (Delta's ``skipRecordingEmptyCommits=false``)
        nothing is skipped."""
        empty = not actions and self._new_metadata is None and self._new_protocol is None
        skippable = self.isolation_level is not IsolationLevel.WRITE_SERIALIZABLE or not operation.changes_data
        if empty and skippable and self.settings.skip_recording_empty_commits:
            self._check_open()
            self._committed = True
            return None
        return self.commit(actions, operation)

    @property
    def may_have_landed(self) -> bool:
        """Whether a version holding this commit may exist: a write of it was attempted and
        the store did not prove it failed (the version was another writer's), or an earlier
        attempt's outcome stayed unknown. False while :meth:`commit` fails before its first
        write (a check of the actions, a conflict): the caller may delete the files it wrote
        (:func:`~deltalog.txn.commit.commit_errors.commit_certainly_failed`)."""
        return self._may_have_landed

    def commit(self, actions: Sequence[Action], operation: Operation) -> int:
        """Commit ``actions``; returns the version. Raises a concurrency error on conflict.

        Prepare (the checks Delta makes before writing) → the write / conflict-check loop,
        which returns a :class:`CommitResult` → the post-commit steps."""
        start = time.perf_counter()
        self._check_open()
        prepared = self._prepare(list(actions), operation)
        stats = self._new_stats(operation, prepared.actions, prepared.level, prepared.blind)
        result = self._commit_loop(prepared, stats, start)
        self._after_commit(result, stats, start)
        return result.version

    def commit_large(self, actions: Iterable[Action], operation: Operation) -> int:
        """Commit a huge stream of actions (convert, restore, clone) without holding them.

        Written once at ``read_version + 1``: if another writer got there first, the
        commit fails with :class:`ConcurrentWriteError` and nothing is written (there is no
        conflict resolution for a stream that cannot be replayed). Metadata and protocol
        must be set with :meth:`update_metadata` / :meth:`upgrade_protocol` beforehand.
        The actions are checked by the same rules as :meth:`commit`'s, as they stream.
        """
        start = time.perf_counter()
        self._check_open()
        self._check_writable()
        self._check_iceberg_compat([])  # and each streamed add in _large_commit_lines
        level = self.isolation_level
        stats = CommitStats(self.delta_log.table_uri, operation.name, self.read_version, isolation_level=level.value)
        stats.rows_added = None  # its commitInfo is written before its actions are counted
        info = None
        if self.settings.commit_info_enabled:
            metrics = self._operation_metrics(operation, None)
            info = self._commit_info(operation, level, False, metrics, self._in_commit_timestamp(self.snapshot))
        version = self.read_version + 1
        self._write_large(version, self._large_commit_lines(actions, operation, info, stats), stats)
        # The streamed actions are not held: the hooks get none, the snapshot is read back
        # and checkpointed at once, as Delta's updateAndCheckpoint does.
        result = CommitResult(version, (), self.delta_log.update(), attempts=1)
        self._after_commit(result, stats, start, always_checkpoint=True)
        return version

    def _write_large(self, version: int, lines: Iterable[str], stats: CommitStats) -> None:
        lock = commit_lock_for(self.delta_log, self._lock_setting, self._single_writer)
        lock.recover(self.delta_log.store, self.delta_log.log_uri)
        write_start = time.perf_counter()
        stats.attempts = 1
        self._may_have_landed = True
        try:
            lock.write_commit(self.delta_log.store, self.delta_log.log_uri, version, lines)
        except FileAlreadyExistsError:
            self._may_have_landed = False
            winner = WinningCommit(version, self.delta_log.read_commit(version))
            raise ConcurrentWriteError(
                "a large commit cannot be retried at another version",
                winning_version=version,
                winning_operation=winner.operation,
                table=self.delta_log.table_uri,
            ) from None
        stats.time_writing_ms = (time.perf_counter() - write_start) * 1000

    def _large_commit_lines(
        self, actions: Iterable[Action], operation: Operation, info: CommitInfo | None, stats: CommitStats
    ) -> Iterator[str]:
        """``commitInfo``, the new protocol and metadata, then ``actions``, each checked and
        counted as it streams past."""
        if info is not None:
            yield action_to_line(info)
        head = self._protocol_and_metadata()
        ict = None if info is None else info.in_commit_timestamp
        for action in self._stamp_ict_enablement(head, self.read_version + 1, ict) or head:
            yield action_to_line(action)
        checks = self._action_checks(operation)
        protocol = self._attempt_protocol(self.snapshot)
        if row_tracking.is_supported(protocol):
            mark = row_tracking.high_water_mark(self.snapshot.domain_metadata) if self.table_exists else -1
            actions = row_tracking.iter_row_tracking(
                actions,
                protocol,
                self._attempt_metadata(self.snapshot),
                read_high_water_mark=mark,
                high_water_mark=mark,
                version=self.read_version + 1,
            )
        for action in actions:
            if isinstance(action, (Metadata, Protocol, CommitInfo)):
                raise InvalidTransactionError(
                    f"commit_large takes file and txn actions only, got a {action.key} action"
                )
            if not checks.check(action):
                continue  # a repeated txn action
            if isinstance(action, AddFile) and self.metadata is not None:
                iceberg_compat.check_add(self.metadata, action)
            _count_file_action(stats, action)
            stats.num_actions += 1
            yield action_to_line(action)

    # -- prepare ---------------------------------------------------------------------------

    def _prepare(self, actions: list[Action], operation: Operation) -> _PreparedCommit:
        """Delta's ``prepareCommit``: take in the metadata and protocol actions, check that the
        table can take this commit and every action, then choose the isolation level."""
        body = self._take_metadata_and_protocol(actions)
        self._check_writable()
        if self._new_metadata is not None and self.table_exists:
            refuse_column_mapping_change_with_file_actions(
                self.snapshot.metadata, self._new_metadata, body, operation.name
            )
        self._check_iceberg_compat(body, isinstance(operation, SetTableProperties))
        own = len(body)
        body = self._with_row_tracking_backfill(body)
        self._check_constraints_declared(body)
        checks = self._action_checks(operation)
        # the backfill's re-adds (after the commit's own actions) are re-added in place
        body = [*checks.check_all(body[:own]), *checks.check_all(body[own:], in_place=True)]
        prepared = [*self._protocol_and_metadata(), *body]
        level = choose_isolation_level(self.isolation_level, prepared, operation.changes_data)
        blind = self._is_blind_append(prepared)
        return _PreparedCommit(prepared, [action_to_line(a) for a in prepared], operation, level, blind)

    def _with_row_tracking_backfill(self, body: list[Action]) -> list[Action]:
        """Switching row tracking on re-adds the live files without row ids (their ids are
        assigned with the commit's); the commit then depends on the whole table."""
        if not row_tracking_commit.enables_row_tracking(self.snapshot, self._new_metadata):
            return body
        readds = row_tracking_commit.backfill(self.snapshot, body)
        if readds or (self.table_exists and not row_tracking.is_supported(self.snapshot.protocol)):
            # a concurrent append by a writer that did not assign row ids must fail this
            self._read_whole_table = True
        return [*body, *readds]

    def _take_metadata_and_protocol(self, actions: list[Action]) -> list[Action]:
        """Apply the commit's metadata and protocol actions to the transaction (as
        :meth:`update_metadata` / :meth:`upgrade_protocol`); the other actions are returned."""
        metadata_actions = [a for a in actions if isinstance(a, Metadata)]
        protocol_actions = [a for a in actions if isinstance(a, Protocol)]
        if any(isinstance(a, CommitInfo) for a in actions):
            raise InvalidTransactionError(
                "do not pass a commitInfo action: the engine writes it (set user metadata through "
                "EngineSettings.user_metadata and details through the operation)"
            )
        if len(metadata_actions) > 1:
            raise DuplicateFileActionError("a commit cannot contain more than one metadata action")
        if len(protocol_actions) > 1:
            raise DuplicateFileActionError("a commit cannot contain more than one protocol action")
        if metadata_actions:
            self.update_metadata(metadata_actions[0])
        if protocol_actions:
            self.upgrade_protocol(protocol_actions[0])
        return [a for a in actions if not isinstance(a, (Metadata, Protocol))]

    def _check_writable(self) -> None:
        """The table has metadata (or gets it now), this engine can write its protocol, and
        in-commit timestamps (when on) can be written."""
        if not self.table_exists and self._new_metadata is None:
            raise MissingMetadataError(
                f"the first commit of the table {self.delta_log.table_uri} must contain metadata "
                "(call update_metadata() or pass a Metadata action)"
            )
        protocol = self._new_protocol if self._new_protocol is not None else self.snapshot.protocol
        self._check_write_supported(protocol)
        if self._ict_enabled() and not self.settings.commit_info_enabled:
            raise InvalidTransactionError(
                "delta.enableInCommitTimestamps is on, which needs commitInfo in every commit; "
                "do not disable commit_info_enabled on this table"
            )

    def _check_iceberg_compat(self, body: Sequence[Action], altering_properties: bool = False) -> None:
        """IcebergCompat's checks on the commit's final protocol, metadata and adds (Delta
        runs them in every ``prepareCommit``); ``altering_properties``: a SET TBLPROPERTIES."""
        protocol, metadata = self.protocol, self.metadata
        if protocol is None or metadata is None:
            return
        prev_protocol = self.snapshot.protocol if self.table_exists else None
        prev_metadata = self.snapshot.metadata if self.table_exists else None
        adds = (a for a in body if isinstance(a, AddFile))  # read only when IcebergCompat is on
        iceberg_compat.check_commit(prev_protocol, prev_metadata, protocol, metadata, adds, altering_properties)

    def _action_checks(self, operation: Operation) -> CommitActionChecks:
        keys = partition_value_keys(self.metadata) if self.metadata is not None else ()
        protocol = self.protocol
        return CommitActionChecks(
            keys,
            append_only=self._append_only(),
            dv_adds_allowed=self._deletion_vectors_allowed(operation),
            domains_allowed=protocol is None or "domainMetadata" in supported_features(protocol),
            wide_bounds_required=operation.requires_wide_bounds_with_deletion_vectors,
        )

    def _deletion_vectors_allowed(self, operation: Operation) -> bool:
        """Whether an add may carry a deletion vector (Delta's ``deletionVectorsReadable`` and
        ``deletionVectorsWritable`` of the new protocol and metadata, or an in-place update)."""
        protocol, metadata = self.protocol, self.metadata
        if protocol is None or metadata is None:
            return True  # no table: _check_writable refuses the commit
        if "deletionVectors" not in supported_features(protocol):
            return False
        return metadata.properties.enable_deletion_vectors or operation.in_place_file_metadata_update

    def _protocol_and_metadata(self) -> list[Action]:
        """The protocol and metadata actions this transaction commits, in that order."""
        head: list[Action] = []
        if self._new_protocol is not None:
            head.append(self._new_protocol)
        if self._new_metadata is not None:
            head.append(self._new_metadata)
        return head

    def _check_constraints_declared(self, body: Sequence[Action]) -> None:
        if self._constraints_checked:
            return
        metadata = self.metadata
        # a file removed and added again in one commit is the same file with a new deletion
        # vector (a DML that only marks rows): it holds no row that was not there before
        readded = {a.path for a in body if isinstance(a, RemoveFile)}
        if metadata is None or not any(
            isinstance(a, AddFile) and a.data_change and a.path not in readded for a in body
        ):
            return
        from deltalog.txn.protocol.constraints import table_constraints
        from deltalog.txn.protocol.generated_columns import enforces_generated_columns, generated_column_constraints

        generated = (
            generated_column_constraints(metadata) if enforces_generated_columns(self.protocol, metadata) else []
        )
        constraints = [*table_constraints(metadata), *generated]
        if constraints:
            listed = "; ".join(f"{c.name}: {c.expression}" for c in constraints)
            raise ConstraintsNotCheckedError(
                f"the table {self.delta_log.table_uri} has constraints ({listed}); a writer adding "
                "data must check every new row against them and then call "
                "txn.mark_constraints_checked() before committing"
            )

    def _ict_enabled(self) -> bool:
        metadata = self.metadata
        return metadata is not None and metadata.properties.enable_in_commit_timestamps

    def _append_only(self) -> bool:
        """Whether the table read is append-only (Delta's ``assertRemovable(snapshot)``): the
        read snapshot decides, so a commit that also turns ``delta.appendOnly`` off (a RESTORE
        to a version before it was set) cannot remove files with it."""
        return self.table_exists and self.snapshot.metadata.properties.append_only

    def _check_write_supported(self, protocol: Protocol) -> None:
        from deltalog.txn.protocol.features import check_write_supported

        check_write_supported(protocol, self.metadata, table=self.delta_log.table_uri)

    def _is_blind_append(self, actions: Sequence[Action]) -> bool:
        only_adds = all(isinstance(a, AddFile) for a in actions if isinstance(a, (AddFile, RemoveFile, AddCDCFile)))
        depends_on_files = bool(self._read_predicates) or bool(self._read_files) or self._read_whole_table
        return only_adds and not depends_on_files

    # -- the commit loop ---------------------------------------------------------------------

    def _commit_info(
        self,
        operation: Operation,
        level: IsolationLevel,
        blind: bool,
        metrics: dict[str, str] | None,
        in_commit_timestamp: int | None = None,
    ) -> CommitInfo:
        return CommitInfo(
            timestamp=int(time.time() * 1000),
            in_commit_timestamp=in_commit_timestamp,
            operation=operation.name,
            operation_parameters=operation.parameters,
            read_version=self.read_version if self.read_version >= 0 else None,
            isolation_level=level.value,
            is_blind_append=blind,
            operation_metrics=metrics,
            user_metadata=self.settings.user_metadata,
            engine_info=self.settings.engine_info,
            txn_id=self.txn_id,
            extra=_with_tags(
                identity_commit_tags(self.snapshot.metadata if self.table_exists else None, self._new_metadata),
                operation.commit_tags(),
            ),
        )

    def _operation_metrics(self, operation: Operation, stats: CommitStats | None) -> dict[str, str] | None:
        # Delta's getOperationMetrics: none when metrics are off, else the operation's
        # (an empty map for one that reports none, e.g. CREATE TABLE without data)
        if not self.settings.operation_metrics_enabled:
            return None
        # the counts the engine knows, then the operation's own; only the names the
        # operation declares are kept (Delta's ``transformMetrics``)
        metrics = file_metrics(stats) if stats is not None else {}
        metrics.update(operation.metrics())
        return operation.transform_metrics(metrics)

    def _new_stats(
        self, operation: Operation, actions: Sequence[Action], level: IsolationLevel, blind: bool
    ) -> CommitStats:
        stats = CommitStats(
            table=self.delta_log.table_uri,
            operation=operation.name,
            read_version=self.read_version,
            isolation_level=level.value,
            is_blind_append=blind,
            num_actions=len(actions),
        )
        if not _counts_rows(operation):
            stats.rows_added = None
        for action in actions:
            _count_file_action(stats, action)
        return stats

    def _current_info(
        self, actions: Sequence[Action], level: IsolationLevel, blind: bool, operation: str
    ) -> CurrentTransactionInfo:
        from deltalog.txn.protocol.features import check_write_supported

        return CurrentTransactionInfo(
            table_uri=self.delta_log.table_uri,
            isolation_level=level,
            is_blind_append=blind,
            partitioned=bool(self.partition_columns),
            read_predicates=self._read_predicates,
            read_file_paths=set(self._read_files),
            read_file_partitions=dict(self._read_files),
            partition_columns=self._hint_columns(),
            read_whole_table=self._read_whole_table,
            read_app_ids=self._read_app_ids,
            changes_metadata=self._new_metadata is not None,
            changes_protocol=self._new_protocol is not None,
            removed_paths={decode_path(a.path): a.partition_values for a in actions if isinstance(a, RemoveFile)},
            domains={a.domain for a in actions if isinstance(a, DomainMetadata)},
            check_protocol=check_write_supported,
            read_protocol=self.snapshot.protocol if self.table_exists else None,
            protocol=self.protocol,
            metadata=self.metadata,
            operation=operation,
            drops_row_tracking=self._drops_row_tracking,
        )

    def _hint_columns(self) -> tuple[tuple[str, str], ...]:
        """The read partition columns as (name, ``partitionValues`` key), in their order."""
        if not self.table_exists:
            return ()
        metadata = self.snapshot.metadata
        return tuple(zip(metadata.partition_columns, partition_value_keys(metadata), strict=True))

    def _attempt_metadata(self, snapshot: Snapshot) -> Metadata | None:
        """The metadata an attempt commits on: this transaction's new metadata, else the
        table's as of ``snapshot`` (the read one, or the latest winner's it adopted)."""
        if self._new_metadata is not None:
            return self._new_metadata
        return snapshot.metadata if snapshot.exists else None

    def _attempt_protocol(self, snapshot: Snapshot) -> Protocol | None:
        if self._new_protocol is not None:
            return self._new_protocol
        return snapshot.protocol if snapshot.exists else None

    def _attempt_actions(
        self, prepared: _PreparedCommit, loop: _LoopState, ict: int | None
    ) -> tuple[list[Action], list[str]]:
        """The actions of the attempt at ``loop.version`` and their lines: the in-commit
        timestamp enablement and the type changes of this commit stamped with the attempt's
        version (and ``ict``); row ids and row commit versions assigned on top of
        ``loop.snapshot`` when the table tracks rows."""
        base, lines = prepared.actions, prepared.lines
        resolved = _resolved_backfill(base, loop.conflict_info)
        if resolved is not None:
            base, lines = resolved, [action_to_line(a) for a in resolved]
        stamped = self._stamp_ict_enablement(base, loop.version, ict)
        stamped = self._stamp_type_changes(stamped or base, loop.version) or stamped
        stamped = self._stamp_checkpoint_protection(stamped or base, loop.version) or stamped
        if stamped is not None:
            base, lines = stamped, [action_to_line(a) for a in stamped]
        protocol = self._attempt_protocol(loop.snapshot)
        if not row_tracking.is_supported(protocol):
            return base, lines
        actions = row_tracking_commit.assign_for_attempt(
            base,
            protocol=protocol,
            metadata=self._attempt_metadata(loop.snapshot),
            snapshot=loop.snapshot,
            version=loop.version,
            backfilled=None if loop.conflict_info is None else loop.conflict_info.backfilled_row_ids,
        )
        return actions, [action_to_line(a) for a in actions]

    def _in_commit_timestamp(self, snapshot: Snapshot) -> int | None:
        metadata = self._attempt_metadata(snapshot)
        if metadata is None or not metadata.properties.enable_in_commit_timestamps:
            return None
        now = int(time.time() * 1000)
        if snapshot.version >= 0:
            return max(now, int(snapshot.timestamp) + 1)
        return now

    def _commit_loop(self, prepared: _PreparedCommit, stats: CommitStats, start: float) -> CommitResult:
        """Write ``prepared`` at ``read_version + 1`` under the commit lock. When another writer
        got the version first, check its commit (and any after it) for conflicts and try the
        next version, with backoff, up to ``max_commit_attempts``."""
        lock = commit_lock_for(self.delta_log, self._lock_setting, self._single_writer)
        lock.recover(self.delta_log.store, self.delta_log.log_uri)
        loop = _LoopState(version=self.read_version + 1, snapshot=self.snapshot)
        metrics = self._operation_metrics(prepared.operation, stats)
        while True:
            stats.attempts += 1
            ict = self._in_commit_timestamp(loop.snapshot)
            actions, action_lines = self._attempt_actions(prepared, loop, ict)
            info = self._attempt_commit_info(prepared, metrics, loop, actions, ict)
            lines = action_lines if info is None else [action_to_line(info), *action_lines]
            written = self._write_attempt(lock, loop, lines, stats)
            if written is _Written.OURS:
                committed = actions if info is None else [info, *actions]
                return self._result(loop.version, committed, loop.snapshot, stats)
            if written is _Written.ABSENT:
                self._before_retry(stats, loop, start, "the store's answers stayed ambiguous", backoff=1)
                continue
            own = self._check_winners(lock, prepared, loop, stats, start)
            if own is not None:
                return own

    def _attempt_commit_info(
        self,
        prepared: _PreparedCommit,
        metrics: dict[str, str] | None,
        loop: _LoopState,
        actions: Sequence[Action],
        ict: int | None,
    ) -> CommitInfo | None:
        """The ``commitInfo`` of one attempt (its in-commit timestamp follows
        ``loop.snapshot``; on a row-tracking table, the ``delta.rowTracking.preserved`` tag)."""
        if not self.settings.commit_info_enabled:
            return None
        snapshot = loop.snapshot
        info = self._commit_info(prepared.operation, prepared.level, prepared.blind, metrics, ict)
        tag = row_tracking_commit.preserved_tag(
            actions,
            self._attempt_protocol(snapshot),
            self._attempt_metadata(snapshot),
            materialized=self._row_tracking_materialized,
        )
        if tag is None:
            return info
        if loop.conflict_info is not None and not loop.conflict_info.row_tracking_preserved:
            tag = "false"  # a winner switched row tracking on: nothing before it was tracked
        tags = info.extra.get("tags")
        merged = {**(tags if isinstance(tags, dict) else {}), row_tracking.PRESERVED_TAG: tag}  # with identity's
        return replace(info, extra={**info.extra, "tags": merged})

    def _write_attempt(self, lock: CommitLock, loop: _LoopState, lines: list[str], stats: CommitStats) -> _Written:
        """Write ``lines`` as ``loop.version``; an ambiguous outcome is resolved by reading back
        the version's ``txnId``."""
        write_start = time.perf_counter()
        self._may_have_landed = True  # until the store says otherwise
        try:
            lock.write_commit(self.delta_log.store, self.delta_log.log_uri, loop.version, lines)
        except AmbiguousWriteError as exc:
            stats.time_writing_ms += (time.perf_counter() - write_start) * 1000
            outcome = self._resolve_ambiguous(loop.version, exc)
            if outcome == "ours":
                stats.resolved_by_txn_id = True
                return _Written.OURS
            if outcome == "absent":
                loop.unresolved = exc
                return _Written.ABSENT
            self._may_have_landed = loop.unresolved is not None
            return _Written.TAKEN
        except FileAlreadyExistsError:
            stats.time_writing_ms += (time.perf_counter() - write_start) * 1000
            self._may_have_landed = loop.unresolved is not None
            return _Written.TAKEN
        except Exception as exc:
            if loop.unresolved is None:
                raise
            raise AmbiguousWriteError(
                self.delta_log.commit_uri(loop.version),
                RuntimeError(
                    f"an earlier attempt of this commit (txnId {self.txn_id}) has an unknown outcome "
                    f"({loop.unresolved}) and the retry failed ({exc}); once the store or lock service is "
                    "back, look for this txnId in the table's history before committing again"
                ),
            ) from exc
        stats.time_writing_ms += (time.perf_counter() - write_start) * 1000
        return _Written.OURS

    def _check_winners(
        self, lock: CommitLock, prepared: _PreparedCommit, loop: _LoopState, stats: CommitStats, start: float
    ) -> CommitResult | None:
        """Another writer owns ``loop.version``: check each winning commit for conflicts and move
        ``loop`` past them. Returns the result when a winner is our own earlier attempt."""
        check_start = time.perf_counter()
        if loop.conflict_info is None:
            loop.conflict_info = self._current_info(
                prepared.actions, prepared.level, prepared.blind, prepared.operation.name
            )
        winners = self._winning_versions(loop.version)
        if not winners:
            # The version is taken but not visible yet (a lock's claim not yet published,
            # or eventual listing): try again after a pause.
            lock.recover(self.delta_log.store, self.delta_log.log_uri)
            stats.time_conflict_checking_ms += (time.perf_counter() - check_start) * 1000
            why = f"version {loop.version} stayed taken but invisible"
            self._before_retry(stats, loop, start, why, backoff=loop.conflicts_seen + 1)
            return None
        for version in winners:
            winner_actions = self.delta_log.read_commit(version)
            winner = WinningCommit(version, winner_actions)
            if self._is_own_earlier_attempt(winner):
                # Our own earlier attempt landed (a retried PUT, a repaired lock claim).
                stats.resolved_by_txn_id = True
                stats.time_conflict_checking_ms += (time.perf_counter() - check_start) * 1000
                return self._result(version, winner_actions, loop.snapshot, stats)
            after = self._revalidate_drop(loop.snapshot, winner)
            check_conflicts(loop.conflict_info, winner)
            stats.winning_versions_checked.append(version)
            loop.snapshot = after or loop.snapshot.apply(version, winner_actions, _commit_time(winner))
        self.delta_log.install_snapshot(loop.snapshot)
        stats.time_conflict_checking_ms += (time.perf_counter() - check_start) * 1000
        loop.version = winners[-1] + 1
        loop.conflicts_seen += 1
        self._before_retry(stats, loop, start, "the table kept moving", backoff=loop.conflicts_seen)
        return None

    def _is_own_earlier_attempt(self, winner: WinningCommit) -> bool:
        info = winner.commit_info
        return self.settings.commit_info_enabled and info is not None and info.txn_id == self.txn_id

    def _before_retry(self, stats: CommitStats, loop: _LoopState, start: float, why: str, backoff: int) -> None:
        """Give up when the attempts are used up, else sleep the backoff of the
        ``backoff``-th retry."""
        if stats.attempts >= self.settings.max_commit_attempts:
            self._give_up(stats, loop.version, start, why, outcome_unknown=loop.unresolved is not None)
        self._sleep_backoff(stats, backoff)

    def _result(
        self, version: int, committed: Sequence[Action], pre_commit: Snapshot, stats: CommitStats
    ) -> CommitResult:
        """The result of the loop: ``committed`` (what ``version`` holds) applied to the
        snapshot it was checked against."""
        timestamp = int(time.time() * 1000)
        info = next((a for a in committed if isinstance(a, CommitInfo)), None)
        if info is not None:
            timestamp = info.in_commit_timestamp or info.timestamp or timestamp
        return CommitResult(
            version=version,
            actions=tuple(committed),
            snapshot=pre_commit.apply(version, committed, timestamp),
            attempts=stats.attempts,
            winning_versions_checked=tuple(stats.winning_versions_checked),
            resolved_by_txn_id=stats.resolved_by_txn_id,
            pre_commit=pre_commit,
        )

    def _winning_versions(self, start_version: int) -> list[int]:
        versions = self.delta_log.list_commit_versions(start_version)
        contiguous: list[int] = []
        expected = start_version
        for v in versions:
            if v != expected:
                break
            contiguous.append(v)
            expected += 1
        return contiguous

    def _resolve_ambiguous(self, version: int, exc: AmbiguousWriteError) -> str:
        """``"ours"`` when N.json holds our txnId, ``"theirs"`` when another commit is there,
        ``"absent"`` when nothing landed."""
        from deltalog.txn.protocol.errors import VersionNotFoundError

        try:
            actions = self.delta_log.read_commit(version)
        except (FileNotFoundError, VersionNotFoundError):
            log.info("ambiguous write of version %d did not land; retrying (%s)", version, exc)
            return "absent"
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        if info is not None and info.txn_id == self.txn_id:
            log.info("ambiguous write of version %d landed (txnId %s matches)", version, self.txn_id)
            return "ours"
        return "theirs"

    def _sleep_backoff(self, stats: CommitStats, conflicts: int) -> None:
        base = self.settings.backoff_base_ms
        cap = self.settings.backoff_max_ms
        delay_ms = random.uniform(0, min(cap, base * (2 ** max(0, conflicts - 1))))
        if delay_ms > 0:
            time.sleep(delay_ms / 1000)
            stats.time_backoff_ms += delay_ms

    def _give_up(
        self, stats: CommitStats, attempt_version: int, start: float, why: str, outcome_unknown: bool = False
    ) -> None:
        elapsed = (time.perf_counter() - start) * 1000
        raise CommitFailedError(
            f"gave up after {stats.attempts} attempts: {why}",
            attempts=stats.attempts,
            read_version=self.read_version,
            last_attempted_version=attempt_version,
            elapsed_ms=elapsed,
            table=self.delta_log.table_uri,
            outcome_unknown=outcome_unknown,
        )

    # -- after the commit --------------------------------------------------------------------

    def _after_commit(
        self, result: CommitResult, stats: CommitStats, start: float, always_checkpoint: bool = False
    ) -> None:
        self._committed = True
        self.committed_version = result.version
        stats.version = result.version
        self.delta_log.install_snapshot(result.snapshot)
        self.post_commit_snapshot = result.snapshot
        if result.pre_commit is not None and self.settings.write_checksum_file:
            record_commit_checksum(
                self.delta_log.store,
                self.delta_log.log_uri,
                result.snapshot,
                result.actions,
                result.pre_commit,
                self.txn_id,
            )
        stats.time_post_commit_ms = run_post_commit(
            self.delta_log,
            result.version,
            result.snapshot,
            result.actions,
            self._hooks,
            self.settings,
            always_checkpoint,
        )
        self._finish_stats(stats, start)

    def _finish_stats(self, stats: CommitStats, start: float) -> None:
        stats.time_total_ms = (time.perf_counter() - start) * 1000
        self.commit_stats = stats
        if log.isEnabledFor(logging.DEBUG):
            log.debug("commit stats: %s", stats.as_dict())
        callback = self.settings.on_commit_stats
        if callback is not None:
            try:
                callback(stats)
            except Exception:
                log.exception("the commit-stats callback failed for version %d", stats.version)


def _with_tags(extra: dict[str, Any], tags: Mapping[str, str]) -> dict[str, Any]:
    """``commitInfo`` extras with ``tags`` added to its ``tags`` map."""
    if not tags:
        return extra
    current = extra.get("tags")
    return {**extra, "tags": {**(current if isinstance(current, dict) else {}), **tags}}


def _resolved_backfill(actions: list[Action], info: CurrentTransactionInfo | None) -> list[Action] | None:
    """A row tracking (un)backfill batch after conflict resolution (Delta's
    ``resolveRowTrackingBackfillConflicts`` / ``resolveRowTrackingUnBackfillConflicts``):
    without the re-adds of files winners added or removed, plus the winners' adds an
    unbackfill strips of their ids; None when nothing changes."""
    if info is None or not (info.backfill_dropped or info.unbackfilled):
        return None
    dropped = info.backfill_dropped
    kept = [a for a in actions if not (isinstance(a, AddFile) and decode_path(a.path) in dropped)]
    return [*kept, *info.unbackfilled.values()]


def _counts_rows(operation: Operation) -> bool:
    """Whether the commit counts its added rows for ``numOutputRows``: only when the operation
    reports it and does not count them itself (each count parses every add's statistics)."""
    return "numOutputRows" in operation.operation_metrics and "numOutputRows" not in operation.metrics()


def _count_file_action(stats: CommitStats, action: Action) -> None:
    """Count ``action`` in ``stats``; its rows too while ``stats.rows_added`` is not None."""
    if isinstance(action, AddFile):
        stats.num_adds += 1
        stats.bytes_added += action.size
        if stats.rows_added is not None:
            rows = action.num_records()
            stats.rows_added = None if rows is None else stats.rows_added + rows
    elif isinstance(action, RemoveFile):
        stats.num_removes += 1
        stats.bytes_removed += action.size or 0
    elif isinstance(action, AddCDCFile):
        stats.num_cdc_files += 1


def _commit_time(winner: WinningCommit) -> int:
    info = winner.commit_info
    if info is not None:
        stamp = info.in_commit_timestamp or info.timestamp
        if stamp:
            return int(stamp)
    return int(time.time() * 1000)


def _ict_enabled_at(metadata: Metadata, version: int, timestamp: int) -> Metadata:
    """``metadata`` recording that in-commit timestamps were turned on at ``version``, whose
    in-commit timestamp is ``timestamp`` (values carried from an earlier enablement are replaced)."""
    config = {
        **metadata.configuration,
        "delta.inCommitTimestampEnablementVersion": str(version),
        "delta.inCommitTimestampEnablementTimestamp": str(timestamp),
    }
    return replace(metadata, configuration=config)


def _with_kept_ict_enablement(metadata: Metadata, prior: TableProperties) -> Metadata:
    """``metadata``, which keeps in-commit timestamps on, with the enablement record of the
    ``prior`` metadata when it has one and ``metadata`` has none (Delta's
    ``getUpdatedMetadataWithICTEnablementInfo``: a REPLACE or a RESTORE must not drop it)."""
    version = prior.in_commit_timestamp_enablement_version
    timestamp = prior.in_commit_timestamp_enablement_timestamp
    props = metadata.properties
    if version is None or timestamp is None:
        return metadata
    if props.in_commit_timestamp_enablement_version is not None:
        return metadata
    if props.in_commit_timestamp_enablement_timestamp is not None:
        return metadata
    return _ict_enabled_at(metadata, version, timestamp)


def _with_created_time(metadata: Metadata) -> Metadata:
    return replace(metadata, created_time=int(time.time() * 1000))
