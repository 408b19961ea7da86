"""Native writes: a DataFrame's rows written as files of a table by Spark's own Parquet writer.

The table API (MERGE, UPDATE, DELETE) has its rows as a DataFrame in the driver. Instead of
handing every row to Python write tasks (:func:`~deltalog.contrib.spark.dataframes.write_dataframe`),
:func:`write_native` lets Spark write them (``df.write.partitionBy(...).parquet(...)``:
vectorized encoding, no Arrow hand-off) and then does in the driver what Delta's
``DelayedCommitProtocol`` does at job commit:

1. Spark writes into a staging directory of its own, ``<table>/deltalog-staging-<uuid>/``,
   so two writers never share Hadoop's ``_temporary`` directory (a job's commit cleans it
   up, and would take another job's files with it).
2. Each file Spark wrote is moved to where the Python writer would put it
   (``k=v/`` directories built by :func:`~deltalog.txn.protocol.partition_paths.partition_directory`,
   Spark's own ``part-<task>-<job uuid>.c<n>.snappy.parquet`` name), its partition values
   parsed from Spark's directory names as Delta does, its statistics taken from its
   Parquet footer (:meth:`~deltalog.txn.protocol.file_stats.StatsCollector.update_from_footer`).
   Under column mapping Spark writes physical names and Parquet field ids at every level
   (:func:`_to_physical`), with its partition values keyed by physical name; then, and
   with ``delta.randomizeFilePrefixes``, each file goes under a random prefix of
   ``delta.randomPrefixLength`` characters (2) instead of partition directories, as Delta
   (and the Python writer) lays such a table out.
3. The ``add`` action lines come back to the caller, who commits them; until then no file
   is part of the table. A failure before that deletes what this write put anywhere.

Timestamps are written as ``TIMESTAMP_MICROS`` (as the Python writer writes them, so their
footer statistics exist) instead of Spark's default INT96, and dates and timestamps in the
proleptic Gregorian calendar whatever the session's ``datetimeRebaseModeInWrite``.

The table's CHECK constraints, invariants and NOT NULL columns (the write spec's
constraints) are checked by the write job itself, as Delta's ``DeltaInvariantCheckerExec``
does: a row breaking one makes Spark's ``raise_error`` fail the job, which is raised as
:class:`~deltalog.contrib.spark.constraints.ConstraintViolationError`
(:class:`~deltalog.contrib.spark.constraints.NotNullConstraintViolationError` for a NOT NULL
column) and leaves nothing behind.

What this path does not do falls back to the Python writer (:func:`native_write_blocker`
names the reason, logged at INFO): storage Spark's file systems cannot reach,
generated/identity/default columns, change data, ``replaceWhere`` checks,
partition columns whose directory value is not the log's value (the native read path's
Hive types), partition columns the files must hold (IcebergCompat,
``materializePartitionColumns``: Spark's partitioned writer leaves them out) and
IcebergCompatV2's nested field ids of arrays and maps (Spark writes field ids of struct
fields only; Delta has its own ``DeltaParquetWriteSupport`` for them).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.constraints import raise_task_violation
from deltalog.contrib.spark.files import CDC_TYPE_COLUMN, WriteSpec
from deltalog.contrib.spark.native import HIVE_TYPES, hadoop_path, spark_can_reach
from deltalog.txn.commands.vacuum_listing import STAGING_PREFIX
from deltalog.txn.log.deletion_vector_writer import random_prefix
from deltalog.txn.protocol.actions import AddFile, action_to_line, encode_path
from deltalog.txn.protocol.column_identifiers import quote_if_needed
from deltalog.txn.protocol.constraints import NOT_NULL_END, NOT_NULL_MESSAGE, Constraint
from deltalog.txn.protocol.partition_paths import HIVE_DEFAULT_PARTITION, partition_directory, unescape_partition_value

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    from pyspark.sql import Column, DataFrame, SparkSession

    from deltalog.logstores.base import LogStore

__all__ = ["NATIVE_WRITE", "native_write_blocker", "write_native"]

log = logging.getLogger(__name__)

#: ``false`` turns native writes off (every table-API write goes through Python tasks).
NATIVE_WRITE = "deltalog.nativeWrite.enabled"
_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
_REBASE_MODE = "spark.sql.parquet.datetimeRebaseModeInWrite"
_INFER_SHREDDING = "spark.sql.variant.inferShreddingSchema"
#: a shredding schema Spark's Parquet writer uses whatever the write option says
_FORCE_SHREDDING = "spark.sql.variant.forceShreddingSchemaForTest"
_conf_lock = threading.Lock()
#: id(session) -> (native writes under way that set the datetime settings, their values before)
_datetime_users: dict[int, tuple[int, dict[str, str | None]]] = {}


def native_write_blocker(spark: SparkSession, spec: WriteSpec, columns: Sequence[str]) -> str | None:
    """Why the rows (``columns``) cannot be written natively for ``spec``; None when they can."""
    if str(spark.conf.get(NATIVE_WRITE, "true") or "true").strip().lower() == "false":
        return f"{NATIVE_WRITE} is false"
    reasons = [
        (not spark_can_reach(spark, spec.table_uri), "Spark's file systems cannot reach the table's storage"),
        (spec.default_expressions is not None, "the write tasks fill generated, identity or default columns"),
        (spec.replace_where is not None, "the write tasks check a replaceWhere predicate"),
        (spec.change_data and CDC_TYPE_COLUMN in columns, "the rows carry change data"),
        (spec.insert_change_data, "the rows are written as change data too (replaceWhere on data columns)"),
        (
            any(spec.partition_types.get(c, "string").lower() not in HIVE_TYPES for c in spec.partition_columns),
            "a partition column's type is not one whose directory value is the log's value",
        ),
        (
            spec.materialize_partitions and bool(spec.partition_columns),
            "the files must hold the partition columns (IcebergCompat, materializePartitionColumns), "
            "which Spark's partitioned writer leaves out",
        ),
        (_has_nested_ids(spec), "arrays and maps need IcebergCompatV2's nested field ids, which Spark cannot write"),
    ]
    return next((why for blocked, why in reasons if blocked), None)


def _has_nested_ids(spec: WriteSpec) -> bool:
    """Whether the table gives an array element or a map key or value a nested field id
    (IcebergCompatV2): Spark's Parquet writer writes field ids of struct fields only."""
    from deltalog.txn.protocol.column_mapping import NESTED_IDS
    from deltalog.txn.protocol.protocol_requirements import walk_types

    if spec.column_mapping_schema is None or NESTED_IDS not in spec.column_mapping_schema:
        return False
    schema = json.loads(spec.column_mapping_schema)
    return any(isinstance(t, dict) and (t.get("metadata") or {}).get(NESTED_IDS) for t in walk_types(schema))


