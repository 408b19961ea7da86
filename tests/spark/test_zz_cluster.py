"""The data source on ``local-cluster[2,1,1024]``: two executor JVMs, each with its own Python workers."""

from __future__ import annotations

import os
import time

import pytest

from tests.spark.helpers import commits, delta_rs_rows, rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _executor_jvm(_: object) -> list[int]:
    """In a task of a barrier stage: the pid of the JVM that runs this Python worker
    (walking up /proc), once every task of the stage is running."""
    from pyspark import BarrierTaskContext

    BarrierTaskContext.get().barrier()
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{ppid}/comm", encoding="utf-8") as f:
            if f.read().strip() == "java":
                return [ppid]
        pid = ppid
    return [-1]


def test_cluster_has_separate_executor_processes(spark_cluster):
    spark = spark_cluster
    sc = spark.sparkContext
    deadline = time.monotonic() + 120
    while sc._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.monotonic() < deadline:
        time.sleep(0.1)  # readiness poll: the two executors register asynchronously
    assert sc._jsc.sc().getExecutorMemoryStatus().size() == 3  # the driver and two executors
    driver_jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
    # A barrier stage starts all its tasks at once; with one core per executor its two
    # tasks run on the two executors, and each reports the JVM above its Python worker.
    jvms = sc.parallelize(range(2), 2).barrier().mapPartitions(_executor_jvm).collect()
    assert driver_jvm not in jvms and -1 not in jvms
    assert len(set(jvms)) == 2


def test_cluster_write_read_merge(spark_cluster, table_path):
    from deltalog.contrib.spark import DeltaTable

    spark = spark_cluster
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


def test_cluster_native_read_with_deletion_vectors(spark_cluster, tmp_path):
    """Spark's own Parquet scan on executor JVMs, the deleted rows dropped by the broadcast anti-join."""
    from deltalog.contrib.spark import read_table
    from tests.log import test_feature_tables as feature_tables

    feature_tables.test_deletion_vectors_on_disk_and_inline(tmp_path)
    path = str(tmp_path / "dv")
    native = read_table(spark_cluster, path)
    assert "FileScan parquet" in native._jdf.queryExecution().executedPlan().toString()
    python = read_table(spark_cluster, path, native=False)
    expected = sorted({*range(10), *range(100, 109)} - {0, 3, 7})
    assert sorted(r.id for r in native.collect()) == sorted(r.id for r in python.collect()) == expected
