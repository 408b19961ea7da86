"""Table features: what a protocol asks of readers and writers, and what deltalog supports.

A protocol with ``minReaderVersion`` 3 / ``minWriterVersion`` 7 lists its features
explicitly; older versions imply the *legacy* features (PROTOCOL "Table Features" and
"Writer Version Requirements"). :func:`check_read_supported` and
:func:`check_write_supported` raise :class:`~deltalog.txn.protocol.errors.UnsupportedFeatureError`
naming every feature this client cannot honour.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from deltalog.txn.protocol.actions import Metadata, Protocol
from deltalog.txn.protocol.errors import UnsupportedFeatureError

__all__ = [
    "FEATURES",
    "READ_SUPPORTED",
    "WRITE_SUPPORTED",
    "FeatureInfo",
    "active_legacy_writer_features",
    "check_read_supported",
    "check_write_supported",
    "protocol_features",
    "supported_feature_names",
]

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7


@dataclass(frozen=True)
class FeatureInfo:
    name: str
    reader_writer: bool  # listed in readerFeatures too
    legacy_reader: int | None  # reader version that implies it (legacy protocols)
    legacy_writer: int | None  # writer version that implies it
    read: str  # what deltalog does on read
    write: str  # what deltalog does on write

    @property
    def kind(self) -> str:
        return "reader+writer" if self.reader_writer else "writer"


FEATURES: dict[str, FeatureInfo] = {
    f.name: f
    for f in (
        FeatureInfo(
            "appendOnly",
            False,
            None,
            2,
            "nothing to do",
            "supported: `snap.properties.append_only`; the engine refuses removes with dataChange=true",
        ),
        FeatureInfo(
            "invariants",
            False,
            None,
            2,
            "nothing to do",
            "supported: `deltalog.txn.protocol.constraints.table_constraints` lists them; the engine refuses "
            "data commits whose writer did not check them (`txn.mark_constraints_checked()`)",
        ),
        FeatureInfo(
            "checkConstraints",
            False,
            None,
            3,
            "nothing to do",
            "supported: `deltalog.txn.protocol.constraints.table_constraints` lists them; the engine refuses "
            "data commits whose writer did not check them (`txn.mark_constraints_checked()`)",
        ),
        FeatureInfo(
            "changeDataFeed",
            False,
            None,
            4,
            "nothing to do (cdc actions are not state)",
            "supported: `snap.properties.enable_change_data_feed`; writers add `cdc` files",
        ),
        FeatureInfo(
            "generatedColumns",
            False,
            None,
            4,
            "nothing to do",
            "supported: computed when the data lacks the column, checked (`<=>`) when it has it "
            "(`deltalog.txn.protocol.generated_columns`); expressions outside deltalog's SQL subset are refused; "
            "the engine refuses data commits whose writer did not declare it (`txn.mark_constraints_checked()`)",
        ),
        FeatureInfo(
            "columnMapping",
            True,
            2,
            5,
            "supported: physical names exposed (`deltalog.txn.protocol.column_mapping`)",
            "supported: ids and physical names assigned on commit, files written with physical names and "
            "Parquet field ids (`deltalog.txn.protocol.column_mapping`)",
        ),
        FeatureInfo(
            "identityColumns",
            False,
            None,
            6,
            "nothing to do",
            "supported: values generated per task range, high-water mark moved on commit, explicit values "
            "refused for GENERATED ALWAYS (`deltalog.txn.protocol.identity`)",
        ),
        FeatureInfo(
            "deletionVectors",
            True,
            None,
            None,
            "supported: descriptors parsed, files keyed by path "
            "and DV id, bitmaps decoded (`deltalog.txn.log.deletion_vectors`)",
            "supported: DML marks rows in new DVs (`deltalog.txn.log.deletion_vector_writer`), "
            "OPTIMIZE/REORG PURGE rewrites them away",
        ),
        FeatureInfo(
            "timestampNtz",
            True,
            None,
            None,
            "supported: `timestamp_ntz` <-> Arrow timestamp without time zone",
            "supported",
        ),
        FeatureInfo(
            "v2Checkpoint",
            True,
            None,
            None,
            "supported: UUID-named JSON/Parquet checkpoints with sidecars",
            "supported: checkpoints carry `checkpointMetadata` (V2 spec, classic name)",
        ),
        FeatureInfo(
            "domainMetadata",
            False,
            None,
            None,
            "supported: `snap.domain_metadata`",
            "supported: `domainMetadata` actions committed and checkpointed",
        ),
        FeatureInfo(
            "typeWidening",
            True,
            None,
            None,
            "supported: files written before a widening are cast to the table's type",
            "supported: `txn.commands.type_widening.alter_column_type` (`DeltaTable.alterColumnType`) "
            "and mergeSchema writes widen columns, recording `delta.typeChanges`",
        ),
        FeatureInfo(
            "typeWidening-preview",
            True,
            None,
            None,
            "supported (as typeWidening)",
            "supported (as typeWidening)",
        ),
        FeatureInfo(
            "variantType",
            True,
            None,
            None,
            "supported: `variant` <-> Arrow struct<value, metadata>",
            "supported",
        ),
        FeatureInfo(
            "variantType-preview",
            True,
            None,
            None,
            "supported (as variantType)",
            "supported (as variantType)",
        ),
        FeatureInfo(
            "vacuumProtocolCheck",
            True,
            None,
            None,
            "nothing to do",
            "supported: vacuum and cleanup check the protocol first",
        ),
        FeatureInfo(
            "inCommitTimestamp",
            False,
            None,
            None,
            "supported: snapshot timestamps, history and time travel use `commitInfo.inCommitTimestamp`",
            "supported: the engine writes commitInfo first with a monotonic `inCommitTimestamp`, "
            "and records the enablement version and timestamp when it is switched on",
        ),
        FeatureInfo(
            "icebergCompatV1",
            False,
            None,
            None,
            "nothing to do",
            "supported: the engine checks every commit (`deltalog.txn.protocol.iceberg_compat`); data "
            "files hold the partition columns after the data columns; no Iceberg metadata is generated",
        ),
        FeatureInfo(
            "icebergCompatV2",
            False,
            None,
            None,
            "nothing to do",
            "supported: as icebergCompatV1, plus nested ids for arrays and maps "
            "(`delta.columnMapping.nested.ids`) written as Parquet field ids",
        ),
        FeatureInfo(
            "icebergCompatV3",
            False,
            None,
            None,
            "nothing to do",
            "supported: as icebergCompatV2 with row tracking on (deletion vectors and variant allowed); "
            "the materialized row tracking columns carry Iceberg's reserved Parquet field ids",
        ),
        FeatureInfo(
            "materializePartitionColumns",
            False,
            None,
            None,
            "nothing to do",
            "supported: data files hold the partition columns after the data columns",
        ),
        FeatureInfo(
            "collations",
            False,
            None,
            None,
            "supported: Spark reads each string column with its collation; file skipping and "
            "partition pruning leave collated columns alone",
            "supported: the schema keeps each column's collation; enabled (with domainMetadata) "
            "when a collated column appears; binary statistics",
        ),
        FeatureInfo(
            "collations-preview",
            False,
            None,
            None,
            "supported (as collations)",
            "supported (as collations); the stable feature is not added to a table that has it",
        ),
        FeatureInfo(
            "rowTracking",
            False,
            None,
            None,
            "supported: `_metadata.row_id` / `row_commit_version` from `baseRowId` + row position "
            "(or the materialized column) in the Spark data source (`deltalog.txn.protocol.row_tracking`)",
            "supported: every add gets `baseRowId` above the high-water mark (domain `delta.rowTracking`, "
            "reassigned on a conflict retry) and `defaultRowCommitVersion`",
        ),
        FeatureInfo(
            "clustering",
            False,
            None,
            None,
            "nothing to do",
            "supported: `delta.clustering` domain (`txn.commands.clustering`); OPTIMIZE orders rows "
            "along a Hilbert curve of the clustering columns; appends are not clustered",
        ),
        FeatureInfo(
            "allowColumnDefaults",
            False,
            None,
            None,
            "nothing to do",
            "supported: `CURRENT_DEFAULT` filled in when the data lacks the column "
            "(`deltalog.txn.protocol.column_defaults`)",
        ),
        FeatureInfo(
            "checkpointProtection",
            False,
            None,
            None,
            "nothing to do",
            "supported: checkpoints before `delta.requireCheckpointProtectionBeforeVersion` are removed only "
            "with the commits behind them, and written only for versions whose protocol deltalog can write "
            "(`deltalog.txn.protocol.checkpoint_protection`); `DROP FEATURE` adds it",
        ),
        FeatureInfo(
            "variantShredding",
            True,
            None,
            None,
            "supported: shredded variant columns (`typed_value`) are rebuilt into the variant binary "
            "(`deltalog.txn.log.variant_shredding`); a layout that cannot be rebuilt is refused by name",
            "supported: Spark's native writer shreds as Delta does when `delta.enableVariantShredding` is on; "
            "the Python writer writes unshredded variants (the protocol allows both in one table)",
        ),
        FeatureInfo(
            "variantShredding-preview",
            True,
            None,
            None,
            "supported (as variantShredding)",
            "supported (as variantShredding); added by `delta.enableVariantShredding` (Delta's default)",
        ),
        FeatureInfo("catalogManaged", True, None, None, "refused", "refused"),
        FeatureInfo("catalogOwned-preview", True, None, None, "refused", "refused"),
        FeatureInfo("coordinatedCommits-preview", False, None, None, "refused", "refused"),
    )
}

#: Reader features deltalog can read.
READ_SUPPORTED: frozenset[str] = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
        "vacuumProtocolCheck",
        "collations",
    }
)

#: Writer features whose requirements deltalog honours (the engine may extend this set
#: when it implements more, e.g. ``inCommitTimestamp``).
WRITE_SUPPORTED: set[str] = {
    "appendOnly",
    "columnMapping",
    "allowColumnDefaults",
    "generatedColumns",
    "identityColumns",
    "inCommitTimestamp",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "deletionVectors",
    "timestampNtz",
    "v2Checkpoint",
    "domainMetadata",
    "rowTracking",
    "clustering",
    "typeWidening",
    "typeWidening-preview",
    "variantType",
    "variantType-preview",
    "variantShredding",
    "variantShredding-preview",
    "vacuumProtocolCheck",
    "checkpointProtection",
    "icebergCompatV1",
    "icebergCompatV2",
    "icebergCompatV3",
    "materializePartitionColumns",
    "collations",
    "collations-preview",
}


def protocol_features(protocol: Protocol) -> tuple[frozenset[str], frozenset[str]]:
    """(reader features, writer features) the protocol enables, implied ones included."""
    reader: set[str] = set()
    writer: set[str] = set()
    for f in FEATURES.values():
        if (
            f.legacy_reader is not None
            and protocol.min_reader_version >= f.legacy_reader
            and protocol.min_reader_version < 3
        ):
            reader.add(f.name)
        if (
            f.legacy_writer is not None
            and protocol.min_writer_version >= f.legacy_writer
            and protocol.min_writer_version < 7
        ):
            writer.add(f.name)
    if protocol.min_reader_version >= 3:
        reader.update(protocol.reader_features or ())
    if protocol.min_writer_version >= 7:
        writer.update(protocol.writer_features or ())
        writer.update(protocol.reader_features or ())
    return frozenset(reader), frozenset(writer)


def supported_feature_names(protocol: Protocol) -> list[str]:
    """Every feature ``protocol`` supports, sorted, as Delta lists them (``DESCRIBE DETAIL``'s
    ``tableFeatures``: ``implicitlySupportedFeatures`` ++ ``readerAndWriterFeatureNames``). A
    legacy protocol (reader < 3, writer < 7) supports each legacy feature that both its
    versions reach, so (1, 5) lacks ``columnMapping`` (reader 2); a protocol with table
    features supports the features it lists, and no other."""
    reader, writer = protocol.min_reader_version, protocol.min_writer_version
    implicit = {
        f.name
        for f in FEATURES.values()
        if reader < 3
        and writer < 7
        and f.legacy_writer is not None
        and f.legacy_writer <= writer
        and (f.legacy_reader or 1) <= reader
    }
    return sorted(implicit | set(protocol.reader_features or ()) | set(protocol.writer_features or ()))


def _schema_has(metadata: Metadata, key: str) -> bool:
    text = metadata.schema_string
    return f'"{key}' in text


def active_legacy_writer_features(protocol: Protocol, metadata: Metadata | None) -> frozenset[str]:
    """Writer features a legacy (writer < 7) protocol implies *and* the table uses."""
    _, writer = protocol_features(protocol)
    if protocol.min_writer_version >= 7:
        return writer
    active: set[str] = set()
    for name in writer:
        if name == "generatedColumns":
            if metadata is not None and _schema_has(metadata, "delta.generationExpression"):
                active.add(name)
        elif name == "identityColumns":
            if metadata is not None and _schema_has(metadata, "delta.identity."):
                active.add(name)
        elif name == "columnMapping":
            if metadata is not None and metadata.properties.column_mapping_mode != "none":
                active.add(name)
        else:
            active.add(name)
    return frozenset(active)


def _check_versions(protocol: Protocol, operation: str, table: str) -> None:
    if protocol.min_reader_version > MAX_READER_VERSION or (
        operation == "write" and protocol.min_writer_version > MAX_WRITER_VERSION
    ):
        raise UnsupportedFeatureError(
            [f"readerVersion {protocol.min_reader_version}", f"writerVersion {protocol.min_writer_version}"],
            operation=operation,
            table=table,
            detail=f"deltalog supports reader versions up to {MAX_READER_VERSION} and writer versions "
            f"up to {MAX_WRITER_VERSION}.",
            error_class="DELTA_INVALID_PROTOCOL_VERSION",
        )


def check_read_supported(protocol: Protocol, table: str = "") -> None:
    """Raise naming the reader features (or version) this client cannot read."""
    _check_versions(protocol, "read", table)
    reader, _ = protocol_features(protocol)
    missing = sorted(reader - READ_SUPPORTED)
    if missing:
        raise UnsupportedFeatureError(missing, operation="read", table=table)


def check_write_supported(
    protocol: Protocol, metadata: Metadata | None = None, table: str = "", extra_supported: Iterable[str] = ()
) -> None:
    """Raise naming the features whose writer requirements this client cannot honour
    (reader features count too: a writer must understand everything)."""
    _check_versions(protocol, "write", table)
    reader, _ = protocol_features(protocol)
    writer = active_legacy_writer_features(protocol, metadata)
    supported = WRITE_SUPPORTED | set(extra_supported)
    missing = sorted((reader | writer) - supported)
    if missing:
        raise UnsupportedFeatureError(missing, operation="write", table=table)