def write_native(df: DataFrame, spec: WriteSpec) -> list[str]:
    """Write ``df``'s rows (the table's columns) as new files of the table with Spark's
    Parquet writer; the ``add`` action lines. Call :func:`native_write_blocker` first.

    On any failure the files this write made are deleted and the error propagates."""
    if not spec.shred_variants and str(df.sparkSession.conf.get(_FORCE_SHREDDING, "") or ""):
        from deltalog.contrib.spark.errors import VariantShreddingDisabledError

        raise VariantShreddingDisabledError(spec.table_uri)  # Delta's assertShreddingStateConsistent
    store = spec.store.build()
    fs = store.filesystem()
    staging_uri = f"{spec.table_uri}/{STAGING_PREFIX}{uuid.uuid4()}"
    staging = store.fs_path(staging_uri)
    placed: list[str] = []
    try:
        rows = _empty_strings_to_null(_table_cased(df, spec), spec.empty_to_null_columns())
        checked = _checked(rows, spec.constraints)
        rows = _to_physical(_without_null_columns(checked, spec), spec)
        _spark_write(rows, spec, hadoop_path(staging_uri, staging))
        lines = list(_place_files(store, fs, spec, staging, placed))
    except BaseException as exc:
        for path in placed:
            _delete_quietly(fs, path)
        raise_task_violation(exc)  # a row broke a constraint: the typed error
        raise
    finally:
        _delete_dir_quietly(fs, staging)
    log.info("wrote %d file(s) with Spark's Parquet writer", len(lines))
    return lines


