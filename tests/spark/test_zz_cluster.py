"""The data source on ``local-cluster[2,1,1024]``: separate executor JVMs and Python workers."""

from __future__ import annotations

import pytest

from tests.spark.helpers import commits, delta_rs_rows, rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_cluster_write_read_merge(spark_cluster, table_path):
    from deltalog.contrib.spark import DeltaTable

    spark = spark_cluster
    pids = spark.range(4).repartition(2).rdd.mapPartitions(lambda _: [__import__("os").getpid()]).collect()
    assert len(set(pids)) >= 1
    df = spark.createDataFrame([(i, f"d{i % 3}") for i in range(60)], "id long, day string").repartition(4)
    df.write.format("deltalog").mode("append").option("partitionBy", "day").save(table_path)
    adds = [a for a in commits(table_path)[0] if "add" in a]
    assert len(adds) >= 3
    got = rows(spark.read.format("deltalog").load(table_path).filter("day = 'd1'"), ["id"])
    assert got.id.tolist() == [i for i in range(60) if i % 3 == 1]
    table = DeltaTable.forPath(spark, table_path)
    src = spark.createDataFrame([(1, "d1"), (100, "d0")], "id long, day string")
    table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedDelete().whenNotMatchedInsertAll().execute()
    ids = sorted(delta_rs_rows(table_path, ["id"]).id.tolist())
    assert ids == sorted([i for i in range(60) if i != 1] + [100])
