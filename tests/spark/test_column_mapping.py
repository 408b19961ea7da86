"""Column mapping written through the Spark data source: tables created with
``delta.columnMapping.mode`` (name and id), columns renamed, added and dropped with the
``DeltaTable`` ALTER methods, and the rows read back by the Python path, the native read and
delta-rs, all equal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deltalog.contrib.spark import read_table
from deltalog.contrib.spark.tables import DeltaTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.errors import ColumnMappingRequiredError, InvalidSchemaChangeError
from tests.log.test_column_mapping_writes import _delta_rs_rows


def _rows(df: Any) -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=str)


def test_spark_writes_alters_and_deletes_in_a_name_mode_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    first = spark.createDataFrame([(1, "a", (10,)), (2, "b", None)], "id long, part string, s struct<x:int>")
    writer = first.write.format("deltalog").mode("append").option("delta.columnMapping.mode", "name")
    writer.option("partitionBy", "part").save(path)
    table = DeltaTable.forPath(spark, path)
    table.renameColumn("id", "ident")
    table.renameColumn("s.x", "y")
    table.addColumn("extra", "string", comment="dropped below")
    second = spark.createDataFrame(
        [(3, "a", (30,), "e"), (4, "b", (40,), "f")], "ident long, part string, s struct<y:int>, extra string"
    )
    second.write.format("deltalog").mode("append").save(path)
    table.dropColumn("extra")
    table.delete("part = 'b' AND ident = 4")  # rewrites a file: physical names again

    expected = [
        {"ident": 1, "part": "a", "s": {"y": 10}},
        {"ident": 2, "part": "b", "s": None},
        {"ident": 3, "part": "a", "s": {"y": 30}},
    ]
    assert _rows(read_table(spark, path, native=False)) == expected
    assert _rows(read_table(spark, path)) == expected
    assert _delta_rs_rows(Path(path)) == expected
    snap = DeltaLog.for_table(path).update()
    assert all(k.startswith("col-") for f in snap.files for k in f.partition_values)
    with pytest.raises(InvalidSchemaChangeError, match="partition column"):
        table.dropColumn("part")


def test_spark_writes_an_id_mode_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a", (10,)), (2, "b", None)], "id long, part string, s struct<x:int>")
    df.write.format("deltalog").mode("append").option("delta.columnMapping.mode", "id").save(path)
    expected = [{"id": 1, "part": "a", "s": {"x": 10}}, {"id": 2, "part": "b", "s": None}]
    assert _rows(read_table(spark, path)) == expected
    assert _delta_rs_rows(Path(path)) == expected
    assert DeltaLog.for_table(path).update().properties.column_mapping_mode == "id"


def test_spark_enables_name_mode_on_an_existing_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "x")], "id long, v string").write.format("deltalog").mode("append").save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(ColumnMappingRequiredError):
        table.renameColumn("v", "value")
    table.setProperties({"delta.columnMapping.mode": "name"})
    table.renameColumn("v", "value")
    spark.createDataFrame([(2, "y")], "id long, value string").write.format("deltalog").mode("append").save(path)
    expected = [{"id": 1, "value": "x"}, {"id": 2, "value": "y"}]
    assert _rows(read_table(spark, path)) == expected
    assert _delta_rs_rows(Path(path)) == expected
