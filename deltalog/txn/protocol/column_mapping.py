"""Column mapping (``delta.columnMapping.mode`` = ``name`` or ``id``): read support.

Under column mapping, data files, ``stats`` and ``partitionValues`` use each column's
*physical name* (``delta.columnMapping.physicalName``; in ``id`` mode Parquet field ids carry
``delta.columnMapping.id``). This module exposes the mapping so a data reader can rename
physical columns to logical ones, and translates partition values and statistics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.txn.protocol.errors import InvalidSchemaError
from deltalog.txn.protocol.schema import ArrayType, DataType, MapType, StructField, StructType

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "logical_partition_values",
    "logical_to_physical",
    "physical_arrow_schema",
    "physical_partition_names",
    "physical_schema",
    "physical_to_logical",
    "rename_to_logical",
]


def _check(schema: StructType, mode: str) -> None:
    if mode == "none":
        return
    for path, f in _all_fields(schema):
        if "delta.columnMapping.physicalName" not in f.metadata:
            raise InvalidSchemaError(
                f"column mapping mode is {mode!r} but column {'.'.join(path)!r} has no "
                "delta.columnMapping.physicalName in its metadata; the schema is invalid"
            )
        if mode == "id" and "delta.columnMapping.id" not in f.metadata:
            raise InvalidSchemaError(
                f"column mapping mode is 'id' but column {'.'.join(path)!r} has no "
                "delta.columnMapping.id in its metadata"
            )


def _all_fields(schema: StructType) -> list[tuple[tuple[str, ...], StructField]]:
    out: list[tuple[tuple[str, ...], StructField]] = []

    def walk(prefix: tuple[str, ...], dt: DataType) -> None:
        if isinstance(dt, StructType):
            for f in dt.fields:
                out.append(((*prefix, f.name), f))
                walk((*prefix, f.name), f.type)
        elif isinstance(dt, ArrayType):
            walk(prefix, dt.element_type)
        elif isinstance(dt, MapType):
            walk(prefix, dt.key_type)
            walk(prefix, dt.value_type)

    walk((), schema)
    return out


def logical_to_physical(schema: StructType, mode: str = "name") -> dict[str, str]:
    """Top-level logical column name -> physical name."""
    _check(schema, mode)
    return {f.name: (f.physical_name if mode != "none" else f.name) for f in schema.fields}


def physical_to_logical(schema: StructType, mode: str = "name") -> dict[str, str]:
    return {p: logical for logical, p in logical_to_physical(schema, mode).items()}


def physical_partition_names(schema: StructType, partition_columns: tuple[str, ...]) -> dict[str, str]:
    """Logical partition column -> the key used in ``partitionValues`` (physical name)."""
    return {c: schema.field(c).physical_name for c in partition_columns}


def logical_partition_values(
    values: Mapping[str, str | None], schema: StructType, partition_columns: tuple[str, ...], mode: str
) -> dict[str, str | None]:
    """``partitionValues`` keyed by logical names (they are stored by physical name)."""
    if mode == "none":
        return dict(values)
    mapping = physical_partition_names(schema, partition_columns)
    return {logical: values.get(physical) for logical, physical in mapping.items()}


def _physical_type(dt: DataType) -> DataType:
    if isinstance(dt, StructType):
        return physical_schema(dt)
    if isinstance(dt, ArrayType):
        return ArrayType(_physical_type(dt.element_type), dt.contains_null)
    if isinstance(dt, MapType):
        return MapType(_physical_type(dt.key_type), _physical_type(dt.value_type), dt.value_contains_null)
    return dt


def physical_schema(schema: StructType) -> StructType:
    """The schema as stored in data files: physical names at every level."""
    return StructType(
        tuple(StructField(f.physical_name, _physical_type(f.type), f.nullable, f.metadata) for f in schema.fields)
    )


def physical_arrow_schema(schema: StructType) -> pa.Schema:
    """Arrow schema of the data files, with ``PARQUET:field_id`` set in ``id`` mode."""
    import pyarrow as pa

    phys = physical_schema(schema).to_arrow()

    def with_ids(field: pa.Field, logical: StructField) -> pa.Field:
        meta = dict(field.metadata or {})
        if logical.column_mapping_id is not None:
            meta[b"PARQUET:field_id"] = str(logical.column_mapping_id).encode()
        return field.with_metadata(meta)

    return pa.schema([with_ids(phys.field(i), f) for i, f in enumerate(schema.fields)])


def rename_to_logical(table: pa.Table, schema: StructType) -> pa.Table:
    """Rename a data file's physical top-level (and nested struct) columns to logical names."""
    import pyarrow as pa

    def convert(values: Any, dt: DataType) -> Any:
        if isinstance(dt, StructType) and pa.types.is_struct(values.type):
            by_phys = {f.physical_name: f for f in dt.fields}
            arrays, fields = [], []
            for i in range(values.type.num_fields):
                child_field = values.type.field(i)
                logical = by_phys.get(child_field.name)
                child = values.field(i)
                if logical is not None:
                    child = convert(child, logical.type)
                    arrays.append(child)
                    fields.append(pa.field(logical.name, child.type, child_field.nullable))
            return pa.StructArray.from_arrays(arrays, fields=fields, mask=values.is_null())
        return values

    by_phys = {f.physical_name: f for f in schema.fields}
    columns, names = [], []
    for name in table.column_names:
        logical = by_phys.get(name)
        if logical is None:
            continue
        col = table.column(name)
        if isinstance(logical.type, StructType):
            col = pa.chunked_array([convert(c, logical.type) for c in col.chunks])
        columns.append(col)
        names.append(logical.name)
    return pa.table(columns, names=names)
