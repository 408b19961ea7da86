"""Column mapping (``delta.columnMapping.mode`` = ``name`` or ``id``), PROTOCOL "Column Mapping".

Under column mapping, data files, ``stats`` and ``partitionValues`` use each column's
*physical name* (``delta.columnMapping.physicalName``), and every field carries an id
(``delta.columnMapping.id``, written as the Parquet field id; readers in ``id`` mode resolve
columns by it). ``delta.columnMapping.maxColumnId`` is the largest id ever given.

This module is the one place that knows the mapping: assigning ids and physical names
when a table is created, enabled or gets new columns (Delta's ``DeltaColumnMapping``),
logical <-> physical names for writers and readers, and the partition-value keys.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.txn.protocol.collations import COLLATIONS_KEY
from deltalog.txn.protocol.errors import (
    ColumnMappingMetadataAlreadyExistsError,
    InvalidSchemaChangeError,
    InvalidSchemaError,
    UnsupportedColumnMappingModeChangeError,
)
from deltalog.txn.protocol.partition_filters import PartitionValueKeys, partition_column_types
from deltalog.txn.protocol.properties import COLUMN_MAPPING_MAX_ID, TableProperties
from deltalog.txn.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    explode,
    parse_schema,
    path_name,
    same_type,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.txn.protocol.actions import Metadata

__all__ = [
    "COLUMN_MAPPING_ID",
    "COLUMN_MAPPING_KEYS",
    "NESTED_IDS",
    "PHYSICAL_NAME",
    "assign_column_mapping",
    "assign_nested_ids",
    "column_mapping_mode",
    "field_ids",
    "find_max_column_id",
    "has_column_mapping",
    "invalid_column_names",
    "is_drop_column_operation",
    "is_rename_column_operation",
    "logical_partition_values",
    "logical_to_physical",
    "partition_value_keys",
    "physical_arrow_schema",
    "physical_field_map",
    "physical_partition_filters",
    "physical_partition_names",
    "physical_schema",
    "physical_to_logical",
    "rename_to_logical",
    "rename_to_physical",
    "typed_partition_keys",
    "update_column_mapping",
    "with_parquet_field_ids",
    "without_column_mapping",
]

COLUMN_MAPPING_ID = "delta.columnMapping.id"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
#: Field metadata keys of column mapping (``nested.ids`` is IcebergCompatV2's; the ``parquet.*``
#: ones are what Spark's Parquet writer takes ids from), Delta's ``COLUMN_MAPPING_METADATA_KEYS``.
NESTED_IDS = "delta.columnMapping.nested.ids"
COLUMN_MAPPING_KEYS = (COLUMN_MAPPING_ID, PHYSICAL_NAME, NESTED_IDS, "parquet.field.id", "parquet.field.nested.ids")
_FIELD_ID = b"PARQUET:field_id"


def column_mapping_mode(configuration: Mapping[str, str]) -> str:
    """``none``, ``name`` or ``id``; anything else raises :class:`InvalidPropertyError`."""
    return TableProperties(configuration).column_mapping_mode


def _map_fields(dt: DataType, fn: Callable[[tuple[str, ...], StructField], StructField], path: tuple[str, ...]) -> Any:
    """``dt`` with ``fn`` applied to every field, parents before children (Delta's
    ``SchemaMergingUtils.transformColumns``)."""
    if isinstance(dt, StructType):
        out = []
        for f in dt.fields:
            changed = fn(path, f)
            out.append(dataclasses.replace(changed, type=_map_fields(changed.type, fn, (*path, changed.name))))
        return StructType(tuple(out))
    if isinstance(dt, ArrayType):
        return ArrayType(_map_fields(dt.element_type, fn, (*path, "element")), dt.contains_null)
    if isinstance(dt, MapType):
        return MapType(
            _map_fields(dt.key_type, fn, (*path, "key")),
            _map_fields(dt.value_type, fn, (*path, "value")),
            dt.value_contains_null,
        )
    return dt


def find_max_column_id(schema: StructType) -> int:
    """The largest ``delta.columnMapping.id`` in the schema (0 when none)."""
    ids = [f.column_mapping_id for _, f in explode(schema)]
    return max([i for i in ids if i is not None], default=0)


def _find(schema: StructType, path: tuple[str, ...]) -> StructField | None:
    """The field at ``path`` (``element``/``key``/``value`` step into arrays and maps)."""
    dt: DataType = schema
    found: StructField | None = None
    for name in path:
        if isinstance(dt, ArrayType) and name == "element":
            dt = dt.element_type
            continue
        if isinstance(dt, MapType) and name in ("key", "value"):
            dt = dt.key_type if name == "key" else dt.value_type
            continue
        if not isinstance(dt, StructType) or name not in dt:
            return None
        found = dt.field(name)
        dt = found.type
    return found


def assign_column_mapping(
    schema: StructType,
    max_id: int,
    old_schema: StructType | None = None,
    changing_mode: bool = False,
    overwriting: bool = False,
) -> tuple[StructType, int]:
    """Give every field without them an id (``max_id + 1``, ...) and a physical name; returns
    the schema and the new max id (Delta's ``assignColumnIdAndPhysicalName``).

    New physical names are ``col-<uuid>``; when column mapping is being enabled on an
    existing table (``changing_mode``) the existing columns keep their names as physical
    names, so no data file has to be rewritten. When the schema replaces ``old_schema``
    (``overwriting``: ``overwriteSchema``), a field at the path of an old field of the same
    type keeps that field's id and physical name (and IcebergCompatV2's nested ids), as Delta's
    ``columnMapping.reuseColumnMetadataDuringOverwrite`` (on by default); other fields get
    ids above ``max_id``, which only grows (the protocol's ``maxColumnId``)."""
    counter = [max(max_id, find_max_column_id(schema))]

    def assign(path: tuple[str, ...], f: StructField) -> StructField:
        meta = dict(f.metadata)
        reused = _reusable(old_schema, (*path, f.name), f) if overwriting else None
        if reused is not None and COLUMN_MAPPING_ID not in meta and PHYSICAL_NAME not in meta:
            meta[COLUMN_MAPPING_ID] = reused.column_mapping_id
            meta[PHYSICAL_NAME] = reused.physical_name
            if NESTED_IDS in reused.metadata and NESTED_IDS not in meta:  # keyed by the physical name reused
                meta[NESTED_IDS] = reused.metadata[NESTED_IDS]
        if COLUMN_MAPPING_ID not in meta:
            counter[0] += 1
            meta[COLUMN_MAPPING_ID] = counter[0]
        if PHYSICAL_NAME not in meta:
            if changing_mode and old_schema is not None and old_schema.fields:
                existing = _find(old_schema, (*path, f.name))
                if existing is None:
                    raise InvalidSchemaChangeError(
                        f"column {'.'.join((*path, f.name))!r} is new: the schema cannot change in the commit "
                        "that enables column mapping; enable it first, then add the column"
                    )
                meta[PHYSICAL_NAME] = existing.name
            else:
                meta[PHYSICAL_NAME] = f"col-{uuid.uuid4()}"
        return dataclasses.replace(f, metadata=meta)

    result: StructType = _map_fields(schema, assign, ())
    return result, counter[0]


def assign_nested_ids(schema: StructType, max_id: int) -> tuple[StructType, int]:
    """IcebergCompatV2's nested ids (Delta's ``rewriteFieldIdsForIceberg``): every struct field
    gets ``delta.columnMapping.nested.ids``, a map from ``<physical name>.element`` /
    ``.key`` / ``.value`` (nested arrays and maps extend their parent's key) to an id above
    ``max_id``, given in pre-order to the arrays' elements and the maps' keys and values
    below it that have none yet (a struct inside them keeps its own map). Returns the schema
    and the new max id, which ``delta.columnMapping.maxColumnId`` records."""
    counter = [max_id]

    def walk(dt: DataType, ids: dict[str, Any], path: tuple[str, ...]) -> DataType:
        if isinstance(dt, StructType):
            return StructType(tuple(field(f) for f in dt.fields))
        steps: tuple[str, ...] = ("element",) if isinstance(dt, ArrayType) else ("key", "value")
        if not isinstance(dt, (ArrayType, MapType)):
            return dt
        children = [dt.element_type] if isinstance(dt, ArrayType) else [dt.key_type, dt.value_type]
        out = []
        for step, child in zip(steps, children):
            key = ".".join((*path, step))
            if key not in ids:
                counter[0] += 1
                ids[key] = counter[0]
            out.append(walk(child, ids, (*path, step)))
        if isinstance(dt, ArrayType):
            return ArrayType(out[0], dt.contains_null)
        return MapType(out[0], out[1], dt.value_contains_null)

    def field(f: StructField) -> StructField:
        ids = dict(f.metadata.get(NESTED_IDS) or {})
        kind = walk(f.type, ids, (f.physical_name,))
        return dataclasses.replace(f, type=kind, metadata={**f.metadata, NESTED_IDS: ids})

    result = walk(schema, {}, ())
    assert isinstance(result, StructType)
    return result, counter[0]


def _reusable(old_schema: StructType | None, path: tuple[str, ...], f: StructField) -> StructField | None:
    """The old field at ``path`` when it has the type of ``f`` (nullability, metadata and
    name case aside) and column mapping metadata to give."""
    old = None if old_schema is None else _find(old_schema, path)
    if old is None or old.column_mapping_id is None or PHYSICAL_NAME not in old.metadata:
        return None
    return old if same_type(old.type, f.type) else None


def update_column_mapping(
    old: Metadata | None, new: Metadata, removing: bool = False, replacing_table: bool = False
) -> Metadata:
    """``new`` with column mapping ids, physical names and ``maxColumnId`` assigned (and
    IcebergCompatV2's nested ids, :func:`assign_nested_ids`), after checking the mode
    change (Delta's ``verifyAndUpdateMetadataChange``): a new table may use any mode, and so
    may a table a REPLACE TABLE recreates (``replacing_table``: its ids go on above ``old``'s
    ``maxColumnId``); an existing one may only go from ``none`` to ``name``, or to ``none``
    when ``removing`` (``DROP FEATURE columnMapping``, which rewrites the files in the same commit)."""
    new_mode = column_mapping_mode(new.configuration)
    old_mode = "none" if old is None else column_mapping_mode(old.configuration)
    changing = old is not None and old_mode != new_mode and not replacing_table
    allowed = (old_mode == "none" and new_mode == "name") or (removing and new_mode == "none")
    if changing and not allowed:
        raise UnsupportedColumnMappingModeChangeError(old_mode, new_mode)
    old_schema = parse_schema(old.schema_string) if old is not None else None
    if new_mode == "none":
        return _without_new_column_mapping_metadata(old_schema, new)
    if old_mode == "none" and old_schema is not None and without_column_mapping(old_schema) != old_schema:
        raise ColumnMappingMetadataAlreadyExistsError(new_mode)
    schema = parse_schema(new.schema_string)
    old_max = 0 if old is None else old.properties.column_mapping_max_id
    assigned, max_id = assign_column_mapping(
        schema, max(old_max, new.properties.column_mapping_max_id), old_schema, changing
    )
    if new.properties.enable_iceberg_compat_v2 or new.properties.enable_iceberg_compat_v3:
        assigned, max_id = assign_nested_ids(assigned, max_id)
    _check_unique(assigned, new_mode)
    config = {**new.configuration, COLUMN_MAPPING_MAX_ID: str(max_id)}
    if assigned == schema and config == new.configuration:
        return new
    return dataclasses.replace(new, schema_string=assigned.to_json(), configuration=config)


def _without_new_column_mapping_metadata(old_schema: StructType | None, new: Metadata) -> Metadata:
    """``new`` (no column mapping) without the column mapping field metadata its schema brings
    (a DataFrame's, a copied schema's): readers would take those ids and physical names for the
    files'. Metadata the old schema already had stays, as stripping it could break the table
    (Delta's ``columnMapping.stripMetadata``, on by default)."""
    schema = parse_schema(new.schema_string)
    stripped = without_column_mapping(schema)
    if stripped == schema or (old_schema is not None and without_column_mapping(old_schema) != old_schema):
        return new
    return dataclasses.replace(new, schema_string=stripped.to_json())


def _check_unique(schema: StructType, mode: str) -> None:
    """No two fields share an id, nor two sibling fields a physical name (Delta's
    ``checkColumnIdAndPhysicalNameAssignments``)."""
    ids: dict[int, str] = {}
    paths: set[tuple[str, ...]] = set()

    def check(path: tuple[str, ...], f: StructField) -> StructField:
        name = ".".join((*path, f.name))
        fid = f.column_mapping_id
        if fid is not None and fid in ids:
            raise InvalidSchemaChangeError(
                f"column mapping mode {mode!r}: columns {ids[fid]!r} and {name!r} have the same id {fid}"
            )
        if fid is not None:
            ids[fid] = name
        physical = (*path, f.physical_name.lower())
        if physical in paths:
            raise InvalidSchemaChangeError(
                f"column mapping mode {mode!r}: column {name!r} has the physical name of another column"
            )
        paths.add(physical)
        return f

    _map_fields(schema, check, ())


def without_column_mapping(dt: DataType) -> Any:
    """``dt`` without column mapping metadata at any depth (what a DataFrame shows)."""

    def strip(_: tuple[str, ...], f: StructField) -> StructField:
        if not any(k in f.metadata for k in COLUMN_MAPPING_KEYS):
            return f
        return dataclasses.replace(f, metadata={k: v for k, v in f.metadata.items() if k not in COLUMN_MAPPING_KEYS})

    return _map_fields(dt, strip, ())


def has_column_mapping(metadata: Metadata) -> bool:
    """Whether the table maps columns: its mode is ``name`` or ``id``, or its schema still
    carries column mapping field metadata (what removing column mapping takes away)."""
    schema = parse_schema(metadata.schema_string)
    return column_mapping_mode(metadata.configuration) != "none" or without_column_mapping(schema) != schema


def with_parquet_field_ids(dt: DataType) -> Any:
    """``dt`` with each field's column mapping id also under ``parquet.field.id``, the key
    Spark's Parquet reader matches columns by (Delta's ``PARQUET_FIELD_ID_METADATA_KEY``)."""

    def put(_: tuple[str, ...], f: StructField) -> StructField:
        fid = f.column_mapping_id
        return f if fid is None else dataclasses.replace(f, metadata={**f.metadata, "parquet.field.id": fid})

    return _map_fields(dt, put, ())


def field_ids(schema: StructType, mode: str) -> dict[str, int]:
    """Top-level logical column name -> column mapping id (empty when mode is none)."""
    if mode == "none":
        return {}
    return {f.name: f.column_mapping_id for f in schema.fields if f.column_mapping_id is not None}


def partition_value_keys(metadata: Metadata) -> tuple[str, ...]:
    """The keys of ``partitionValues`` in the table's ``add`` actions: the partition
    columns' physical names under column mapping, their names otherwise."""
    if not metadata.partition_columns:
        return ()
    if column_mapping_mode(metadata.configuration) == "none":
        return tuple(metadata.partition_columns)
    schema = parse_schema(metadata.schema_string)
    return tuple(physical_partition_names(schema, metadata.partition_columns).values())


def typed_partition_keys(metadata: Metadata) -> PartitionValueKeys:
    """The table's files' ``partitionValues`` as hashable keys of typed values (Delta's
    ``normalizedPartitionValues``: ``"01"`` and ``"1"`` are one int partition)."""
    types = partition_column_types(metadata.schema_string, metadata.partition_columns)
    keys = partition_value_keys(metadata)
    return PartitionValueKeys(dict(zip(keys, (types[c] for c in metadata.partition_columns), strict=True)))


def physical_partition_filters(
    metadata: Metadata, filters: Sequence[tuple[str, str, Any]], types: Mapping[str, str]
) -> tuple[list[tuple[str, str, Any]], dict[str, str]]:
    """Partition filters on logical names, and ``{partition column: type}``, keyed as the
    ``partitionValues`` they are matched against (physical names under column mapping)."""
    if column_mapping_mode(metadata.configuration) == "none":
        return list(filters), dict(types)
    names = physical_partition_names(parse_schema(metadata.schema_string), metadata.partition_columns)
    by_lower = {c.lower(): p for c, p in names.items()}
    keyed = [(by_lower.get(c.lower(), c) if isinstance(c, str) else c, op, v) for c, op, v in filters]
    return keyed, {by_lower.get(c.lower(), c): t for c, t in types.items()}


def _check(schema: StructType, mode: str) -> None:
    if mode == "none":
        return
    for path, f in explode(schema):
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


def physical_field_map(schema: StructType) -> dict[tuple[str, ...], StructField]:
    """Every field at any depth by its physical path (``element``, ``key`` and ``value`` step
    into arrays and maps), Delta's ``getPhysicalNameFieldMap``."""
    return dict(explode(schema, lambda f: f.physical_name))


def is_drop_column_operation(new_schema: StructType, current_schema: StructType) -> bool:
    """Whether ``new_schema`` lacks a physical path of ``current_schema`` (a column dropped
    under column mapping; Delta's ``isDropColumnOperation``, for two schemas that both map)."""
    new = physical_field_map(new_schema)
    return any(path not in new for path in physical_field_map(current_schema))


def is_rename_column_operation(new_schema: StructType, current_schema: StructType) -> bool:
    """Whether a physical path of ``current_schema`` has another logical name in
    ``new_schema`` (Delta's ``isRenameColumnOperation``, for two schemas that both map)."""
    new = physical_field_map(new_schema)
    return any(path in new and new[path].name != f.name for path, f in physical_field_map(current_schema).items())


#: characters a column name cannot have without column mapping (Delta's ``findInvalidColumnNames``)
_INVALID_NAME_CHARACTERS = frozenset(" ,;{}()\n\t=")


def invalid_column_names(schema: StructType) -> list[str]:
    """The columns (dotted paths, any depth) whose names a table without column mapping
    cannot have (Delta's ``SchemaUtils.findInvalidColumnNamesInSchema``)."""
    out = []
    for path, _ in explode(schema):
        name = path_name(path)
        if any(c in _INVALID_NAME_CHARACTERS for c in name):
            out.append(name)
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
        tuple(
            StructField(f.physical_name, _physical_type(f.type), f.nullable, _physical_metadata(f))
            for f in schema.fields
        )
    )


