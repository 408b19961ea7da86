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

__all__ = ["VOID_TYPES", "refuse_null_types", "refuse_null_types_in_collections"]

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
