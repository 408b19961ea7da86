"""The executor side of a read: one data file -> Arrow batches in the table's logical schema.

Columns are looked up by physical name (column mapping) and renamed to their logical
names, columns missing from an older file come back as nulls, partition columns are
filled from the file's partition values (typed per the schema), and rows deleted by a
deletion vector are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.contrib.spark.partitioning import typed_partition_value
from deltalog.logstores.base import LogStore, LogStoreSpec
from deltalog.txn.actions import DeletionVectorDescriptor, decode_path

__all__ = ["FileToRead", "ReadSpec", "read_file", "read_files"]

_PHYS = "delta.columnMapping.physicalName"


@dataclass(frozen=True)
class FileToRead:
    """One file of a scan (picklable)."""

    path: str  # as in the log: URI-encoded, relative to the table root or absolute
    partition_values: Mapping[str, str | None]
    size: int = 0
    deletion_vector: Mapping[str, Any] | None = None
    #: extra constant columns (``_change_type``, ``_commit_version``, ...) for change data
    constants: Mapping[str, Any] = field(default_factory=dict)


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


def _absolute(table_uri: str, path: str) -> str:
    raw = decode_path(path)
    if "://" in path or raw.startswith("/"):
        return raw if "://" not in path else path
    return f"{table_uri}/{raw}"


def _logical_column(arr: pa.ChunkedArray | pa.Array, delta_type: Any, target: pa.DataType, mode: str) -> Any:
    """Rename nested struct fields from physical to logical names and cast to ``target``."""
    if isinstance(delta_type, dict) and delta_type.get("type") == "struct" and pa.types.is_struct(target):
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        out_chunks = []
        for chunk in chunks:
            children = []
            names = []
            for i, f in enumerate(delta_type["fields"]):
                physical = (f.get("metadata") or {}).get(_PHYS, f["name"]) if mode != "none" else f["name"]
                target_field = target.field(i)
                try:
                    child = pc.struct_field(chunk, physical)
                except (KeyError, pa.ArrowInvalid):
                    child = pa.nulls(len(chunk), target_field.type)
                children.append(_logical_column(child, f["type"], target_field.type, mode))
                names.append(target_field.name)
            mask = chunk.is_null() if chunk.null_count else None
            out_chunks.append(pa.StructArray.from_arrays(children, names=names, mask=mask))
        return pa.chunked_array(out_chunks, type=target) if isinstance(arr, pa.ChunkedArray) else out_chunks[0]
    if arr.type != target:
        return arr.cast(target, safe=False)
    return arr


def _dv_mask(store: LogStore, table_uri: str, dv: Mapping[str, Any], num_rows: int) -> pa.Array:
    """A boolean array: True for rows to keep."""
    from deltalog.txn.deletion_vectors import keep_mask, read_deletion_vector

    deleted = read_deletion_vector(store, table_uri, DeletionVectorDescriptor.from_dict(dict(dv)))
    return keep_mask(num_rows, deleted)


def read_file(spec: ReadSpec, store: LogStore, item: FileToRead, columns: Sequence[str] | None = None) -> pa.Table:
    """Read one file as a table in ``spec.output_schema`` (logical names)."""
    assert spec.output_schema is not None
    schema = json.loads(spec.schema_json)
    fields_by_name = {f["name"]: f for f in schema["fields"]}
    fs = store.filesystem()
    uri = _absolute(spec.table_uri, item.path)
    wanted = [f.name for f in spec.output_schema]
    data_cols = [n for n in wanted if n in fields_by_name and n not in spec.partition_columns]
    physical = {
        n: ((fields_by_name[n].get("metadata") or {}).get(_PHYS, n) if spec.column_mapping_mode != "none" else n)
        for n in data_cols
    }
    with fs.open_input_file(store.fs_path(uri)) as handle:
        pf = pq.ParquetFile(handle)
        present = set(pf.schema_arrow.names)
        read_cols = [physical[n] for n in data_cols if physical[n] in present]
        if item.constants.get("_change_type") is None and "_change_type" in present and "_change_type" in wanted:
            read_cols.append("_change_type")
        table = pf.read(columns=read_cols, use_threads=False)
    num_rows = table.num_rows if read_cols else pf.metadata.num_rows
    if item.deletion_vector:
        mask = _dv_mask(store, spec.table_uri, item.deletion_vector, num_rows)
        table = table.filter(mask) if read_cols else table
        num_rows = int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)
    arrays = []
    for out_field in spec.output_schema:
        name = out_field.name
        if name in spec.partition_columns:
            f = fields_by_name[name]
            type_name = f["type"] if isinstance(f["type"], str) else "string"
            key = (f.get("metadata") or {}).get(_PHYS, name) if spec.column_mapping_mode != "none" else name
            value = typed_partition_value(_lookup(item.partition_values, key), type_name)
            arrays.append(pa.array([value] * num_rows, type=out_field.type))
        elif name in item.constants:
            arrays.append(pa.array([item.constants[name]] * num_rows, type=out_field.type))
        elif name == "_change_type" and "_change_type" in table.column_names:
            arrays.append(table.column("_change_type").cast(out_field.type))
        elif name in physical and physical[name] in table.column_names:
            arrays.append(
                _logical_column(
                    table.column(physical[name]),
                    fields_by_name[name]["type"],
                    out_field.type,
                    spec.column_mapping_mode,
                )
            )
        else:
            arrays.append(pa.nulls(num_rows, out_field.type))
    return pa.Table.from_arrays(arrays, schema=spec.output_schema)


def _lookup(values: Mapping[str, str | None], name: str) -> str | None:
    if name in values:
        return values[name]
    lowered = name.lower()
    for k, v in values.items():
        if k.lower() == lowered:
            return v
    return None


def read_files(spec: ReadSpec, items: Sequence[FileToRead]) -> Iterator[pa.RecordBatch]:
    """Batches of every file in ``items`` (the body of one read task)."""
    store = spec.store.build()
    for item in items:
        table = read_file(spec, store, item)
        yield from table.to_batches(max_chunksize=65536)
