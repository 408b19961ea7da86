"""The Spark layer's commits report exactly the metric names Delta's operations report
(``DeltaOperationMetrics``): an append, an overwrite and a deletion-vector DELETE."""

from __future__ import annotations

from typing import Any

import pytest

from deltalog.txn.commit import operation_metrics as delta_metrics
from tests.spark.helpers import commits

pytestmark = pytest.mark.spark


def _last_metrics(path: str) -> dict[str, str]:
    info = next(a["commitInfo"] for a in commits(path)[-1] if "commitInfo" in a)
    metrics: dict[str, str] = info["operationMetrics"]
    return metrics


def test_write_and_dv_delete_report_delta_metric_names(spark: Any, table_path: str) -> None:
    from deltalog.contrib.spark import DeltaTable

    DeltaTable.create(spark).location(table_path).addColumn("id", "long").property(
        "delta.enableDeletionVectors", "true"
    ).execute()
    spark.range(0, 6, numPartitions=2).write.format("deltalog").mode("append").save(table_path)
    metrics = _last_metrics(table_path)
    assert set(metrics) == delta_metrics.WRITE
    assert metrics["numFiles"] == "2" and metrics["numOutputRows"] == "6"

    DeltaTable.forPath(spark, table_path).delete("id = 1")
    metrics = _last_metrics(table_path)
    assert set(metrics) == delta_metrics.DELETE  # no numFiles / numOutputBytes: no data file written
    assert metrics["numDeletedRows"] == "1" and metrics["numDeletionVectorsAdded"] == "1"
    assert metrics["numAddedFiles"] == "0" and metrics["numAddedBytes"] == "0"

    spark.range(0, 3, numPartitions=1).write.format("deltalog").mode("overwrite").save(table_path)
    metrics = _last_metrics(table_path)
    assert set(metrics) == delta_metrics.WRITE | delta_metrics.OVERWRITE_REMOVES
    assert metrics["numRemovedFiles"] == "2" and metrics["numOutputRows"] == "3"


def test_a_partition_replace_where_reports_delta_replace_where_metrics(spark: Any, table_path: str) -> None:
    df = spark.createDataFrame([(1, "a"), (2, "a"), (3, "b")], "id long, p string")
    df.coalesce(1).write.format("deltalog").mode("append").option("partitionBy", "p").save(table_path)
    new = spark.createDataFrame([(4, "a")], "id long, p string").coalesce(1)
    new.write.format("deltalog").mode("overwrite").option("replaceWhere", "p = 'a'").save(table_path)
    metrics = _last_metrics(table_path)
    assert set(metrics) == delta_metrics.WRITE_REPLACE_WHERE
    assert metrics["numDeletedRows"] == "2" and metrics["numCopiedRows"] == "0"
    assert metrics["numRemovedFiles"] == "1" and metrics["numOutputRows"] == "1"


def _merge(target: Any, clauses: list[tuple[str, str | None]], source: Any, cond: str) -> Any:
    builder = target.alias("t").merge(source.alias("s"), cond)
    for kind, clause_cond in clauses:
        builder = getattr(builder, kind)(clause_cond)
    return builder.execute()


# Delta's MergeIntoMetricsBase cases, scaled down: target ids 0..9 in two files (0-4, 5-9),
# a ``partCol`` of 0 / 1 (id // 5, the partition column when partitioned) and ``extraCol``;
# the expected row metrics are Delta's (the others must be 0), each file metric as Delta's
# classic MERGE counts it (every file holding a matched row is rewritten).
_MERGE_CASES = {
    # name: (source ids, condition, clauses, partitioned, cdf, expected)
    "upsert": (
        (3, 13),
        "s.id = t.id",
        [("whenMatchedUpdateAll", None), ("whenNotMatchedInsertAll", None)],
        False,
        False,
        dict(
            numSourceRows=10,
            numTargetRowsInserted=3,
            numTargetRowsUpdated=7,
            numTargetRowsMatchedUpdated=7,
            numTargetRowsCopied=3,
            numOutputRows=13,
            numTargetFilesRemoved=2,
        ),
    ),
    "delete-only without join": (
        (0, 1),
        "t.id >= 3",
        [("whenMatchedDelete", None)],
        True,
        False,
        dict(
            numSourceRows=1,
            numTargetRowsDeleted=7,
            numTargetRowsMatchedDeleted=7,
            numTargetRowsCopied=3,
            numOutputRows=3,
            numTargetFilesRemoved=2,
            numTargetFilesAdded=1,
        ),
    ),
    # nothing changes: recorded all the same (Delta's skipRecordingEmptyCommits=false)
    "delete-only with disjoint tables": (
        (10, 20),
        "s.id = t.id",
        [("whenMatchedDelete", None)],
        False,
        True,
        dict(numSourceRows=10, numTargetFilesAdded=0, numTargetFilesRemoved=0),
    ),
}

