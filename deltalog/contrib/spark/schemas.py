"""Table schemas as Delta stores them (Spark's StructType JSON) and what writes do with them.

Delta's ``schemaString`` is exactly Spark's ``StructType.json()``, so the write path works
on that JSON: nullability relaxed as Delta does on write, schema merging
(``mergeSchema``), comparison, and column mapping (ids and physical names).
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping
from typing import Any

from deltalog.contrib.spark.errors import SchemaMismatchError

__all__ = [
    "CDF_RESERVED_COLUMNS",
    "as_nullable",
    "assign_column_mapping",
    "field_ids",
    "merge_schemas",
    "physical_names",
    "schemas_equal",
    "top_level_types",
]

CDF_RESERVED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_ID = "delta.columnMapping.id"
_PHYS = "delta.columnMapping.physicalName"


def _walk_nullable(t: Any) -> Any:
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "struct":
            fields = [{**f, "nullable": True, "type": _walk_nullable(f["type"])} for f in t["fields"]]
            return {**t, "fields": fields}
        if kind == "array":
            return {**t, "containsNull": True, "elementType": _walk_nullable(t["elementType"])}
        if kind == "map":
            return {
                **t,
                "valueContainsNull": True,
                "keyType": _walk_nullable(t["keyType"]),
                "valueType": _walk_nullable(t["valueType"]),
            }
    return t


def as_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """Every field and element nullable, as Delta's ``schema.asNullable`` on write."""
    result: dict[str, Any] = _walk_nullable(schema)
    return result


def _strip(t: Any) -> Any:
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "struct":
            return ("struct", tuple((f["name"].lower(), _strip(f["type"])) for f in t["fields"]))
        if kind == "array":
            return ("array", _strip(t["elementType"]))
        if kind == "map":
            return ("map", _strip(t["keyType"]), _strip(t["valueType"]))
    return t


def schemas_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same columns (case-insensitive, any order at the top level) and types; nullability ignored."""
    fa = {f["name"].lower(): _strip(f["type"]) for f in a["fields"]}
    fb = {f["name"].lower(): _strip(f["type"]) for f in b["fields"]}
    return fa == fb


def _merge_type(table: Any, new: Any, where: str) -> Any:
    if isinstance(table, dict) and isinstance(new, dict) and table.get("type") == new.get("type") == "struct":
        return _merge_struct(table, new, where)
    if _strip(table) == _strip(new):
        return table
    widen = {
        ("integer", "long"),
        ("short", "integer"),
        ("short", "long"),
        ("byte", "short"),
        ("byte", "integer"),
        ("byte", "long"),
        ("float", "double"),
    }
    if (table, new) in widen or (new, table) in widen:
        raise SchemaMismatchError(
            f"column {where} is {table} in the table and {new} in the data; cast the column to "
            f"{table} before writing, or widen it (delta.enableTypeWidening with mergeSchema, or alterColumnType)"
        )
    raise SchemaMismatchError(
        f"column {where} is {json.dumps(table)} in the table and {json.dumps(new)} in the data; cast it, "
        "or overwrite the table with overwriteSchema=true"
    )


def _merge_struct(table: dict[str, Any], new: dict[str, Any], where: str) -> dict[str, Any]:
    fields = [copy.deepcopy(f) for f in table["fields"]]
    index = {f["name"].lower(): i for i, f in enumerate(fields)}
    for f in new["fields"]:
        name = f["name"]
        path = f"{where}.{name}" if where else name
        i = index.get(name.lower())
        if i is None:
            fields.append({**copy.deepcopy(f), "nullable": True, "type": _walk_nullable(f["type"])})
        else:
            fields[i] = {**fields[i], "type": _merge_type(fields[i]["type"], f["type"], path)}
    return {**table, "fields": fields}


def merge_schemas(table: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The table schema with the data's new columns added, nullable (``mergeSchema``); the
    table's columns keep their nullability, NOT NULL ones too (Delta's ``mergeSchemas``)."""
    return _merge_struct(table, new, "")


