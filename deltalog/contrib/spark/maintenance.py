"""OPTIMIZE (compaction), VACUUM, RESTORE and CONVERT TO DELTA for the Spark table API.

OPTIMIZE, VACUUM and RESTORE are the txn layer's (:mod:`deltalog.txn.commands.optimize`,
:mod:`deltalog.txn.commands.vacuum`, :mod:`deltalog.txn.commands.restore`): one implementation of the
bin-packing, the retention check, the deletion (never outside the table root) and the
metrics, shared with the CLI and the Python API. This module only adapts them to
delta-spark's method names and return values, and adds the Spark configuration they read
(``spark.databricks.delta.retentionDurationCheck.enabled``).

OPTIMIZE runs as Delta's ``OptimizeExecutor`` does: the driver plans the bins (the txn
layer's bin-packing, with ``spark.databricks.delta.optimize.minFileSize`` / ``.maxFileSize``
read from the session), one Spark task per bin rewrites the bin into one file on an
executor (files read and written through the store rebuilt from its picklable spec), and
the driver commits every remove and add once with ``dataChange=false`` (as Delta's
``commitAndRetry``: a concurrent delete of a compacted file fails it, another conflict commits
the same files again; files of a run that did not commit are deleted).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.options import MAX_RECORDS_PER_FILE_CONF
from deltalog.contrib.spark.tablelog import start_transaction
from deltalog.txn.commands.optimize import ZORDER_STATS_CHECK_KEY
from deltalog.txn.commands.row_tracking_backfill import (
    DEFAULT_MAX_FILES_FACTOR,
    DEFAULT_MAX_FILES_PER_COMMIT,
    BackfillLimits,
)
from deltalog.txn.protocol.actions import AddFile

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.contrib.spark.tables import DeltaTable
    from deltalog.txn.commands.optimize import CompactionSpec
    from deltalog.txn.commands.restore import RestoreResult
    from deltalog.txn.commands.vacuum import VacuumResult
    from deltalog.txn.delta_log import DeltaLog

__all__ = [
    "ALLOW_COLUMN_MAPPING_REMOVAL_CONF",
    "DeltaOptimizeBuilder",
    "SparkBinRewriter",
    "SparkColumnMappingRemover",
    "column_mapping_removal_allowed",
    "convert_to_delta",
    "inventory_table",
    "protocol_downgrade_allowed",
    "restore",
    "vacuum",
]

log = logging.getLogger(__name__)

RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
#: commits OPTIMIZE tries while its compacted files are all still in the table (Delta: unbounded)
OPTIMIZE_ATTEMPTS = 5
#: Delta's OPTIMIZE settings: files smaller than minFileSize are compacted into bins of up
#: to maxFileSize bytes (both default to the table's ``delta.targetFileSize``, else 1 GiB).
MIN_FILE_SIZE_CONF = "spark.databricks.delta.optimize.minFileSize"
MAX_DELETED_ROWS_RATIO_CONF = "spark.databricks.delta.optimize.maxDeletedRowsRatio"
MAX_FILE_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
#: Delta's number of range ids per Z-order column.
NUM_RANGE_IDS_CONF = "spark.databricks.io.skipping.mdc.rangeId.max"
#: Delta's ``DELTA_OPTIMIZE_ZORDER_COL_STAT_CHECK``: ``false`` lets ZORDER BY name columns without statistics.
ZORDER_STATS_CHECK_CONF = ZORDER_STATS_CHECK_KEY
#: The Spark job group of OPTIMIZE's rewrite jobs (one task per bin).
OPTIMIZE_JOB_GROUP = "deltalog-optimize"


class DeltaOptimizeBuilder:
    """``table.optimize().where("day = '2024-01-01'").executeCompaction()``."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table
        self._where: list[str] = []

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Add a partition predicate; several are ANDed, as Delta's builder does."""
        self._where.append(partitionFilter)
        return self

    def executeCompaction(self) -> DataFrame:
        """Compact small files with Spark tasks (core :func:`deltalog.txn.commands.optimize.optimize`
        plans and commits); a one-row DataFrame ``(path, metrics)`` as delta-spark returns
        (``metrics``: Delta's ``OptimizeMetrics`` struct, :mod:`deltalog.contrib.spark.optimize_metrics`)."""
        return self._execute(())

    def executeZOrderBy(self, *cols: str | list[str]) -> DataFrame:
        """Z-order the selected partitions by ``cols`` (Delta's ``ZOrderClustering``), one
        Spark task per partition; same result DataFrame as :meth:`executeCompaction`."""
        names = [c for group in cols for c in ([group] if isinstance(group, str) else group)]
        if not names:
            raise DeltaAnalysisError("executeZOrderBy needs at least one column")
        return self._execute(tuple(names))

    def executePurge(self) -> DataFrame:
        """Delta's ``REORG TABLE ... [WHERE ...] APPLY (PURGE)``: every file with a deletion
        vector (in the selected partitions) is rewritten without its deleted rows by Spark
        tasks, in one ``REORG`` commit; same result DataFrame as :meth:`executeCompaction`."""
        return self._execute((), purge=True)

    def _execute(self, z_order_by: tuple[str, ...], purge: bool = False) -> DataFrame:
        from deltalog.contrib.spark.optimize_metrics import optimize_result_row, optimize_result_schema
        from deltalog.contrib.spark.optimize_where import OptimizeWhere, file_selector, optimize_where
        from deltalog.contrib.spark.options import STRING_PREFIX_LENGTH_CONF, session_string_prefix_length
        from deltalog.txn.commands.optimize import DEFAULT_NUM_RANGES, OptimizeError, optimize

        table = self._table
        spark = table._spark
        _check_clustered(table, self._where, z_order_by)
        where = optimize_where(self._where, table._log.update().metadata, spark) if self._where else OptimizeWhere(None)
        num_ranges = _size_conf(spark, NUM_RANGE_IDS_CONF) or DEFAULT_NUM_RANGES
        if num_ranges <= 1:
            raise DeltaAnalysisError(f"'{NUM_RANGE_IDS_CONF}' must be greater than 1, got {num_ranges}")
        try:
            result = optimize(
                table._log,
                where.filters,
                select_files=file_selector(spark, where),
                predicate=where.predicate,
                target_size=_size_conf(spark, MAX_FILE_SIZE_CONF),
                min_file_size=_size_conf(spark, MIN_FILE_SIZE_CONF),
                max_attempts=OPTIMIZE_ATTEMPTS,
                rewrite_bins=SparkBinRewriter(spark),
                z_order_by=z_order_by,
                check_z_order_stats=_conf_true(spark, ZORDER_STATS_CHECK_CONF, "true"),
                num_ranges=num_ranges,
                purge=purge,
                max_deleted_rows_ratio=_ratio_conf(spark, MAX_DELETED_ROWS_RATIO_CONF),
                session_prefix_length=session_string_prefix_length(spark.conf.get(STRING_PREFIX_LENGTH_CONF, None)),
            )
        except OptimizeError as exc:
            if z_order_by and "Z-Order" in str(exc):
                raise DeltaAnalysisError(str(exc)) from None
            raise
        row = optimize_result_row(result, bool(z_order_by), spark.sparkContext.defaultParallelism)
        return spark.createDataFrame([row], optimize_result_schema())


