"""OPTIMIZE from ``DeltaTable``: bins rewritten by Spark tasks, one commit with dataChange=false."""

from __future__ import annotations

import json
import os

import pytest

from tests.spark.helpers import commits, rows

pytestmark = pytest.mark.spark


def _append(spark, path, start, n, parts=2):
    (
        spark.range(start, start + n, numPartitions=parts)
        .selectExpr("id", "cast(id % 2 as string) as g", "id * 0.5 as v")
        .write.format("deltalog")
        .mode("append")
        .option("partitionBy", "g")
        .save(path)
    )


def _last_commit(path):
    actions = commits(path)[-1]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    return info, actions


def test_compaction_runs_one_spark_task_per_bin_and_commits_once(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.maintenance import OPTIMIZE_JOB_GROUP

    for i in range(2):
        _append(spark, table_path, i * 1000, 1000)  # 2 tasks x 2 partitions: 4 files per append
    before = rows(spark.read.format("deltalog").load(table_path), ["id"])
    tracker = spark.sparkContext.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP))

    metrics = DeltaTable.forPath(spark, table_path).optimize().executeCompaction().collect()[0].metrics

    (job,) = set(tracker.getJobIdsForGroup(OPTIMIZE_JOB_GROUP)) - jobs_before
    (stage,) = tracker.getJobInfo(job).stageIds
    assert tracker.getStageInfo(stage).numTasks == 2  # one task per bin (partition g=0, g=1)
    assert (metrics["numFilesRemoved"], metrics["numFilesAdded"], metrics["numBins"], metrics["numBatches"]) == (
        8,
        2,
        2,
        1,
    )
    info, actions = _last_commit(table_path)
    assert info["operation"] == "OPTIMIZE"
    assert info["operationMetrics"]["numAddedFiles"] == "2"
    changes = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert len(changes) == 10 and not any(c["dataChange"] for c in changes)
    adds = [a["add"] for a in actions if "add" in a]
    assert sorted(a["partitionValues"]["g"] for a in adds) == ["0", "1"]
    assert all(a["path"].startswith(f"g={a['partitionValues']['g']}/part-0000") for a in adds)
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 2000
    assert rows(spark.read.format("deltalog").load(table_path), ["id"]).equals(before)
    # nothing left to compact: no job, no commit
    version = len(commits(table_path))
    again = DeltaTable.forPath(spark, table_path).optimize().executeCompaction().collect()[0].metrics
    assert again["numFilesRemoved"] == 0 and again["totalFilesSkipped"] == 2 and len(commits(table_path)) == version
    _split_by_max_records_per_file(spark, table_path + "_limited")


def test_optimize_takes_a_negative_max_records_per_file_as_no_limit(spark):
    """``spark.sql.files.maxRecordsPerFile`` zero or negative is no limit, as Spark's file writer
    in Delta's OPTIMIZE takes it (no Spark job runs here)."""
    from deltalog.contrib.spark.maintenance import SparkBinRewriter
    from deltalog.contrib.spark.options import MAX_RECORDS_PER_FILE_CONF

    spark.conf.set(MAX_RECORDS_PER_FILE_CONF, "-1")
    try:
        assert SparkBinRewriter(spark)._max_records_per_file == 0
    finally:
        spark.conf.unset(MAX_RECORDS_PER_FILE_CONF)


