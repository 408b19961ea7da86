"""MERGE with every clause of delta-spark's ``DeltaMergeBuilder`` (local[2]): results compared
with the same MERGE computed in pandas, schema evolution, target file pruning, metrics."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from deltalog.contrib.spark.merge_pruning import condition_terms
from deltalog.txn.delta_log import DeltaLog
from tests.spark.helpers import commits, rows

pytestmark = pytest.mark.spark

Row = dict[str, Any]
Clause = tuple[Callable[..., bool], Callable[..., Row | None]]  # (condition, new row; None: delete)


def _reference(
    target: pd.DataFrame,
    source: pd.DataFrame,
    matched: list[Clause],
    by_source: list[Clause],
    inserts: list[Clause],
) -> pd.DataFrame:
    """The MERGE ``t.id = s.id`` in pandas: first clause whose condition holds, in order."""
    out: list[Row] = []
    src = source.to_dict("records")
    for t in target.to_dict("records"):
        hits = [s for s in src if s["id"] == t["id"]]
        assert len(hits) <= 1
        clauses = matched if hits else by_source
        for cond, act in clauses:
            if cond(t, hits[0]) if hits else cond(t):
                new = act(t, hits[0]) if hits else act(t)
                if new is not None:
                    out.append(new)
                break
        else:
            out.append(t)
    ids = set(target.id)
    for s in src:
        if s["id"] not in ids:
            for cond, act in inserts:
                if cond(s):
                    out.append(act(s))  # type: ignore[arg-type]
                    break
    return pd.DataFrame(out, columns=list(target.columns)).sort_values("id").reset_index(drop=True)


TARGET = pd.DataFrame({"id": range(12), "v": [i * 10 for i in range(12)], "p": [f"p{i % 3}" for i in range(12)]})
SOURCE = pd.DataFrame(
    {"id": [2, 3, 4, 5, 20, 21], "v": [-2, 300, -4, -5, -20, 210], "p": ["x", "y", "z", "w", "p0", "skip"]}
)


def _every_clause() -> tuple[Callable[[Any], Any], list[Clause], list[Clause], list[Clause]]:
    """Three matched clauses in order, a conditional insert, two not-matched-by-source clauses."""

    def keep_p(t: Row, v: Any) -> Row:
        return {"id": t["id"], "v": v, "p": t["p"]}

    return (
        lambda m: (
            m.whenMatchedDelete("s.v = -4")
            .whenMatchedUpdate("s.v > 100", {"v": "s.v + t.v"})
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll("s.p <> 'skip'")
            .whenNotMatchedBySourceUpdate("t.v < 30", {"v": "t.v + 1", "p": "'moved'"})
            .whenNotMatchedBySourceDelete("t.id >= 9")
        ),
        [
            (lambda t, s: s["v"] == -4, lambda t, s: None),
            (lambda t, s: s["v"] > 100, lambda t, s: keep_p(t, s["v"] + t["v"])),
            (lambda t, s: True, lambda t, s: dict(s)),
        ],
        [
            (lambda t: t["v"] < 30, lambda t: {**t, "v": t["v"] + 1, "p": "moved"}),
            (lambda t: t["id"] >= 9, lambda t: None),
        ],
        [(lambda s: s["p"] != "skip", lambda s: dict(s))],
    )


def test_every_clause_kind_matches_pandas(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    source = spark.createDataFrame(SOURCE).alias("s")
    name, path = "every clause", table_path
    for build, matched, by_source, inserts in [_every_clause()]:
        spark.createDataFrame(TARGET).write.format("deltalog").mode("append").option(
            "delta.enableChangeDataFeed", "true"
        ).save(path)
        build(DeltaTable.forPath(spark, path).alias("t").merge(source, "t.id = s.id")).execute()
        expected = _reference(TARGET, SOURCE, matched, by_source, inserts)
        got = rows(spark.read.format("deltalog").load(path), ["id"])
        assert got.values.tolist() == expected.values.tolist(), name

        info = DeltaLog.for_table(path).history(1)[0]
        metrics = info.operation_metrics or {}
        before, after = set(TARGET.id), set(expected.id)
        updated = len(set(got.merge(TARGET, how="left", indicator=True).query("_merge == 'left_only'").id) & before)
        assert int(metrics["numTargetRowsInserted"]) == len(after - before), name
        assert int(metrics["numTargetRowsDeleted"]) == len(before - after), name
        assert int(metrics["numTargetRowsUpdated"]) == updated, name
        assert int(metrics["numTargetRowsMatchedUpdated"]) + int(metrics["numTargetRowsNotMatchedBySourceUpdated"]) == (
            updated
        )
        assert int(metrics["numTargetRowsMatchedDeleted"]) + int(metrics["numTargetRowsNotMatchedBySourceDeleted"]) == (
            len(before - after)
        )
        assert metrics["numSourceRows"] == str(len(SOURCE))
        assert int(metrics["numOutputRows"]) == int(metrics["numTargetRowsCopied"]) + len(after - before) + updated
        for key in ("numTargetBytesAdded", "numTargetBytesRemoved", "executionTimeMs", "scanTimeMs", "rewriteTimeMs"):
            assert int(metrics[key]) >= 0, key
        # Delta's MERGE reports its target-file metrics only, not WRITE's generic file counts
        assert not {"numFiles", "numAddedFiles", "numRemovedFiles", "numOutputBytes", "numRemovedBytes"} & set(metrics)
        params = info.operation_parameters
        assert len(json.loads(params["notMatchedBySourcePredicates"])) == len(by_source)

        # the change feed records each affected row once
        changes = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1).load(path)
        kinds = {r["_change_type"]: r["count"] for r in changes.groupBy("_change_type").count().collect()}
        assert kinds.get("delete", 0) == len(before - after), name
        assert kinds.get("insert", 0) == len(after - before), name
        assert kinds.get("update_postimage", 0) == updated, name


def test_schema_evolution_adds_source_columns(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    table = DeltaTable.create(spark).location(table_path).addColumn("id", "long", nullable=False)
    table = table.addColumn("name", "string").execute()
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string").write.format("deltalog").mode("append").save(
        table_path
    )
    wider = spark.createDataFrame([(2, "B", 20.0), (3, "c", 30.0)], "id long, name string, score double")
    log = DeltaLog.for_table(table_path)

    # without schema evolution: the extra source column is ignored by *All, and setting it is an error
    with pytest.raises(DeltaAnalysisError, match="score"):
        table.alias("t").merge(wider.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"score": "s.score"}).execute()
    table.alias("t").merge(wider.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert [f["name"] for f in json.loads(log.update().metadata.schema_string)["fields"]] == ["id", "name"]
    assert rows(table.toDF(), ["id"]).values.tolist() == [[1, "a"], [2, "B"]]

    # with it: updateAll/insertAll add the column, nullable; the NOT NULL column stays NOT NULL
    (
        table.alias("t")
        .merge(wider.alias("s"), "t.id = s.id")
        .withSchemaEvolution()
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    fields = {f["name"]: f for f in json.loads(log.update().metadata.schema_string)["fields"]}
    assert list(fields) == ["id", "name", "score"]
    assert fields["score"]["type"] == "double" and fields["score"]["nullable"] is True
    assert fields["id"]["nullable"] is False
    got = rows(table.toDF(), ["id"])
    assert got.astype(object).where(pd.notna(got), None).values.tolist() == [
        [1, "a", None],
        [2, "B", 20.0],
        [3, "c", 30.0],
    ]
    last = commits(table_path)[-1]
    assert any("metaData" in a for a in last) and any("add" in a for a in last)

    # the session conf turns it on too; an evolved insertAll leaves a column the source lacks null
    narrow = spark.createDataFrame([(4, 1)], "id long, extra int")
    spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
    try:
        table.alias("t").merge(narrow.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    finally:
        spark.conf.unset("spark.databricks.delta.schema.autoMerge.enabled")
    assert list(table.toDF().columns) == ["id", "name", "score", "extra"]
    assert rows(table.toDF(), ["id"]).iloc[-1].tolist()[:2] == [4, None]

    # MergeIntoSchemaEvolutionSuite's "incompatible types in update *" / "invalid implicit cast
    # string source type into boolean target": with evolution the source column's type must
    # implicitly cast to the table's (a string into a double does; a boolean into an int does not,
    # though Spark's explicit cast would), and nothing runs
    version = log.update().version
    flags = spark.createDataFrame([(1, True)], "id long, extra boolean").alias("s")
    for build in (lambda m: m.whenMatchedUpdateAll(), lambda m: m.whenMatchedUpdate(set={"extra": "s.extra"})):
        with pytest.raises(DeltaAnalysisError, match="incompatible data types integer and boolean"):
            build(table.alias("t").merge(flags, "t.id = s.id").withSchemaEvolution()).execute()
    assert log.update().version == version


def test_schema_evolution_gives_void_columns_the_source_type(spark, table_path):
    """MergeCDCSuite "schema evolution from void" and "... from void to struct with void":
    Delta's ``mergeSchemas`` gives a ``void`` column the source's type (a struct keeps its own
    ``void`` field), with the change rows of the MERGE."""
    from deltalog.contrib.spark import DeltaTable

    target = spark.createDataFrame(
        [(0, 0, None, None), (1, 10, None, None), (3, 30, None, None)], "key int, n int, text void, s void"
    )
    target.write.format("deltalog").mode("append").option("delta.enableChangeDataFeed", "true").save(table_path)
    source = spark.createDataFrame(
        [(1, 1, "a", (1, None)), (2, 2, "b", (2, None)), (3, -1, "c", (3, None))],
        "key int, n int, text string, s struct<x:int,y:void>",
    )
    merge = (
        DeltaTable.forPath(spark, table_path).alias("t").merge(source.alias("s"), "s.key = t.key").withSchemaEvolution()
    )
    merge.whenMatchedDelete("s.key = 3").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    fields = {
        f["name"]: f["type"]
        for f in json.loads(DeltaLog.for_table(table_path).update().metadata.schema_string)["fields"]
    }
    assert fields["text"] == "string" and [f["type"] for f in fields["s"]["fields"]] == ["integer", "void"]
    got = spark.read.format("deltalog").load(table_path).selectExpr("key", "n", "text", "s.x")
    assert sorted(tuple(r) for r in got.collect()) == [(0, 0, None, None), (1, 1, "a", 1), (2, 2, "b", 2)]
    feed = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1).load(table_path)
    changes = feed.selectExpr("key", "n", "text", "s.x", "_change_type").collect()
    assert sorted(tuple(r) for r in changes) == [
        (1, 1, "a", 1, "update_postimage"),
        (1, 10, None, None, "update_preimage"),
        (2, 2, "b", 2, "insert"),
        (3, 30, None, None, "delete"),
    ]


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_struct_values_are_matched_by_field_name_and_evolve_nested_fields(spark, table_path, mapping):
    """Delta's ``castIfNeeded`` by name: a source struct with its fields in another order
    writes each value into the field of its name; with schema evolution a source struct's
    extra nested field is added to the table's struct (null in the copied rows), and
    ``updateAll`` keeps the target's value of a field the source struct lacks."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    spark.createDataFrame([(1, ("a", "b")), (2, ("c", "d"))], "id long, s struct<x:string,y:string>").write.format(
        "deltalog"
    ).mode("append").option("delta.columnMapping.mode", mapping).save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    swapped = spark.createDataFrame([(2, ("Y2", "X2")), (3, ("Y3", None))], "id long, s struct<y:string,x:string>")
    table.alias("t").merge(
        swapped.alias("src"), "t.id = src.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    got = [(r.id, r.s.asDict()) for r in sorted(table.toDF().collect())]
    assert got == [(1, {"x": "a", "y": "b"}), (2, {"x": "X2", "y": "Y2"}), (3, {"x": None, "y": "Y3"})]

    wider = spark.createDataFrame([(3, ("X3", 3.5), None)], "id long, s struct<x:string,z:double>, n long")
    with pytest.raises(DeltaAnalysisError, match="withSchemaEvolution"):
        table.alias("t").merge(wider.alias("src"), "t.id = src.id").whenMatchedUpdateAll().execute()
    table.alias("t").merge(wider.alias("src"), "t.id = src.id").withSchemaEvolution().whenMatchedUpdateAll().execute()
    struct = json.loads(DeltaLog.for_table(table_path).update().metadata.schema_string)["fields"][1]["type"]
    assert [f["name"] for f in struct["fields"]] == ["x", "y", "z"]
    assert ("delta.columnMapping.id" in struct["fields"][2]["metadata"]) == (mapping == "name")
    got = [(r.id, r.s.asDict(), r.n) for r in sorted(table.toDF().collect())]
    assert got == [
        (1, {"x": "a", "y": "b", "z": None}, None),
        (2, {"x": "X2", "y": "Y2", "z": None}, None),
        (3, {"x": "X3", "y": "Y3", "z": 3.5}, None),  # updateAll keeps the field the source lacks
    ]
    narrow = spark.createDataFrame([(1, ("X1",), 1)], "id long, s struct<x:string>, n long")
    with pytest.raises(DeltaAnalysisError, match="lacks"):  # without evolution, a missing field is an error
        table.alias("t").merge(narrow.alias("src"), "t.id = src.id").whenMatchedUpdateAll().execute()


def test_structs_in_arrays_and_maps_evolve_by_name(spark, tmp_path):
    """MergeIntoSchemaEvolutionSuite's array-of-struct and map-struct-value cases: with schema
    evolution a source element (or map value) struct's extra fields are added to the table's
    element struct, at any depth (copied rows get null there; with column mapping the new
    fields get ids), fields are matched by name, and a field the source element lacks is null
    ("longer target", also with ``set``), and on a table with type widening a nested element
    field widens (TypeWideningMergeIntoSchemaEvolutionSuite), recorded once; without
    evolution both are errors ("Cannot cast")."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    table_path = str(tmp_path / "widened")  # delta-rs does not read typeWidening tables
    spark.createDataFrame(
        [(1, [("a", [(1,)])], {"k": (1,)}), (2, [("c", [(2,)])], {"k": (2,)})],
        "id long, arr array<struct<x:string,n:array<struct<p:short>>>>, m map<string,struct<a:int>>",
    ).write.format("deltalog").mode("append").option("delta.columnMapping.mode", "name").option(
        "delta.enableTypeWidening", "true"
    ).save(table_path)
    table, log = DeltaTable.forPath(spark, table_path), DeltaLog.for_table(table_path)
    wider = spark.createDataFrame(
        [(2, [("Z2", [(20, 70000)], "X2")], {"k": (22, 2)}), (3, [("Z3", None, "X3")], {"j": (33, 3)})],
        "id long, arr array<struct<z:string,n:array<struct<q:int,p:int>>,x:string>>, m map<string,struct<b:int,a:int>>",
    ).alias("s")
    narrow = spark.createDataFrame([(1, [("X1",)])], "id long, arr array<struct<x:string>>").alias("s")
    version = log.update().version
    for source in (wider, narrow):
        with pytest.raises(DeltaAnalysisError, match=r"DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION.*withSchemaEvolution"):
            table.alias("t").merge(source, "t.id = s.id").whenMatchedUpdate(set={"arr": "s.arr"}).execute()
    assert log.update().version == version

    table.alias("t").merge(
        wider, "t.id = s.id"
    ).withSchemaEvolution().whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    table.alias("t").merge(narrow, "t.id = s.id").withSchemaEvolution().whenMatchedUpdate(
        set={"arr": "s.arr"}
    ).execute()
    got = {r.id: r.asDict(recursive=True) for r in table.toDF().collect()}
    assert got == {
        1: {"id": 1, "arr": [{"x": "X1", "n": None, "z": None}], "m": {"k": {"a": 1, "b": None}}},
        2: {"id": 2, "arr": [{"x": "X2", "n": [{"p": 70000, "q": 20}], "z": "Z2"}], "m": {"k": {"a": 2, "b": 22}}},
        3: {"id": 3, "arr": [{"x": "X3", "n": None, "z": "Z3"}], "m": {"j": {"a": 3, "b": 33}}},
    }
    metadata = log.update().metadata
    fields = json.loads(metadata.schema_string)["fields"]
    element = fields[1]["type"]["elementType"]
    new_fields = [element["fields"][2], element["fields"][1]["type"]["elementType"]["fields"][1]]
    new_fields.append(fields[2]["type"]["valueType"]["fields"][1])
    assert [f["name"] for f in new_fields] == ["z", "q", "b"]
    ids = [f["metadata"]["delta.columnMapping.id"] for f in new_fields]
    assert sorted(ids) == list(range(min(ids), min(ids) + 3))  # fresh ids, one per new field
    assert int(metadata.configuration["delta.columnMapping.maxColumnId"]) == max(ids)
    widened = element["fields"][1]["type"]["elementType"]["fields"][0]
    assert (widened["type"], widened["metadata"]["delta.typeChanges"]) == (
        "integer",
        [{"fromType": "short", "toType": "integer"}],
    )


def test_update_all_keeps_a_null_source_struct_null_unless_the_target_has_fields_of_its_own(spark, tmp_path):
    """MergeIntoStructEvolutionNullnessSuite "null expansion - UPDATE * ... without target-only
    fields": under schema evolution ``updateAll`` with a null source struct writes null when the
    target struct has no field the source lacks, at any depth through structs (Delta's
    ``hasExtraStructFieldsToPreserveValue``), whatever the target's value; with such a field
    the target's values are kept and only a null target stays null. Before, a non-null target
    struct became a struct of nulls."""
    from deltalog.contrib.spark import DeltaTable

    nested = "key int, col struct<x:struct<a:int,b:int>,y:struct<c:int,d:int>>"
    cases = [  # source schema, target schema, target row, expected row (the source row: key 1, col null)
        ("key int, col struct<x:int,y:int>", "key int, col struct<Y:int>", {"col": {"Y": None}}, None),
        (nested, "key int, col struct<y:struct<d:int>>", {"col": {"y": None}}, None),
        (nested, "key int, col struct<y:struct<d:int>>", {"col": {"y": {"d": 4}}}, None),
        (
            nested,
            "key int, col struct<y:struct<d:int,e:int>>",
            {"col": {"y": {"d": 4, "e": 5}}},
            {"y": {"d": None, "e": 5, "c": None}, "x": None},
        ),
        (nested, "key int, col struct<y:struct<d:int,e:int>>", {"col": None}, None),
    ]
    for n, (source_schema, target_schema, target_row, expected) in enumerate(cases):
        path = str(tmp_path / str(n))
        target = spark.createDataFrame([{"key": 1, **target_row}], target_schema)
        target.write.format("deltalog").mode("append").save(path)
        source = spark.createDataFrame([{"key": 1, "col": None}], source_schema).alias("s")
        table = DeltaTable.forPath(spark, path)
        table.alias("t").merge(source, "s.key = t.key").withSchemaEvolution().whenMatchedUpdateAll().execute()
        assert [r.asDict(recursive=True) for r in table.toDF().collect()] == [{"key": 1, "col": expected}], n


def test_a_field_of_a_new_column_adds_the_column_with_just_that_field(spark, table_path):
    """MergeIntoStructEvolutionNullnessSuite "multiple clauses - UPDATE SET col = s.col, UPDATE
    SET extra.val = s.extra.val": with schema evolution an assignment of a field inside a source
    column the table lacks adds that column with just the assigned fields (Delta's
    ``computePostEvolutionTargetSchema``); the row it updates gets a struct (a null source
    struct's field is null inside it), the others null. Without schema evolution it is an
    error and nothing is committed. Before, it was refused even with schema evolution."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    target = spark.createDataFrame([(1, None), (2, None)], "key int, col struct<y:int,z:int>")
    target.write.format("deltalog").mode("append").save(table_path)
    source = spark.createDataFrame(
        [(1, None, None), (2, None, None)], "key int, col struct<x:int,y:int>, extra struct<val:int,val2:int>"
    ).alias("s")
    table, log = DeltaTable.forPath(spark, table_path), DeltaLog.for_table(table_path)

    def merge() -> Any:
        update_col = table.alias("t").merge(source, "s.key = t.key").whenMatchedUpdate("s.key = 1", {"col": "s.col"})
        return update_col.whenMatchedUpdate("s.key = 2", {"extra.val": "s.extra.val"})

    with pytest.raises(DeltaAnalysisError, match="DELTA_MERGE_UNRESOLVED_EXPRESSION"):
        merge().execute()
    assert log.update().version == 0
    merge().withSchemaEvolution().execute()
    assert table.toDF().schema.simpleString() == ("struct<key:int,col:struct<y:int,z:int,x:int>,extra:struct<val:int>>")
    got = sorted((r.key, r.col, r.extra and r.extra.asDict()) for r in table.toDF().collect())
    assert got == [(1, None, None), (2, None, {"val": None})]


def test_a_nested_field_assignment_adds_just_that_field_under_schema_evolution(spark, table_path):
    """MergeIntoSchemaEvolutionSuite "two new nested source fields with update: one added, one
    ignored" and "new nested source field not in update is ignored": with schema evolution
    `set={"value.b": "s.value.b"}` adds `value.b` (Delta keeps the source struct filtered to the
    assigned fields, computePostEvolutionTargetSchema), not the source's `c`; `value.a` adds
    nothing; without evolution it is an error and nothing is committed. Before, the assignment
    of a new nested field failed even with schema evolution."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    spark.sql("select 'A' key, named_struct('a', 1) value").write.format("deltalog").mode("append").save(table_path)
    table, log = DeltaTable.forPath(spark, table_path), DeltaLog.for_table(table_path)
    source = spark.sql("select 'A' key, named_struct('a', 2, 'b', 3, 'c', 4) value").alias("s")
    with pytest.raises(DeltaAnalysisError, match="no field"):
        table.alias("t").merge(source, "t.key = s.key").whenMatchedUpdate(set={"value.b": "s.value.b"}).execute()
    assert log.update().version == 0
    merge = table.alias("t").merge(source, "t.key = s.key").withSchemaEvolution()
    merge.whenMatchedUpdate(set={"value.a": "s.value.a"}).execute()
    assert [r.asDict(recursive=True) for r in table.toDF().collect()] == [{"key": "A", "value": {"a": 2}}]
    merge = table.alias("t").merge(source, "t.key = s.key").withSchemaEvolution()
    merge.whenMatchedUpdate(set={"t.value.b": "s.value.b + 10"}).execute()
    assert [r.asDict(recursive=True) for r in table.toDF().collect()] == [{"key": "A", "value": {"a": 2, "b": 13}}]


def _damage(path: str, files: list[str]) -> dict[str, bytes]:
    """Overwrite data files with bytes that are not Parquet; returns the originals."""
    saved = {}
    for rel in files:
        with open(f"{path}/{rel}", "r+b") as fh:
            saved[rel] = fh.read()
            fh.seek(0)
            fh.write(b"\0" * len(saved[rel]))
    return saved


def _restore(path: str, saved: dict[str, bytes]) -> None:
    for rel, data in saved.items():
        with open(f"{path}/{rel}", "wb") as fh:
            fh.write(data)


def test_merge_reads_and_rewrites_only_files_that_can_match(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    # 4 files with disjoint id ranges: [0, 10), [10, 20), [20, 30), [30, 40)
    data = spark.sparkContext.parallelize([(i, i % 2, "x") for i in range(40)], 4)  # 4 slices, in order
    spark.createDataFrame(data, "id long, g int, v string").write.format("deltalog").mode("append").save(table_path)
    log = DeltaLog.for_table(table_path)
    files = {json.loads(f.stats or "{}")["minValues"]["id"]: f.path for f in log.update().files}
    saved = _damage(table_path, [files[0], files[20], files[30]])
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(12, "u"), (15, "u"), (17, "u")], "id long, v string")

    # id 12, 15 and 17 are in the second file only: the others are neither read nor rewritten
    table.alias("t").merge(source.alias("s"), "t.id = s.id AND t.g >= 0").whenMatchedUpdate(
        set={"v": "s.v"}
    ).whenNotMatchedInsert(values={"id": "s.id", "g": "0", "v": "s.v"}).execute()
    last = commits(table_path)[-1]
    assert [a["remove"]["path"] for a in last if "remove" in a] == [files[10]]
    metrics = log.history(1)[0].operation_metrics or {}
    assert metrics["numTargetFilesRemoved"] == "1"
    assert metrics["numTargetRowsUpdated"] == "3"
    assert metrics["numTargetRowsCopied"] == "7"
    assert metrics["numTargetBytesRemoved"] == str(os.path.getsize(f"{table_path}/{files[10]}"))

    # a source whose keys fall in no file's range reads no file, and inserts
    far = spark.createDataFrame([(100, "n")], "id long, v string")
    table.alias("t").merge(far.alias("s"), "t.id = s.id").whenMatchedDelete().whenNotMatchedInsert(
        values={"id": "s.id", "g": "1", "v": "s.v"}
    ).execute()
    assert not [a for a in commits(table_path)[-1] if "remove" in a]

    _restore(table_path, saved)
    got = rows(table.toDF(), ["id"])
    expected = [[i, i % 2, "u" if i in (12, 15, 17) else "x"] for i in range(40)] + [[100, 1, "n"]]
    assert got.values.tolist() == expected


def test_matched_only_merge_rewrites_only_files_where_a_clause_acts(spark, table_path):
    """Delta's ``findTouchedFiles`` with only matched clauses: a file whose matched rows meet
    no clause condition is not touched; several source rows matching one target row are
    still refused whatever the clause conditions."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import MergeCardinalityError

    data = spark.sparkContext.parallelize([(i, i * 10) for i in range(4)], 2)  # files {0, 1} and {2, 3}
    spark.createDataFrame(data, "id long, v long").write.format("deltalog").mode("append").save(table_path)
    log = DeltaLog.for_table(table_path)
    by_min = {json.loads(f.stats or "{}")["minValues"]["id"]: f.path for f in log.update().files}
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(0, 1), (2, 500)], "id long, v long").alias("s")
    table.alias("t").merge(source, "t.id = s.id").whenMatchedUpdate("s.v > 100", {"v": "s.v"}).execute()
    assert [a["remove"]["path"] for a in commits(table_path)[-1] if "remove" in a] == [by_min[2]]
    metrics = log.history(1)[0].operation_metrics or {}
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetRowsCopied"]) == ("1", "1")
    assert rows(table.toDF(), ["id"]).values.tolist() == [[0, 0], [1, 10], [2, 500], [3, 30]]

    version = log.update().version
    table.alias("t").merge(source, "t.id = s.id").whenMatchedDelete("s.v < 0").execute()
    assert log.update().version == version  # no row is acted on: no file is rewritten

    twice = spark.createDataFrame([(1, 1), (1, 2)], "id long, v long").alias("s")
    with pytest.raises(MergeCardinalityError):
        table.alias("t").merge(twice, "t.id = s.id").whenMatchedUpdate("s.v > 100", {"v": "s.v"}).execute()


