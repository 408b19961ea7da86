"""Spark writes (the data source's tasks and ``write_table``'s Spark Parquet writer) collect
statistics for exactly the columns ``delta.dataSkippingStatsColumns`` lists, keyed by
physical name under column mapping, as Delta's ``TransactionalWrite`` does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deltalog.txn.delta_log import DeltaLog

pytestmark = pytest.mark.spark

KEY = "delta.dataSkippingStatsColumns"


def _stats(path: str) -> list[dict[str, Any]]:
    return [json.loads(f.stats or "{}") for f in DeltaLog.for_table(path).update().files]


def _physical(path: str) -> dict[str, str]:
    return {f.name: f.physical_name for f in DeltaLog.for_table(path).update().schema.fields}


@pytest.mark.parametrize("writer", ["format", "write_table"])
def test_spark_writes_collect_statistics_for_the_listed_columns(spark: Any, tmp_path: Any, writer: str) -> None:
    from deltalog.contrib.spark import write_table

    df = spark.createDataFrame(
        [(1, "a", 1.5, ("u", 7)), (2, None, 2.5, ("v", 8))], "id long, k string, x double, s struct<a:string,b:int>"
    ).coalesce(1)
    path = str(tmp_path / writer)
    options = {KEY: "K, s.b", "delta.dataSkippingNumIndexedCols": "1", "delta.columnMapping.mode": "name"}
    if writer == "format":
        df.write.format("deltalog").mode("append").options(**options).save(path)
    else:
        write_table(df, path, **options)
    physical = _physical(path)
    k, s = physical["k"], physical["s"]
    (stats,) = _stats(path)
    b = next(iter(stats["minValues"][s]))  # the physical name of s.b
    assert stats["minValues"] == {k: "a", s: {b: 7}}
    assert stats["maxValues"] == {k: "a", s: {b: 8}}
    assert stats["nullCount"] == {k: 1, s: {b: 0}}
    assert k != "k" and b != "b"  # keyed by physical names


def test_the_builder_and_alter_methods_keep_the_property_valid(spark: Any, tmp_path: Any) -> None:
    from deltalog.contrib.spark import DeltaTable
    from deltalog.errors import InvalidStatsColumnsError

    path = str(tmp_path / "t")

    def builder() -> Any:
        return (
            DeltaTable.create(spark)
            .location(path)
            .addColumn("id", "long")
            .addColumn("flag", "boolean")
            .addColumn("p", "string")
            .partitionedBy("p")
            .property("delta.columnMapping.mode", "name")
        )

    with pytest.raises(InvalidStatsColumnsError, match="DELTA_COLUMN_DATA_SKIPPING_NOT_SUPPORTED_TYPE"):
        builder().property(KEY, "id, flag").execute()
    assert DeltaLog.for_table(path).update().version == -1
    table = builder().property(KEY, "id").execute()
    with pytest.raises(InvalidStatsColumnsError, match="PARTITIONED_COLUMN"):
        table.setProperties({KEY: "id, p"})
    table.renameColumn("id", "key")
    assert DeltaLog.for_table(path).update().metadata.configuration[KEY] == "key"
