"""Type widening and liquid clustering from Spark: DeltaTable.alterColumnType, automatic
widening on a mergeSchema write, and files written before a widening read by the Python
data source and by the native scan with the same rows."""

from __future__ import annotations

import json

import pytest

from tests.features.widening_tables import build, expected_rows
from tests.spark.helpers import commits

pytestmark = pytest.mark.spark


def _both_paths(spark, path, order="id"):
    from deltalog.contrib.spark import read_table

    python = [r.asDict(recursive=True) for r in read_table(spark, path, native=False).orderBy(order).collect()]
    native = [r.asDict(recursive=True) for r in read_table(spark, path, native=True).orderBy(order).collect()]
    assert python == native
    return python


# (tmp_path, not table_path: delta-rs 1.x refuses the typeWidening reader feature)
def test_files_written_before_a_widening_read_as_the_wider_type(spark, tmp_path):
    table_path = str(tmp_path / "t")
    build(table_path)
    assert _both_paths(spark, table_path) == expected_rows()


def test_alter_column_type_and_merge_schema_widening(spark, tmp_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.errors import UnsupportedTypeChangeError

    table_path = str(tmp_path / "t")
    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long")
        .addColumn("a", "int")
        .addColumn("b", "short")
        .property("delta.enableTypeWidening", "true")
        .execute()
    )
    spark.sql("select 1L as id, 5 as a, cast(2 as short) as b").write.format("deltalog").mode("append").save(table_path)
    table.alterColumnType("a", "bigint")
    with pytest.raises(UnsupportedTypeChangeError):
        table.alterColumnType("a", "int")
    big = spark.sql("select 2L as id, 5000000000L as a, 70000 as b")
    with pytest.raises(Exception, match="short in the table"):  # without mergeSchema: no widening
        big.write.format("deltalog").mode("append").save(table_path)
    big.write.format("deltalog").mode("append").option("mergeSchema", "true").save(table_path)
    schema = json.loads(next(a["metaData"] for a in commits(table_path)[-1] if "metaData" in a)["schemaString"])
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["a"]["metadata"] == {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    assert fields["b"]["type"] == "integer"
    assert fields["b"]["metadata"] == {"delta.typeChanges": [{"fromType": "short", "toType": "integer"}]}
    assert _both_paths(spark, table_path) == [{"id": 1, "a": 5, "b": 2}, {"id": 2, "a": 5000000000, "b": 70000}]