def test_merge_prunes_partitions_by_the_source_keys(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    df = spark.createDataFrame([(i, f"p{i % 3}") for i in range(9)], "id long, p string")
    df.repartition(1).write.format("deltalog").mode("append").option("partitionBy", "p").save(table_path)
    log = DeltaLog.for_table(table_path)
    by_part = {f.partition_values["p"]: f.path for f in log.update().files}
    saved = _damage(table_path, [by_part["p0"], by_part["p2"]])
    source = spark.createDataFrame([(1, "p1"), (4, "p1")], "id long, p string")
    DeltaTable.forPath(spark, table_path).alias("t").merge(
        source.alias("s"), "t.p = s.p AND t.id = s.id"
    ).whenMatchedDelete().execute()
    assert [a["remove"]["path"] for a in commits(table_path)[-1] if "remove" in a] == [by_part["p1"]]
    _restore(table_path, saved)
    got = rows(spark.read.format("deltalog").load(table_path), ["id"])
    assert got.id.tolist() == [0, 2, 3, 5, 6, 7, 8]


def test_merge_with_not_matched_by_source_clauses_reads_every_partition(spark, table_path):
    """No pruning by the source's key ranges: a by-source clause acts on target rows in
    partitions no source key reaches, so every file is read (and recorded as read)."""
    from deltalog.contrib.spark import DeltaTable

    df = spark.createDataFrame([(i, f"p{i % 3}") for i in range(6)], "id long, p string")
    df.repartition(1).write.format("deltalog").mode("append").option("partitionBy", "p").save(table_path)
    source = spark.createDataFrame([(1, "p1")], "id long, p string")
    DeltaTable.forPath(spark, table_path).alias("t").merge(
        source.alias("s"), "t.p = s.p AND t.id = s.id"
    ).whenNotMatchedBySourceDelete().execute()
    assert rows(spark.read.format("deltalog").load(table_path), ["id"]).id.tolist() == [1]
    assert len([a for a in commits(table_path)[-1] if "remove" in a]) == 3


def test_condition_terms_take_only_top_level_conjuncts():
    types = {"id": "long", "p": "string", "d": "date"}
    found = condition_terms("t.id = s.id AND (t.p = 'a') AND t.d >= '2024-01-02' AND 3 < t.id", "t", types, ["id"])
    assert found.key_pairs == [("id", "id")]
    assert found.literal_terms[0] == ("p", "=", "a")
    assert found.literal_terms[1][0:2] == ("d", ">=") and str(found.literal_terms[1][2]) == "2024-01-02"
    assert found.literal_terms[2] == ("id", ">", 3)
    # an AND under OR, BETWEEN or CASE is no conjunction; functions and casts are left out
    for text in (
        "t.id = s.id AND t.p = 'a' OR t.p = 'b'",
        "t.id BETWEEN 1 AND t.id = s.id",
        "CASE WHEN t.p = 'a' AND t.id = s.id THEN true END",
    ):
        found = condition_terms(text, "t", types, ["id"])
        assert not found.key_pairs and not found.literal_terms, text
    found = condition_terms("t.id = s.id AND lower(t.p) = 'a' AND t.id <=> 5 AND t.p = 5", "t", types, ["id"])
    assert found.key_pairs == [("id", "id")] and not found.literal_terms
    # text the tokenizer does not know (arithmetic) gives no term at all
    assert condition_terms("t.id + 1 = s.id", "t", types, ["id"]).key_pairs == []
    assert condition_terms("t.id = s.id AND t.p = 5", "t", types, ["id"]).literal_terms == []


def test_a_merge_without_clauses_is_refused_before_it_opens_a_transaction():
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.merge import DeltaMergeBuilder

    # neither the table nor the source is touched: the MERGE is refused as written
    with pytest.raises(DeltaAnalysisError, match="at least one"):
        DeltaMergeBuilder(None, None, "t.id = s.id").execute()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "kind"),
    [
        (lambda m: m.whenMatchedDelete().whenMatchedUpdate("s.v > 0", {"v": "s.v"}), "MATCHED"),
        (lambda m: m.whenNotMatchedInsertAll().whenNotMatchedInsertAll("s.v > 0"), "NOT_MATCHED_BY_TARGET"),
        (
            lambda m: m.whenNotMatchedBySourceDelete().whenNotMatchedBySourceDelete("t.v > 0"),
            "NOT_MATCHED_BY_SOURCE",
        ),
    ],
)
def test_only_the_last_clause_of_a_kind_may_omit_its_condition(build, kind):
    """Spark's ``NON_LAST_*_CLAUSE_OMIT_CONDITION``: a clause after an unconditional one of its
    kind could never act; the MERGE is refused before it opens a transaction."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.merge import DeltaMergeBuilder

    with pytest.raises(DeltaAnalysisError, match=f"NON_LAST_{kind}_CLAUSE_OMIT_CONDITION: .*only the last"):
        build(DeltaMergeBuilder(None, None, "t.id = s.id")).execute()  # type: ignore[arg-type]


def test_not_matched_by_source_clauses_may_use_only_target_columns(spark, table_path):
    """Delta resolves a ``whenNotMatchedBySource*`` clause against the target only: a
    source column there is DELTA_MERGE_UNRESOLVED_EXPRESSION, not a null (the row has no source
    row), and an unqualified name is the target's column even when the source has one of that
    name (MergeIntoSchemaEvolutionSuite's "new column with insert * and conditional update not
    matched by source"). MergeIntoNotMatchedBySourceSuite's analysis errors: an unknown name, an
    aggregate (DELTA_AGGREGATION_NOT_SUPPORTED); a NOT MATCHED clause sees the source only."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    spark.createDataFrame([(1, 10), (2, 20)], "id long, v long").write.format("deltalog").mode("append").save(
        table_path
    )
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(1, 5)], "id long, w long").alias("s")
    unresolved = "DELTA_MERGE_UNRESOLVED_EXPRESSION: Cannot resolve "
    for build, error in (
        (lambda m: m.whenNotMatchedBySourceUpdate(set={"v": "s.w"}), "s.w in UPDATE clause given columns t.id, t.v."),
        (lambda m: m.whenNotMatchedBySourceDelete("s.w > 0"), "s.w in DELETE condition given columns t.id, t.v."),
        (lambda m: m.whenNotMatchedBySourceDelete("nope > 1"), "nope in DELETE condition"),
        (lambda m: m.whenNotMatchedInsert("t.v > 0", {"id": "s.id"}), "t.v in INSERT condition given columns id, w."),
        (lambda m: m.whenMatchedUpdate("nope > 1", {"v": "1"}), "nope in UPDATE condition given columns id, w, t.id"),
    ):
        with pytest.raises(DeltaAnalysisError) as info:
            build(table.alias("t").merge(source, "t.id = s.id")).execute()
        assert unresolved + error in str(info.value)
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_AGGREGATION_NOT_SUPPORTED: .* UPDATE condition of MERGE"):
        table.alias("t").merge(source, "t.id = s.id").whenNotMatchedBySourceUpdate("max(0) > 0", {"v": "1"}).execute()
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_AGGREGATION_NOT_SUPPORTED: .* search condition of MERGE"):
        table.alias("t").merge(source, "t.id = s.id AND max(0) > 0").whenMatchedDelete().execute()
    table.alias("t").merge(source, "t.id = s.id").whenNotMatchedBySourceUpdate("v > 15", {"v": "t.v + 1"}).execute()
    assert rows(table.toDF(), ["id"]).values.tolist() == [[1, 10], [2, 21]]
    same_names = spark.createDataFrame([(1, 7), (3, 30)], "id long, v long").alias("s")
    table.alias("t").merge(same_names, "t.id = s.id").whenNotMatchedInsertAll().whenNotMatchedBySourceUpdate(
        "id > 1 AND v > 15", {"v": "v + 1"}
    ).whenNotMatchedBySourceDelete("v < 0").execute()
    assert rows(table.toDF(), ["id"]).values.tolist() == [[1, 10], [2, 22], [3, 30]]


