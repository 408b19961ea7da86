"""The executor side of a read: one data file -> Arrow batches in the table's logical schema.

Columns are looked up by physical name (column mapping) and renamed to their logical
names, columns missing from an older file come back as nulls, partition columns are
filled from the file's partition values (typed per the schema, built by Arrow as
constant arrays), and rows deleted by a deletion vector are dropped. A task given a split
of a large file reads only the row groups of its byte range, and pushed filters (where
pruning by them is sound) skip row groups by their statistics
(:mod:`~deltalog.contrib.spark.row_groups`); deletion vectors index rows by their
position in the file, so the rows of skipped row groups still count.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.contrib.spark.field_ids import child_column_name, file_column_names, name_in_file
from deltalog.contrib.spark.partitioning import partition_value, typed_partition_value
from deltalog.contrib.spark.row_groups import row_group_offsets, row_groups_in_range, row_groups_may_match
from deltalog.contrib.spark.scan import Term
from deltalog.contrib.spark.schemas import physical_names, top_level_types
from deltalog.logstores.base import LogStore, LogStoreSpec
from deltalog.txn.log.calendar_rebase import rebase_spec, rebase_table
from deltalog.txn.log.data_files import open_data_file
from deltalog.txn.log.variant_shredding import is_shredded, rebuild_variant
from deltalog.txn.protocol.actions import DeletionVectorDescriptor, absolute_path

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = [
    "DML_ROW_TRACKING_COLUMN",
    "ROW_TRACKING_COLUMN",
    "FileToRead",
    "ReadSpec",
    "constant_column",
    "partition_value",
    "read_file",
    "read_files",
    "row_tracking_columns",
    "row_tracking_struct",
]

#: the output column of row tracking reads: ``struct<row_id: long, row_commit_version: long>``
ROW_TRACKING_COLUMN = "_metadata"
#: the same struct where the DML commands read it: a name of deltalog's own, so that a table
#: with a column named ``_metadata`` (Delta hides its metadata column behind it) keeps it
DML_ROW_TRACKING_COLUMN = "__deltalog_row_tracking"
#: its Arrow type (:func:`row_tracking_struct` is its Spark type)
ROW_TRACKING_TYPE = pa.struct([("row_id", pa.int64()), ("row_commit_version", pa.int64())])


def row_tracking_struct() -> Any:
    """The Spark type of :data:`ROW_TRACKING_COLUMN`."""
    from pyspark.sql.types import LongType, StructField, StructType

    return StructType([StructField("row_id", LongType()), StructField("row_commit_version", LongType())])


@dataclass(frozen=True)
class FileToRead:
    """One file of a scan (picklable)."""

    path: str  # as in the log: URI-encoded, relative to the table root or absolute
    partition_values: Mapping[str, str | None]
    size: int = 0
    deletion_vector: Mapping[str, Any] | None = None
    #: extra constant columns (``_change_type``, ``_commit_version``, ...) for change data
    constants: Mapping[str, Any] = field(default_factory=dict)
    #: read only these row indexes of the file (positions in the file; the change feed of a
    #: deletion-vector update reads the rows one DV deletes and the other does not)
    only_rows: tuple[int, ...] | None = None
    #: a split of a large file: its bytes ``[start, start + length)`` (``length`` None: to
    #: the end); the task reads the row groups whose midpoint is in the range
    start: int = 0
    length: int | None = None
    #: row tracking: the add's ``baseRowId`` and ``defaultRowCommitVersion``
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    @property
    def is_split(self) -> bool:
        return self.start > 0 or self.length is not None


@dataclass(frozen=True)
class ReadSpec:
    """What every task of one scan needs (picklable)."""

    store: LogStoreSpec
    table_uri: str
    #: the table's schema (Spark/Delta JSON), logical names, with column-mapping metadata
    schema_json: str
    partition_columns: tuple[str, ...]
    column_mapping_mode: str = "none"
    #: the output columns, in order (a subset of the schema plus constant columns)
    output_schema: pa.Schema | None = None
    #: pushed filters on data columns (logical names) that skip row groups by their footer
    #: statistics; empty where pruning by pushed filters is not sound (see ``source.py``)
    row_group_terms: tuple[Term, ...] = ()
    #: row tracking: the materialized (row id, row commit version) column names, when the
    #: output has the column ``row_tracking_output`` (``struct<row_id, row_commit_version>``)
    row_tracking_columns: tuple[str, str] | None = None
    #: :data:`ROW_TRACKING_COLUMN` for ``readRowTracking``, :data:`DML_ROW_TRACKING_COLUMN` for DML
    row_tracking_output: str = ROW_TRACKING_COLUMN

    @classmethod
    def for_snapshot(
        cls,
        delta_log: SnapshotManagement,
        snapshot: Snapshot,
        output_schema: pa.Schema,
        row_tracking_columns: tuple[str, str] | None = None,
        row_tracking_output: str = ROW_TRACKING_COLUMN,
    ) -> ReadSpec:
        """The spec to read files of ``snapshot`` (of ``delta_log``'s table) as rows of
        ``output_schema`` (with ``row_tracking_columns``: also the row ids, in the column
        ``row_tracking_output``)."""
        metadata = snapshot.metadata
        return cls(
            store=delta_log.store.spec(),
            table_uri=delta_log.table_uri,
            schema_json=metadata.schema_string,
            partition_columns=tuple(metadata.partition_columns),
            column_mapping_mode=snapshot.properties.column_mapping_mode,
            output_schema=output_schema,
            row_tracking_columns=row_tracking_columns,
            row_tracking_output=row_tracking_output,
        )


def _logical_column(
    arr: pa.ChunkedArray | pa.Array, delta_type: Any, target: pa.DataType, mode: str, path: str = "column"
) -> Any:
    """Rename struct fields from physical to logical names, at any depth (in structs,
    arrays and maps), rebuild shredded variants, and cast to ``target``."""
    if isinstance(arr, pa.ChunkedArray):
        chunks = [_logical_chunk(c, delta_type, target, mode, path) for c in arr.chunks]
        return pa.chunked_array(chunks, type=target)
    return _logical_chunk(arr, delta_type, target, mode, path)


def _logical_chunk(chunk: pa.Array, delta_type: Any, target: pa.DataType, mode: str, path: str) -> pa.Array:
    if delta_type == "variant" and is_shredded(chunk.type):
        chunk = rebuild_variant(chunk, path)
    kind = delta_type.get("type") if isinstance(delta_type, dict) else None
    mask = chunk.is_null() if chunk.null_count else None
    if kind == "struct" and pa.types.is_struct(target) and pa.types.is_struct(chunk.type):
        children = []
        table_fields = {f["name"]: f for f in delta_type["fields"]}
        field_name = _table_name(table_fields)
        for target_field in target:  # by name: the read's fields may be fewer (added since) or in another order
            found = field_name(target_field.name)
            f = None if found is None else table_fields[found]
            if f is None:
                children.append(pa.nulls(len(chunk), target_field.type))
                continue
            try:
                child = pc.struct_field(chunk, child_column_name(chunk.type, f, mode))
            except (KeyError, pa.ArrowInvalid):
                child = pa.nulls(len(chunk), target_field.type)
            children.append(_logical_chunk(child, f["type"], target_field.type, mode, f"{path}.{f['name']}"))
        # the target's fields, so a NOT NULL nested field keeps its nullability
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if kind == "array" and _is_list(target) and _is_list(chunk.type):
        offsets, values = _entries(chunk, pa.int64() if pa.types.is_large_list(target) else pa.int32())
        values = _logical_chunk(values, delta_type["elementType"], target.value_type, mode, f"{path}.element")
        lists = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
        return lists.from_arrays(offsets, values, type=target, mask=mask)
    if kind == "map" and pa.types.is_map(target) and pa.types.is_map(chunk.type):
        offsets, entries = _entries(chunk, pa.int32())
        keys = _logical_chunk(entries.field(0), delta_type["keyType"], target.key_type, mode, f"{path}.key")
        items = _logical_chunk(entries.field(1), delta_type["valueType"], target.item_type, mode, f"{path}.value")
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    if chunk.type != target:
        return chunk.cast(target, safe=False)
    return chunk


def _is_list(type_: pa.DataType) -> bool:
    return bool(pa.types.is_list(type_) or pa.types.is_large_list(type_))


def _entries(chunk: pa.Array, offset_type: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """A list or map array's offsets, from 0, and the values they index (a slice's
    offsets index its parent's values, and Arrow builds no list from them with a mask)."""
    offsets = chunk.offsets
    first, last = offsets[0].as_py(), offsets[-1].as_py()
    values = chunk.values
    if first or len(values) != last:
        values = values.slice(first, last - first)
        offsets = pc.subtract(offsets, pa.scalar(first, offsets.type))
    return offsets.cast(offset_type), values


def _keep_mask(spec: ReadSpec, store: LogStore, item: FileToRead, positions: pa.Array) -> pa.Array | None:
    """True for the rows to read among those at ``positions`` in the file (deletion vector
    and row selection), None: all."""
    from deltalog.txn.log.deletion_vectors import keep_mask, read_deletion_vector

    mask = None
    if item.deletion_vector:
        descriptor = DeletionVectorDescriptor.from_dict(dict(item.deletion_vector))
        mask = keep_mask(len(positions), read_deletion_vector(store, spec.table_uri, descriptor), positions)
    if item.only_rows is not None:
        selected = pc.is_in(positions, value_set=pa.array(item.only_rows, pa.uint64()))
        mask = selected if mask is None else pc.and_(mask, selected)
    return mask


def _row_groups(
    spec: ReadSpec, item: FileToRead, metadata: pq.FileMetaData, schema: dict[str, Any], names: Mapping[str, str]
) -> list[int]:
    """The row groups of the file this task reads: those of its split that the pushed
    filters do not rule out by their statistics (``names``: the file's name of each column)."""
    groups = (
        row_groups_in_range(metadata, item.start, item.length)
        if item.is_split
        else list(range(metadata.num_row_groups))
    )
    if spec.row_group_terms and groups:
        groups = row_groups_may_match(
            metadata,
            groups,
            spec.row_group_terms,
            top_level_types(schema),
            names,
        )
    return groups


def _positions(offsets: Sequence[int], groups: Sequence[int]) -> pa.Array:
    """The positions in the file of the rows of ``groups`` (uint64, in order)."""
    import numpy as np

    ranges = [np.arange(offsets[g], offsets[g + 1], dtype=np.uint64) for g in groups]
    return pa.array(np.concatenate(ranges) if ranges else np.empty(0, np.uint64))


def constant_column(value: Any, type: pa.DataType, num_rows: int) -> pa.Array:
    """``num_rows`` copies of ``value`` (a partition value or another per-file constant),
    built by Arrow from one scalar, never from a Python list."""
    if value is None:
        return pa.nulls(num_rows, type)
    return pa.repeat(pa.scalar(value, type=type), num_rows)


def read_file(spec: ReadSpec, store: LogStore, item: FileToRead, columns: Sequence[str] | None = None) -> pa.Table:
    """Read one file (or the row groups of its split) as a table in ``spec.output_schema``
    (logical names)."""
    assert spec.output_schema is not None
    schema = json.loads(spec.schema_json)
    fields_by_name = {f["name"]: f for f in schema["fields"]}
    fs = store.filesystem()
    uri = absolute_path(spec.table_uri, item.path)
    wanted = [f.name for f in spec.output_schema]
    found = map(_table_name(fields_by_name), wanted)
    data_cols = [n for n in found if n is not None and n not in spec.partition_columns]
    # top-level names in data files and in partitionValues (physical under column mapping)
    names = physical_names(schema, spec.column_mapping_mode)
    with open_data_file(fs, store.fs_path(uri)) as pf:
        metadata = pf.metadata
        present = set(pf.schema_arrow.names)
        files_names = file_column_names(names, schema, pf.schema_arrow) if spec.column_mapping_mode == "id" else names
        physical = {n: name_in_file(files_names.get(n, n), pf.schema_arrow.names) for n in data_cols}
        read_cols = [physical[n] for n in data_cols if physical[n] in present]
        if item.constants.get("_change_type") is None and "_change_type" in present and "_change_type" in wanted:
            read_cols.append("_change_type")
        tracked = [] if spec.row_tracking_columns is None else [c for c in spec.row_tracking_columns if c in present]
        read_cols += [c for c in tracked if c not in read_cols]
        groups = _row_groups(spec, item, metadata, schema, files_names)
        whole = len(groups) == metadata.num_row_groups
        if whole:
            table = pf.read(columns=read_cols, use_threads=False)
        elif groups:
            table = pf.read_row_groups(groups, columns=read_cols, use_threads=False)
        else:
            table = pf.schema_arrow.empty_table().select(read_cols)
        rebase = rebase_spec(metadata.metadata)
        if rebase is not None:
            table = rebase_table(table, pf, rebase, uri)
    offsets = row_group_offsets(metadata)
    num_rows = table.num_rows if read_cols else sum(offsets[g + 1] - offsets[g] for g in groups)
    tracking = None
    if spec.row_tracking_columns is not None and spec.row_tracking_output in wanted:
        tracking = _row_tracking(spec.row_tracking_columns, item, table, _positions(offsets, groups))
    if item.deletion_vector or item.only_rows is not None:
        positions = _positions(offsets, groups)
        mask = _keep_mask(spec, store, item, positions)
        if mask is not None:
            table = table.filter(mask) if read_cols else table
            tracking = None if tracking is None else tracking.filter(mask)
            num_rows = int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)
    arrays = _output_columns(spec, item, table, tracking, num_rows, (fields_by_name, names, physical))
    return pa.Table.from_arrays(arrays, schema=spec.output_schema)