def _check_clustered(table: DeltaTable, where: Sequence[str], z_order_by: Sequence[str]) -> None:
    """Delta's ``OptimizeTableCommand``: on a table with the clustering feature, neither
    partition predicates nor ``ZORDER BY`` (both before any other check)."""
    if not (where or z_order_by) or "clustering" not in (table._log.update().protocol.writer_features or ()):
        return
    if where:
        raise DeltaAnalysisError(
            "DELTA_CLUSTERING_WITH_PARTITION_PREDICATE: OPTIMIZE command for Delta table with clustering doesn't "
            f"support partition predicates. Please remove the predicates: {' '.join(where)}."
        )
    raise DeltaAnalysisError(
        "DELTA_CLUSTERING_WITH_ZORDER_BY: OPTIMIZE command for Delta table with clustering cannot specify ZORDER "
        f"BY. Please remove ZORDER BY ({', '.join(z_order_by)})."
    )


def _number_conf(
    spark: SparkSession,
    key: str,
    parse: Callable[[str], float],
    default: float | None,
    valid: Callable[[float], bool],
    expected: str,
) -> float | None:
    """The session conf ``key`` parsed by ``parse`` (``default`` when unset or blank); a value
    that does not parse or fails ``valid`` raises :class:`DeltaAnalysisError` saying it must be
    ``expected``."""
    raw = spark.conf.get(key, None)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = parse(str(raw).strip())
    except ValueError:
        raise DeltaAnalysisError(f"{key} must be a number ({expected}), got {raw!r}") from None
    if not valid(value):
        raise DeltaAnalysisError(f"{key} must be {expected}, got {raw!r}")
    return value