def test_merge_writes_one_file_per_touched_partition(spark, table_path):
    """Delta's ``merge.repartitionBeforeWrite`` (on by default): the MERGE's output is
    repartitioned by the partition columns, so each touched partition gets one new file
    rather than one per shuffle task; turned off, the shuffle tasks each write theirs."""
    from deltalog.contrib.spark import DeltaTable

    data = [(i, f"p{i % 2}", i) for i in range(40)]
    spark.createDataFrame(spark.sparkContext.parallelize(data, 4), "id long, p string, v long").write.format(
        "deltalog"
    ).mode("append").option("partitionBy", "p").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(i, f"p{i % 2}", -i) for i in range(0, 40, 3)], "id long, p string, v long")

    def merge() -> list[dict[str, Any]]:
        table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
        return [a["add"] for a in commits(table_path)[-1] if "add" in a]

    adds = merge()
    assert sorted(a["partitionValues"]["p"] for a in adds) == ["p0", "p1"]
    assert sorted(rows(table.toDF(), ["id"]).v) == sorted(-i if i % 3 == 0 else i for i in range(40))
    # Turned off, the join's own partitioning decides: a sort-merge join over 4 shuffle partitions,
    # none coalesced or broadcast, so the number of output tasks does not depend on file packing.
    settings = {
        "spark.databricks.delta.merge.repartitionBeforeWrite.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
    }
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        assert len(merge()) > 2  # each shuffle task wrote its own file per partition
    finally:
        for key, value in before.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)


