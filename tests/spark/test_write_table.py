"""``write_table``: the data source's write (same options, same transaction) with the rows
written by Spark's own Parquet writer."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest

from deltalog.txn.delta_log import DeltaLog
from tests.spark.helpers import commits, delta_rs_rows

pytestmark = pytest.mark.spark


def _history(path: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for actions in commits(path):
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        out.append((info["operation"], info.get("operationParameters", {})))
    return out


def _layout(path: str) -> set[tuple[str, str]]:
    return {
        (json.dumps(f.partition_values, sort_keys=True), json.loads(f.stats or "{}").get("numRecords"))
        for f in DeltaLog.for_table(path).update().files
    }


def test_write_table_writes_what_the_data_source_writes(spark: Any, tmp_path: Any, caplog: Any) -> None:
    from deltalog.contrib.spark import write_table

    first = spark.createDataFrame([(1, "a", 1.0), (2, "b", 2.0), (3, None, 3.0)], "id long, k string, x double")
    wider = spark.createDataFrame([(4, "a", 4.0, "new")], "id long, k string, x double, extra string")
    again = spark.createDataFrame([(5, "b", 5.0, "z")], "id long, k string, x double, extra string")
    source, native = str(tmp_path / "source"), str(tmp_path / "native")
    first.write.format("deltalog").mode("append").option("partitionBy", "k").save(source)
    wider.write.format("deltalog").mode("append").option("mergeSchema", "true").save(source)
    again.write.format("deltalog").mode("overwrite").option("replaceWhere", "k = 'b'").save(source)
    with caplog.at_level(logging.INFO, logger="deltalog.contrib.spark"):
        assert write_table(first, native, partitionBy=["k"]) == 0
        assert write_table(wider, native, mergeSchema=True) == 1
        assert write_table(again, native, mode="overwrite", replaceWhere="k = 'b'") == 2
    assert sum("with Spark's Parquet writer" in r.getMessage() for r in caplog.records) == 3
    assert _history(native) == _history(source)
    assert _layout(native) == _layout(source)
    mine, theirs = delta_rs_rows(native, ["id"]), delta_rs_rows(source, ["id"])
    assert mine.to_dict("list") == theirs.to_dict("list")
    assert mine["id"].tolist() == [1, 3, 4, 5]


def test_write_table_modes_and_idempotent_writes(spark: Any, table_path: str) -> None:
    from deltalog.contrib.spark import write_table
    from deltalog.contrib.spark.errors import InvalidWriteOptionError, TableAlreadyExistsError

    rows = spark.range(3).selectExpr("id").coalesce(1)
    assert write_table(rows, table_path, mode="errorifexists") == 0
    with pytest.raises(TableAlreadyExistsError):
        write_table(rows, table_path, mode="errorifexists")
    assert write_table(rows, table_path, mode="ignore") is None
    # the saveMode option of format("deltalog") is a mode too, never dropped for the default append
    assert write_table(rows, table_path, saveMode="ignore") is None
    with pytest.raises(TableAlreadyExistsError):
        write_table(rows, table_path, SAVEMODE="errorifexists")
    with pytest.raises(InvalidWriteOptionError, match="different save modes"):
        write_table(rows, table_path, mode="overwrite", saveMode="ignore")
    assert DeltaLog.for_table(table_path).update().version == 0
    assert write_table(rows, table_path, txnAppId="app", txnVersion=7, compression="zstd") == 1
    assert write_table(rows, table_path, txnAppId="app", txnVersion=7) is None  # done already
    assert DeltaLog.for_table(table_path).update().num_files == 2
    # Spark's own writer takes the compression option (DeltaOptionSuite), named in the file too
    assert [a["add"]["path"].endswith(".zstd.parquet") for a in commits(table_path)[1] if "add" in a] == [True]


def test_write_table_native_false_and_a_table_it_cannot_write_natively(spark: Any, tmp_path: Any) -> None:
    from deltalog.contrib.spark import DeltaTable, write_table
    from deltalog.contrib.spark.errors import NativeWriteUnsupportedError

    rows = spark.range(4).selectExpr("id", "cast(id as double) x")
    generated = str(tmp_path / "generated")
    DeltaTable.create(spark).location(generated).addColumn("id", "long").addColumn("x", "double").addColumn(
        "y", "double", generatedAlwaysAs="x * 2"
    ).execute()
    with pytest.raises(NativeWriteUnsupportedError, match="generated"):
        write_table(rows, generated, native=True)
    assert write_table(rows, generated) == 1  # Python tasks fill the generated column
    assert sorted(r.y for r in spark.read.format("deltalog").load(generated).collect()) == [0.0, 2.0, 4.0, 6.0]
    plain = str(tmp_path / "plain")
    write_table(rows.coalesce(1), plain, native=False)
    stats = json.loads(DeltaLog.for_table(plain).update().files[0].stats or "{}")
    assert "x" in stats["maxValues"]  # the Python tasks' statistics keep double bounds


def test_write_table_conflicts_with_an_append_between_plan_and_commit(spark: Any, table_path: str) -> None:
    """The write's job itself commits another writer's append to p=1, after ``write_table``
    planned its replaceWhere: the conflict checker refuses it, and the appended row survives
    with no file of the failed write left behind."""
    from deltalog.contrib.spark import write_table
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError

    write_table(spark.createDataFrame([(1, 10), (2, 20)], "p long, x long"), table_path, partitionBy="p")
    marker = table_path + ".appended"

    def append_concurrently(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if not os.path.exists(marker):  # once, even if Spark retried the task
            open(marker, "x").close()
            rows = pa.table({"p": pa.array([1], pa.int64()), "x": pa.array([11], pa.int64())})
            import pyarrow.parquet as pq

            from deltalog.txn.commit.operations import Write
            from deltalog.txn.delta_log import DeltaLog
            from deltalog.txn.protocol.actions import AddFile

            os.makedirs(os.path.join(table_path, "p=1"), exist_ok=True)
            pq.write_table(rows.drop_columns(["p"]), os.path.join(table_path, "p=1", "other.parquet"))
            size = os.path.getsize(os.path.join(table_path, "p=1", "other.parquet"))
            add = AddFile("p=1/other.parquet", {"p": "1"}, size=size, modification_time=0)
            DeltaLog.for_table(table_path).start_transaction().commit([add], Write())
        yield from batches

    df = (
        spark.createDataFrame([(1, 100)], "p long, x long")
        .coalesce(1)
        .mapInArrow(append_concurrently, "p long, x long")
    )
    with pytest.raises(ConcurrentAppendError):
        write_table(df, table_path, mode="overwrite", replaceWhere="p = 1")
    got = delta_rs_rows(table_path, ["p", "x"])
    assert list(zip(got["p"], got["x"])) == [(1, 10), (1, 11), (2, 20)]
    referenced = {f.path for f in DeltaLog.for_table(table_path).update().files}
    on_disk = {
        os.path.relpath(os.path.join(d, n), table_path)
        for d, _, names in os.walk(table_path)
        for n in names
        if n.endswith(".parquet") and "_delta_log" not in d
    }
    assert on_disk == referenced


@contextmanager
def _session_conf(spark: Any, key: str, value: str) -> Iterator[None]:
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def test_write_table_honours_the_session_partition_overwrite_mode(spark: Any, table_path: str) -> None:
    """As Delta's ``DeltaOptions``: without the option, ``spark.sql.sources.partitionOverwriteMode``
    decides; a ``replaceWhere`` takes precedence over the session's ``dynamic``. So do
    ``spark.sql.files.maxRecordsPerFile`` and ``spark.sql.parquet.compression.codec``."""
    from deltalog.contrib.spark import write_table

    write_table(spark.createDataFrame([(1, 10), (2, 20), (3, 30)], "p long, x long"), table_path, partitionBy="p")
    with _session_conf(spark, "spark.sql.sources.partitionOverwriteMode", "dynamic"):
        write_table(spark.createDataFrame([(1, 11)], "p long, x long"), table_path, mode="overwrite")
        write_table(spark.createDataFrame([(2, 21)], "p long, x long"), table_path, "overwrite", replaceWhere="p = 2")
    got = delta_rs_rows(table_path, ["p"])
    assert list(zip(got["p"], got["x"])) == [(1, 11), (2, 21), (3, 30)]
    # spark.sql.files.maxRecordsPerFile without the option, as Spark's FileFormatWriter in Delta's
    # writes; the Python tasks too (Spark's own writer reads it by itself)
    two = spark.createDataFrame([(4, 40), (4, 41)], "p long, x long").coalesce(1)
    with (
        _session_conf(spark, "spark.sql.files.maxRecordsPerFile", "1"),
        _session_conf(spark, "spark.sql.parquet.compression.codec", "gzip"),
    ):
        write_table(two, table_path, native=False)
        write_table(two, table_path, maxRecordsPerFile=0, native=True)  # the option wins; 0: no limit
    adds = [[a["add"]["path"] for a in commit if "add" in a] for commit in commits(table_path)[-2:]]
    assert [len(paths) for paths in adds] == [2, 1]
    assert all(path.endswith(".gz.parquet") for paths in adds for path in paths)  # the session's codec


def test_tables_created_with_the_session_get_its_table_property_defaults(spark: Any, tmp_path: Any) -> None:
    """Delta's ``mergeGlobalConfigs``: ``spark.databricks.delta.properties.defaults.<name>``
    (and ``...defaults.feature.<f>``) set the table properties of every table the session
    creates, under the table's own, also one a ``format("deltalog")`` write creates (the
    session's conf wrapper hands them on); an existing table is left as it is."""
    from deltalog.contrib.spark import DeltaTable, read_table, write_table

    prefix = "spark.databricks.delta.properties.defaults."
    created, built, existing = (str(tmp_path / n) for n in ("created", "built", "existing"))
    saved = str(tmp_path / "saved")
    write_table(spark.createDataFrame([(1, "a")], "id long, s string"), existing)
    with (
        _session_conf(spark, prefix + "enableChangeDataFeed", "true"),
        _session_conf(spark, prefix + "columnMapping.mode", "name"),
        _session_conf(spark, prefix + "feature.v2Checkpoint", "supported"),
        _session_conf(spark, prefix + "noSuchDeltaProperty", "x"),
    ):
        write_table(spark.createDataFrame([(1, "a"), (2, "b")], "id long, s string"), created, partitionBy="s")
        DeltaTable.create(spark).location(built).addColumn("id", "long").property(
            "delta.enableChangeDataFeed", "false"
        ).execute()
        write_table(spark.createDataFrame([(2, "b")], "id long, s string"), existing)
        spark.createDataFrame([(1, "a")], "id long, s string").write.format("deltalog").mode("append").save(saved)
    saved_snapshot = DeltaLog.for_table(saved).update()
    assert saved_snapshot.metadata.configuration == {
        "delta.enableChangeDataFeed": "true",
        "delta.columnMapping.mode": "name",
        "delta.columnMapping.maxColumnId": "2",
    }
    assert {"changeDataFeed", "columnMapping", "v2Checkpoint"} <= set(saved_snapshot.protocol.writer_features or ())
    snapshot = DeltaLog.for_table(created).update()
    assert snapshot.metadata.configuration["delta.enableChangeDataFeed"] == "true"
    assert snapshot.properties.column_mapping_mode == "name"
    # column mapping from the start: partition values by physical name, no Hive directories
    assert all(next(iter(f.partition_values)).startswith("col-") and "s=" not in f.path for f in snapshot.files)
    assert {"changeDataFeed", "columnMapping", "v2Checkpoint"} <= set(snapshot.protocol.writer_features or ())
    assert "delta.noSuchDeltaProperty" not in snapshot.metadata.configuration
    assert sorted(r.id for r in read_table(spark, created).collect()) == [1, 2]
    built_config = DeltaLog.for_table(built).update().metadata.configuration
    assert built_config["delta.enableChangeDataFeed"] == "false" and built_config["delta.columnMapping.mode"] == "name"
    assert DeltaLog.for_table(existing).update().metadata.configuration == {}