def _without_null_columns(df: DataFrame, spec: WriteSpec) -> DataFrame:
    """``df`` without its data columns and struct fields (at every depth) of NullType: they
    are left out of the files, as Delta's ``dropNullTypeColumns`` (a reader finds them
    missing and reads nulls; a file holding one would fail a read once the field is widened
    to a type); a null struct stays null."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType

    if not any(_holds_void(f.dataType) for f in df.schema.fields):
        return df
    kept = [f for f in df.schema.fields if not isinstance(f.dataType, NullType) or f.name in spec.partition_columns]
    return df.select(
        *(_void_free(F.col("`" + f.name.replace("`", "``") + "`"), f.dataType).alias(f.name) for f in kept)
    )


def _holds_void(data_type: Any) -> bool:
    """Whether ``data_type`` is NullType or a struct with a NullType field at some depth (arrays
    and maps of NullType are refused before the write)."""
    from pyspark.sql.types import NullType, StructType

    if isinstance(data_type, StructType):
        return any(_holds_void(f.dataType) for f in data_type.fields)
    return isinstance(data_type, NullType)


def _void_free(column: Column, data_type: Any) -> Column:
    """``column`` (of ``data_type``) rebuilt without the NullType fields of its structs."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType, StructType

    if not isinstance(data_type, StructType) or not _holds_void(data_type):
        return column
    fields = [
        _void_free(column.getField(f.name), f.dataType).alias(f.name)
        for f in data_type.fields
        if not isinstance(f.dataType, NullType)
    ]
    return F.when(column.isNull(), F.lit(None)).otherwise(F.struct(*fields))


def _table_cased(df: DataFrame, spec: WriteSpec) -> DataFrame:
    """``df`` with its names at every depth as the table spells them (Delta's
    ``normalizeColumnNames``): a nested field is renamed by a cast (Spark casts structs by
    position), which leaves its values as they are."""
    df = df.toDF(*spec.table_cased(df.columns))
    if spec.table_schema is None:
        return df
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_json_value

    from deltalog.contrib.spark.table_cased import spark_type

    by_name = {f["name"]: f["type"] for f in json.loads(spec.table_schema)["fields"]}
    columns = []
    for f in df.schema.fields:
        data = f.dataType.jsonValue()
        renamed = spark_type(data, by_name.get(f.name))
        column = F.col("`" + f.name.replace("`", "``") + "`")
        columns.append(column if renamed == data else column.cast(_parse_datatype_json_value(renamed)).alias(f.name))
    return df.select(*columns)


