"""``DeltaTable``: the table API of delta-spark's ``delta.tables.DeltaTable``, over deltalog.

Every operation runs a deltalog transaction in the calling (driver) process and commits
with Delta's operation name and metrics; Spark moves the rows. Rewrites (delete, update,
merge) read only the files that hold matching rows, write new files and remove the old
ones in one commit.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from deltalog.contrib.spark.api_arguments import (
    check_builder_column,
    check_column_mapping,
    check_condition,
    check_source,
    check_str,
    check_type,
    column_names,
    refuse_type,
)
from deltalog.contrib.spark.dataframes import (
    FILE_COLUMN,
    files_dataframe,
    nullable_type,
    write_dataframe,
)
from deltalog.contrib.spark.dv_dml import (
    RowMarks,
    commit_with_deletion_vectors,
    dml_metrics,
    dv_packing_target_size,
    mark_deleted_rows,
    matched_row_indexes,
    writes_deletion_vectors,
)
from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.files import CDC_TYPE_COLUMN, file_actions, logical_records
from deltalog.contrib.spark.generated import check_updated_columns, recompute_generated
from deltalog.contrib.spark.idempotent import begin_idempotent_command, commit_set_transaction_only
from deltalog.contrib.spark.logical_schema import logical_struct
from deltalog.contrib.spark.option_values import delta_boolean
from deltalog.contrib.spark.options import (
    COLLECT_STATS_CONF,
    OPTIMIZE_WRITE_CONF,
    STRING_PREFIX_LENGTH_CONF,
    WriteOptions,
    session_collect_stats,
    session_string_prefix_length,
)
from deltalog.contrib.spark.resolver import Resolver, session_resolver
from deltalog.contrib.spark.row_tracking import carried_columns, tracked_columns
from deltalog.contrib.spark.table_alter import AlterTableMethods
from deltalog.contrib.spark.table_builder import (
    FORCE_PROPERTY_LOWER_CASE_CONF,
    builder_location,
    check_builder_partitioning,
    creation_step,
    location_has_files,
    refuse_creation_step,
)
from deltalog.contrib.spark.tablelog import open_log, start_transaction
from deltalog.contrib.spark.writes import commit_files, write_spec
from deltalog.txn.commit.action_checks import assert_removable
from deltalog.txn.protocol.actions import Action, AddFile
from deltalog.txn.protocol.clustering import cleared_clustering_domain, refuse_partitioning_a_clustered_table
from deltalog.txn.protocol.column_identifiers import quote_if_needed
from deltalog.txn.protocol.errors import TableNotFoundError
from deltalog.txn.protocol.properties import COLUMN_MAPPING_MAX_ID, TableProperties, validate_table_properties
from deltalog.txn.protocol.protocol_requirements import session_table_defaults, with_table_defaults

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from deltalog.contrib.spark.files import WriteSpec
    from deltalog.contrib.spark.maintenance import DeltaOptimizeBuilder
    from deltalog.contrib.spark.merge import DeltaMergeBuilder
    from deltalog.txn.commit.operations import Operation
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.constraints import Constraint

__all__ = ["DeltaTable", "DeltaTableBuilder"]

#: Delta's ``schemaNotProvidedException``: REPLACE and CREATE OR REPLACE without columns
_SCHEMA_NOT_PROVIDED = (
    "DELTA_SCHEMA_NOT_PROVIDED: Table schema is not provided. Please provide the schema (column definition) of "
    "the table when using REPLACE table and an AS SELECT query is not provided."
)

log = logging.getLogger(__name__)

ExpressionOrColumn = Union[str, "Column"]


def _col(expr: ExpressionOrColumn) -> Column:
    from pyspark.sql import functions as F

    return F.expr(expr) if isinstance(expr, str) else expr


def _describe(expr: ExpressionOrColumn | None) -> str:
    if expr is None:
        return "true"
    return expr if isinstance(expr, str) else str(expr)


def _partition_only(condition: ExpressionOrColumn, metadata: Metadata, qualifier: str | None = None) -> bool:
    """Whether ``condition`` (SQL text) is a conjunction of terms on partition columns only,
    which the partition filters evaluate exactly as Spark would. A literal NULL compared
    with ``=``/``IN`` (never true in SQL, but read as ``IS NULL`` by the filters) is not, nor
    a literal Spark casts otherwise (:func:`~deltalog.contrib.spark.predicates.exact_partition_filter`)."""
    from deltalog.contrib.spark import schemas
    from deltalog.contrib.spark.predicates import exact_partition_filter, parse_partition_predicate

    if not isinstance(condition, str) or not metadata.partition_columns:
        return False
    try:
        filters = parse_partition_predicate(condition, qualifier)
    except DeltaAnalysisError:
        return False
    types = {c.lower(): t for c, t in schemas.top_level_types(json.loads(metadata.schema_string)).items()}
    parts = {c.lower() for c in metadata.partition_columns}
    if not all(c.lower() in parts and exact_partition_filter(types.get(c.lower(), ""), op, v) for c, op, v in filters):
        return False
    unquoted = re.sub(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"", "''", condition)
    tests_removed = re.sub(r"\bis\s+(?:not\s+)?null\b", " ", unquoted, flags=re.IGNORECASE)
    return re.search(r"\bnull\b", tests_removed, flags=re.IGNORECASE) is None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _partition_filter_groups(
    condition: str, metadata: Metadata, qualifier: str | None
) -> list[list[tuple[str, str, Any]]]:
    """The partition filters of a DML ``condition``, in groups any of which a file may
    satisfy: its terms when it is a conjunction of simple terms; else the groups of its
    partition terms wherever they stand in ``AND``, ``OR`` and ``NOT`` (:func:`partition_filter_groups`);
    ``[[]]`` (every partition) when the evaluator cannot read it (data skipping may still
    skip files)."""
    from deltalog.contrib.spark.predicates import parse_partition_predicate
    from deltalog.contrib.spark.replace_where import partition_filter_groups
    from deltalog.txn.protocol.constraint_sql import UnsupportedConstraintError, strip_qualifier

    try:
        return [parse_partition_predicate(condition, qualifier)]
    except DeltaAnalysisError:
        pass
    try:
        if qualifier:  # t.p names column p of the aliased table, as the simple parser reads it
            condition = strip_qualifier(condition, qualifier, lambda a, b: a.lower() == b.lower())
        return partition_filter_groups(condition, metadata)
    except (UnsupportedConstraintError, ValueError):
        return [[]]


def _rewrite_metrics(
    removed: Sequence[AddFile], lines: Sequence[str], started: float, scanned: float
) -> tuple[dict[str, str], int | None]:
    """Delta's file, byte, deletion-vector and timing metrics of a DML commit that removes
    ``removed`` and adds the files of ``lines``; and the rows of the added data files (from
    their statistics: the rewrite job counts them as it writes)."""
    adds, cdcs = file_actions(lines)
    done = time.perf_counter()
    metrics = {
        "numRemovedFiles": str(len(removed)),
        "numAddedFiles": str(len(adds)),
        "numAddedChangeFiles": str(len(cdcs)),
        "numRemovedBytes": str(sum(f.size for f in removed)),
        "numAddedBytes": str(sum(a.size for a in adds)),
        "numDeletionVectorsAdded": "0",
        "numDeletionVectorsRemoved": str(sum(1 for f in removed if f.deletion_vector is not None)),
        "numDeletionVectorsUpdated": "0",
        "executionTimeMs": str(int((done - started) * 1000)),
        "scanTimeMs": str(int((scanned - started) * 1000)),
        "rewriteTimeMs": str(int((done - scanned) * 1000)),
    }
    return metrics, logical_records(adds)


class DeltaTable(AlterTableMethods):
    """A Delta table at a path, operated on with Spark. Build with :meth:`forPath`; ALTER
    TABLE methods (``addColumn``, ``renameColumn``, ...) come from :class:`AlterTableMethods`."""

    def __init__(
        self,
        spark: SparkSession,
        path: str,
        storage_options: Mapping[str, str] | None = None,
        logstore: str | None = None,
        alias: str | None = None,
        table_name: str | None = None,
    ) -> None:
        self._spark = spark
        self._path = path
        self._storage_options = dict(storage_options or {})
        self._logstore = logstore
        self._alias = alias
        #: the catalog's qualified name of the entry :meth:`forName` opened (DESCRIBE DETAIL's ``name``)
        self._table_name = table_name
        self._log = open_log(path, self._storage_options, logstore, spark=spark)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def forPath(
        cls,
        sparkSession: SparkSession,
        path: str,
        hadoopConf: Mapping[str, str] | None = None,
        storage_options: Mapping[str, str] | None = None,
        logstore: str | None = None,
    ) -> DeltaTable:
        """The table at ``path``; raises ``TableNotFoundError`` when there is none, with
        Delta's error class (``DELTA_MISSING_DELTA_TABLE``)."""
        from deltalog.txn.protocol.errors import TableNotFoundError

        table = cls(sparkSession, path, {**(hadoopConf or {}), **(storage_options or {})}, logstore)
        if not table._log.table_exists():
            missing = f"DELTA_MISSING_DELTA_TABLE: delta.`{path}` is not a Delta table"
            raise TableNotFoundError(table._log.table_uri, missing)
        return table

    @classmethod
    def forName(
        cls,
        sparkSession: SparkSession,
        tableOrViewName: str,
        storage_options: Mapping[str, str] | None = None,
        logstore: str | None = None,
    ) -> DeltaTable:
        """The Delta table a name gives, as Delta's ``forName``: a table of the session
        catalog whose provider is ``delta`` (a Hive metastore's or Glue's entry) or
        ``deltalog``, at its location; or ``delta.`/path```. Anything else raises
        ``DeltaAnalysisError`` (``DELTA_MISSING_DELTA_TABLE``)."""
        from deltalog.contrib.spark.catalog_tables import table_location

        found = table_location(sparkSession, tableOrViewName)
        try:
            table = cls.forPath(sparkSession, found.location, storage_options=storage_options, logstore=logstore)
        except TableNotFoundError:
            raise DeltaAnalysisError(f"DELTA_MISSING_DELTA_TABLE: {tableOrViewName} is not a Delta table.") from None
        table._table_name = found.qualified_name
        return table

    @classmethod
    def isDeltaTable(
        cls,
        sparkSession: SparkSession,
        identifier: str,
        storage_options: Mapping[str, str] | None = None,
    ) -> bool:
        return bool(open_log(identifier, storage_options).table_exists())

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession, "create")

    @classmethod
    def createIfNotExists(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession, "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """``REPLACE TABLE``: a builder whose ``execute()`` replaces the table at its location
        (new schema, partitioning and properties, every file removed, history kept)."""
        return DeltaTableBuilder(sparkSession, "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """``CREATE OR REPLACE TABLE``: replaces the table, or creates it when none is there."""
        return DeltaTableBuilder(sparkSession, "createOrReplace")

    @classmethod
    def convertToDelta(
        cls,
        sparkSession: SparkSession,
        identifier: str,
        partitionSchema: str | Any | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """Make the Parquet directory ``identifier`` (``parquet.`/path``` or a path) a Delta
        table. As Delta's, converting a Delta table (``delta.`/path```, or a directory that
        already has a table) changes nothing and returns it."""
        from deltalog.contrib.spark.catalog_tables import convert_target
        from deltalog.contrib.spark.maintenance import convert_to_delta

        provider, path = convert_target(sparkSession, identifier)
        delta_log = open_log(path, storage_options, spark=sparkSession)
        if provider == "delta" or delta_log.table_exists():
            log.info("CONVERT TO DELTA: %s is already a Delta table", delta_log.table_uri)
            return cls.forPath(sparkSession, path, storage_options=storage_options)
        convert_to_delta(sparkSession, delta_log, partitionSchema)
        return cls(sparkSession, path, storage_options)

    def alias(self, aliasName: str) -> DeltaTable:
        return DeltaTable(self._spark, self._path, self._storage_options, self._logstore, aliasName, self._table_name)

    # -- reading ------------------------------------------------------------------------

    def _reader(self) -> dict[str, str]:
        """The read options of this table (storage options and log store)."""
        from deltalog.contrib.spark.session import activate

        activate(self._spark)  # the data source is looked up in this thread's active session
        options = dict(self._storage_options)
        if self._logstore:
            options["logStore"] = self._logstore
        return options

    def toDF(self) -> DataFrame:
        """The table's current version as a DataFrame, read by Spark's own Parquet reader
        where it can (:func:`deltalog.contrib.spark.read_table`), else by the ``deltalog``
        data source.

        The DataFrame is bound to the snapshot it was planned on: commits made after
        ``toDF()`` are not in it (call ``toDF()`` again to see them), unlike
        ``spark.read.format("deltalog").load(path)``, which reads the latest version at
        each action.
        """
        from deltalog.contrib.spark.native import read_table

        return self._aliased(read_table(self._spark, self._path, **self._reader()))

    def _qualifier(self, snapshot: Snapshot) -> str | None:
        """The alias a condition's columns may be qualified with (``t.day``), for pruning;
        none when a top-level column has the alias's name (``t.x`` could be its field)."""
        if not self._alias:
            return None
        columns = {f["name"].lower() for f in json.loads(snapshot.metadata.schema_string)["fields"]}
        return None if self._alias.lower() in columns else self._alias

    def _aliased(self, df: DataFrame) -> DataFrame:
        """``df`` under the table's alias (``alias("t")``), so conditions and values may name
        its columns ``t.c``, as in Delta, whose commands resolve them over the aliased table."""
        return df.alias(self._alias) if self._alias else df

    def history(self, limit: int | None = None) -> DataFrame:
        """``DESCRIBE HISTORY``: one row per commit, newest first, with Delta's columns."""
        from deltalog.contrib.spark.describe import history_dataframe

        return history_dataframe(self._spark, self._log, limit)

    def detail(self) -> DataFrame:
        """``DESCRIBE DETAIL``: one row with Delta's columns (``name``: the catalog's qualified
        name of a table opened by :meth:`forName`, else the table's metadata name)."""
        from deltalog.contrib.spark.describe import detail_dataframe

        return detail_dataframe(self._spark, self._log, self._table_name)

    # -- helpers for rewrites ---------------------------------------------------------------

    def _write_spec(
        self,
        snapshot: Snapshot,
        data_change: bool = True,
        constraints: tuple[Constraint, ...] = (),
        metadata: Metadata | None = None,
    ) -> WriteSpec:
        prefix = None if self._spark is None else self._spark.conf.get(STRING_PREFIX_LENGTH_CONF, None)
        collect = None if self._spark is None else self._spark.conf.get(COLLECT_STATS_CONF, None)
        optimize = {} if self._spark is None else {OPTIMIZE_WRITE_CONF: self._spark.conf.get(OPTIMIZE_WRITE_CONF, None)}
        opts = WriteOptions(
            path=self._path,
            overwrite=False,
            storage_options=self._storage_options,
            data_change=data_change,
            session_string_prefix_length=session_string_prefix_length(prefix),
            session_collect_stats=session_collect_stats(collect),
            session_optimize_write=delta_boolean(
                {k: v for k, v in optimize.items() if v is not None}, OPTIMIZE_WRITE_CONF
            ),
        )
        chosen = snapshot.metadata if metadata is None else metadata
        return write_spec(opts, self._log.table_uri, self._log.store.spec(), chosen, constraints, snapshot.protocol)

    def _candidates(self, txn: OptimisticTransaction, condition: ExpressionOrColumn | None) -> list[AddFile]:
        """Files that may hold rows matching ``condition``, as Delta's ``filterFiles(condition)``.

        When ``condition`` is SQL text, its top-level ``AND`` terms on partition columns (or
        those of each disjunct of a top-level ``OR``) prune by partition values. Its skipping
        terms (``OR``, ``NOT``, ``LIKE``...:
        :func:`~deltalog.contrib.spark.data_skipping.data_skipped_files`) skip the files whose
        partition values or ``minValues``/``maxValues``/``nullCount`` statistics prove no row
        matches (the read path's rules). A Column condition skips nothing. As Delta's ``filterFiles``, the
        transaction records the partition predicate (a concurrent add into those partitions
        conflicts) and the files kept as read (a concurrent removal of one of them
        conflicts; of a file the statistics skipped, not)."""
        from deltalog.contrib.spark import schemas
        from deltalog.contrib.spark.data_skipping import data_skipped_files
        from deltalog.contrib.spark.predicates import at_session_time_zone, exact_partition_filter
        from deltalog.contrib.spark.replace_where import files_in_partition_groups

        if not isinstance(condition, str):
            return list(txn.filter_files())
        qualifier = self._qualifier(txn.snapshot)
        metadata = txn.snapshot.metadata
        types = schemas.top_level_types(json.loads(metadata.schema_string))
        time_zone = None if self._spark is None else self._spark.conf.get("spark.sql.session.timeZone")
        parts = {c.lower(): c for c in metadata.partition_columns}
        lowered = {c.lower(): t for c, t in types.items()}
        snapshot = txn.snapshot
        groups = [
            [
                (parts[c.lower()], op, v)
                for c, op, v in at_session_time_zone(filters, types, time_zone)
                if c.lower() in parts and exact_partition_filter(lowered.get(c.lower(), ""), op, v)
            ]
            for filters in _partition_filter_groups(condition, metadata, qualifier)
        ]
        return files_in_partition_groups(
            txn,
            groups,
            data_skipping=lambda files: data_skipped_files(snapshot, files, condition, qualifier, time_zone),
        )

    def _touched(self, snapshot: Snapshot, files: Sequence[AddFile], cond: Column) -> tuple[list[AddFile], int]:
        """Delta's first pass ("finding touched files"): one job reads each candidate once
        and returns the files holding a row that matches ``cond``, and how many rows match."""
        from pyspark.sql import functions as F

        if not files:
            return [], 0
        df = self._aliased(files_dataframe(self._spark, self._log, snapshot, files))
        hits = df.filter(F.coalesce(cond, F.lit(False))).groupBy(FILE_COLUMN).count().collect()
        matched = {r[0]: int(r[1]) for r in hits}
        return [f for f in files if f.path in matched], sum(matched.values())

    def _commit_rewrite(
        self, txn: OptimisticTransaction, removed: Sequence[AddFile], lines: Sequence[str], operation: Operation
    ) -> int | None:
        adds, cdcs = file_actions(lines)
        now = _now_ms()
        actions: list[Action] = [f.remove(now) for f in removed]
        actions.extend(adds)
        actions.extend(cdcs)
        # the rewritten files are deleted only when the commit certainly did not land
        return commit_files(txn, actions, operation, self._write_spec(txn.snapshot), lines)

    def _checked_spec(self, txn: OptimisticTransaction, df: DataFrame) -> WriteSpec:
        """The write spec for the rows of ``df``, with the table's constraints checked: by
        the write tasks (pyarrow evaluator; NOT NULL columns always), or here with Spark SQL
        for a constraint outside the evaluator's subset; the transaction is told they were
        checked."""
        from deltalog.contrib.spark.constraints import check_dataframe, plan_constraints
        from deltalog.txn.protocol.constraints import table_constraints

        metadata = txn.metadata
        assert metadata is not None  # the table API works on tables that exist
        constraints = plan_constraints(metadata, self._log.table_uri, spark_fallback=True)
        checks = table_constraints(metadata)
        if checks:
            if not set(checks) <= set(constraints):
                check_dataframe(df, metadata)
            txn.mark_constraints_checked()
        spec = self._write_spec(txn.snapshot, constraints=constraints, metadata=metadata)
        if spec.default_expressions:  # the tasks check generated columns
            txn.mark_constraints_checked()
        return spec

    def _refuse_unsupported(
        self,
        snapshot: Snapshot,
        condition: ExpressionOrColumn | None,
        command: str,
        values: Sequence[ExpressionOrColumn] = (),
    ) -> None:
        """Delta refuses a subquery in a DELETE or UPDATE condition, a non-deterministic
        expression in its condition or an UPDATE's ``values``, and a window, aggregate or
        generator function in those values
        (:mod:`~deltalog.contrib.spark.dml_conditions`); checked over no rows, before any job."""
        from deltalog.contrib.spark.dml_conditions import (
            refuse_non_deterministic,
            refuse_special_expressions,
            refuse_unsupported_condition,
        )

        rows = self._spark.createDataFrame([], logical_struct(snapshot.metadata.schema_string))
        rows = rows.alias(self._alias) if self._alias else rows
        expressions = [_col(v) for v in values]
        refuse_special_expressions(rows, expressions, f"{command} command")
        if condition is not None:
            refuse_unsupported_condition(rows, _col(condition), command, deterministic=False)
            expressions.insert(0, _col(condition))
        refuse_non_deterministic(rows, expressions, f"{command} command")

    def _partition_files(
        self, snapshot: Snapshot, files: list[AddFile], condition: ExpressionOrColumn | None
    ) -> list[AddFile] | None:
        """With no condition, or one Delta takes for a metadata-only DML (on partition
        columns only, or none: :mod:`~deltalog.contrib.spark.partition_conditions`), the
        pruned ``files`` whose every row matches it; None when the rows must be read."""
        from deltalog.contrib.spark.partition_conditions import files_matching, names_partition_columns_only

        if condition is None or _partition_only(condition, snapshot.metadata, self._qualifier(snapshot)):
            return files  # pruned exactly by the partition filters
        rows = self._spark.createDataFrame([], logical_struct(snapshot.metadata.schema_string))
        rows = rows.alias(self._alias) if self._alias else rows
        if not names_partition_columns_only(rows, _col(condition), snapshot.metadata.partition_columns):
            return None
        return files_matching(self._spark, snapshot, files, _col(condition), self._alias)

    def _cdf(self, snapshot: Snapshot) -> bool:
        return bool(snapshot.properties.enable_change_data_feed)

    # -- delete / update ------------------------------------------------------------------

    def delete(self, condition: ExpressionOrColumn | None = None) -> None:
        """Delete the rows matching ``condition`` (all rows when None), as Delta's
        ``DeleteCommand``: files skipped by partition values and statistics, then one job
        finds the files holding matching rows and one job rewrites only those."""
        from pyspark.sql import functions as F

        from deltalog.txn.commit.operations import Delete

        check_condition(condition)
        started = time.perf_counter()
        txn = self._start_removing()
        if begin_idempotent_command(self._spark, txn):
            return
        snapshot = txn.snapshot
        if condition is not None:
            self._refuse_unsupported(snapshot, condition, "DELETE")
        candidates = self._candidates(txn, condition)
        whole_files = self._partition_files(snapshot, candidates, condition)
        if whole_files is not None:
            self._delete_whole_files(txn, whole_files, condition, started)
            return
        assert condition is not None  # handled above
        cond = _col(condition)
        if writes_deletion_vectors(self._spark, snapshot, "delete"):
            self._delete_marking_rows(txn, candidates, condition, started)
            return
        touched, deleted = self._touched(snapshot, candidates, cond)
        scanned = time.perf_counter()
        if not _report_scan("DELETE", condition, snapshot.num_files, candidates, touched):
            _commit_no_delete(txn, condition, started, scanned)
            return
        rows = self._aliased(
            files_dataframe(self._spark, self._log, snapshot, touched, with_file=False, row_tracking=True)
        )
        if tracked_columns(snapshot) is not None:
            txn.mark_row_tracking_materialized()
        matched = F.coalesce(cond, F.lit(False))
        if self._cdf(snapshot):
            out = rows.withColumn(
                CDC_TYPE_COLUMN, F.when(matched, F.lit("delete")).otherwise(F.lit(None).cast("string"))
            )
        else:
            out = rows.filter(~matched)
        lines = write_dataframe(out, self._checked_spec(txn, out))
        metrics, copied = _rewrite_metrics(touched, lines, started, scanned)
        metrics["numDeletedRows"] = str(deleted)
        if copied is not None:  # the rewritten files hold exactly the copied rows
            metrics["numCopiedRows"] = str(copied)
        version = self._commit_rewrite(
            txn, touched, lines, Delete(predicate=[_describe(condition)], user_metrics=metrics)
        )
        log.info("DELETE %s committed version %d (%s)", _describe(condition), version, metrics)

    def _start_removing(self) -> OptimisticTransaction:
        """The transaction of a DELETE or UPDATE, on a table that is not append-only: Delta's
        ``DeleteCommand``/``UpdateCommand`` call ``assertRemovable`` first of all."""
        txn = start_transaction(self._log)
        assert_removable(txn.snapshot.metadata)
        return txn

    def _delete_whole_files(
        self,
        txn: OptimisticTransaction,
        candidates: list[AddFile],
        condition: ExpressionOrColumn | None,
        started: float,
    ) -> None:
        """Delta's metadata-only delete: the condition holds for every row of the pruned
        files, so they are removed without being read. With the change data feed on, no
        change file is written either, as in Delta: a commit without one is read as its
        removed files' rows deleted."""
        from deltalog.txn.commit.operations import Delete

        if not candidates:
            log.info("DELETE %s matched no file", _describe(condition))
            _commit_no_delete(txn, condition, started, time.perf_counter())
            return
        scanned = time.perf_counter()
        metrics, _ = _rewrite_metrics(candidates, [], started, scanned)
        metrics["numCopiedRows"] = "0"
        deleted = _deleted_rows_from_metadata(self._spark, candidates)
        if deleted is not None:
            metrics["numDeletedRows"] = str(deleted)
        predicate = [] if condition is None else [_describe(condition)]
        version = self._commit_rewrite(txn, candidates, [], Delete(predicate=predicate, user_metrics=metrics))
        log.info("DELETE %s (whole files, none read) committed version %d", _describe(condition), version)

    def _matched_rows(self, snapshot: Snapshot, files: Sequence[AddFile], cond: Column) -> RowMarks:
        """The Parquet positions of the rows of ``files`` matching ``cond``, found by Spark's
        own scan (Spark's row index) where it can read the table."""
        from deltalog.contrib.spark.native import scan_with_positions

        return matched_row_indexes(self._spark, self._log, snapshot, files, cond, scan_with_positions, self._alias)

    def _delete_marking_rows(
        self, txn: OptimisticTransaction, candidates: Sequence[AddFile], condition: ExpressionOrColumn, started: float
    ) -> None:
        """DELETE with deletion vectors (:mod:`~deltalog.contrib.spark.dv_dml`): one job finds
        the matched rows' positions; no data file is written."""
        from deltalog.txn.commit.operations import Delete

        snapshot = txn.snapshot
        marks = self._matched_rows(snapshot, candidates, _col(condition))
        scanned = time.perf_counter()
        touched = [f for f in candidates if f.path in marks]
        if not _report_scan("DELETE", condition, snapshot.num_files, candidates, touched):
            _commit_no_delete(txn, condition, started, scanned)
            return
        dv = mark_deleted_rows(self._log, txn, touched, marks, dv_packing_target_size(self._spark))
        metrics, _ = dml_metrics(dv, [], started, scanned)
        metrics["numDeletedRows"] = str(dv.num_modified_rows)
        metrics["numCopiedRows"] = "0"
        operation = Delete(predicate=[_describe(condition)], user_metrics=metrics)
        version = commit_with_deletion_vectors(txn, dv, [], operation, self._write_spec(snapshot))
        log.info("DELETE %s marked rows in deletion vectors, version %d (%s)", _describe(condition), version, metrics)

    def update(
        self,
        condition: ExpressionOrColumn | None = None,
        set: Mapping[str, ExpressionOrColumn] | None = None,
    ) -> None:
        """Set columns of the rows matching ``condition`` (all rows when None), as Delta's
        ``UpdateCommand``: files skipped by partition values and statistics, then one job
        finds the files holding matching rows (none when the condition is on partition
        columns only: every row of the pruned files matches) and one job rewrites them."""
        from pyspark.sql import functions as F

        from deltalog.txn.commit.operations import Update

        set = check_column_mapping(set, "'set'")
        check_condition(condition)
        if not set:
            raise DeltaAnalysisError("update needs set={column: expression}")
        started = time.perf_counter()
        txn = self._start_removing()
        if begin_idempotent_command(self._spark, txn):
            return
        snapshot = txn.snapshot
        schema = logical_struct(snapshot.metadata.schema_string)
        assignments = _update_assignments(schema, set, self._alias, session_resolver(self._spark))
        check_updated_columns(snapshot.metadata, assignments)
        self._refuse_unsupported(snapshot, condition, "UPDATE", list(set.values()))
        cond = _col(condition) if condition is not None else F.lit(True)
        candidates = self._candidates(txn, condition)
        updated: int | None = None
        marks: RowMarks | None = None  # with deletion vectors: the matched rows' positions
        whole_files = self._partition_files(snapshot, candidates, condition)
        if whole_files is not None:
            touched = whole_files  # every row of these files matches: no finding pass
        elif writes_deletion_vectors(self._spark, snapshot, "update"):
            marks = self._matched_rows(snapshot, candidates, cond)
            touched = [f for f in candidates if f.path in marks]
            updated = sum(len(rows) for rows in marks.values())
        else:
            touched, updated = self._touched(snapshot, candidates, cond)
        scanned = time.perf_counter()
        if not _report_scan("UPDATE", condition, snapshot.num_files, candidates, touched):
            metrics = {**_rewrite_metrics([], [], started, scanned)[0], "numUpdatedRows": "0", "numCopiedRows": "0"}
            commit_set_transaction_only(txn, Update(predicate=_describe(condition), user_metrics=metrics))
            return
        rows = self._aliased(
            files_dataframe(self._spark, self._log, snapshot, touched, with_file=False, row_tracking=True)
        )
        matched = F.coalesce(cond, F.lit(False))
        if marks is not None:
            rows = rows.filter(matched)  # the other rows stay where they are
        tracked = tracked_columns(snapshot)
        if tracked is not None:
            txn.mark_row_tracking_materialized()
        out = _updated_rows(rows, matched, assignments, schema, self._cdf(snapshot), tracked)
        out = recompute_generated(out, snapshot, assignments)
        lines = write_dataframe(out, self._checked_spec(txn, out))
        if marks is not None:
            self._commit_update_marking_rows(txn, touched, marks, lines, condition, started, scanned)
            return
        self._commit_update_rewrite(txn, touched, lines, updated, condition, started, scanned)

    def _commit_update_rewrite(
        self,
        txn: OptimisticTransaction,
        touched: Sequence[AddFile],
        lines: Sequence[str],
        updated: int | None,
        condition: ExpressionOrColumn | None,
        started: float,
        scanned: float,
    ) -> None:
        """Commit an UPDATE that rewrote the ``touched`` files as the files of ``lines``."""
        from deltalog.txn.commit.operations import Update

        metrics, written = _rewrite_metrics(touched, lines, started, scanned)
        # the rewritten files hold the updated and the copied rows
        if updated is None and written is not None:
            updated = written
        if updated is not None:
            metrics["numUpdatedRows"] = str(updated)
            if written is not None:
                metrics["numCopiedRows"] = str(written - updated)
        version = self._commit_rewrite(
            txn, touched, lines, Update(predicate=_describe(condition), user_metrics=metrics)
        )
        log.info("UPDATE %s committed version %d (%s)", _describe(condition), version, metrics)

    def _commit_update_marking_rows(
        self,
        txn: OptimisticTransaction,
        touched: Sequence[AddFile],
        marks: RowMarks,
        lines: Sequence[str],
        condition: ExpressionOrColumn | None,
        started: float,
        scanned: float,
    ) -> None:
        """Commit an UPDATE with deletion vectors: the old versions of the updated rows are
        marked deleted in their files, the new versions are the files of ``lines``."""
        from deltalog.txn.commit.operations import Update

        dv = mark_deleted_rows(self._log, txn, touched, marks, dv_packing_target_size(self._spark))
        metrics, _ = dml_metrics(dv, lines, started, scanned)
        # UpdateCommand's numTouchedFiles: every file with updated rows is removed (and
        # re-added with its new DV unless fully updated), unlike DELETE's fully removed files
        metrics["numRemovedFiles"] = str(len(dv.touched))
        metrics["numUpdatedRows"] = str(dv.num_modified_rows)
        metrics["numCopiedRows"] = "0"
        operation = Update(predicate=_describe(condition), user_metrics=metrics)
        version = commit_with_deletion_vectors(txn, dv, lines, operation, self._write_spec(txn.snapshot))
        log.info("UPDATE %s marked rows in deletion vectors, version %d (%s)", _describe(condition), version, metrics)

    # -- merge ----------------------------------------------------------------------------

    def merge(self, source: DataFrame, condition: ExpressionOrColumn) -> DeltaMergeBuilder:
        from deltalog.contrib.spark.merge import DeltaMergeBuilder

        check_source(source)
        if condition is None:
            raise DeltaAnalysisError("'condition' in merge cannot be None")
        check_condition(condition)
        return DeltaMergeBuilder(self, source, condition)

    # -- maintenance --------------------------------------------------------------------

    def optimize(self) -> DeltaOptimizeBuilder:
        from deltalog.contrib.spark.maintenance import DeltaOptimizeBuilder

        return DeltaOptimizeBuilder(self)

    def vacuum(
        self, retentionHours: float | None = None, inventory: DataFrame | None = None, vacuumType: str | None = None
    ) -> DataFrame:
        """Delete unreferenced files older than the retention (default
        ``delta.deletedFileRetentionDuration``, 7 days); as Delta's, a one-row DataFrame
        ``path``: the table's location as Hadoop's qualified ``Path`` shows it (``file:/abs/path``
        for a local table, as ``detail()``; the deleted files are logged, and counted in the
        ``VACUUM END`` commit).

        ``inventory`` (a deltalog addition, Delta's SQL ``VACUUM ... USING INVENTORY``): a
        DataFrame of ``path, length, isDir, modificationTime`` rows, such as a storage
        inventory report, used instead of listing the table's directory. ``vacuumType`` (a
        deltalog addition, Delta's SQL ``VACUUM ... LITE | FULL``): ``LITE`` finds the files in
        the log instead (see :mod:`deltalog.txn.commands.vacuum_lite`); the default is ``FULL``
        unless ``spark.databricks.delta.vacuum.lite.enabled`` is ``true``.

        A retention shorter than the table's is refused (``VacuumRetentionError``) unless
        ``spark.databricks.delta.retentionDurationCheck.enabled`` is ``false``."""
        from deltalog.contrib.spark.describe import hadoop_location
        from deltalog.contrib.spark.maintenance import vacuum

        vacuum(self._spark, self._log, retentionHours, inventory, vacuumType)
        return self._spark.createDataFrame([(hadoop_location(self._log.table_uri),)], "path string")

    def restoreToVersion(self, version: int) -> DataFrame:
        """Restore the table's files to ``version`` (one RESTORE commit); its metrics."""
        from deltalog.contrib.spark.maintenance import restore, restore_dataframe

        check_type(version, int, "version")
        return restore_dataframe(self._spark, restore(self._spark, self._log, version=version))

    def restoreToTimestamp(self, timestamp: str) -> DataFrame:
        """Restore the table to the version current at ``timestamp`` (text without an offset
        is a local time of the session time zone, as in Delta); its metrics."""
        from deltalog.contrib.spark.maintenance import restore, restore_dataframe

        check_type(timestamp, str, "timestamp")
        timestamp = self._session_timestamp(timestamp)
        return restore_dataframe(self._spark, restore(self._spark, self._log, timestamp=timestamp))

    def _session_timestamp(self, timestamp: str) -> str:
        """A time-travel timestamp as Spark casts it: text naming no offset is a local time
        of ``spark.sql.session.timeZone``."""
        from deltalog.contrib.spark.predicates import in_session_time_zone

        if not isinstance(timestamp, str):
            return timestamp
        return in_session_time_zone(timestamp, self._spark.conf.get("spark.sql.session.timeZone"))

    def clone(
        self, target: str, isShallow: bool = False, replace: bool = False, properties: Mapping[str, str] | None = None
    ) -> DeltaTable:
        """CLONE the latest version to the new table at ``target`` (shallow: the source's
        files by absolute path; deep: copies); with ``replace``, the empty Delta table there
        is replaced (Delta's ``CREATE OR REPLACE TABLE ... CLONE``); the target's ``DeltaTable``."""
        return self._clone(target, isShallow, replace, properties)

    def cloneAtVersion(
        self,
        version: int,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """CLONE ``version`` to the new table at ``target``."""
        check_type(version, int, "version")
        return self._clone(target, isShallow, replace, properties, version=version)

    def cloneAtTimestamp(
        self,
        timestamp: str,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """CLONE the version current at ``timestamp`` (a local time of the session time zone
        when it names no offset) to the new table at ``target``."""
        check_type(timestamp, str, "timestamp")
        return self._clone(target, isShallow, replace, properties, timestamp=self._session_timestamp(timestamp))

    def _clone(
        self,
        target: str,
        shallow: bool,
        replace: bool,
        properties: Mapping[str, str] | None,
        version: int | None = None,
        timestamp: str | None = None,
    ) -> DeltaTable:
        from deltalog.contrib.spark.maintenance import arbitrary_properties_allowed, protocol_downgrade_allowed
        from deltalog.contrib.spark.native import hadoop_root
        from deltalog.contrib.spark.time_travel import enforce_time_travel_retention
        from deltalog.txn.commands.clone import clone

        _check_clone_arguments(target, shallow, replace, properties)
        options = self._storage_options
        clone(
            self._log,
            open_log(target, options, self._logstore, spark=self._spark),
            version=version,
            timestamp=timestamp,
            shallow=shallow,
            replace=replace,
            properties=properties,
            enforce_retention=enforce_time_travel_retention(self._spark),
            allow_arbitrary_properties=arbitrary_properties_allowed(self._spark),
            # Delta's DeltaTableV2.name() of a table by path: delta.`<qualified path>`
            source_name=f"delta.`{hadoop_root(self._log.table_uri, self._log.store.fs_path(self._log.table_uri))}`",
            allow_protocol_downgrade=protocol_downgrade_allowed(self._spark),
        )
        return DeltaTable(self._spark, target, options, self._logstore)

    def generate(self, mode: str) -> None:
        """Delta's ``GENERATE symlink_format_manifest``: write ``_symlink_format_manifest/``
        (one ``manifest`` per partition listing the data files) of the latest version, for
        Presto, Trino and Athena; a table with deletion vectors is refused, as in Delta."""
        from deltalog.txn.log.symlink_manifest import generate_symlink_manifest

        if mode.strip().lower() != "symlink_format_manifest":
            raise DeltaAnalysisError(
                f"DELTA_MODE_NOT_SUPPORTED: specified mode {mode!r} is not supported; "
                "supported modes are: symlink_format_manifest"
            )
        snapshot = self._log.require_table()
        generate_symlink_manifest(self._log, snapshot.version, snapshot, ())

    def alterColumnType(self, column: str, newType: Any) -> None:
        """``ALTER TABLE ... ALTER COLUMN column TYPE newType``: widen a column (type widening,
        ``delta.enableTypeWidening`` must be on); see :func:`deltalog.txn.commands.type_widening.alter_column_type`."""
        from deltalog.txn.commands.type_widening import alter_column_type

        alter_column_type(self._log, column, newType)

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """delta-spark's ``upgradeTableProtocol``, which is ``ALTER TABLE SET TBLPROPERTIES``
        of ``delta.minReaderVersion`` / ``delta.minWriterVersion``: the protocol gains the
        features those versions imply and is kept normalized, so a (1, 3) table asked for
        (3, 7) stays (1, 3) (no feature needs more); versions below the table's are ignored,
        as Delta ignores them (``delta.protocol.downgradeIgnored``)."""
        from deltalog.txn.commands.alter import set_table_properties

        for name, value in (("readerVersion", readerVersion), ("writerVersion", writerVersion)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise DeltaAnalysisError(f"{name} must be an int, got {type(value).__name__}")
        before = self._log.update().protocol
        versions = {"delta.minReaderVersion": str(readerVersion), "delta.minWriterVersion": str(writerVersion)}
        set_table_properties(self._log, versions)
        after = self._log.update().protocol
        if after == before:
            log.info(
                "%s keeps protocol %s: it already supports every feature of %s", self._log.table_uri, before, versions
            )

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """delta-spark's ``dropFeatureSupport``: ``ALTER TABLE ... DROP FEATURE featureName
        [TRUNCATE HISTORY]`` (:func:`deltalog.txn.commands.drop_feature.drop_feature`; the
        files with deletion vectors, or with types narrower than the table's when dropping
        type widening, or every file when dropping column mapping, are rewritten by Spark
        tasks). The protocol is normalized."""
        from deltalog.contrib.spark.maintenance import (
            SparkBinRewriter,
            SparkColumnMappingRemover,
            backfill_limits,
            column_mapping_removal_allowed,
        )
        from deltalog.txn.commands.drop_feature import drop_feature
        from deltalog.txn.commands.optimize import optimize

        check_type(featureName, str, "featureName")
        if truncateHistory is not None:
            check_type(truncateHistory, bool, "truncateHistory")
        spark = self._spark

        def purge(log: DeltaLog, mode: str) -> object:
            if mode == "REMOVE_COLUMN_MAPPING":
                return SparkColumnMappingRemover(spark)(log)
            widening = mode == "REWRITE_TYPE_WIDENING"
            rewrite = SparkBinRewriter(spark)
            prefix = session_string_prefix_length(spark.conf.get(STRING_PREFIX_LENGTH_CONF, None))
            return optimize(
                log,
                purge=not widening,
                rewrite_type_widening=widening,
                rewrite_bins=rewrite,
                session_prefix_length=prefix,
            )

        drop_feature(
            self._log,
            featureName,
            truncate_history=bool(truncateHistory),
            purge=purge,
            row_tracking_backfill=backfill_limits(spark) if featureName == "rowTracking" else None,
            allow_column_mapping_removal=column_mapping_removal_allowed(spark),
        )


class DeltaTableBuilder:
    """``DeltaTable.create(spark).location(path).addColumn(...).partitionedBy(...).execute()``."""

    def __init__(self, spark: SparkSession | None, mode: str) -> None:
        self._spark = spark
        #: ``create``, ``createIfNotExists``, ``replace`` or ``createOrReplace``
        self._mode = mode
        self._location: str | None = None
        self._fields: list[dict[str, Any]] = []
        self._partitions: list[str] = []
        self._properties: dict[str, str] = {}
        self._comment: str | None = None
        self._name: str | None = None
        self._storage_options: dict[str, str] = {}
        self._cluster_by: list[str] = []

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        check_str(identifier, "Identifier must be str.")
        self._name = identifier
        return self

    def location(self, location: str) -> DeltaTableBuilder:
        check_str(location, "Location must be str.")
        self._location = location
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        check_str(comment, "Table comment must be str.")
        self._comment = comment
        return self

    def storageOptions(self, options: Mapping[str, str]) -> DeltaTableBuilder:
        self._storage_options.update(options)
        return self

    def addColumn(
        self,
        colName: str,
        dataType: Any,
        nullable: bool = True,
        generatedAlwaysAs: Any = None,
        generatedByDefaultAs: Any = None,
        comment: str | None = None,
        default: str | None = None,
    ) -> DeltaTableBuilder:
        """delta-spark's ``addColumn``; ``generatedAlwaysAs`` is an expression or an
        ``IdentityGenerator``, ``default`` a ``CURRENT_DEFAULT`` expression
        (:mod:`~deltalog.contrib.spark.table_builder`)."""
        from pyspark.sql.types import DataType, StructField, _parse_datatype_string

        from deltalog.contrib.spark.table_builder import char_varchar_as_string, column_metadata

        check_builder_column(colName, dataType, nullable, generatedAlwaysAs, generatedByDefaultAs)
        if comment is not None:
            check_str(comment, "Column comment must be str.")
        dtype = dataType if isinstance(dataType, DataType) else _parse_datatype_string(dataType)
        meta: dict[str, Any] = {"comment": comment} if comment else {}
        meta.update(column_metadata(colName, dtype.typeName(), generatedAlwaysAs, generatedByDefaultAs, default))
        # as the field's JSON: a collated string's collation goes into __COLLATIONS metadata
        field = StructField(colName, dtype, nullable, meta).jsonValue()
        self._fields.append(char_varchar_as_string(field, dtype))
        return self

    def addColumns(self, cols: Any) -> DeltaTableBuilder:
        """The fields of a ``StructType``, or of a list of ``StructField`` (as delta-spark)."""
        from pyspark.sql.types import StructField, StructType

        from deltalog.contrib.spark.table_builder import char_varchar_as_string

        if isinstance(cols, list):
            for c in cols:
                if type(c) is not StructField:
                    refuse_type("Column in existing schema must be StructField.", c)
            cols = StructType(cols)
        if type(cols) is not StructType:
            refuse_type("Schema must be StructType or a list of StructField.", cols)
        for f in cols.fields:
            self._fields.append(char_varchar_as_string(f.jsonValue(), f.dataType))
        return self

    def partitionedBy(self, *cols: str | list[str] | tuple[str, ...]) -> DeltaTableBuilder:
        self._partitions.extend(column_names(cols, "Partitioning column must be str."))
        return self

    def clusterBy(self, *cols: str | list[str] | tuple[str, ...]) -> DeltaTableBuilder:
        """Liquid clustering columns (``CLUSTER BY``): OPTIMIZE clusters the files by them."""
        self._cluster_by.extend(column_names(cols, "Clustering column must be str."))
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        if type(key) is not str or type(value) is not str:
            refuse_type("Key and value of property must be string.", key, value)
        self._properties[key] = value
        return self

    def execute(self) -> DeltaTable:
        """Create (or replace) the table and return it, as Delta's builder decides
        (:func:`~deltalog.contrib.spark.table_builder.creation_step`): for a table known by its
        path, ``create`` is refused when anything is there (:class:`TableAlreadyExistsError`),
        ``createIfNotExists`` returns what is there before reading the definition, ``replace``
        needs a table there, and ``createOrReplace`` of a table there only checks the
        definition against it, committing nothing (so do ``create`` and ``createOrReplace``
        with a name Spark's catalog does not have); a catalog table's name replaces."""
        from deltalog.contrib.spark.maintenance import arbitrary_properties_allowed
        from deltalog.contrib.spark.table_builder import refuse_clustering_feature_property, validate_generated_columns

        spark = self._spark
        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession()
            if spark is None:
                raise DeltaAnalysisError("no active SparkSession: pass one to DeltaTable.create(spark)")
        self._location, identified = builder_location(spark, self._name, self._location)
        delta_log = open_log(self._location, self._storage_options, spark=spark)
        exists = delta_log.table_exists()
        if not self._fields and self._mode == "createOrReplace":
            raise DeltaAnalysisError(_SCHEMA_NOT_PROVIDED)
        step = creation_step(identified, self._mode, exists, exists or location_has_files(delta_log))
        if step == "return":
            return DeltaTable.forPath(spark, self._location, storage_options=self._storage_options)
        if step == "verify":
            self._verify_existing(spark, delta_log)
            return DeltaTable(spark, self._location, self._storage_options)
        refuse_creation_step(step, delta_log.table_uri, exists)
        if not self._fields:
            if self._mode == "replace":
                raise DeltaAnalysisError(_SCHEMA_NOT_PROVIDED)
            raise DeltaAnalysisError("a table needs at least one column: use addColumn / addColumns")
        self._partitions = check_builder_partitioning(
            self._fields, self._partitions, self._cluster_by, session_resolver(spark)
        )
        validate_generated_columns(spark, self._fields)
        if str(spark.conf.get(FORCE_PROPERTY_LOWER_CASE_CONF, "false")).strip().lower() == "true":
            # Delta's builder then keeps its properties in a CaseInsensitiveMap: lower-cased keys
            self._properties = {k.lower(): v for k, v in self._properties.items()}
        self._properties = validate_table_properties(
            self._properties, allow_arbitrary=arbitrary_properties_allowed(spark)
        )
        refuse_clustering_feature_property(self._properties)
        self._commit(delta_log, replacing=exists, defaults=session_table_defaults(spark.conf.getAll))
        return DeltaTable(spark, self._location, self._storage_options)

    def _verify_existing(self, spark: SparkSession, delta_log: DeltaLog) -> None:
        """``createOrReplace`` of a path holding a table: Delta checks the definition against
        it and commits nothing (:mod:`~deltalog.contrib.spark.table_verify`)."""
        from deltalog.contrib.spark.maintenance import arbitrary_properties_allowed
        from deltalog.contrib.spark.table_verify import verify_existing_definition
        from deltalog.txn.commands.clustering import clustering_columns

        snapshot = delta_log.update()
        metadata = snapshot.metadata
        properties = validate_table_properties(self._properties, allow_arbitrary=arbitrary_properties_allowed(spark))
        existing = (metadata.schema_string, metadata.partition_columns, metadata.configuration)
        verify_existing_definition(
            delta_log.table_uri,
            (*existing, clustering_columns(snapshot)),
            self._fields,
            self._partitions,
            self._cluster_by,
            properties,
        )

    def _commit(self, delta_log: DeltaLog, replacing: bool, defaults: Mapping[str, str]) -> None:
        """CREATE TABLE, or REPLACE TABLE as Delta's ``CreateDeltaTableCommand``: the new
        metadata (a new table id; column mapping ids go on from the old table's; the session's
        ``spark.databricks.delta.properties.defaults.*`` under the builder's properties), every
        file removed, the clustering domain replaced, one commit."""
        from deltalog.txn.commands.clustering import clustering_actions
        from deltalog.txn.commit.operations import CreateTable, ReplaceTable
        from deltalog.txn.protocol.column_defaults import column_defaults

        txn = start_transaction(delta_log)
        if replacing and self._partitions:
            refuse_partitioning_a_clustered_table(txn.snapshot.protocol, self._partitions)
        metadata = self._metadata(txn.metadata if replacing else None, defaults)
        column_defaults(metadata)  # a default no write could compute is refused now
        txn.update_metadata(metadata, creating_table=True if replacing else None)  # Delta's isCreatingNewTable
        actions: list[Any] = clustering_actions(txn, self._cluster_by) if self._cluster_by else []
        definition: dict[str, Any] = {
            "description": self._comment,
            "partition_by": tuple(self._partitions),
            "properties": dict(metadata.configuration),
            "cluster_by": tuple(self._cluster_by) if self._cluster_by else None,
        }
        if replacing:
            now = _now_ms()
            actions += [f.remove(now) for f in txn.filter_files()]
            if not self._cluster_by:  # Delta's handleDomainMetadataForReplaceTable: clustered by nothing
                actions += cleared_clustering_domain(txn.snapshot.domain_metadata)
        if self._mode in ("replace", "createOrReplace"):  # the operation Delta records, table there or not
            txn.commit(actions, ReplaceTable(**definition, or_create=self._mode == "createOrReplace"))
        else:
            txn.commit(actions, CreateTable(**definition))

    def _metadata(self, old: Metadata | None, defaults: Mapping[str, str]) -> Metadata:
        """The table's metadata from the builder (``old``: the metadata REPLACE replaces;
        ``defaults``: the session's table property defaults)."""
        import uuid

        from deltalog.contrib.spark import schemas
        from deltalog.txn.protocol.actions import Metadata

        schema: dict[str, Any] = {"type": "struct", "fields": self._fields}
        config = with_table_defaults(self._properties, defaults)
        mode = TableProperties(config).column_mapping_mode
        if mode != "none":
            schema, max_id = schemas.assign_table_column_mapping(schema, mode, old)
            config[COLUMN_MAPPING_MAX_ID] = str(max_id)
        return Metadata(
            id=str(uuid.uuid4()),
            schema_string=json.dumps(schema, separators=(",", ":")),
            partition_columns=tuple(self._partitions),
            configuration=config,
            description=self._comment,
            created_time=_now_ms(),
        )


def _update_assignments(
    schema: StructType, set: Mapping[str, ExpressionOrColumn], alias: str | None, resolver: Resolver
) -> dict[str, Column]:
    """UPDATE's ``{table column: new value}``: names matched by the session's ``resolver``
    (Delta's ``conf.resolver``: case-insensitive unless ``spark.sql.caseSensitive``), a
    leading table ``alias`` (``t.v``) dropped; a nested name (``s.a``) sets that field of the
    struct column, the others kept
    (:func:`~deltalog.contrib.spark.update_expressions.assign_fields`); a column or field
    assigned twice, or with a field of it, is refused (``DELTA_CONFLICT_SET_COLUMN``)."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.update_expressions import assign_fields, refuse_conflicting_targets, split_name

    fields = {resolver.key(f.name): f for f in schema.fields}
    data_cols = [f.name for f in schema.fields]
    targets: list[tuple[tuple[str, ...], Column]] = []
    for name, expr in set.items():
        parts = [name] if resolver.key(name) in fields else split_name(name)
        if alias and len(parts) > 1 and resolver(parts[0], alias) and resolver.key(parts[0]) not in fields:
            parts = parts[1:]
        field = fields.get(resolver.key(parts[0]))
        if field is None:
            raise DeltaAnalysisError(
                f"UNRESOLVED_COLUMN.WITH_SUGGESTION: update sets {name!r}, which is not a column of the table "
                f"({data_cols}; spark.sql.caseSensitive={str(resolver.case_sensitive).lower()})"
            )
        targets.append(((field.name, *parts[1:]), _col(expr)))
    refuse_conflicting_targets([path for path, _ in targets], resolver)
    assignments = {path[0]: value for path, value in targets if len(path) == 1}
    nested: dict[str, dict[tuple[str, ...], Column]] = {}
    for path, value in targets:
        if len(path) > 1:
            nested.setdefault(path[0], {})[path[1:]] = value
    for column, paths in nested.items():
        assignments[column] = assign_fields(F.col(quote_if_needed(column)), schema[column].dataType, paths, column)
    return assignments


def _updated_rows(
    rows: DataFrame,
    matched: Column,
    assignments: Mapping[str, Column],
    schema: StructType,
    cdf: bool,
    tracked: tuple[str, str] | None,
) -> DataFrame:
    """UPDATE's output: every row, with the assignments applied where ``matched`` holds
    (and with ``tracked``, row tracking's materialized columns carried: an updated row
    gets a new row commit version); with the change data feed on, also the pre- and
    post-image of each updated row."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.update_expressions import StructCast, cast_if_needed

    data_cols = [f.name for f in schema.fields]
    schema_types = {f.name: nullable_type(f.dataType) for f in schema.fields}
    # each value cast to its column's type with struct fields by name (Delta's castIfNeeded)
    resolved = rows.select(*[v.alias(f"_{i}") for i, v in enumerate(assignments.values())]).schema.fields
    values = {
        c: cast_if_needed(v, resolved[i].dataType, schema_types[c], c, StructCast(allow_missing=False))
        for i, (c, v) in enumerate(assignments.items())
    }
    new_values = [
        (
            F.when(matched, values[c]).otherwise(F.col(quote_if_needed(c)))
            if c in values
            else F.col(quote_if_needed(c))
        ).alias(c)
        for c in data_cols
    ]
    new_values = [v.cast(schema_types[c]).alias(c) for v, c in zip(new_values, data_cols)]
    carried = [] if tracked is None else carried_columns(tracked, matched)
    new_values += carried
    if not cdf:
        return rows.select(*new_values)

    # each row read once gives its new value and, when it matches, its pre- and
    # post-images (Delta's UpdateCommand packs them in an array and explodes it)
    def image(values: Sequence[Column], change: str | None) -> Column:
        return F.struct(*values, F.lit(change).cast("string").alias(CDC_TYPE_COLUMN))

    old_values = [F.col(c).cast(schema_types[c]).alias(c) for c in data_cols] + carried
    new_row = image(new_values, None)
    images = F.when(
        matched,
        F.array(new_row, image(old_values, "update_preimage"), image(new_values, "update_postimage")),
    ).otherwise(F.array(new_row))
    return rows.select(F.explode(images).alias("image")).select("image.*")


#: Delta's internal ``DELTA_DML_METRICS_FROM_METADATA`` (default true)
_DML_METRICS_FROM_METADATA_CONF = "spark.databricks.delta.dmlMetricsFromMetadata.enabled"


def _deleted_rows_from_metadata(spark: SparkSession, files: Sequence[AddFile]) -> int | None:
    """The rows a metadata-only DELETE removes, from the files' statistics net of their
    deletion vectors, as Delta's ``getDeletedRowsFromAddFilesAndUpdateMetrics``: None (the
    row metrics are left out) when a file has no count, or when the session conf
    ``spark.databricks.delta.dmlMetricsFromMetadata.enabled`` is ``false``."""
    if str(spark.conf.get(_DML_METRICS_FROM_METADATA_CONF, "true")).strip().lower() == "false":
        return None
    return logical_records(files)


def _commit_no_delete(
    txn: OptimisticTransaction, condition: ExpressionOrColumn | None, started: float, scanned: float
) -> None:
    """A DELETE that matched no row commits nothing but Delta's ``commitIfNeeded`` of no
    action (recorded on a ``WriteSerializable`` table; Delta's DELETE adds no
    ``SetTransaction`` when it deletes nothing)."""
    from deltalog.txn.commit.operations import Delete

    metrics = {**_rewrite_metrics([], [], started, scanned)[0], "numDeletedRows": "0", "numCopiedRows": "0"}
    predicate = [] if condition is None else [_describe(condition)]
    txn.commit_if_needed([], Delete(predicate=predicate, user_metrics=metrics))


def _report_scan(
    command: str,
    condition: ExpressionOrColumn | None,
    num_files: int,
    candidates: Sequence[AddFile],
    touched: Sequence[AddFile],
) -> bool:
    """Log what a DELETE/UPDATE scan found; False when no file holds a matching row."""
    log.info(
        "%s %s: %d of %d files after skipping, %d hold matching rows",
        command,
        _describe(condition),
        len(candidates),
        num_files,
        len(touched),
    )
    if not touched:
        log.info("%s %s matched no rows", command, _describe(condition))
    return bool(touched)


def _check_clone_arguments(target: object, shallow: object, replace: object, properties: object) -> None:
    """delta-spark's ``_verify_clone_types``: ``ValueError`` for an argument of another type."""
    check_type(target, str, "target")
    check_type(shallow, bool, "isShallow")
    check_type(replace, bool, "replace")
    if properties is not None:
        check_type(properties, dict, "properties")
        assert isinstance(properties, dict)
        for key, value in properties.items():
            check_type(key, str, f"All property keys including {key}")
            check_type(value, str, f"All property values including {value}")