def _physical_metadata(f: StructField) -> Mapping[str, Any]:
    """The field's metadata under its physical name: ``__COLLATIONS`` is keyed by the field's
    name (``name``, ``name.element``, ...), so its keys follow the rename."""
    collations = f.metadata.get(COLLATIONS_KEY)
    if not isinstance(collations, Mapping) or f.physical_name == f.name:
        return f.metadata
    renamed = {f.physical_name + str(k)[len(f.name) :]: v for k, v in collations.items()}
    return {**f.metadata, COLLATIONS_KEY: renamed}


def _nested_field(
    name: str, kind: pa.DataType, nullable: bool, ids: Mapping[str, Any], path: tuple[str, ...]
) -> pa.Field:
    """An array's element or a map's key/value field, with its nested id (IcebergCompatV2's
    ``delta.columnMapping.nested.ids`` of the nearest struct field) as its Parquet field id."""
    import pyarrow as pa

    nested = ids.get(".".join(path))
    meta = None if nested is None else {_FIELD_ID: str(int(nested)).encode()}
    return pa.field(name, kind, nullable=nullable, metadata=meta)


def _physical_arrow_type(dt: DataType, ids: Mapping[str, Any] | None = None, path: tuple[str, ...] = ()) -> pa.DataType:
    import pyarrow as pa

    from deltalog.txn.protocol.schema import to_arrow_type

    ids = ids or {}
    if isinstance(dt, StructType):
        return pa.struct([_physical_arrow_field(f) for f in dt.fields])
    if isinstance(dt, ArrayType):
        element = _physical_arrow_type(dt.element_type, ids, (*path, "element"))
        return pa.list_(_nested_field("element", element, dt.contains_null, ids, (*path, "element")))
    if isinstance(dt, MapType):
        key = _physical_arrow_type(dt.key_type, ids, (*path, "key"))
        value = _physical_arrow_type(dt.value_type, ids, (*path, "value"))
        return pa.map_(
            _nested_field("key", key, False, ids, (*path, "key")),
            _nested_field("value", value, dt.value_contains_null, ids, (*path, "value")),
        )
    return to_arrow_type(dt)


