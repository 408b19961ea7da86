"""``ALTER TABLE ... DROP FEATURE name [TRUNCATE HISTORY]`` (Delta 4's
``AlterTableDropFeatureDeltaCommand``).

The command first removes the feature's traces from the latest version (its
*pre-downgrade* work, below), then commits a protocol without it:

- **fast drop** (the default): for a reader+writer feature (Delta's
  ``requiresHistoryProtection``) three empty commits, each checkpointed, are written after
  the pre-downgrade work; the downgrade commit adds the ``checkpointProtection`` writer
  feature and ``delta.requireCheckpointProtectionBeforeVersion`` = its own version (moved
  past any concurrent commit), and is checkpointed too. Readers without the dropped feature
  read every version from those checkpoints on; the older ones stay refused. A writer-only
  feature is simply removed.
- ``truncate_history=True``: allowed only for a reader+writer feature (and
  ``checkpointProtection``). The first run does the pre-downgrade work, writes a checkpoint
  on an empty commit and, when it changed anything, fails with
  :class:`DropFeatureWaitForRetentionError`; once the commits that used the feature are
  older than ``delta.dropFeatureTruncateHistory.retentionDuration`` (24 hours) a rerun cleans
  them up and downgrades without ``checkpointProtection``
  (:class:`DropFeatureHistoricalVersionsExistError` while some remain).

Pre-downgrade work deltalog does (Delta's ``PreDowngradeTableFeatureCommand`` of each):

- ``deletionVectors``: unset ``delta.enableDeletionVectors``, REORG ... APPLY (PURGE),
  then remove tombstones naming the deletion vector files still referenced by tombstones;
- ``v2Checkpoint``: ``delta.checkpointPolicy`` = ``classic`` (the barrier checkpoints are
  classic ones);
- ``inCommitTimestamp``: ``delta.enableInCommitTimestamps`` = ``false`` and its enablement
  properties removed;
- ``checkConstraints``: none; refused (:class:`FeatureStillInUseError`) while the table has
  CHECK constraints (drop them first);
- ``vacuumProtocolCheck``: none;
- ``checkpointProtection`` (``truncate_history=True`` only): the history before
  ``delta.requireCheckpointProtectionBeforeVersion`` is truncated (24-hour retention), the
  property unset;
- ``typeWidening`` / ``typeWidening-preview`` (Delta's ``TypeWideningPreDowngradeCommand``):
  unset ``delta.enableTypeWidening``; when the schema records type changes, REORG ... APPLY
  (REWRITE TYPE WIDENING) (the files whose Parquet types are narrower than the table's
  rewritten with the table's types) and one ``DROP FEATURE`` metadata commit removing every
  ``delta.typeChanges`` from the schema.

- ``columnMapping`` (Delta's ``ColumnMappingPreDowngradeCommand``): one commit
  (``REMOVE COLUMN MAPPING``, :mod:`deltalog.txn.commands.column_mapping_removal`) rewrites
  every file with the logical column names and removes the column mapping field metadata,
  ``delta.columnMapping.mode`` and ``delta.columnMapping.maxColumnId``; refused
  (``DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING``) while a column's name needs
  column mapping;
- ``rowTracking`` (Delta's ``RowTrackingPreDowngradeCommand``, writer feature, no history
  protection): ``delta.enableRowTracking`` = ``false`` and ``delta.rowTrackingSuspended`` =
  ``true``, then the files with ``baseRowId`` / ``defaultRowCommitVersion`` re-added without
  them (``ROW TRACKING UNBACKFILL`` batches, :mod:`deltalog.txn.commands.row_tracking_backfill`);
  the downgrade commit removes the four row tracking
  properties and the ``delta.rowTracking`` domain (refused while ``domainMetadata`` is needed
  by ``rowTracking``: drop ``rowTracking`` first);
- ``domainMetadata``: every domain removed (``DOMAIN METADATA CLEANUP``: they are leaked, since
  a feature that uses domains, ``rowTracking`` or ``clustering``, refuses the drop first);
- ``materializePartitionColumns``: none; the downgrade commit removes
  ``delta.enableMaterializePartitionColumnsFeature``.

Features Delta cannot drop (``identityColumns``, ``appendOnly``, ...) are refused
(``DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE``); the removable ones whose pre-downgrade work
deltalog lacks (``coordinatedCommits-preview``, ``catalogOwned-preview``) by name
(:class:`DropFeatureUnsupportedError`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deltalog.txn.commands.row_tracking_backfill import BackfillLimits, unbackfill_row_tracking
from deltalog.txn.commit.operations import (
    AddDeletionVectorsTombstones,
    DomainMetadataCleanup,
    DropFeatureColumnMetadata,
    DropTableFeature,
    EmptyCommit,
    SetTableProperties,
    UnsetTableProperties,
)
from deltalog.txn.log.deletion_vectors import dv_absolute_path
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    CheckpointMetadata,
    DeletionVectorDescriptor,
    DomainMetadata,
    Metadata,
    RemoveFile,
    decode_path,
    encode_path,
)
from deltalog.txn.protocol.checkpoint_protection import PROPERTY, checkpoint_protection_version
from deltalog.txn.protocol.column_mapping import column_mapping_mode, has_column_mapping
from deltalog.txn.protocol.errors import DeltaLogError, UnsupportedColumnMappingModeChangeError
from deltalog.txn.protocol.feature_removal import REMOVABLE, dependent_features, protocol_without
from deltalog.txn.protocol.features import FEATURES, protocol_features
from deltalog.txn.protocol.properties import ALIASES, DELTA_TABLE_PROPERTIES
from deltalog.txn.protocol.type_widening import has_type_changes, remove_type_changes

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "BARRIER_CHECKPOINTS",
    "DropFeatureError",
    "DropFeatureHistoricalVersionsExistError",
    "DropFeatureUnsupportedError",
    "DropFeatureWaitForRetentionError",
    "FeatureNotPresentError",
    "FeatureNotRemovableError",
    "FeatureStillInUseError",
    "drop_feature",
]

log = logging.getLogger(__name__)

#: Delta's ``NUMBER_OF_BARRIER_CHECKPOINTS``
BARRIER_CHECKPOINTS = 3

#: rewrites files of the latest version: REORG ... APPLY (PURGE) (the files with deletion
#: vectors) with ``"PURGE"``, APPLY (REWRITE TYPE WIDENING) (the files with narrower Parquet
#: types than the table's) with ``"REWRITE_TYPE_WIDENING"``, every file with the logical
#: column names and the metadata without column mapping with ``"REMOVE_COLUMN_MAPPING"``
#: (:func:`deltalog.txn.commands.column_mapping_removal.remove_column_mapping`)
Purge = Callable[["DeltaLog", str], object]


class DropFeatureError(DeltaLogError):
    """``DROP FEATURE`` cannot go ahead; nothing was dropped. ``error_class`` is Delta's."""

    error_class: str = "DELTA_FEATURE_DROP"

    def __init__(self, message: str, feature: str) -> None:
        super().__init__(f"[{self.error_class}] {message}")
        self.feature = feature


