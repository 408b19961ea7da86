"""DELETE, UPDATE, MERGE (and a data-column replaceWhere) keep row tracking's stable row ids, as Delta does.

On a table with ``delta.enableRowTracking=true`` Delta's commands write each copied or
updated row's row id (and each copied row's row commit version) into the materialized
columns the table's metadata names (``RowTracking.preserveRowTrackingColumns``), so a row
keeps its id when its file is rewritten; an updated row's commit version becomes the
commit's. Each commit says so with ``commitInfo.tags["delta.rowTracking.preserved"]``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from deltalog.txn.delta_log import DeltaLog

ROWS = [(i, f"v{i}") for i in range(8)]


def _table(spark: Any, path: str, **properties: str) -> None:
    df = spark.createDataFrame(ROWS, "n long, v string").repartition(2, "n")
    writer = df.write.format("deltalog").mode("append").option("delta.enableRowTracking", "true")
    for key, value in properties.items():
        writer = writer.option(key, value)
    writer.save(path)


def _tracked(spark: Any, path: str) -> dict[int, tuple[str, int, int]]:
    """Each row's value, row id and row commit version, by ``n``."""
    df = spark.read.format("deltalog").option("readRowTracking", "true").load(path)
    rows = df.select("n", "v", "_metadata.row_id", "_metadata.row_commit_version").collect()
    return {r["n"]: (r["v"], r["row_id"], r["row_commit_version"]) for r in rows}


def _tracked_natively(spark: Any, path: str) -> dict[int, tuple[str, int, int]]:
    """:func:`_tracked` through ``read_table``'s native scan (Spark's Parquet reader)."""
    from deltalog.contrib.spark import read_table

    df = read_table(spark, path, readRowTracking=True, native=True)
    assert "FileScan parquet" in df._jdf.queryExecution().executedPlan().toString()
    rows = df.select("n", "v", "_metadata.row_id", "_metadata.row_commit_version").collect()
    return {r["n"]: (r["v"], r["row_id"], r["row_commit_version"]) for r in rows}


def _preserved_tag(path: str) -> str | None:
    log_dir = os.path.join(path, "_delta_log")
    last = max(n for n in os.listdir(log_dir) if n.endswith(".json") and n[:20].isdigit())
    with open(os.path.join(log_dir, last)) as fh:
        for line in fh:
            info = json.loads(line).get("commitInfo")
            if info is not None:
                return (info.get("tags") or {}).get("delta.rowTracking.preserved")
    return None


PROPERTIES = {
    "plain": {},
    "deletion vectors": {"delta.enableDeletionVectors": "true"},
    "column mapping": {"delta.columnMapping.mode": "name"},
}


@pytest.fixture(params=list(PROPERTIES), ids=list(PROPERTIES))
def tracked_table(request: Any, spark: Any, table_path: str, tmp_path: Any) -> str:
    # table_path: delta-rs reads the result afterwards (its pyarrow reader refuses column mapping)
    path = str(tmp_path / "mapped") if request.param == "column mapping" else table_path
    _table(spark, path, **PROPERTIES[request.param])
    return path


def test_update_keeps_row_ids_and_the_copied_rows_commit_versions(spark: Any, tracked_table: str) -> None:
    from deltalog.contrib.spark import DeltaTable

    before = _tracked(spark, tracked_table)
    DeltaTable.forPath(spark, tracked_table).update("n = 2", {"v": "'x'"})
    version = DeltaLog.for_table(tracked_table).update().version
    after = _tracked(spark, tracked_table)
    assert {n: row_id for n, (_, row_id, _) in after.items()} == {n: row_id for n, (_, row_id, _) in before.items()}
    assert after[2] == ("x", before[2][1], version)
    assert {n: t for n, t in after.items() if n != 2} == {n: t for n, t in before.items() if n != 2}
    assert _preserved_tag(tracked_table) == "true"
    assert _tracked_natively(spark, tracked_table) == after


