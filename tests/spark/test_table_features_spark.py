"""Type widening and liquid clustering from Spark: DeltaTable.alterColumnType, automatic
widening on a mergeSchema write, and files written before a widening read by the Python
data source and by the native scan with the same rows."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.features.widening_tables import build, expected_rows
from tests.spark.helpers import commits

pytestmark = pytest.mark.spark


def _both_paths(spark, path, order="id"):
    from deltalog.contrib.spark import read_table

    python = [r.asDict(recursive=True) for r in read_table(spark, path, native=False).orderBy(order).collect()]
    native = [r.asDict(recursive=True) for r in read_table(spark, path, native=True).orderBy(order).collect()]
    assert python == native
    return python


# (tmp_path, not table_path: delta-rs 1.x refuses the typeWidening reader feature)
def test_files_written_before_a_widening_read_as_the_wider_type(spark, tmp_path):
    table_path = str(tmp_path / "t")
    build(table_path)
    assert _both_paths(spark, table_path) == expected_rows()


def test_alter_column_type_and_merge_schema_widening(spark, tmp_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.errors import UnsupportedTypeChangeError

    table_path = str(tmp_path / "t")
    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long")
        .addColumn("a", "int")
        .addColumn("b", "short")
        .property("delta.enableTypeWidening", "true")
        .execute()
    )
    spark.sql("select 1L as id, 5 as a, cast(2 as short) as b").write.format("deltalog").mode("append").save(table_path)
    table.alterColumnType("a", "bigint")
    with pytest.raises(UnsupportedTypeChangeError):
        table.alterColumnType("a", "int")
    big = spark.sql("select 2L as id, 5000000000L as a, 70000 as b")
    with pytest.raises(Exception, match="short in the table"):  # without mergeSchema: no widening
        big.write.format("deltalog").mode("append").save(table_path)
    big.write.format("deltalog").mode("append").option("mergeSchema", "true").save(table_path)
    schema = json.loads(next(a["metaData"] for a in commits(table_path)[-1] if "metaData" in a)["schemaString"])
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["a"]["metadata"] == {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    assert fields["b"]["type"] == "integer"
    assert fields["b"]["metadata"] == {"delta.typeChanges": [{"fromType": "short", "toType": "integer"}]}
    assert _both_paths(spark, table_path) == [{"id": 1, "a": 5, "b": 2}, {"id": 2, "a": 5000000000, "b": 70000}]


def test_clustered_table_from_the_builder_optimized_by_spark_tasks(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.delta_log import DeltaLog

    table = (
        DeltaTable.create(spark).location(table_path).addColumn("x", "long").addColumn("y", "long").clusterBy("x", "y")
    ).execute()
    # one append, four tasks: four unclustered files, each spanning the whole square
    spark.range(0, 1600, numPartitions=4).selectExpr("(id * 37) % 400 as x", "(id * 91) % 400 as y").write.format(
        "deltalog"
    ).mode("append").save(table_path)
    log = DeltaLog.for_table(table_path)
    assert all(f.clustering_provider is None for f in log.update().files)
    total = sum(f.size for f in log.update().files)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(total // 4))
    try:
        metrics = table.optimize().executeCompaction().collect()[0].metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    files = log.update().files
    stats = metrics["clusteringStats"]  # Delta's ClusteringStats: 4 unclustered files merged into one ZCube
    merged = (stats["inputOtherFiles"]["numFiles"], stats["mergedFiles"]["numFiles"], stats["numOutputZCubes"])
    assert merged == (4, 4, 1)
    assert metrics["zOrderStats"] is None
    assert len(files) > 1 and all(f.clustering_provider == "liquid" for f in files)
    widths = [json.loads(f.stats)["maxValues"]["x"] - json.loads(f.stats)["minValues"]["x"] for f in files]
    assert max(widths) < 399  # no file spans the whole range of x any more
    info = next(a["commitInfo"] for a in commits(table_path)[-1] if "commitInfo" in a)
    assert info["operationParameters"]["clusterBy"] == '["x","y"]'
    created = next(a["commitInfo"] for a in commits(table_path)[0] if "commitInfo" in a)
    assert created["operationParameters"]["clusterBy"] == '["x","y"]'
    rows = _both_paths(spark, table_path, order=["x", "y"])
    assert len(rows) == 1600
    with pytest.raises(Exception, match=r"DELTA_CLUSTERING_WITH_PARTITION_PREDICATE.*predicates: x > 0 y < 5"):
        table.optimize().where("x > 0").where("y < 5").executeCompaction()  # Delta's "error scenarios"
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_CLUSTERING_WITH_ZORDER_BY.*ZORDER BY \(y, `a.b`\)"):
        table.optimize().executeZOrderBy("y", "`a.b`")  # Delta's DeltaAnalysisException, before any check of y
    # table_path's teardown checks delta-rs reads the clustered table too


def test_delta_written_widened_table_reads_and_takes_appends(spark, tmp_path):
    """Delta's golden ``type-widening`` table: the row written before the widening reads as
    the wider types on both paths; deltalog widens further and appends."""
    import datetime as dt
    from decimal import Decimal

    from deltalog.contrib.spark import DeltaTable
    from tests.features.test_type_widening import golden_copy

    path = golden_copy(tmp_path)
    old, new = _both_paths(spark, path, order="int_long")
    assert (old["byte_long"], old["int_long"], old["int_double"]) == (1, 2, 7.0)
    assert old["date_timestamp_ntz"] == dt.datetime(2024, 9, 9)
    assert old["long_decimal"] == Decimal("4.0")
    assert new["int_long"] > 2**31
    DeltaTable.forPath(spark, path).alterColumnType("decimal_decimal_same_scale", "decimal(22,2)")
    spark.createDataFrame([new]).selectExpr(
        *[
            f"cast(`{c}` as {t}) as `{c}`" if c != "int_long" else "cast(3 as long) as int_long"
            for c, t in _types(spark, path)
        ]
    ).write.format("deltalog").mode("append").save(path)
    rows = _both_paths(spark, path, order="int_long")
    assert [r["int_long"] for r in rows] == [2, 3, new["int_long"]]


def _types(spark, path):
    from deltalog.contrib.spark import read_table

    return [(f.name, f.dataType.simpleString()) for f in read_table(spark, path, native=False).schema.fields]


def test_a_clustering_column_cannot_be_dropped(spark, tmp_path):
    """Delta's DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN: the ``delta.clustering`` domain
    would name a column the schema no longer has, and OPTIMIZE (and every reader of the
    clustering columns) would fail. A renamed clustering column stays clustered."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.errors import InvalidSchemaChangeError

    path = str(tmp_path / "t")
    table = (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("x", "long")
        .addColumn("s", "struct<a: long, b: long>")
        .addColumn("y", "long")
        .clusterBy("x", "y")
        .property("delta.columnMapping.mode", "name")
        .execute()
    )
    for drop in (lambda: table.dropColumn("X"), lambda: table.dropColumns(["s", "y"])):
        with pytest.raises(InvalidSchemaChangeError, match="DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN"):
            drop()
    log = DeltaLog.for_table(path)
    assert log.update().version == 0
    table.dropColumns(["s.b"])
    table.renameColumn("x", "z")
    spark.sql("select 1L as z, named_struct('a', 2L) as s, 3L as y").write.format("deltalog").mode("append").save(path)
    table.optimize().executeCompaction()
    info = next(a["commitInfo"] for a in commits(path)[-1] if "commitInfo" in a)
    assert info["operationParameters"]["clusterBy"] == '["z","y"]'
    assert table.detail().collect()[0].clusteringColumns == ["z", "y"]  # DESCRIBE DETAIL, as Delta
    assert _both_paths(spark, path, order="z") == [{"z": 1, "s": {"a": 2}, "y": 3}]


