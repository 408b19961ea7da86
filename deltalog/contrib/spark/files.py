"""The executor side of a write: Parquet files plus the ``add``/``cdc`` actions naming them.

This is the task half of Delta's ``DelayedCommitProtocol``: each task writes its rows into
files with unique names (``part-<task>-<uuid>.c000.snappy.parquet``) under Hive-style
partition directories of the table, straight through the store's data filesystem (rebuilt
in the executor from the picklable :class:`~deltalog.logstores.base.LogStoreSpec`), and
returns the actions that add them. Nothing is visible in the table until the driver
commits those actions; files of a failed job are never referenced.

In a table that records the change data feed, rows with a non-null ``_change_type``
column are change data: they go to ``_change_data/`` and come back as ``cdc`` actions
(Delta's CDC_TYPE_COLUMN_NAME). In any other table ``_change_type`` is an ordinary column, as
in Delta (a change feed streamed into a table keeps it).
"""

from __future__ import annotations

import functools
import json
import logging
import random
import string
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from deltalog.contrib.spark.constraints import task_checker
from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.parquet_codecs import DEFAULT_CODEC, file_extension, pyarrow_compression
from deltalog.contrib.spark.partitioning import partition_directory, written_partition_value
from deltalog.contrib.spark.replace_where import row_checker
from deltalog.contrib.spark.sink_cast import SinkCasts, cast_columns
from deltalog.logstores.base import LogStore, LogStoreSpec
from deltalog.txn.log.data_files import ROW_GROUP_BYTES, ROW_GROUP_ROWS
from deltalog.txn.protocol.actions import AddCDCFile, AddFile, action_to_line, decode_path, encode_path, parse_line
from deltalog.txn.protocol.column_defaults import DefaultExpressions
from deltalog.txn.protocol.column_identifiers import ColumnPath
from deltalog.txn.protocol.column_mapping import rename_to_physical
from deltalog.txn.protocol.constraints import Constraint
from deltalog.txn.protocol.file_stats import StatsCollector
from deltalog.txn.protocol.schema import StructType, parse_schema
from deltalog.txn.protocol.stats_columns import STRING_PREFIX_LENGTH

__all__ = ["CDC_TYPE_COLUMN", "WriteSpec", "delete_files", "file_actions", "logical_records", "write_batches"]

log = logging.getLogger(__name__)

# Row groups of up to ROW_GROUP_ROWS rows / ROW_GROUP_BYTES bytes: Spark sends Arrow batches
# of ``spark.sql.execution.arrow.maxRecordsPerBatch`` (10,000) rows, and a row group per
# batch makes files larger and slower to write and to read.
#: Buffered bytes across all open files of a task (many partitions) before all are flushed.
TASK_BUFFER_BYTES = 256 << 20

CDC_TYPE_COLUMN = "_change_type"
CDC_DIR = "_change_data"


