"""Operations: what a commit did, with Delta's names and parameters.

Each operation knows its name as Delta writes it in ``commitInfo.operation`` (``WRITE``,
``STREAMING UPDATE``, ``DELETE``, ...), its parameters (``commitInfo.operationParameters``,
written as Delta's ``JsonMapSerializer`` writes its ``jsonEncodedValues``: a string, boolean or
number as that JSON value, a list or map as a JSON string holding its JSON),
the metrics it reports (``operation_metrics``: Delta's ``DeltaOperationMetrics`` set for
it, :mod:`~deltalog.txn.commit.operation_metrics`) and whether it changes data (which
decides, under ``WriteSerializable``, whether a commit of only ``dataChange=false`` actions
may downgrade to snapshot isolation).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from deltalog.txn.commit import operation_metrics as metric_sets
from deltalog.txn.commit.operation_metrics import drop_unknown_row_metrics
from deltalog.txn.protocol.identity import IDENTITY_COMMITINFO_TAG
from deltalog.txn.protocol.properties import TableProperties

__all__ = [
    "AddColumns",
    "AddConstraint",
    "AddDeletionVectorsTombstones",
    "ChangeColumn",
    "Clone",
    "Convert",
    "CreateTable",
    "Delete",
    "DomainMetadataCleanup",
    "DropConstraint",
    "DropFeatureColumnMetadata",
    "DropTableFeature",
    "EmptyCommit",
    "ManualUpdate",
    "Merge",
    "Operation",
    "Optimize",
    "RemoveColumnMapping",
    "Reorg",
    "ReplaceTable",
    "Restore",
    "RowTrackingBackfill",
    "RowTrackingUnBackfill",
    "SetTableProperties",
    "StreamingUpdate",
    "Truncate",
    "UnsetTableProperties",
    "Update",
    "UpgradeProtocol",
    "VacuumEnd",
    "VacuumStart",
    "Write",
]


#: A parameter value as it stands in ``commitInfo.operationParameters``
ParameterValue = str | bool | int | float | None


def _encode(value: Any) -> ParameterValue:
    """Delta's ``JsonUtils.toJson(value)`` written raw: a string, boolean, number or null is
    that JSON value; a list or map (which Delta JSON-encodes itself) a string of its JSON."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, separators=(",", ":"))


#: Delta's ``DeltaCommitTag.RowTrackingEnablementOnlyTag``
ROW_TRACKING_ENABLEMENT_ONLY_TAG = "rowTrackingEnablementOnly"


@dataclass(frozen=True)
class Operation:
    """Base class: a named operation with parameters."""

    name: ClassVar[str] = "Manual Update"
    changes_data: ClassVar[bool] = False
    #: Delta's ``isInPlaceFileMetadataUpdate``: the operation re-adds files as they are, with
    #: their deletion vectors, even where the table no longer allows new ones
    in_place_file_metadata_update: ClassVar[bool] = False
    #: Delta's ``checkAddFileWithDeletionVectorStatsAreNotTightBounds``: an add with a deletion
    #: vector must say ``tightBounds: false``; false for the operations that recommit files as
    #: they were (RESTORE, CLONE, row tracking backfills, a manual update)
    requires_wide_bounds_with_deletion_vectors: ClassVar[bool] = True
    #: Metrics the caller knows (``numDeletedRows``, ``executionTimeMs``, ...); the engine
    #: adds the file counts and sizes it sees in the commit (``numFiles``, ...), and only
    #: the names in :attr:`operation_metrics` are written.
    user_metrics: Mapping[str, str] = field(default_factory=dict, kw_only=True)
    #: parameters written as ``null`` when unset (Delta maps these ``Option`` values directly,
    #: ``"timestamp" -> timestamp``); any other ``None`` parameter is left out (``.map``-ed)
    null_parameters: ClassVar[frozenset[str]] = frozenset()

    def parameter_values(self) -> dict[str, Any]:
        """The parameters as Python values (``None`` values are left out unless named in
        :attr:`null_parameters`)."""
        return {}

    @property
    def parameters(self) -> dict[str, ParameterValue]:
        """``commitInfo.operationParameters`` as Delta writes them (see :func:`_encode`)."""
        keep = self.null_parameters
        return {k: _encode(v) for k, v in self.parameter_values().items() if v is not None or k in keep}

    @property
    def operation_metrics(self) -> frozenset[str]:
        """The names of the metrics this operation reports (Delta's ``operationMetrics``):
        none for an operation that changes no file."""
        return frozenset()

    def metrics(self) -> dict[str, str]:
        """Operation metrics known before the commit (the engine adds file counts)."""
        return dict(self.user_metrics)

    def transform_metrics(self, metrics: Mapping[str, str]) -> dict[str, str]:
        """The metrics written to ``commitInfo``: those of ``metrics`` this operation
        declares (Delta's ``transformMetrics``)."""
        names = self.operation_metrics
        return {k: v for k, v in metrics.items() if k in names}

    def commit_tags(self) -> dict[str, str]:
        """``commitInfo.tags`` the operation sets itself (Delta's ``commit(..., tags)``)."""
        return {}