def _ratio_conf(spark: SparkSession, key: str) -> float:
    from deltalog.txn.commands.optimize import DEFAULT_MAX_DELETED_ROWS_RATIO

    value = _number_conf(spark, key, float, DEFAULT_MAX_DELETED_ROWS_RATIO, lambda v: 0 <= v <= 1, "between 0 and 1")
    assert value is not None
    return value


def _size_conf(spark: SparkSession, key: str) -> int | None:
    raw = spark.conf.get(key, None)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise DeltaAnalysisError(f"{key} must be an integer, got {raw!r}") from None
    if value < 0 or (value == 0 and key == MAX_FILE_SIZE_CONF):
        raise DeltaAnalysisError(f"{key} must be {'> 0' if key == MAX_FILE_SIZE_CONF else '>= 0'}, got {value}")
    return value


def _rewrite_task(spec: CompactionSpec, item: tuple[list[str], str]) -> list[str]:
    """One Spark task: rewrite the bin (its files as action lines) into the file ``stem``."""
    from deltalog.txn.commands.optimize import rewrite_bin
    from deltalog.txn.protocol.actions import action_to_line, parse_line

    lines, stem = item
    files = [parse_line(line) for line in lines]
    added = rewrite_bin(spec, [f for f in files if isinstance(f, AddFile)], stem)
    return [action_to_line(a) for a in added]


class SparkBinRewriter:
    """A :data:`~deltalog.txn.commands.optimize.BinRewriter` running one Spark task per bin (job
    group :data:`OPTIMIZE_JOB_GROUP`). Output files are named on the driver, so a retried
    task overwrites its own file and a failed job's files are deleted by name."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        #: Spark's ``spark.sql.files.maxRecordsPerFile``: Delta's OPTIMIZE writes through Spark's
        #: file writer, which starts a new file after this many rows (zero or negative: no limit)
        limit = _number_conf(spark, MAX_RECORDS_PER_FILE_CONF, int, 0, lambda v: True, "an integer")
        self._max_records_per_file = max(0, int(limit or 0))

    def __call__(self, spec: CompactionSpec, bins: Sequence[Sequence[AddFile]]) -> list[list[AddFile]]:
        import dataclasses
        import functools
        import uuid

        from deltalog.txn.commands.optimize import discard_bin_outputs
        from deltalog.txn.protocol.actions import action_to_line, parse_line

        spec = dataclasses.replace(spec, max_records_per_file=self._max_records_per_file)
        job = uuid.uuid4()
        items = [([action_to_line(f) for f in b], f"part-{i:05d}-{job}") for i, b in enumerate(bins)]
        sc = self._spark.sparkContext
        previous = sc.getLocalProperty("spark.jobGroup.id")
        description = sc.getLocalProperty("spark.job.description")
        sc.setJobGroup(OPTIMIZE_JOB_GROUP, f"OPTIMIZE {spec.table_uri}: {len(items)} bins")
        try:
            out = sc.parallelize(items, len(items)).map(functools.partial(_rewrite_task, spec)).collect()
        except BaseException:
            discard_bin_outputs(spec, [(b, stem) for b, (_, stem) in zip(bins, items)])
            raise
        finally:
            sc.setLocalProperty("spark.jobGroup.id", previous)  # type: ignore[arg-type]
            sc.setLocalProperty("spark.job.description", description)  # type: ignore[arg-type]
        return [[a for a in map(parse_line, lines) if isinstance(a, AddFile)] for lines in out]


# -- column mapping removal -----------------------------------------------------------------

#: Delta's (internal) session conf letting ALTER TABLE SET/UNSET TBLPROPERTIES turn column
#: mapping off (default true)
ALLOW_COLUMN_MAPPING_REMOVAL_CONF = "spark.databricks.delta.columnMapping.allowRemoval"


def arbitrary_properties_allowed(spark: SparkSession) -> bool:
    """Delta's ``spark.databricks.delta.allowArbitraryProperties.enabled`` (default false):
    whether a ``delta.*`` table property Delta does not know is kept rather than refused."""
    from deltalog.txn.protocol.properties import ALLOW_ARBITRARY_PROPERTIES_CONF

    return str(spark.conf.get(ALLOW_ARBITRARY_PROPERTIES_CONF, "false")).strip().lower() == "true"


def retention_compatibility_enforced(spark: SparkSession) -> bool:
    """Delta's ``spark.databricks.delta.vacuum.enforceDeletedFileAndLogRetentionDurationCompatibility``
    (default true): whether a log retention shorter than the deleted-file retention is refused."""
    from deltalog.txn.protocol.properties import ENFORCE_RETENTION_COMPATIBILITY_CONF

    return str(spark.conf.get(ENFORCE_RETENTION_COMPATIBILITY_CONF, "true")).strip().lower() != "false"


def column_mapping_removal_allowed(spark: SparkSession) -> bool:
    """Delta's ``spark.databricks.delta.columnMapping.allowRemoval`` (default true)."""
    return str(spark.conf.get(ALLOW_COLUMN_MAPPING_REMOVAL_CONF, "true")).strip().lower() != "false"


