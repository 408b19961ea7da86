"""Spark schemas <-> deltalog's schema model.

Delta's ``schemaString`` is exactly Spark's ``StructType.json()``, so the Spark layer holds
schemas as that JSON (``DataType.jsonValue()`` dicts). This module only converts between
those dicts and the one schema model, :class:`deltalog.txn.protocol.schema.StructType`;
what writes do with a schema (nullability relaxed on write, ``mergeSchema``, comparison)
lives in :mod:`deltalog.txn.protocol.schema`, and column mapping (ids, physical names) in
:mod:`deltalog.txn.protocol.column_mapping`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import SchemaMismatchError
from deltalog.txn.protocol import column_mapping, schema
from deltalog.txn.protocol.collations import collated_type_name, field_collation
from deltalog.txn.protocol.errors import SchemaMismatchError as ProtocolSchemaMismatchError
from deltalog.txn.protocol.schema import StructType, data_type_from_json

__all__ = [
    "CDF_RESERVED_COLUMNS",
    "as_nullable",
    "assign_column_mapping",
    "assign_table_column_mapping",
    "check_write_compatible",
    "field_ids",
    "from_model",
    "logical_schema",
    "lookup_field",
    "merge_schemas",
    "physical_names",
    "physical_schema",
    "schemas_equal",
    "spark_struct",
    "to_model",
    "top_level_types",
    "with_parquet_field_ids",
    "without_column_mapping_metadata",
]

if TYPE_CHECKING:
    from pyspark.sql.types import StructType as SparkStructType

    from deltalog.txn.protocol.actions import Metadata

CDF_RESERVED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def to_model(spark_schema: Mapping[str, Any]) -> StructType:
    """The model of a Spark ``StructType.jsonValue()`` (a bare ``{"fields": [...]}`` too)."""
    model = data_type_from_json({"type": "struct", **spark_schema})
    if not isinstance(model, StructType):
        raise SchemaMismatchError(f"a table schema must be a struct, got {model.simple_string()}")
    return model


def spark_struct(spark_schema: Mapping[str, Any]) -> SparkStructType:
    """The PySpark ``StructType`` of a schema's JSON. PySpark's ``StructField.fromJson``
    rewrites a field's ``__COLLATIONS`` map in place (``spark.UTF8_LCASE`` becomes
    ``UTF8_LCASE``), which corrupts a schema dict still in use and fails a second parse of
    it: every parse goes through here, on a copy."""
    from pyspark.sql.types import StructType as SparkStructType

    return SparkStructType.fromJson(copy.deepcopy({"type": "struct", **spark_schema}))


def from_model(model: StructType) -> dict[str, Any]:
    """The Spark ``StructType.jsonValue()`` of a schema."""
    return model.to_json_value()


def as_nullable(spark_schema: dict[str, Any]) -> dict[str, Any]:
    """Every field and element nullable, as Delta's ``schema.asNullable`` on write."""
    nullable = schema.as_nullable(to_model(spark_schema))
    assert isinstance(nullable, StructType)
    return from_model(nullable)


def schemas_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same columns (case-insensitive, any order at the top level) and types; nullability ignored."""
    return schema.same_columns(to_model(a), to_model(b))


def merge_schemas(table: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The table schema with the data's new columns added, nullable (``mergeSchema``)."""
    try:
        return from_model(schema.merge_schemas(to_model(table), to_model(new)))
    except ProtocolSchemaMismatchError as exc:
        raise SchemaMismatchError(str(exc)) from None


def check_write_compatible(table: dict[str, Any], data: dict[str, Any]) -> None:
    """Raise :class:`SchemaMismatchError` unless ``data`` fits ``table`` without a schema change."""
    try:
        schema.check_write_compatible(to_model(table), to_model(data))
    except ProtocolSchemaMismatchError as exc:
        raise SchemaMismatchError(str(exc)) from None