@dataclass(frozen=True)
class Write(Operation):
    """``WRITE``: append or overwrite data (``mode`` is Delta's ``Append``/``Overwrite``/...)."""

    name: ClassVar[str] = "WRITE"
    changes_data: ClassVar[bool] = True
    mode: str = "Append"
    partition_by: Sequence[str] | None = None
    #: ``replaceWhere``'s predicate (Delta records nothing else here)
    predicate: str | Sequence[str] | None = None
    #: the ``replaceUsing`` option's key columns as given (Delta's ``replaceUsingCols``,
    #: recorded in parentheses: ``(a, b)``)
    replace_using_columns: str | None = None
    #: Delta's ``isDynamicPartitionOverwrite``: the write asked for the dynamic partition
    #: overwrite mode; its metrics are an overwrite's, not a replaceWhere's
    dynamic_partition_overwrite: bool = False
    #: Delta's ``canOverwriteSchema`` / ``canMergeSchema``: the write's ``overwriteSchema`` /
    #: ``mergeSchema`` was true (recorded only then, as Delta does)
    can_overwrite_schema: bool = False
    can_merge_schema: bool = False

    @property
    def operation_metrics(self) -> frozenset[str]:
        if self.predicate is not None or self.replace_using_columns is not None:
            return metric_sets.WRITE_REPLACE_WHERE
        if self.mode == "Overwrite":
            return metric_sets.WRITE | metric_sets.OVERWRITE_REMOVES
        return metric_sets.WRITE

    def transform_metrics(self, metrics: Mapping[str, str]) -> dict[str, str]:
        out = super().transform_metrics(metrics)
        if self.operation_metrics != metric_sets.WRITE_REPLACE_WHERE:
            return out
        if self.mode != "Overwrite":
            # Delta ignores replaceWhere outside an overwrite: nothing removed, and its own
            # metrics (registerInsertReplaceMetrics: numCopiedRows with numAddedChangeFiles)
            # only when the writer gives them (data columns on)
            own = {"numCopiedRows", "numAddedChangeFiles"} if "numCopiedRows" in out else set()
            return {k: v for k, v in out.items() if k in metric_sets.WRITE or k in own}
        out = drop_unknown_row_metrics(out)
        # Delta's: no row counted in written files means the row metrics are unknown
        if out.get("numOutputRows") == "0" and "numFiles" in out:
            for name in ("numDeletedRows", "numOutputRows", "numCopiedRows"):
                out.pop(name, None)
        return out

    def parameter_values(self) -> dict[str, Any]:
        predicate = self.predicate
        if predicate is not None and not isinstance(predicate, str):
            predicate = list(predicate)
        return {
            "mode": self.mode,
            "partitionBy": list(self.partition_by) if self.partition_by is not None else [],
            "predicate": predicate,
            "isDynamicPartitionOverwrite": True if self.dynamic_partition_overwrite else None,
            "canOverwriteSchema": True if self.can_overwrite_schema else None,
            "canMergeSchema": True if self.can_merge_schema else None,
            "replaceUsingCols": None if self.replace_using_columns is None else f"({self.replace_using_columns})",
        }