class FeatureNotPresentError(DropFeatureError):
    """The feature is not in the table's protocol."""

    error_class = "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"


class FeatureNotRemovableError(DropFeatureError):
    """Delta cannot drop this feature (or this way): not removable, unknown, a table
    property, needed by another feature, or TRUNCATE HISTORY where it does not apply."""


class DropFeatureUnsupportedError(FeatureNotRemovableError):
    """Delta can drop the feature but deltalog does not do its pre-downgrade work."""

    error_class = "DELTALOG_FEATURE_DROP_NOT_IMPLEMENTED"


class FeatureStillInUseError(DropFeatureError):
    """The table still uses the feature in a way the drop will not undo for you."""


class DropFeatureWaitForRetentionError(DropFeatureError):
    """The feature is gone from the latest version but older versions still use it."""

    error_class = "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"


class DropFeatureHistoricalVersionsExistError(DropFeatureWaitForRetentionError):
    """History truncation left versions that use the feature."""

    error_class = "DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST"


def _refuse(cls: type[DropFeatureError], error_class: str, message: str, feature: str) -> DropFeatureError:
    err = cls(message, feature)
    err.error_class = error_class
    err.args = (f"[{error_class}] {message}",)
    return err


def _feature_named(name: str) -> str | None:
    """The feature Delta knows by ``name`` in any case (Delta's ``featureNameToFeature``)."""
    return next((f for f in FEATURES if f.lower() == name.lower()), None)