def test_an_overwrite_of_a_clustered_table_clears_its_clustering_columns(spark, tmp_path):
    """Delta's ``WriteIntoDelta.getNewDomainMetadata`` (``ClusteredTableDDLSuite`` "Replace
    clustered table with non-clustered table - dataframe writer"): a DataFrame overwrite
    replaces the table, and a table replaced without ``CLUSTER BY`` keeps the clustering
    feature with no clustering column. With ``overwriteSchema`` dropping the clustering column
    the table used to keep a domain naming a missing column, and DESCRIBE DETAIL and OPTIMIZE
    failed. ``replaceWhere`` and appends keep the columns; partitioning it stays refused."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.delta_log import DeltaLog

    def clustered(name):
        path = str(tmp_path / name)
        DeltaTable.create(spark).location(path).addColumn("a", "int").addColumn("s", "string").clusterBy("a").execute()
        spark.sql("select 1 as a, 'x' as s").write.format("deltalog").mode("append").save(path)
        return path, DeltaTable.forPath(spark, path)

    def columns(table):
        return table.detail().collect()[0].clusteringColumns

    path, table = clustered("schema")
    new_data = spark.sql("select 2 as i, 'y' as s")
    new_data.write.format("deltalog").mode("overwrite").option("overwriteSchema", "true").save(path)
    assert columns(table) == [] and "clustering" in DeltaLog.for_table(path).update().protocol.writer_features
    table.optimize().executeCompaction()
    path, table = clustered("same")
    spark.sql("select 3 as a, 'z' as s").write.format("deltalog").mode("append").option("replaceWhere", "a = 1").save(
        path
    )
    assert columns(table) == ["a"]
    spark.sql("select 4 as a, 'w' as s").write.format("deltalog").mode("overwrite").save(path)
    assert columns(table) == []
    path, table = clustered("parts")
    with pytest.raises(Exception, match="DELTA_CLUSTERING_REPLACE_TABLE_WITH_PARTITIONED_TABLE"):
        new_data.write.format("deltalog").mode("overwrite").option("overwriteSchema", "true").option(
            "partitionBy", "i"
        ).save(path)
    assert columns(table) == ["a"] and DeltaLog.for_table(path).update().version == 1
    with pytest.raises(Exception, match="DELTA_CLUSTERING_REPLACE_TABLE_WITH_PARTITIONED_TABLE"):
        DeltaTable.replace(spark).location(path).addColumn("i", "int").addColumn("s", "string").partitionedBy(
            "i"
        ).execute()
    assert DeltaLog.for_table(path).update().version == 1
    DeltaTable.replace(spark).location(path).addColumn("i", "int").addColumn("s", "string").execute()
    assert columns(table) == []  # REPLACE without CLUSTER BY: clustered by nothing, as Delta
    (domain,) = [a["domainMetadata"] for a in commits(path)[-1] if "domainMetadata" in a]
    assert domain == {"domain": "delta.clustering", "configuration": '{"clusteringColumns":[]}', "removed": False}


def test_a_check_constraint_the_rows_break_cannot_be_added(spark, table_path):
    """Delta's ADD CONSTRAINT (DELTA_NEW_CHECK_CONSTRAINT_VIOLATION): a CHECK constraint set
    on an existing table is checked against its rows first; one that a row breaks (false or
    NULL) is refused and the table keeps its properties."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.constraints import ConstraintViolationError
    from deltalog.txn.delta_log import DeltaLog

    spark.createDataFrame([(1, 5), (2, None), (-3, 7)], "x long, y long").write.format("deltalog").mode("append").save(
        table_path
    )
    table = DeltaTable.forPath(spark, table_path)
    for constraint in ("x > 0", "y > 0"):
        with pytest.raises(
            ConstraintViolationError, match=r"1 rows in .* violate the new CHECK constraint \(" + re.escape(constraint)
        ) as err:
            table.setProperties({"team": "a", "delta.constraints.c": constraint})
        assert err.value.violations == 1
    # CheckConstraintsSuite: Delta counts the rows of df.where(NOT expr OR expr IS UNKNOWN), so
    # a non-deterministic expression is counted (x = 1, 2), not refused by Spark's aggregate
    with pytest.raises(ConstraintViolationError, match=r"^2 rows in .* constraint \(x < rand\(\)\)"):
        table.setProperties({"delta.constraints.r": "x < rand()"})
    log = DeltaLog.for_table(table_path)
    assert log.update().version == 0 and "team" not in log.update().metadata.configuration
    table.delete("x < 0 OR y IS NULL")
    table.setProperties({"delta.constraints.c": "x > 0 AND y > 0"})
    assert log.update().metadata.configuration["delta.constraints.c"] == "x > 0 AND y > 0"


