"""DeltaTable API and the streaming sink (local[2]); results compared with pandas."""

from __future__ import annotations

import json
import os
import threading

import pandas as pd
import pytest

from tests.spark.helpers import commits, delta_rs_rows, operations, rows

pytestmark = pytest.mark.spark


def _base(spark, path):
    pdf = pd.DataFrame({"id": range(20), "g": [f"g{i % 2}" for i in range(20)], "v": [i * 10 for i in range(20)]})
    spark.createDataFrame(pdf).write.format("deltalog").mode("append").option("partitionBy", "g").save(path)
    return pdf


def test_delete_update_merge_match_pandas(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    pdf = _base(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("v > 150")
    pdf = pdf[~(pdf.v > 150)]
    # an aliased table's condition and values name its columns through the alias, as Delta's
    table.alias("t").update("t.id % 3 = 0", {"v": "t.v + 1"})
    pdf.loc[pdf.id % 3 == 0, "v"] += 1
    source = pd.DataFrame({"id": [1, 2, 50, 51], "g": ["g1", "g0", "g0", "g1"], "v": [-1, -2, -50, -51]})
    (
        table.alias("t")
        .merge(spark.createDataFrame(source).alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.v = -2")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    pdf = pdf[pdf.id != 2]
    pdf.loc[pdf.id == 1, "v"] = -1
    pdf = pd.concat([pdf, source[source.id >= 50]])
    expected = pdf.sort_values("id").reset_index(drop=True)
    got = rows(table.toDF(), ["id"])
    assert got[["id", "g", "v"]].values.tolist() == expected[["id", "g", "v"]].values.tolist()
    theirs = delta_rs_rows(table_path, ["id"])
    assert theirs[["id", "g", "v"]].values.tolist() == expected[["id", "g", "v"]].values.tolist()
    assert operations(table_path) == ["WRITE", "DELETE", "UPDATE", "MERGE"]
    hist = {r.version: r for r in table.history().collect()}
    assert hist[3].operationMetrics["numTargetRowsInserted"] == "2"
    assert hist[3].operationMetrics["numTargetRowsUpdated"] == "1"
    assert hist[3].operationMetrics["numTargetRowsDeleted"] == "1"
    assert hist[1].operationMetrics["numDeletedRows"] == "4"


def test_delete_by_partition_touches_only_that_partition(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    _base(spark, table_path)
    DeltaTable.forPath(spark, table_path).delete("g = 'g0'")
    last = commits(table_path)[-1]
    removed = [a["remove"]["path"] for a in last if "remove" in a]
    assert removed and all(p.startswith("g=g0/") for p in removed)
    assert not any("add" in a for a in last)
    assert spark.read.format("deltalog").load(table_path).filter("g = 'g0'").count() == 0


def test_optimize_with_concurrent_append_both_succeed(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    for i in range(4):
        spark.createDataFrame([(i, f"g{i % 2}", i)], "id long, g string, v long").write.format("deltalog").mode(
            "append"
        ).option("partitionBy", "g").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    errors: list[BaseException] = []

    def append() -> None:
        try:
            spark.createDataFrame([(100 + i, "g0", 0) for i in range(5)], "id long, g string, v long").write.format(
                "deltalog"
            ).mode("append").save(table_path)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=append)
    thread.start()
    table.optimize().executeCompaction()
    thread.join()
    assert not errors
    ops = operations(table_path)
    assert "OPTIMIZE" in ops and ops.count("WRITE") == 5
    assert spark.read.format("deltalog").load(table_path).count() == 9
    opt = next(c for c in commits(table_path) if any(a.get("commitInfo", {}).get("operation") == "OPTIMIZE" for a in c))
    assert all(not a["add"]["dataChange"] for a in opt if "add" in a)
    assert len(delta_rs_rows(table_path, ["id"])) == 9


def test_vacuum_keeps_what_retention_requires(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError, VacuumRetentionError

    _base(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("g = 'g1'")
    orphan = os.path.join(table_path, "g=g0", "part-orphan.parquet")
    with open(orphan, "wb") as f:
        f.write(b"x")
    os.utime(orphan, (1, 1))
    with pytest.raises(VacuumRetentionError):
        table.vacuum(0)
    # default retention: 7 days; as Delta's, the result is the table's location as Hadoop's
    # qualified Path shows it (file:/abs/path, as DESCRIBE DETAIL's location)
    assert [tuple(r) for r in table.vacuum().collect()] == [(f"file:{os.path.abspath(table_path)}",)]
    assert not os.path.exists(orphan)
    # the removed g1 files are younger than the retention: kept for time travel
    assert spark.read.format("deltalog").option("versionAsOf", 0).load(table_path).count() == 20
    assert "VACUUM START" in operations(table_path) and "VACUUM END" in operations(table_path)
    # LITE (Delta's VACUUM ... LITE, or its session conf) reads the log: no commit names an orphan
    orphan2 = os.path.join(table_path, "g=g0", "part-orphan2.parquet")
    with open(orphan2, "wb") as f:
        f.write(b"x")
    os.utime(orphan2, (1, 1))
    table.vacuum(vacuumType="LITE")
    assert os.path.exists(orphan2)
    with pytest.raises(DeltaAnalysisError, match="LITE or FULL"):
        table.vacuum(vacuumType="QUICK")
    spark.conf.set("spark.databricks.delta.vacuum.lite.enabled", "true")
    try:
        table.vacuum()
        assert os.path.exists(orphan2)
    finally:
        spark.conf.unset("spark.databricks.delta.vacuum.lite.enabled")
    # DeltaVacuumSuite "vacuum event logging ... loggingEnabled=false": deleted, not recorded
    commits_before = len(operations(table_path))
    spark.conf.set("spark.databricks.delta.vacuum.logging.enabled", "false")
    try:
        table.vacuum(vacuumType="FULL")
    finally:
        spark.conf.unset("spark.databricks.delta.vacuum.logging.enabled")
    assert not os.path.exists(orphan2)
    assert len(operations(table_path)) == commits_before


def test_restore_convert_create(spark, table_path, tmp_path):
    from deltalog.contrib.spark import DeltaTable

    _base(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("id < 5")
    restored = table.restoreToVersion(0).collect()[0]
    assert table.toDF().count() == 20
    files_v0 = len([a for a in commits(table_path)[0] if "add" in a])
    assert restored.num_of_files_after_restore == files_v0 and restored.num_restored_files >= 1
    assert operations(table_path)[-1] == "RESTORE"

    plain = str(tmp_path / "plain")
    spark.createDataFrame([(i, f"p{i % 2}") for i in range(10)], "id long, p string").write.partitionBy("p").parquet(
        plain
    )
    converted = DeltaTable.convertToDelta(spark, f"parquet.`{plain}`", "p string")
    assert sorted(r.id for r in converted.toDF().collect()) == list(range(10))
    assert len(delta_rs_rows(plain, ["id"])) == 10
    assert operations(plain) == ["CONVERT"]

    created = str(tmp_path / "created")
    DeltaTable.create(spark).location(created).addColumn("id", "long").addColumn("day", "string").partitionedBy(
        "day"
    ).property("delta.appendOnly", "false").execute()
    again = DeltaTable.createIfNotExists(spark).location(created).addColumn("id", "long").execute()
    assert again.detail().collect()[0].partitionColumns == ["day"]
    assert DeltaTable.isDeltaTable(spark, created) and not DeltaTable.isDeltaTable(spark, str(tmp_path / "no"))


def test_replace_create_or_replace_and_add_feature_support(spark, table_path, tmp_path):
    """delta-spark's ``replace``/``createOrReplace`` builders (Delta's REPLACE TABLE: new
    schema, partitioning, properties and table id, every file removed, history kept, column
    mapping ids going on) and ``addFeatureSupport``."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.errors import InvalidPropertyError, TableNotFoundError

    with pytest.raises(TableNotFoundError, match="DELTA_CANNOT_REPLACE_MISSING_TABLE"):
        DeltaTable.replace(spark).location(table_path).addColumn("id", "long").execute()
    mapped = {"delta.columnMapping.mode": "name"}
    DeltaTable.createOrReplace(spark).location(table_path).addColumn("a", "long").addColumn("b", "string").property(
        "delta.columnMapping.mode", "name"
    ).execute()
    spark.createDataFrame([(1, "x")], "a long, b string").write.format("deltalog").mode("append").save(table_path)
    before = DeltaTable.forPath(spark, table_path)._log.update()
    builder = DeltaTable.replace(spark).location(table_path).addColumn("a", "long").addColumn("c", "int")
    for key, value in mapped.items():
        builder = builder.property(key, value)
    table = builder.partitionedBy("c").comment("replaced").execute()
    after = table._log.update()
    assert table.toDF().count() == 0 and after.metadata.id != before.metadata.id
    assert after.metadata.partition_columns == ("c",) and after.metadata.description == "replaced"
    ids = {
        f["name"]: f["metadata"]["delta.columnMapping.id"] for f in json.loads(after.metadata.schema_string)["fields"]
    }
    assert ids == {"a": 1, "c": 3} and after.properties.column_mapping_max_id == 3  # a kept, b's id never reused
    assert [op for op in operations(table_path)] == ["CREATE OR REPLACE TABLE", "WRITE", "REPLACE TABLE"]
    assert table.history(1).collect()[0].operationParameters["partitionBy"] == '["c"]'
    assert len(delta_rs_rows(table_path, ["a"])) == 0

    table.addFeatureSupport("deletionVectors")
    protocol = table._log.update().protocol
    assert "deletionVectors" in (protocol.reader_features or ()) and "deletionVectors" in protocol.writer_features
    assert "delta.feature.deletionVectors" not in table._log.update().metadata.configuration
    # the key is lower-cased, as Delta's validateConfigurations lower-cases delta.feature.* keys
    with pytest.raises(InvalidPropertyError, match=r"delta\.feature\.nosuchfeature"):
        table.addFeatureSupport("noSuchFeature")
    assert operations(table_path)[-1] == "SET TBLPROPERTIES" and len(operations(table_path)) == 4


def test_streaming_restart_no_duplicates(spark, table_path, tmp_path):
    checkpoint = str(tmp_path / "ck")
    source_dir = tmp_path / "src"
    source_dir.mkdir()

    def add_source_file(n: int, start: int) -> None:
        pd.DataFrame({"id": list(range(start, start + n))}).to_json(
            source_dir / f"f{start}.json", orient="records", lines=True
        )

    def run_once() -> None:
        q = (
            spark.readStream.schema("id long")
            .json(str(source_dir))
            .writeStream.format("deltalog")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(table_path)
        )
        q.awaitTermination(120)

    add_source_file(5, 0)
    run_once()
    add_source_file(5, 5)
    run_once()
    # replay: forget that batch 1 was committed in the checkpoint, run again
    commits_dir = os.path.join(checkpoint, "commits")
    for name in ("1", ".1.crc"):
        if os.path.exists(os.path.join(commits_dir, name)):
            os.remove(os.path.join(commits_dir, name))
    run_once()
    got = sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect())
    assert got == list(range(10))
    txns = [a["txn"] for c in commits(table_path) for a in c if "txn" in a]
    assert [t["version"] for t in txns] == [0, 1]
    assert operations(table_path) == ["STREAMING UPDATE", "STREAMING UPDATE"]
    assert sorted(delta_rs_rows(table_path, ["id"]).id.tolist()) == list(range(10))


def test_clone_shallow_and_deep(spark, table_path, tmp_path):
    from deltalog.contrib.spark import DeltaTable, read_table
    from deltalog.txn.commands.clone import CloneReplaceNonEmptyTableError

    _base(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("id >= 15")
    expected = sorted(tuple(r) for r in table.toDF().select("id", "g", "v").collect())

    shallow = table.clone(str(tmp_path / "shallow"), isShallow=True)
    for df in (shallow.toDF(), spark.read.format("deltalog").load(str(tmp_path / "shallow"))):
        assert sorted(tuple(r) for r in df.select("id", "g", "v").collect()) == expected
    # partition pruning on the clone's absolute paths (native read)
    native = read_table(spark, str(tmp_path / "shallow")).where("g = 'g1'")
    assert sorted(tuple(r) for r in native.select("id", "g", "v").collect()) == [r for r in expected if r[1] == "g1"]
    assert operations(str(tmp_path / "shallow")) == ["CLONE"]

    deep = table.cloneAtVersion(0, str(tmp_path / "deep"), isShallow=False, properties={"delta.appendOnly": "true"})
    assert deep.toDF().count() == 20
    assert delta_rs_rows(str(tmp_path / "deep"), ["id"]).id.tolist() == list(range(20))
    # replace=True: Delta's CREATE OR REPLACE ... CLONE, which replaces only an empty table
    again = table.clone(str(tmp_path / "again"), isShallow=True, replace=True)
    with pytest.raises(CloneReplaceNonEmptyTableError):
        table.clone(str(tmp_path / "again"), isShallow=True, replace=True)
    again.delete()
    table.clone(str(tmp_path / "again"), isShallow=True, replace=True)
    assert operations(str(tmp_path / "again")) == ["CLONE", "DELETE", "CLONE"]


def test_vacuum_with_an_inventory(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.commands.vacuum_listing import VacuumInventoryError

    _base(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    old = os.path.join(table_path, "g=g0", "part-old-orphan.parquet")
    unlisted = os.path.join(table_path, "g=g1", "part-unlisted.parquet")
    for path in (old, unlisted):
        with open(path, "wb") as f:
            f.write(b"x")
        os.utime(path, (0, 0))
    report = [(old, 1, False, 0), (os.path.join(table_path, "g=g0"), 0, True, 0)]
    inventory = spark.createDataFrame(report, "path string, length long, isDir boolean, modificationTime long")
    table.vacuum(inventory=inventory)
    assert not os.path.exists(old) and os.path.exists(unlisted)
    with pytest.raises(VacuumInventoryError):
        table.vacuum(inventory=inventory.withColumnRenamed("length", "size"))
    assert table.toDF().count() == 20


def _register_external_table(spark, name: str, location: str, provider: str) -> None:
    """A session catalog entry as a metastore holds a table another engine registered
    (``provider`` ``delta`` needs Delta's data source to be created by SQL): a Parquet table's
    entry copied with another name and provider."""
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    spark.sql(f"CREATE TABLE {name}_template (id bigint) USING parquet LOCATION '{location}'")
    template = catalog.getTableMetadata(jvm.org.apache.spark.sql.catalyst.TableIdentifier(f"{name}_template"))
    n = sum(1 for m in template.getClass().getMethods() if m.getName().startswith("copy$default$"))
    args = [getattr(template, f"copy$default${i}")() for i in range(1, n + 1)]
    args[0] = jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Some("default"))
    args[next(i for i, a in enumerate(args) if a.equals(template.provider()))] = jvm.scala.Some(provider)
    catalog.createTable(template.copy(*args), False, False)
    spark.sql(f"DROP TABLE {name}_template")


def test_for_name_resolves_the_session_catalogs_delta_tables(spark, table_path, tmp_path):
    """``DeltaTable.forName`` as Delta's: a table of the session catalog whose provider is
    ``delta`` (a metastore's entry) or ``deltalog`` is the table at its location;
    ``delta.`/path``` names a path; anything else is ``DELTA_MISSING_DELTA_TABLE``."""
    from pyspark.errors import AnalysisException

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.errors import TableNotFoundError

    spark.createDataFrame([(1,), (2,)], "id long").write.format("deltalog").mode("append").save(table_path)
    _register_external_table(spark, "sales_orders", table_path, "delta")
    spark.sql(f"CREATE TABLE sales_mine USING deltalog LOCATION '{table_path}'")
    spark.sql(f"CREATE TABLE sales_plain (id bigint) USING parquet LOCATION '{tmp_path / 'plain'}'")
    try:
        for name in ("sales_orders", "default.sales_orders", "spark_catalog.default.sales_orders", "sales_mine"):
            assert sorted(r.id for r in DeltaTable.forName(spark, name).toDF().collect()) == [1, 2], name
        DeltaTable.forName(spark, "sales_orders").delete("id = 1")
        assert [r.id for r in DeltaTable.forName(spark, f"delta.`{table_path}`").toDF().collect()] == [2]
        assert DeltaTable.forName(spark, f"deltalog.`{table_path}`").toDF().count() == 1
        # TruncateTableSuite: Spark refuses TRUNCATE TABLE of a deltalog table (a Python data source
        # cannot declare truncation), with nothing changed; DELETE without a condition is the way
        with pytest.raises(AnalysisException, match=r"(?i)truncate"):
            spark.sql("TRUNCATE TABLE sales_mine")
        assert DeltaTable.forName(spark, "sales_mine").toDF().count() == 1
        spark.read.format("deltalog").load(table_path).createOrReplaceTempView("sales_view")
        for name in ("sales_plain", "no_such_table", f"delta.`{tmp_path / 'plain'}`", "sales_view"):
            with pytest.raises(DeltaAnalysisError, match="DELTA_MISSING_DELTA_TABLE"):
                DeltaTable.forName(spark, name)
        # DeltaTableSuite "forPath - with non-Delta table path", "isDeltaTable - ...": a directory
        # without a table, with an empty _delta_log, or missing
        os.makedirs(tmp_path / "empty_log" / "_delta_log")
        for path in (tmp_path / "plain", tmp_path / "empty_log", tmp_path / "missing"):
            assert not DeltaTable.isDeltaTable(spark, str(path))
            with pytest.raises(TableNotFoundError, match=r"DELTA_MISSING_DELTA_TABLE: delta.`.*` is not a Delta table"):
                DeltaTable.forPath(spark, str(path))
    finally:  # by the catalog: Spark's DROP TABLE looks the provider up
        catalog = spark._jsparkSession.sessionState().catalog()
        spark.catalog.dropTempView("sales_view")
        for name in ("sales_orders", "sales_mine", "sales_plain"):
            catalog.dropTable(spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier(name), True, False)


def _table_rows(spark, path):
    from deltalog.contrib.spark import read_table

    return sorted(tuple(r) for r in read_table(spark, path).collect())


def test_catalog_table_writes_carry_its_location_and_insert_as_deltas(spark, table_path):
    """Spark hands a Python data source no catalog table's location: INSERT INTO, insertInto,
    saveAsTable and writeTo write a ``deltalog`` table when the write carries it as its ``path``
    option, and then resolve and cast the columns as Delta's DeltaInsertIntoTableSuite expects
    (insertInto by position, cast automatically; BY NAME; a missing listed column is null;
    STRICT and ANSI overflow refused); without it the write is refused by name, nothing committed."""
    df = spark.createDataFrame([(1, 2, "a"), (3, 4, "b")], "a int, b int, p string")
    path_opt = df.write.format("deltalog").option("partitionBy", "p").option("path", table_path)
    path_opt.mode("append").saveAsTable("ins_t")
    with_path = f"WITH ('path' = '{table_path}')"
    try:
        longs = spark.createDataFrame([(6, 5, "c")], "b long, a long, p string")
        longs.write.format("deltalog").option("path", table_path).insertInto("ins_t")  # by position
        spark.sql(f"INSERT INTO ins_t {with_path} BY NAME SELECT 8 AS b, 7 AS a, 'c' AS p")
        spark.sql(f"INSERT INTO ins_t {with_path} (a, p) SELECT 9, 'd'")
        assert _table_rows(spark, table_path) == [(1, 2, "a"), (3, 4, "b"), (6, 5, "c"), (7, 8, "c"), (9, None, "d")]
        dynamic = f"WITH ('path' = '{table_path}', 'partitionOverwriteMode' = 'dynamic')"
        spark.sql(f"INSERT OVERWRITE ins_t {dynamic} SELECT 10, 10, 'c'")  # replaces partition c only
        assert _table_rows(spark, table_path) == [(1, 2, "a"), (3, 4, "b"), (9, None, "d"), (10, 10, "c")]
        assert commits(table_path)[-1][0]["commitInfo"]["operationParameters"]["isDynamicPartitionOverwrite"] is True
        with pytest.raises(Exception, match="CAST_OVERFLOW_IN_TABLE_INSERT"):
            spark.sql(f"INSERT INTO ins_t {with_path} SELECT 2147483648L, 1, 'e'")
        with pytest.raises(Exception, match=r"no table path.*INSERT INTO name WITH"):
            spark.sql("INSERT INTO ins_t VALUES (11, 11, 'e')")
        spark.conf.set("spark.sql.storeAssignmentPolicy", "STRICT")
        try:
            with pytest.raises(Exception, match="CANNOT_SAFELY_CAST"):
                longs.writeTo("ins_t").option("path", table_path).append()
        finally:
            spark.conf.unset("spark.sql.storeAssignmentPolicy")
        assert len(commits(table_path)) == 5
    finally:
        catalog = spark._jsparkSession.sessionState().catalog()
        catalog.dropTable(spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier("ins_t"), True, False)


def test_creating_a_catalog_table_where_a_table_is_refuses_the_location_as_deltas(spark, table_path, tmp_path):
    """Delta's DeltaDataFrameWriterV2Suite "Create: fail if table already exists" and
    CreateDeltaTableCommand.checkPathEmpty: saveAsTable in errorifexists or ignore mode and
    writeTo(...).create() of a name the catalog lacks, at a location holding a table or other
    files, are DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION: nothing committed, nothing registered
    (they appended to the table there); append mode appends to it, as Delta's."""
    from pyspark.sql.functions import col
    from pyspark.sql.functions.partitioning import years

    from deltalog.contrib.spark.errors import DeltaAnalysisError

    df = spark.createDataFrame([(1, "a")], "id long, data string")
    df.write.format("deltalog").mode("append").save(table_path)
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("x")
    for location in (table_path, str(stray)):
        for create in (
            lambda at: df.write.format("deltalog").option("path", at).saveAsTable("ctas_t"),
            lambda at: df.write.mode("ignore").option("path", at).saveAsTable("ctas_t", format="deltalog"),
            lambda at: df.writeTo("ctas_t").using("deltalog").option("path", at).create(),
        ):
            with pytest.raises(DeltaAnalysisError, match="DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"):
                create(location)
            assert not spark.catalog.tableExists("ctas_t")
    assert len(commits(table_path)) == 1 and sorted(os.listdir(stray)) == ["notes.txt"]
    # writeTo's partitionedBy and tableProperty reach the new table ("Create: identity partitioned
    # table", "Create: with property"); a partition transform is refused ("... - not supported")
    created = str(tmp_path / "created")
    with pytest.raises(DeltaAnalysisError, match="Partitioning by expressions"):
        df.writeTo("ctas_p").using("deltalog").option("path", created).partitionedBy(years("id")).create()
    try:
        df.write.format("deltalog").mode("append").option("path", table_path).saveAsTable("ctas_t")
        assert len(commits(table_path)) == 2
        to_create = df.writeTo("ctas_p").using("deltalog").option("path", created).partitionedBy(col("id"))
        to_create.tableProperty("delta.appendOnly", "true").tableProperty("prop", "value").create()
        metadata = next(a["metaData"] for a in commits(created)[0] if "metaData" in a)
        assert metadata["partitionColumns"] == ["id"]
        assert metadata["configuration"] == {"delta.appendOnly": "true", "prop": "value"}
        # so does saveAsTable's partitionBy (Spark hands it on no more than writeTo's)
        saved = str(tmp_path / "saved")
        df.write.format("deltalog").partitionBy("id").option("path", saved).saveAsTable("ctas_s")
        assert next(a["metaData"] for a in commits(saved)[0] if "metaData" in a)["partitionColumns"] == ["id"]
    finally:
        catalog = spark._jsparkSession.sessionState().catalog()
        for name in ("ctas_t", "ctas_p", "ctas_s"):
            catalog.dropTable(spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier(name), True, False)


def test_writer_v2_replace_is_deltas_replace_table_as_select(spark, table_path):
    """DeltaDataFrameWriterV2Suite "Replace: basic behavior", "Replace: partitioned table",
    "CreateOrReplace: table does not exist / exists": writeTo(...).createOrReplace() and
    replace() are Delta's (CREATE OR) REPLACE TABLE AS SELECT -- the table at the location gets
    the data's schema, the writer's partitioning and properties (only those) and a new id in one
    commit, its old files removed -- and create() is CREATE TABLE AS SELECT. They were
    overwrites: partitionedBy and tableProperty were lost, a new schema was refused (after Spark
    had dropped the catalog entry)."""
    from pyspark.sql.functions import col

    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, data string")
    wider = spark.createDataFrame([(3, "c", 0.5)], "id long, data string, x double")
    try:
        by_data = df.writeTo("rtas_t").using("deltalog").option("path", table_path).partitionedBy(col("data"))
        by_data.tableProperty("k", "v").createOrReplace()
        first = next(a["metaData"] for a in commits(table_path)[0] if "metaData" in a)
        assert first["partitionColumns"] == ["data"] and first["configuration"] == {"k": "v"}
        again = wider.writeTo("rtas_t").using("deltalog").option("path", table_path).partitionedBy(col("id"))
        again.tableProperty("k2", "v2").createOrReplace()
        second = next(a["metaData"] for a in commits(table_path)[1] if "metaData" in a)
        assert second["partitionColumns"] == ["id"] and second["configuration"] == {"k2": "v2"}
        assert second["id"] != first["id"] and len(json.loads(second["schemaString"])["fields"]) == 3
        assert sorted(a["remove"]["path"] for a in commits(table_path)[1] if "remove" in a) == sorted(
            a["add"]["path"] for a in commits(table_path)[0] if "add" in a
        )
        df.writeTo("rtas_t").using("deltalog").option("path", table_path).replace()
        third = next(a["metaData"] for a in commits(table_path)[2] if "metaData" in a)
        assert third["partitionColumns"] == [] and third["configuration"] == {}
        assert rows(spark.read.format("deltalog").load(table_path), ["id"]).to_dict("list") == {
            "id": [1, 2],
            "data": ["a", "b"],
        }
        assert operations(table_path) == [
            "CREATE OR REPLACE TABLE AS SELECT",
            "CREATE OR REPLACE TABLE AS SELECT",
            "REPLACE TABLE AS SELECT",
        ]
        created = table_path + "_created"
        df.writeTo("ctas_w").using("deltalog").option("path", created).create()
        assert operations(created) == ["CREATE TABLE AS SELECT"]
    finally:
        catalog = spark._jsparkSession.sessionState().catalog()
        for name in ("rtas_t", "ctas_w"):
            catalog.dropTable(spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier(name), True, False)


def test_table_creation_mode_by_path_refuses_as_delta_and_keeps_column_mapping_ids(spark, table_path):
    """The tableCreationMode write option with save(): replace of a path with no table is
    DELTA_CANNOT_REPLACE_MISSING_TABLE, create of a table is refused, replaceWhere cannot narrow a
    REPLACE TABLE AS SELECT, replaceUsing and overwriteSchema=false are refused as Delta's; a
    re-created column-mapped table's columns keep their ids (same mode, same type), as the
    builder's REPLACE TABLE."""
    from deltalog.contrib.spark.errors import InvalidWriteOptionError, TableAlreadyExistsError
    from deltalog.contrib.spark.source import DeltaLogDataSource
    from deltalog.txn.protocol.errors import TableNotFoundError

    df = spark.createDataFrame([(1, "a")], "id long, data string")

    def write(mode, **options):
        writer = df.write.format("deltalog").mode("append").option("tableCreationMode", mode)
        writer.options(**options).save(table_path)

    def plan(mode, **options):  # what Spark's writer() call plans in the driver, without a job
        source = DeltaLogDataSource({"path": table_path, "tableCreationMode": mode, **options})
        source.writer(df.schema, False)

    with pytest.raises(TableNotFoundError, match="DELTA_CANNOT_REPLACE_MISSING_TABLE"):
        plan("replace")
    assert not os.path.exists(table_path + "/_delta_log")
    write("createOrReplace", **{"delta.columnMapping.mode": "name"})
    refusals = [
        ({"mode": "create"}, TableAlreadyExistsError, "already exists"),
        ({"mode": "replace", "replaceWhere": "id = 1"}, InvalidWriteOptionError, "replaceWhere cannot be combined"),
        ({"mode": "recreate"}, InvalidWriteOptionError, "must be create, replace or createOrReplace"),
        ({"mode": "create", "replaceUsing": "id"}, InvalidWriteOptionError, "INCOMPATIBLE_REPLACE_ON_OR_USING"),
        ({"mode": "createOrReplace", "overwriteSchema": "false"}, InvalidWriteOptionError, "DELTA_ILLEGAL_USAGE"),
    ]
    for options, error, message in refusals:
        with pytest.raises(error, match=message):
            plan(**options)
    write("REPLACE", **{"delta.columnMapping.mode": "name"})
    metadata = [next(a["metaData"] for a in c if "metaData" in a) for c in commits(table_path)]
    ids = [[f["metadata"]["delta.columnMapping.id"] for f in json.loads(m["schemaString"])["fields"]] for m in metadata]
    assert ids == [[1, 2], [1, 2]] and metadata[1]["configuration"]["delta.columnMapping.maxColumnId"] == "2"
    assert operations(table_path) == ["CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT"]


def test_catalog_inserts_resolve_nested_fields_as_spark_does(spark, table_path):
    """docs/spark.md "Catalog tables": Spark, not deltalog, resolves a catalog insert's columns,
    so it differs from Delta's DeltaInsertIntoColumnOrderAdvancedSuite and
    DeltaInsertIntoSchemaEvolutionSuite where a Python data source cannot accept any schema:
    insertInto matches struct fields by position (Delta: by name when the top-level names match
    and no cast is needed), BY NAME matches them by name, and a struct field the table lacks is
    refused by Spark even with INSERT WITH SCHEMA EVOLUTION (Delta evolves the table)."""
    spark.createDataFrame([(1, (2, 3))], "a int, s struct<x:int,y:int>").write.format("deltalog").mode("append").option(
        "path", table_path
    ).saveAsTable("ins_nested")
    with_path = f"WITH ('path' = '{table_path}')"
    try:
        swapped = spark.createDataFrame([(4, (5, 4))], "a int, s struct<y:int,x:int>")
        swapped.write.format("deltalog").option("path", table_path).insertInto("ins_nested")
        spark.sql(f"INSERT INTO ins_nested {with_path} BY NAME SELECT 6 AS a, named_struct('y', 7, 'x', 6) AS s")
        with pytest.raises(Exception, match=r"INCOMPATIBLE_DATA_FOR_TABLE\.EXTRA_STRUCT_FIELDS"):
            spark.sql(
                f"INSERT WITH SCHEMA EVOLUTION INTO ins_nested {with_path} "
                "SELECT 8 AS a, named_struct('x', 8, 'y', 9, 'z', 10) AS s"
            )
        assert _table_rows(spark, table_path) == [(1, (2, 3)), (4, (5, 4)), (6, (6, 7))]
        assert len(commits(table_path)) == 3
    finally:
        catalog = spark._jsparkSession.sessionState().catalog()
        catalog.dropTable(spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier("ins_nested"), True, False)


def test_detail_of_a_table_by_name_names_it(spark, table_path):
    """Delta's DescribeDeltaDetailSuite ("create table on an existing delta log", "describe
    detail contains table name"): ``forName(name).detail()`` shows the catalog's qualified
    name of that entry (two names of one location each their own), a path none."""
    from deltalog.contrib.spark import DeltaTable

    spark.createDataFrame([(1,)], "id long").write.format("deltalog").mode("append").save(table_path)
    spark.sql(f"CREATE TABLE tbl_name1 USING deltalog LOCATION '{table_path}'")
    spark.sql(f"CREATE TABLE tbl_name2 USING deltalog LOCATION '{table_path}'")
    try:
        names = {
            name: DeltaTable.forName(spark, name).alias("t").detail().collect()[0].name
            for name in ("tbl_name1", "default.TBL_NAME2", f"delta.`{table_path}`")
        }
        assert names == {
            "tbl_name1": "spark_catalog.default.tbl_name1",
            "default.TBL_NAME2": "spark_catalog.default.tbl_name2",
            f"delta.`{table_path}`": None,
        }
        assert DeltaTable.forPath(spark, table_path).detail().collect()[0].name is None
    finally:
        catalog = spark._jsparkSession.sessionState().catalog()
        for name in ("tbl_name1", "tbl_name2"):
            catalog.dropTable(spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier(name), True, False)


def _parquet_dir(root, rels):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for i, rel in enumerate(rels):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        pq.write_table(pa.table({"id": [i]}), os.path.join(root, rel))


def test_convert_to_delta_reads_its_identifier_as_deltas(spark, tmp_path):
    """ConvertToDeltaSuiteBase: another provider is refused ("negative case: convert non-parquet
    path to delta"), as is a path without one ("missing data source name"); backquoted
    ``parquet`` converts ("backticks"); converting a Delta table again, as ``parquet.`` or
    ``delta.``, is a no-op ("converting a delta path should not error for idempotency"); a
    file that is not Parquet fails the conversion unless ``spark.sql.files.ignoreCorruptFiles``
    ("filter non-parquet files during delta conversion")."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    plain = str(tmp_path / "plain")
    _parquet_dir(plain, ["part=1/a.parquet", "part=2/b"])
    for identifier, code in ((f"orc.`{plain}`", "DELTA_CONVERT_NON_PARQUET_TABLE"), (f"`{plain}`", "PROVIDER")):
        with pytest.raises(DeltaAnalysisError, match=code):
            DeltaTable.convertToDelta(spark, identifier, "part string")
    with open(os.path.join(plain, "part=2", "c.json"), "w", encoding="utf-8") as f:
        f.write('{"id": 9}')
    with pytest.raises(DeltaAnalysisError, match=r"part=2/c.json is not a Parquet file"):
        DeltaTable.convertToDelta(spark, f"`parquet`.`{plain}`", "part string")
    assert not os.path.exists(os.path.join(plain, "_delta_log"))
    spark.conf.set("spark.sql.files.ignoreCorruptFiles", "true")
    try:
        table = DeltaTable.convertToDelta(spark, f"`parquet`.`{plain}`", "part string")
    finally:
        spark.conf.unset("spark.sql.files.ignoreCorruptFiles")
    assert sorted(tuple(r) for r in table.toDF().collect()) == [(0, "1"), (1, "2")]
    for identifier in (f"parquet.`{plain}`", f"delta.`{plain}`"):
        assert DeltaTable.convertToDelta(spark, identifier).toDF().count() == 2
    assert operations(plain) == ["CONVERT"]


@pytest.mark.parametrize(
    ("build", "error"),
    [
        # DeltaTableBuilderSuite
        (lambda b, p: b.addColumn("c1", "int"), "DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION"),
        (lambda b, p: b.tableName(f"delta.`{p}`").location(p + "-x"), "IDENTIFIER_LOCATION_MISMATCH"),
        (lambda b, p: b.tableName(f"parquet.`{p}`").location(p), "schema `parquet` cannot be found"),
        (lambda b, p: b.location(p).clusterBy("c1").partitionedBy("c1"), "DELTA_CLUSTER_BY_WITH_PARTITIONED_BY"),
        # ClusteringTableFeatureSuite: the feature comes with clusterBy, never as a property
        (
            lambda b, p: b.location(p).property("delta.feature.clustering", "supported"),
            "DELTA_CREATE_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED",
        ),
        (
            lambda b, p: b.location(p).clusterBy("c1").property("Delta.Feature.Clustering", "supported"),
            "DELTA_CREATE_TABLE_SET_CLUSTERING_TABLE_FEATURE_NOT_ALLOWED",
        ),
        # DeltaTableCreationTests, DeltaCatalog.createDeltaTable
        (lambda b, p: b.location(p).property("delta.randomPrefixLength", "-1"), "needs to be greater than 0"),
        (lambda b, p: b.location(p).addColumn("i", "long", generatedAlwaysAs=_identity()).partitionedBy("i"), "IDENT"),
    ],
)
def test_the_builder_refuses_what_deltas_refuses(spark, tmp_path, build, error):
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    with pytest.raises(ValueError, match=error):
        build(DeltaTable.create(spark).addColumn("c1", "int").addColumn("c2", "int"), path).execute()
    assert not os.path.exists(path)


def _identity():
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    return IdentityGenerator()


def test_the_builder_on_a_path_as_deltas_path_identifiers(spark, tmp_path):
    """A path-based table exists once its directory holds anything (Delta's
    ``DeltaCatalog.tableExists``): CREATE refuses Parquet files there, CREATE IF NOT EXISTS
    leaves them; ``tableName("delta.`path`")`` names the location, and the table's metadata
    gets no name, as Delta's CREATE TABLE; the internal ``forceTablePropertyLowerCase``."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError, TableAlreadyExistsError
    from deltalog.errors import TableNotFoundError

    plain = str(tmp_path / "plain")
    _parquet_dir(plain, ["a.parquet"])
    with pytest.raises(TableAlreadyExistsError, match="not empty"):
        DeltaTable.create(spark).location(plain).addColumn("id", "long").execute()
    with pytest.raises(TableNotFoundError):
        DeltaTable.createIfNotExists(spark).location(plain).addColumn("id", "long").execute()
    assert os.listdir(plain) == ["a.parquet"]

    named = str(tmp_path / "named")
    spark.conf.set("spark.databricks.delta.deltaTableBuilder.forceTablePropertyLowerCase.enabled", "true")
    try:
        builder = DeltaTable.create(spark).tableName(f"delta.`{named}`").addColumn("id", "long")
        table = builder.property("delta.appendOnly", "true").property("Foo", "Bar").property("foo", "Bar").execute()
    finally:
        spark.conf.unset("spark.databricks.delta.deltaTableBuilder.forceTablePropertyLowerCase.enabled")
    metadata = table._log.update().metadata
    assert metadata.name is None and metadata.configuration == {"delta.appendOnly": "true", "foo": "Bar"}
    # CREATE IF NOT EXISTS of a table there returns it before reading the definition
    assert DeltaTable.createIfNotExists(spark).location(named).execute().toDF().columns == ["id"]
    # CREATE OR REPLACE of a path holding a table checks the definition, commits nothing
    # (CreateDeltaTableCommand.verifyTableMetadata; delta-io/delta#827)
    DeltaTable.createOrReplace(spark).location(named).addColumn("id", "long").execute()
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_CREATE_TABLE_SCHEME_MISMATCH.*missing field.*id"):
        DeltaTable.createOrReplace(spark).location(named).addColumn("z", "boolean").execute()
    with pytest.raises(DeltaAnalysisError, match="DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY"):
        DeltaTable.createOrReplace(spark).location(named).addColumn("id", "long").property("foo", "baz").execute()
    # no columns: REPLACE and CREATE OR REPLACE need a schema, a table there or not
    # (CreateDeltaTableCommand's DELTA_SCHEMA_NOT_PROVIDED)
    for replacing, at in (
        (DeltaTable.replace, named),
        (DeltaTable.createOrReplace, named),
        (DeltaTable.createOrReplace, plain + "-new"),
    ):
        with pytest.raises(DeltaAnalysisError, match="DELTA_SCHEMA_NOT_PROVIDED"):
            replacing(spark).location(at).execute()
    # a name Spark's catalog does not have: CREATE checks the table there too; REPLACE finds none
    DeltaTable.create(spark).tableName("not_in_the_catalog").location(named).addColumn("id", "long").execute()
    with pytest.raises(TableNotFoundError, match="DELTA_CANNOT_REPLACE_MISSING_TABLE"):
        DeltaTable.replace(spark).tableName("not_in_the_catalog").location(named).addColumn("id", "long").execute()
    assert operations(named) == ["CREATE TABLE"]


@pytest.mark.parametrize(
    ("rows_", "ddl", "partition_schema", "where", "expected"),
    [
        # "some partition value is null", "empty string partition value will be read back as
        # null", "partition column names and values contain '%!@#$%^&*-'"
        (
            [(0, "%a=b/c", None), (1, "", 100)],
            "id int, `k%!1` string, `k$2` int",
            "`k%!1` string, `k$2` int",
            "`k%!1` is null and `k$2` = 100 or `k%!1` = '%a=b/c' and `k$2` is null",
            [0, 1],
        ),
        # "converting tables with dateType partition columns", timestamps and decimals
        (
            [(0, "2019-11-22", "2024-01-02 03:04:05", "12.34"), (1, None, None, None)],
            "id int, d string, ts string, dec string",
            "d date, ts timestamp, dec decimal(10,2)",
            "d = '2019-11-22' and ts = '2024-01-02 03:04:05' and dec = 12.34",
            [0],
        ),
    ],
)
def test_convert_a_parquet_directory_spark_partitioned(spark, tmp_path, rows_, ddl, partition_schema, where, expected):
    """ConvertToDeltaSuiteBase's partition values, as Spark writes them: escaped directory
    names, ``__HIVE_DEFAULT_PARTITION__`` for null and empty strings, typed partition values."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    from deltalog.contrib.spark import DeltaTable

    plain = str(tmp_path / "plain")
    partitions = _parse_datatype_string(partition_schema)
    df = spark.createDataFrame(rows_, ddl)
    df = df.select("id", *(F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in partitions.fields))
    df.write.partitionBy(*partitions.names).parquet(plain)
    table = DeltaTable.convertToDelta(spark, f"parquet.`{plain}`", partitions)
    assert table.toDF().schema.fields[1:] == partitions.fields
    assert sorted(r.id for r in table.toDF().where(where).collect()) == expected
    assert table.toDF().count() == len(rows_)


def test_a_table_created_with_random_file_prefixes_writes_under_them(spark, table_path):
    """DeltaTableCreationTests "create partitioned table with table properties -
    delta.randomizeFilePrefixes": files go under a random ``delta.randomPrefixLength``
    directory, not their partition's, which ``partitionValues`` still records."""
    import re

    from deltalog.contrib.spark import DeltaTable

    builder = DeltaTable.create(spark).location(table_path).addColumn("id", "long").addColumn("part", "string")
    builder = builder.partitionedBy("part").property("delta.randomizeFilePrefixes", "true")
    builder.property("delta.randomPrefixLength", "4").execute()
    rows_ = [(1, "A"), (2, "B")]
    spark.createDataFrame(rows_, "id long, part string").write.format("deltalog").mode("append").save(table_path)
    adds = [a["add"] for a in commits(table_path)[1] if "add" in a]
    assert all(re.fullmatch(r"[A-Za-z0-9]{4}/part-.*\.parquet", a["path"]) for a in adds), adds
    assert sorted(a["partitionValues"]["part"] for a in adds) == ["A", "B"]
    assert sorted(tuple(r) for r in DeltaTable.forPath(spark, table_path).toDF().collect()) == rows_