def test_delete_keeps_the_copied_rows_ids_and_commit_versions(spark: Any, table_path: str) -> None:
    """(With deletion vectors a DELETE copies no row; under column mapping the rows take
    UPDATE's path, tested above.)"""
    from deltalog.contrib.spark import DeltaTable

    _table(spark, table_path)
    before = _tracked(spark, table_path)
    DeltaTable.forPath(spark, table_path).delete("n = 3")
    after = _tracked(spark, table_path)
    assert after == {n: t for n, t in before.items() if n != 3}
    assert _preserved_tag(table_path) == "true"


def test_merge_keeps_row_ids_of_updated_and_copied_rows(spark: Any, tracked_table: str) -> None:
    from deltalog.contrib.spark import DeltaTable

    before = _tracked(spark, tracked_table)
    source = spark.createDataFrame([(1, "m"), (6, "gone"), (100, "new")], "n long, v string")
    (
        DeltaTable.forPath(spark, tracked_table)
        .alias("t")
        .merge(source.alias("s"), "t.n = s.n")
        .whenMatchedDelete("s.v = 'gone'")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    version = DeltaLog.for_table(tracked_table).update().version
    after = _tracked(spark, tracked_table)
    assert after[1] == ("m", before[1][1], version)
    assert 6 not in after
    assert {n: t for n, t in after.items() if n not in (1, 100)} == {n: t for n, t in before.items() if n not in (1, 6)}
    new_id = after[100][1]
    assert new_id not in {row_id for _, row_id, _ in before.values()} and after[100][2] == version
    assert _preserved_tag(tracked_table) == "true"


def test_row_ids_survive_an_update_then_optimize(spark: Any, table_path: str) -> None:
    from deltalog.contrib.spark import DeltaTable

    _table(spark, table_path)
    before = _tracked(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.update("n >= 4", {"v": "upper(v)"})
    updated = _tracked(spark, table_path)
    table.optimize().executeCompaction()
    assert DeltaLog.for_table(table_path).update().num_files == 1
    after = _tracked(spark, table_path)
    assert after == updated == _tracked_natively(spark, table_path)
    assert {n: row_id for n, (_, row_id, _) in after.items()} == {n: row_id for n, (_, row_id, _) in before.items()}


def test_change_data_files_hold_no_row_tracking_columns(spark: Any, table_path: str) -> None:
    """With the change data feed on, the rewritten data files carry the materialized
    columns and the change data files do not (Delta writes them into data files only)."""
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import DeltaTable

    _table(spark, table_path, **{"delta.enableChangeDataFeed": "true"})
    before = _tracked(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.update("n = 5", {"v": "'five'"})
    source = spark.createDataFrame([(6, "six")], "n long, v string")
    table.alias("t").merge(source.alias("s"), "t.n = s.n").whenMatchedUpdate(set={"v": "s.v"}).execute()
    after = _tracked(spark, table_path)
    assert {n: row_id for n, (_, row_id, _) in after.items()} == {n: row_id for n, (_, row_id, _) in before.items()}
    snapshot = DeltaLog.for_table(table_path).update()
    hidden = set(
        snapshot.metadata.configuration[k]
        for k in (
            "delta.rowTracking.materializedRowIdColumnName",
            "delta.rowTracking.materializedRowCommitVersionColumnName",
        )
    )
    cdc_dir = os.path.join(table_path, "_change_data")
    cdc_files = [os.path.join(cdc_dir, n) for n in os.listdir(cdc_dir) if n.endswith(".parquet")]
    assert cdc_files and all(not hidden & set(pq.read_schema(f).names) for f in cdc_files)
    assert any(hidden <= set(pq.read_schema(os.path.join(table_path, f.path)).names) for f in snapshot.files)
    changes = (
        spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1).load(table_path)
    )
    got = sorted((r["n"], r["v"], r["_change_type"]) for r in changes.collect())
    assert got == [
        (5, "five", "update_postimage"),
        (5, "v5", "update_preimage"),
        (6, "six", "update_postimage"),
        (6, "v6", "update_preimage"),
    ]


def test_replace_where_on_data_columns_keeps_the_copied_rows_ids(spark: Any, table_path: str) -> None:
    _table(spark, table_path)
    before = _tracked(spark, table_path)
    replacement = spark.createDataFrame([(6, "new6")], "n long, v string")
    replacement.write.format("deltalog").mode("overwrite").option("replaceWhere", "n >= 6").save(table_path)
    after = _tracked(spark, table_path)
    assert {n: t for n, t in after.items() if n < 6} == {n: t for n, t in before.items() if n < 6}
    assert after[6][0] == "new6" and after[6][1] not in {row_id for _, row_id, _ in before.values()}
    assert 7 not in after
    assert _preserved_tag(table_path) == "true"


def test_dml_keeps_row_ids_of_a_table_with_a_column_named_metadata(spark: Any, table_path: str) -> None:
    """RowTrackingReadWriteSuite "write and read with conflicting columns": a table may have
    its own ``_metadata`` column; Delta hides its metadata column behind it, and UPDATE,
    MERGE and replaceWhere keep the rows' ids and the column's values (DELETE reads as
    UPDATE does). The DML commands carry the row ids in a column of their own;
    ``readRowTracking``, which adds ``_metadata`` to the DataFrame, refuses such a table (it
    cannot hide its column)."""
    import pyarrow.parquet as pq
    from pyspark.errors import AnalysisException

    from deltalog.contrib.spark import DeltaTable, read_table
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.protocol import row_tracking

    schema = "n long, _metadata struct<row_id: long, row_commit_version: long>"
    rows = [(i, (10 * i, 100 * i)) for i in range(6)]
    spark.createDataFrame(rows, schema).coalesce(1).write.format("deltalog").mode("append").option(
        "delta.enableRowTracking", "true"
    ).save(table_path)
    log = DeltaLog.for_table(table_path)

    def ids() -> dict[int, int]:
        """Each row's stable row id, by ``n``, from the files."""
        names = row_tracking.materialized_columns(log.update().protocol, log.update().metadata)
        assert names is not None
        out = {}
        for f in log.update().files:
            data = pq.read_table(os.path.join(table_path, f.path)).to_pylist()
            for position, row in enumerate(data):
                out[row["n"]] = row.get(names[0]) if row.get(names[0]) is not None else f.base_row_id + position
        return out

    before = ids()
    table = DeltaTable.forPath(spark, table_path)
    table.update("n = 1", {"n": "11"})
    source = spark.createDataFrame([(3,)], "n long")
    table.alias("t").merge(source.alias("s"), "t.n = s.n").whenMatchedUpdate(set={"n": "33"}).execute()
    replacement = spark.createDataFrame([(4, (0, 0))], schema)
    replacement.write.format("deltalog").mode("overwrite").option("replaceWhere", "n = 4").save(table_path)
    got = {r["n"]: tuple(r["_metadata"]) for r in spark.read.format("deltalog").load(table_path).collect()}
    assert got == {0: (0, 0), 11: (10, 100), 2: (20, 200), 33: (30, 300), 4: (0, 0), 5: (50, 500)}
    after = ids()
    assert {n: after[n] for n in (0, 2, 5)} == {n: before[n] for n in (0, 2, 5)}
    assert (after[11], after[33]) == (before[1], before[3])
    with pytest.raises(DeltaAnalysisError, match="has a column named _metadata"):
        read_table(spark, table_path, readRowTracking=True, native=True)  # in the driver
    with pytest.raises(AnalysisException, match="has a column named _metadata"):  # the data source's, wrapped
        spark.read.format("deltalog").option("readRowTracking", "true").load(table_path)
