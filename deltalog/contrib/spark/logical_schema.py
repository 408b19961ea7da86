"""A table's schema as a DataFrame shows it: the Delta schema without its column-mapping
metadata, as a Spark ``StructType`` and as the Arrow schema read tasks return.

Shared by the read path (the data source, the streaming source, the native path) and the
rewrites (DML, ``replaceWhere``), so it sits below all of them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark import schemas

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ["arrow_schema", "logical_schema", "logical_struct"]


def logical_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without column-mapping metadata (what a DataFrame shows); raises
    ``UnsupportedTypeChangeError`` for a recorded type change no reader may convert."""
    from deltalog.txn.protocol.type_widening import check_type_changes_readable

    check_type_changes_readable(schema)
    return schemas.logical_schema(schema)


def logical_struct(schema_string: str) -> StructType:
    """The table's schema string (Delta JSON) as the Spark ``StructType`` a DataFrame shows."""
    return schemas.spark_struct(logical_schema(json.loads(schema_string)))


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of rows of ``schema`` (timestamps in UTC), as read tasks return them."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