@dataclass(frozen=True)
class StreamingUpdate(Operation):
    """``STREAMING UPDATE``: one micro-batch of a streaming query."""

    name: ClassVar[str] = "STREAMING UPDATE"
    changes_data: ClassVar[bool] = True
    output_mode: str = "Append"
    query_id: str = ""
    epoch_id: int = 0

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.STREAMING_UPDATE

    def parameter_values(self) -> dict[str, Any]:
        # Delta's epochId.toString: a string
        return {"outputMode": self.output_mode, "queryId": self.query_id, "epochId": str(self.epoch_id)}


@dataclass(frozen=True)
class Delete(Operation):
    """``DELETE``: rows matching ``predicate`` were deleted."""

    name: ClassVar[str] = "DELETE"
    changes_data: ClassVar[bool] = True
    predicate: Sequence[str] = ()

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.DELETE

    def transform_metrics(self, metrics: Mapping[str, str]) -> dict[str, str]:
        return drop_unknown_row_metrics(super().transform_metrics(metrics))

    def parameter_values(self) -> dict[str, Any]:
        return {"predicate": list(self.predicate)}


@dataclass(frozen=True)
class Truncate(Operation):
    """``TRUNCATE``: every row was deleted."""

    name: ClassVar[str] = "TRUNCATE"
    changes_data: ClassVar[bool] = True

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.TRUNCATE


@dataclass(frozen=True)
class Update(Operation):
    """``UPDATE``: rows matching ``predicate`` were rewritten."""

    name: ClassVar[str] = "UPDATE"
    changes_data: ClassVar[bool] = True
    predicate: str | None = None

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.UPDATE

    def parameter_values(self) -> dict[str, Any]:
        return {"predicate": self.predicate}


@dataclass(frozen=True)
class Merge(Operation):
    """``MERGE``: a merge of a source into the table."""

    name: ClassVar[str] = "MERGE"
    changes_data: ClassVar[bool] = True
    predicate: str | None = None
    matched_predicates: Sequence[Mapping[str, str]] = ()
    not_matched_predicates: Sequence[Mapping[str, str]] = ()
    not_matched_by_source_predicates: Sequence[Mapping[str, str]] = ()

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.MERGE

    def parameter_values(self) -> dict[str, Any]:
        return {
            "predicate": self.predicate,
            "matchedPredicates": [dict(p) for p in self.matched_predicates],
            "notMatchedPredicates": [dict(p) for p in self.not_matched_predicates],
            "notMatchedBySourcePredicates": [dict(p) for p in self.not_matched_by_source_predicates],
        }


@dataclass(frozen=True)
class Optimize(Operation):
    """``OPTIMIZE``: files rewritten without changing data (``dataChange=false``)."""

    name: ClassVar[str] = "OPTIMIZE"
    changes_data: ClassVar[bool] = False
    predicate: Sequence[str] = ()
    z_order_by: Sequence[str] = ()
    auto: bool = False
    #: the clustering columns, when OPTIMIZE clusters a clustered table
    cluster_by: Sequence[str] | None = None
    #: ``OPTIMIZE ... FULL``: every file of a clustered table reclustered
    is_full: bool = False

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.OPTIMIZE

    def parameter_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "predicate": list(self.predicate),
            "zOrderBy": list(self.z_order_by),
            "clusterBy": list(self.cluster_by or ()),  # Delta 3.2+: always, "[]" when not clustered
            "auto": self.auto,
        }
        if self.cluster_by:
            values["isFull"] = self.is_full
        return values


@dataclass(frozen=True)
class Reorg(Operation):
    """``REORG TABLE ... APPLY (PURGE)``: files with deletion vectors rewritten without the
    deleted rows (``dataChange=false``)."""

    name: ClassVar[str] = "REORG"
    changes_data: ClassVar[bool] = False
    predicate: Sequence[str] = ()
    apply_purge: bool = True

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.OPTIMIZE

    def parameter_values(self) -> dict[str, Any]:
        return {"predicate": list(self.predicate), "applyPurge": self.apply_purge}