@dataclass(frozen=True)
class WriteSpec:
    """Everything a task needs to write files for one table (picklable)."""

    store: LogStoreSpec
    table_uri: str
    partition_columns: tuple[str, ...] = ()
    partition_types: Mapping[str, str] = field(default_factory=dict)
    #: the leaf columns files get statistics for, physical paths (the table's
    #: :class:`~deltalog.txn.protocol.stats_columns.StatsColumns`); None: a file's first 32
    stats_columns: tuple[ColumnPath, ...] | None = None
    #: characters of a string statistics keep (the table's ``StatsColumns.string_prefix_length``)
    string_prefix_length: int = STRING_PREFIX_LENGTH
    #: rows per file (0: no limit); None: not given, Spark's own writer then takes the session's
    #: ``spark.sql.files.maxRecordsPerFile`` (as Delta's writes), Python tasks write no limit
    max_records_per_file: int | None = None
    #: Spark's name of the Parquet codec (the ``compression`` option)
    compression: str = DEFAULT_CODEC
    #: logical -> physical column names (column mapping); empty when mapping is off.
    physical_names: Mapping[str, str] = field(default_factory=dict)
    #: logical column name -> column mapping id, written as Parquet field ids.
    field_ids: Mapping[str, int] = field(default_factory=dict)
    tight_bounds: bool | None = None
    #: False: files get no statistics (the session's ``spark.databricks.delta.stats.collect``)
    collect_stats: bool = True
    data_change: bool = True
    prefix: str = "part"
    #: Constraints each task checks on its rows before writing them (data-source writes).
    constraints: tuple[Constraint, ...] = ()
    #: A ``replaceWhere`` on data columns every written row must satisfy.
    replace_where: str | None = None
    #: The table's schema string when column mapping is on: files hold physical names and
    #: field ids at every level, ``partitionValues`` are keyed by physical name, and files
    #: go under a random prefix instead of partition directories (as Delta writes them).
    column_mapping_schema: str | None = None
    #: Characters of the random directory files go under instead of partition directories
    #: (Delta's ``delta.randomizeFilePrefixes`` / ``delta.randomPrefixLength``, forced under
    #: column mapping); 0: partition directories (:meth:`random_prefix_chars`)
    random_prefix_length: int = 0

    @property
    def mapped_schema(self) -> StructType | None:
        return None if self.column_mapping_schema is None else parse_schema(self.column_mapping_schema)

    def random_prefix_chars(self) -> int:
        """How many random characters name a file's directory (0: its partition's), as
        Delta's ``TransactionalWrite.getCommitter``: the table's prefix length when it
        randomizes file prefixes or maps columns (2 for a mapped spec given none)."""
        return self.random_prefix_length or (2 if self.column_mapping_schema is not None else 0)

    #: Default, identity and generated columns each task fills in or checks.
    default_expressions: DefaultExpressions | None = None
    #: The table's top-level column names: a data column named in another case is written
    #: under the table's name (Delta's ``SchemaUtils.normalizeColumnNames``).
    column_names: tuple[str, ...] = ()
    #: The table's schema string: nested fields named in another case are written under the
    #: table's names too (:mod:`~deltalog.contrib.spark.table_cased`); None: top level only.
    table_schema: str | None = None
    #: The table records the change data feed: a ``_change_type`` column marks change data
    #: (Delta routes rows by it only then); otherwise it is an ordinary column.
    change_data: bool = False
    #: Every data row is also written as change data of type ``insert``: a ``replaceWhere`` on
    #: data columns in a table with the change data feed, whose replaced rows are change data
    #: too (Delta's ``WriteIntoDelta`` then writes its new rows as explicit inserts).
    insert_change_data: bool = False
    #: Row tracking's materialized (row id, row commit version) columns, which the rows a
    #: DELETE, UPDATE or MERGE rewrites carry: written into data files as they are, without
    #: statistics (they are not table columns), and left out of change-data files.
    row_tracking_columns: tuple[str, ...] = ()
    #: Their Parquet field ids (IcebergCompatV3 gives them Iceberg's reserved ones:
    #: :func:`~deltalog.txn.protocol.iceberg_compat.row_tracking_field_ids`); empty otherwise.
    row_tracking_field_ids: Mapping[str, int] = field(default_factory=dict)
    #: A stream's columns cast to the table's types, as Delta's sink casts them
    #: (:mod:`~deltalog.contrib.spark.sink_cast`).
    casts: SinkCasts = field(default_factory=SinkCasts)
    #: Data files hold the partition columns too, after the data columns (IcebergCompat,
    #: ``materializePartitionColumns``; :func:`~deltalog.txn.protocol.iceberg_compat.materializes_partition_columns`),
    #: without statistics (``partitionValues`` has them).
    materialize_partitions: bool = False
    #: ``delta.enableVariantShredding``: Spark's native writer shreds variant columns (its
    #: ``spark.sql.variant.inferShreddingSchema`` write option, as Delta's TransactionalWrite)
    shred_variants: bool = False
    #: Delta's optimized writes (``optimizeWrite``): the rows are shuffled by the partition
    #: columns into balanced tasks before they are written (Spark's ``REBALANCE``)
    optimize_write: bool = False
    #: Spark's session time zone (``spark.sql.session.timeZone``): zone-free timestamp texts of
    #: the constraints and of ``replace_where`` the tasks check are read in it
    session_time_zone: str | None = None

    def file_partition_names(self) -> set[str]:
        """The names the partition columns have in a data file that holds them."""
        return {self.physical_names.get(c, c) for c in self.partition_columns} if self.materialize_partitions else set()

    def with_row_tracking_field_ids(self, table: pa.Table) -> pa.Table:
        """``table`` (file columns) with the materialized row tracking columns it holds given
        their Parquet field ids (:attr:`row_tracking_field_ids`)."""
        ids = self.row_tracking_field_ids
        if not ids or not any(n in ids for n in table.column_names):
            return table
        fields = [
            f if f.name not in ids else f.with_metadata({b"PARQUET:field_id": str(ids[f.name]).encode()})
            for f in table.schema
        ]
        return table.cast(pa.schema(fields))

    def without_row_tracking(self, schema: pa.Schema) -> pa.Schema:
        """``schema`` without the materialized row tracking columns (what statistics cover)."""
        if not self.row_tracking_columns:
            return schema
        return pa.schema([f for f in schema if f.name not in self.row_tracking_columns])

    def empty_to_null_columns(self) -> tuple[str, ...]:
        """The string partition columns whose empty strings are NULL before the constraints
        are checked (Delta's ``convertEmptyToNullIfNeeded``: the partition value is NULL
        anyway, so a NOT NULL or CHECK constraint sees it); none without constraints."""
        if not self.constraints:
            return ()
        return tuple(c for c in self.partition_columns if self.partition_types.get(c, "string") == "string")

    def table_cased_data(self, table: pa.Table) -> pa.Table:
        """``table`` with its names at every depth as the table spells them (Delta's
        ``normalizeColumnNames``)."""
        if self.table_schema is None:
            return table.rename_columns(self.table_cased(table.column_names))
        from deltalog.contrib.spark.table_cased import arrow_table

        return arrow_table(table, _parsed_schema(self.table_schema))

    def table_cased(self, names: Sequence[str]) -> list[str]:
        """``names`` (the data's columns) as the table spells them; others unchanged."""
        by_lower = {n.lower(): n for n in self.column_names}
        return [by_lower.get(n.lower(), n) for n in names]