def test_table_property_keys_are_validated_as_delta_validates_them(spark: Any, tmp_path: Any) -> None:
    """Delta's ``validateConfigurations`` on the create builder, ``setProperties`` and a write's
    options: a known ``delta.*`` key in another case is stored canonically and takes effect,
    an unknown one is ``DELTA_UNKNOWN_CONFIGURATION`` with nothing written unless the session's
    ``allowArbitraryProperties.enabled`` is true; keys outside ``delta.`` are kept verbatim."""
    from deltalog.contrib.spark import DeltaTable, write_table
    from deltalog.txn.protocol.properties import UnknownPropertyError

    built, written = str(tmp_path / "built"), str(tmp_path / "written")
    builder = DeltaTable.create(spark).location(built).addColumn("id", "long")
    table = builder.property("DELTA.APPENDONLY", "true").property("Owner", "Data").execute()
    snapshot = DeltaLog.for_table(built).update()
    assert snapshot.metadata.configuration == {"delta.appendOnly": "true", "Owner": "Data"}
    assert snapshot.properties.append_only and snapshot.protocol.min_writer_version >= 2
    df = spark.createDataFrame([(1, "a")], "id long, s string")
    with pytest.raises(UnknownPropertyError, match="DELTA_UNKNOWN_CONFIGURATION"):
        write_table(df, written, **{"delta.fooBar": "1"})
    assert not DeltaLog.for_table(written).table_exists()
    with pytest.raises(UnknownPropertyError, match=r"delta\.noSuchThing"):
        table.setProperties({"delta.noSuchThing": "x"})
    with _session_conf(spark, "spark.databricks.delta.allowArbitraryProperties.enabled", "true"):
        table.setProperties({"delta.noSuchThing": "x"})
        write_table(df, written, **{"delta.fooBar": "1", "delta.enablechangedatafeed": "true"})
    assert DeltaLog.for_table(built).update().metadata.configuration["delta.noSuchThing"] == "x"
    config = DeltaLog.for_table(written).update().metadata.configuration
    assert config == {"delta.fooBar": "1", "delta.enableChangeDataFeed": "true"}