@dataclass(frozen=True)
class _TableDefinition(Operation):
    """What CREATE and REPLACE TABLE record: the table's description, partitioning,
    clustering columns (Delta 3.2+ records ``clusterBy`` always, ``[]`` for a table that is
    not clustered, as ``partitionBy``) and properties."""

    changes_data: ClassVar[bool] = True
    null_parameters: ClassVar[frozenset[str]] = frozenset({"description"})
    description: str | None = None
    partition_by: Sequence[str] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    #: the clustering columns of a clustered table (Delta's ``clusterBy`` parameter)
    cluster_by: Sequence[str] | None = None

    def parameter_values(self) -> dict[str, Any]:
        # in the order Delta's logs show them (its five-entry Scala map's iteration order)
        return {
            "partitionBy": list(self.partition_by),
            "clusterBy": list(self.cluster_by or ()),
            "description": self.description,
            "isManaged": "false",
            "properties": dict(self.properties),
        }


@dataclass(frozen=True)
class CreateTable(_TableDefinition):
    """``CREATE TABLE`` (or ``CREATE TABLE AS SELECT`` when ``as_select``)."""

    as_select: bool = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return "CREATE TABLE AS SELECT" if self.as_select else "CREATE TABLE"

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.WRITE if self.as_select else frozenset()


@dataclass(frozen=True)
class ReplaceTable(_TableDefinition):
    """``REPLACE TABLE`` / ``CREATE OR REPLACE TABLE``."""

    or_create: bool = False
    #: ``REPLACE TABLE ... AS SELECT``: the new data's WRITE metrics and the removed files'
    as_select: bool = False

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.WRITE | metric_sets.OVERWRITE_REMOVES if self.as_select else frozenset()

    @property
    def name(self) -> str:  # type: ignore[override]
        name = "CREATE OR REPLACE TABLE" if self.or_create else "REPLACE TABLE"
        return f"{name} AS SELECT" if self.as_select else name


@dataclass(frozen=True)
class SetTableProperties(Operation):
    """``SET TBLPROPERTIES``."""

    name: ClassVar[str] = "SET TBLPROPERTIES"
    properties: Mapping[str, str] = field(default_factory=dict)

    def parameter_values(self) -> dict[str, Any]:
        return {"properties": dict(self.properties)}

    def commit_tags(self) -> dict[str, str]:
        """Delta's ``AlterTableSetPropertiesDeltaCommand`` tags setting ``delta.enableRowTracking``
        to true alone ``rowTrackingEnablementOnly`` (``RowTrackingEnablementOnlyTag``)."""
        if len(self.properties) == 1 and TableProperties(dict(self.properties)).enable_row_tracking:
            return {ROW_TRACKING_ENABLEMENT_ONLY_TAG: "true"}
        return {}


@dataclass(frozen=True)
class UnsetTableProperties(Operation):
    """``UNSET TBLPROPERTIES``."""

    name: ClassVar[str] = "UNSET TBLPROPERTIES"
    keys: Sequence[str] = ()
    if_exists: bool = True

    def parameter_values(self) -> dict[str, Any]:
        return {"properties": list(self.keys), "ifExists": self.if_exists}


@dataclass(frozen=True)
class AddConstraint(Operation):
    """``ADD CONSTRAINT``: a CHECK constraint named ``constraint_name`` (as the user spelt it)."""

    name: ClassVar[str] = "ADD CONSTRAINT"
    constraint_name: str = ""
    expr: str = ""

    def parameter_values(self) -> dict[str, Any]:
        return {"name": self.constraint_name, "expr": self.expr}


@dataclass(frozen=True)
class DropConstraint(Operation):
    """``DROP CONSTRAINT``; ``expr`` is None when the table had no such constraint (IF EXISTS)."""

    name: ClassVar[str] = "DROP CONSTRAINT"
    constraint_name: str = ""
    expr: str | None = None

    def parameter_values(self) -> dict[str, Any]:
        if self.expr is None:
            return {"name": self.constraint_name, "existed": "false"}
        return {"name": self.constraint_name, "expr": self.expr, "existed": "true"}


@dataclass(frozen=True)
class AddColumns(Operation):
    """``ADD COLUMNS``."""

    name: ClassVar[str] = "ADD COLUMNS"
    columns: Sequence[Mapping[str, Any]] = ()

    def parameter_values(self) -> dict[str, Any]:
        return {"columns": [dict(c) for c in self.columns]}