@dataclass
class _OpenFile:
    writer: pq.ParquetWriter
    sink: Any
    relative: str
    partition_values: dict[str, str | None]
    stats: StatsCollector
    rows: int = 0
    #: Rows waiting to be written as one row group (Spark hands over small Arrow batches).
    pending: list[pa.Table] = field(default_factory=list)
    pending_rows: int = 0
    pending_bytes: int = 0
    collect_stats: bool = True

    def flush(self) -> None:
        if self.pending:
            table = pa.concat_tables(self.pending)
            self.writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
            if self.collect_stats:
                self.stats.update(table)
            self.pending.clear()
            self.pending_rows = self.pending_bytes = 0


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth dictionary-encoding: strings and binaries. Numbers rarely repeat enough,
    and trying a dictionary on them first costs about a quarter of the encoding time."""
    return [
        f.name
        for f in schema
        if pa.types.is_string(f.type)
        or pa.types.is_large_string(f.type)
        or pa.types.is_binary(f.type)
        or pa.types.is_large_binary(f.type)
        or pa.types.is_dictionary(f.type)
    ]


class _TaskWriter:
    def __init__(self, spec: WriteSpec, task_id: int) -> None:
        self.spec = spec
        self.task_id = task_id
        self.store: LogStore = spec.store.build()
        self.fs: pafs.FileSystem = self.store.filesystem()
        self.open: dict[tuple[bool, tuple[str | None, ...]], _OpenFile] = {}
        self.counters: dict[tuple[bool, tuple[str | None, ...]], int] = {}
        self.done: list[str] = []
        self.created_dirs: set[str] = set()
        self.buffered = 0
        self.job_uuid = uuid.uuid4()
        self.mapped = spec.mapped_schema

    # -- layout ----------------------------------------------------------------------

    def _file_schema(self, schema: pa.Schema, cdc: bool) -> pa.Schema:
        if self.mapped is not None:
            return self._to_file_columns(schema.empty_table(), cdc).schema
        drop = set() if self.spec.materialize_partitions else set(self.spec.partition_columns)
        drop |= set(self.spec.row_tracking_columns) if cdc else set()
        fields = []
        for f in _partitions_last(schema, self.spec):
            if f.name in drop or (f.name == CDC_TYPE_COLUMN and self.spec.change_data and not cdc):
                continue
            if pa.types.is_null(f.type):  # left out of the file (_to_file_columns)
                continue
            fields.append(self._physical_field(f))
        return pa.schema(fields)

    def _physical_field(self, f: pa.Field) -> pa.Field:
        name = self.spec.physical_names.get(f.name, f.name)
        meta = dict(f.metadata or {})
        fid = self.spec.field_ids.get(f.name)
        if fid is not None:
            meta[b"PARQUET:field_id"] = str(fid).encode()
        return pa.field(name, f.type, f.nullable, meta or None)

    def _relative_path(self, cdc: bool, values: Mapping[str, str | None], counter: int) -> str:
        length = self.spec.random_prefix_chars()
        if not length:
            directory = partition_directory(self.spec.partition_columns, values)
        else:  # Delta's random prefix (delta.randomPrefixLength): names are not data
            directory = "".join(random.choices(string.ascii_letters + string.digits, k=length))
        prefix = "cdc" if cdc else self.spec.prefix
        extension = file_extension(self.spec.compression)
        name = f"{prefix}-{self.task_id:05d}-{self.job_uuid}.c{counter:03d}{extension}.parquet"
        parts = [p for p in (CDC_DIR if cdc else "", directory, name) if p]
        return "/".join(parts)

    def _open(self, key: tuple[bool, tuple[str | None, ...]], schema: pa.Schema) -> _OpenFile:
        cdc, values_tuple = key
        compression = pyarrow_compression(self.spec.compression)  # before any file is made
        values = dict(zip(self.spec.partition_columns, values_tuple))
        counter = self.counters.get(key, 0)
        self.counters[key] = counter + 1
        relative = self._relative_path(cdc, values, counter)
        uri = f"{self.spec.table_uri}/{relative}"
        fs_path = self.store.fs_path(uri)
        parent = fs_path.rsplit("/", 1)[0]
        if parent not in self.created_dirs:
            self.fs.create_dir(parent, recursive=True)
            self.created_dirs.add(parent)
        sink = self.fs.open_output_stream(fs_path)
        file_schema = self._file_schema(schema, cdc)
        writer = pq.ParquetWriter(
            sink,
            file_schema,
            compression=compression,
            use_dictionary=_dictionary_columns(file_schema),
        )
        data_schema = self.spec.without_row_tracking(file_schema)
        materialized = self.spec.file_partition_names()
        stats_schema = pa.schema(
            [f for f in data_schema if not (cdc and f.name == CDC_TYPE_COLUMN) and f.name not in materialized]
        )
        handle = _OpenFile(
            writer,
            sink,
            relative,
            values,
            StatsCollector(stats_schema, self.spec.stats_columns, self.spec.string_prefix_length),
            collect_stats=not cdc and self.spec.collect_stats,
        )
        if self.mapped is not None:
            handle.partition_values = {self.spec.physical_names.get(c, c): v for c, v in values.items()}
        self.open[key] = handle
        return handle

    def _close(self, key: tuple[bool, tuple[str | None, ...]]) -> None:
        handle = self.open.pop(key)
        self.buffered -= handle.pending_bytes
        handle.flush()
        handle.writer.close()
        size = handle.sink.tell()
        handle.sink.close()
        cdc = key[0]
        action: AddFile | AddCDCFile
        if cdc:
            action = AddCDCFile(path=encode_path(handle.relative), partition_values=handle.partition_values, size=size)
        else:
            action = AddFile(
                path=encode_path(handle.relative),
                partition_values=handle.partition_values,
                size=size,
                modification_time=int(time.time() * 1000),
                data_change=self.spec.data_change,
                stats=handle.stats.to_json(self.spec.tight_bounds) if self.spec.collect_stats else None,
            )
        self.done.append(action_to_line(action))

    # -- rows ------------------------------------------------------------------------

    def _to_file_columns(self, table: pa.Table, cdc: bool) -> pa.Table:
        marker = self.spec.change_data and not cdc
        keep = [
            n
            for n in _partitions_last(table.schema, self.spec).names
            if (self.spec.materialize_partitions or n not in self.spec.partition_columns)
            and not (marker and n == CDC_TYPE_COLUMN)
            and not (cdc and n in self.spec.row_tracking_columns)
            # a column of NullType is left out of the file, as Delta's dropNullTypeColumns
            and not pa.types.is_null(table.schema.field(n).type)
        ]
        table = table.select(keep)
        if self.mapped is not None:
            return self.spec.with_row_tracking_field_ids(rename_to_physical(table, self.mapped))
        if self.spec.physical_names:
            table = table.rename_columns([self.spec.physical_names.get(n, n) for n in keep])
        return self.spec.with_row_tracking_field_ids(table)

    def write_table(self, table: pa.Table, cdc: bool) -> None:
        if table.num_rows == 0:
            return
        cols = self.spec.partition_columns
        if not cols:
            self._append((cdc, ()), table)
            return
        for combo, part in _partition_groups(table, cols):
            key = tuple(written_partition_value(combo[c], self.spec.partition_types.get(c, "string")) for c in cols)
            self._append((cdc, key), part)

    def _append(self, key: tuple[bool, tuple[str | None, ...]], table: pa.Table) -> None:
        limit = self.spec.max_records_per_file or 0
        offset = 0
        while offset < table.num_rows:
            handle = self.open.get(key) or self._open(key, table.schema)
            room = table.num_rows - offset if limit <= 0 else limit - handle.rows
            piece = table.slice(offset, room)
            file_piece = self._to_file_columns(piece, key[0])
            handle.pending.append(file_piece)
            handle.pending_rows += file_piece.num_rows
            handle.pending_bytes += file_piece.nbytes
            self.buffered += file_piece.nbytes
            if handle.pending_rows >= ROW_GROUP_ROWS or handle.pending_bytes >= ROW_GROUP_BYTES:
                self.buffered -= handle.pending_bytes
                handle.flush()
            elif self.buffered >= TASK_BUFFER_BYTES:
                self._flush_all()
            handle.rows += piece.num_rows
            offset += piece.num_rows
            if limit > 0 and handle.rows >= limit:
                self._close(key)

    def _flush_all(self) -> None:
        for handle in self.open.values():
            handle.flush()
        self.buffered = 0

    def finish(self) -> list[str]:
        for key in list(self.open):
            self._close(key)
        return self.done

    def abort(self) -> None:
        for handle in self.open.values():
            try:
                handle.writer.close()
                handle.sink.close()
            except Exception:  # best effort: the file is unreferenced either way
                log.debug("closing %s after a failure", handle.relative, exc_info=True)
            self.done.append(action_to_line(AddCDCFile(path=encode_path(handle.relative), partition_values={}, size=0)))
        self.open.clear()
        delete_files(self.spec, self.done)


_ROW = "__deltalog_row"


def _partitions_last(schema: pa.Schema, spec: WriteSpec) -> pa.Schema:
    """``schema`` with the partition columns after the others (where a data file that holds
    them has them: IcebergCompatV1 requires it, and Delta's writer puts them there)."""
    if not spec.materialize_partitions:
        return schema
    parts = set(spec.partition_columns)
    return pa.schema([f for f in schema if f.name not in parts] + [f for f in schema if f.name in parts])


def _partition_groups(table: pa.Table, columns: Sequence[str]) -> Iterator[tuple[dict[str, Any], pa.Table]]:
    """``table``'s rows grouped by their values of ``columns``: each group's values and its
    rows, taken by the row numbers the grouping itself collected (comparing values again
    would lose NaN rows, which equal nothing, and take -0.0 rows into 0.0's group too)."""
    numbered = table.select(list(columns)).append_column(_ROW, pa.array(range(table.num_rows), pa.int64()))
    groups = numbered.group_by(list(columns), use_threads=False).aggregate([(_ROW, "list")])
    rows = groups.column(f"{_ROW}_list")
    values = [_partition_column_values(groups, name) for name in columns]
    for i, combo in enumerate(zip(*values, strict=True)):
        yield dict(zip(columns, combo, strict=True)), table.take(rows[i].values)


def _partition_column_values(groups: pa.Table, name: str) -> list[Any]:
    """The Python values of partition column ``name``; a timestamp Python's datetimes cannot
    hold (Spark's reach before 0001-01-01 and past 9999-12-31 in UTC) is refused by name."""
    try:
        values: list[Any] = groups.column(name).to_pylist()
    except (OverflowError, ValueError) as exc:
        raise DeltaAnalysisError(
            f"partition column {name} holds a value deltalog cannot write ({exc}): a timestamp partition "
            "value must lie between 0001-01-01 and 9999-12-31 in UTC, the range of Python's datetimes"
        ) from exc
    return values


def _both(first: Callable[[Any], None] | None, second: Callable[[Any], None]) -> Callable[[Any], None]:
    if first is None:
        return second

    def check(table: Any) -> None:
        first(table)
        second(table)

    return check


def _has_required_child(type_: pa.DataType) -> bool:
    if pa.types.is_struct(type_):
        return any(not f.nullable or _has_required_child(f.type) for f in type_)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _has_required_child(type_.value_type)
    if pa.types.is_map(type_):
        return _has_required_child(type_.key_type) or _has_required_child(type_.item_type)
    return False


def _filled_under_nulls(arr: pa.Array) -> pa.Array:
    """``arr`` with the slots of its NOT NULL struct fields that sit under a null struct
    filled with a placeholder (empty, zero), at any depth of structs, lists and maps. Spark hands a
    null struct (e.g. a SQL NULL ``variant``, ``struct<value, metadata>`` NOT NULL fields) with
    null children, which Parquet's writer refuses; under a null parent no reader sees them."""
    if pa.types.is_struct(arr.type):
        children = []
        parent_valid = arr.is_valid()
        for i, f in enumerate(arr.type):
            child = _filled_under_nulls(arr.field(i))
            flat = pa.types.is_primitive(f.type) or pa.types.is_binary(f.type) or pa.types.is_string(f.type)
            if not f.nullable and arr.null_count and child.null_count and flat:
                # only under null parents: a null under a valid one is a NOT NULL violation to report
                placeholder = b"" if pa.types.is_binary(f.type) else "" if pa.types.is_string(f.type) else 0
                child = pc.if_else(parent_valid, child, pa.scalar(placeholder, f.type))
            children.append(child)
        mask = pc.invert(arr.is_valid()) if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=mask)
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        offsets = arr.offsets
        start, end = offsets[0].as_py(), offsets[-1].as_py()
        values = _filled_under_nulls(arr.values.slice(start, end - start))
        mask = pc.invert(arr.is_valid()) if arr.null_count else None
        return type(arr).from_arrays(pc.subtract(offsets, offsets[0]), values, type=arr.type, mask=mask)
    if pa.types.is_map(arr.type):
        offsets = arr.offsets
        start, end = offsets[0].as_py(), offsets[-1].as_py()
        keys = _filled_under_nulls(arr.keys.slice(start, end - start))
        items = _filled_under_nulls(arr.items.slice(start, end - start))
        mask = pc.invert(arr.is_valid()) if arr.null_count else None
        return pa.MapArray.from_arrays(pc.subtract(offsets, offsets[0]), keys, items, type=arr.type, mask=mask)
    return arr


