"""Writers from threads, and CHECK constraints / invariants in the Spark writers (local[2])."""

from __future__ import annotations

import threading

import pytest

from tests.spark.helpers import commits, delta_rs_rows, operations

pytestmark = pytest.mark.spark


def test_write_from_new_threads_after_register(spark, table_path):
    """Spark looks Python data sources up in the JVM thread's active session; a new
    thread has none until register()/activate() sets it (the main job's step 2)."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import register

    def batch(n: int):
        return spark.range(n * 10, n * 10 + 10, numPartitions=1).withColumn("day", F.lit(f"2024-01-0{n + 1}"))

    batch(0).write.format("deltalog").mode("append").option("partitionBy", "day").save(table_path)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            register(spark)
            batch(n).write.format("deltalog").mode("append").save(table_path)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(1, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert operations(table_path) == ["WRITE"] * 4
    assert sorted(delta_rs_rows(table_path, ["id"]).id.tolist()) == list(range(40))
    # date-like partition values keep their text through log replay (read as timestamps once)
    got = spark.read.format("deltalog").load(table_path).filter("day = '2024-01-02'")
    assert sorted(r.id for r in got.collect()) == list(range(10, 20))


def _constrained_table(spark, path: str, expression: str = "v > 0") -> None:
    from deltalog.contrib.spark import DeltaTable

    DeltaTable.create(spark).location(path).addColumn("id", "long").addColumn("v", "long").property(
        "delta.constraints.v_positive", expression
    ).execute()


def test_table_api_checks_constraints_in_tasks(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.protocol.constraints import ConstraintViolationError

    _constrained_table(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(1, 10), (2, 20)], "id long, v long")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    assert sorted(r.v for r in table.toDF().collect()) == [10, 20]
    before = len(commits(table_path))

    with pytest.raises(ConstraintViolationError, match="v_positive"):
        table.update("id = 1", {"v": "v - 100"})
    bad = spark.createDataFrame([(3, None)], "id long, v long")  # NULL is a violation too
    with pytest.raises(ConstraintViolationError, match="v_positive"):
        table.alias("t").merge(bad.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    assert len(commits(table_path)) == before  # nothing committed
    assert sorted(r.v for r in table.toDF().collect()) == [10, 20]

    table.update("id = 1", {"v": "v + 1"})  # satisfies the constraint: committed
    assert sorted(delta_rs_rows(table_path, ["id"]).v.tolist()) == [11, 20]
    table.restoreToVersion(1)  # RESTORE re-adds files that were checked when written
    assert sorted(delta_rs_rows(table_path, ["id"]).v.tolist()) == [10, 20]


def test_table_api_falls_back_to_spark_sql_for_unsupported_expressions(spark, table_path):
    from deltalog.contrib.spark import DeltaTable, write_table
    from deltalog.contrib.spark.constraints import ConstraintViolationError

    _constrained_table(spark, table_path, "cast(v as string) rlike '^[1-9]'")  # rlike: not in the subset
    table = DeltaTable.forPath(spark, table_path)
    good = spark.createDataFrame([(1, 10)], "id long, v long")
    table.alias("t").merge(good.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    with pytest.raises(ConstraintViolationError, match="v_positive"):
        table.update("id = 1", {"v": "0"})
    assert [r.v for r in table.toDF().collect()] == [10]
    # the data source cannot check it in its tasks: refused before anything is written
    with pytest.raises(Exception, match="cannot evaluate"):
        good.write.format("deltalog").mode("append").save(table_path)
    # write_table checks it with Spark SQL first, as Delta checks any expression
    # (InvariantEnforcementSuite's RuntimeReplaceable tests)
    with pytest.raises(
        ConstraintViolationError, match=r"v_positive .* violated by row with values:\n - id : 2\n - v : 0"
    ):
        write_table(spark.createDataFrame([(2, 0)], "id long, v long"), table_path)
    assert operations(table_path) == ["CREATE TABLE", "MERGE"]


def test_data_source_checks_constraints_in_tasks(spark, table_path):
    _constrained_table(spark, table_path)
    spark.createDataFrame([(1, 5)], "id long, v long").write.format("deltalog").mode("append").save(table_path)
    assert len(commits(table_path)) == 2
    bad = spark.createDataFrame([(i, 5 - i) for i in range(10)], "id long, v long").repartition(2)
    with pytest.raises(Exception, match="v_positive"):
        bad.write.format("deltalog").mode("append").save(table_path)
    assert len(commits(table_path)) == 2  # the failed job committed nothing
    assert sorted(delta_rs_rows(table_path, ["id"]).v.tolist()) == [5]


def _invariant(expression: str) -> dict[str, str]:
    import json

    return {"delta.invariants": json.dumps({"expression": {"expression": expression}})}


_ROW = "k string, p string, top struct<key: string, value: int>, v int"


def test_writes_check_constraints_as_delta_invariant_enforcement(spark, table_path):
    """InvariantEnforcementSuite and CheckConstraintsSuite cases, through Spark's writer
    (``native=True``) and the Python tasks: (native, data, rows, what the write raises)."""
    from pyspark.sql.types import IntegerType, StringType, StructType

    from deltalog.contrib.spark import DeltaTable, write_table

    top = StructType().add("key", StringType()).add("value", IntegerType(), True, _invariant("top.value < 3"))
    schema = StructType().add("k", StringType(), False).add("p", StringType()).add("top", top)
    schema = schema.add("v", IntegerType(), True, _invariant("v < 3"))
    DeltaTable.create(spark).location(table_path).addColumns(schema).partitionedBy("p").property(
        "delta.constraints.p_set", "p IS NOT NULL"
    ).execute()
    cases = [
        # "reject write on top level (nested) expression invariant when field is null": a column
        # (struct field) the data lacks is NULL, and Delta lists it as `null`
        (True, "k string, p string, top struct<key: string, value: int>", [("a", "x", ("b", 1))], " - v : null\n"),
        (True, "k string, p string, top struct<key: string>, v int", [("a", "x", ("b",), 1)], " - top.value : null\n"),
        # "write empty DataFrame - zero columns" / "reject non-nullable top level column - column
        # doesn't exist": a missing NOT NULL column is refused when the write is planned
        (True, "p string, v int", [], "Column k, which has a NOT NULL constraint, is missing"),
        # "reject empty string in check constraint": a string partition column's '' is NULL
        (True, _ROW, [("a", "", ("b", 1), 1)], "CHECK constraint p_set (p IS NOT NULL) violated by row"),
        (False, _ROW, [("a", "", ("b", 1), 1)], "CHECK constraint p_set (p IS NOT NULL) violated by row"),
    ]
    for native, data, rows, error in cases:
        with pytest.raises(Exception) as info:
            write_table(spark.createDataFrame(rows, data), table_path, native=str(native))
        assert error in str(info.value), (native, data, str(info.value))
    assert operations(table_path) == ["CREATE TABLE"]