def test_writes_read_replace_where_timestamps_in_the_session_time_zone(spark: Any, table_path: str) -> None:
    """A timestamp literal without an offset is a local time of the session, as Spark casts it,
    with ``write_table`` and with ``format("deltalog")`` (the session's conf wrapper hands the
    time zone on)."""
    from deltalog.contrib.spark import write_table

    with _session_conf(spark, "spark.sql.session.timeZone", "America/Los_Angeles"):
        rows = "select * from values (1, timestamp'2024-01-01 00:00:00'), (2, timestamp'2024-01-01 08:00:00') t(id, ts)"
        write_table(spark.sql(rows), table_path, partitionBy="ts")
        new = spark.sql("select 3 id, timestamp'2024-01-01 00:00:00' ts")
        write_table(new, table_path, "overwrite", replaceWhere="ts = '2024-01-01 00:00:00'")
        table = spark.read.format("deltalog").load(table_path).selectExpr("id", "cast(ts as string) ts")
        got = sorted((r.id, r.ts) for r in table.collect())
        assert got == [(2, "2024-01-01 08:00:00"), (3, "2024-01-01 00:00:00")]
        newer = spark.sql("select 4 id, timestamp'2024-01-01 08:00:00' ts").write.format("deltalog")
        newer.mode("overwrite").option("replaceWhere", "ts = '2024-01-01 08:00:00'").save(table_path)
        table = spark.read.format("deltalog").load(table_path).selectExpr("id", "cast(ts as string) ts")
        got = sorted((r.id, r.ts) for r in table.collect())
    assert got == [(3, "2024-01-01 00:00:00"), (4, "2024-01-01 08:00:00")]