def _is_delta_property(name: str) -> bool:
    """Whether ``name`` is a Delta table property, in any case (Delta's check of
    ``DeltaConfigs.getAllConfigs`` before dropping)."""
    return name.lower() in {p.lower() for p in DELTA_TABLE_PROPERTIES}


def _check_droppable(name: str, snapshot: Snapshot, truncate_history: bool) -> None:
    """Delta's checks before any work, in its order."""
    reader, writer = protocol_features(snapshot.protocol)
    present = name in reader | writer  # the exact name, as Delta's protocolContainsFeatureName
    known = _feature_named(name)  # any case, as Delta's featureNameToFeature
    if not present and _is_delta_property(name):
        msg = f"Cannot drop `{name}` from this table because this is a delta table property and not a table feature."
        raise _refuse(FeatureNotRemovableError, "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY", msg, name)
    if not present and known is not None:
        msg = f"Cannot drop {name} from this table because it is not currently present in the table's protocol."
        raise FeatureNotPresentError(msg, name)
    removable = REMOVABLE.get(name)
    if removable is None and known is not None:
        msg = f"Cannot drop {name} because dropping this feature is not supported."
        raise _refuse(FeatureNotRemovableError, "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE", msg, name)
    if removable is None:
        msg = f"Cannot drop {name} because it is not supported by this Delta version."
        raise _refuse(FeatureNotRemovableError, "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE", msg, name)
    if truncate_history and not (removable.history_protection or name == "checkpointProtection"):
        msg = "The particular feature does not require history truncation."
        raise _refuse(FeatureNotRemovableError, "DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED", msg, name)
    if name == "checkpointProtection" and not truncate_history:
        msg = (
            "Could not drop the Checkpoint Protection feature. This feature can only be dropped by truncating "
            "history. Please try again with the TRUNCATE HISTORY option (truncateHistory=True)."
        )
        raise _refuse(
            FeatureNotRemovableError,
            "DELTA_FEATURE_CAN_ONLY_DROP_CHECKPOINT_PROTECTION_WITH_HISTORY_TRUNCATION",
            msg,
            name,
        )
    if dependents := dependent_features(name, snapshot.protocol):
        msg = (
            f"Cannot drop table feature `{name}` because some other features ({', '.join(dependents)}) in this "
            f"table depends on `{name}`. Consider dropping them first before dropping this feature."
        )
        raise _refuse(FeatureNotRemovableError, "DELTA_FEATURE_DROP_DEPENDENT_FEATURE", msg, name)
    if not removable.implemented:
        msg = (
            f"deltalog cannot drop {name}: it does not implement the work that removes the feature's traces "
            "(Delta's pre-downgrade command). Drop it with Delta Spark."
        )
        raise DropFeatureUnsupportedError(msg, name)


# -- what uses a feature -------------------------------------------------------------------


def _dv_count(snapshot: Snapshot) -> int:
    column = snapshot.files_table.column("deletionVector")
    return int(len(column) - column.null_count)


def _row_ids_count(snapshot: Snapshot) -> int:
    """The live files with a ``baseRowId`` or a ``defaultRowCommitVersion``."""
    import pyarrow.compute as pc

    files = snapshot.files_table
    base, version = (files.column(c) for c in ("baseRowId", "defaultRowCommitVersion"))
    without = pc.sum(pc.and_(base.is_null(), version.is_null()).cast("int64")).as_py() or 0
    return len(files) - int(without)


