"""A DELETE whose condition is only on partition columns removes whole files without
reading them, as Delta's ``DeleteCommand`` does ("metadata-only delete"), and reports
Delta's metrics; a literal NULL comparison is not taken for ``IS NULL``."""

from __future__ import annotations

import json

import pytest

from deltalog.txn.delta_log import DeltaLog

pytestmark = pytest.mark.spark


def _damage(table_path: str, files: list[str]) -> None:
    """Overwrite data files with bytes that are not Parquet: reading one fails."""
    for rel in files:
        with open(f"{table_path}/{rel}", "r+b") as fh:
            size = fh.seek(0, 2)
            fh.seek(0)
            fh.write(b"\0" * size)


def test_partition_only_delete_reads_no_data_file(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    rows = [(1, "a"), (2, "a"), (3, "b"), (4, None), (5, "c")]
    df = spark.createDataFrame(rows, "id long, p string").repartition(1)
    df.write.format("deltalog").mode("append").option("partitionBy", "p").save(table_path)
    log = DeltaLog.for_table(table_path)
    by_part = {f.partition_values["p"]: f.path for f in log.update().files}
    _damage(table_path, [by_part["a"], by_part[None]])
    table = DeltaTable.forPath(spark, table_path)

    table.delete("p = 'a'")
    record = log.history(1)[0]
    assert record.operation == "DELETE"
    metrics = record.operation_metrics or {}
    assert metrics["numRemovedFiles"] == "1"
    assert metrics["numAddedFiles"] == "0"
    assert metrics["numDeletedRows"] == "2"
    assert metrics["numCopiedRows"] == "0"

    table.delete("p IS NULL")
    assert (log.history(1)[0].operation_metrics or {})["numDeletedRows"] == "1"

    # `p = NULL` is never true in SQL: nothing is deleted (and no IS NULL shortcut taken)
    version = log.update().version
    table.delete("p = NULL")
    assert log.update().version == version

    left = sorted(r["id"] for r in spark.read.format("deltalog").load(table_path).collect())
    assert left == [3, 5]
    assert json.loads(log.history(1)[0].operation_parameters["predicate"]) == ["p IS NULL"]


def test_a_timestamp_literal_is_a_local_time_of_the_session(spark, table_path):
    """``ts = '2024-01-01 00:00:00'`` in a Los Angeles session is 08:00 UTC, as Spark casts
    it; the partition at 00:00 UTC (16:00 the day before, local) is not deleted."""
    from deltalog.contrib.spark import DeltaTable

    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        rows = "select * from values (1, timestamp'2024-01-01 00:00:00'), (2, timestamp'2023-12-31 16:00:00') t(id, ts)"
        spark.sql(rows).write.format("deltalog").mode("append").option("partitionBy", "ts").save(table_path)
        DeltaTable.forPath(spark, table_path).delete("ts = '2024-01-01 00:00:00'")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert [r.id for r in spark.read.format("deltalog").load(table_path).collect()] == [2]


def test_string_literals_are_unescaped_as_spark_reads_them(spark, table_path):
    """``s = 'a\\\\b'`` names the value ``a\\b`` (one backslash) to Spark: the partition
    filters must read the literal as Spark does, or a metadata-only DELETE removes another
    partition than the one Spark would match."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.predicates import parse_partition_predicate

    literals = [
        r"'a\\b'",
        r"'\u00fc'",
        r"'\U0001F600'",
        r"'tab\there'",
        r"'\101\0\Z'",
        r"'\q\%\_'",
        "'it''s'",
        r"'a\'b'",
        '"d""q\\"x"',
        r"'end\\'",
    ]
    spark_values = spark.sql("select " + ", ".join(literals)).collect()[0]
    assert [parse_partition_predicate(f"s = {lit}")[0][2] for lit in literals] == list(spark_values)

    rows = [(1, "a\\b"), (2, "a\\\\b"), (3, "ü"), (4, "\\u00fc")]
    df = spark.createDataFrame(rows, "id long, s string").repartition(1)
    df.write.format("deltalog").mode("append").option("partitionBy", "s").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete(r"s = 'a\\b'")
    table.delete(r"s = '\u00fc'")
    assert sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect()) == [2, 4]


def test_literals_spark_casts_otherwise_prune_no_partition(spark, table_path):
    """Spark reads ``b = 't'`` as ``b = true``, ``k < 1.5`` as a comparison of fractions
    (true for k = 1) and ``'2024-1-2'`` as a date: partition pruning, DML's candidate files
    and the metadata-only shortcut must not read them another way."""
    from deltalog.contrib.spark import DeltaTable, read_table

    rows = "select * from values (1, 1, true, date'2024-01-02'), (2, 2, false, date'2024-01-03') t(id, k, b, d)"
    df = spark.sql(rows).repartition(1)
    df.write.format("deltalog").mode("append").option("partitionBy", "k,b,d").save(table_path)

    def ids(where):
        return sorted(r.id for r in read_table(spark, table_path, where=where).collect())

    assert ids("b = 't'") == ids("b = 'yes'") == ids("k < 1.5") == ids("d = '2024-1-2'") == [1]
    assert ids("b IN ('1', 'true')") == [1]
    table = DeltaTable.forPath(spark, table_path)
    table.update("b = 'y'", {"id": "id + 10"})
    table.delete("b = 'f'")
    assert sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect()) == [11]


def test_merge_condition_literals_prune_as_spark_reads_them(spark, table_path):
    """A MERGE condition's literal terms prune the target's partitions: ``t.s = 'a\\\\b'`` is
    the value ``a\\b`` to Spark, so the target rows of partition ``a\\b`` are candidates
    (pruned to partition ``a\\\\b`` instead, they went unmatched and the source rows were
    inserted again beside them); on an aliased table, DELETE and UPDATE terms qualified
    with the alias prune as unqualified ones do."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.merge_pruning import condition_terms

    terms = condition_terms(r"t.id = s.id AND t.s = 'a\\b'", "t", {"id": "long", "s": "string"}, ["id", "v"])
    assert terms.literal_terms == [("s", "=", "a\\b")]

    rows = [(1, "a\\b", "old"), (2, "a\\\\b", "old")]
    df = spark.createDataFrame(rows, "id long, s string, v string").repartition(1)
    df.write.format("deltalog").mode("append").option("partitionBy", "s").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(1, "a\\b", "new")], "id long, s string, v string")
    (
        table.alias("t")
        .merge(source.alias("src"), r"t.id = src.id AND t.s = 'a\\b'")
        .whenMatchedUpdate(set={"v": "src.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert sorted(tuple(r) for r in table.toDF().collect()) == [(1, "a\\b", "new"), (2, "a\\\\b", "old")]

    aliased = DeltaTable.forPath(spark, table_path).alias("t")
    assert [f.partition_values["s"] for f in aliased._candidates(aliased._log.start_transaction(), "t.s = 'x'")] == []


def test_metadata_only_delete_writes_no_change_data_and_a_constant_condition_reads_nothing(spark, table_path):
    """Delta's ``DeleteMetricsSuite`` ("delete all with where = '' / '1 = 1'", CDF on): a
    metadata-only DELETE writes no change file (``numAddedChangeFiles`` 0; the change feed
    reads the removed files' rows as deleted), a condition naming no column is a partition
    predicate, as is any condition on partition columns only (the files removed unread), and a
    DELETE of an empty table commits nothing."""
    from deltalog.contrib.spark import DeltaTable

    df = spark.createDataFrame([(1, "a"), (2, "a"), (3, "b"), (4, "c")], "id long, p string").repartition(1)
    writer = df.write.format("deltalog").mode("append").option("delta.enableChangeDataFeed", "true")
    writer.option("partitionBy", "p").save(table_path)
    log = DeltaLog.for_table(table_path)
    table = DeltaTable.forPath(spark, table_path)

    table.delete("p = 'a'")
    metrics = log.history(1)[0].operation_metrics or {}
    assert (metrics["numAddedChangeFiles"], metrics["numDeletedRows"], metrics["numRemovedFiles"]) == ("0", "2", "1")
    changes = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1)
    got = sorted((r.id, r._change_type) for r in changes.load(table_path).collect())
    assert got == [(1, "delete"), (2, "delete")]  # the removed file's rows, read from it
    by_part = {f.partition_values["p"]: f.path for f in log.update().files}
    _damage(table_path, [by_part["b"], by_part["c"]])  # read them and the DELETE fails
    table.delete("p = 'b' OR upper(p) = 'X'")  # on partition columns only, beyond the fast path
    table.delete("1 = 1")
    for record in log.history(2):  # versions 3 and 2
        metrics, version = record.operation_metrics or {}, record.version
        assert (metrics["numAddedChangeFiles"], metrics["numDeletedRows"], metrics["numRemovedFiles"]) == (
            "0",
            "1",
            "1",
        )
        assert not [a for a in _actions(table_path, version) if "cdc" in a]
    table.delete()  # nothing left: nothing to commit (Delta's commitIfNeeded of no action)
    assert log.update().version == 3


def _actions(table_path: str, version: int) -> list[dict]:
    with open(f"{table_path}/_delta_log/{version:020d}.json") as fh:
        return [json.loads(line) for line in fh if line.strip()]