def test_repartitioned_merge_counts_and_writes_only_the_kept_rows(spark, table_path):
    """Pass 2 counts the rows per clause and drops the deleted target rows and the source
    rows no insert clause takes before ``repartitionBeforeWrite``'s shuffle: the metrics
    count every row once, the deleted and dropped rows are in no file, and each touched
    partition still gets one file."""
    from deltalog.contrib.spark import DeltaTable

    data = [(i, f"p{i % 2}", i) for i in range(20)]
    spark.createDataFrame(spark.sparkContext.parallelize(data, 4), "id long, p string, v long").write.format(
        "deltalog"
    ).mode("append").option("partitionBy", "p").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    # matched: ids 0, 2, ..., 18 (all of p0's rows); unmatched: 20..29, inserted when a multiple of 4
    source = spark.createDataFrame(
        [(i, "p0" if i < 20 else f"p{i % 3}", -i) for i in range(0, 30, 2)] + [(i, "p2", -i) for i in range(21, 30, 2)],
        "id long, p string, v long",
    )
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete(condition="t.id < 6")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll(condition="s.id % 4 = 0")
        .execute()
    )
    expected = {i: (f"p{i % 2}", i) for i in range(20) if not (i % 2 == 0 and i < 6)}
    expected.update({i: ("p0", -i) for i in range(6, 20, 2)})
    expected.update({i: (f"p{i % 3}", -i) for i in (20, 24, 28)})
    got = rows(table.toDF(), ["id"])
    assert {r.id: (r.p, r.v) for r in got.itertuples()} == expected
    actions = commits(table_path)[-1]
    metrics = next(a["commitInfo"]["operationMetrics"] for a in actions if "commitInfo" in a)
    assert {k: metrics[k] for k in ("numTargetRowsDeleted", "numTargetRowsUpdated", "numTargetRowsInserted")} == {
        "numTargetRowsDeleted": "3",
        "numTargetRowsUpdated": "7",
        "numTargetRowsInserted": "3",
    }
    assert metrics["numTargetRowsCopied"] == "0"  # only p0's file was touched, and all its rows were matched
    assert metrics["numOutputRows"] == "10"
    adds = [a["add"] for a in actions if "add" in a]
    # one file per partition the output has rows in: p0 (the updates, 24), p1 (28), p2 (20)
    assert sorted(a["partitionValues"]["p"] for a in adds) == ["p0", "p1", "p2"]
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 10

    # a MERGE that writes no row (it deletes every row of the files it touches): adaptive
    # execution drops the empty stages after the shuffle, with the one that counted the rows
    # (Observation.get failed); the rows are still counted
    table.alias("t").merge(
        spark.createDataFrame([("p1",)], "p string").alias("s"), "t.p = s.p"
    ).whenMatchedDelete().execute()
    metrics = next(a["commitInfo"]["operationMetrics"] for a in commits(table_path)[-1] if "commitInfo" in a)
    assert (metrics["numTargetRowsDeleted"], metrics["numOutputRows"]) == ("11", "0")
    assert sorted(r.p for r in rows(table.toDF(), ["id"]).itertuples()) == ["p0"] * 8 + ["p2"]


