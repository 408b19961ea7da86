"""The Delta schema of a Parquet file's footer, as Spark infers it (``ParquetFileFormat
.readSchemaFromFooter``, which CONVERT TO DELTA uses through Delta's schema merge).

pyarrow reads a ``variant`` column as the group Spark wrote it as: ``struct<value,
metadata>``, or ``struct<metadata, value, typed_value>`` when shredded (Spark 4.1+ shreds by
default). Spark types a column by the schema its writer left in the footer's
``org.apache.spark.sql.parquet.row.metadata`` first, and that schema says ``variant``: such a
group is typed ``variant`` here too, at any depth (in structs, arrays and maps). Every other
type is pyarrow's.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from deltalog.txn.protocol.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    from_arrow,
)

__all__ = ["SPARK_ROW_METADATA_KEY", "footer_schema"]

#: the footer key Spark's Parquet writer keeps the written schema in (``ParquetReadSupport.SPARK_METADATA_KEY``)
SPARK_ROW_METADATA_KEY = b"org.apache.spark.sql.parquet.row.metadata"
_VARIANT = PrimitiveType("variant")


def footer_schema(footer: pa.Schema) -> StructType:
    """The schema of a file whose Arrow footer schema is ``footer``: pyarrow's types, with the
    groups Spark's row metadata calls ``variant`` typed so."""
    schema = from_arrow(footer)
    try:
        spark = json.loads((footer.metadata or {}).get(SPARK_ROW_METADATA_KEY, b""))
    except ValueError:
        return schema
    typed = _with_variants(schema, spark)
    assert isinstance(typed, StructType)
    return typed


def _is_variant_group(data_type: DataType) -> bool:
    names = {f.name for f in data_type.fields} if isinstance(data_type, StructType) else set()
    return {"metadata", "value"} <= names <= {"metadata", "value", "typed_value"} or names == {
        "metadata",
        "typed_value",
    }


def _with_variants(data_type: DataType, spark: Any) -> DataType:
    """``data_type`` with its variant groups typed ``variant`` where the Spark type ``spark``
    (its JSON form) says so; anything the two do not agree on is left as it is."""
    if spark == "variant":
        return _VARIANT if _is_variant_group(data_type) else data_type
    if not isinstance(spark, dict):
        return data_type
    if isinstance(data_type, StructType) and spark.get("type") == "struct":
        by_name = {f.get("name"): f.get("type") for f in spark.get("fields") or [] if isinstance(f, dict)}
        return StructType(
            tuple(
                StructField(f.name, _with_variants(f.type, by_name[f.name]), f.nullable, f.metadata)
                if f.name in by_name
                else f
                for f in data_type.fields
            )
        )
    if isinstance(data_type, ArrayType) and spark.get("type") == "array":
        return ArrayType(_with_variants(data_type.element_type, spark.get("elementType")), data_type.contains_null)
    if isinstance(data_type, MapType) and spark.get("type") == "map":
        return MapType(
            _with_variants(data_type.key_type, spark.get("keyType")),
            _with_variants(data_type.value_type, spark.get("valueType")),
            data_type.value_contains_null,
        )
    return data_type