def drop_invariants_hold(name: str, snapshot: Snapshot) -> bool:
    """Delta's ``validateDropInvariants``: the latest state has no trace of ``name``."""
    props = snapshot.properties
    if name == "columnMapping":
        return not has_column_mapping(snapshot.metadata)
    if name == "rowTracking":  # the properties and the domain go at the downgrade commit
        if props.enable_row_tracking or not row_tracking.is_suspended(snapshot.metadata):
            return False
        return _row_ids_count(snapshot) == 0
    if name == "domainMetadata":
        return not any(not d.removed for d in snapshot.domain_metadata.values())
    if name == "deletionVectors":
        return not props.enable_deletion_vectors and _dv_count(snapshot) == 0
    if name == "v2Checkpoint":
        checkpoint = None if snapshot.segment is None else snapshot.segment.checkpoint
        return props.checkpoint_policy != "v2" and (checkpoint is None or checkpoint.kind != "v2")
    if name == "inCommitTimestamp":
        provenance = (props.in_commit_timestamp_enablement_version, props.in_commit_timestamp_enablement_timestamp)
        return not props.enable_in_commit_timestamps and provenance == (None, None)
    if name == "checkConstraints":
        return not props.check_constraints
    if name == "checkpointProtection":
        return props.get(PROPERTY) is None
    if name in ("typeWidening", "typeWidening-preview"):
        return not props.enable_type_widening and not has_type_changes(json.loads(snapshot.metadata.schema_string))
    return True  # vacuumProtocolCheck and materializePartitionColumns leave no trace


def _action_uses(name: str, action: Action) -> bool:
    """Delta's ``actionUsesFeature`` (history check of a reader+writer feature)."""
    if name == "deletionVectors":
        if isinstance(action, Metadata):
            return action.properties.enable_deletion_vectors
        return isinstance(action, (AddFile, RemoveFile)) and action.deletion_vector is not None
    if name == "v2Checkpoint":
        if isinstance(action, Metadata):
            return action.properties.checkpoint_policy == "v2"
        return isinstance(action, CheckpointMetadata)
    if name in ("typeWidening", "typeWidening-preview"):
        return isinstance(action, Metadata) and has_type_changes(json.loads(action.schema_string))
    if name == "columnMapping":
        return isinstance(action, Metadata) and column_mapping_mode(action.configuration) != "none"
    return False


def _history_uses(delta_log: DeltaLog, name: str, snapshot: Snapshot) -> bool:
    """Delta's ``historyContainsFeature``: the earliest reconstructable state or any commit
    still in the log uses ``name``."""
    listing = delta_log.listing()
    checkpoints = listing.complete_checkpoints(snapshot.version)
    earliest = checkpoints[0].version if checkpoints and 0 not in listing.commits else 0
    if not drop_invariants_hold(name, delta_log.snapshot(earliest)):
        return True
    for version in sorted(v for v in listing.commits if v <= snapshot.version):
        if any(_action_uses(name, a) for a in delta_log.read_commit(version)):
            return True
    return False


# -- the pre-downgrade work ------------------------------------------------------------------


def _set_properties(
    delta_log: DeltaLog, lock: str | CommitLock | None, changes: dict[str, str | None], unset: bool
) -> None:
    """One metadata commit setting (value) or removing (``None``) properties."""
    txn = delta_log.start_transaction(lock=lock)
    metadata = txn.snapshot.metadata
    config = {k: v for k, v in metadata.configuration.items() if k not in changes}
    config.update({k: v for k, v in changes.items() if v is not None})
    txn.update_metadata(dataclasses.replace(metadata, configuration=config))
    if unset:
        txn.commit([], UnsetTableProperties(keys=list(changes), if_exists=True))
    else:
        txn.commit([], SetTableProperties(properties={k: v for k, v in changes.items() if v is not None}))


