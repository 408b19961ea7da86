"""Column mapping written through the Spark data source: tables created with
``delta.columnMapping.mode`` (name and id), columns renamed, added and dropped with the
``DeltaTable`` ALTER methods, and the rows read back by the Python path, the native read and
delta-rs, all equal."""

from __future__ import annotations

import dataclasses
import json
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


def test_overwrite_schema_keeps_ids_growing_and_reuses_those_of_unchanged_columns(spark: Any, tmp_path: Path) -> None:
    """As Delta (``columnMapping.reuseColumnMetadataDuringOverwrite``, on by default): a
    column the new schema keeps with its type keeps its id and physical name; every other
    one gets an id above ``delta.columnMapping.maxColumnId``, which never goes down (the
    protocol), so no id means two columns across the table's versions."""
    path = str(tmp_path / "t")
    first = spark.createDataFrame([(1, "a", "p")], "id long, name string, day string")
    first.write.format("deltalog").mode("append").option("delta.columnMapping.mode", "id").option(
        "partitionBy", "day"
    ).save(path)
    before = {f.name: (f.column_mapping_id, f.physical_name) for f in DeltaLog.for_table(path).update().schema.fields}
    second = spark.createDataFrame([(2, 2.5, 7)], "id long, name double, v int")
    second.write.format("deltalog").mode("overwrite").option("overwriteSchema", "true").save(path)
    snapshot = DeltaLog.for_table(path).update()
    after = {f.name: (f.column_mapping_id, f.physical_name) for f in snapshot.schema.fields}
    assert after["id"] == before["id"]
    assert sorted(after[c][0] for c in ("name", "v")) == [4, 5]
    assert after["name"][1] != before["name"][1]
    assert snapshot.metadata.configuration["delta.columnMapping.maxColumnId"] == "5"
    assert (
        _rows(read_table(spark, path))
        == _rows(read_table(spark, path, native=False))
        == [{"id": 2, "name": 2.5, "v": 7}]
    )
    assert _rows(spark.read.format("deltalog").option("versionAsOf", 0).load(path)) == [
        {"id": 1, "name": "a", "day": "p"}
    ]


_REFUSED = [  # (call, error type, message): DeltaAlterTableTests, CheckConstraintsSuite, DeltaColumnMappingSuite,
    # DeltaColumnRenameSuite, DeltaDropColumnSuite
    (
        lambda t: t.setProperties({"delta.constraints.big": "id > 3"}),
        "ConstraintViolationError",
        r"1 rows in .* violate the new CHECK constraint \(id > 3\)",
    ),
    (lambda t: t.setProperties({"delta.constraints.sum": "id + 1"}), "InvalidPropertyError", "NON_BOOLEAN"),
    (lambda t: t.setProperties({"delta.key": "v"}), "UnknownPropertyError", "DELTA_UNKNOWN_CONFIGURATION"),
    (lambda t: t.setProperties({"delta.logRetentionDuration": "abc"}), "InvalidPropertyError", "not an interval"),
    (lambda t: t.setProperties({"delta.constraints.POS": "id > 1"}), "InvalidPropertyError", "ALREADY_EXISTS"),
    (lambda t: t.unsetProperties(["missing"], ifExists=False), "InvalidPropertyError", "missing"),
    (lambda t: t.dropColumn("part"), "InvalidSchemaChangeError", "DROP_PARTITION_COLUMN"),
    (lambda t: t.renameColumn("id", "ident"), "InvalidSchemaChangeError", "CONSTRAINT_DEPENDENT_COLUMN_CHANGE"),
    (lambda t: t.dropColumn("s.x"), "InvalidSchemaChangeError", "CONSTRAINT_DEPENDENT_COLUMN_CHANGE"),
    (lambda t: t.addColumn("ID", "int"), "InvalidSchemaChangeError", "already exists"),
    (lambda t: t.addColumn("n", "int", nullable=False), "InvalidSchemaChangeError", "NOT NULL"),
    (lambda t: t.renameColumn("part", "PART"), "InvalidSchemaChangeError", "FIELD_ALREADY_EXISTS"),
    (lambda t: t.dropColumn("a.element"), "InvalidSchemaChangeError", "DROP_NESTED_COLUMN_FROM_NON_STRUCT_TYPE"),
]


