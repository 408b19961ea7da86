"""NOT NULL constraints nested in arrays and maps, which no writer can enforce (Delta's
``SchemaUtils.removeUnenforceableNotNullConstraints``, run by ``updateMetadata`` on every
schema change): refused, or dropped when the engine setting
``allow_unenforced_not_null`` (Delta's
``spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled``) is on.

As in Delta, what counts is Spark's ``SchemaUtils.typeAsNullable`` of an array's element
type or a map's key and value types: a struct there must be all nullable (at every depth),
an array there must allow null elements; the top array's own ``containsNull`` and a map of
atomic types' ``valueContainsNull`` are kept as written."""

from __future__ import annotations

import json

from deltalog.txn.commit.commit_errors import NestedNotNullConstraintError
from deltalog.txn.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    as_nullable,
    parse_schema,
)

__all__ = ["ALLOW_UNENFORCED_NOT_NULL_CONF", "enforceable_not_nulls"]

ALLOW_UNENFORCED_NOT_NULL_CONF = "spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled"


def _type_as_nullable(dt: DataType) -> DataType:
    """Spark's ``SchemaUtils.typeAsNullable``: only structs (recursively) and the top level of
    an array or a map holding structs are made nullable."""
    if isinstance(dt, StructType):
        return as_nullable(dt)
    if isinstance(dt, ArrayType):
        element = as_nullable(dt.element_type) if isinstance(dt.element_type, StructType) else dt.element_type
        return ArrayType(element, True)
    if isinstance(dt, MapType) and (isinstance(dt.key_type, StructType) or isinstance(dt.value_type, StructType)):
        key = as_nullable(dt.key_type) if isinstance(dt.key_type, StructType) else dt.key_type
        value = as_nullable(dt.value_type) if isinstance(dt.value_type, StructType) else dt.value_type
        return MapType(key, value, True)
    return dt


def _nullable(nested: DataType, parent: str, nest_type: str, allow: bool) -> DataType:
    relaxed = _type_as_nullable(nested)
    if relaxed != nested and not allow:
        pretty = json.dumps(nested.to_json_value(), indent=2)
        raise NestedNotNullConstraintError(parent, nest_type, pretty, ALLOW_UNENFORCED_NOT_NULL_CONF)
    return relaxed


def _checked(dt: DataType, path: str, allow: bool) -> DataType:
    """``dt`` (at ``path``) with its nested NOT NULLs dropped, walking as Delta's
    ``transformColumns`` does: each field is checked, then its (relaxed) type entered."""
    if isinstance(dt, StructType):
        return StructType(tuple(_checked_field(f, path, allow) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return ArrayType(_checked(dt.element_type, f"{path}.element", allow), dt.contains_null)
    if isinstance(dt, MapType):
        key = _checked(dt.key_type, f"{path}.key", allow)
        return MapType(key, _checked(dt.value_type, f"{path}.value", allow), dt.value_contains_null)
    return dt


def _checked_field(f: StructField, path: str, allow: bool) -> StructField:
    name = f"{path}.{f.name}" if path else f.name
    dt = f.type
    if isinstance(dt, ArrayType):
        dt = ArrayType(_nullable(dt.element_type, name, "element", allow), dt.contains_null)
    elif isinstance(dt, MapType):
        key = _nullable(dt.key_type, name, "key", allow)
        dt = MapType(key, _nullable(dt.value_type, name, "value", allow), dt.value_contains_null)
    return StructField(f.name, _checked(dt, name, allow), f.nullable, f.metadata)


def enforceable_not_nulls(schema_string: str, allow: bool) -> str:
    """``schema_string`` unchanged when it has no NOT NULL nested in an array or a map; else
    :class:`NestedNotNullConstraintError`, or (``allow``) the schema without those."""
    schema = parse_schema(schema_string)
    checked = _checked(schema, "", allow)
    if checked == schema:
        return schema_string
    return json.dumps(checked.to_json_value(), separators=(",", ":"))