def _dv_tombstones(delta_log: DeltaLog, lock: str | CommitLock | None, now_ms: int) -> None:
    """Removes naming each deletion vector file a tombstone still references (Delta's
    ``generateDVTombstones``), so that a client without deletion vectors never vacuums one
    while a time travel within the retention period can need it."""
    txn = delta_log.start_transaction(lock=lock)
    snapshot = txn.snapshot
    root = delta_log.table_uri.rstrip("/") + "/"
    tombstones = snapshot.tombstones_table(now_ms)
    plain = {
        decode_path(p)
        for p, dv in zip(*(tombstones.column(c).to_pylist() for c in ("path", "deletionVector")))
        if not dv
    }
    wanted: set[str] = set()
    for dv in tombstones.column("deletionVector").to_pylist():
        if dv and dv.get("storageType") in ("u", "p"):
            path = dv_absolute_path(delta_log.table_uri, DeletionVectorDescriptor.from_dict(dv))
            if path.startswith(root) and path[len(root) :] not in plain:
                wanted.add(path[len(root) :])
    if wanted:
        removes = [RemoveFile(encode_path(p), deletion_timestamp=now_ms, data_change=False) for p in sorted(wanted)]
        txn.commit(removes, AddDeletionVectorsTombstones())


def _drop_deletion_vectors(
    delta_log: DeltaLog, lock: str | CommitLock | None, purge: Purge | None, now_ms: int
) -> bool:
    snapshot = delta_log.update()
    traces = not drop_invariants_hold("deletionVectors", snapshot)
    if snapshot.properties.enable_deletion_vectors:
        _set_properties(delta_log, lock, {"delta.enableDeletionVectors": None}, unset=True)
    if _dv_count(delta_log.update()) > 0:
        _reorg(delta_log, lock, purge, "PURGE")
    _dv_tombstones(delta_log, lock, now_ms)
    return traces


def _reorg(delta_log: DeltaLog, lock: str | CommitLock | None, purge: Purge | None, mode: str) -> None:
    """REORG ... APPLY (``mode``) with ``purge``, else in this process."""
    if purge is not None:
        purge(delta_log, mode)
        return
    if mode == "REMOVE_COLUMN_MAPPING":
        from deltalog.txn.commands.column_mapping_removal import remove_column_mapping

        remove_column_mapping(delta_log, lock=lock)
        return
    from deltalog.txn.commands.optimize import optimize

    optimize(delta_log, lock=lock, purge=mode == "PURGE", rewrite_type_widening=mode == "REWRITE_TYPE_WIDENING")


def _drop_type_widening(delta_log: DeltaLog, lock: str | CommitLock | None, name: str, purge: Purge | None) -> bool:
    """Delta's ``TypeWideningPreDowngradeCommand``: unset the property, rewrite the files
    written before a widening, remove the ``delta.typeChanges`` metadata."""
    snapshot = delta_log.update()
    if drop_invariants_hold(name, snapshot):
        return False
    _set_properties(delta_log, lock, {"delta.enableTypeWidening": None}, unset=True)
    if not has_type_changes(json.loads(delta_log.update().metadata.schema_string)):
        return True
    _reorg(delta_log, lock, purge, "REWRITE_TYPE_WIDENING")
    txn = delta_log.start_transaction(lock=lock)
    metadata = txn.snapshot.metadata
    cleaned, fields = remove_type_changes(json.loads(metadata.schema_string))
    if fields:  # a concurrent commit may have removed them
        txn.update_metadata(dataclasses.replace(metadata, schema_string=json.dumps(cleaned, separators=(",", ":"))))
        txn.commit([], DropFeatureColumnMetadata(columns=[_column_parameter(p, f) for p, f in fields]))
    return True


def _column_parameter(path: str, field: dict[str, Any]) -> dict[str, Any]:
    """Delta's ``structFieldToMap`` of a field whose metadata the drop removes."""
    kind = field["type"]
    return {
        "name": path,
        "type": kind if isinstance(kind, str) else kind.get("type"),
        "nullable": field.get("nullable", True),
        "metadata": field.get("metadata") or {},
    }