def test_merge_with_schema_evolution_widens_a_column(spark, tmp_path):
    """Delta's MERGE with schema evolution on a table with type widening: a source column of
    a wider type (long into int) widens the table column, recorded in delta.typeChanges, as a
    mergeSchema append does; before, the values were cast down and overflowed."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    table = (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "long")
        .addColumn("v", "int")
        .property("delta.enableTypeWidening", "true")
        .execute()
    )
    spark.sql("select 1L as id, 1 as v").write.format("deltalog").mode("append").save(path)
    source = spark.sql("select 1L as id, 6000000000L as v union all select 2L, 7L")
    merge = table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll()
    merge.withSchemaEvolution().execute()
    schema = json.loads(next(a["metaData"] for a in commits(path)[-1] if "metaData" in a)["schemaString"])
    v = next(f for f in schema["fields"] if f["name"] == "v")
    assert v["type"] == "long" and v["metadata"] == {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    assert _both_paths(spark, path) == [{"id": 1, "v": 6000000000}, {"id": 2, "v": 7}]


def test_schema_evolution_widens_integers_to_double_and_decimal_unless_the_session_says_otherwise(spark, tmp_path):
    """Delta's TypeWideningInsertSchemaEvolutionBasicSuite and TypeWideningMergeIntoSchemaEvolutionSuite:
    ``spark.databricks.delta.typeWidening.allowAutomaticWidening`` is ``always`` by default (Delta
    4.1+): ``mergeSchema`` widens an int column to double, an int to decimal(10, 0) and a long to
    decimal(20, 0), MERGE with schema evolution a short to double; ``same_family_type`` refuses
    the int -> double write (the table is untouched), as before."""
    from decimal import Decimal as D

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.options import AUTOMATIC_WIDENING_CONF

    path = str(tmp_path / "t")
    table = DeltaTable.create(spark).location(path).addColumn("id", "long").addColumn("a", "int")
    table = table.addColumn("b", "int").addColumn("c", "long").addColumn("d", "short")
    table = table.property("delta.enableTypeWidening", "true").execute()
    spark.sql("select 1L id, 1 a, 2 b, 3L c, 4S d").write.format("deltalog").mode("append").save(path)
    data = spark.sql("select 2L id, 2.5D a, cast(12345678901 as decimal(11,0)) b, cast(1.5 as decimal(21,1)) c")
    version = len(commits(path))
    spark.conf.set(AUTOMATIC_WIDENING_CONF, "same_family_type")
    try:
        with pytest.raises(Exception, match="DELTA_FAILED_TO_MERGE_FIELDS"):
            data.write.format("deltalog").mode("append").option("mergeSchema", "true").save(path)
    finally:
        spark.conf.unset(AUTOMATIC_WIDENING_CONF)
    assert len(commits(path)) == version
    data.write.format("deltalog").mode("append").option("mergeSchema", "true").save(path)
    source = spark.sql("select 3L id, -10.5D d").alias("s")
    table.alias("t").merge(source, "t.id = s.id").whenNotMatchedInsertAll().withSchemaEvolution().execute()
    fields = json.loads(next(a["metaData"] for a in commits(path)[-2] if "metaData" in a)["schemaString"])["fields"]
    assert [f["metadata"]["delta.typeChanges"][0]["toType"] for f in fields[1:4]] == [
        "double",
        "decimal(11,0)",
        "decimal(21,1)",
    ]
    rows = [(r["a"], r["b"], r["c"], r["d"]) for r in _both_paths(spark, path)]
    assert rows == [(1.0, D(2), D("3.0"), 4.0), (2.5, D(12345678901), D("1.5"), None), (None, None, None, -10.5)]


def test_merge_with_schema_evolution_widens_the_columns_its_assignments_name(spark, tmp_path):
    """Delta's TypeWideningMergeIntoSchemaEvolutionSuite: explicit assignments widen too. The
    source's column of the assigned name is kept in the migration schema (Delta's
    computePostEvolutionTargetSchema), whatever the value: `a = s.a + 1` widens a short `a` to
    the source's int, a nested `s.x` assignment widens that field, a map assignment its values;
    a column no clause names (`b`) keeps its type. Before, the values were cast to the old types."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    table = (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("a", "short")
        .addColumn("b", "short")
        .addColumn("s", "struct<x: short>")
        .addColumn("m", "map<string, short>")
        .property("delta.enableTypeWidening", "true")
        .execute()
    )
    spark.sql("select 0S a, 5S b, named_struct('x', 1S) s, map('k', 1S) m").write.format("deltalog").mode(
        "append"
    ).save(path)
    source = spark.sql(
        "select 0 a, 40000 b, named_struct('x', 70000) s, map('k', 80000) m union all "
        "select 50000, 6, named_struct('x', 2), map('k', 3)"
    )
    merge = table.alias("t").merge(source.alias("s"), "t.a = s.a")
    merge = merge.whenMatchedUpdate(set={"a": "s.a + 1", "t.s.x": "s.s.x + 1", "m": "s.m"})
    merge.whenNotMatchedInsert(values={"a": "s.a"}).withSchemaEvolution().execute()
    schema = json.loads(next(a["metaData"] for a in commits(path)[-1] if "metaData" in a)["schemaString"])
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert types["a"] == "integer" and types["b"] == "short"
    assert types["s"]["fields"][0]["type"] == "integer"
    assert types["m"]["valueType"] == "integer"
    rows = _both_paths(spark, path, order="a")
    assert rows == [
        {"a": 1, "b": 5, "s": {"x": 70001}, "m": {"k": 80000}},
        {"a": 50000, "b": None, "s": None, "m": None},
    ]