_ROW_METRICS = (
    "numSourceRows",
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "numTargetRowsMatchedUpdated",
    "numTargetRowsNotMatchedBySourceUpdated",
    "numTargetRowsDeleted",
    "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceDeleted",
    "numTargetRowsCopied",
    "numOutputRows",
)


@pytest.mark.parametrize("name", list(_MERGE_CASES))
def test_merge_reports_every_delta_merge_metric(spark: Any, table_path: str, name: str) -> None:
    """Delta's MergeIntoMetricsBase, under its session conf
    ``skipRecordingEmptyCommits=false``: the commit (also of a MERGE that changed nothing)
    has exactly DeltaOperationMetrics.MERGE (``materializeSourceTimeMs`` and the deletion
    vector counts included, also without deletion vectors), the row metrics' values,
    ``executionTimeMs`` the largest time, and ``execute()`` returns the
    affected/updated/deleted/inserted counts."""
    from deltalog.contrib.spark import DeltaTable, write_table

    (lo, hi), cond, clauses, partitioned, cdf, expected = _MERGE_CASES[name]
    with_cols = "id, id div 5 AS partCol, 10 - id AS extraCol"
    options = {"partitionBy": "partCol"} if partitioned else {}
    if cdf:
        options["delta.enableChangeDataFeed"] = "true"
    write_table(spark.range(0, 10, 1, 2).selectExpr(*with_cols.split(", ")), table_path, **options)
    source = spark.range(lo, hi, 1, 2).selectExpr(*with_cols.split(", "))
    spark.conf.set("spark.databricks.delta.skipRecordingEmptyCommits", "false")
    try:
        result = _merge(DeltaTable.forPath(spark, table_path), clauses, source, cond).collect()
    finally:
        spark.conf.unset("spark.databricks.delta.skipRecordingEmptyCommits")
    assert len(commits(table_path)) == 2

    metrics = _last_metrics(table_path)
    assert set(metrics) == delta_metrics.MERGE
    want = {**dict.fromkeys(_ROW_METRICS, 0), **expected}
    assert {k: int(metrics[k]) for k in want} == want
    assert int(metrics["numTargetDeletionVectorsAdded"]) == 0
    times = [int(metrics[k]) for k in ("materializeSourceTimeMs", "scanTimeMs", "rewriteTimeMs")]
    assert int(metrics["executionTimeMs"]) >= max(times)
    updated, deleted, inserted = (
        want[k] for k in ("numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted")
    )
    assert [tuple(r) for r in result] == [(updated + deleted + inserted, updated, deleted, inserted)]
    changed = updated + deleted
    assert (int(metrics["numTargetChangeFilesAdded"]) > 0) == (cdf and changed > 0)


def test_a_partition_delete_counts_rows_from_metadata_only_under_delta_conf(spark: Any, table_path: str) -> None:
    """Delta's DeleteMetricsSuite "delete along partition boundary": the rows a metadata-only
    DELETE removes are counted from the files' statistics, net of their deletion vectors,
    unless ``spark.databricks.delta.dmlMetricsFromMetadata.enabled`` is false; then they
    are unknown and ``numDeletedRows``, ``numCopiedRows`` and ``numAddedFiles`` are left out."""
    from deltalog.contrib.spark import DeltaTable, write_table

    options = {"partitionBy": "part", "delta.enableDeletionVectors": "true"}
    write_table(spark.range(0, 8, 1, 1).selectExpr("id", "id % 2 AS part"), table_path, **options)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("id = 0")
    table.delete("part = 0")
    metrics = _last_metrics(table_path)
    assert (metrics["numDeletedRows"], metrics["numDeletionVectorsRemoved"]) == ("3", "1")
    spark.conf.set("spark.databricks.delta.dmlMetricsFromMetadata.enabled", "false")
    try:
        table.delete("part = 1")
    finally:
        spark.conf.unset("spark.databricks.delta.dmlMetricsFromMetadata.enabled")
    metrics = _last_metrics(table_path)
    assert set(metrics) == delta_metrics.DELETE - {"numDeletedRows", "numCopiedRows", "numAddedFiles"}
    assert metrics["numRemovedFiles"] == "1"