def _empty_strings_to_null(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """``df`` with the empty strings of ``columns`` (those it has) as NULL."""
    from pyspark.sql import functions as F

    present = [c for c in columns if c in df.columns]
    if not present:
        return df
    return df.withColumns(
        {c: F.when(F.col(quote_if_needed(c)) == "", F.lit(None)).otherwise(F.col(quote_if_needed(c))) for c in present}
    )


def _checked(df: DataFrame, constraints: Sequence[Constraint]) -> DataFrame:
    """``df`` whose first column fails the job (Spark's ``raise_error``) at a row that breaks
    one of ``constraints`` (``false`` or ``NULL``), with the message the Python tasks raise.

    A column a constraint reads that ``df`` lacks (at the top or inside a struct) is NULL
    there, as Delta's checker reads it; ``df``'s own columns are written unchanged."""
    from pyspark.sql import functions as F

    if not constraints or not df.columns:
        return df
    failing: Column | None = None
    for c in constraints:
        broken = ~F.coalesce(F.expr(f"({c.expression})").cast("boolean"), F.lit(False))
        error = F.raise_error(_violation(c, df.columns))
        failing = F.when(broken, error) if failing is None else failing.when(broken, error)
    assert failing is not None
    names = df.columns
    filled = _with_missing_columns(df, [p for c in constraints for p in _columns_read(c)])
    if filled is None:
        first, *rest = (quote_if_needed(name) for name in names)
        return df.select(failing.otherwise(F.col(first)).alias(names[0]), *rest)
    kept = [f"__deltalog_kept_{i}" for i in range(len(names))]
    evaluated = filled.select(*[F.col(quote_if_needed(n)).alias(k) for n, k in zip(names, kept)], *filled.columns)
    checked = failing.otherwise(F.col(kept[0])).alias(names[0])
    return evaluated.select(checked, *[F.col(k).alias(n) for k, n in zip(kept[1:], names[1:])])


def _with_missing_columns(df: DataFrame, paths: Sequence[tuple[str, ...]]) -> DataFrame | None:
    """``df`` with NULL for each of ``paths`` it lacks (a missing struct field is added to
    its struct); None when it has them all."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    out = df
    for path in paths:
        data_type: Any = StructType(out.schema.fields)
        found: list[str] = []
        for name in path:
            field = next((f for f in data_type.fields if f.name.lower() == name.lower()), None)
            if field is None:
                break
            found.append(field.name)
            data_type = field.dataType
            if not isinstance(data_type, StructType):
                break
        if len(found) == len(path) or (found and not isinstance(data_type, StructType)):
            continue  # present, or read through a non-struct (Spark's own error then)
        if not found:
            out = out.withColumn(path[0], F.lit(None))
            continue
        missing = path[len(found) :]
        value = F.lit(None)
        for name in reversed(missing[1:]):  # a missing struct: non-NULL, its fields NULL
            value = F.struct(value.alias(name))
        field_path = ".".join(quote_if_needed(p) for p in (*found[1:], missing[0]))
        out = out.withColumn(found[0], F.col(quote_if_needed(found[0])).withField(field_path, value))
    return None if out is df else out


def _violation(c: Constraint, columns: Sequence[str]) -> Column:
    """The message of a row breaking ``c``, in the form
    :func:`~deltalog.contrib.spark.constraints.raise_task_violation` reads back; for a CHECK
    constraint or an invariant with the values of the columns it reads, as Delta's
    ("violated by row with values"), or of every one of the row's ``columns`` when deltalog's
    parser cannot tell which (an expression outside its SQL subset)."""
    from pyspark.sql import functions as F

    if c.kind == "not_null":
        return F.lit(
            f"deltalog ConstraintViolationError: {NOT_NULL_MESSAGE}{c.column}.\nNothing was written: {NOT_NULL_END}"
        )
    what = "CHECK constraint" if c.kind == "check" else "invariant"
    name = c.name if c.kind == "check" else (c.column or c.name)
    parts: list[Column] = [
        F.lit(f"deltalog ConstraintViolationError: {what} {name} ({c.expression}) violated by row with values:")
    ]
    read = _columns_read(c) or [(name,) for name in columns]
    for path in sorted(read, key=".".join):  # Delta's order: by column name
        column = ".".join("`" + p.replace("`", "``") + "`" for p in path)
        value = F.coalesce(F.expr(column).cast("string"), F.lit("null"))
        parts.extend([F.lit(f"\n - {'.'.join(path)} : "), value])
    parts.append(F.lit("\nNothing was written: fix the data, or drop the constraint from the table."))
    return F.concat(*parts)


def _columns_read(c: Constraint) -> list[tuple[str, ...]]:
    """The columns ``c``'s expression reads (none when deltalog's parser cannot read it)."""
    from deltalog.txn.protocol.constraints import UnsupportedConstraintError, compile_constraints

    try:
        (compiled,) = compile_constraints([c])
    except UnsupportedConstraintError:
        return []
    return list(compiled.columns)


def _to_physical(df: DataFrame, spec: WriteSpec) -> DataFrame:
    """Under column mapping, ``df``'s columns as the files hold them: physical names at
    every level and each field's column mapping id as its ``parquet.field.id`` (Delta
    writes them in both modes); ``df`` itself otherwise."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_json_value

    from deltalog.contrib.spark.update_expressions import StructCast, cast_if_needed
    from deltalog.txn.protocol.column_mapping import physical_schema, with_parquet_field_ids
    from deltalog.txn.protocol.schema import without_void_fields

    if spec.mapped_schema is None:
        return df
    mapped = without_void_fields(spec.mapped_schema)  # as _without_null_columns left them out
    physical = physical_schema(with_parquet_field_ids(mapped))
    by_name = {f.name.lower(): (f, p) for f, p in zip(mapped.fields, physical.fields)}
    columns = []
    for name in df.columns:
        if name in spec.row_tracking_columns:  # hidden columns: no mapping; IcebergCompatV3's field ids
            fid = spec.row_tracking_field_ids.get(name)
            column = F.col(quote_if_needed(name))
            columns.append(column if fid is None else column.alias(name, metadata={"parquet.field.id": fid}))
            continue
        logical, target = by_name[name.lower()]
        # struct fields matched by name to the table's (the data's may come in another order,
        # or lack some); then renamed to the physical names, which Spark's cast does by position
        by_field_name = cast_if_needed(
            F.col(quote_if_needed(name)),
            df.schema[name].dataType,
            _parse_datatype_json_value(logical.type.to_json_value()),
            name,
            StructCast(allow_missing=True),
        )
        value = by_field_name.cast(_parse_datatype_json_value(target.type.to_json_value()))
        columns.append(value.alias(target.name, metadata=dict(target.metadata)))
    return df.select(*columns)