def test_alter_table_methods_agree_with_deltas_suites(spark: Any, tmp_path: Path) -> None:
    """Representative ALTER cases of Delta's suites on a name-mode table: bad input is refused
    with nothing committed; the rest commits Delta's operations (ADD CONSTRAINT, ADD COLUMNS into
    an array's struct, CHANGE COLUMN on a partition column, whose comment the read schema shows,
    RENAME / DROP COLUMN, SET / UNSET TBLPROPERTIES with delta.* keys in any case)."""
    path = str(tmp_path / "t")
    df = spark.createDataFrame(
        [(1, "a", (10,), [(1,)]), (5, "b", (None,), [])], "id int, part string, s struct<x:int>, a array<struct<v:int>>"
    )
    df.write.format("deltalog").mode("append").option("delta.columnMapping.mode", "name").option(
        "partitionBy", "part"
    ).save(path)
    table = DeltaTable.forPath(spark, path)
    table.setProperties({"delta.constraints.Pos": "id > 0 AND s.x IS NULL OR s.x > 0"})
    before = DeltaLog.for_table(path).update().version
    for call, error, message in _REFUSED:
        with pytest.raises(Exception, match=message) as caught:
            call(table)
        assert type(caught.value).__name__ == error
    assert DeltaLog.for_table(path).update().version == before
    table.addColumn("a.element.w", "string")
    table.changeColumnComment("part", "the day")
    table.renameColumn("a", "arr")
    table.dropColumn("arr")
    table.setProperties({"DELTA.APPENDONLY": "true"})
    table.unsetProperties(["delta.constraints.POS", "delta.appendonly"], ifExists=False)
    table.unsetProperties(["delta.constraints.pos"])
    assert table.toDF().schema["part"].metadata == {"comment": "the day"}
    assert _rows(table.toDF()) == [{"id": 1, "part": "a", "s": {"x": 10}}, {"id": 5, "part": "b", "s": {"x": None}}]
    assert DeltaLog.for_table(path).update().metadata.configuration == {
        "delta.columnMapping.mode": "name",
        "delta.columnMapping.maxColumnId": "7",
    }
    history = [(r["operation"], r["operationParameters"]) for r in table.history().collect()]
    assert [op for op, _ in history] == [
        "DROP CONSTRAINT",
        "UNSET TBLPROPERTIES",
        "SET TBLPROPERTIES",
        "DROP COLUMNS",
        "RENAME COLUMN",
        "CHANGE COLUMN",
        "ADD COLUMNS",
        "ADD CONSTRAINT",
        "WRITE",
    ]
    assert history[0][1] == {"name": "pos", "existed": "false"}
    assert history[1][1] == {"properties": '["delta.constraints.POS","delta.appendOnly"]', "ifExists": "false"}
    assert history[-2][1] == {"name": "Pos", "expr": "id > 0 AND s.x IS NULL OR s.x > 0"}


def test_randomize_file_prefixes_places_new_files_under_random_directories(spark: Any, tmp_path: Path) -> None:
    """DeltaAlterTableTests "SET/UNSET TBLPROPERTIES - delta.randomizeFilePrefixes - partitioned
    table": with the property on, new files (data-source and native writes) go under a random
    directory of delta.randomPrefixLength characters instead of the partition directory; unset,
    partition directories again. Rows read back unchanged."""
    import re

    from deltalog.contrib.spark import write_table

    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "x")], "id int, part string")
    df.write.format("deltalog").mode("append").option("partitionBy", "part").save(path)
    table = DeltaTable.forPath(spark, path)
    table.setProperties({"delta.randomizeFilePrefixes": "true", "delta.randomPrefixLength": "7"})
    spark.createDataFrame([(2, "y")], "id int, part string").write.format("deltalog").mode("append").save(path)
    write_table(spark.createDataFrame([(3, "z")], "id int, part string"), path, mode="append")
    table.unsetProperties(["delta.randomizeFilePrefixes"])
    spark.createDataFrame([(4, "w")], "id int, part string").write.format("deltalog").mode("append").save(path)
    paths = sorted((f.partition_values["part"], f.path) for f in DeltaLog.for_table(path).update().files)
    assert [bool(re.fullmatch(r"[A-Za-z0-9]{7}/part-.*parquet", p)) for _, p in paths] == [False, False, True, True]
    assert paths[0][1].startswith("part=w/")
    assert _rows(table.toDF()) == [
        {"id": 1, "part": "x"},
        {"id": 2, "part": "y"},
        {"id": 3, "part": "z"},
        {"id": 4, "part": "w"},
    ]