def test_columns_named_in_another_case_are_written_as_the_table_names_them(spark: Any, tmp_path: Any) -> None:
    """Delta's column names are case-insensitive and a write takes the table's spelling
    (``SchemaUtils.normalizeColumnNames``): the files hold ``id``, never ``ID``."""
    from deltalog.contrib.spark import write_table

    first = spark.createDataFrame([(1, "p1", "x")], "id long, k string, v string")
    shouty = spark.createDataFrame([("p2", 2, "y")], "K string, ID long, V string")
    for how in ("native", "python", "source"):
        path = str(tmp_path / how)
        write_table(first, path, partitionBy="k")
        if how == "source":
            shouty.write.format("deltalog").mode("append").save(path)
        else:
            write_table(shouty, path, native=how == "native")
        got = delta_rs_rows(path, ["id"])
        assert list(zip(got["id"], got["k"], got["v"])) == [(1, "p1", "x"), (2, "p2", "y")], how


def test_python_tasks_write_columns_with_dots_in_their_names(spark: Any, table_path: str) -> None:
    """PySpark's ``mapInArrow`` reads ``a.b`` as a field of a struct ``a``."""
    from deltalog.contrib.spark import write_table

    df = spark.createDataFrame([(1, "x", 1.5), (2, None, 2.5)], "`id.v` long, `p.k` string, `x-y` double")
    write_table(df, table_path, partitionBy=["p.k"], native=False)
    got = delta_rs_rows(table_path, ["id.v"])
    assert list(zip(got["id.v"], got["p.k"], got["x-y"])) == [(1, "x", 1.5), (2, None, 2.5)]


def test_nested_fields_by_name_and_merge_schema_inside_arrays_and_maps(spark: Any, table_path: str) -> None:
    """As Delta's ``SchemaMergingUtils``: a struct field the table lacks, at any depth, is a
    schema change (refused without ``mergeSchema``, Delta's ``DELTA_METADATA_MISMATCH``, never
    silently dropped); ``mergeSchema`` adds it inside arrays and maps too; struct fields are
    matched by name, so data with them in another order is written right under column mapping
    (physical names by position would swap them) and both read paths rename the structs inside
    arrays and maps."""
    from deltalog.contrib.spark import read_table, write_table
    from deltalog.contrib.spark.errors import SchemaMismatchError

    kinds = "id long, s struct<a:string,b:string>, arr array<struct<x:int,y:string>>, m map<string,struct<p:int>>"
    first = spark.createDataFrame([(1, ("a1", "b1"), [(1, "y1")], {"k": (1,)})], kinds)
    write_table(first, table_path, **{"delta.columnMapping.mode": "name"})
    extra = spark.createDataFrame([(9, ("a9", "b9", 9))], "id long, s struct<a:string,b:string,c:int>")
    with pytest.raises(SchemaMismatchError, match=r"DELTA_METADATA_MISMATCH: .*nested fields the table does not: s\.c"):
        write_table(extra, table_path)
    wider = "id long, arr array<struct<x:int,y:string,z:int>>, m map<string,struct<p:int,q:int>>"
    rows = spark.createDataFrame([(2, [(2, "y2", 20)], {"k": (2, 22)})], wider)
    with pytest.raises(SchemaMismatchError, match=r"nested fields the table does not: arr\.element\.z, m\.value\.q"):
        write_table(rows, table_path)
    write_table(rows, table_path, mergeSchema="true")
    swapped = "id long, s struct<b:string,a:string>, arr array<struct<y:string,x:int>>"
    write_table(spark.createDataFrame([(3, ("b3", "a3"), [("y3", 3)])], swapped), table_path)
    expected = [
        (1, ("a1", "b1"), [(1, "y1", None)], {"k": (1, None)}),
        (2, None, [(2, "y2", 20)], {"k": (2, 22)}),
        (3, ("a3", "b3"), [(3, "y3", None)], None),
    ]
    for df in (read_table(spark, table_path), spark.read.format("deltalog").load(table_path)):
        got = [
            (
                r.id,
                r.s and tuple(r.s),
                [tuple(e) for e in r.arr],
                None if r.m is None else {k: tuple(v) for k, v in r.m.items()},
            )
            for r in df.orderBy("id").collect()
        ]
        assert got == expected