def top_level_types(spark_schema: Mapping[str, Any]) -> dict[str, str]:
    """``{column: Spark type name}`` (a JSON string for complex types; a collated string is
    ``string collate <name>``, as Spark names it)."""
    out: dict[str, str] = {}
    for f in to_model(spark_schema).fields:
        value = f.type.to_json_value()
        collation = field_collation(f.to_json_value()) if value == "string" else None
        out[f.name] = (
            collated_type_name(collation) if collation else value if isinstance(value, str) else json.dumps(value)
        )
    return out


def assign_column_mapping(
    spark_schema: dict[str, Any], max_id: int, replacing: dict[str, Any] | None = None
) -> tuple[dict[str, Any], int]:
    """Give every field without one a column mapping id and physical name; returns the new max
    id. ``replacing``: the schema this one overwrites, whose fields' ids and physical names
    are reused where a field keeps its path and type (Delta's overwrite)."""
    old = None if replacing is None else to_model(replacing)
    assigned, new_max = column_mapping.assign_column_mapping(
        to_model(spark_schema), max_id, old, overwriting=old is not None
    )
    return from_model(assigned), new_max


def assign_table_column_mapping(
    spark_schema: dict[str, Any], mode: str, old: Metadata | None
) -> tuple[dict[str, Any], int]:
    """Column mapping of a table's schema under ``mode``: ids from 1 for a new table; for one
    re-created over ``old`` (REPLACE TABLE, ``overwriteSchema``) they go on above its
    ``maxColumnId``, and a field keeping its path and type keeps its id and physical name while
    the mode stays (Delta's ``replaceMetadata``)."""
    if old is None:
        return assign_column_mapping(spark_schema, 0)
    same_mode = old.properties.column_mapping_mode == mode
    replaced = json.loads(old.schema_string) if same_mode else None
    return assign_column_mapping(spark_schema, old.properties.column_mapping_max_id, replacing=replaced)


def physical_names(spark_schema: Mapping[str, Any], mode: str) -> dict[str, str]:
    """Top-level ``{logical: physical}`` under column mapping (empty when mode is none)."""
    if mode == "none":
        return {}
    return column_mapping.logical_to_physical(to_model(spark_schema), mode)


def field_ids(spark_schema: Mapping[str, Any], mode: str) -> dict[str, int]:
    """Top-level ``{logical: column mapping id}`` (empty when mode is none)."""
    return column_mapping.field_ids(to_model(spark_schema), mode)


def physical_schema(spark_schema: dict[str, Any], mode: str) -> dict[str, Any]:
    """The schema with physical names everywhere (what the Parquet files hold)."""
    if mode == "none":
        return spark_schema
    return from_model(column_mapping.physical_schema(to_model(spark_schema)))


def logical_schema(spark_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema without column mapping metadata (what a DataFrame shows)."""
    return from_model(column_mapping.without_column_mapping(to_model(spark_schema)))


def without_column_mapping_metadata(data_type: Any) -> Any:
    """A schema's JSON (any type's) without column mapping field metadata at any depth, read
    as JSON only: a type the model does not know (an interval, a ``time``) stays for the
    checks that name it."""
    if not isinstance(data_type, dict):
        return data_type
    kind = data_type.get("type")
    if kind == "struct":
        fields = []
        for f in data_type.get("fields") or []:
            meta = {k: v for k, v in (f.get("metadata") or {}).items() if k not in column_mapping.COLUMN_MAPPING_KEYS}
            fields.append({**f, "type": without_column_mapping_metadata(f.get("type")), "metadata": meta})
        return {**data_type, "fields": fields}
    if kind == "array":
        return {**data_type, "elementType": without_column_mapping_metadata(data_type.get("elementType"))}
    if kind == "map":
        key, value = data_type.get("keyType"), data_type.get("valueType")
        return {
            **data_type,
            "keyType": without_column_mapping_metadata(key),
            "valueType": without_column_mapping_metadata(value),
        }
    return data_type


def with_parquet_field_ids(spark_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with each column mapping id also as ``parquet.field.id`` (Spark's Parquet
    reader resolves columns by it in ``id`` mode)."""
    return from_model(column_mapping.with_parquet_field_ids(to_model(spark_schema)))


def lookup_field(spark_schema: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    model = to_model(spark_schema)
    return model.field(name).to_json_value() if name in model else None