def _output_columns(
    spec: ReadSpec,
    item: FileToRead,
    table: pa.Table,
    tracking: pa.Array | None,
    num_rows: int,
    schema_names: tuple[dict[str, Any], dict[str, str], dict[str, str]],
) -> list[pa.Array]:
    """Each column of ``spec.output_schema`` for the rows read from ``item``: partition
    values and constants repeated, data columns renamed to their logical names, row ids,
    and nulls for columns the file does not have. ``schema_names``: the table's fields by
    name, physical names of all columns, physical names of the data columns read."""
    fields_by_name, names, physical = schema_names
    assert spec.output_schema is not None
    table_name = _table_name(fields_by_name)
    arrays = []
    for out_field in spec.output_schema:
        name = table_name(out_field.name) or out_field.name
        if name in spec.partition_columns:
            f = fields_by_name[name]
            type_name = f["type"] if isinstance(f["type"], str) else "string"
            value = typed_partition_value(partition_value(item.partition_values, names.get(name, name)), type_name)
            arrays.append(constant_column(value, out_field.type, num_rows))
        elif name in item.constants:
            arrays.append(constant_column(item.constants[name], out_field.type, num_rows))
        elif name == "_change_type" and "_change_type" in table.column_names:
            arrays.append(table.column("_change_type").cast(out_field.type))
        elif name == spec.row_tracking_output and tracking is not None:
            arrays.append(tracking.cast(out_field.type))
        elif name in physical and physical[name] in table.column_names:
            arrays.append(
                _logical_column(
                    table.column(physical[name]),
                    fields_by_name[name]["type"],
                    out_field.type,
                    spec.column_mapping_mode,
                    f"{name} in {item.path}",
                )
            )
        else:
            arrays.append(pa.nulls(num_rows, out_field.type))
    return arrays


