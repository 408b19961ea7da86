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
