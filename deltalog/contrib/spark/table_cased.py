"""The written data's names at every depth as the table spells them (Delta's
``SchemaUtils.normalizeColumnNames``): a field named in another case inside a struct, an
array's elements or a map's keys and values is written under the table's name."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

JsonType = Any  # a Delta schema type: a primitive name (str) or a dict


def _by_lower(table_type: JsonType) -> dict[str, JsonType]:
    fields = table_type.get("fields", []) if isinstance(table_type, dict) else []
    return {f["name"].lower(): f for f in fields}


def arrow_type(data: pa.DataType, table_type: JsonType) -> pa.DataType:
    """``data`` with its nested field names as ``table_type`` (a Delta schema type) spells them."""
    if pa.types.is_struct(data):
        by_lower = _by_lower(table_type)
        fields = []
        for i in range(data.num_fields):
            f = data.field(i)
            match = by_lower.get(f.name.lower())
            if match is not None:
                f = pa.field(match["name"], arrow_type(f.type, match["type"]), f.nullable, f.metadata)
            fields.append(f)
        return pa.struct(fields)
    if not isinstance(table_type, dict):
        return data
    if pa.types.is_map(data):
        key = arrow_type(data.key_type, table_type.get("keyType"))
        item = arrow_type(data.item_type, table_type.get("valueType"))
        return pa.map_(data.key_field.with_type(key), data.item_field.with_type(item), data.keys_sorted)
    if pa.types.is_list(data) or pa.types.is_large_list(data):
        element = data.value_field.with_type(arrow_type(data.value_type, table_type.get("elementType")))
        return pa.list_(element) if pa.types.is_list(data) else pa.large_list(element)
    return data


def arrow_table(table: pa.Table, schema: JsonType) -> pa.Table:
    """``table`` with its names at every depth as the table's ``schema`` spells them."""
    by_lower = _by_lower(schema)
    for i, f in enumerate(table.schema):
        match = by_lower.get(f.name.lower())
        if match is None:
            continue
        renamed = pa.field(match["name"], arrow_type(f.type, match["type"]), f.nullable, f.metadata)
        if renamed != f or renamed.name != f.name:
            column = table.column(i)
            chunks = [c.view(renamed.type) for c in column.chunks]
            table = table.set_column(i, renamed, pa.chunked_array(chunks, type=renamed.type))
    return table


def spark_type(data: JsonType, table_type: JsonType) -> JsonType:
    """``data`` (a Spark type's JSON) with its nested field names as ``table_type`` spells them."""
    if not isinstance(data, dict) or not isinstance(table_type, dict):
        return data
    kind = data.get("type")
    if kind == "struct":
        by_lower = _by_lower(table_type)
        fields = []
        for f in data["fields"]:
            match = by_lower.get(f["name"].lower())
            if match is not None:
                f = {**f, "name": match["name"], "type": spark_type(f["type"], match["type"])}
            fields.append(f)
        return {**data, "fields": fields}
    if kind == "array":
        return {**data, "elementType": spark_type(data["elementType"], table_type.get("elementType"))}
    if kind == "map":
        key = spark_type(data["keyType"], table_type.get("keyType"))
        return {**data, "keyType": key, "valueType": spark_type(data["valueType"], table_type.get("valueType"))}
    return data
