"""Delta's sink refuses ``void`` (NullType) columns in a streaming write.

Delta's ``DeltaSink.addBatch`` fails a batch whose data has a ``void`` type anywhere
(``SchemaUtils.nullTypeExistsRecursively``) or whose table has a generated ``void`` column
(``GeneratedColumn.hasGeneratedNullTypeColumn``): ``DELTA_NULL_SCHEMA_IN_STREAMING_WRITE``.
A batch (non-streaming) write instead leaves such columns out of its files, struct fields
too; a ``void`` inside an array or a map it cannot leave out, and refuses
(``DELTA_COMPLEX_TYPE_COLUMN_CONTAINS_NULL_TYPE``, Delta's ``SchemaUtils.dropNullTypeColumns``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from deltalog.contrib.spark.errors import SchemaMismatchError, StreamWriteNullTypeError
from deltalog.txn.protocol.generated_columns import GENERATION_EXPRESSION

__all__ = ["VOID_TYPES", "refuse_empty_written_structs", "refuse_null_types", "refuse_null_types_in_collections"]

#: how a schema's JSON names Spark's NullType
VOID_TYPES = ("null", "void")
_NULL = VOID_TYPES


def _null_paths(t: Any, path: str) -> Iterator[str]:
    """The paths of the ``void`` types in ``t`` (a type in a schema's JSON form)."""
    if not isinstance(t, dict):
        if t in _NULL:
            yield path
        return
    kind = t.get("type")
    if kind == "struct":
        for f in t["fields"]:
            yield from _null_paths(f["type"], f"{path}.{f['name']}" if path else f["name"])
    elif kind == "array":
        yield from _null_paths(t["elementType"], f"{path}.element")
    elif kind == "map":
        yield from _null_paths(t["keyType"], f"{path}.key")
        yield from _null_paths(t["valueType"], f"{path}.value")
    elif kind == "udt":
        yield from _null_paths(t.get("sqlType"), path)


def refuse_null_types(table: str, data: dict[str, Any], table_schema: dict[str, Any] | None) -> None:
    """Raise :class:`StreamWriteNullTypeError` for a stream's ``data`` schema with a ``void``
    type, or a ``table_schema`` (None: a new table) with a generated ``void`` column."""
    found = next(_null_paths(data, ""), None)
    if found is None and table_schema is not None:
        generated = (
            f["name"]
            for f in table_schema["fields"]
            if f["type"] in _NULL and GENERATION_EXPRESSION in (f.get("metadata") or {})
        )
        found = next(generated, None)
    if found is not None:
        raise StreamWriteNullTypeError(table, found)


def refuse_null_types_in_collections(data: dict[str, Any], path: str = "") -> None:
    """Raise :class:`SchemaMismatchError` for the first column (or struct field, named by its
    path) of a batch write's ``data`` schema that is an array or a map with a ``void`` type
    anywhere inside: Delta's ``DELTA_COMPLEX_TYPE_COLUMN_CONTAINS_NULL_TYPE``."""
    for f in data["fields"]:
        name = f"{path}.{f['name']}" if path else f["name"]
        t = f["type"]
        kind = t.get("type") if isinstance(t, dict) else None
        if kind == "struct":
            refuse_null_types_in_collections(t, name)
        elif kind in ("array", "map") and next(_null_paths(t, name), None) is not None:
            raise SchemaMismatchError(
                f"DELTA_COMPLEX_TYPE_COLUMN_CONTAINS_NULL_TYPE: Found nested NullType in column {name} which is of "
                f"{'ArrayType' if kind == 'array' else 'MapType'}. Delta doesn't support writing NullType in complex "
                "types; cast the column to a typed array or map"
            )


def _children(t: Any, path: str) -> Iterator[tuple[str, Any]]:
    """The (path, type) of the types directly inside ``t`` (a type in a schema's JSON form)."""
    if not isinstance(t, dict):
        return
    kind = t.get("type")
    if kind == "struct":
        yield from ((f"{path}.{f['name']}", f["type"]) for f in t["fields"])
    elif kind == "array":
        yield f"{path}.element", t["elementType"]
    elif kind == "map":
        yield from ((f"{path}.key", t["keyType"]), (f"{path}.value", t["valueType"]))


def _is_struct(t: Any) -> bool:
    return isinstance(t, dict) and t.get("type") == "struct"


def _emptied(t: Any) -> bool:
    """Whether struct ``t`` has no field left once its ``void`` fields are left out (at every depth)."""
    return all(f["type"] in _NULL or (_is_struct(f["type"]) and _emptied(f["type"])) for f in t["fields"])


def _empty_struct_path(t: Any, path: str) -> tuple[str, str] | None:
    """The first struct (depth first) in ``t`` with no fields or only ``void`` ones, and which."""
    if _is_struct(t) and not t["fields"]:
        return path, "STRUCT_NO_FIELDS: The column {} is a struct with no fields"
    if _is_struct(t) and all(f["type"] in _NULL for f in t["fields"]):
        return path, "STRUCT_ALL_VOID_FIELDS: The column {} is a struct where all fields have VOID type"
    for child_path, child in _children(t, path):
        found = _empty_struct_path(child, child_path)
        if found is not None:
            return found
    return None


def _any_emptied(t: Any) -> bool:
    """Whether a struct anywhere in ``t`` has no field left once ``void`` fields are left out."""
    if _is_struct(t) and _emptied(t):
        return True
    return any(_any_emptied(child) for _, child in _children(t, ""))


def refuse_empty_written_structs(data: dict[str, Any]) -> None:
    """Raise :class:`SchemaMismatchError` when a batch write's files would hold a struct with
    no field, its ``void`` fields left out (or no column at all): the Parquet writer cannot
    write an empty group, and Delta refuses (``DELTA_CANNOT_WRITE_EMPTY_SCHEMA``, its
    ``EmptySchemaWriteException``), naming the first such struct of ``data``."""
    fields = data["fields"]
    if fields and all(f["type"] in _NULL for f in fields):
        reason = "TABLE_ALL_VOID_COLUMNS: All columns in the table schema have VOID type"
    elif any(_any_emptied(f["type"]) for f in fields):
        found = next(filter(None, (_empty_struct_path(f["type"], f["name"]) for f in fields)))
        reason = found[1].format(found[0])
    else:
        return
    raise SchemaMismatchError(
        f"DELTA_CANNOT_WRITE_EMPTY_SCHEMA.{reason}: a Parquet file cannot hold an empty struct "
        "(void fields are left out of the files); cast the void columns to a type, or leave them out"
    )