def test_null_type_columns_are_left_out_of_files_and_merge_with_any_type(spark: Any, table_path: str) -> None:
    """Delta's ``dropNullTypeColumns`` and ``SchemaMergingUtils``: a column of nulls
    (``lit(None)``, NullType) is in the schema (``void``) but not in the files; data of nulls
    fits a column of any type (a common ``withColumn(c, lit(None))`` append); a ``void``
    column takes the type of data written with ``mergeSchema``, and without it refuses."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import read_table, write_table
    from deltalog.contrib.spark.errors import SchemaMismatchError

    write_table(spark.range(1).withColumn("n", F.lit(None)), table_path)
    (first,) = DeltaLog.for_table(table_path).update().files
    assert pq.read_schema(os.path.join(table_path, first.path)).names == ["id"]
    typed = spark.createDataFrame([(1, 10)], "id long, n long")
    with pytest.raises(SchemaMismatchError, match="n is void"):
        write_table(typed, table_path)
    write_table(typed, table_path, mergeSchema="true")
    nulls = spark.range(2, 3).withColumn("n", F.lit(None))
    write_table(nulls, table_path)
    nulls.withColumn("id", F.lit(3).cast("long")).write.format("deltalog").mode("append").save(table_path)
    got = sorted(tuple(r) for r in read_table(spark, table_path).collect())
    assert got == [(0, None), (1, 10), (2, None), (3, None)]
    assert json.loads(DeltaLog.for_table(table_path).update().metadata.schema_string)["fields"][1]["type"] == "long"


def test_columns_named_twice_in_another_case_are_refused_by_an_existing_table(spark: Any, table_path: str) -> None:
    """SchemaEnforcementSuite "reject columns that only differ by case - append" (and
    "- overwrite"): data naming a column twice (``id`` and ``ID``) is refused before anything
    is written, with Delta's DELTA_DUPLICATE_COLUMNS_FOUND, also with mergeSchema or
    overwriteSchema; before, only the new-table path checked and Spark failed the job.
    SchemaUtilsSuite "duplicate column name in nested array" (Delta's
    ``checkColumnNameDuplication`` explodes nested fields, through arrays and maps): a struct
    naming a field twice is refused alike; before, ``mergeSchema`` wrote nulls for both fields
    of a struct in an array, and other writes failed in Arrow."""
    from deltalog.contrib.spark import write_table
    from deltalog.contrib.spark.errors import SchemaMismatchError

    write_table(spark.range(3), table_path)
    twice = spark.range(3).selectExpr("id", "id + 1 AS ID")
    nested = spark.range(1).selectExpr("id", "array(named_struct('x', id, 'X', id)) AS arr")
    for data, mode, options, names in (
        (twice, "append", {}, "ID, id"),
        (twice, "append", {"mergeSchema": "true"}, "ID, id"),
        (twice, "overwrite", {"overwriteSchema": "true"}, "ID, id"),
        (nested, "append", {}, "arr.element.X, arr.element.x"),
        (nested, "append", {"mergeSchema": "true"}, "arr.element.X, arr.element.x"),
    ):
        with pytest.raises(SchemaMismatchError, match=rf"DELTA_DUPLICATE_COLUMNS_FOUND.*: {names}"):
            write_table(data, table_path, mode=mode, **options)
    assert DeltaLog.for_table(table_path).update().version == 0


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_void_struct_fields_are_left_out_of_files_and_read_once_widened(
    spark: Any, tmp_path: Any, mapping: str
) -> None:
    """SchemaEnforcementSuite "JSON ETL workflow, schema merging NullTypes - nested struct":
    a ``void`` struct field is left out of the files (Delta's ``dropNullTypeColumns``), so
    once ``mergeSchema`` gives it a type the files written before read as nulls; a file
    holding it (Parquet BOOLEAN) failed Spark's read of the widened field."""
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import read_table, write_table

    path = str(tmp_path / "t")
    first, second = ("key string, top struct<id:void, extra:int>", "key string, top struct<id:int, extra:void>")
    batches = [(first, '{"key":"abc","top":{"id":null,"extra":1}}'), (second, '{"key":"def","top":{"id":2}}')]
    for schema, line in [*batches, (first, '{"key":"ghi","top":{"extra":3}}')]:
        df = spark.read.schema(schema).json(spark.sparkContext.parallelize([line]))
        write_table(df, path, mergeSchema="true", **{"delta.columnMapping.mode": mapping})
    snapshot = DeltaLog.for_table(path).update()
    for f in snapshot.files:
        assert "null" not in str(pq.read_schema(os.path.join(path, f.path)).field("top" if mapping == "none" else 1))
    expected = [("abc", (None, 1)), ("def", (2, None)), ("ghi", (None, 3))]
    for native in (True, False):
        got = sorted((r.key, tuple(r.top)) for r in read_table(spark, path, native=native).collect())
        assert got == expected


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("SELECT 1 AS id, named_struct('v', NULL) AS a", "STRUCT_ALL_VOID_FIELDS: The column a is a struct"),
        ("SELECT 1 AS id, named_struct('s', named_struct('v', NULL), 'w', NULL) AS a", "STRUCT_ALL_VOID_FIELDS.*a"),
        ("SELECT NULL AS a, NULL AS b", "TABLE_ALL_VOID_COLUMNS"),
    ],
)
def test_writes_whose_files_would_hold_an_empty_struct_are_refused(
    spark: Any, tmp_path: Any, query: str, reason: str
) -> None:
    """DeltaNullTypeSuite "Non-empty write into all VOID or empty schema/struct should fail":
    with its ``void`` fields left out of the files, a struct of only ``void`` fields (or a
    table of only ``void`` columns) has nothing to write: Delta's
    ``DELTA_CANNOT_WRITE_EMPTY_SCHEMA``, and nothing committed."""
    from deltalog.contrib.spark import write_table
    from deltalog.contrib.spark.errors import SchemaMismatchError

    path = str(tmp_path / "t")
    for native in (True, False):
        with pytest.raises(SchemaMismatchError, match=f"DELTA_CANNOT_WRITE_EMPTY_SCHEMA.{reason}"):
            write_table(spark.sql(query), path, native=native)
    assert not os.path.exists(os.path.join(path, "_delta_log"))