def test_source_is_evaluated_once_for_all_passes(spark, table_path):
    """Delta's materializeSource: the pruning ranges, pass 1 and pass 2 read one evaluation of
    the source (``none`` evaluates it per pass); a cached source is left as the user cached it."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.merge_source import MATERIALIZE_SOURCE

    spark.range(20).withColumn("v", F.lit(0)).write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    evaluations = spark.sparkContext.accumulator(0)

    def counted(i):  # type: ignore[no-untyped-def]  # no hints: PySpark would read them as a pandas UDF
        evaluations.add(1)
        return i

    key = F.udf(counted, "long")
    source = spark.range(5, 10).select(key("id").alias("id"), F.lit(1).alias("v"))
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    assert evaluations.value == 5
    assert not source.is_cached and not source.storageLevel.useMemory  # released after the MERGE
    spark.conf.set(MATERIALIZE_SOURCE, "none")
    try:
        table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    finally:
        spark.conf.unset(MATERIALIZE_SOURCE)
    assert evaluations.value > 10  # once per pass
    assert rows(table.toDF(), ["id"]).v.tolist() == [0] * 5 + [1] * 5 + [0] * 10


def test_a_lost_materialized_source_restarts_the_merge_then_fails_with_delta_error(spark, tmp_path, monkeypatch):
    """Delta's MergeIntoMaterializeSourceErrorTests: the source is materialized so that no
    pass evaluates it again; when its blocks are lost (an executor gone) after pass 1, the
    MERGE restarts from the beginning on a fresh materialization (never joining pass 2 with
    another evaluation of the source: here a source that changed since pass 1, whose rows would
    otherwise be inserted next to the target rows they match), and after
    ``...materializeSource.maxAttempts`` losses fails with
    ``DELTA_MERGE_MATERIALIZE_SOURCE_FAILED_REPEATEDLY``, committing nothing."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.merge import DeltaMergeBuilder
    from deltalog.errors import MergeMaterializeSourceFailedError

    table_path, key_file = str(tmp_path / "t"), tmp_path / "key"
    spark.range(0, 4, 1, 4).withColumn("v", F.lit(0)).write.format("deltalog").mode("append").save(table_path)
    key_file.write_text("1")
    read_key = F.udf(lambda _: int(key_file.read_text()), "long")  # a source over changing data
    source = spark.range(1).select(read_key("id").alias("id"), F.lit(1).alias("v"))
    losses = {"left": 1}
    find_touched = DeltaMergeBuilder._find_touched

    def lose_source_after_pass_1(self, plan):  # type: ignore[no-untyped-def]
        touched = find_touched(self, plan)
        if losses["left"] > 0:
            losses["left"] -= 1
            key_file.write_text("2")
            for rdd in spark.sparkContext._jsc.getPersistentRDDs().values():
                rdd.unpersist(True)
        return touched

    monkeypatch.setattr(DeltaMergeBuilder, "_find_touched", lose_source_after_pass_1)
    table = DeltaTable.forPath(spark, table_path)

    def merge() -> None:
        merge = table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll()
        merge.whenNotMatchedInsertAll().execute()

    merge()
    assert [(r.id, r.v) for r in table.toDF().orderBy("id").collect()] == [(0, 0), (1, 0), (2, 1), (3, 0)]
    versions = len(commits(table_path))
    losses["left"] = 2
    spark.conf.set("spark.databricks.delta.merge.materializeSource.maxAttempts", "2")
    try:
        with pytest.raises(MergeMaterializeSourceFailedError, match="DELTA_MERGE_MATERIALIZE_SOURCE_FAILED_REPEATEDLY"):
            merge()
    finally:
        spark.conf.unset("spark.databricks.delta.merge.materializeSource.maxAttempts")
    assert len(commits(table_path)) == versions


