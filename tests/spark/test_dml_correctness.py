"""NOT NULL columns on every write path, and MERGE's row semantics (insert-only MERGE is an
anti-join; several source rows matching one target row are refused), as in Delta Spark."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

from tests.spark.helpers import commits, delta_rs_rows

NOT_NULL = "NOT NULL constraint violated for column: "


def _version(path: str) -> int:
    return len(commits(path)) - 1


def _parquet_files(path: str) -> set[str]:
    found = set()
    for root, _, names in os.walk(path):
        if "_delta_log" in root:
            continue
        found.update(os.path.relpath(os.path.join(root, n), path) for n in names if n.endswith(".parquet"))
    return found


def _referenced(path: str) -> set[str]:
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import decode_path

    return {decode_path(f.path) for f in DeltaLog.for_table(path).update().files}


def _not_null_table(spark, path: str):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from deltalog.contrib.spark import DeltaTable

    info = StructType([StructField("k", StringType(), False), StructField("v", LongType(), True)])
    return (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "long", nullable=False)
        .addColumn("name", "string", nullable=False)
        .addColumn("info", info)  # nullable struct with a NOT NULL field
        .execute()
    )


SCHEMA = "id long, name string, info struct<k: string, v: long>"


def test_not_null_inside_an_array_is_refused_or_dropped_by_the_session_conf(spark, table_path):
    """Delta's ``DELTA_NESTED_NOT_NULL_CONSTRAINT``: no writer can enforce it, so a CREATE
    with one fails (nothing committed) unless the session allows dropping it."""
    from pyspark.sql.types import ArrayType, IntegerType, StructField, StructType

    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.commit.commit_errors import NestedNotNullConstraintError

    items = ArrayType(StructType([StructField("qty", IntegerType(), False)]))
    with pytest.raises(NestedNotNullConstraintError, match="The element type of the field items"):
        DeltaTable.create(spark).location(table_path).addColumn("id", "long").addColumn("items", items).execute()
    assert not os.path.exists(os.path.join(table_path, "_delta_log", "00000000000000000000.json"))
    conf = "spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled"
    spark.conf.set(conf, "true")
    try:
        DeltaTable.create(spark).location(table_path).addColumn("id", "long").addColumn("items", items).execute()
    finally:
        spark.conf.unset(conf)
    assert spark.read.format("deltalog").load(table_path).schema["items"].dataType == ArrayType(
        StructType([StructField("qty", IntegerType(), True)])
    )


def test_not_null_is_enforced_on_every_write_path(spark, table_path, tmp_path):
    from deltalog.txn.protocol.constraints import ConstraintViolationError, NotNullConstraintViolationError

    table = _not_null_table(spark, table_path)
    fields = {f["name"]: f for f in json.loads(commits(table_path)[0][-1]["metaData"]["schemaString"])["fields"]}
    assert fields["id"]["nullable"] is False and fields["info"]["nullable"] is True
    good = spark.createDataFrame([(1, "a", ("x", 1)), (2, "b", ("y", None))], SCHEMA)
    good.write.format("deltalog").mode("append").save(table_path)
    assert _version(table_path) == 1

    def refused(column: str, write, *, one_task: bool = True) -> None:
        before = _version(table_path)
        referenced = _referenced(table_path)
        with pytest.raises(Exception, match=NOT_NULL + column.replace(".", r"\.")) as info:
            write()
        if isinstance(info.value, ConstraintViolationError):  # the table API: a typed error
            assert isinstance(info.value, NotNullConstraintViolationError)
            assert info.value.column == column
            assert str(info.value).startswith(f"{NOT_NULL}{column}.\n") and "Traceback" not in str(info.value)
        assert _version(table_path) == before
        assert _referenced(table_path) == referenced
        if one_task:  # the failed task deleted what it wrote
            assert _parquet_files(table_path) == referenced
        # with several tasks, one that finished after Spark aborted the job is not in the
        # messages abort() gets, so its file may stay behind unreferenced (VACUUM removes it,
        # as after a failed Delta Spark write)

    # the table API: UPDATE, MERGE update and insert clauses
    refused("name", lambda: table.update("id = 1", {"name": "null"}))
    src = spark.createDataFrame([(1, None, None), (7, "g", None)], SCHEMA)
    refused(
        "name",
        lambda: (
            table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"name": "s.name"}).execute()
        ),
    )
    src_insert = spark.createDataFrame([(8, None, None)], SCHEMA)
    refused(
        "name", lambda: table.alias("t").merge(src_insert.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    )
    refused(
        "name",
        lambda: (
            table.alias("t")
            .merge(src_insert.alias("s"), "t.id = s.id")
            .whenMatchedDelete()
            .whenNotMatchedInsertAll()
            .execute()
        ),
    )

    # a streaming micro-batch
    source_dir = tmp_path / "stream-in"
    source_dir.mkdir()
    (source_dir / "0.json").write_text('{"id": 5, "name": "e", "info": {"k": "e"}}\n{"id": 6, "info": {"k": "f"}}\n')
    before = _version(table_path)
    q = (
        spark.readStream.schema(SCHEMA)
        .json(str(source_dir))
        .writeStream.format("deltalog")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start(table_path)
    )
    with pytest.raises(Exception, match=NOT_NULL + "name"):
        q.awaitTermination(120)
    assert _version(table_path) == before
    assert _parquet_files(table_path) == _referenced(table_path)

    # data-source append and overwrite: the NULL may sit in any task. These run last: a task that
    # finished after Spark aborted its job may leave an unreferenced file behind, which would
    # otherwise show up in the one-task checks above
    bad_id = spark.createDataFrame([(i, "n", ("n", i)) for i in range(3, 9)] + [(None, "z", ("z", 0))], SCHEMA)
    refused(
        "id", lambda: bad_id.repartition(2).write.format("deltalog").mode("append").save(table_path), one_task=False
    )
    bad_nested = spark.createDataFrame([(3, "c", (None, 3))], SCHEMA)
    # (two tasks here too: local[2] splits even one row into two partitions)
    refused("info.k", lambda: bad_nested.write.format("deltalog").mode("overwrite").save(table_path), one_task=False)

    # rows that satisfy every NOT NULL column still go in, on each path
    table.update("id = 1", {"name": "'a2'"})
    good_src = spark.createDataFrame([(2, "b2", ("y", 2)), (9, "i", ("i", None))], SCHEMA)
    merge = table.alias("t").merge(good_src.alias("s"), "t.id = s.id")
    merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    spark.createDataFrame([(10, "j", ("z", None))], SCHEMA).write.format("deltalog").mode("append").save(table_path)
    got = delta_rs_rows(table_path, ["id"])
    assert got.id.tolist() == [1, 2, 9, 10] and got.name.tolist() == ["a2", "b2", "i", "j"]
    assert [r.id for r in table.toDF().orderBy("id").collect()] == [1, 2, 9, 10]


def test_a_null_struct_with_a_not_null_field_is_a_violation(spark, table_path):
    """Delta's NotNull(top.k) extracts ``top.k``, NULL when ``top`` is NULL: refused too."""
    from deltalog.txn.protocol.constraints import NotNullConstraintViolationError

    table = _not_null_table(spark, table_path)
    src = spark.createDataFrame([(1, "a", ("a", 1))], SCHEMA)
    table.alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    with pytest.raises(NotNullConstraintViolationError, match=NOT_NULL + r"info\.k"):
        table.update("id = 1", {"info": "cast(null as struct<k: string, v: long>)"})
    assert _version(table_path) == 1