class SparkColumnMappingRemover:
    """A :data:`~deltalog.txn.commands.alter.ColumnMappingRemover`:
    :func:`~deltalog.txn.commands.column_mapping_removal.remove_column_mapping` with the files
    rewritten by Spark tasks (:class:`SparkBinRewriter`) and the session's stats prefix length."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def __call__(self, delta_log: DeltaLog, unset_mode_property: bool = True) -> int | None:
        from deltalog.contrib.spark.options import STRING_PREFIX_LENGTH_CONF, session_string_prefix_length
        from deltalog.txn.commands.column_mapping_removal import remove_column_mapping

        prefix = session_string_prefix_length(self._spark.conf.get(STRING_PREFIX_LENGTH_CONF, None))
        return remove_column_mapping(
            delta_log,
            rewrite_bins=SparkBinRewriter(self._spark),
            session_prefix_length=prefix,
            unset_mode_property=unset_mode_property,
        )


# -- vacuum -------------------------------------------------------------------------------


def retention_check_enabled(spark: SparkSession) -> bool:
    """Delta's ``spark.databricks.delta.retentionDurationCheck.enabled`` (default true)."""
    value = spark.conf.get(RETENTION_CHECK_CONF, "true")
    return str(value).strip().lower() != "false"


#: Delta's session conf that makes VACUUM ``LITE`` unless the call says ``FULL``.
LITE_VACUUM_CONF = "spark.databricks.delta.vacuum.lite.enabled"
#: Delta's session conf: ``false`` makes VACUUM delete without its START/END commits.
VACUUM_LOGGING_CONF = "spark.databricks.delta.vacuum.logging.enabled"


def _vacuum_logging(spark: SparkSession) -> bool | None:
    """The session's :data:`VACUUM_LOGGING_CONF` (None when unset: the storage options say,
    logging by default; Delta's default logs on the file systems it knows, every cloud's)."""
    raw = spark.conf.get(VACUUM_LOGGING_CONF, None)
    if raw is None or str(raw).strip() == "":
        return None
    return str(raw).strip().lower() != "false"


def vacuum(
    spark: SparkSession,
    delta_log: DeltaLog,
    retention_hours: float | None,
    inventory: DataFrame | None = None,
    vacuum_type: str | None = None,
) -> VacuumResult:
    """Core VACUUM, with the retention check taken from the Spark configuration; with an
    ``inventory`` DataFrame (Delta's ``VACUUM ... USING INVENTORY``) instead of a listing;
    ``vacuum_type`` ``LITE`` or ``FULL`` (default: ``LITE`` when :data:`LITE_VACUUM_CONF` is on)."""
    from deltalog.txn.commands.vacuum import vacuum as core_vacuum

    if vacuum_type is None:
        vacuum_type = "LITE" if (spark.conf.get(LITE_VACUUM_CONF, "false") or "").strip().lower() == "true" else "FULL"
    if vacuum_type.upper() not in ("LITE", "FULL"):
        raise DeltaAnalysisError(f"vacuumType must be LITE or FULL, got {vacuum_type!r}")
    table = None if inventory is None else inventory_table(inventory)
    check = retention_check_enabled(spark)
    lite = vacuum_type.upper() == "LITE"
    logged = _vacuum_logging(spark)
    return core_vacuum(
        delta_log, retention_hours, enforce_retention=check, inventory=table, lite=lite, log_vacuum=logged
    )


