"""A table's schema as a DataFrame shows it: the Delta schema without its column-mapping
metadata, as a Spark ``StructType`` and as the Arrow schema read tasks return.

Shared by the read path (the data source, the streaming source, the native path) and the
rewrites (DML, ``replaceWhere``), so it sits below all of them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ["arrow_schema", "logical_schema", "logical_struct"]


def logical_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without column-mapping metadata (what a DataFrame shows)."""

    def clean(t: Any) -> Any:
        if isinstance(t, dict) and t.get("type") == "struct":
            fields = []
            for f in t["fields"]:
                meta = {k: v for k, v in (f.get("metadata") or {}).items() if not k.startswith("delta.columnMapping")}
                fields.append({**f, "metadata": meta, "type": clean(f["type"])})
            return {**t, "fields": fields}
        if isinstance(t, dict) and t.get("type") == "array":
            return {**t, "elementType": clean(t["elementType"])}
        if isinstance(t, dict) and t.get("type") == "map":
            return {**t, "keyType": clean(t["keyType"]), "valueType": clean(t["valueType"])}
        return t

    result: dict[str, Any] = clean(schema)
    return result


def logical_struct(schema_string: str) -> StructType:
    """The table's schema string (Delta JSON) as the Spark ``StructType`` a DataFrame shows."""
    from pyspark.sql.types import StructType

    return StructType.fromJson(logical_schema(json.loads(schema_string)))


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of rows of ``schema`` (timestamps in UTC), as read tasks return them."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