def _drop_in_commit_timestamps(delta_log: DeltaLog, lock: str | CommitLock | None) -> bool:
    snapshot = delta_log.update()
    if drop_invariants_hold("inCommitTimestamp", snapshot):
        return False
    provenance = ("delta.inCommitTimestampEnablementTimestamp", "delta.inCommitTimestampEnablementVersion")
    names = [name for key in provenance for name in (key, *ALIASES.get(key, ()))]
    changes: dict[str, str | None] = {name: None for name in names if name in snapshot.metadata.configuration}
    if snapshot.properties.enable_in_commit_timestamps:
        changes["delta.enableInCommitTimestamps"] = "false"
    _set_properties(delta_log, lock, changes, unset=True)
    return True


def _drop_row_tracking(delta_log: DeltaLog, lock: str | CommitLock | None, limits: BackfillLimits | None) -> bool:
    """Delta's ``RowTrackingPreDowngradeCommand``: disable and suspend row tracking, then
    re-add the files with row ids without them (``RowTrackingUnBackfillCommand``: batches of
    at most ``limits.max_files_per_commit`` files)."""
    snapshot = delta_log.update()
    if drop_invariants_hold("rowTracking", snapshot):
        return False
    _set_properties(
        delta_log, lock, {"delta.enableRowTracking": "false", row_tracking.SUSPENDED_KEY: "true"}, unset=False
    )
    unbackfill_row_tracking(delta_log, limits, lock=lock)
    return True


def _drop_domain_metadata(delta_log: DeltaLog, lock: str | CommitLock | None) -> bool:
    """Delta's ``DomainMetadataPreDowngradeCommand``: remove the (leaked) domains."""
    txn = delta_log.start_transaction(lock=lock)
    removes = [dataclasses.replace(d, removed=True) for d in txn.snapshot.domain_metadata.values() if not d.removed]
    if not removes:
        return False
    txn.commit(removes, DomainMetadataCleanup(domain_metadata_removed_count=len(removes)))
    return True


def _pre_downgrade(
    delta_log: DeltaLog,
    lock: str | CommitLock | None,
    name: str,
    purge: Purge | None,
    now_ms: int,
    limits: BackfillLimits | None = None,
) -> bool:
    """Remove the feature's traces from the latest version; whether anything changed."""
    snapshot = delta_log.update()
    if name == "columnMapping":
        if drop_invariants_hold(name, snapshot):
            return False
        _reorg(delta_log, lock, purge, "REMOVE_COLUMN_MAPPING")
        return True
    if name == "rowTracking":
        return _drop_row_tracking(delta_log, lock, limits)
    if name == "domainMetadata":
        return _drop_domain_metadata(delta_log, lock)
    if name == "deletionVectors":
        return _drop_deletion_vectors(delta_log, lock, purge, now_ms)
    if name == "inCommitTimestamp":
        return _drop_in_commit_timestamps(delta_log, lock)
    if name in ("typeWidening", "typeWidening-preview"):
        return _drop_type_widening(delta_log, lock, name, purge)
    if name == "v2Checkpoint":
        if drop_invariants_hold(name, snapshot):
            return False
        _set_properties(delta_log, lock, {"delta.checkpointPolicy": "classic"}, unset=False)
        return True
    if name == "checkConstraints" and snapshot.properties.check_constraints:
        # Delta's formatColumn: each name backquoted (a backquote doubled)
        names = ", ".join("`" + n.replace("`", "``") + "`" for n in sorted(snapshot.properties.check_constraints))
        msg = (
            "Cannot drop the CHECK constraints table feature. "
            f"The following constraints must be dropped first: {names}."
        )
        raise _refuse(FeatureStillInUseError, "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE", msg, name)
    if name == "checkpointProtection":
        _truncate_protected_history(delta_log, lock, now_ms)
    return False


# -- history -------------------------------------------------------------------------------


def _truncate_retention_ms(snapshot: Snapshot) -> int:
    return int(snapshot.properties.drop_feature_truncate_history_retention.total_seconds() * 1000)