def _table_name(fields_by_name: Mapping[str, Any]) -> Callable[[str], str | None]:
    """The table's name of a column or struct field the read returns: the same name, else the
    one equal ignoring case (a schema given with ``.schema(...)`` may spell it otherwise, as
    Spark's Parquet reader resolves it); None for one the table does not have (added since
    the read was planned, the change feed's, the row tracking column)."""
    lowered: dict[str, str] = {}
    for n in fields_by_name:
        lowered.setdefault(n.lower(), n)

    def table_name(name: str) -> str | None:
        return name if name in fields_by_name else lowered.get(name.lower())

    return table_name


def _row_tracking(columns: tuple[str, str], item: FileToRead, table: pa.Table, positions: pa.Array) -> pa.StructArray:
    """``_metadata``'s ``row_id`` and ``row_commit_version`` of the rows at ``positions``:
    the materialized values where present, else ``baseRowId`` + position and the file's
    ``defaultRowCommitVersion`` (PROTOCOL "Reader Requirements for Row Tracking")."""
    from deltalog.txn.protocol.row_tracking import row_commit_versions, row_ids

    def materialized(name: str) -> pa.Array | None:
        return table.column(name).combine_chunks() if name in table.column_names else None

    ids = row_ids(item.base_row_id, positions, materialized(columns[0]))
    versions = row_commit_versions(item.default_row_commit_version, len(positions), materialized(columns[1]))
    return pa.StructArray.from_arrays([ids, versions], names=["row_id", "row_commit_version"])