def _fill_required_children(table: pa.Table) -> pa.Table:
    """``table`` with :func:`_filled_under_nulls` applied to the columns that need it."""
    for i, f in enumerate(table.schema):
        if _has_required_child(f.type):  # the nulls may be nested: a struct's own count says nothing
            column = pa.chunked_array([_filled_under_nulls(c) for c in table.column(i).chunks], type=f.type)
            table = table.set_column(i, f, column)
    return table


def _empty_strings_to_null(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``table`` with the empty strings of ``columns`` (those it has) as NULL."""
    for name in columns:
        if name not in table.column_names:
            continue
        i = table.column_names.index(name)
        column = table.column(i)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            empty = pc.equal(column, pa.scalar("", column.type))
            table = table.set_column(i, table.field(i), pc.if_else(empty, pa.scalar(None, column.type), column))
    return table


@functools.lru_cache(maxsize=8)
def _parsed_schema(schema_string: str) -> Any:
    """A schema string parsed once per task process, not once per batch."""
    return json.loads(schema_string)


def write_batches(spec: WriteSpec, batches: Iterable[pa.RecordBatch | pa.Table], task_id: int) -> list[str]:
    """Write ``batches`` as the files of one task; returns the action lines (add/cdc).

    On an error the task's files are deleted (best effort) and the error propagates.
    """
    check = task_checker(spec.constraints, spec.session_time_zone)
    if spec.replace_where is not None:
        check = _both(check, row_checker(spec.replace_where, spec.session_time_zone))
    writer = _TaskWriter(spec, task_id)
    fill = spec.default_expressions.for_task(task_id) if spec.default_expressions else None
    try:
        for batch in batches:
            table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
            table = _fill_required_children(spec.table_cased_data(table))
            if spec.casts:
                table = cast_columns(table, spec.casts)
            if fill is not None:
                table = fill(table)
            table = _empty_strings_to_null(table, spec.empty_to_null_columns())
            if spec.change_data and CDC_TYPE_COLUMN in table.column_names:
                flag = table[CDC_TYPE_COLUMN]
                is_cdc = pc.is_valid(flag)
                rows = table.filter(pc.invert(is_cdc))
                if check is not None:
                    check(rows.drop_columns([CDC_TYPE_COLUMN]))
                _write_rows(writer, rows.drop_columns([CDC_TYPE_COLUMN]), spec)
                writer.write_table(table.filter(is_cdc), cdc=True)
            else:
                if check is not None:
                    check(table)
                _write_rows(writer, table, spec)
        lines = writer.finish()
        if fill is not None:
            from deltalog.txn.protocol.identity import tag_action_lines

            return tag_action_lines(lines, fill.high_water_marks)
        return lines
    except BaseException:
        writer.abort()
        raise


def _write_rows(writer: _TaskWriter, rows: pa.Table, spec: WriteSpec) -> None:
    """Write data ``rows``, and again as ``insert`` change data when ``spec.insert_change_data``."""
    writer.write_table(rows, cdc=False)
    if spec.insert_change_data and rows.num_rows:
        writer.write_table(rows.append_column(CDC_TYPE_COLUMN, pa.array(["insert"] * rows.num_rows)), cdc=True)


def file_actions(action_lines: Sequence[str]) -> tuple[list[AddFile], list[AddCDCFile]]:
    """The ``add`` and the ``cdc`` actions among the action lines the write tasks returned."""
    adds: list[AddFile] = []
    cdcs: list[AddCDCFile] = []
    for line in action_lines:
        action = parse_line(line)
        if isinstance(action, AddFile):
            adds.append(action)
        elif isinstance(action, AddCDCFile):
            cdcs.append(action)
    return adds, cdcs


def logical_records(files: Sequence[AddFile]) -> int | None:
    """Rows of ``files`` net of their deletion vectors (None when a file has no count)."""
    total = 0
    for f in files:
        n = f.num_records()
        if n is None:
            return None
        total += n - (f.deletion_vector.cardinality if f.deletion_vector is not None else 0)
    return total


def delete_files(spec: WriteSpec, action_lines: Sequence[str]) -> int:
    """Delete the files named by ``action_lines`` (abort of a job); returns how many."""
    store = spec.store.build()
    deleted = 0
    for line in action_lines:
        action = parse_line(line)
        if isinstance(action, (AddFile, AddCDCFile)):
            try:
                store.delete(f"{spec.table_uri}/{decode_path(action.path)}")
                deleted += 1
            except OSError:
                log.warning("could not delete %s while aborting a write", action.path, exc_info=True)
    return deleted