def _retention_text(snapshot: Snapshot) -> str:
    retention = snapshot.properties.drop_feature_truncate_history_retention
    hours = retention.total_seconds() / 3600
    return (
        f"Please wait for the TRUNCATE HISTORY retention period to expire ({hours:g} hours) and then run "
        "the command again with truncateHistory=True (ALTER TABLE ... DROP FEATURE ... TRUNCATE HISTORY)."
    )


def _checkpoint_and_clean(delta_log: DeltaLog, version: int) -> None:
    """Checkpoint ``version`` and clean up expired logs, as Delta's ``checkpoint``."""
    snapshot = delta_log.snapshot(version)
    delta_log.checkpoint(snapshot)
    if snapshot.properties.enable_expired_log_cleanup:
        delta_log.cleanup_expired_logs(delta_log.update())


def _empty_commit_and_checkpoint(delta_log: DeltaLog, lock: str | CommitLock | None) -> int:
    """Delta's ``createEmptyCommitAndCheckpoint``: a checkpoint on a commit after the
    pre-downgrade work (another writer's commit may land first: that is fine)."""
    version = delta_log.start_transaction(lock=lock).commit([], EmptyCommit())
    _checkpoint_and_clean(delta_log, version)
    return version


def _history_truncated_before(delta_log: DeltaLog, boundary: int) -> bool:
    """No commit before ``boundary`` is left and a checkpoint at or after it exists (Delta's
    ``historyPriorToCheckpointProtectionVersionIsTruncated``)."""
    if boundary <= 0:
        return True
    listing = delta_log.listing()
    if any(v < boundary for v in listing.commits):
        return False
    return any(c.version >= boundary for c in listing.complete_checkpoints())


def _truncate_protected_history(delta_log: DeltaLog, lock: str | CommitLock | None, now_ms: int) -> None:
    """``checkpointProtection``'s pre-downgrade work: truncate the history before the
    protected version (24-hour retention), then unset the property."""
    snapshot = delta_log.update()
    boundary = checkpoint_protection_version(snapshot.protocol, snapshot.metadata)
    if not _history_truncated_before(delta_log, boundary):
        _empty_commit_and_checkpoint(delta_log, lock)
        latest = delta_log.update()
        delta_log.cleanup_expired_logs(latest, now_ms=now_ms, retention_ms=_truncate_retention_ms(latest))
        if not _history_truncated_before(delta_log, boundary):
            msg = (
                "The operation did not succeed because there are still traces of dropped features in the table "
                "history. CheckpointProtection cannot be dropped until these historical versions have expired. "
                + _retention_text(snapshot)
            )
            raise _refuse(
                DropFeatureWaitForRetentionError,
                "DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD",
                msg,
                "checkpointProtection",
            )
    if delta_log.update().properties.get(PROPERTY) is not None:
        _set_properties(delta_log, lock, {PROPERTY: None}, unset=True)


# -- the command ---------------------------------------------------------------------------


def _downgrade(delta_log: DeltaLog, lock: str | CommitLock | None, name: str, *, protect: bool, truncate: bool) -> int:
    """The protocol downgrade commit; with ``protect`` it adds ``checkpointProtection``."""
    from deltalog.txn.commit.commit_errors import DropFeatureConflictError
    from deltalog.txn.protocol.checkpoint_protection import FEATURE, with_checkpoint_protection

    txn = delta_log.start_transaction(lock=lock)
    snapshot = txn.snapshot
    if not drop_invariants_hold(name, snapshot):
        raise DropFeatureConflictError(f"the table uses {name} again", table=delta_log.table_uri)
    removed = {k.lower() for k in REMOVABLE[name].downgrade_removes}
    config = {k: v for k, v in snapshot.metadata.configuration.items() if k.lower() not in removed}
    metadata = dataclasses.replace(snapshot.metadata, configuration=config)
    if protect:
        metadata = with_checkpoint_protection(metadata, txn.read_version + 1)
    txn.update_metadata(metadata)
    protocol = protocol_without(snapshot.protocol, name, (FEATURE,) if protect else ())
    txn.downgrade_protocol(protocol, lambda s: drop_invariants_hold(name, s), protect_checkpoints=protect)
    return txn.commit(
        _downgrade_actions(name, snapshot), DropTableFeature(feature_name=name, truncate_history=truncate)
    )


