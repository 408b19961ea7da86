"""DELETE and UPDATE with deletion vectors (merge-on-read): the touched files keep their
data and get a deletion vector; only new versions of updated rows are written; deltalog's
native and Python read paths and delta-rs read the same rows."""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from deltalog.txn.protocol.actions import decode_path
from tests.spark.helpers import commits, operations

pytestmark = pytest.mark.spark

DV = {"delta.enableDeletionVectors": "true"}


def _dv_table(spark: Any, path: str, **properties: str) -> pd.DataFrame:
    """A DV table of ids 0-39 in four files (0-9, 10-19, ...); the same rows in pandas."""
    from deltalog.contrib.spark import DeltaTable

    builder = DeltaTable.create(spark).location(path).addColumn("id", "long").addColumn("v", "string")
    for k, v in {**DV, **properties}.items():
        builder = builder.property(k, v)
    builder.execute()
    data = [(i, f"v{i}") for i in range(40)]
    rdd = spark.sparkContext.parallelize(data, 4)
    spark.createDataFrame(rdd, "id long, v string").write.format("deltalog").mode("append").save(path)
    return pd.DataFrame(data, columns=["id", "v"])


def _parquet_files(path: str) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, n), path)
        for d, _, names in os.walk(path)
        for n in names
        if n.endswith(".parquet") and "_delta_log" not in d and "_change_data" not in d
    }


def _file_holding(path: str, id_: int) -> str:
    from deltalog.txn.delta_log import DeltaLog

    for f in DeltaLog.for_table(path).update().files:
        stats = json.loads(f.stats or "{}")
        if stats["minValues"]["id"] <= id_ <= stats["maxValues"]["id"]:
            return decode_path(f.path)
    raise AssertionError(f"no file holds {id_}")