def test_drop_type_widening_rewrites_old_files_by_spark_tasks(spark, table_path):
    """DeltaTable.dropFeatureSupport("typeWidening"): the file written before int -> long is
    rewritten by a Spark task (the OPTIMIZE job group), delta.typeChanges is removed; deltalog
    and delta-rs (the table_path fixture too) read the same rows, every footer holds int64."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.maintenance import OPTIMIZE_JOB_GROUP
    from deltalog.txn.delta_log import DeltaLog
    from tests.spark.helpers import delta_rs_rows

    table = DeltaTable.create(spark).location(table_path).addColumn("id", "long").addColumn("a", "int")
    table = table.property("delta.enableTypeWidening", "true").execute()
    spark.sql("select 1L as id, 5 as a").write.format("deltalog").mode("append").save(table_path)
    table.alterColumnType("a", "bigint")
    spark.sql("select 2L as id, 5000000000L as a").write.format("deltalog").mode("append").save(table_path)
    tracker = spark.sparkContext.statusTracker()
    jobs = len(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP))
    table.dropFeatureSupport("typeWidening")
    assert len(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP)) == jobs + 1
    snap = DeltaLog.for_table(table_path).update()
    assert "typeWidening" not in (snap.protocol.reader_features or ())
    assert "delta.typeChanges" not in snap.metadata.schema_string
    assert all(pq.read_schema(f"{table_path}/{f.path}").field("a").type == pa.int64() for f in snap.files)
    want = [(1, 5), (2, 5000000000)]
    assert sorted((r.id, r.a) for r in table.toDF().collect()) == want
    theirs = delta_rs_rows(table_path, ["id", "a"])
    assert sorted(zip(theirs["id"], theirs["a"])) == want


def test_drop_deletion_vectors_then_write_the_protected_table(spark, table_path):
    """DeltaTable.dropFeatureSupport: DVs purged by Spark tasks, barrier checkpoints,
    checkpointProtection; then deltalog keeps writing the table, and deltalog and delta-rs
    (the table_path fixture too) read it."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.errors import FeatureNotPresentError
    from deltalog.txn.delta_log import DeltaLog
    from tests.spark.helpers import delta_rs_rows, operations

    table = DeltaTable.create(spark).location(table_path).addColumn("id", "long")
    table = table.property("delta.enableDeletionVectors", "true").execute()
    spark.range(0, 20).write.format("deltalog").mode("append").save(table_path)
    table.delete("id % 5 = 0")
    assert any(a["add"].get("deletionVector") for a in commits(table_path)[-1] if "add" in a)
    table.dropFeatureSupport("deletionVectors")
    log = DeltaLog.for_table(table_path)
    snap = log.update()
    assert "deletionVectors" not in (snap.protocol.writer_features or ())
    assert "checkpointProtection" in (snap.protocol.writer_features or ())
    assert operations(table_path)[-4:] == ["Empty Commit"] * 3 + ["DROP FEATURE"]
    with pytest.raises(FeatureNotPresentError):
        table.dropFeatureSupport("deletionVectors")
    spark.range(20, 23).write.format("deltalog").mode("append").save(table_path)
    want = [i for i in range(23) if i >= 20 or i % 5]
    assert sorted(r.id for r in table.toDF().collect()) == want
    assert sorted(delta_rs_rows(table_path, ["id"])["id"]) == want
    for version in range(log.update().version + 1):  # every version reads (DV versions included)
        assert bool(log.snapshot(version).files) == (version > 0)