def test_an_insert_only_merge_pruned_by_source_keys_inserts_the_rows_it_pruned_for(spark, tmp_path, monkeypatch):
    """An insert-only MERGE reads its source twice here (the key ranges that prune the target
    files, then the rows it inserts; Delta's reads it once): ``auto`` materializes it, so a
    source that changed in between cannot insert a row whose target match was pruned away."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.merge import DeltaMergeBuilder

    table_path, key_file = str(tmp_path / "t"), tmp_path / "key"
    spark.range(0, 4, 1, 4).withColumn("v", F.lit(0)).write.format("deltalog").mode("append").save(table_path)
    key_file.write_text("100")
    read_key = F.udf(lambda _: int(key_file.read_text()), "long")  # a source over changing data
    source = spark.range(1).select(read_key("id").alias("id"), F.lit(1).alias("v"))
    insert_only = DeltaMergeBuilder._insert_only

    def source_changes_after_pruning(self, plan):  # type: ignore[no-untyped-def]
        key_file.write_text("2")
        return insert_only(self, plan)

    monkeypatch.setattr(DeltaMergeBuilder, "_insert_only", source_changes_after_pruning)
    table = DeltaTable.forPath(spark, table_path)
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    assert [(r.id, r.v) for r in table.toDF().orderBy("id").collect()] == [(0, 0), (1, 0), (2, 0), (3, 0), (100, 1)]


def test_the_materialized_source_keeps_the_join_hints_of_the_source(spark):
    """Delta's ``addHintsToPlan`` ("materialize source preserves dataframe hints"): hints at
    the top of the source's plan are put back on its materialization, the top one outermost."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.merge_source import _with_source_hints

    source = F.broadcast(spark.range(3)).alias("s").hint("merge")
    kept = _with_source_hints(source, spark.range(3))._jdf.queryExecution().analyzed().toString()
    assert kept.index("strategy=merge") < kept.index("strategy=broadcast")
    inner = spark.range(3).join(F.broadcast(spark.range(3)), "id")  # a hint inside: not the source's
    assert "strategy" not in _with_source_hints(inner, spark.range(3))._jdf.queryExecution().analyzed().toString()


