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


PREFIX = "delta.dataSkippingStringPrefixLength"
SESSION_PREFIX = "spark.databricks.io.skipping.stringPrefixLength"
_MAX = "\U0010ffff"


@pytest.mark.parametrize("writer", ["format", "write_table"])
def test_spark_writes_keep_the_string_prefix_length(spark: Any, tmp_path: Any, writer: str) -> None:
    """The data source's Python tasks (``format``) and the Spark Parquet writer's footer
    statistics (``write_table``) cut strings to ``delta.dataSkippingStringPrefixLength``; where
    the table does not set it, ``write_table``, DML and OPTIMIZE take the session's conf, as Delta does."""
    from deltalog.contrib.spark import DeltaTable, write_table

    df = spark.createDataFrame([(1, "abcdefgh"), (2, "zzzzz\u00e9\u00e9"), (3, None)], "id long, k string").coalesce(1)
    path = str(tmp_path / writer)
    spark.conf.set(SESSION_PREFIX, "3")
    try:
        if writer == "format":
            df.write.format("deltalog").mode("append").option(PREFIX, "5").save(path)
        else:
            write_table(
                df, path, native=True, **{PREFIX: "5"}
            )  # Spark's writer; the table's property wins over the session's
        assert DeltaLog.for_table(path).update().metadata.configuration[PREFIX] == "5"
        (stats,) = _stats(path)
        assert (stats["minValues"]["k"], stats["maxValues"]["k"]) == ("abcde", f"zzzzz{_MAX}")
        if writer == "write_table":
            other = str(tmp_path / "session")
            write_table(df, other, native=True)
            assert [s["minValues"]["k"] for s in _stats(other)] == ["abc"]
            DeltaTable.forPath(spark, other).update("id = 1", {"k": "'qrstuvw'"})
            (stats,) = _stats(other)  # the file UPDATE rewrote, under the session's 3 too
            assert (stats["minValues"]["k"], stats["maxValues"]["k"]) == ("qrs", "zzz\x7f")
            write_table(df, other, native=True)
            DeltaTable.forPath(spark, other).optimize().executeCompaction()  # OPTIMIZE too
            (stats,) = _stats(other)
            assert (stats["minValues"]["k"], stats["maxValues"]["k"]) == ("abc", "zzz\x7f")
    finally:
        spark.conf.unset(SESSION_PREFIX)
    if writer == "format":  # a value Delta refuses: nothing is written
        bad = tmp_path / "bad"
        with pytest.raises(Exception, match=f"{PREFIX}=-1 needs to be greater or equal to zero"):
            df.write.format("deltalog").mode("append").option(PREFIX, "-1").save(str(bad))
        assert not bad.exists() or not any(p.suffix in (".parquet", ".json") for p in bad.rglob("*"))


def test_spark_writes_record_tight_bounds_and_missing_columns_as_delta(spark: Any, tmp_path: Any) -> None:
    """Delta's ``statsCollector``: ``tightBounds: true`` on every new file of a table whose
    protocol supports deletion vectors, enabled or not; a stats column the DataFrame lacks
    counted null in every row (DataSkippingDeltaTests "data skipping with missing columns in
    DataFrame"), so ``z = 5`` can skip the file and ``z IS NULL`` still reads its rows."""
    from deltalog.contrib.spark import read_table

    path = str(tmp_path / "t")
    first = spark.createDataFrame([(1, "a", 5)], "id long, k string, z int")
    first.write.format("deltalog").mode("append").option("delta.feature.deletionVectors", "supported").save(path)
    second = spark.createDataFrame([(2, "b"), (3, None)], "id long, k string").coalesce(1)
    second.write.format("deltalog").mode("append").save(path)
    by_rows = {s["numRecords"]: s for s in _stats(path)}
    assert [by_rows[n]["tightBounds"] for n in (1, 2)] == [True, True]
    assert by_rows[2]["nullCount"] == {"id": 0, "k": 1, "z": 2}
    assert "z" not in by_rows[2]["minValues"]
    assert sorted(r.id for r in read_table(spark, path, where="z IS NULL").collect()) == [2, 3]  # no row lost


def test_a_session_that_turns_statistics_off_writes_files_without_them(spark: Any, tmp_path: Any) -> None:
    """``spark.databricks.delta.stats.collect=false`` (StatsCollectionSuite's "recompute stats"
    tests write so): Delta's ``TransactionalWrite`` records no statistics, not even
    ``numRecords``, for writes and DML rewrites; the files are read whole."""
    from deltalog.contrib.spark import DeltaTable, read_table

    path = str(tmp_path / "t")
    spark.conf.set("spark.databricks.delta.stats.collect", "false")
    try:
        df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, k string").coalesce(1)
        df.write.format("deltalog").mode("append").save(path)  # the conf forwarded as an option
        assert [f.stats for f in DeltaLog.for_table(path).update().files] == [None]
        DeltaTable.forPath(spark, path).update("id = 1", {"k": "'z'"})
        assert [f.stats for f in DeltaLog.for_table(path).update().files] == [None]
    finally:
        spark.conf.unset("spark.databricks.delta.stats.collect")
    assert sorted(read_table(spark, path, where="id >= 1").collect()) == [(1, "z"), (2, "b")]