def _partition_directories(spec: WriteSpec) -> list[str]:
    """The names Spark's partition directories have: the physical ones under column mapping."""
    return [spec.physical_names.get(c, c) for c in spec.partition_columns]


def _spark_write(df: DataFrame, spec: WriteSpec, target: str) -> None:
    writer = (
        df.write.mode("errorifexists")
        .option("compression", spec.compression)
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    )
    # as Delta's TransactionalWrite: Spark (4.1+) infers a shredding schema for variant
    # columns only on tables with delta.enableVariantShredding (Spark's default is on)
    writer = writer.option(_INFER_SHREDDING, "true" if spec.shred_variants else "false")
    if spec.max_records_per_file is not None:  # else Spark's session conf, as in Delta's writes
        writer = writer.option("maxRecordsPerFile", spec.max_records_per_file)
    if spec.partition_columns:
        writer = writer.partitionBy(*_partition_directories(spec))
    with _datetime_encoding(df.sparkSession, _has_datetimes(df.schema)):
        writer.parquet(target)


#: the session settings Spark's Parquet writer takes its timestamp encoding from, as every
#: Delta reader expects them: microseconds (footer statistics exist, unlike INT96's), in the
#: proleptic Gregorian calendar (a LEGACY session writes dates and timestamps before 1582
#: rebased to the Julian calendar, which only Spark undoes: footer statistics, pyarrow and
#: delta-rs would read them days off)
_DATETIME_CONFS = {_TIMESTAMP_TYPE: "TIMESTAMP_MICROS", _REBASE_MODE: "CORRECTED"}


@contextmanager
def _datetime_encoding(spark: SparkSession, needed: bool) -> Iterator[None]:
    """Spark's Parquet writer takes the timestamp type and calendar from the session only:
    when the rows hold dates or timestamps (``needed``), set :data:`_DATETIME_CONFS` for
    the write, and back after the last native write of the session that needed them."""
    if not needed:
        yield
        return
    key = id(spark)
    with _conf_lock:
        if key not in _datetime_users:
            _datetime_users[key] = (0, {k: spark.conf.get(k, None) for k in _DATETIME_CONFS})
            for k, v in _DATETIME_CONFS.items():
                spark.conf.set(k, v)
        users, before = _datetime_users[key]
        _datetime_users[key] = (users + 1, before)
    try:
        yield
    finally:
        with _conf_lock:
            users, before = _datetime_users.pop(key)
            if users > 1:
                _datetime_users[key] = (users - 1, before)
            else:
                for k, previous in before.items():
                    if previous is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, previous)