def _split_by_max_records_per_file(spark, path):
    """Delta's OPTIMIZE writes through Spark's file writer, which starts a new file after
    spark.sql.files.maxRecordsPerFile rows: 5 rows of a partition become files of 2, 2 and 1."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.options import MAX_RECORDS_PER_FILE_CONF

    _append(spark, path, 0, 10)
    before = rows(spark.read.format("deltalog").load(path), ["id"])
    spark.conf.set(MAX_RECORDS_PER_FILE_CONF, "2")
    try:
        metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0].metrics
    finally:
        spark.conf.unset(MAX_RECORDS_PER_FILE_CONF)
    assert (metrics["numFilesRemoved"], metrics["numFilesAdded"]) == (4, 6)
    _, actions = _last_commit(path)
    counts = sorted(
        (a["add"]["partitionValues"]["g"], json.loads(a["add"]["stats"])["numRecords"]) for a in actions if "add" in a
    )
    assert counts == [("0", 1), ("0", 2), ("0", 2), ("1", 1), ("1", 2), ("1", 2)]
    assert rows(spark.read.format("deltalog").load(path), ["id"]).equals(before)


def test_where_min_and_max_file_size_and_size_not_bigger(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.maintenance import MAX_FILE_SIZE_CONF, MIN_FILE_SIZE_CONF

    _append(spark, table_path, 0, 40000, parts=1)  # one large file per partition
    for i in range(3):
        _append(spark, table_path, 100000 + i * 100, 100)  # small files
    table = DeltaTable.forPath(spark, table_path)
    snapshot = table._log.update()
    sizes = sorted(f.size for f in snapshot.files)
    small, large = sizes[:12], sizes[12:]
    assert max(small) < min(large)
    before = rows(spark.read.format("deltalog").load(table_path), ["id"])
    try:
        spark.conf.set(MAX_FILE_SIZE_CONF, "0")
        with pytest.raises(DeltaAnalysisError, match="maxFileSize"):
            table.optimize().executeCompaction()
        # only files below minFileSize are candidates; bins hold at most maxFileSize bytes
        spark.conf.set(MIN_FILE_SIZE_CONF, str(max(small) + 1))
        spark.conf.set(MAX_FILE_SIZE_CONF, str(3 * max(small)))
        metrics = table.optimize().where("g = '0'").executeCompaction().collect()[0].metrics
    finally:
        spark.conf.unset(MIN_FILE_SIZE_CONF)
        spark.conf.unset(MAX_FILE_SIZE_CONF)
    assert metrics["numFilesRemoved"] == 6 and metrics["numFilesAdded"] == 2  # 6 small files, 3 per bin
    assert metrics["totalConsideredFiles"] == 7  # the where: partition g=0 only
    assert metrics["filesAdded"]["totalSize"] <= metrics["filesRemoved"]["totalSize"]
    info, actions = _last_commit(table_path)
    assert info["operationParameters"]["predicate"] == "[\"(g = '0')\"]"
    removed = [a["remove"] for a in actions if "remove" in a]
    assert all(r["path"].startswith("g=0/") and r["size"] < min(large) for r in removed)
    assert rows(spark.read.format("deltalog").load(table_path), ["id"]).equals(before)


def _boxes(spark, path):
    from deltalog.txn.delta_log import DeltaLog

    out = []
    for f in DeltaLog.for_table(path).update().files:
        stats = json.loads(f.stats or "{}")
        lo, hi = stats["minValues"], stats["maxValues"]
        out.append(((lo["x"], hi["x"]), (lo["y"], hi["y"])))
    return out


def _overlapping_pairs(boxes):
    def overlap(a, b):
        return a[0] <= b[1] and b[0] <= a[1]

    return sum(1 for i, a in enumerate(boxes) for b in boxes[i + 1 :] if overlap(a[0], b[0]) and overlap(a[1], b[1]))


def test_z_order_clusters_files_by_both_columns(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.maintenance import MAX_FILE_SIZE_CONF

    for i in range(4):  # every file spans the whole 64 x 64 grid
        spark.range(i, 4096, 4, numPartitions=1).selectExpr(
            "cast(id % 64 as int) as x", "cast(id div 64 as int) as y", "'p' as g"
        ).write.format("deltalog").mode("append").option("partitionBy", "g").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    with pytest.raises(DeltaAnalysisError, match="partition column"):
        table.optimize().executeZOrderBy("g")
    with pytest.raises(DeltaAnalysisError, match="does not exist"):
        table.optimize().executeZOrderBy("nope")
    before_boxes = _boxes(spark, table_path)
    assert _overlapping_pairs(before_boxes) == 6
    before = rows(spark.read.format("deltalog").load(table_path), ["x", "y"])
    total = sum(f.size for f in table._log.update().files)
    try:
        spark.conf.set(MAX_FILE_SIZE_CONF, str(total // 4))  # approxNumFiles = 4
        metrics = table.optimize().executeZOrderBy("x", "y").collect()[0].metrics
    finally:
        spark.conf.unset(MAX_FILE_SIZE_CONF)
    assert metrics["numFilesRemoved"] == 4 and metrics["numFilesAdded"] == 4
    z_stats = metrics["zOrderStats"]  # Delta's ZOrderStrategy: every file of the partition is input
    assert (
        z_stats["strategyName"] == "all" and z_stats["inputOtherFiles"]["num"] == 4 and z_stats["numOutputCubes"] == 1
    )
    info, _ = _last_commit(table_path)
    assert info["operationParameters"]["zOrderBy"] == '["x","y"]'
    boxes = _boxes(spark, table_path)
    area = [(x[1] - x[0] + 1) * (y[1] - y[0] + 1) for x, y in boxes]
    assert sum(area) <= 2 * 64 * 64  # before: 4 x 64 x 64
    assert _overlapping_pairs(boxes) < 6  # before: all 6 pairs
    assert rows(spark.read.format("deltalog").load(table_path), ["x", "y"]).equals(before)
    _z_order_stats_check(spark, table_path + "_nostats")


def _z_order_stats_check(spark, path):
    """OptimizeZOrderSuite "ZOrder on a column without stats": DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS
    names Delta's conf, and the conf set to false lets the column be Z-ordered ("Zorder on col name containing
    dot": a backquoted name holding a dot; one column: sorted by it)."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.maintenance import ZORDER_STATS_CHECK_CONF

    spark.range(0, 3, 1, 1).selectExpr("id as x", "2 - id as `y.z`").write.format("deltalog").mode("append").option(
        "delta.dataSkippingNumIndexedCols", "1"
    ).save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(DeltaAnalysisError, match=r"\['`y.z`'\].*optimize\.zorder\.checkStatsCollection\.enabled"):
        table.optimize().executeZOrderBy("`y.z`")
    try:
        spark.conf.set(ZORDER_STATS_CHECK_CONF, "false")
        metrics = table.optimize().executeZOrderBy("`y.z`").collect()[0].metrics
    finally:
        spark.conf.unset(ZORDER_STATS_CHECK_CONF)
    assert metrics["numFilesRemoved"] == metrics["numFilesAdded"] == 1
    assert [r["y.z"] for r in spark.read.format("deltalog").load(path).collect()] == [0, 1, 2]


