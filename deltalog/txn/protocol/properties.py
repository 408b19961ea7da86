"""Table properties (``metaData.configuration``), typed, with Delta's defaults and aliases.

This is the one reader of ``delta.*`` keys: code reads ``snapshot.properties`` (or
``TableProperties(metadata.configuration)``), never the configuration mapping. A key
Delta renamed is still read under its old name when the new one is absent (Delta's
``DeltaConfig.alternateKeys``): ``delta.enableChangeDataCapture`` for
``delta.enableChangeDataFeed``, and the ``-preview`` names Delta 3.2 wrote for in-commit
timestamps (``delta.enableInCommitTimestamps-preview``,
``delta.inCommitTimestampEnablementVersion-preview``,
``delta.inCommitTimestampEnablementTimestamp-preview``).

Properties that enter a table (CREATE, ALTER TABLE SET, a write creating a table, CLONE,
CONVERT) go through :func:`validate_table_properties` first, Delta's
``DeltaConfigs.validateConfigurations``: a ``delta.*`` key Delta knows, given in any case,
is stored under its canonical name; an unknown ``delta.*`` key is refused
(:class:`UnknownPropertyError`) unless arbitrary properties are allowed. Reading a table
never validates its keys: a key another writer stored in another case is simply not read.

Durations use Delta's ``CalendarInterval`` spelling (``"interval 1 week"``,
``"interval 30 days"``, ``"2 hours"``), parsed by :mod:`deltalog.durations`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from deltalog.durations import InvalidDurationError
from deltalog.durations import parse_interval as _parse_calendar_interval
from deltalog.txn.protocol.column_identifiers import ColumnList, parse_column_list
from deltalog.txn.protocol.errors import DeltaLogError

__all__ = [
    "ALIASES",
    "ALLOW_ARBITRARY_PROPERTIES_CONF",
    "CHECK_CONSTRAINT_PREFIX",
    "COLUMN_MAPPING_MODE",
    "DELTA_TABLE_PROPERTIES",
    "FEATURE_PROPERTY_PREFIX",
    "RANDOMIZE_FILE_PREFIXES",
    "RANDOM_PREFIX_LENGTH",
    "REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION",
    "InvalidAutoCompactTypeError",
    "InvalidPropertyError",
    "TableProperties",
    "TablePropertyValidationError",
    "UnknownPropertyError",
    "normalize_property_key",
    "parse_auto_compact",
    "parse_bool",
    "parse_interval",
    "validate_changed_property_values",
    "validate_table_properties",
]

log = logging.getLogger(__name__)

#: ``checkpointProtection``'s property (Delta's ``REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION``)
REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION = "delta.requireCheckpointProtectionBeforeVersion"
#: the column mapping mode's property, whose ``none`` (or removal) turns column mapping off
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
#: the largest column id column mapping gave out; Delta's one property users cannot set
COLUMN_MAPPING_MAX_ID = "delta.columnMapping.maxColumnId"
#: Delta's file-name prefixes instead of partition directories (deltalog reads the values
#: only to refuse a bad one, as Delta's ``DeltaConfigs.validateConfigurations``)
RANDOMIZE_FILE_PREFIXES = "delta.randomizeFilePrefixes"
RANDOM_PREFIX_LENGTH = "delta.randomPrefixLength"
#: the prefix of the CHECK constraints' properties, ``delta.constraints.<name>``
CHECK_CONSTRAINT_PREFIX = "delta.constraints."


class InvalidPropertyError(DeltaLogError, ValueError):
    """A table property has a value Delta does not accept."""


class InvalidAutoCompactTypeError(InvalidPropertyError):
    """``delta.autoOptimize.autoCompact`` (or the session's ``spark.databricks.delta.autoCompact.enabled``)
    is neither ``true`` nor ``false`` (Delta's ``DELTA_INVALID_AUTO_COMPACT_TYPE``)."""

    error_class = "DELTA_INVALID_AUTO_COMPACT_TYPE"

    def __init__(self, value: str) -> None:
        super().__init__(f"[{self.error_class}] Invalid auto-compact type: {value}. Allowed values are: (true,false).")
        self.value = value


class TablePropertyValidationError(InvalidPropertyError):
    """Table properties that must not be on together (Delta's
    ``DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED``, ``sub_class`` naming the rule):
    persistent deletion vectors and incremental symlink manifests; nothing was committed."""

    error_class = "DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED"

    def __init__(self, table: str, sub_class: str, detail: str) -> None:
        super().__init__(
            f"[{self.error_class}.{sub_class}] The validation of the properties of table {table} has been "
            f"violated: {detail} Nothing was committed."
        )
        self.sub_class = sub_class


def parse_auto_compact(value: str) -> bool:
    """Delta's ``AutoCompactType``: ``true`` turns auto compaction on, ``false`` off (any case)."""
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidAutoCompactTypeError(value)
    return lowered == "true"


class UnknownPropertyError(InvalidPropertyError):
    """A ``delta.*`` table property Delta does not know (Delta's ``DELTA_UNKNOWN_CONFIGURATION``);
    nothing was committed."""

    error_class = "DELTA_UNKNOWN_CONFIGURATION"

    def __init__(self, key: str) -> None:
        super().__init__(
            f"[{self.error_class}] Unknown configuration was specified: {key}. Check its spelling (known "
            "delta.* properties are matched in any case), or drop the delta. prefix for a property of your own; "
            f"to store it anyway set {ALLOW_ARBITRARY_PROPERTIES_CONF}=true (allow_arbitrary_properties=True). "
            "Nothing was committed."
        )
        self.key = key


#: Delta's session conf that lets unknown ``delta.*`` table properties through
ALLOW_ARBITRARY_PROPERTIES_CONF = "spark.databricks.delta.allowArbitraryProperties.enabled"
#: Delta's session conf (default true) that refuses a log retention shorter than the deleted-file retention
ENFORCE_RETENTION_COMPATIBILITY_CONF = (
    "spark.databricks.delta.vacuum.enforceDeletedFileAndLogRetentionDurationCompatibility"
)
#: ``delta.feature.<name>``: a table property that adds the feature to the protocol
FEATURE_PROPERTY_PREFIX = "delta.feature."
#: Delta's ``DELTA_UNIVERSAL_FORMAT_CONFIG_PREFIX``: any key under it is allowed (lower-cased)
_UNIVERSAL_FORMAT_CONFIG_PREFIX = "delta.universalformat.config."

#: the table properties Delta registers (``DeltaConfigs``' entries), in their canonical spelling
DELTA_TABLE_PROPERTIES = frozenset(
    f"delta.{name}"
    for name in (
        "appendOnly autoOptimize autoOptimize.autoCompact autoOptimize.optimizeWrite castIcebergTimeType "
        "checkpoint.writeStatsAsJson checkpoint.writeStatsAsStruct checkpointInterval checkpointPolicy "
        "checkpointRetentionDuration columnMapping.maxColumnId columnMapping.mode "
        "compatibility.symlinkFormatManifest.enabled coordinatedCommits.commitCoordinator-preview "
        "coordinatedCommits.commitCoordinatorConf-preview coordinatedCommits.tableConf-preview "
        "dataSkippingNumIndexedCols dataSkippingStatsColumns dataSkippingStringPrefixLength "
        "deletedFileRetentionDuration dropFeatureTruncateHistory.retentionDuration enableChangeDataCapture "
        "enableChangeDataFeed enableDeletionVectors enableExpiredLogCleanup enableFullRetentionRollback "
        "enableIcebergCompatV1 enableIcebergCompatV2 enableIcebergCompatV3 enableInCommitTimestamps "
        "enableMaterializePartitionColumnsFeature enableRowTracking enableTypeWidening enableVariantShredding "
        "ignoreIcebergBucketPartition ignoreProtocolDefaults inCommitTimestampEnablementTimestamp "
        "inCommitTimestampEnablementVersion isolationLevel logRetentionDuration minReaderVersion minWriterVersion "
        "parquet.format.version randomPrefixLength randomizeFilePrefixes redirectReaderWriter-preview "
        "redirectWriterOnly-preview requireCheckpointProtectionBeforeVersion rowTrackingSuspended "
        "sampleRetentionDuration setTransactionRetentionDuration universalFormat.enabledFormats "
        "universalFormat.iceberg.atomicConversion.supported writePartitionColumnsToParquet"
    ).split()
)
#: the ``delta.*`` keys a table property may have: Delta's, and ``delta.targetFileSize`` (a
#: Databricks property Delta OSS does not register, which deltalog's OPTIMIZE reads)
_KNOWN_BY_LOWER = {k.lower(): k for k in (*DELTA_TABLE_PROPERTIES, "delta.targetFileSize")}


class ReservedPropertyError(InvalidPropertyError):
    """A table property only Delta itself sets (``delta.columnMapping.maxColumnId``, Delta's
    ``userConfigurable = false``) was given by the user (Delta's
    ``DELTA_CANNOT_MODIFY_TABLE_PROPERTY``); nothing was committed."""

    error_class = "DELTA_CANNOT_MODIFY_TABLE_PROPERTY"

    def __init__(self, key: str) -> None:
        super().__init__(
            f"[{self.error_class}] The Delta table configuration {key} cannot be specified by the user: "
            "Delta maintains it. Leave it out; nothing was committed."
        )


#: the properties Delta sets itself and ``validateConfigurations`` refuses from users
_RESERVED = frozenset({COLUMN_MAPPING_MAX_ID})


def normalize_property_key(key: str) -> str:
    """A property key as Delta stores it (``DeltaConfigs.normalizeConfigKey``): a ``delta.*``
    key Delta knows, in any case, is its canonical name (``delta.appendonly`` ->
    ``delta.appendOnly``), ``delta.feature.<name>`` is lower-cased (feature names are
    matched in any case); any other key is kept as given."""
    lowered = key.lower()
    if lowered.startswith(FEATURE_PROPERTY_PREFIX):
        return lowered
    return _KNOWN_BY_LOWER.get(lowered, key)


def validate_table_properties(
    properties: Mapping[str, str], *, allow_arbitrary: bool = False, enforce_retention_compatibility: bool = True
) -> dict[str, str]:
    """The properties to store, as Delta's ``DeltaConfigs.validateConfigurations`` returns
    them: keys normalized (:func:`normalize_property_key`); ``delta.constraints.<name>`` kept
    as given; keys under ``delta.universalFormat.config.`` lower-cased; keys outside
    ``delta.`` kept verbatim. Any other ``delta.*`` key Delta does not know raises
    :class:`UnknownPropertyError`, unless ``allow_arbitrary`` (Delta's
    ``spark.databricks.delta.allowArbitraryProperties.enabled``) keeps it as given.
    ``delta.columnMapping.maxColumnId``, which only Delta sets, raises
    :class:`ReservedPropertyError`. Values are
    checked where they are read (:meth:`TableProperties.validate`), except that a
    ``delta.logRetentionDuration`` shorter than ``delta.deletedFileRetentionDuration`` among
    ``properties`` (the other taken at its default when absent) raises
    :class:`InvalidPropertyError`, unless ``enforce_retention_compatibility`` is false (Delta's
    ``spark.databricks.delta.vacuum.enforceDeletedFileAndLogRetentionDurationCompatibility``)."""
    out: dict[str, str] = {}
    for key, value in ((str(k), str(v)) for k, v in properties.items()):
        lowered = key.lower()
        if lowered.startswith(CHECK_CONSTRAINT_PREFIX) or not lowered.startswith("delta."):
            normalized = key
        elif lowered.startswith(FEATURE_PROPERTY_PREFIX) or lowered in _KNOWN_BY_LOWER:
            normalized = normalize_property_key(key)
        elif lowered.startswith(_UNIVERSAL_FORMAT_CONFIG_PREFIX):
            normalized = lowered
        elif allow_arbitrary:
            log.warning("setting the table property %s, which Delta does not know", key)
            normalized = key
        else:
            raise UnknownPropertyError(key)
        if normalized in _RESERVED:
            raise ReservedPropertyError(normalized)
        if not lowered.startswith("delta.") and f"delta.{lowered}" in _KNOWN_BY_LOWER:
            log.warning("the table property %s is not Delta's; for Delta's, prefix it with delta. (delta.%s)", key, key)
        out[normalized] = value
    if enforce_retention_compatibility:
        _check_retention_compatibility(out)
    return out


#: the defaults of ``delta.logRetentionDuration`` and ``delta.deletedFileRetentionDuration``
_LOG_RETENTION_DEFAULT = "interval 30 days"
_DELETED_FILE_RETENTION_DEFAULT = "interval 1 week"


def _check_retention_compatibility(properties: Mapping[str, str]) -> None:
    """Delta's ``validateTombstoneAndLogRetentionDurationCompatibility``: log files must outlive
    the tombstones they hold (only when ``properties`` sets one of the two durations)."""
    log_key, deleted_key = "delta.logRetentionDuration", "delta.deletedFileRetentionDuration"
    if log_key not in properties and deleted_key not in properties:
        return
    log_value = properties.get(log_key, _LOG_RETENTION_DEFAULT)
    deleted_value = properties.get(deleted_key, _DELETED_FILE_RETENTION_DEFAULT)
    if parse_interval(log_value, log_key) >= parse_interval(deleted_value, deleted_key):
        return
    if log_key in properties:
        message = f"{log_key}({log_value}) needs to be greater than or equal to {deleted_key}({deleted_value})"
    else:
        message = f"{deleted_key}({deleted_value}) needs to be less than or equal to {log_key}({log_value})"
    raise InvalidPropertyError(
        f"The table property {message}: log files must be kept at least as long as the files they remove; "
        "nothing was committed"
    )


#: the older names Delta still reads a property under (``DeltaConfig.alternateKeys``)
ALIASES: dict[str, tuple[str, ...]] = {
    "delta.enableChangeDataFeed": ("delta.enableChangeDataCapture",),
    "delta.enableInCommitTimestamps": ("delta.enableInCommitTimestamps-preview",),
    "delta.inCommitTimestampEnablementVersion": ("delta.inCommitTimestampEnablementVersion-preview",),
    "delta.inCommitTimestampEnablementTimestamp": ("delta.inCommitTimestampEnablementTimestamp-preview",),
}


def parse_interval(value: str, key: str = "interval") -> timedelta:
    """A table property's ``CalendarInterval`` (``"interval 7 days"``) as a timedelta;
    :class:`InvalidPropertyError` when Delta would refuse the value."""
    try:
        return _parse_calendar_interval(value, key)
    except InvalidDurationError as exc:
        raise InvalidPropertyError(str(exc)) from exc


def parse_bool(value: str, key: str) -> bool:
    lowered = value.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise InvalidPropertyError(f"{key}={value!r} must be 'true' or 'false'")


def _parse_int(value: str, key: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise InvalidPropertyError(f"{key}={value!r} must be an integer") from None


@dataclass(frozen=True)
class TableProperties:
    """Typed view of a table's configuration; every accessor applies Delta's default and
    aliases, and raises :class:`InvalidPropertyError` on a value Delta refuses."""

    configuration: Mapping[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        """The raw value of ``key`` (or of an alias of it), else ``default``."""
        for name in (key, *ALIASES.get(key, ())):
            value = self.configuration.get(name)
            if value is not None:
                return value
        return default

    def _bool(self, key: str, default: bool) -> bool:
        raw = self.get(key)
        return default if raw is None else parse_bool(raw, key)

    def _int(self, key: str) -> int | None:
        raw = self.get(key)
        return None if raw is None else _parse_int(raw, key)

    def _interval(self, key: str, default: str | None) -> timedelta | None:
        raw = self.get(key, default)
        return None if raw is None else parse_interval(raw, key)

    @property
    def checkpoint_interval(self) -> int:
        value = self._int("delta.checkpointInterval")
        if value is None:
            return 10
        if value <= 0:
            raise InvalidPropertyError(
                f"delta.checkpointInterval must be a positive integer, got {value} (it must be > 0)"
            )
        return value

    @property
    def log_retention(self) -> timedelta:
        value = self._interval("delta.logRetentionDuration", _LOG_RETENTION_DEFAULT)
        assert value is not None
        return value

    @property
    def deleted_file_retention(self) -> timedelta:
        value = self._interval("delta.deletedFileRetentionDuration", _DELETED_FILE_RETENTION_DEFAULT)
        assert value is not None
        return value

    @property
    def checkpoint_retention(self) -> timedelta:
        value = self._interval("delta.checkpointRetentionDuration", "interval 2 days")
        assert value is not None
        return value

    @property
    def set_transaction_retention(self) -> timedelta | None:
        """``delta.setTransactionRetentionDuration``; ``None`` (the default) keeps them forever."""
        return self._interval("delta.setTransactionRetentionDuration", None)

    @property
    def enable_expired_log_cleanup(self) -> bool:
        return self._bool("delta.enableExpiredLogCleanup", True)

    @property
    def randomize_file_prefixes(self) -> bool:
        return self._bool(RANDOMIZE_FILE_PREFIXES, False)

    @property
    def random_prefix_length(self) -> int:
        """``delta.randomPrefixLength`` (2 unless set), a number greater than 0 (Delta's check)."""
        raw = self.get(RANDOM_PREFIX_LENGTH)
        if raw is None:
            return 2
        try:
            value = int(raw.strip())
        except ValueError:
            value = 0
        if value <= 0:
            raise InvalidPropertyError(
                f"{RANDOM_PREFIX_LENGTH}={raw!r}: randomPrefixLength needs to be greater than 0."
            )
        return value

    @property
    def data_file_prefix_length(self) -> int:
        """Characters of the random directory new data files go under instead of partition
        directories (0: partition directories), as Delta's ``TransactionalWrite.getCommitter``:
        ``delta.randomPrefixLength`` when ``delta.randomizeFilePrefixes`` is on or columns are
        mapped."""
        if self.randomize_file_prefixes or self.column_mapping_mode != "none":
            return self.random_prefix_length
        return 0

    @property
    def append_only(self) -> bool:
        return self._bool("delta.appendOnly", False)

    @property
    def isolation_level(self) -> str:
        """``delta.isolationLevel``: ``Serializable`` (default) or ``WriteSerializable``, Delta's
        ``validTableIsolationLevels``. ``SnapshotIsolation`` is refused: it is only the level
        a commit of ``dataChange=false`` file actions is downgraded to, and as a table level
        it would switch off the check for concurrent appends into data a transaction read."""
        raw = self.get("delta.isolationLevel", "Serializable") or "Serializable"
        valid = {"serializable": "Serializable", "writeserializable": "WriteSerializable"}
        if raw.strip().lower() not in valid:
            raise InvalidPropertyError(
                f"delta.isolationLevel={raw!r} is not a table isolation level: it must be Serializable or "
                "WriteSerializable; set it to one of them (SnapshotIsolation is only chosen by the engine "
                "for commits that change no data)"
            )
        return valid[raw.strip().lower()]

    @property
    def enable_change_data_feed(self) -> bool:
        """``delta.enableChangeDataFeed`` (or its old name ``delta.enableChangeDataCapture``)."""
        return self._bool("delta.enableChangeDataFeed", False)

    @property
    def data_skipping_num_indexed_cols(self) -> int:
        value = self._int("delta.dataSkippingNumIndexedCols")
        if value is None:
            return 32
        if value < -1:
            raise InvalidPropertyError(f"delta.dataSkippingNumIndexedCols={value!r} must be >= -1")
        return value

    @property
    def data_skipping_stats_columns(self) -> ColumnList | None:
        """``delta.dataSkippingStatsColumns``: the column paths it lists, read as Delta reads
        them (a Spark SQL column list: ``a, s.b, `x.y```); ``None`` when unset. Which columns
        get statistics: :class:`~deltalog.txn.protocol.stats_columns.StatsColumns`."""
        raw = self.get("delta.dataSkippingStatsColumns")
        if raw is None:
            return None
        try:
            return parse_column_list(raw)
        except ValueError as exc:
            raise InvalidPropertyError(
                f"delta.dataSkippingStatsColumns={raw!r} is not a comma-separated list of column names: {exc}. "
                "Separate names with commas, nested fields with dots (s.x), and quote a name with spaces or "
                "other special characters in backquotes (`my column`)"
            ) from None

    @property
    def data_skipping_string_prefix_length(self) -> int | None:
        """``delta.dataSkippingStringPrefixLength``: how many characters of a string column's
        values its statistics keep (Delta's ``DATA_SKIPPING_STRING_PREFIX_LENGTH``, ``>= 0``);
        ``None`` when unset (writers then use the session's, else 32:
        :class:`~deltalog.txn.protocol.stats_columns.StatsColumns`)."""
        value = self._int("delta.dataSkippingStringPrefixLength")
        if value is not None and value < 0:
            raise InvalidPropertyError(
                f"delta.dataSkippingStringPrefixLength={value} needs to be greater or equal to zero; "
                "set it to 0 or more (unset, statistics keep 32 characters)"
            )
        return value

    @property
    def checkpoint_write_stats_as_json(self) -> bool:
        return self._bool("delta.checkpoint.writeStatsAsJson", True)

    @property
    def checkpoint_write_stats_as_struct(self) -> bool:
        """Unset: false (PROTOCOL.md's default; Delta Spark's code says true) unless
        ``writeStatsAsJson`` is false -- then true, so a checkpoint keeps the statistics in one
        form, as Delta Spark's does; only both set to false leave them out."""
        return self._bool("delta.checkpoint.writeStatsAsStruct", not self.checkpoint_write_stats_as_json)

    @property
    def checkpoint_policy(self) -> str:
        raw = (self.get("delta.checkpointPolicy") or "classic").strip().lower()
        if raw not in ("classic", "v2"):
            raise InvalidPropertyError(f"delta.checkpointPolicy={raw!r} must be 'classic' or 'v2'")
        return raw

    @property
    def column_mapping_mode(self) -> str:
        raw = (self.get("delta.columnMapping.mode") or "none").strip().lower()
        if raw not in ("none", "name", "id"):
            raise InvalidPropertyError(f"delta.columnMapping.mode={raw!r} must be none, name or id")
        return raw

    @property
    def column_mapping_max_id(self) -> int:
        return self._int(COLUMN_MAPPING_MAX_ID) or 0

    @property
    def enable_deletion_vectors(self) -> bool:
        return self._bool("delta.enableDeletionVectors", False)

    @property
    def enable_iceberg_compat_v1(self) -> bool:
        return self._bool("delta.enableIcebergCompatV1", False)

    @property
    def enable_iceberg_compat_v2(self) -> bool:
        """``delta.enableIcebergCompatV2``: IcebergCompatV2's writer requirements apply."""
        return self._bool("delta.enableIcebergCompatV2", False)

    @property
    def enable_iceberg_compat_v3(self) -> bool:
        """``delta.enableIcebergCompatV3``: IcebergCompatV3's writer requirements apply."""
        return self._bool("delta.enableIcebergCompatV3", False)

    @property
    def universal_format_enabled_formats(self) -> tuple[str, ...]:
        """``delta.universalFormat.enabledFormats``: ``iceberg`` / ``hudi``, comma-separated."""
        raw = self.get("delta.universalFormat.enabledFormats") or ""
        return tuple(f.strip() for f in raw.split(",") if f.strip())

    @property
    def iceberg_atomic_conversion_given(self) -> bool:
        """Whether ``delta.universalFormat.iceberg.atomicConversion.supported`` is set."""
        return self.get("delta.universalFormat.iceberg.atomicConversion.supported") is not None

    @property
    def column_mapping_mode_given(self) -> bool:
        """Whether ``delta.columnMapping.mode`` is set explicitly (``none`` is its default)."""
        return self.get("delta.columnMapping.mode") is not None

    @property
    def enable_materialize_partition_columns_feature(self) -> bool:
        """``delta.enableMaterializePartitionColumnsFeature``: adds ``materializePartitionColumns``."""
        return self._bool("delta.enableMaterializePartitionColumnsFeature", False)

    @property
    def write_partition_columns_to_parquet(self) -> bool | None:
        """``delta.writePartitionColumnsToParquet`` (None when unset)."""
        raw = self.get("delta.writePartitionColumnsToParquet")
        return None if raw is None else parse_bool(raw, "delta.writePartitionColumnsToParquet")

    @property
    def enable_in_commit_timestamps(self) -> bool:
        """``delta.enableInCommitTimestamps`` (or Delta 3.2's ``...-preview`` name)."""
        return self._bool("delta.enableInCommitTimestamps", False)

    @property
    def in_commit_timestamp_enablement_version(self) -> int | None:
        return self._int("delta.inCommitTimestampEnablementVersion")

    @property
    def in_commit_timestamp_enablement_timestamp(self) -> int | None:
        return self._int("delta.inCommitTimestampEnablementTimestamp")

    @property
    def enable_row_tracking(self) -> bool:
        return self._bool("delta.enableRowTracking", False)

    @property
    def enable_row_tracking_given(self) -> str | None:
        """The text of ``delta.enableRowTracking`` when the properties set it, else None."""
        return self.get("delta.enableRowTracking")

    @property
    def enable_type_widening(self) -> bool:
        return self._bool("delta.enableTypeWidening", False)

    @property
    def enable_variant_shredding(self) -> bool:
        """``delta.enableVariantShredding``: Delta's writers shred variant columns only then
        (and a table with it needs ``variantShredding-preview``)."""
        return self._bool("delta.enableVariantShredding", False)

    @property
    def require_checkpoint_protection_before_version(self) -> int:
        """``delta.requireCheckpointProtectionBeforeVersion`` (0 when unset): the version the
        ``checkpointProtection`` feature protects the checkpoints before."""
        value = self._int(REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION)
        if value is None:
            return 0
        if value < 0:
            raise InvalidPropertyError(
                f"{REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION}={value} needs to be greater or equal to zero"
            )
        return value

    @property
    def drop_feature_truncate_history_retention(self) -> timedelta:
        """``delta.dropFeatureTruncateHistory.retentionDuration`` (24 hours): the log retention
        of ``DROP FEATURE ... TRUNCATE HISTORY``."""
        value = self._interval("delta.dropFeatureTruncateHistory.retentionDuration", "interval 24 hours")
        assert value is not None
        return value

    @property
    def symlink_format_manifest_enabled(self) -> bool:
        """``delta.compatibility.symlinkFormatManifest.enabled``: keep the manifests up to date."""
        return self._bool("delta.compatibility.symlinkFormatManifest.enabled", False)

    @property
    def min_reader_version(self) -> int | None:
        """``delta.minReaderVersion``: a protocol version asked for when the table is created
        or its properties change (not kept in the configuration by Delta)."""
        return self._int("delta.minReaderVersion")

    @property
    def min_writer_version(self) -> int | None:
        return self._int("delta.minWriterVersion")

    @property
    def check_constraints(self) -> dict[str, str]:
        """``delta.constraints.<name>`` -> SQL expression (writers must enforce them). The
        prefix is matched in any case, as Delta's ``Constraints.getCheckConstraints``: a key
        another writer spelt ``DELTA.CONSTRAINTS.x`` is a constraint too (named by the whole key,
        as Delta's ``stripPrefix`` leaves it)."""
        prefix = CHECK_CONSTRAINT_PREFIX
        return {
            k[len(prefix) :] if k.startswith(prefix) else k: v
            for k, v in self.configuration.items()
            if k.lower().startswith(prefix)
        }

    @property
    def auto_compact(self) -> bool | None:
        """Delta's ``AutoCompact.getAutoCompactType`` from the table: true when the deprecated
        ``delta.autoOptimize`` is true, else ``delta.autoOptimize.autoCompact``; None when
        neither is set (auto compaction stays off unless the session turns it on)."""
        if self._bool("delta.autoOptimize", False):
            return True
        raw = self.get("delta.autoOptimize.autoCompact")
        return None if raw is None else parse_auto_compact(raw)

    @property
    def optimize_write(self) -> bool | None:
        """``delta.autoOptimize.optimizeWrite`` (Delta's ``OPTIMIZE_WRITE``); None when unset
        (optimized writes stay off unless the session or the write turns them on)."""
        raw = self.get("delta.autoOptimize.optimizeWrite")
        return None if raw is None else parse_bool(raw, "delta.autoOptimize.optimizeWrite")

    @property
    def target_file_size(self) -> int | None:
        return self._int("delta.targetFileSize")

    def validate(self) -> None:
        """Parse every known property once; raises :class:`InvalidPropertyError` on a bad one."""
        for name in (
            "checkpoint_interval",
            "log_retention",
            "deleted_file_retention",
            "checkpoint_retention",
            "set_transaction_retention",
            "enable_expired_log_cleanup",
            "append_only",
            "isolation_level",
            "enable_change_data_feed",
            "data_skipping_num_indexed_cols",
            "data_skipping_stats_columns",
            "data_skipping_string_prefix_length",
            "checkpoint_write_stats_as_json",
            "checkpoint_write_stats_as_struct",
            "checkpoint_policy",
            "column_mapping_mode",
            "enable_deletion_vectors",
            "enable_in_commit_timestamps",
            "require_checkpoint_protection_before_version",
            "randomize_file_prefixes",
            "random_prefix_length",
            "auto_compact",
            "target_file_size",
        ):
            getattr(self, name)


def validate_changed_property_values(configuration: Mapping[str, str], previous: Mapping[str, str] | None) -> None:
    """Delta's ``DeltaConfig.apply`` of each value a table is given (``validateConfigurations``
    at creation and SET TBLPROPERTIES, ``mergeGlobalConfigs`` for the session's defaults): raise
    :class:`InvalidPropertyError` for a value of ``configuration`` its property refuses. Only the
    values that differ from ``previous`` (the configuration replaced; None: a new table) are
    checked, so a value another writer left is not refused when the metadata changes otherwise."""
    before = previous or {}
    TableProperties({k: v for k, v in configuration.items() if before.get(k) != v}).validate()