def test_written_dataframes_column_mapping_metadata_is_not_the_tables(spark: Any, tmp_path: Path) -> None:
    """DeltaColumnMappingSuite "create table through dataframe should ... drop dataframe
    metadata" and "create table with none mode": ids a DataFrame's schema carries (copied from
    another table) are dropped, the table numbers its own columns from 1, and a table without
    column mapping keeps no column mapping metadata (Delta's ``ImplicitMetadataOperation``)."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    def ids(cid: int) -> dict[str, Any]:
        return {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": f"p{cid}", "parquet.field.id": cid}

    schema = StructType(
        [StructField("a", StringType(), True, ids(111)), StructField("b", IntegerType(), True, ids(222))]
    )
    df = spark.createDataFrame([("x", 1)], schema)
    for mode in ("name", "none"):
        path = str(tmp_path / mode)
        df.write.format("deltalog").mode("append").option("delta.columnMapping.mode", mode).save(path)
        snapshot = DeltaLog.for_table(path).update()
        if mode == "name":
            assert [(f.column_mapping_id, f.physical_name[:4]) for f in snapshot.schema.fields] == [
                (1, "col-"),
                (2, "col-"),
            ]
            assert snapshot.metadata.configuration["delta.columnMapping.maxColumnId"] == "2"
        else:
            assert all(not f.metadata for f in snapshot.schema.fields)
        assert _rows(read_table(spark, path)) == _rows(read_table(spark, path, native=False)) == [{"a": "x", "b": 1}]


def test_id_mode_reads_columns_by_field_id_on_both_read_paths(spark: Any, tmp_path: Path) -> None:
    """DeltaColumnMappingSuite "explicit id matching": in ``id`` mode a column is the file's
    column with its id, whatever the name: an id no file has reads as nulls, and the id of a
    dropped column reads that column's data, on the native and the Python read paths."""
    from deltalog.txn.commit.operations import ManualUpdate

    path = str(tmp_path / "t")
    df = spark.createDataFrame([("str3", ("str1.3", 3), "str4")], "a string, b struct<c:string,d:int>, e string")
    df.write.format("deltalog").mode("append").option("delta.columnMapping.mode", "id").save(path)
    log = DeltaLog.for_table(path)
    ids = {f.name: f.column_mapping_id for f in log.update().schema.fields}

    def point(name: str, cid: int) -> None:
        metadata = log.update().metadata
        schema = json.loads(metadata.schema_string)
        next(f for f in schema["fields"] if f["name"] == name)["metadata"]["delta.columnMapping.id"] = cid
        config = {**metadata.configuration, "delta.columnMapping.maxColumnId": "10000"}
        change = dataclasses.replace(metadata, schema_string=json.dumps(schema), configuration=config)
        log.start_transaction().commit([change], ManualUpdate())

    def a_values() -> tuple[list[Any], list[Any]]:
        return _rows(read_table(spark, path).select("a", "b")), _rows(
            read_table(spark, path, native=False).select("a", "b")
        )

    point("a", 100)
    assert a_values() == ([{"a": None, "b": {"c": "str1.3", "d": 3}}],) * 2
    DeltaTable.forPath(spark, path).dropColumn("e")
    point("a", ids["e"])
    assert a_values() == ([{"a": "str4", "b": {"c": "str1.3", "d": 3}}],) * 2


def test_filters_on_a_renamed_column_use_physical_names(spark: Any, tmp_path: Path) -> None:
    """DeltaColumnMappingSuite "filters pushed down to parquet use physical names": a column
    renamed to another's old name is filtered (and its files skipped) by its own data."""
    path = str(tmp_path / "t")
    spark.createDataFrame([(100, 1000)], "a int, b int").write.format("deltalog").mode("append").save(path)
    table = DeltaTable.forPath(spark, path)
    table.setProperties({"delta.columnMapping.mode": "name"})
    table.renameColumn("a", "x")
    table.renameColumn("b", "a")  # files hold a column named ``a``: the old ``a``
    assert _rows(read_table(spark, path, where="a = 1000")) == [{"x": 100, "a": 1000}]


def test_a_dataframe_made_before_a_rename_refuses_to_read_another_column(spark: Any, tmp_path: Path) -> None:
    """Delta's ``TahoeLogFileIndex.getSnapshot``: a DataFrame reads the latest version, so one
    made before ``v`` was renamed to ``w`` and a new ``v`` added would read the new, empty
    column under the old name (nulls; its filter dropping every row): refused
    (``DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS``). One made after reads on across ADD COLUMNS."""
    path = str(tmp_path / "t")
    writer = spark.createDataFrame([(1, "a")], "id int, v string").write.format("deltalog").mode("append")
    writer.option("delta.columnMapping.mode", "name").save(path)
    table = DeltaTable.forPath(spark, path)
    before = spark.read.format("deltalog").load(path)
    table.renameColumn("v", "w")
    table.addColumn("v", "string")
    after = spark.read.format("deltalog").load(path)
    table.addColumn("z", "int")
    for df in (before, before.where("v = 'a'")):
        with pytest.raises(Exception, match="DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS"):
            df.collect()
    assert _rows(after) == [{"id": 1, "w": "a", "v": None}]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("name", [("a", 1, True), ("b", 3, False)]), ("id", [("a", 3, False), ("b", 4, False)]), ("none", [])],
)
def test_replace_table_may_change_the_column_mapping_mode(
    spark: Any, tmp_path: Path, mode: str, expected: list[Any]
) -> None:
    """DeltaColumnMappingSuite "replace delta table will reuse the field id only when column
    name and type unchanged" and "... will not reuse the field id when name mapping mode
    changed": REPLACE TABLE recreates the table, so any mode is allowed; ids go on above the old
    ``maxColumnId``, and a column keeps its id and physical name only when the mode stays."""
    path = str(tmp_path / "t")
    builder = DeltaTable.create(spark).location(path).addColumn("a", "bigint").addColumn("b", "int")
    builder.property("delta.columnMapping.mode", "name").execute()
    before = {f.name: f.physical_name for f in DeltaLog.for_table(path).update().schema.fields}
    replace = DeltaTable.replace(spark).location(path).addColumn("a", "bigint").addColumn("b", "bigint")
    replace.property("delta.columnMapping.mode", mode).execute()
    schema = DeltaLog.for_table(path).update().schema
    mapped = [(f.name, f.column_mapping_id, f.physical_name == before[f.name]) for f in schema.fields]
    assert mapped == (expected or [("a", None, False), ("b", None, False)])