def test_write_options_in_history_and_replace_where_confs_from_the_session(spark: Any, table_path: str) -> None:
    """DescribeDeltaHistorySuite's write options (``isDynamicPartitionOverwrite``,
    ``canMergeSchema``, ``canOverwriteSchema``, recorded only when set; a dynamic partition
    overwrite records no predicate) and DeltaSuite's session confs: ``commitInfo.userMetadata``
    ("history includes user-defined metadata for DF.Write API and config setting", also on a
    DELETE), ``history.metricsEnabled=false`` (no ``operationMetrics``, Delta's
    ``getOperationMetrics``) and ``replaceWhere.dataColumns.enabled=false`` ("invalid replaceWhere")."""
    from deltalog.contrib.spark import DeltaTable, write_table

    def df(rows: list[tuple[int, int]], extra: bool = False) -> Any:
        out = spark.createDataFrame(rows, "id int, part int")
        return out.selectExpr("*", "'e' AS event") if extra else out

    write_table(df([(1, 1), (2, 2)]), table_path, partitionBy="part")
    write_table(df([(3, 1)]), table_path, mode="overwrite", partitionOverwriteMode="dynamic")
    write_table(df([(4, 1)]), table_path, mode="overwrite", replaceWhere="part = 1", mergeSchema="false")
    write_table(df([(5, 2)], extra=True), table_path, mergeSchema=True)
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "meta1")
    spark.conf.set("spark.databricks.delta.history.metricsEnabled", "false")
    spark.conf.set("spark.databricks.delta.replaceWhere.dataColumns.enabled", "false")
    try:
        write_table(df([(6, 3)]), table_path, mode="overwrite", partitionBy="part", overwriteSchema=True)
        write_table(df([(7, 3)]), table_path, userMetadata="optionMeta2")
        DeltaTable.forPath(spark, table_path).delete("id = 7")
        with pytest.raises(Exception, match="DELTA_NON_PARTITION_COLUMN_REFERENCE"):
            write_table(df([(8, 3)]), table_path, mode="overwrite", replaceWhere="id = 8")
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
        spark.conf.unset("spark.databricks.delta.history.metricsEnabled")
        spark.conf.unset("spark.databricks.delta.replaceWhere.dataColumns.enabled")
    params = [p for _, p in _history(table_path)]
    assert params[1] == {"mode": "Overwrite", "partitionBy": "[]", "isDynamicPartitionOverwrite": True}
    assert params[2] == {"mode": "Overwrite", "partitionBy": "[]", "predicate": "part = 1"}
    assert params[3] == {"mode": "Append", "partitionBy": "[]", "canMergeSchema": True}
    assert params[4] == {"mode": "Overwrite", "partitionBy": '["part"]', "canOverwriteSchema": True}
    infos = [next(a["commitInfo"] for a in c if "commitInfo" in a) for c in commits(table_path)]
    assert [i.get("userMetadata") for i in infos] == [None, None, None, None, "meta1", "optionMeta2", "meta1"]
    assert ["operationMetrics" in i for i in infos] == [True] * 4 + [False] * 3