@dataclass(frozen=True)
class ChangeColumn(Operation):
    """``CHANGE COLUMN`` (a new comment, a wider type): ``column`` is the changed field as
    Delta's ``structFieldToMap`` writes it (dotted name, type name, nullable, metadata)."""

    name: ClassVar[str] = "CHANGE COLUMN"
    column: Mapping[str, Any] = field(default_factory=dict)
    #: ``ALTER COLUMN ... SYNC IDENTITY``: an identity-only metadata update whatever it changes
    #: (Delta's ``setSyncIdentity``), tagged so concurrent writers that change no metadata commit
    sync_identity: bool = False

    def parameter_values(self) -> dict[str, Any]:
        return {"column": dict(self.column)}

    def commit_tags(self) -> dict[str, str]:
        return {IDENTITY_COMMITINFO_TAG: "true"} if self.sync_identity else {}


@dataclass(frozen=True)
class DropFeatureColumnMetadata(Operation):
    """Delta's ``UpdateColumnMetadata("DROP FEATURE", columns)``: a ``DROP FEATURE``'s
    metadata commit removing column metadata of the dropped feature (``delta.typeChanges``);
    ``columns`` are the fields as they were (``structFieldToMap``)."""

    name: ClassVar[str] = "DROP FEATURE"
    columns: Sequence[Mapping[str, Any]] = ()

    def parameter_values(self) -> dict[str, Any]:
        return {"columns": [dict(c) for c in self.columns]}


@dataclass(frozen=True)
class DropTableFeature(Operation):
    """``DROP FEATURE``: the protocol downgrade commit."""

    name: ClassVar[str] = "DROP FEATURE"
    in_place_file_metadata_update: ClassVar[bool] = True
    feature_name: str = ""
    truncate_history: bool = False

    def parameter_values(self) -> dict[str, Any]:
        return {"featureName": self.feature_name, "truncateHistory": self.truncate_history}


@dataclass(frozen=True)
class EmptyCommit(Operation):
    """A commit with no action, under which ``DROP FEATURE`` writes a barrier checkpoint."""

    name: ClassVar[str] = "Empty Commit"


@dataclass(frozen=True)
class AddDeletionVectorsTombstones(Operation):
    """``DROP FEATURE deletionVectors``: removes naming the deletion vector files still in
    the retention period, so that VACUUM of a client without deletion vectors keeps them."""

    name: ClassVar[str] = "Deletion Vector Tombstones"


@dataclass(frozen=True)
class RemoveColumnMapping(Operation):
    """``DROP FEATURE columnMapping``: every file rewritten with the logical column names,
    the column mapping metadata and properties removed (Delta's ``RemoveColumnMapping``)."""

    name: ClassVar[str] = "REMOVE COLUMN MAPPING"

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.REMOVE_COLUMN_MAPPING


@dataclass(frozen=True)
class RowTrackingBackfill(Operation):
    """One batch of enabling row tracking on an existing table: live files without a
    ``baseRowId`` re-added (``dataChange=false``) so the commit gives them row ids
    (Delta's ``RowTrackingBackfill``)."""

    name: ClassVar[str] = "ROW TRACKING BACKFILL"
    requires_wide_bounds_with_deletion_vectors: ClassVar[bool] = False
    in_place_file_metadata_update: ClassVar[bool] = True
    batch_id: int = 0

    def parameter_values(self) -> dict[str, Any]:
        return {"batchId": str(self.batch_id)}  # Delta's JsonUtils.toJson(batchId): a string


@dataclass(frozen=True)
class RowTrackingUnBackfill(Operation):
    """One batch of ``DROP FEATURE rowTracking``: live files re-added without ``baseRowId``
    and ``defaultRowCommitVersion`` (Delta's ``RowTrackingUnBackfill``)."""

    name: ClassVar[str] = "ROW TRACKING UNBACKFILL"
    requires_wide_bounds_with_deletion_vectors: ClassVar[bool] = False
    in_place_file_metadata_update: ClassVar[bool] = True
    batch_id: int = 0

    def parameter_values(self) -> dict[str, Any]:
        return {"batchId": str(self.batch_id)}  # Delta's JsonUtils.toJson(batchId): a string