def _has_datetimes(data_type: Any) -> bool:
    """Whether a Spark type holds a ``date`` or a ``timestamp`` (with time zone) anywhere."""
    text = data_type.json()
    return '"timestamp"' in text or '"date"' in text


def _staged_files(fs: pafs.FileSystem, staging: str) -> list[pafs.FileInfo]:
    """The data files Spark left in ``staging`` (not its ``_temporary``, ``.crc`` or markers)."""
    import pyarrow.fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(staging, recursive=True))
    out = []
    for info in infos:
        relative = info.path[len(staging) :].strip("/")
        hidden = any(part.startswith(("_", ".")) for part in relative.split("/"))
        if info.type == pafs.FileType.File and not hidden and relative.endswith(".parquet"):
            out.append(info)
    return sorted(out, key=lambda i: i.path)


def _partition_values(spec: WriteSpec, relative: str) -> dict[str, str | None]:
    """A staged file's partition values, from the ``k=v`` directories Spark made, keyed
    by the names Spark gave them (:func:`_partition_directories`)."""
    values: dict[str, str | None] = {}
    for part in relative.split("/")[:-1]:
        name, _, raw = part.partition("=")
        value = unescape_partition_value(raw)
        values[unescape_partition_value(name)] = None if value in ("", HIVE_DEFAULT_PARTITION) else value
    return {c: values.get(c) for c in _partition_directories(spec)}


def _final_path(spec: WriteSpec, values: dict[str, str | None], name: str, taken: set[str]) -> str:
    """Where a file goes in the table: the partition directories of its values, or under
    column mapping or ``delta.randomizeFilePrefixes`` a random prefix (never one this write
    already gave a file of the same name: Spark names the files of one task alike in every
    partition)."""
    length = spec.random_prefix_chars()
    if not length:
        logical = dict(zip(spec.partition_columns, values.values()))
        return "/".join(p for p in (partition_directory(spec.partition_columns, logical), name) if p)
    while True:
        final = f"{random_prefix(length)}/{name}"
        if final not in taken:
            taken.add(final)
            return final


def _place_files(
    store: LogStore, fs: pafs.FileSystem, spec: WriteSpec, staging: str, placed: list[str]
) -> Iterator[str]:
    """Move each staged file into the table (recorded in ``placed``) and yield its ``add``
    line; an empty file (Spark writes one for a write without rows) is deleted instead."""
    import pyarrow.parquet as pq

    from deltalog.txn.protocol.file_stats import StatsCollector

    table_root = store.fs_path(spec.table_uri)
    made: set[str] = set()
    taken: set[str] = set()
    for info in _staged_files(fs, staging):
        relative = info.path[len(staging) :].strip("/")
        with fs.open_input_file(info.path) as f:
            footer = pq.read_metadata(f)
        if footer.num_rows == 0:
            fs.delete_file(info.path)
            continue
        values = _partition_values(spec, relative)
        final = _final_path(spec, values, relative.rsplit("/", 1)[-1], taken)
        target = f"{table_root}/{final}"
        parent = target.rsplit("/", 1)[0]
        if parent not in made:
            fs.create_dir(parent, recursive=True)
            made.add(parent)
        fs.move(info.path, target)
        placed.append(target)
        file_schema = spec.without_row_tracking(footer.schema.to_arrow_schema())
        stats = StatsCollector(file_schema, spec.stats_columns, spec.string_prefix_length)
        stats.update_from_footer(footer)
        add = AddFile(
            path=encode_path(final),
            partition_values=values,
            size=info.size,
            modification_time=int(time.time() * 1000),
            data_change=spec.data_change,
            stats=stats.to_json(spec.tight_bounds) if spec.collect_stats else None,
        )
        yield action_to_line(add)


def _delete_quietly(fs: pafs.FileSystem, path: str) -> None:
    try:
        fs.delete_file(path)
    except OSError:
        log.warning("could not delete %s after a failed native write", path, exc_info=True)


def _delete_dir_quietly(fs: pafs.FileSystem, path: str) -> None:
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        return
    except OSError:
        log.warning("could not delete the staging directory %s", path, exc_info=True)