def test_byte_and_short_data_fit_a_wider_integer_column(spark: Any, table_path: str) -> None:
    """Delta's ``SchemaMergingUtils.mergeDataTypes`` merges byte and short data into a short or
    int column (at any depth) without a schema change (Parquet stores them all as INT32); an int
    into a short column is a type change (``DELTA_METADATA_MISMATCH`` without ``mergeSchema``)."""
    from deltalog.contrib.spark import read_table, write_table

    def df(i: int, types: str) -> Any:
        return spark.createDataFrame([(i, i, (i,))], types)

    write_table(df(1, "i int, s short, st struct<a: int>"), table_path)
    df(2, "i short, s byte, st struct<a: short>").write.format("deltalog").mode("append").save(table_path)
    write_table(df(3, "i byte, s byte, st struct<a: byte>"), table_path)
    with pytest.raises(Exception, match="DELTA_METADATA_MISMATCH"):
        write_table(df(4, "i int, s int, st struct<a: int>"), table_path)
    assert len(commits(table_path)) == 3
    native = read_table(spark, table_path)
    assert native.schema.simpleString() == "struct<i:int,s:smallint,st:struct<a:int>>"
    expected = [(1, 1, (1,)), (2, 2, (2,)), (3, 3, (3,))]
    assert sorted((r.i, r.s, tuple(r.st)) for r in native.collect()) == expected
    source = spark.read.format("deltalog").load(table_path)
    assert sorted((r.i, r.s, tuple(r.st)) for r in source.collect()) == expected


def test_merge_schema_widens_byte_and_short_columns_without_type_widening(spark: Any, table_path: str) -> None:
    """Delta's ``SchemaMergingUtils.mergeDataTypes`` (``SchemaUtilsSuite`` "schema merging
    performs upcast between ByteType, ShortType, and IntegerType"): with ``mergeSchema`` (or the
    session's ``schema.autoMerge.enabled``, ``DeltaOptions.canMergeSchema``) a byte
    or short column takes wider byte/short/int data's type, at any depth, without the type
    widening feature (Parquet stores all three as INT32): the schema changes in place, no
    ``delta.typeChanges``. Without ``mergeSchema`` it is Delta's ``DELTA_METADATA_MISMATCH``;
    int into long is no such merge. Every reader reads the older, narrower files right."""
    from deltalog.contrib.spark import read_table, write_table
    from deltalog.txn.commands.optimize import optimize

    def df(rows: list[tuple[Any, ...]], types: str) -> Any:
        return spark.createDataFrame(rows, types)

    old = "b byte, s short, st struct<a: short>, m map<short, byte>, l int"
    write_table(df([(1, 1, (1,), {1: 1}, 1)], old), table_path, **{"delta.enableChangeDataFeed": "true"})
    wide = "b short, s int, st struct<a: int>, m map<int, short>, l int"
    with pytest.raises(Exception, match="DELTA_METADATA_MISMATCH"):
        write_table(df([(2, 70000, (2,), {2: 2}, 2)], wide), table_path)
    with pytest.raises(Exception, match="DELTA_FAILED_TO_MERGE_FIELDS"):
        write_table(df([(2, 2, (2,), {2: 2}, 2)], old.replace("l int", "l long")), table_path, mergeSchema=True)
    auto_merge = "spark.databricks.delta.schema.autoMerge.enabled"  # Delta's canMergeSchema reads it
    spark.conf.set(auto_merge, "true")
    try:
        write_table(df([(300, 70000, (70000,), {70000: 300}, 2)], wide), table_path)
    finally:
        spark.conf.unset(auto_merge)
    assert _history(table_path)[1] == ("WRITE", {"mode": "Append", "partitionBy": "[]", "canMergeSchema": True})
    metadata = [a["metaData"] for a in commits(table_path)[1] if "metaData" in a]
    assert len(commits(table_path)) == 2 and len(metadata) == 1
    assert "delta.typeChanges" not in metadata[0]["schemaString"]
    assert not [a for a in commits(table_path)[1] if "protocol" in a]
    expected = [(1, 1, 1, {1: 1}, 1), (300, 70000, 70000, {70000: 300}, 2)]

    def rows(frame: Any) -> list[tuple[Any, ...]]:
        return sorted((r.b, r.s, r.st.a, dict(r.m), r.l) for r in frame.collect())

    native = read_table(spark, table_path)
    assert native.schema.simpleString() == "struct<b:smallint,s:int,st:struct<a:int>,m:map<int,smallint>,l:int>"
    assert rows(native) == expected
    assert rows(spark.read.format("deltalog").load(table_path)) == expected
    skipped = read_table(spark, table_path, where="s > 1000 AND st.a > 1000")
    assert rows(skipped) == expected[1:] and len(skipped.inputFiles()) == 1
    assert rows(read_table(spark, table_path, where="s < 1000")) == expected[:1]
    # Delta's batch change feed refuses the older schema (as after any type change) unless unsafe
    with pytest.raises(Exception, match="DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_DATA_SCHEMA"):
        read_table(spark, table_path, readChangeFeed=True, startingVersion=0).collect()
    assert rows(read_table(spark, table_path, readChangeFeed=True, startingVersion=1)) == expected[1:]
    unsafe = "spark.databricks.delta.changeDataFeed.unsafeBatchReadOnIncompatibleSchemaChanges.enabled"
    feed = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 0)
    assert rows(feed.option(unsafe, "true").load(table_path)) == expected
    theirs = delta_rs_rows(table_path, ["s"])
    assert [(r.b, r.s, r.st["a"], dict(r.m), r.l) for r in theirs.itertuples()] == expected
    assert optimize(DeltaLog.for_table(table_path)).num_files_removed == 2  # read to Arrow with the table's types
    assert rows(read_table(spark, table_path)) == expected


