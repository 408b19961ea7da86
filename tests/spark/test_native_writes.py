"""The table API's writes through Spark's own Parquet writer (``native_write``): the same
files, partition values, statistics and metrics as the Python tasks write, fallbacks for
what the native path does not do, and nothing left behind by a failed write."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark.native_write import NATIVE_WRITE
from deltalog.txn.commands.vacuum_listing import STAGING_PREFIX
from deltalog.txn.protocol.actions import decode_path
from tests.spark.helpers import commits, delta_rs_rows

pytestmark = pytest.mark.spark

_WIDE = (
    "id long, i int, s string, d date, ts timestamp, ntz timestamp_ntz, dec decimal(10,2), "
    "big decimal(30,3), st struct<a: long, b: string>, arr array<long>, f double, b boolean"
)


def _wide_rows(spark: Any) -> Any:
    return spark.sql(
        """
        select id, cast(id as int) i,
               case when id % 4 = 0 then null when id = 3 then repeat('x', 40) else concat('v', id) end s,
               date_add(date'2024-01-01', cast(id as int)) d,
               case when id = 2 then null
                    else timestamp'2024-01-01 00:00:00.123456' + make_interval(0,0,0,0,0,0,id) end ts,
               cast(timestamp'2024-02-01 10:00:00' as timestamp_ntz) ntz,
               cast(id * 1.25 as decimal(10,2)) dec, cast(id as decimal(30,3)) big,
               named_struct('a', id, 'b', cast(id as string)) st,
               case when id = 1 then null else array(id, null) end arr,
               cast(id as double) f, id % 2 = 0 b
        from range(12)
        """
    )


def _adds(path: str, version: int = -1) -> list[dict[str, Any]]:
    return [a["add"] for a in commits(path)[version] if "add" in a]


def _update_all(spark: Any, path: str, native: bool) -> None:
    from deltalog.contrib.spark import DeltaTable

    spark.conf.set(NATIVE_WRITE, str(native).lower())
    try:
        DeltaTable.forPath(spark, path).update(set={"i": "i + 1"})
    finally:
        spark.conf.unset(NATIVE_WRITE)


def test_statistics_from_the_footer_match_the_python_writer(spark: Any, tmp_path: Any) -> None:
    """UPDATE rewrites one file natively and one through Python tasks: the same stats, but
    for what a footer cannot vouch for (float bounds, an array's null count)."""
    stats = {}
    for native in (True, False):
        path = str(tmp_path / f"t{native}")
        _wide_rows(spark).coalesce(1).write.format("deltalog").mode("append").save(path)
        _update_all(spark, path, native)
        (add,) = _adds(path)
        stats[native] = json.loads(add["stats"])
    python, native_stats = stats[False], stats[True]
    assert python["minValues"].pop("f") == 0.0 and python["maxValues"].pop("f") == 11.0
    assert python["nullCount"].pop("arr") == 1
    assert native_stats == python
    assert native_stats["maxValues"]["ts"] == "2024-01-01T00:00:11.124Z"
    assert native_stats["maxValues"]["s"] == "x" * 32 + "\x7f"  # Delta's tie-breaker after 32 characters


def test_layout_partition_values_and_rows_as_the_python_writer(spark: Any, tmp_path: Any) -> None:
    from deltalog.contrib.spark import DeltaTable

    data = [(i, k, float(i)) for i, k in enumerate(["a/b=c%", "", None, "plain", "a/b=c%", "x y"])]
    layouts = {}
    for native in (True, False):
        path = str(tmp_path / f"t{native}")
        spark.createDataFrame(data, "id long, k string, x double").write.format("deltalog").option(
            "partitionBy", "k"
        ).mode("append").save(path)
        spark.conf.set(NATIVE_WRITE, str(native).lower())
        try:
            DeltaTable.forPath(spark, path).update(set={"x": "x * 10"})
        finally:
            spark.conf.unset(NATIVE_WRITE)
        adds = _adds(path)
        layouts[native] = set(
            (decode_path(a["path"]).rsplit("/", 1)[0], json.dumps(a["partitionValues"])) for a in adds
        )
        got = delta_rs_rows(path, ["id"])
        assert got["x"].tolist() == [i * 10.0 for i in range(6)]
        assert got["k"].where(got["k"].notna(), None).tolist() == [r[1] or None for r in data]
        assert not [n for n in os.listdir(path) if n.startswith(STAGING_PREFIX)]
    assert layouts[True] == layouts[False]
    assert ("k=__HIVE_DEFAULT_PARTITION__", '{"k": null}') in layouts[True]
    assert ("k=a%2Fb%3Dc%25", '{"k": "a/b=c%"}') in layouts[True]


def test_timestamps_are_written_as_micros_and_the_session_setting_is_restored(spark: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    _wide_rows(spark).coalesce(1).write.format("deltalog").mode("append").save(path)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        _update_all(spark, path, native=True)
        assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    (add,) = _adds(path)
    column = pq.read_metadata(os.path.join(path, decode_path(add["path"]))).schema.column(4)
    assert column.name == "ts" and column.physical_type == "INT64"


def test_old_dates_are_written_proleptic_whatever_the_session_rebase_mode(spark: Any, table_path: str) -> None:
    """A session writing Parquet in Spark's LEGACY (Julian) calendar would give files whose
    footer statistics, and whose values to every reader but Spark, are days off: the native
    write always writes proleptic Gregorian dates and timestamps, as every Delta reader
    expects, and restores the session's setting."""
    from deltalog.contrib.spark import write_table

    key = "spark.sql.parquet.datetimeRebaseModeInWrite"
    spark.conf.set(key, "LEGACY")
    try:
        df = spark.createDataFrame([(dt.date(1000, 1, 1), dt.datetime(1000, 1, 1, 12))], "d date, t timestamp")
        write_table(df, table_path, native=True)
        assert spark.conf.get(key) == "LEGACY"
    finally:
        spark.conf.unset(key)
    (add,) = _adds(table_path)
    assert json.loads(add["stats"])["minValues"] == {"d": "1000-01-01", "t": "1000-01-01T12:00:00.000Z"}
    rows = pq.read_table(os.path.join(table_path, decode_path(add["path"]))).to_pylist()
    assert rows == [{"d": dt.date(1000, 1, 1), "t": dt.datetime(1000, 1, 1, 12, tzinfo=dt.timezone.utc)}]


def test_a_failed_native_write_leaves_nothing(spark: Any, table_path: str) -> None:
    from deltalog.contrib.spark import DeltaTable

    rows = spark.range(100).selectExpr("id", "cast(id as double) x").repartition(2)
    rows.write.format("deltalog").mode("append").save(table_path)
    before = sorted(_data_files(table_path))
    table = DeltaTable.forPath(spark, table_path)
    with pytest.raises(Exception, match="boom at 77"):
        table.update(set={"x": "case when id = 77 then raise_error('boom at 77') else x end"})
    assert sorted(_data_files(table_path)) == before
    assert len(commits(table_path)) == 1
    assert not [n for n in os.listdir(table_path) if n.startswith(STAGING_PREFIX)]


def test_a_table_path_with_a_space_and_a_percent_sign(spark: Any, tmp_path: Any) -> None:
    """Spark's writer takes a Hadoop path string, not a URI: ``my%20table`` would be a
    directory of its own, next to the table."""
    from deltalog.contrib.spark import read_table, write_table

    path = str(tmp_path / "my table %41")
    write_table(spark.createDataFrame([(1, "a"), (2, None)], "id long, k string"), path, partitionBy="k", native=True)
    for df in (read_table(spark, path), spark.read.format("deltalog").load(path)):
        assert sorted((r.id, r.k) for r in df.collect()) == [(1, "a"), (2, None)]
    assert os.listdir(tmp_path) == ["my table %41"]
    assert not [n for n in os.listdir(path) if n.startswith(STAGING_PREFIX)]


def _data_files(path: str) -> list[str]:
    return [
        os.path.relpath(os.path.join(d, n), path)
        for d, _, names in os.walk(path)
        for n in names
        if n.endswith(".parquet") and "_delta_log" not in d
    ]


@pytest.mark.parametrize(
    ("configuration", "reason"),
    [
        ({"delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"}, "change data"),
        ({"delta.enableChangeDataFeed": "true"}, "change data"),
    ],
)
def test_what_the_native_path_does_not_do_falls_back_to_python_tasks(
    spark: Any, tmp_path: Any, caplog: Any, configuration: dict[str, str], reason: str
) -> None:
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    writer = spark.range(6).selectExpr("id", "cast(id as double) x").coalesce(1).write.format("deltalog")
    for key, value in configuration.items():
        writer = writer.option(key, value)
    writer.mode("append").save(path)
    with caplog.at_level(logging.INFO, logger="deltalog.contrib.spark"):
        DeltaTable.forPath(spark, path).update(condition="id > 2", set={"x": "-x"})
    assert any("Python tasks" in r.getMessage() and reason in r.getMessage() for r in caplog.records)
    got = spark.read.format("deltalog").load(path).orderBy("id").toPandas()  # delta-rs: nulls for mapped columns
    assert got["x"].tolist() == [0.0, 1.0, 2.0, -3.0, -4.0, -5.0]


def test_merge_metrics_match_the_python_writer(spark: Any, tmp_path: Any) -> None:
    """The native MERGE counts its rows per clause with an Observation of the write job."""
    from deltalog.contrib.spark import DeltaTable

    target = pd.DataFrame({"id": range(20), "k": [i % 3 for i in range(20)], "x": [float(i) for i in range(20)]})
    source = spark.createDataFrame([(i, float(-i)) for i in range(15, 25)], "id long, x double")
    results = {}
    for native in (True, False):
        path = str(tmp_path / f"t{native}")
        spark.createDataFrame(target).write.format("deltalog").option("partitionBy", "k").mode("append").save(path)
        spark.conf.set(NATIVE_WRITE, str(native).lower())
        try:
            (
                DeltaTable.forPath(spark, path)
                .alias("t")
                .merge(source.alias("s"), "t.id = s.id")
                .whenMatchedUpdate(condition="s.id % 2 = 0", set={"x": "s.x"})
                .whenMatchedDelete()
                .whenNotMatchedInsert(values={"id": "s.id", "k": "s.id % 3", "x": "s.x"})
                .execute()
            )
        finally:
            spark.conf.unset(NATIVE_WRITE)
        info = next(a["commitInfo"] for a in commits(path)[-1] if "commitInfo" in a)
        metrics = {k: v for k, v in info["operationMetrics"].items() if not k.endswith("TimeMs") and "Bytes" not in k}
        results[native] = (metrics, delta_rs_rows(path, ["id"]))
    assert results[True][0] == results[False][0]
    assert results[True][0]["numTargetRowsUpdated"] == "2" and results[True][0]["numTargetRowsDeleted"] == "3"
    pd.testing.assert_frame_equal(results[True][1], results[False][1])


def test_constraints_are_checked_by_the_native_write_job(spark: Any, table_path: str, caplog: Any) -> None:
    """A CHECK constraint, checked by Spark in the write job: a breaking row raises the typed
    error and leaves the table and its directory as they were (NOT NULL columns: the table
    API's cases in test_dml_correctness.py take the same path)."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.constraints import ConstraintViolationError

    rows = spark.createDataFrame([(i, float(i)) for i in range(6)], "id long, x double")
    rows.coalesce(1).write.format("deltalog").option("delta.constraints.x_small", "x < 100").mode("append").save(
        table_path
    )
    table = DeltaTable.forPath(spark, table_path)
    before = sorted(_data_files(table_path))
    with pytest.raises(ConstraintViolationError, match=r"x_small \(x < 100\)"):
        table.update(condition="id = 4", set={"x": "1000"})
    assert sorted(_data_files(table_path)) == before and len(commits(table_path)) == 1
    assert not [n for n in os.listdir(table_path) if n.startswith(STAGING_PREFIX)]
    with caplog.at_level(logging.INFO, logger="deltalog.contrib.spark"):
        table.update(condition="id = 4", set={"x": "99"})
    assert any("Spark's Parquet writer" in r.getMessage() for r in caplog.records)
    assert delta_rs_rows(table_path, ["id"])["x"].tolist() == [0.0, 1.0, 2.0, 3.0, 99.0, 5.0]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_physical_names_field_ids_and_random_prefixes(spark: Any, tmp_path: Any, mode: str) -> None:
    """A column-mapped table rewritten natively: physical names and field ids at every level
    of the file, a random prefix instead of partition directories, partition values and
    statistics keyed by physical name, as the Python writer writes them."""
    from deltalog.contrib.spark import DeltaTable, read_table
    from deltalog.txn.delta_log import DeltaLog

    stats, layout = {}, {}
    for native in (True, False):
        path = str(tmp_path / f"t{native}")
        rows = spark.createDataFrame(
            [(i, "a" if i % 2 else "b", (i, f"n{i}")) for i in range(6)],
            "id long, p string, st struct<a: long, b: string>",
        )
        rows.coalesce(1).write.format("deltalog").option("delta.columnMapping.mode", mode).option(
            "partitionBy", "p"
        ).mode("append").save(path)
        spark.conf.set(NATIVE_WRITE, str(native).lower())
        try:
            DeltaTable.forPath(spark, path).update(condition="id > 1", set={"st": "named_struct('a', -id, 'b', 'x')"})
        finally:
            spark.conf.unset(NATIVE_WRITE)
        snapshot = DeltaLog.for_table(path).update()
        schema = json.loads(snapshot.metadata.schema_string)
        physical = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in schema["fields"]}
        ids = {f["name"]: f["metadata"]["delta.columnMapping.id"] for f in schema["fields"]}
        adds = _adds(path)
        for add in adds:
            directory, _ = decode_path(add["path"]).split("/")
            assert len(directory) == 2 and "=" not in directory
            assert set(add["partitionValues"]) == {physical["p"]}
            file_schema = pq.read_schema(os.path.join(path, decode_path(add["path"])))
            assert file_schema.names == [physical["id"], physical["st"]]
            assert file_schema.field(physical["id"]).metadata[b"PARQUET:field_id"] == str(ids["id"]).encode()
            nested = file_schema.field(physical["st"]).type
            assert all(nested.field(i).metadata and b"PARQUET:field_id" in nested.field(i).metadata for i in range(2))
        stats[native] = sorted(_logical_names(add["stats"], schema) for add in adds)
        layout[native] = sorted(_logical_names(json.dumps(add["partitionValues"]), schema) for add in adds)
        got = read_table(spark, path).orderBy("id").collect()
        assert [(r.id, r.p, r.st.a, r.st.b) for r in got] == [
            (i, "a" if i % 2 else "b", -i if i > 1 else i, "x" if i > 1 else f"n{i}") for i in range(6)
        ]
        python_path = spark.read.format("deltalog").load(path).orderBy("id").collect()
        assert [tuple(r) for r in python_path] == [tuple(r) for r in got]
    assert stats[True] == stats[False] and layout[True] == layout[False]


def _logical_names(text: str, schema: dict[str, Any]) -> str:
    """``text`` with every physical column name of ``schema`` (nested too) replaced by its
    logical name: two tables' physical names differ (random), their layout must not."""
    for f in schema["fields"]:
        text = text.replace(f["metadata"]["delta.columnMapping.physicalName"], f["name"])
        if isinstance(f["type"], dict) and f["type"].get("type") == "struct":
            text = _logical_names(text, f["type"])
    return text