@dataclass(frozen=True)
class DomainMetadataCleanup(Operation):
    """``DROP FEATURE domainMetadata``: every domain removed (Delta's ``DomainMetadataCleanup``)."""

    name: ClassVar[str] = "DOMAIN METADATA CLEANUP"
    domain_metadata_removed_count: int = 0

    def parameter_values(self) -> dict[str, Any]:
        return {"domainMetadataRemovedCount": self.domain_metadata_removed_count}


@dataclass(frozen=True)
class UpgradeProtocol(Operation):
    """``UPGRADE PROTOCOL``."""

    name: ClassVar[str] = "UPGRADE PROTOCOL"
    new_protocol: Mapping[str, Any] = field(default_factory=dict)

    def parameter_values(self) -> dict[str, Any]:
        return {"newProtocol": dict(self.new_protocol)}


@dataclass(frozen=True)
class Restore(Operation):
    """``RESTORE``: the table's files set back to those of an earlier version."""

    name: ClassVar[str] = "RESTORE"
    requires_wide_bounds_with_deletion_vectors: ClassVar[bool] = False
    changes_data: ClassVar[bool] = True
    null_parameters: ClassVar[frozenset[str]] = frozenset({"version", "timestamp"})
    version: int | None = None
    timestamp: str | None = None

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.RESTORE

    def parameter_values(self) -> dict[str, Any]:
        return {"version": self.version, "timestamp": self.timestamp}


@dataclass(frozen=True)
class VacuumStart(Operation):
    """``VACUUM START``: recorded before files are deleted."""

    name: ClassVar[str] = "VACUUM START"
    retention_check_enabled: bool = True
    specified_retention_millis: int | None = None
    default_retention_millis: int = 7 * 24 * 3600 * 1000

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.VACUUM_START

    def parameter_values(self) -> dict[str, Any]:
        return {
            "retentionCheckEnabled": self.retention_check_enabled,
            "specifiedRetentionMillis": self.specified_retention_millis,
            "defaultRetentionMillis": self.default_retention_millis,
        }


@dataclass(frozen=True)
class VacuumEnd(Operation):
    """``VACUUM END``: recorded after files were deleted."""

    name: ClassVar[str] = "VACUUM END"
    status: str = "COMPLETED"

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.VACUUM_END

    def parameter_values(self) -> dict[str, Any]:
        return {"status": self.status}


@dataclass(frozen=True)
class Clone(Operation):
    """``CLONE``: a new table made of another table's files at one version (shallow: the
    source's files by absolute path; deep: copies)."""

    name: ClassVar[str] = "CLONE"
    requires_wide_bounds_with_deletion_vectors: ClassVar[bool] = False
    changes_data: ClassVar[bool] = True
    source: str = ""
    source_version: int = -1

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.CLONE

    def parameter_values(self) -> dict[str, Any]:
        return {"source": self.source, "sourceVersion": self.source_version}


@dataclass(frozen=True)
class Convert(Operation):
    """``CONVERT``: an existing Parquet directory became a Delta table."""

    name: ClassVar[str] = "CONVERT"
    changes_data: ClassVar[bool] = True
    num_files: int = 0
    partition_by: Sequence[str] = ()
    collect_stats: bool = False
    source_format: str = "parquet"

    @property
    def operation_metrics(self) -> frozenset[str]:
        return metric_sets.CONVERT

    def parameter_values(self) -> dict[str, Any]:
        return {
            "numFiles": self.num_files,
            "partitionedBy": list(self.partition_by),
            "collectStats": self.collect_stats,
            "sourceFormat": self.source_format,
        }

    def metrics(self) -> dict[str, str]:
        return {"numConvertedFiles": str(self.num_files), **self.user_metrics}


@dataclass(frozen=True)
class ManualUpdate(Operation):
    """``Manual Update``: a commit made directly through the API. As in Delta, it does
    not count as changing data (only its file actions' ``dataChange`` flags do)."""

    name: ClassVar[str] = "Manual Update"
    requires_wide_bounds_with_deletion_vectors: ClassVar[bool] = False
    changes_data: ClassVar[bool] = False