def test_result_is_delta_optimize_metrics_struct(spark, table_path):
    """Delta's OptimizeMetricsSuite "optimize command output schema" and "optimize metrics",
    OptimizeCompactionSuite "optimize an empty table": ``metrics`` is the OptimizeMetrics struct."""
    from deltalog.contrib.spark import DeltaTable

    empty_write = spark.range(0).selectExpr("id", "id as part").write.format("deltalog").mode("append")
    empty_write.option("partitionBy", "part").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    empty = table.optimize().executeCompaction()
    fields = empty.schema["metrics"].dataType
    assert fields.names[:11] == [
        *("numFilesAdded", "numFilesRemoved", "filesAdded", "filesRemoved", "partitionsOptimized"),
        *("zOrderStats", "clusteringStats", "numBins", "numBatches", "totalConsideredFiles", "totalFilesSkipped"),
    ]
    assert fields.names[-3:] == ["deletionVectorStats", "numTableColumns", "numTableColumnsWithStats"]
    assert fields["filesAdded"].dataType.simpleString() == (
        "struct<min:bigint,max:bigint,avg:double,totalFiles:bigint,totalSize:bigint>"
    )
    assert not fields["numFilesAdded"].nullable and fields["filesAdded"].dataType["min"].nullable
    (path, metrics) = empty.collect()[0]
    # Delta's ``snapshot.dataPath.toString``: a Hadoop Path, ``file:/abs/path`` (not ``file:///``)
    assert path == f"file:{table_path}" and len(commits(table_path)) == 1  # nothing committed
    assert (metrics.numFilesAdded, metrics.numBatches, metrics.totalConsideredFiles) == (0, 1, 0)
    assert metrics.filesAdded.asDict() == {"min": None, "max": None, "avg": 0.0, "totalFiles": 0, "totalSize": 0}
    for i in range(2):
        spark.range(i * 3, i * 3 + 3, numPartitions=1).selectExpr("id", "id % 1 as part").write.format("deltalog").mode(
            "append"
        ).save(table_path)
    start = sorted(f.size for f in table._log.update().files)
    metrics = table.optimize().executeCompaction().collect()[0].metrics
    final = [f.size for f in table._log.update().files]
    assert (metrics.numFilesAdded, metrics.numFilesRemoved, metrics.partitionsOptimized) == (1, 2, 1)
    assert (metrics.filesAdded.min, metrics.filesAdded.max, metrics.filesAdded.totalSize) == (final[0],) * 3
    removed = metrics.filesRemoved
    assert (removed.min, removed.max, removed.totalSize, removed.totalFiles) == (start[0], start[-1], sum(start), 2)
    assert removed.avg == sum(start) / 2 and (metrics.totalConsideredFiles, metrics.totalFilesSkipped) == (2, 0)
    assert (metrics.numTableColumns, metrics.numTableColumnsWithStats) == (2, 2)
    assert metrics.zOrderStats is None and metrics.deletionVectorStats is None