def read_files(spec: ReadSpec, items: Sequence[FileToRead]) -> Iterator[pa.RecordBatch]:
    """Batches of every file in ``items`` (the body of one read task)."""
    store = spec.store.build()
    for item in items:
        table = read_file(spec, store, item)
        yield from table.to_batches(max_chunksize=65536)


def row_tracking_columns(snapshot: Snapshot) -> tuple[str, str]:
    """The materialized row id and row commit version column names of a table with row
    tracking enabled (``readRowTracking``); raises on any other table, and on a table with a
    top-level column named ``_metadata`` (Delta hides its metadata column behind the table's;
    the DataFrame here would hold two columns of that name)."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.protocol import row_tracking

    names = row_tracking.materialized_columns(snapshot.protocol, snapshot.metadata)
    if names is None:
        raise DeltaAnalysisError(
            f"readRowTracking: row tracking is not enabled on {snapshot.table_uri} "
            "(set delta.enableRowTracking=true first)"
        )
    if any(f.name.lower() == ROW_TRACKING_COLUMN for f in snapshot.schema.fields):
        raise DeltaAnalysisError(
            f"readRowTracking: the table {snapshot.table_uri} has a column named {ROW_TRACKING_COLUMN}, the name "
            "of the row tracking column this read adds; rename the column (column mapping) to read row ids"
        )
    return names