def inventory_table(inventory: DataFrame) -> pa.Table:
    """The inventory's four columns as Arrow, checked against Delta's inventory schema
    (``path string, length long, isDir boolean, modificationTime long``; other columns are
    ignored, as in Delta)."""
    from deltalog.txn.commands.vacuum_listing import INVENTORY_COLUMNS, VacuumInventoryError

    spark_types = {"string": "string", "long": "bigint", "boolean": "boolean"}
    got = {name: kind for name, kind in inventory.dtypes if name in INVENTORY_COLUMNS}
    want = {name: spark_types[kind] for name, kind in INVENTORY_COLUMNS.items()}
    if got != want:
        raise VacuumInventoryError(
            "a VACUUM inventory needs the columns path string, length long, isDir boolean, "
            f"modificationTime long (Delta's inventory schema); got {inventory.dtypes}"
        )
    return inventory.select(*INVENTORY_COLUMNS).toArrow()


# -- restore ------------------------------------------------------------------------------

#: delta-spark's column names for RESTORE's result, and the metric each comes from.
RESTORE_COLUMNS = (
    ("table_size_after_restore", "tableSizeAfterRestore"),
    ("num_of_files_after_restore", "numOfFilesAfterRestore"),
    ("num_removed_files", "numRemovedFiles"),
    ("num_restored_files", "numRestoredFiles"),
    ("removed_files_size", "removedFilesSize"),
    ("restored_files_size", "restoredFilesSize"),
)


#: Spark's ``spark.sql.files.ignoreMissingFiles``: RESTORE re-adds vacuumed files instead of failing.
IGNORE_MISSING_FILES = "spark.sql.files.ignoreMissingFiles"
#: Delta's ``spark.databricks.delta.restore.protocolDowngradeAllowed`` (default false).
RESTORE_PROTOCOL_DOWNGRADE_ALLOWED = "spark.databricks.delta.restore.protocolDowngradeAllowed"


def _conf_true(spark: SparkSession, key: str, default: str = "false") -> bool:
    """A boolean session conf: whether it (or ``default`` when unset) is ``true``."""
    return str(spark.conf.get(key, default)).strip().lower() == "true"


def protocol_downgrade_allowed(spark: SparkSession) -> bool:
    """Delta's ``spark.databricks.delta.restore.protocolDowngradeAllowed`` (RESTORE and CLONE)."""
    return _conf_true(spark, RESTORE_PROTOCOL_DOWNGRADE_ALLOWED)


def restore(
    spark: SparkSession, delta_log: DeltaLog, version: int | None = None, timestamp: str | None = None
) -> RestoreResult:
    """Core RESTORE (one commit; refused, with nothing committed, when files were vacuumed,
    or, unless the session conf turns it off, when the version is older than
    ``delta.deletedFileRetentionDuration``, as Delta 4.1+)."""
    from deltalog.contrib.spark.time_travel import enforce_time_travel_retention
    from deltalog.txn.commands.restore import restore as core_restore

    enforce = enforce_time_travel_retention(spark)
    return core_restore(
        delta_log,
        version=version,
        timestamp=timestamp,
        enforce_retention=enforce,
        ignore_missing_files=_conf_true(spark, IGNORE_MISSING_FILES),
        allow_protocol_downgrade=protocol_downgrade_allowed(spark),
    )


def restore_dataframe(spark: SparkSession, result: RestoreResult) -> DataFrame:
    """RESTORE's metrics as the one-row DataFrame delta-spark returns."""
    row = tuple(int(result.metrics.get(metric, "0")) for _, metric in RESTORE_COLUMNS)
    schema = ", ".join(f"{name} long" for name, _ in RESTORE_COLUMNS)
    return spark.createDataFrame([row], schema)


# -- convert ------------------------------------------------------------------------------


def _partition_schema_fields(spark: SparkSession, schema: Any) -> list[dict[str, Any]]:
    if schema is None:
        return []
    from pyspark.sql.types import StructType, _parse_datatype_string

    struct = schema if isinstance(schema, StructType) else _parse_datatype_string(schema)
    fields: list[dict[str, Any]] = [f.jsonValue() for f in struct.fields]  # type: ignore[attr-defined]
    return fields