def test_where_predicates_as_delta_optimize(spark, table_path):
    """OptimizeCompactionSuite "predicate on non-partition column" (DELTA_NON_PARTITION_COLUMN_REFERENCE)
    and "multiple partition predicates with multiple where" (the wheres are ANDed); a predicate
    naming no column is evaluated as Delta's ``filesForScan`` does: ``1 = 0`` selects no file
    (no commit; the metrics of nothing), ``1 = 1`` every file."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    for start in (0, 10):
        _append(spark, table_path, start, 4)
    table = DeltaTable.forPath(spark, table_path)
    for nothing in ("1 = 0", "g = '9'"):
        metrics = table.optimize().where(nothing).executeCompaction().collect()[0].metrics
        assert (metrics["numFilesAdded"], metrics["numFilesRemoved"], metrics["totalConsideredFiles"]) == (0, 0, 0)
    assert len(commits(table_path)) == 2
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_NON_PARTITION_COLUMN_REFERENCE.*'id'"):
        table.optimize().where("id = 1").executeCompaction()
    metrics = table.optimize().where("g = '0'").where("g >= '0'").executeCompaction().collect()[0].metrics
    assert (metrics["numFilesRemoved"], metrics["totalConsideredFiles"]) == (4, 4)  # g=0's only
    metrics = table.optimize().where("1 = 1").executeCompaction().collect()[0].metrics
    assert (metrics["numFilesRemoved"], metrics["numFilesAdded"], metrics["totalConsideredFiles"]) == (4, 1, 5)


def test_where_any_partition_predicate_as_delta_optimize(spark, table_path):
    """Delta's OPTIMIZE selects files by any predicate naming partition columns only
    (``verifyPartitionPredicates``, then ``filesForScan``): an ``OR``, a function of a
    partition column, a constant ANDed with a column term; a data column anywhere in it is
    DELTA_NON_PARTITION_COLUMN_REFERENCE, a subquery DELTA_UNSUPPORTED_SUBQUERY_IN_PARTITION_PREDICATES,
    and a non-deterministic predicate is left out of ``filesForScan``'s partition filters, so every
    file is considered."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    for start in (0, 10):
        _append(spark, table_path, start, 4)
    table = DeltaTable.forPath(spark, table_path)

    def considered_removed(predicate):
        metrics = table.optimize().where(predicate).executeCompaction().collect()[0].metrics
        return metrics["totalConsideredFiles"], metrics["numFilesRemoved"]

    assert considered_removed("g = '7' OR g = '8'") == (0, 0)
    assert considered_removed("substr(G, 1, 1) = '0'") == (4, 4)  # g=0 only
    assert _last_commit(table_path)[0]["operationParameters"]["predicate"] == json.dumps(["(substr(G, 1, 1) = '0')"])
    assert considered_removed("1 = 1 AND cast(g AS INT) % 2 = 1") == (4, 4)  # g=1 only
    assert considered_removed("g = '0' OR g IS NULL") == (1, 0)
    assert considered_removed("rand() < 0") == (2, 0)  # ignored, as Delta's filesForScan
    for data in ("g = '0' OR id = 1", "substr(g, 1, 1) = cast(id AS STRING)"):
        with pytest.raises(DeltaAnalysisError, match=r"DELTA_NON_PARTITION_COLUMN_REFERENCE.*'id'"):
            table.optimize().where(data).executeCompaction()
    with pytest.raises(DeltaAnalysisError, match="DELTA_UNSUPPORTED_SUBQUERY_IN_PARTITION_PREDICATES"):
        table.optimize().where("g >= (SELECT '1')").executeCompaction()  # OptimizeCompactionSuite "subquery ..."
    spark.conf.set("spark.sql.caseSensitive", "true")  # names compared by the session's resolver
    try:
        for upper in ("G = '0'", "substr(G, 1, 1) = '0'"):
            with pytest.raises(DeltaAnalysisError, match=r"DELTA_NON_PARTITION_COLUMN_REFERENCE.*'G'"):
                table.optimize().where(upper).executeCompaction()
        assert considered_removed("g = '1'") == (1, 0)
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    assert sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect()) == [*range(4), *range(10, 14)]