def test_nested_fields_named_in_another_case_are_written_as_the_table_names_them(spark: Any, tmp_path: Any) -> None:
    """Delta's ``SchemaUtils.normalizeColumnNames`` renames the data's names to the table's at
    every depth (structs, array elements, map values): files and statistics hold ``s.x``, and
    every reader (Python data source, Spark's reader, delta-rs) finds the values."""
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import read_table, write_table

    xy = "struct<x long, y long>"
    first = spark.createDataFrame(
        [(1, (10, 20), [(11, 21)], {"k": (12, 22)})], f"id long, s {xy}, a array<{xy}>, m map<string, {xy}>"
    )
    yx = "struct<Y long, X long>"
    shouty = f"ID long, S {yx}, A array<{yx}>, M map<string, {yx}>"
    for how in ("native", "python"):
        path = str(tmp_path / how)
        write_table(first, path)
        df = spark.createDataFrame([(2, (40, 30), [(41, 31)], {"k": (42, 32)})], shouty)
        write_table(df, path, native=how == "native")
        for native in (False, True):
            got = sorted(
                read_table(spark, path, native=native).selectExpr("id", "s.x", "s.y", "a[0].x", "m['k'].y").collect()
            )
            assert [tuple(r) for r in got] == [(1, 10, 20, 11, 22), (2, 30, 40, 31, 42)], (how, native)
        rs = delta_rs_rows(path, ["id"])
        assert [s["x"] for s in rs["s"]] == [10, 30], how
        for f in DeltaLog.for_table(path).update().files:
            names = pq.read_schema(os.path.join(path, f.path)).to_string()
            assert "Y:" not in names and "X:" not in names and "S:" not in names, (how, names)
            stats = json.loads(f.stats or "{}")
            assert set(stats["minValues"]["s"]) == {"x", "y"}, (how, stats)


def test_optimized_writes_as_delta(spark: Any, tmp_path: Any) -> None:
    """OptimizedWritesSuite: with optimized writes (the write option ``optimizeWrite``, the
    session's conf or the table's property: ``test_write_tasks``), ``write_table`` and DML shuffle
    the rows into balanced tasks by the partition columns (Spark's REBALANCE) before writing them:
    four input partitions make one file, a partitioned write at most one file per partition.
    ``format("deltalog")``, which cannot shuffle, refuses the option."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable, write_table
    from deltalog.contrib.spark.errors import InvalidWriteOptionError
    from deltalog.contrib.spark.source import DeltaLogDataSource

    df = spark.range(0, 100, 1, 4)
    flat, parts = str(tmp_path / "flat"), str(tmp_path / "parts")

    def files(path: str) -> int:
        return len(DeltaLog.for_table(path).update().files)

    write_table(df, flat, optimizeWrite="true")
    write_table(df, flat)
    assert files(flat) == 1 + 4
    write_table(df.withColumn("part", F.col("id") % 5), parts, partitionBy="part", optimizeWrite="true")
    assert files(parts) <= 5
    DeltaTable.forPath(spark, flat).setProperties({"delta.autoOptimize.optimizeWrite": "true"})
    DeltaTable.forPath(spark, flat).update("id < 50", {"id": "id + 1000"})  # 3 of the 5 files hold such ids
    assert files(flat) == 2 + 1
    assert sorted(r.id for r in spark.read.format("deltalog").load(flat).collect()) == sorted(
        [*range(1000, 1050), *range(50, 100)] * 2
    )
    with pytest.raises(InvalidWriteOptionError, match="optimizeWrite"):
        DeltaLogDataSource({"path": flat, "optimizeWrite": "true"}).writer(df.schema, False)