def test_drop_column_mapping_rewrites_files_by_spark_tasks(spark, table_path):
    """DeltaTable.dropFeatureSupport("columnMapping"): the REMOVE COLUMN MAPPING rewrite runs
    as Spark tasks (the OPTIMIZE job group); the renamed and nested columns are stored under
    their logical names; deltalog and delta-rs (the table_path fixture too) read the rows."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.maintenance import OPTIMIZE_JOB_GROUP
    from deltalog.txn.delta_log import DeltaLog
    from tests.log.test_column_mapping_writes import _create, _write

    log = _create(Path(table_path), {"delta.columnMapping.mode": "name"})  # written without Spark: faster
    _write(log, [{"id": i, "part": str(i), "s": {"x": i * 2}} for i in (0, 1)])
    table = DeltaTable.forPath(spark, table_path)
    table.renameColumn("id", "key")
    tracker = spark.sparkContext.statusTracker()
    jobs = len(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP))
    table.dropFeatureSupport("columnMapping")
    assert len(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP)) == jobs + 1
    snap = DeltaLog.for_table(table_path).update()
    assert "columnMapping" not in (snap.protocol.writer_features or ())
    assert all(pq.read_schema(f"{table_path}/{f.path}").names == ["key", "s"] for f in snap.files)
    rows = sorted((r.asDict(recursive=True) for r in table.toDF().collect()), key=lambda r: r["key"])
    assert rows == [{"key": 0, "part": "0", "s": {"x": 0}}, {"key": 1, "part": "1", "s": {"x": 2}}]


def test_set_column_mapping_mode_none_rewrites_by_spark_tasks(spark, table_path):
    """DeltaTable.setProperties({'delta.columnMapping.mode': 'none'}) (Delta's ALTER TABLE SET
    TBLPROPERTIES): refused while spark.databricks.delta.columnMapping.allowRemoval is false;
    else the REMOVE COLUMN MAPPING rewrite runs as Spark tasks, the feature stays in the
    protocol, and both read paths and delta-rs read the same rows under the logical names."""
    from pathlib import Path

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.maintenance import OPTIMIZE_JOB_GROUP
    from deltalog.errors import UnsupportedColumnMappingModeChangeError
    from deltalog.txn.delta_log import DeltaLog
    from tests.log.test_column_mapping_writes import _create, _write
    from tests.spark.helpers import delta_rs_rows

    log = _create(Path(table_path), {"delta.columnMapping.mode": "name"})  # written without Spark: faster
    _write(log, [{"id": i, "part": str(i), "s": {"x": i * 2}} for i in (0, 1)])
    table = DeltaTable.forPath(spark, table_path)
    table.renameColumn("id", "key")
    before = log.update().version
    spark.conf.set("spark.databricks.delta.columnMapping.allowRemoval", "false")
    try:
        with pytest.raises(UnsupportedColumnMappingModeChangeError, match="'name' to 'none'"):
            table.setProperties({"delta.columnMapping.mode": "none"})
    finally:
        spark.conf.unset("spark.databricks.delta.columnMapping.allowRemoval")
    assert log.update().version == before
    tracker = spark.sparkContext.statusTracker()
    jobs = len(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP))
    table.setProperties({"delta.columnMapping.mode": "none"})
    assert len(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP)) == jobs + 1
    snap = DeltaLog.for_table(table_path).update()
    assert snap.version == before + 1 and snap.metadata.configuration == {"delta.columnMapping.mode": "none"}
    assert "columnMapping" in (snap.protocol.writer_features or ())
    want = [{"key": 0, "part": "0", "s": {"x": 0}}, {"key": 1, "part": "1", "s": {"x": 2}}]
    assert _both_paths(spark, table_path, "key") == want
    assert delta_rs_rows(table_path, ["key"])["key"].tolist() == [0, 1]


def test_row_tracking_backfill_batches_follow_the_session_conf(spark, tmp_path):
    """setProperties / dropFeatureSupport take the batch size from Delta's
    ``spark.databricks.delta.backfill.maxNumFiles``; a bad value changes nothing."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.commit.operations import Write
    from tests.txn.test_row_tracking_backfill import _operations
    from tests.txn.test_row_tracking_commits import create, data_file

    log = create(str(tmp_path / "t"))
    log.start_transaction().commit([data_file(log.table_uri, 2, start=2 * i) for i in range(3)], Write())
    table = DeltaTable.forPath(spark, log.table_uri)
    key = "spark.databricks.delta.backfill.maxNumFiles"
    try:
        spark.conf.set(key, "0")
        with pytest.raises(DeltaAnalysisError, match="maxNumFiles must be positive"):
            table.setProperties({"delta.enableRowTracking": "true"})
        assert log.update().version == 1
        spark.conf.set(key, "2")
        table.setProperties({"delta.enableRowTracking": "true"})
        table.dropFeatureSupport("rowTracking")
    finally:
        spark.conf.unset(key)
    backfill = [("ROW TRACKING BACKFILL", "0"), ("ROW TRACKING BACKFILL", "1")]
    unbackfill = [("ROW TRACKING UNBACKFILL", "0"), ("ROW TRACKING UNBACKFILL", "1")]
    assert _operations(log, 1) == [
        ("UPGRADE PROTOCOL", None),
        *backfill,
        ("SET TBLPROPERTIES", None),
        ("SET TBLPROPERTIES", None),
        *unbackfill,
        ("DROP FEATURE", None),
    ]


def test_dml_on_a_table_of_a_newer_writer_is_refused_and_leaves_no_file(spark, tmp_path):
    """EvolvabilitySuite: a table whose protocol names a writer feature deltalog lacks reads,
    but UPDATE and DELETE are refused (UnsupportedFeatureError, as Delta's ``protocolWrite`` in
    ``prepareCommit``): the commit certainly failed, so the files the job wrote are deleted, not
    kept as for a commit of unknown outcome."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.errors import UnsupportedFeatureError
    from deltalog.logstores.local import LocalLogStore
    from deltalog.txn.protocol.actions import Protocol, action_to_line

    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").write.format("deltalog").mode("append").save(path)
    future = Protocol(1, 7, writer_features=("appendOnly", "futureFeature", "invariants"))
    LocalLogStore().write(f"{path}/_delta_log/{1:020d}.json", [action_to_line(future)])
    files = sorted(os.listdir(path))
    table = DeltaTable.forPath(spark, path)
    for dml in (lambda: table.update("id = 1", {"v": "'x'"}), lambda: table.delete("id = 2")):
        with pytest.raises(UnsupportedFeatureError, match="futureFeature"):
            dml()
    assert sorted(os.listdir(path)) == files