def test_current_time_calls_are_replaced_outside_literals_and_quoted_names():
    from deltalog.contrib.spark.merge_time import substitute_current_time

    literals = {"now": "TS", "current_timestamp": "TS", "current_date": "D", "curdate": "D", "unix_timestamp": "U"}
    sub = functools.partial(substitute_current_time, literals=literals, columns=frozenset({"current_date"}))
    assert (
        sub("s.ts = now() AND t.d < CURRENT_DATE ( ) AND x = current_timestamp") == "s.ts = TS AND t.d < D AND x = TS"
    )
    assert sub("'now()' = `now()` AND \"current_timestamp\" = s.now AND t.now = 1") == (
        "'now()' = `now()` AND \"current_timestamp\" = s.now AND t.now = 1"
    )
    assert sub("current_date = curdate() AND unix_timestamp() > unix_timestamp(t.s)") == (
        "current_date = D AND U > unix_timestamp(t.s)"  # a bare current_date is the column of that name
    )


def test_one_current_time_for_the_whole_merge(spark, tmp_path):
    """Delta's ``MergeIntoTimestampConsistencySuite``: ``now()`` in the search condition, a
    clause's condition or value, a NOT MATCHED BY SOURCE value and a subquery of the source is
    one instant with the source's ``current_timestamp()`` columns, whichever pass reads them."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.merge_source import MATERIALIZE_SOURCE

    def table(name: str) -> tuple[Any, str]:
        path = str(tmp_path / name)
        target = spark.range(0, 5).withColumn("updated", F.lit(False))
        target = target.withColumn("one", F.timestamp_seconds(F.lit(1))).withColumn(
            "two", F.timestamp_seconds(F.lit(2))
        )
        target.write.format("deltalog").mode("append").save(path)
        return DeltaTable.forPath(spark, path).alias("t"), path

    source = spark.range(0, 10).withColumn("updated", F.lit(True))
    source = source.withColumn("one", F.current_timestamp()).withColumn("two", F.current_timestamp()).alias("s")
    t, path = table("on")
    t.merge(source, "s.id = t.id AND s.one = now()").whenMatchedUpdateAll().execute()
    assert all(r.updated for r in spark.read.format("deltalog").load(path).collect())
    t, path = table("clauses")
    spark.conf.set(MATERIALIZE_SOURCE, "none")  # the source is read again in each pass
    try:
        merge = t.merge(source, "s.id = t.id").whenMatchedUpdate(
            "s.one = now() AND s.two = current_timestamp()", {"updated": "s.updated", "one": "s.one", "two": "now()"}
        )
        merge.whenNotMatchedInsert("s.one = now()", {"id": "s.id", "updated": "true", "one": "now()", "two": "s.two"})
        merge.execute()
    finally:
        spark.conf.unset(MATERIALIZE_SOURCE)
    got = spark.read.format("deltalog").load(path).collect()
    assert len(got) == 10 and all(r.updated for r in got) and len({r.one for r in got} | {r.two for r in got}) == 1
    t, path = table("by_source")
    now = source.where("one IN (SELECT now())").where("id < 3")
    t.merge(now, "s.id = t.id").whenMatchedUpdate(set={"one": "s.one"}).whenNotMatchedBySourceUpdate(
        set={"one": F.current_timestamp()}
    ).execute()
    assert len({r.one for r in spark.read.format("deltalog").load(path).collect()}) == 1


def _key_values(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=lambda r: tuple((v is None, str(v)) for v in r))


#: Delta's own MERGE test cases (suite - test name), translated to the builder: (target schema,
#: target rows, partition column, source schema, source rows, condition, clauses, schema evolution,
#: expected columns, expected rows)
DELTA_MERGE_CASES: dict[str, tuple[Any, ...]] = {
    # MergeIntoSuiteBase - "null value in both source and target": null never matches with `=`
    "null keys": (
        "key int, value int",
        [(1, 1), (None, None)],
        "key",
        "key int, value int",
        [(1, 10), (2, 20), (None, 0)],
        "s.key = t.key",
        lambda m: m.whenMatchedUpdate(set={"t.value": "s.value"}).whenNotMatchedInsert(
            values={"t.key": "s.key", "t.value": "s.value"}
        ),
        False,
        ("key", "value"),
        [(None, None), (1, 10), (2, 20), (None, 0)],
    ),
    # MergeIntoSuiteBase - "unlimited clauses - 2 update + 2 delete + 4 insert": first clause wins
    "clauses in order": (
        "key int, value int",
        [(0, 0), (1, 10), (2, 20), (3, 30), (4, 40)],
        None,
        "key int, value int",
        [(i, i * 100) for i in range(1, 10)],
        "s.key = t.key",
        lambda m: (
            m.whenMatchedUpdate("s.key == 1", {"key": "s.key", "value": "s.value"})
            .whenMatchedDelete("s.key == 2")
            .whenMatchedUpdate("s.key == 3", {"key": "s.key", "value": "2 * s.value"})
            .whenMatchedDelete()
            .whenNotMatchedInsert("s.key == 5", {"key": "s.key", "value": "s.value"})
            .whenNotMatchedInsert("s.key == 6", {"key": "s.key", "value": "1 + s.value"})
            .whenNotMatchedInsert("s.key == 7", {"key": "s.key", "value": "2 + s.value"})
            .whenNotMatchedInsert(values={"key": "s.key", "value": "3 + s.value"})
        ),
        False,
        ("key", "value"),
        [(0, 0), (1, 100), (3, 600), (5, 500), (6, 601), (7, 702), (8, 803), (9, 903)],
    ),
    # MergeIntoSuiteBase - "delete + insert with multiple matches for both": an unconditional
    # delete is the one matched clause several source rows may meet; inserts are not deduplicated
    "unconditional delete with multiple matches": (
        "key int, value int",
        [(1, 1), (2, 2)],
        "key",
        "key int, value int",
        [(1, 10), (1, 100), (3, 30), (3, 300)],
        "s.key = t.key",
        lambda m: m.whenMatchedDelete().whenNotMatchedInsertAll(),
        False,
        ("key", "value"),
        [(2, 2), (3, 30), (3, 300)],
    ),
    # MergeIntoSuiteBase - "star syntax - multiples columns and extra columns in source", with the
    # source's columns in another order and case: updateAll/insertAll match names case-insensitively
    "star by name": (
        "key string, value int, value2 int",
        [("a", 1, 1), ("b", 2, 2)],
        None,
        "VALUE2 int, Value int, KEY string, value3 int",
        [(100, 10, "a", 1000), (300, 30, "c", 3000)],
        "s.KEY = t.key",
        lambda m: m.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
        False,
        ("key", "value", "value2"),
        [("a", 10, 100), ("b", 2, 2), ("c", 30, 300)],
    ),
    # MergeIntoSchemaEvolutionSuite - "star expansion with names including dots" (was an error:
    # the source column `value.with.dots` was taken for a struct's field)
    "star with dotted names": (
        "key int, `value.with.dots` int",
        [(0, 0), (1, 10), (3, 30)],
        None,
        "key int, `value.with.dots` int, `extra.dotted` string",
        [(1, 1, "extra1"), (2, 2, "extra2")],
        "t.key = s.key",
        lambda m: m.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
        True,
        ("key", "value.with.dots", "extra.dotted"),
        [(0, 0, None), (1, 1, "extra1"), (2, 2, "extra2"), (3, 30, None)],
    ),
    # MergeIntoSchemaEvolutionSuite - "new nested source field added when updating top-level
    # column" (was an error: only updateAll/insertAll evolved a struct)
    "struct evolution by set": (
        "key string, value struct<a:int>",
        [("A", (1,)), ("B", (5,))],
        None,
        "key string, value struct<a:int,b:int>",
        [("A", (2, 3))],
        "t.key = s.key",
        lambda m: m.whenMatchedUpdate(set={"value": "s.value"}),
        True,
        ("key", "value"),
        [("A", (2, 3)), ("B", (5, None))],
    ),
}


@pytest.mark.parametrize("case", list(DELTA_MERGE_CASES))
def test_merge_agrees_with_deltas_merge_suites(spark, table_path, case):
    """A few of Delta's MERGE test cases that real pipelines hit, with Delta's expected rows."""
    from deltalog.contrib.spark import DeltaTable

    target_schema, target, partition, source_schema, source, condition, build, evolve, columns, expected = (
        DELTA_MERGE_CASES[case]
    )
    write = spark.createDataFrame(target, target_schema).write.format("deltalog").mode("append")
    (write.option("partitionBy", partition) if partition else write).save(table_path)
    merge = (
        DeltaTable.forPath(spark, table_path)
        .alias("t")
        .merge(spark.createDataFrame(source, source_schema).alias("s"), condition)
    )
    build(merge.withSchemaEvolution() if evolve else merge).execute()
    got = spark.read.format("deltalog").load(table_path)
    assert tuple(got.columns) == columns
    assert _key_values([tuple(r) for r in got.collect()]) == _key_values(expected)


def test_merge_into_a_target_with_no_columns(spark, tmp_path):
    """MergeIntoEmptySchemaTargetSuite: a table with no columns (Delta's ``CREATE TABLE t USING
    delta``) is refused without schema evolution (``DELTA_MERGE_INTO_EMPTY_SCHEMA_TARGET``,
    nothing committed), and takes the source's schema with it."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "empty")
    os.makedirs(os.path.join(path, "_delta_log"))
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "e1",
                "format": {"provider": "parquet", "options": {}},
                "partitionColumns": [],
                "schemaString": '{"type":"struct","fields":[]}',
                "configuration": {},
            }
        },
    ]
    with open(os.path.join(path, "_delta_log", f"{0:020}.json"), "w") as out:
        out.write("\n".join(json.dumps(a) for a in actions) + "\n")
    source = spark.createDataFrame([(1, "a"), (2, "b")], "id int, name string").alias("s")
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(Exception, match="DELTA_MERGE_INTO_EMPTY_SCHEMA_TARGET"):
        table.alias("t").merge(source, "false").whenNotMatchedInsertAll().execute()
    assert len(commits(path)) == 1
    table.alias("t").merge(source, "false").whenNotMatchedInsertAll().withSchemaEvolution().execute()
    got = table.toDF()
    assert got.schema.simpleString() == "struct<id:int,name:string>" and sorted(got.collect()) == [(1, "a"), (2, "b")]