def _last_commit(path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    last = commits(path)[-1]
    removes = [a["remove"] for a in last if "remove" in a]
    adds = [a["add"] for a in last if "add" in a]
    info = next(a["commitInfo"] for a in last if "commitInfo" in a)
    return removes, adds, info["operationMetrics"]


def _all_readers_agree(spark: Any, path: str, expected: pd.DataFrame) -> None:
    import deltalake

    from deltalog.contrib.spark import DeltaTable

    want = expected.sort_values("id").reset_index(drop=True)
    native = DeltaTable.forPath(spark, path).toDF().toPandas()
    python = spark.read.format("deltalog").load(path).toPandas()
    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute("select id, v from t")
    delta_rs = pa.table(result.read_all()).to_pandas()
    for name, got in (("native", native), ("python", python), ("delta-rs", delta_rs)):
        got = got[["id", "v"]].sort_values("id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want, check_dtype=False, obj=name)


def test_delete_marks_rows_and_a_second_delete_merges_the_dv(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.delta_log import DeltaLog

    expected = _dv_table(spark, table_path)
    proto = DeltaLog.for_table(table_path).update().protocol
    assert "deletionVectors" in (proto.writer_features or ())
    target = _file_holding(table_path, 15)
    before = _parquet_files(table_path)
    table = DeltaTable.forPath(spark, table_path)

    table.delete("id >= 15 AND id < 18")
    expected = expected[~expected.id.between(15, 17)]
    removes, adds, metrics = _last_commit(table_path)
    assert [decode_path(r["path"]) for r in removes] == [decode_path(a["path"]) for a in adds] == [target]
    assert "deletionVector" not in removes[0] and adds[0]["dataChange"] is True
    assert adds[0]["deletionVector"]["cardinality"] == 3
    assert json.loads(adds[0]["stats"])["tightBounds"] is False
    assert _parquet_files(table_path) == before  # no data file written
    assert metrics["numDeletedRows"] == "3" and metrics["numDeletionVectorsAdded"] == "1"
    assert metrics["numAddedFiles"] == "0" and metrics["numRemovedFiles"] == "0"
    _all_readers_agree(spark, table_path, expected)

    first_dv = adds[0]["deletionVector"]
    table.delete("id = 11 OR id = 16")  # 16 is already deleted
    expected = expected[expected.id != 11]
    removes, adds, metrics = _last_commit(table_path)
    assert removes[0]["deletionVector"] == first_dv
    assert adds[0]["deletionVector"]["cardinality"] == 4
    assert metrics["numDeletedRows"] == "1" and metrics["numDeletionVectorsUpdated"] == "1"
    assert _parquet_files(table_path) == before
    _all_readers_agree(spark, table_path, expected)


def test_update_writes_only_the_changed_rows(spark, table_path):
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    expected = _dv_table(spark, table_path, **{"delta.enableChangeDataFeed": "true"})
    target = _file_holding(table_path, 25)
    before = _parquet_files(table_path)
    table = DeltaTable.forPath(spark, table_path)

    # an aliased table's conditions and values name its columns through the alias, as Delta's
    table.alias("t").update("t.id >= 25 AND t.id <= 26", {"v": F.lit("new")})
    expected.loc[expected.id.between(25, 26), "v"] = "new"
    removes, adds, metrics = _last_commit(table_path)
    assert [decode_path(r["path"]) for r in removes] == [target]
    dv_add = next(a for a in adds if decode_path(a["path"]) == target)
    assert dv_add["deletionVector"]["cardinality"] == 2
    (new_file,) = _parquet_files(table_path) - before  # the two new rows, nothing copied
    new_add = next(a for a in adds if decode_path(a["path"]) == new_file)
    assert json.loads(new_add["stats"])["numRecords"] == 2 and "deletionVector" not in new_add
    assert metrics["numUpdatedRows"] == "2" and metrics["numCopiedRows"] == "0"
    assert metrics["numAddedFiles"] == "1" and metrics["numDeletionVectorsAdded"] == "1"

    # the change feed: the update's pre/post images (change files), then a DV delete's rows
    table.delete("id = 3")
    expected = expected[expected.id != 3]
    changes = (
        spark.read.format("deltalog")
        .option("readChangeFeed", "true")
        .option("startingVersion", 2)
        .load(table_path)
        .select("id", "v", "_change_type")
        .toPandas()
        .sort_values(["id", "_change_type"])
    )
    assert changes.values.tolist() == [
        [3, "v3", "delete"],
        [25, "new", "update_postimage"],
        [25, "v25", "update_preimage"],
        [26, "new", "update_postimage"],
        [26, "v26", "update_preimage"],
    ]
    _all_readers_agree(spark, table_path, expected)


def test_persistent_switch_off_rewrites_files(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    expected = _dv_table(spark, table_path)
    target = _file_holding(table_path, 5)
    spark.conf.set("spark.databricks.delta.delete.deletionVectors.persistent", "false")
    try:
        DeltaTable.forPath(spark, table_path).delete("id = 5")
    finally:
        spark.conf.unset("spark.databricks.delta.delete.deletionVectors.persistent")
    removes, adds, _ = _last_commit(table_path)
    assert [decode_path(r["path"]) for r in removes] == [target]
    assert len(adds) == 1 and decode_path(adds[0]["path"]) != target and "deletionVector" not in adds[0]
    _all_readers_agree(spark, table_path, expected[expected.id != 5])


def test_merge_marks_updated_and_deleted_rows_and_writes_only_new_rows(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.delta_log import DeltaLog

    expected = _dv_table(spark, table_path)
    target = _file_holding(table_path, 32)
    before = _parquet_files(table_path)
    source = spark.createDataFrame([(32, "upd"), (33, "del"), (100, "ins")], "id long, v string")
    (
        DeltaTable.forPath(spark, table_path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.v = 'del'")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    expected = expected[expected.id != 33]
    expected.loc[expected.id == 32, "v"] = "upd"
    expected = pd.concat([expected, pd.DataFrame([(100, "ins")], columns=["id", "v"])])
    removes, adds, metrics = _last_commit(table_path)
    assert [decode_path(r["path"]) for r in removes] == [target]
    assert next(a for a in adds if decode_path(a["path"]) == target)["deletionVector"]["cardinality"] == 2
    new_files = _parquet_files(table_path) - before
    new_adds = [a for a in adds if decode_path(a["path"]) in new_files]
    assert sum(json.loads(a["stats"])["numRecords"] for a in new_adds) == 2  # the updated and the inserted row
    assert metrics["numTargetRowsCopied"] == "0" and metrics["numTargetRowsUpdated"] == "1"
    assert metrics["numTargetRowsDeleted"] == "1" and metrics["numTargetRowsInserted"] == "1"
    assert metrics["numTargetDeletionVectorsAdded"] == "1" and metrics["numTargetFilesRemoved"] == "0"
    _all_readers_agree(spark, table_path, expected)

    # MergeIntoDVsSuite "all conditions failed for all rows": rows match, no clause acts on one;
    # with deletion vectors nothing is written, so nothing is committed (Delta's commitIfNeeded)
    versions = len(commits(table_path))
    merge = DeltaTable.forPath(spark, table_path).alias("t").merge(source.alias("s"), "t.id = s.id")
    merge.whenMatchedUpdate("s.id < 0", {"v": "s.v"}).whenNotMatchedInsertAll("s.id < 0").execute()
    assert len(commits(table_path)) == versions

    # REORG ... APPLY (PURGE): the file with the DV is rewritten without its deleted rows
    result = DeltaTable.forPath(spark, table_path).optimize().executePurge().collect()[0]
    assert result["metrics"]["deletionVectorStats"]["numDeletionVectorsRemoved"] == 1
    assert not any(f.deletion_vector for f in DeltaLog.for_table(table_path).update().files)
    assert operations(table_path)[-1] == "REORG"
    _all_readers_agree(spark, table_path, expected)


def test_the_python_reader_finds_the_same_rows_when_the_native_scan_cannot(spark, table_path, monkeypatch):
    from deltalog.contrib.spark import DeltaTable, native
    from deltalog.contrib.spark.errors import NativeReadUnsupportedError

    expected = _dv_table(spark, table_path)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NativeReadUnsupportedError("test: no native scan")

    monkeypatch.setattr(native, "scan_with_positions", refuse)
    DeltaTable.forPath(spark, table_path).delete("id % 7 = 3")
    removes, adds, metrics = _last_commit(table_path)
    assert len(removes) == len(adds) == 4 and all("deletionVector" in a for a in adds)
    assert metrics["numDeletedRows"] == str(sum(1 for i in range(40) if i % 7 == 3))
    _all_readers_agree(spark, table_path, expected[expected.id % 7 != 3])


def test_partitioned_table_delete_and_update_with_deletion_vectors(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.delta_log import DeltaLog

    builder = DeltaTable.create(spark).location(table_path).addColumn("id", "long").addColumn("p", "string")
    builder.addColumn("v", "string").partitionedBy("p").property("delta.enableDeletionVectors", "true").execute()
    data = [(i, "a" if i % 2 else "b", f"v{i}") for i in range(20)]
    spark.createDataFrame(data, "id long, p string, v string").coalesce(1).write.format("deltalog").mode("append").save(
        table_path
    )
    before = _parquet_files(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("p = 'a' AND id > 10")  # partition and data terms: a DV in partition a only
    table.update("id < 4", {"v": "'upd'"})
    files = DeltaLog.for_table(table_path).update().files
    cards = sorted((f.partition_values["p"] or "", f.deletion_vector.cardinality) for f in files if f.deletion_vector)
    assert cards == [("a", 7), ("b", 2)]  # a: 11, 13, 15, 17, 19 deleted and 1, 3 updated
    assert len(_parquet_files(table_path) - before) == 2  # the updated rows, one file per partition
    rows = [(i, p, "upd" if i < 4 else v) for i, p, v in data if not (p == "a" and i > 10)]
    _all_readers_agree(spark, table_path, pd.DataFrame([(i, v) for i, _, v in rows], columns=["id", "v"]))


def test_deletion_vectors_on_a_column_mapped_table(spark, table_path):
    """Databricks' default: column mapping (name) and deletion vectors on one table. DELETE,
    UPDATE and MERGE mark rows by their Parquet positions and write new rows with physical
    names; every reader sees logical names and the same rows."""
    from deltalog.contrib.spark import DeltaTable

    expected = _dv_table(spark, table_path, **{"delta.columnMapping.mode": "name"})
    fields = json.loads(next(a for a in commits(table_path)[0] if "metaData" in a)["metaData"]["schemaString"])
    assert all(f["metadata"]["delta.columnMapping.physicalName"].startswith("col-") for f in fields["fields"])
    table = DeltaTable.forPath(spark, table_path)
    before = _parquet_files(table_path)
    table.delete("id = 3 or id = 25")
    assert _parquet_files(table_path) == before  # no data file written
    expected = expected[~expected.id.isin([3, 25])]
    table.update("id = 12", {"v": "'twelve'"})
    expected.loc[expected.id == 12, "v"] = "twelve"
    source = spark.createDataFrame([(30, "thirty"), (99, "new")], "id long, v string")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    expected.loc[expected.id == 30, "v"] = "thirty"
    expected = pd.concat([expected, pd.DataFrame([(99, "new")], columns=["id", "v"])])
    _all_readers_agree(spark, table_path, expected)
    _, adds, _ = _last_commit(table_path)
    assert any(a.get("deletionVector") for a in adds)  # the matched target row is marked, not copied


def test_dv_dml_on_a_table_with_a_check_constraint_and_a_generated_column(spark, table_path):
    """A DELETE (or a delete-only MERGE) that only marks rows writes no row, so the table's
    CHECK constraints and generated columns have nothing to check: it commits (the engine
    used to take the file re-added with its new deletion vector for new data and refuse)."""
    from deltalog.contrib.spark import DeltaTable

    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long")
        .addColumn("v", "string")
        .addColumn("twice", "long", generatedAlwaysAs="id * 2")
        .property("delta.enableDeletionVectors", "true")
        .property("delta.constraints.id_positive", "id >= 0")
        .execute()
    )
    rows = spark.createDataFrame([(i, f"v{i}") for i in range(6)], "id long, v string")
    rows.coalesce(1).write.format("deltalog").mode("append").save(table_path)
    table.delete("id = 1")
    source = spark.createDataFrame([(2,)], "id long")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete().execute()
    assert [op for op in operations(table_path)][-2:] == ["DELETE", "MERGE"]
    removes, adds, _ = _last_commit(table_path)
    assert [a["path"] for a in adds] == [r["path"] for r in removes] and adds[0]["deletionVector"]
    expected = pd.DataFrame([(i, f"v{i}") for i in (0, 3, 4, 5)], columns=["id", "v"])
    _all_readers_agree(spark, table_path, expected)


def _file_actions_summary(path: str) -> tuple[int, ...]:
    """Delta's ``UpdateSQLWithDeletionVectorsTests`` view of the last commit: adds with a DV
    (count, physical rows, DV rows), physical rows of adds without one; the same for removes."""
    removes, adds, _ = _last_commit(path)

    def rows(actions: list[dict[str, Any]]) -> int:
        return sum(json.loads(a.get("stats") or "{}").get("numRecords", 0) for a in actions)

    add_dv, add_plain = [a for a in adds if a.get("deletionVector")], [a for a in adds if not a.get("deletionVector")]
    rem_dv, rem_plain = (
        [r for r in removes if r.get("deletionVector")],
        [r for r in removes if not r.get("deletionVector")],
    )
    card = lambda actions: sum(a["deletionVector"]["cardinality"] for a in actions)  # noqa: E731
    return (
        len(add_dv), rows(add_dv), card(add_dv), rows(add_plain),
        len(rem_dv), rows(rem_dv), card(rem_dv), rows(rem_plain),
    )  # fmt: skip


def test_repeated_update_with_deletion_vectors_as_delta(spark, table_path):
    """Delta's ``UpdateSQLWithDeletionVectorsTests`` "repeated UPDATE produces deletion
    vectors": the actions and DV metrics of each UPDATE; ``numRemovedFiles`` counts the
    touched files, as ``UpdateCommand``'s ``numTouchedFiles`` (deltalog counted only the
    files fully removed, as DELETE does)."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    DeltaTable.create(spark).location(table_path).addColumn("id", "long").property(*next(iter(DV.items()))).execute()
    spark.range(0, 10, 1, 2).write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    keys = ("numUpdatedRows", "numCopiedRows", "numRemovedFiles", "numAddedFiles")
    keys += ("numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated")
    cases = [  # condition, actions summary, metrics
        ("id % 3 = 0", (2, 10, 4, 4, 0, 0, 0, 10), (4, 0, 2, 1, 2, 0, 0)),
        ("id % 4 = 0", (2, 10, 6, 2, 2, 10, 4, 0), (2, 0, 2, 1, 2, 2, 2)),
        ("id IN (5, 7)", (0, 0, 0, 2, 1, 5, 3, 0), (2, 0, 1, 1, 0, 1, 0)),
    ]
    for condition, summary, metrics in cases:
        table.update(condition, {"id": F.lit(-1)})
        assert _file_actions_summary(table_path) == summary, condition
        got = _last_commit(table_path)[2]
        assert tuple(int(got[k]) for k in keys) == metrics, condition
    assert sorted(r.id for r in table.toDF().collect()) == [-1] * 8 + [1, 2]


def _dv_files(path: str) -> set[str]:
    return {n for n in os.listdir(path) if n.endswith(".bin")}


def test_a_dml_whose_deletion_vector_is_not_written_or_whose_commit_conflicts_leaves_the_table(
    spark, table_path, monkeypatch
):
    """Delta's ``DeletionVectorWriteDurabilitySuite``: a DELETE, UPDATE or MERGE whose DV file
    fails to be written (its close fails, no object) aborts: no version, every row readable,
    no DV referenced. A DML whose commit loses to a concurrent DV DELETE of the same file raises
    the conflict and deletes its DV file; the winner's deleted row stays deleted."""
    from deltalog.contrib.spark import DeltaTable, merge
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError
    from deltalog.txn.log.deletion_vector_writer import DeletionVectorWriter

    expected = _dv_table(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    source = spark.createDataFrame([(1, "x"), (5, "x")], "id long, v string")
    dmls = {
        "delete": lambda: table.delete("id IN (1, 5)"),
        "update": lambda: table.update("id IN (1, 5)", {"v": "'u'"}),
        "merge": lambda: table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete().execute(),
    }

    def failing_close(self: Any, path: str, blob: bytes) -> None:
        raise OSError("injected deletion vector close failure")

    with monkeypatch.context() as patched:
        patched.setattr(DeletionVectorWriter, "_put", failing_close)
        for name, dml in dmls.items():
            with pytest.raises(OSError, match="injected"):
                dml()
            assert len(commits(table_path)) == 2, name
    assert not _dv_files(table_path) and table.toDF().count() == 40

    # a concurrent DV DELETE of the same file commits between this MERGE's plan and its commit
    real = merge.mark_deleted_rows

    def concurrent_delete_first(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(merge, "mark_deleted_rows", real)
        table.delete("id = 7")
        return real(*args, **kwargs)

    monkeypatch.setattr(merge, "mark_deleted_rows", concurrent_delete_first)
    with pytest.raises(ConcurrentAppendError):
        dmls["merge"]()
    assert len(_dv_files(table_path)) == 1  # the winner's; the loser's DV file is deleted
    _all_readers_agree(spark, table_path, expected[expected.id != 7])


_DV_STEPS = [  # DeletionVectorsSuite "Metrics when deleting with DV", its second DELETE as a
    # MERGE (MergeIntoDVsTests "Incremental Updates"): rows deleted, files removed, DVs
    # added / removed / updated, the ids left
    ("delete", "id >= 4", (6, 1, 1, 0, 0), [0, 1, 2, 3]),
    ("merge", "id = 3", (1, 0, 1, 1, 1), [0, 1, 2]),
    ("delete", "id IN (0, 1, 2)", (3, 1, 0, 1, 0), []),
]


def test_dv_delete_and_merge_metrics_and_descriptors_as_delta(spark, table_path):
    """Each step's metrics and rows (native and Python reads) as Delta's; the first DV is
    Delta's: one row in a ``u`` file at offset 1, 34 bytes, the file's statistics kept
    with ``tightBounds=false`` (DeletionVectorsSuite "DELETE with DVs - on a table with no
    prior DVs"); the file whose last row goes is removed, not given a full DV."""
    from deltalog.contrib.spark import DeltaTable

    DeltaTable.create(spark).location(table_path).addColumn("id", "long").property(*next(iter(DV.items()))).execute()
    spark.range(0, 10, 1, 2).write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    stats = {a["add"]["path"]: json.loads(a["add"]["stats"]) for a in commits(table_path)[-1] if "add" in a}
    for command, condition, expected, ids in _DV_STEPS:
        if command == "delete":
            table.delete(condition)
            prefix, keys = "num", ("numDeletedRows", "numRemovedFiles")
        else:
            source = spark.range(3, 4).toDF("id")
            table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete().execute()
            prefix, keys = "numTarget", ("numTargetRowsDeleted", "numTargetFilesRemoved")
        metrics = _last_commit(table_path)[2]
        keys += tuple(
            prefix + name for name in ("DeletionVectorsAdded", "DeletionVectorsRemoved", "DeletionVectorsUpdated")
        )
        assert tuple(int(metrics[k]) for k in keys) == expected, condition
        if command == "merge":  # both read paths apply the updated DV
            assert sorted(r.id for r in table.toDF().collect()) == ids
            assert sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect()) == ids
        if command == "delete" and expected[2]:  # the first step's new DV
            (add,) = _last_commit(table_path)[1]
            dv = add["deletionVector"]
            assert (dv["storageType"], dv["offset"], dv["sizeInBytes"], dv["cardinality"]) == ("u", 1, 34, 1)
            assert json.loads(add["stats"]) == {**stats[add["path"]], "tightBounds": False}
    removes = _last_commit(table_path)[0]
    assert [r["deletionVector"]["cardinality"] for r in removes] == [2]  # the last DV goes with its file


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 2 * 1024 * 1024), ("200", 200), ("64k", 65536), ("2mb", 2 * 1024 * 1024), ("-1", None), ("2gb", None)],
)
def test_dv_packing_target_size_conf(value: str | None, expected: int | None) -> None:
    """Delta's ``spark.databricks.delta.deletionVectors.packing.targetSize``: a byte size,
    2 MiB by default, non-negative and under 1.5 GB (no Spark needed: a stub session)."""
    from types import SimpleNamespace

    from deltalog.contrib.spark.dv_dml import PACKING_TARGET_SIZE_CONF, dv_packing_target_size
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    conf = {} if value is None else {PACKING_TARGET_SIZE_CONF: value}
    session = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: conf.get(key, default)))
    if expected is None:
        with pytest.raises(DeltaAnalysisError, match="less than 1"):
            dv_packing_target_size(session)
    else:
        assert dv_packing_target_size(session) == expected