def test_a_deletion_vector_delete_landing_during_compaction_fails_optimize(spark, table_path, monkeypatch):
    """Delta's OptimizeConflictSuite "conflict handling between Optimize and Business Txn": a
    DELETE through deletion vectors commits while OPTIMIZE rewrites its bins (the hook between
    its plan and its commit); OPTIMIZE fails with DELTA_CONCURRENT_DELETE_READ
    (``ConcurrentDeleteReadError``: its files changed, it does not plan again) and the
    DELETE's rows stay deleted."""
    from deltalog.contrib.spark import DeltaTable, maintenance
    from deltalog.errors import ConcurrentDeleteReadError

    spark.range(0, 20, 1, 4).write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.setProperties({"delta.enableDeletionVectors": "true"})  # Delta's ALTER TABLE SET TBLPROPERTIES
    rewrite = maintenance.SparkBinRewriter.__call__

    def delete_meanwhile(self, spec, bins):
        monkeypatch.setattr(maintenance.SparkBinRewriter, "__call__", rewrite)
        table.delete("id % 2 = 0")
        return rewrite(self, spec, bins)

    monkeypatch.setattr(maintenance.SparkBinRewriter, "__call__", delete_meanwhile)
    with pytest.raises(ConcurrentDeleteReadError, match="DELTA_CONCURRENT_DELETE_READ"):
        table.optimize().executeCompaction()
    assert spark.read.format("deltalog").load(table_path).count() == 10
    assert _last_commit(table_path)[0]["operation"] == "DELETE"  # OPTIMIZE committed nothing


def test_purge_rewrites_files_holding_dropped_columns_and_keeps_renamed_ones(spark, table_path):
    """Delta's ``DeltaReorgSuite`` "Purge dropped columns of a table without DV" and "Columns
    being renamed should not be purged": REORG ... APPLY (PURGE) also rewrites the files whose
    Parquet schema still holds a column the table dropped (column mapping), without it; a
    renamed column keeps its physical name. A table with nothing to purge gets no commit."""
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.commands.alter import drop_columns, rename_column
    from deltalog.txn.delta_log import DeltaLog

    df = spark.range(0, 20, 1, 4).selectExpr("id", "id % 4 AS renamed_from", "id % 5 AS dropped")
    df.write.format("deltalog").mode("append").option("delta.columnMapping.mode", "name").save(table_path)
    log = DeltaLog.for_table(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.optimize().executePurge()
    assert log.update().version == 0  # nothing to purge: no commit
    physical = {f.name: f.physical_name for f in log.update().schema.fields}
    drop_columns(log, ["dropped"])
    rename_column(log, "renamed_from", "renamed_to")
    table.optimize().executePurge()
    info = _last_commit(table_path)[0]
    assert info["operation"] == "REORG" and info["operationMetrics"]["numRemovedFiles"] == "4"
    files = log.update().files
    assert len(files) == 1
    names = pq.read_schema(os.path.join(table_path, files[0].path)).names
    assert physical["dropped"] not in names and physical["renamed_from"] in names
    rows = sorted(tuple(r) for r in spark.read.format("deltalog").load(table_path).collect())
    assert rows == [(i, i % 4) for i in range(20)]