def check_write_compatible(table: dict[str, Any], data: dict[str, Any]) -> None:
    """Raise :class:`SchemaMismatchError` unless ``data`` fits ``table`` without a schema change."""
    table_fields = {f["name"].lower(): f for f in table["fields"]}
    extra = [f["name"] for f in data["fields"] if f["name"].lower() not in table_fields]
    if extra:
        raise SchemaMismatchError(
            f"the data has columns the table does not: {', '.join(extra)}; write with "
            "option('mergeSchema', 'true') to add them, or overwrite with overwriteSchema=true"
        )
    for f in data["fields"]:
        _merge_type(table_fields[f["name"].lower()]["type"], f["type"], f["name"])


def top_level_types(schema: dict[str, Any]) -> dict[str, str]:
    """``{column: Spark type name}`` (a JSON string for complex types)."""
    return {f["name"]: (f["type"] if isinstance(f["type"], str) else json.dumps(f["type"])) for f in schema["fields"]}


def _assign(t: Any, next_id: list[int]) -> Any:
    if isinstance(t, dict) and t.get("type") == "struct":
        fields = []
        for f in t["fields"]:
            meta = dict(f.get("metadata") or {})
            if _ID not in meta:
                next_id[0] += 1
                meta[_ID] = next_id[0]
                meta[_PHYS] = f"col-{uuid.uuid4()}"
            fields.append({**f, "metadata": meta, "type": _assign(f["type"], next_id)})
        return {**t, "fields": fields}
    if isinstance(t, dict) and t.get("type") == "array":
        return {**t, "elementType": _assign(t["elementType"], next_id)}
    if isinstance(t, dict) and t.get("type") == "map":
        return {**t, "keyType": _assign(t["keyType"], next_id), "valueType": _assign(t["valueType"], next_id)}
    return t


def assign_column_mapping(schema: dict[str, Any], max_id: int) -> tuple[dict[str, Any], int]:
    """Give every field without one a column mapping id and physical name; returns the new max id."""
    counter = [max_id]
    result: dict[str, Any] = _assign(schema, counter)
    return result, counter[0]


def physical_names(schema: dict[str, Any], mode: str) -> dict[str, str]:
    """Top-level ``{logical: physical}`` under column mapping (empty when mode is none)."""
    if mode == "none":
        return {}
    return {f["name"]: (f.get("metadata") or {}).get(_PHYS, f["name"]) for f in schema["fields"]}


def field_ids(schema: dict[str, Any], mode: str) -> dict[str, int]:
    """Top-level ``{logical: column mapping id}`` (empty when mode is none)."""
    if mode == "none":
        return {}
    out: dict[str, int] = {}
    for f in schema["fields"]:
        fid = (f.get("metadata") or {}).get(_ID)
        if fid is not None:
            out[f["name"]] = int(fid)
    return out


def physical_schema(schema: dict[str, Any], mode: str) -> dict[str, Any]:
    """The schema with physical names everywhere (what the Parquet files hold)."""
    if mode == "none":
        return schema

    def rename(t: Any) -> Any:
        if isinstance(t, dict) and t.get("type") == "struct":
            return {
                **t,
                "fields": [
                    {**f, "name": (f.get("metadata") or {}).get(_PHYS, f["name"]), "type": rename(f["type"])}
                    for f in t["fields"]
                ],
            }
        if isinstance(t, dict) and t.get("type") == "array":
            return {**t, "elementType": rename(t["elementType"])}
        if isinstance(t, dict) and t.get("type") == "map":
            return {**t, "keyType": rename(t["keyType"]), "valueType": rename(t["valueType"])}
        return t

    result: dict[str, Any] = rename(schema)
    return result


def lookup_field(schema: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for f in schema["fields"]:
        if f["name"].lower() == name.lower():
            found: dict[str, Any] = f
            return found
    return None