def _physical_arrow_field(f: StructField) -> pa.Field:
    import pyarrow as pa

    meta = None if f.column_mapping_id is None else {_FIELD_ID: str(f.column_mapping_id).encode()}
    kind = _physical_arrow_type(f.type, f.metadata.get(NESTED_IDS), (f.physical_name,))
    return pa.field(f.physical_name, kind, nullable=f.nullable, metadata=meta)


def physical_arrow_schema(schema: StructType) -> pa.Schema:
    """Arrow schema of the data files: physical names at every level, and each field's
    column mapping id as its ``PARQUET:field_id`` (Delta writes them in both modes)."""
    import pyarrow as pa

    return pa.schema([_physical_arrow_field(f) for f in schema.fields])


def _nulls(values: Any) -> Any:
    return values.is_null() if values.null_count else None


def _field_id(f: StructField) -> dict[bytes, bytes] | None:
    return None if f.column_mapping_id is None else {b"PARQUET:field_id": str(f.column_mapping_id).encode()}


def _rename(
    values: Any, dt: DataType, to_physical: bool, ids: Mapping[str, Any] | None = None, path: tuple[str, ...] = ()
) -> Any:
    """One Arrow array of type ``dt`` with its nested field names switched between logical
    and physical (and, towards physical, each field's id as ``PARQUET:field_id``, and an
    array's element or a map's key and value their nested id: ``ids`` are the nearest struct
    field's ``delta.columnMapping.nested.ids``, ``path`` the key prefix there). Fields the
    array does not have are left out; fields the schema does not name are dropped."""
    import pyarrow as pa

    kind = values.type
    ids = (ids or {}) if to_physical else {}
    if isinstance(dt, StructType) and pa.types.is_struct(kind):
        children, fields = [], []
        for f in dt.fields:
            index = kind.get_field_index(f.name if to_physical else f.physical_name)
            if index < 0:
                continue
            child = _rename(values.field(index), f.type, to_physical, f.metadata.get(NESTED_IDS), (f.physical_name,))
            name = f.physical_name if to_physical else f.name
            meta = _field_id(f) if to_physical else None
            children.append(child)
            fields.append(pa.field(name, child.type, kind.field(index).nullable, metadata=meta))
        return pa.StructArray.from_arrays(children, fields=fields, mask=_nulls(values))
    if isinstance(dt, ArrayType) and (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        inner = _rename(values.values, dt.element_type, to_physical, ids, (*path, "element"))
        element = _with_nested_id(kind.value_field.with_type(inner.type), ids, (*path, "element"))
        list_type = pa.large_list(element) if pa.types.is_large_list(kind) else pa.list_(element)
        array_class = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
        return array_class.from_arrays(values.offsets, inner, type=list_type, mask=_nulls(values))
    if isinstance(dt, MapType) and pa.types.is_map(kind):
        keys = _rename(values.keys, dt.key_type, to_physical, ids, (*path, "key"))
        items = _rename(values.items, dt.value_type, to_physical, ids, (*path, "value"))
        map_type = pa.map_(
            _with_nested_id(kind.key_field.with_type(keys.type), ids, (*path, "key")),
            _with_nested_id(kind.item_field.with_type(items.type), ids, (*path, "value")),
        )
        return pa.MapArray.from_arrays(values.offsets, keys, items, type=map_type, mask=_nulls(values))
    return values


def _with_nested_id(f: pa.Field, ids: Mapping[str, Any], path: tuple[str, ...]) -> pa.Field:
    nested = ids.get(".".join(path))
    return f if nested is None else f.with_metadata({_FIELD_ID: str(int(nested)).encode()})


def _rename_table(table: pa.Table, schema: StructType, to_physical: bool) -> pa.Table:
    import pyarrow as pa

    by_name = {(f.name.lower() if to_physical else f.physical_name): f for f in schema.fields}
    fields, columns = [], []
    for index, name in enumerate(table.column_names):
        f = by_name.get(name.lower() if to_physical else name)
        source = table.schema.field(index)
        if f is None:
            if to_physical:  # not a table column (``_change_type`` of change data): kept as it is
                fields.append(source)
                columns.append(table.column(index))
            continue
        ids, path = f.metadata.get(NESTED_IDS), (f.physical_name,)
        chunks = [_rename(c, f.type, to_physical, ids, path) for c in table.column(index).chunks]
        kind = chunks[0].type if chunks else _rename(pa.array([], source.type), f.type, to_physical, ids, path).type
        meta = _field_id(f) if to_physical else None
        fields.append(pa.field(f.physical_name if to_physical else f.name, kind, source.nullable, metadata=meta))
        columns.append(pa.chunked_array(chunks, type=kind))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def rename_to_physical(table: pa.Table, schema: StructType) -> pa.Table:
    """A table of logical columns (any of ``schema``'s, in any order) as a data file holds
    it: physical names at every level, and each field's id as its Parquet field id (Delta
    writes them in both modes). A column the schema does not have (``_change_type`` of
    change data) is kept as it is."""
    return _rename_table(table, schema, to_physical=True)


def rename_to_logical(table: pa.Table, schema: StructType) -> pa.Table:
    """Rename a data file's physical columns (top-level and nested, inside arrays and maps
    too) to logical names; columns the schema does not have (dropped ones) are left out."""
    return _rename_table(table, schema, to_physical=False)