def test_merge_schema_keeps_not_null_columns(spark, table_path):
    _not_null_table(spark, table_path)
    wider = spark.createDataFrame([(1, "a", ("a", 1), 1.5)], SCHEMA + ", extra double")
    wider.write.format("deltalog").mode("append").option("mergeSchema", "true").save(table_path)
    schema = json.loads(next(a for a in commits(table_path)[-1] if "metaData" in a)["metaData"]["schemaString"])
    nullable = {f["name"]: f["nullable"] for f in schema["fields"]}
    assert nullable == {"id": False, "name": False, "info": True, "extra": True}
    with pytest.raises(Exception, match=NOT_NULL + "id"):
        spark.createDataFrame([(None, "b", ("b", 2), 2.5)], SCHEMA + ", extra double").write.format("deltalog").mode(
            "append"
        ).save(table_path)


def test_insert_only_merge_inserts_unmatched_rows_and_rewrites_nothing(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    two_rows = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").coalesce(1)
    two_rows.write.format("deltalog").mode("append").save(table_path)
    files_before = _referenced(table_path)
    table = DeltaTable.forPath(spark, table_path)
    # two source rows match target row 1; two unmatched rows, one of them kept out by the clause condition
    src = spark.createDataFrame([(1, "x"), (1, "y"), (3, "c"), (4, "skip")], "id long, v string")
    table.alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll(condition="s.v <> 'skip'").execute()
    got = delta_rs_rows(table_path, ["id"])
    assert got.id.tolist() == [1, 2, 3] and got.v.tolist() == ["a", "b", "c"]
    last = commits(table_path)[-1]
    assert not any("remove" in a for a in last)  # no target file rewritten
    assert files_before <= _referenced(table_path)
    info = next(a["commitInfo"] for a in last if "commitInfo" in a)
    assert info["operation"] == "MERGE"
    assert info["isBlindAppend"] is False  # it read the target
    metrics = info["operationMetrics"]
    assert metrics["numSourceRows"] == "4"
    assert metrics["numTargetRowsInserted"] == "1"
    assert metrics["numTargetRowsUpdated"] == metrics["numTargetRowsDeleted"] == "0"
    assert metrics["numTargetRowsCopied"] == "0"
    assert metrics["numTargetFilesRemoved"] == "0"
    assert metrics["numOutputRows"] == "1"


def test_merge_refuses_several_source_rows_for_one_target_row(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import MergeCardinalityError

    two_rows = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").coalesce(1)
    two_rows.write.format("deltalog").mode("append").option("delta.enableChangeDataFeed", "true").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    src = spark.createDataFrame([(1, "x"), (1, "y"), (3, "c")], "id long, v string")
    with pytest.raises(MergeCardinalityError, match="multiple source rows matched") as info:
        table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert info.value.error_class == "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"
    assert _version(table_path) == 0
    # without matched clauses too, unless the MERGE only inserts (Delta's ClassicMergeExecutor
    # checks every MERGE that is not insert-only)
    with pytest.raises(MergeCardinalityError):
        table.alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().whenNotMatchedBySourceDelete(
            "t.id > 1"
        ).execute()
    assert _version(table_path) == 0
    # one unconditional delete is not ambiguous (Delta allows it): the row goes once
    table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedDelete().execute()
    assert delta_rs_rows(table_path, ["id"]).id.tolist() == [2]
    metrics = next(a["commitInfo"] for a in commits(table_path)[-1] if "commitInfo" in a)["operationMetrics"]
    assert metrics["numTargetRowsDeleted"] == "1"
    feed = spark.read.format("deltalog").option("readChangeFeed", "true")
    changes = feed.option("startingVersion", 1).load(table_path)
    assert [(r.id, r._change_type) for r in changes.collect()] == [(1, "delete")]  # one change row, not two


def test_not_null_constraints_follow_deltas_invariants():
    """Without Spark: which fields are NOT NULL constraints, and how a violation reads."""
    import pyarrow as pa

    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.constraints import (
        NotNullConstraintViolationError,
        check_constraints,
        not_null_constraints,
    )

    def field(name, type_, nullable=True):
        return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}

    inner = {"type": "struct", "fields": [field("k", "string", False)]}
    schema = {
        "type": "struct",
        "fields": [
            field("id", "long", False),
            field("a.b", inner),  # a name holding a dot
            field("list", {"type": "array", "elementType": inner, "containsNull": False}, False),
            field("free", "string"),
        ],
    }
    metadata = Metadata(id="t", schema_string=json.dumps(schema))
    constraints = not_null_constraints(metadata)
    # fields inside arrays and maps are not checked (Delta's filterRecursively(checkComplexTypes=false))
    assert [c.column for c in constraints] == ["id", "`a.b`.k", "list"]
    struct = pa.struct([pa.field("k", pa.string())])
    rows = pa.table(
        {
            "id": [1, 2, 3],
            "a.b": pa.array([{"k": "x"}, None, {"k": "z"}], struct),  # a NULL parent: its NOT NULL field is NULL
            "list": pa.array([[], [{"k": None}], []], pa.list_(struct)),
        }
    )
    with pytest.raises(NotNullConstraintViolationError) as info:
        check_constraints(rows, constraints)
    assert info.value.column == "`a.b`.k" and info.value.violations == 1
    assert str(info.value).startswith("NOT NULL constraint violated for column: `a.b`.k.\n")
    check_constraints(rows.filter(pa.array([True, False, True])), constraints)
    with pytest.raises(NotNullConstraintViolationError, match="column: id"):
        check_constraints(rows.drop_columns(["id"]), constraints)  # a missing column is NULL


def test_update_and_merge_set_structs_by_field_name_and_nested_fields(spark, table_path):
    """Delta's ``generateUpdateExpressions``: a struct value goes into the fields of its names
    (not by position), and ``s.x`` sets one field of a struct column, the others kept."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    schema = "id long, s struct<x:string,y:string>"
    spark.createDataFrame([(1, ("a", "b")), (2, ("c", "d")), (3, None)], schema).write.format("deltalog").mode(
        "append"
    ).save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.update("id = 1", {"s": "named_struct('y', 'Y1', 'x', 'X1')"})
    table.update("id >= 2", {"s.x": "'new'"})
    source = spark.createDataFrame([(2, "m")], "id long, v string").alias("src")
    table.alias("t").merge(source, "t.id = src.id").whenMatchedUpdate(set={"t.s.y": "src.v"}).execute()
    got = [(r.id, None if r.s is None else r.s.asDict()) for r in sorted(table.toDF().collect())]
    assert got == [(1, {"x": "X1", "y": "Y1"}), (2, {"x": "new", "y": "m"}), (3, {"x": "new", "y": None})]
    with pytest.raises(DeltaAnalysisError, match="no field"):
        table.update("id = 1", {"s.z": "'z'"})
    with pytest.raises(DeltaAnalysisError, match="nested field"):
        table.alias("t").merge(source, "t.id = src.id").whenNotMatchedInsert(values={"id": "1", "s.x": "'a'"}).execute()
    # UpdateSuiteBase "nested data - negative case", "check target columns during analysis"
    conflicts = [
        lambda: table.update("id = 1", {"s": "named_struct('x', 'a', 'y', 'b')", "s.x": "'c'"}),
        lambda: table.update("id = 1", {"ID": "1", "id": "2"}),
        lambda: (
            table.alias("t")
            .merge(source, "t.id = src.id")
            .whenMatchedUpdate(set={"t.s.x": "src.v", "S": "null"})
            .execute()
        ),
    ]
    for conflict in conflicts:
        with pytest.raises(DeltaAnalysisError, match="DELTA_CONFLICT_SET_COLUMN"):
            conflict()
    # "target columns can have db and table qualifiers": the target's alias may qualify a SET name
    table.alias("t").update("t.id = 3", {"t.s.x": "'q'", "t.id": "4"})
    assert [r.s.x for r in table.toDF().filter("id = 4").collect()] == ["q"]


def test_set_names_resolve_with_the_session_case_sensitivity(spark, table_path):
    """UpdateSuiteBase "Negative case - check target columns during analysis": SET names are
    resolved with the session's resolver; under ``spark.sql.caseSensitive=true`` ``VALUE``
    names no column ``value`` (UNRESOLVED_COLUMN; MERGE: DELTA_MERGE_UNRESOLVED_EXPRESSION),
    also next to ``value`` (no DELTA_CONFLICT_SET_COLUMN then)."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    spark.createDataFrame([(1, "a")], "id long, value string").write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(1, "m")], "id long, v string").alias("src")
    refused = [
        (lambda: table.update("id = 1", {"VALUE": "'x'"}), "UNRESOLVED_COLUMN"),
        (lambda: table.update("id = 1", {"VALUE": "'x'", "value": "'y'"}), "UNRESOLVED_COLUMN"),
        (
            lambda: table.alias("t").merge(source, "t.id = src.id").whenMatchedUpdate(set={"VALUE": "src.v"}).execute(),
            "DELTA_MERGE_UNRESOLVED_EXPRESSION",
        ),
        (
            lambda: (
                table.alias("t")
                .merge(source, "t.id = src.id")
                .whenMatchedUpdate(set={"t.VALUE": "src.v", "value": "src.v"})
                .execute()
            ),
            "DELTA_MERGE_UNRESOLVED_EXPRESSION",
        ),
    ]
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        for attempt, error_class in refused:
            with pytest.raises(DeltaAnalysisError, match=error_class):
                attempt()
        table.update("id = 1", {"value": "'b'"})
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    table.update("id = 1", {"VALUE": "concat(value, 'c')"})  # the default resolver ignores case, as Delta's
    assert [r.value for r in table.toDF().collect()] == ["bc"]
    with pytest.raises(DeltaAnalysisError, match="UNRESOLVED_COLUMN"):
        table.update("id = 1", {"nope": "'x'"})


def test_merge_star_resolves_with_the_session_case_sensitivity(spark, table_path):
    """Delta's ``resolveStar`` without schema evolution expands ``updateAll``/``insertAll``
    into ``col = source.col`` for every target column, resolved in the source by the session's
    resolver: under ``spark.sql.caseSensitive=true`` a source ``VALUE`` does not give the
    target's ``value`` (DELTA_MERGE_UNRESOLVED_EXPRESSION); case-insensitively it does."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    spark.createDataFrame([(1, "a")], "id long, value string").write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(1, "m"), (2, "n")], "id long, VALUE string")

    def merge(star, evolve=False):
        builder = table.alias("t").merge(source.alias("s"), "t.id = s.id")
        builder = builder.withSchemaEvolution() if evolve else builder
        return (builder.whenMatchedUpdateAll() if star == "UPDATE" else builder.whenNotMatchedInsertAll()).execute()

    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        for star in ("UPDATE", "INSERT"):
            with pytest.raises(DeltaAnalysisError, match=rf"DELTA_MERGE_UNRESOLVED_EXPRESSION.*value.* {star} clause"):
                merge(star)
        # with schema evolution mergeSchemas adds no VALUE (case-insensitive); the action VALUE
        # names no target column for generateUpdateExpressions, and an insert leaves value null
        with pytest.raises(DeltaAnalysisError, match=r"DELTA_MISSING_SET_COLUMN: `VALUE`"):
            merge("UPDATE", evolve=True)
        merge("INSERT", evolve=True)
        assert sorted((r.id, r.value) for r in table.toDF().collect()) == [(1, "a"), (2, None)]
        table.delete("id = 2")
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    assert table.toDF().columns == ["id", "value"]
    merge("UPDATE")
    merge("INSERT")
    assert sorted((r.id, r.value) for r in table.toDF().collect()) == [(1, "m"), (2, "n")]


@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_dml_that_changes_nothing_records_an_empty_commit_only_under_write_serializable(spark, table_path, level):
    """Delta's DELETE, UPDATE and MERGE commit with ``commitIfNeeded``: a command that changed
    nothing is recorded as an empty commit (its commitInfo alone) on a ``WriteSerializable``
    table, and skipped on a ``Serializable`` one (deleted rows, pruned files and both kinds of
    deletion-vector table alike)."""
    from deltalog.contrib.spark import DeltaTable
    from tests.spark.helpers import operations

    spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").write.format("deltalog").mode("append").option(
        "delta.isolationLevel", level
    ).option("partitionBy", "v").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("v = 'zzz'")  # no file after partition pruning
    table.delete("id = 99")  # files read, no row matched
    table.update("id = 99", {"v": "'c'"})
    source = spark.createDataFrame([(99, "x")], "id long, v string")
    # an insert clause whose condition holds for no source row: nothing written, nothing to commit
    merge = table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete()
    merge.whenNotMatchedInsertAll("s.id = 11").execute()
    recorded = operations(table_path)[1:]
    assert recorded == ([] if level == "Serializable" else ["DELETE", "DELETE", "UPDATE", "MERGE"])
    for commit in commits(table_path)[1:]:
        assert [next(iter(a)) for a in commit] == ["commitInfo"]


def test_char_and_varchar_columns_are_strings_whose_length_every_write_checks(spark, table_path):
    """As Spark and Delta store them: ``varchar(n)`` / ``char(n)`` are ``string`` columns
    whose metadata keeps the declared type (Delta has no such type name: a schema holding
    one could not be read); every write checks the length (Delta's ``CharVarcharConstraint``)
    and a longer value commits nothing."""
    from deltalog.contrib.spark import DeltaTable, read_table, write_table
    from deltalog.txn.protocol.constraints import ConstraintViolationError

    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long")
        .addColumn("code", "varchar(3)")
        .addColumn("flag", "char(1)")
        .execute()
    )
    (code, flag) = json.loads(commits(table_path)[0][-1]["metaData"]["schemaString"])["fields"][1:]
    assert (code["type"], code["metadata"]) == ("string", {"__CHAR_VARCHAR_TYPE_STRING": "varchar(3)"})
    assert (flag["type"], flag["metadata"]) == ("string", {"__CHAR_VARCHAR_TYPE_STRING": "char(1)"})
    ok = spark.createDataFrame([(1, "abc", "y"), (2, None, None)], "id long, code string, flag string")
    write_table(ok, table_path)
    too_long = spark.createDataFrame([(3, "abcd", "n")], "id long, code string, flag string")
    for native in (True, False):
        with pytest.raises(ConstraintViolationError, match=r"length\(`code`\) <= 3"):
            write_table(too_long, table_path, native=native)
    with pytest.raises(ConstraintViolationError, match=r"length\(`flag`\) <= 1"):
        table.update("id = 1", {"flag": "'no'"})
    assert _version(table_path) == 1
    assert sorted(tuple(r) for r in read_table(spark, table_path).collect()) == [(1, "abc", "y"), (2, None, None)]


def test_subqueries_and_non_deterministic_merge_conditions_are_refused_as_delta_does(spark, table_path):
    """Delta's ``PreprocessTable{Delete,Update,Merge}``: a subquery in any DML condition
    (``DELTA_UNSUPPORTED_SUBQUERY``) and a non-deterministic MERGE condition
    (``DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED``, MERGE decides matches in more than
    one pass) are refused before anything runs; so is a non-deterministic expression in a
    DELETE or UPDATE (Spark's ``INVALID_NON_DETERMINISTIC_EXPRESSIONS``, DeleteSuiteBase
    "Negative case - non-deterministic condition")."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable, write_table
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    write_table(spark.createDataFrame([(1, 1.0), (2, 2.0)], "id long, v double"), table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(1, 10.0), (3, 30.0)], "id long, v double").alias("s")
    refused = {
        "UNSUPPORTED_SUBQUERY.*DELETE": lambda: table.delete("id IN (SELECT 1)"),
        "UNSUPPORTED_SUBQUERY.*UPDATE": lambda: table.update("id = (SELECT 2)", {"v": "0"}),
        "NON_DETERMINISTIC.*search condition": lambda: (
            table.alias("t").merge(source, F.expr("t.id = s.id") & (F.rand() < 2)).whenMatchedDelete().execute()
        ),
        "NON_DETERMINISTIC.*the UPDATE condition of MERGE": lambda: (
            table.alias("t").merge(source, "t.id = s.id").whenMatchedUpdate("rand() < 2", {"v": "s.v"}).execute()
        ),
        "UNSUPPORTED_SUBQUERY.*the INSERT condition of MERGE": lambda: (
            table.alias("t")
            .merge(source, "t.id = s.id")
            .whenNotMatchedInsert("s.id IN (SELECT 3)", {"id": "s.id", "v": "s.v"})
            .execute()
        ),
    }
    refused_rand = [
        lambda: table.delete("rand() > 0.5"),
        lambda: table.update(F.rand() < 2, {"v": "v + 1"}),
        lambda: table.update(None, {"v": "rand()"}),
    ]
    # Update/MergeIntoSuiteBase "Window/Aggregate functions in update/merge": Spark's
    # UNSUPPORTED_EXPR_FOR_OPERATOR for a window, aggregate or generator in a value
    def merge():
        return table.alias("t").merge(source, "t.id = s.id")

    refused_special = [
        lambda: table.update("id = 1", {"v": "row_number() OVER (ORDER BY id)"}),
        lambda: table.update("id = 1", {"v": "max(v)"}),
        lambda: merge().whenMatchedUpdate(set={"v": "sum(t.v) OVER ()"}).execute(),
        lambda: merge().whenNotMatchedInsert(values={"id": "s.id", "v": "max(s.v)"}).execute(),
    ]
    for message, run in [
        *refused.items(),
        *(("NON_DETERMINISTIC_EXPRESSIONS", r) for r in refused_rand),
        *(("UNSUPPORTED_EXPR_FOR_OPERATOR.*Invalid expressions", r) for r in refused_special),
    ]:
        with pytest.raises(DeltaAnalysisError, match=message):
            run()
    assert _version(table_path) == 0
    # a source that aggregates (deduplicated by key) is no aggregate in a clause's value
    deduplicated = source.groupBy("id").agg(F.max("v").alias("v")).alias("s")
    table.alias("t").merge(deduplicated, "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).execute()
    assert sorted((r.id, r.v) for r in table.toDF().collect()) == [(1, 10.0), (2, 2.0)]


def test_merge_and_update_cast_values_by_store_assignment_policy(spark, table_path):
    """Delta's ``UpdateExpressionsSupport.cast`` (MergeIntoSchemaEvolutionSuite's "write string
    into int column", "valid implicit cast string source type into int target,
    storeAssignmentPolicy = STRICT"): a value is cast by ``spark.sql.storeAssignmentPolicy``,
    not by ``spark.sql.ansi.enabled``."""
    from pyspark.errors import PySparkException

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.delta_log import DeltaLog

    spark.createDataFrame([(0, 0), (1, 10)], "key int, value int").write.format("deltalog").mode("append").save(
        table_path
    )
    table = DeltaTable.forPath(spark, table_path)
    words = spark.createDataFrame([(1, "11"), (5, "notANumber")], "key int, value string").alias("s")

    def upsert() -> None:
        table.alias("t").merge(words, "t.key = s.key").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    def with_conf(conf: dict[str, str], run: Callable[[], None]) -> None:
        for key, value in conf.items():
            spark.conf.set(key, value)
        try:
            run()
        finally:
            for key in conf:
                spark.conf.unset(key)

    # LEGACY: Spark's non-ANSI cast (a malformed string is null), even with spark.sql.ansi.enabled=true
    legacy = {"spark.sql.storeAssignmentPolicy": "LEGACY", "spark.sql.ansi.enabled": "true"}
    with_conf(legacy, upsert)
    with_conf(legacy, lambda: table.update("key = 0", {"value": "'x'"}))
    assert sorted(tuple(r) for r in table.toDF().collect()) == [(0, None), (1, 11), (5, None)]
    version = DeltaLog.for_table(table_path).snapshot().version
    # ANSI (the default), even with spark.sql.ansi.enabled=false: a malformed string fails the MERGE
    with pytest.raises(PySparkException, match="CAST_INVALID_INPUT"):
        with_conf({"spark.sql.ansi.enabled": "false"}, upsert)
    # STRICT: only up-casts; refused before anything runs
    with pytest.raises(DeltaAnalysisError, match=r"^CANNOT_UP_CAST_DATATYPE: Cannot up cast value from string to int"):
        with_conf({"spark.sql.storeAssignmentPolicy": "STRICT"}, upsert)
    assert DeltaLog.for_table(table_path).snapshot().version == version


def test_an_overflowing_update_or_merge_value_fails_with_deltas_table_write_error(spark, table_path):
    """Delta's ``ImplicitDMLCastingSuite`` ("UPDATE overflow", "MERGE overflow", "Details are part
    of the error message"): under ``storeAssignmentPolicy=ANSI`` a value that overflows its
    column's type (also inside an array or a struct) fails with
    ``DELTA_CAST_OVERFLOW_IN_TABLE_WRITE`` naming the types and the column, and the table is
    untouched; under ``LEGACY`` (or the ANSI-following flag with ANSI off) the value wraps."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    big = 9223372036854775807
    schema = "id long, value int, arr array<int>, s struct<value:int>, d decimal(3,2)"
    spark.createDataFrame([(0, 1, [1], (1,), None)], schema).write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame(
        [(5, big, [1], (1,)), (6, 1, [big], (1,)), (7, 1, [1], (big,))],
        "id long, value long, arr array<long>, s struct<value:long>",
    ).withColumn("d", F.lit(None).cast("decimal(3,2)"))

    def insert_all(key: int) -> Callable[[], None]:
        rows = source.where(f"id = {key}").alias("s")
        return lambda: table.alias("t").merge(rows, "t.id = s.id").whenNotMatchedInsertAll().execute()

    failing = [
        ("BIGINT", "INT", "value", lambda: table.update(None, {"value": f"{big}L"})),
        ("BIGINT", "INT", "value", insert_all(5)),
        ("ARRAY<BIGINT>", "ARRAY<INT>", "arr", insert_all(6)),
        ("BIGINT", "INT", "s.value", insert_all(7)),
        ("DECIMAL(3,1)", "DECIMAL(3,2)", "d", lambda: table.update(None, {"d": "CAST(12.3 AS DECIMAL(3,1))"})),
    ]
    for source_type, target_type, column, run in failing:
        expected = (
            f"DELTA_CAST_OVERFLOW_IN_TABLE_WRITE.*{source_type} type into the {target_type} type column `{column}`"
        )
        with pytest.raises(PySparkException, match=expected.replace("(", "\\(").replace(")", "\\)")):
            run()
    assert _version(table_path) == 0
    follows_ansi = {
        "spark.databricks.delta.updateAndMergeCastingFollowsAnsiEnabledFlag": "true",
        "spark.sql.ansi.enabled": "false",
    }
    for conf, wrapped in [({"spark.sql.storeAssignmentPolicy": "LEGACY"}, -1), (follows_ansi, -2)]:
        for key, setting in conf.items():
            spark.conf.set(key, setting)
        try:
            table.update(None, {"value": f"{big + wrapped + 1}L"})
        finally:
            for key in conf:
                spark.conf.unset(key)
        assert [r.value for r in table.toDF().collect()] == [wrapped]


def test_null_foldable_and_cast_cases_of_deltas_dml_suites(spark, table_path):
    """Cases of Delta's ``DeleteSuiteBase`` / ``UpdateSuiteBase`` run in order on one table
    partitioned by ``key``, with deletion vectors: a condition that is NULL for a row
    ("SC-12232", ``key = null``, ``1 > null``, ``IN`` with a null) deletes or updates nothing
    there, ``<=>`` matches nulls, a row whose partition value an UPDATE sets to NULL moves
    partitions ("set to null"), values are cast to the column type ("type mismatch",
    "valid implicit cast string source type into int target"), Column conditions work
    ("delete usage test - with Column condition"), and an UPDATE of rows a DELETE already
    removed changes nothing ("UPDATE with DVs - update deleted rows updates nothing")."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    df = spark.createDataFrame([("a", 1), (None, 2), (None, 3), ("d", 4), ("e", 5)], "key string, value int")
    writer = df.coalesce(1).write.format("deltalog").mode("append").option("partitionBy", "key")
    writer.option("delta.enableDeletionVectors", "true").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    steps = [
        (lambda: table.delete("key = null"), [("a", 1), (None, 2), (None, 3), ("d", 4), ("e", 5)]),
        (lambda: table.delete("1 > null"), [("a", 1), (None, 2), (None, 3), ("d", 4), ("e", 5)]),
        (
            lambda: table.update("key <> 'a'", {"value": "value * 10"}),
            [("a", 1), (None, 2), (None, 3), ("d", 40), ("e", 50)],
        ),
        (
            lambda: table.update("key <=> null", {"value": "-1"}),
            [("a", 1), (None, -1), (None, -1), ("d", 40), ("e", 50)],
        ),
        (
            lambda: table.update("value = 50", {"key": "null", "value": "cast(value as double) / 2"}),
            [("a", 1), (None, -1), (None, -1), (None, 25), ("d", 40)],
        ),
        (lambda: table.update("key = 'd'", {"value": "'7'"}), [("a", 1), (None, -1), (None, -1), (None, 25), ("d", 7)]),
        (lambda: table.delete("key IN ('a', null)"), [(None, -1), (None, -1), (None, 25), ("d", 7)]),
        (lambda: table.delete(F.col("value") < 0), [(None, 25), ("d", 7)]),
        (lambda: table.update("value < 0", {"value": "0"}), [(None, 25), ("d", 7)]),
    ]
    for i, (step, expected) in enumerate(steps):
        step()
        got = sorted(((r.key, r.value) for r in table.toDF().collect()), key=repr)
        assert got == sorted(expected, key=repr), f"step {i}"
    assert _version(table_path) == 6  # the steps that change no row commit nothing


def test_an_append_only_table_refuses_removing_commands_before_anything_runs(spark, table_path):
    """Delta's ``DeltaLog.assertRemovable``, called first by ``DeleteCommand``,
    ``UpdateCommand``, ``WriteIntoDelta`` in overwrite mode and ``DeltaSink`` in complete mode:
    on a table with ``delta.appendOnly=true`` each is ``DELTA_CANNOT_MODIFY_APPEND_ONLY`` before
    anything is written, even when no row would be removed; appends and an insert-only MERGE
    still work."""
    from deltalog.contrib.spark import DeltaTable, write_table
    from deltalog.contrib.spark.source import DeltaLogDataSource
    from deltalog.errors import AppendOnlyViolationError

    rows = spark.createDataFrame([(1,)], "id long")
    rows.write.format("deltalog").mode("append").option("delta.appendOnly", "true").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    version, files = _version(table_path), _parquet_files(table_path)
    for action in (
        lambda: table.delete("id = 99"),
        lambda: table.update("id = 99", {"id": "2"}),
        lambda: write_table(rows, table_path, mode="overwrite"),
        lambda: DeltaLogDataSource({"path": table_path}).writer(rows.schema, True),
        lambda: DeltaLogDataSource({"path": table_path, "queryId": "q"}).streamWriter(rows.schema, True),
    ):
        with pytest.raises(AppendOnlyViolationError, match="DELTA_CANNOT_MODIFY_APPEND_ONLY"):
            action()
    assert (_version(table_path), _parquet_files(table_path)) == (version, files)
    source = spark.createDataFrame([(1,), (3,)], "id long").alias("s")
    table.alias("t").merge(source, "t.id = s.id").whenNotMatchedInsertAll().execute()
    write_table(spark.createDataFrame([(4,)], "id long"), table_path)
    assert sorted(r.id for r in table.toDF().collect()) == [1, 3, 4]


def test_a_partition_column_named_with_a_dot_is_not_the_struct_field_of_that_path(spark, table_path):
    """A table partitioned by a column named ``s.a`` beside a struct ``s``: a condition on
    ``s.a`` names field ``a`` of ``s`` (as Spark resolves it), ```s.a``` the partition column.
    Neither may be taken for the other's partition filter (DELETE dropped the wrong partition)."""
    from deltalog.contrib.spark import DeltaTable

    schema = "s struct<a:int>, `s.a` int, id int"
    rows = [((1,), 10, 1), ((10,), 1, 2), ((5,), 5, 3)]
    spark.createDataFrame(rows, schema).write.format("deltalog").mode("append").option("partitionBy", "s.a").save(
        table_path
    )
    table = DeltaTable.forPath(spark, table_path)
    table.delete("s.a = 1")  # the struct field: row 1
    assert sorted(r.id for r in table.toDF().collect()) == [2, 3]
    table.update("`s.a` = 5", {"id": "30"})  # the partition column: row 3
    table.alias("t").update("t.s.a = 10", {"id": "20"})  # the struct field, qualified: row 2
    assert sorted(r.id for r in table.toDF().collect()) == [20, 30]
    new = spark.createDataFrame([((10,), 5, 40)], schema)
    new.write.format("deltalog").mode("overwrite").option("replaceWhere", "s.a = 10").save(table_path)
    assert sorted(r.id for r in table.toDF().collect()) == [30, 40]


def test_names_holding_a_backquote_in_conditions_and_set_targets(spark, table_path):
    """DeltaNullTypeSuite's ``val`ue`` column: a name holding a backquote is written
    ```val``ue``` (Spark's ``parseAttributeName``) in conditions and in UPDATE/MERGE set
    targets, also as the partition column, and the rows keep their values."""
    from deltalog.contrib.spark import DeltaTable

    schema = "`k``` int, `val``ue` int"
    spark.createDataFrame([(1, 10), (2, 20), (3, 30)], schema).write.format("deltalog").mode("append").option(
        "partitionBy", '["k`"]'
    ).save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("`k``` = 1")
    table.update("`val``ue` = 20", {"`val``ue`": "21"})
    source = spark.createDataFrame([(3, 31)], schema)
    table.alias("t").merge(source.alias("s"), "t.`k``` = s.`k```").whenMatchedUpdate(
        set={"`val``ue`": "s.`val``ue`"}
    ).execute()
    assert sorted(tuple(r) for r in table.toDF().collect()) == [(2, 21), (3, 31)]