def _downgrade_actions(name: str, snapshot: Snapshot) -> list[Action]:
    """Delta's ``actionsToIncludeAtDowngradeCommit``: ``rowTracking`` removes its domain."""
    domain = snapshot.domain_metadata.get(row_tracking.ROW_TRACKING_DOMAIN)
    if name != "rowTracking" or domain is None or domain.removed:
        return []
    return [DomainMetadata(domain.domain, domain.configuration, removed=True)]


def _drop_with_history_truncation(
    delta_log: DeltaLog, lock: str | CommitLock | None, name: str, purge: Purge | None, now_ms: int
) -> int:
    """Delta's ``executeDropFeatureWithHistoryTruncation``."""
    changed = _pre_downgrade(delta_log, lock, name, purge, now_ms)
    if REMOVABLE[name].history_protection:
        _empty_commit_and_checkpoint(delta_log, lock)
        if changed:
            msg = (
                f"Dropping {name} was partially successful. The feature is now no longer used in the current "
                "version of the table. However, the feature is still present in historical versions of the "
                "table. The table feature cannot be dropped from the table protocol until these historical "
                "versions have expired. " + _retention_text(delta_log.update())
            )
            raise DropFeatureWaitForRetentionError(msg, name)
        latest = delta_log.update()
        delta_log.cleanup_expired_logs(latest, now_ms=now_ms, retention_ms=_truncate_retention_ms(latest))
        if _history_uses(delta_log, name, delta_log.update()):
            msg = (
                f"Cannot drop {name} because the Delta log contains historical versions that use the feature. "
                + _retention_text(latest)
            )
            raise DropFeatureHistoricalVersionsExistError(msg, name)
    return _downgrade(delta_log, lock, name, protect=False, truncate=True)


def drop_feature(
    delta_log: DeltaLog,
    feature: str,
    *,
    truncate_history: bool = False,
    purge: Purge | None = None,
    now_ms: int | None = None,
    lock: str | CommitLock | None = None,
    row_tracking_backfill: BackfillLimits | None = None,
    allow_column_mapping_removal: bool = True,
) -> int:
    """Drop ``feature`` from the table's protocol (see the module docstring); returns the
    version of the downgrade commit. ``purge(log, mode)`` runs a REORG (see :data:`Purge`;
    default: :func:`deltalog.txn.commands.optimize.optimize` in this process); ``now_ms``
    is the clock of the history truncation; ``lock`` the commit lock of every commit the
    drop makes (``docs/locks.md``); ``row_tracking_backfill`` the batch size of
    ``rowTracking``'s unbackfill (Delta's ``spark.databricks.delta.backfill.maxNumFiles``);
    ``allow_column_mapping_removal=False`` (Delta's ``spark.databricks.delta.columnMapping.allowRemoval``
    = ``false``) refuses dropping ``columnMapping`` from a table that maps columns, as Delta's
    mode change check does (:class:`UnsupportedColumnMappingModeChangeError`)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    snapshot = delta_log.require_table()
    _check_droppable(feature, snapshot, truncate_history)
    if feature == "columnMapping" and not allow_column_mapping_removal and has_column_mapping(snapshot.metadata):
        raise UnsupportedColumnMappingModeChangeError(column_mapping_mode(snapshot.metadata.configuration), "none")
    if truncate_history:
        return _drop_with_history_truncation(delta_log, lock, feature, purge, now)
    _pre_downgrade(delta_log, lock, feature, purge, now, row_tracking_backfill)
    protect = REMOVABLE[feature].history_protection
    if protect:
        for _ in range(BARRIER_CHECKPOINTS):
            _empty_commit_and_checkpoint(delta_log, lock)
    version = _downgrade(delta_log, lock, feature, protect=protect, truncate=False)
    if protect:
        _checkpoint_and_clean(delta_log, version)  # a protected checkpoint
    log.info("dropped table feature %s of %s at version %d", feature, delta_log.table_uri, version)
    return version