#: Delta's ``DELTA_COLLECT_STATS``: false makes CONVERT skip statistics (with a warning)
_COLLECT_STATS_CONF = "spark.databricks.delta.stats.collect"
#: Delta's ``DELTA_CONVERT_USE_METADATA_LOG``: false lists a streaming sink's directory
#: instead of taking the files its ``_spark_metadata`` log names
_USE_METADATA_LOG_CONF = "spark.databricks.delta.convert.useMetadataLog"
#: Delta's ``DELTA_CONVERT_PARTITION_VALUES_IGNORE_CAST_FAILURE``: a partition value that is
#: not of its column's type is kept (and read as null) instead of failing CONVERT
_IGNORE_CAST_FAILURE_CONF = "spark.databricks.delta.convert.partitionValues.ignoreCastFailure"


def convert_to_delta(spark: SparkSession, delta_log: DeltaLog, partition_schema: Any) -> int:
    """CONVERT TO DELTA (:mod:`deltalog.txn.commands.convert`) with the partition schema as
    Spark gives it (a ``StructType`` or a DDL string), committed with Spark's ``commitInfo``.
    The new table takes the session's default table properties and collects statistics
    unless the session turns them off, as Delta's ``ConvertToDeltaCommand``."""
    from deltalog.txn.commands.convert import ConvertToDeltaError, commit_convert, plan_convert
    from deltalog.txn.protocol.protocol_requirements import session_table_defaults, with_table_defaults
    from deltalog.txn.protocol.schema import parse_schema

    fields = _partition_schema_fields(spark, partition_schema)
    partitions = parse_schema(json.dumps({"type": "struct", "fields": fields}))
    configuration = with_table_defaults({}, session_table_defaults(spark.conf.getAll))
    collect_stats = _conf_true(spark, _COLLECT_STATS_CONF, "true")
    if not collect_stats:
        log.warning("CONVERT TO DELTA collects no statistics: %s is false", _COLLECT_STATS_CONF)
    try:
        plan = plan_convert(
            delta_log,
            partitions,
            configuration=configuration,
            collect_stats=collect_stats,
            ignore_corrupt_files=_conf_true(spark, "spark.sql.files.ignoreCorruptFiles", "false"),
            use_metadata_log=_conf_true(spark, _USE_METADATA_LOG_CONF, "true"),
            ignore_partition_cast_failure=_conf_true(spark, _IGNORE_CAST_FAILURE_CONF, "false"),
        )
    except ConvertToDeltaError as exc:
        raise DeltaAnalysisError(str(exc)) from exc
    return commit_convert(start_transaction(delta_log), plan)


# -- row tracking backfill ------------------------------------------------------------------

#: Delta's session confs sizing a row tracking (un)backfill's batches (``DeltaSQLConf``
#: ``backfill.maxNumFiles``, falling back to ``rowTracking.backfill.maxNumFiles``, and
#: ``backfill.maxNumFilesFactor``)
BACKFILL_MAX_NUM_FILES_CONF = "spark.databricks.delta.backfill.maxNumFiles"
ROW_TRACKING_BACKFILL_MAX_NUM_FILES_CONF = "spark.databricks.delta.rowTracking.backfill.maxNumFiles"
BACKFILL_MAX_NUM_FILES_FACTOR_CONF = "spark.databricks.delta.backfill.maxNumFilesFactor"


def backfill_limits(spark: SparkSession) -> BackfillLimits:
    """The batch size of a row tracking backfill or unbackfill from the session's confs
    (Delta's defaults: 22000 files a commit, factor 3); a value that is not a positive
    number raises :class:`DeltaAnalysisError`."""

    def conf(key: str, parse: Callable[[str], float], default: float | None) -> float | None:
        return _number_conf(spark, key, parse, default, lambda v: v > 0, "positive")

    fallback = conf(ROW_TRACKING_BACKFILL_MAX_NUM_FILES_CONF, int, DEFAULT_MAX_FILES_PER_COMMIT)
    size = conf(BACKFILL_MAX_NUM_FILES_CONF, int, fallback)
    factor = conf(BACKFILL_MAX_NUM_FILES_FACTOR_CONF, float, DEFAULT_MAX_FILES_FACTOR)
    assert size is not None and factor is not None
    return BackfillLimits(max_files_per_commit=int(size), max_files_factor=factor)
