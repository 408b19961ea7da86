"""Batch writes and reads through the ``deltalog`` data source (local[2])."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tests.spark.helpers import commits, delta_rs_rows, operations, rows

pytestmark = pytest.mark.spark


def _df(spark, n=30, offset=0):
    data = [(i + offset, f"k{i % 3}", float(i) / 2) for i in range(n)]
    return spark.createDataFrame(data, "id long, k string, x double")


def test_append_then_overwrite(spark, table_path):
    _df(spark).write.format("deltalog").mode("append").save(table_path)
    _df(spark, offset=100).write.format("deltalog").mode("append").save(table_path)
    assert spark.read.format("deltalog").load(table_path).count() == 60
    _df(spark, n=5).write.format("deltalog").mode("overwrite").save(table_path)
    got = rows(spark.read.format("deltalog").load(table_path), ["id"])
    assert got["id"].tolist() == [0, 1, 2, 3, 4]
    assert operations(table_path) == ["WRITE", "WRITE", "WRITE"]
    last = commits(table_path)[-1]
    info = next(a["commitInfo"] for a in last if "commitInfo" in a)
    assert info["operationParameters"]["mode"] == "Overwrite"
    assert sum(1 for a in last if "remove" in a) >= 1
    assert delta_rs_rows(table_path, ["id"])["id"].tolist() == [0, 1, 2, 3, 4]


def test_format_deltalog_writes_read_the_session_confs_delta_reads(spark, table_path, tmp_path):
    """``df.write.format("deltalog")`` runs its ``writer()`` without the session; ``register``
    makes the write carry the confs Delta's writes read from it (an option the write gives
    wins), and leaves writers of other formats alone."""
    _df(spark).write.format("deltalog").mode("append").option("partitionBy", "k").save(table_path)
    confs = {
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.databricks.delta.commitInfo.userMetadata": "from the session",
        "spark.sql.parquet.compression.codec": "zstd",
    }
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        # dynamic: only partition k0 is replaced (Delta's session conf), not the whole table
        _df(spark, n=1, offset=100).write.format("deltalog").mode("overwrite").save(table_path)
        got = rows(spark.read.format("deltalog").load(table_path), ["id"])
        assert sorted(set(got["k"])) == ["k0", "k1", "k2"] and 100 in set(got["id"])
        assert len(got) == 21  # 30 rows - the 10 of k0 + 1
        info = next(a["commitInfo"] for a in commits(table_path)[-1] if "commitInfo" in a)
        assert info["userMetadata"] == "from the session"
        assert info["operationParameters"].get("isDynamicPartitionOverwrite") is True
        assert [a["add"]["path"].endswith(".zstd.parquet") for a in commits(table_path)[-1] if "add" in a] == [True]
        # an option the write gives wins over the session: static replaces the whole table
        writer = _df(spark, n=2, offset=200).write.format("deltalog").mode("overwrite")
        writer.options(partitionOverwriteMode="static", userMetadata="mine").save(table_path)
        assert sorted(rows(spark.read.format("deltalog").load(table_path), ["id"])["id"]) == [200, 201]
        info = next(a["commitInfo"] for a in commits(table_path)[-1] if "commitInfo" in a)
        assert info["userMetadata"] == "mine"
        # a writer of another format gets nothing added
        plain = str(tmp_path / "plain")
        _df(spark, n=3).write.mode("overwrite").parquet(plain)
        assert spark.read.parquet(plain).count() == 3
    finally:
        for key in confs:
            spark.conf.unset(key)


def test_each_task_file_named_and_one_commit(spark, table_path):
    _df(spark, n=40).repartition(4).write.format("deltalog").mode("append").option("maxRecordsPerFile", 4).save(
        table_path
    )
    (commit,) = commits(table_path)
    adds = [a["add"] for a in commit if "add" in a]
    assert len(adds) >= 10  # 40 rows, at most 4 per file
    for add in adds:
        assert (add["path"].startswith("part-") and add["path"].endswith(".c000.snappy.parquet")) or ".c0" in add[
            "path"
        ]
        stats = json.loads(add["stats"])
        assert 1 <= stats["numRecords"] <= 4
        assert set(stats["minValues"]) == {"id", "k", "x"}
        assert stats["nullCount"] == {"id": 0, "k": 0, "x": 0}
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 40
    assert any("protocol" in a for a in commit) and any("metaData" in a for a in commit)


def test_partitioned_special_characters_and_nulls(spark, table_path):
    values = ["a/b", "x=y", "c d", "per%cent", "colon:", None, "", "ü", "__HIVE_DEFAULT_PARTITION__"]
    data = [(i, v) for i, v in enumerate(values)]
    df = spark.createDataFrame(data, "id int, p string")
    df.write.format("deltalog").mode("append").option("partitionBy", "p").save(table_path)
    adds = [a["add"] for a in commits(table_path)[0] if "add" in a]
    by_value = {a["partitionValues"]["p"]: a["path"] for a in adds}
    # the empty string and the text __HIVE_DEFAULT_PARTITION__ are null, as Delta reads them
    # back from the directory (DeltaInsertIntoTableSuite: "__HIVE_DEFAULT_PARTITION__ results in
    # null partition column")
    assert None in by_value and "" not in by_value and "__HIVE_DEFAULT_PARTITION__" not in by_value
    assert by_value[None].startswith("p=__HIVE_DEFAULT_PARTITION__/")
    assert by_value["a/b"].startswith("p=a%252Fb/")  # Hive escape, then URI-encoded
    assert by_value["x=y"].startswith("p=x%253Dy/")
    assert os.path.isdir(os.path.join(table_path, "p=a%2Fb"))
    got = rows(spark.read.format("deltalog").load(table_path), ["id"])
    expected = [None if v in ("", "__HIVE_DEFAULT_PARTITION__") else v for v in values]
    assert [None if pd.isna(v) else v for v in got["p"].tolist()] == expected
    theirs = delta_rs_rows(table_path, ["id"])
    assert [None if pd.isna(v) else v for v in theirs["p"].tolist()] == expected


def test_replace_where(spark, table_path):
    df = spark.createDataFrame([(i, f"d{i % 3}") for i in range(9)], "id int, day string")
    df.write.format("deltalog").mode("append").option("partitionBy", "day").save(table_path)
    new = spark.createDataFrame([(100, "d1"), (101, "d1")], "id int, day string")
    new.write.format("deltalog").mode("overwrite").option("replaceWhere", "day = 'd1'").save(table_path)
    got = rows(spark.read.format("deltalog").load(table_path), ["id"])
    assert sorted(got[got.day == "d1"].id.tolist()) == [100, 101]
    assert sorted(got[got.day != "d1"].id.tolist()) == [0, 2, 3, 5, 6, 8]
    bad = spark.createDataFrame([(7, "d2")], "id int, day string")
    with pytest.raises(Exception, match="DELTA_REPLACE_WHERE_MISMATCH"):
        bad.write.format("deltalog").mode("overwrite").option("replaceWhere", "day = 'd1'").save(table_path)
    assert len(commits(table_path)) == 2  # the refused write committed nothing
    assert sorted(delta_rs_rows(table_path, ["id"]).id.tolist()) == sorted(got.id.tolist())
    # CaseSensitivitySuite "SC-12677": the predicate's names resolve by spark.sql.caseSensitive
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        for predicate in ("DAY = 'd1'", "day = 'd1' AND ID > 0"):
            with pytest.raises(Exception, match="UNRESOLVED_COLUMN"):
                new.write.format("deltalog").mode("overwrite").option("replaceWhere", predicate).save(table_path)
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    new.write.format("deltalog").mode("overwrite").option("replaceWhere", "DAY = 'd1' AND ID > 0").save(table_path)
    assert len(commits(table_path)) == 3 and spark.read.format("deltalog").load(table_path).count() == 8


def test_read_pruning_and_skipping(spark, table_path, tmp_path, monkeypatch):
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, LessThan

    from deltalog.contrib.spark import source

    df = spark.createDataFrame([(i, f"d{i % 4}") for i in range(400)], "id long, day string")
    df.repartition(1).sortWithinPartitions("id").write.format("deltalog").mode("append").option(
        "partitionBy", "day"
    ).option("maxRecordsPerFile", 25).save(table_path)
    total = len([a for a in commits(table_path)[0] if "add" in a])
    report = str(tmp_path / "scan.json")
    reader = spark.read.format("deltalog").option("scanReport", report)
    got = reader.load(table_path).filter("day = 'd1'").collect()
    assert len(got) == 100
    scanned = json.load(open(report))
    assert scanned["totalFiles"] == total == 16
    # Spark up to 4.3 lets every scan of a DataFrame reuse a plan made for one of them, so
    # there the reader plans the whole snapshot and leaves the filtering to Spark
    assert len(scanned["scannedFiles"]) == (4 if source.READ_PLANS_PER_SCAN else 16)
    got = reader.load(table_path).filter("id >= 390").collect()
    assert sorted(r.id for r in got) == list(range(390, 400))
    got = reader.load(table_path).filter("day = 'd2' and id < 50").collect()
    assert sorted(r.id for r in got) == [i for i in range(50) if i % 4 == 2]

    # where a plan serves one scan, pushed filters prune partitions and skip files
    monkeypatch.setattr(source, "READ_PLANS_PER_SCAN", True)
    ds = source.DeltaLogDataSource({"path": table_path, "scanReport": report})

    def scanned_files(*filters):
        scan = ds.reader(ds.schema())
        assert list(scan.pushFilters(list(filters))) == list(filters)  # Spark applies them all again
        files = sorted(f.path for p in scan.partitions() for f in p.files)
        assert files == json.load(open(report))["scannedFiles"]
        return files

    d1 = scanned_files(EqualTo(("day",), "d1"))
    assert len(d1) == 4 and all(p.startswith("day=d1/") for p in d1)
    assert len(scanned_files(GreaterThanOrEqual(("id",), 390))) == 4  # the last file of each partition
    assert len(scanned_files(EqualTo(("day",), "d2"), LessThan(("id",), 50))) == 1


def test_time_travel(spark, table_path):
    _df(spark, n=3).write.format("deltalog").mode("append").save(table_path)
    _df(spark, n=4, offset=10).write.format("deltalog").mode("append").save(table_path)
    _df(spark, n=1).write.format("deltalog").mode("overwrite").save(table_path)
    read = spark.read.format("deltalog")
    assert read.option("versionAsOf", 0).load(table_path).count() == 3
    assert read.option("versionAsOf", 1).load(table_path).count() == 7
    assert spark.read.format("deltalog").load(table_path).count() == 1
    from deltalog.txn.delta_log import DeltaLog

    ms = DeltaLog.for_table(table_path).snapshot(1).timestamp
    ts = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    at = spark.read.format("deltalog").option("timestampAsOf", ts.isoformat()).load(table_path)
    assert at.count() == 7
    # DeltaTimeTravelSuite: "as of with versions" (@v), "as of timestamp on exact timestamp"
    # (@yyyyMMddHHmmssSSS), "as of timestamp on invalid timestamp", and
    # DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS
    from deltalog.contrib.spark import read_table

    assert spark.read.format("deltalog").load(table_path + "@v0").count() == 3
    assert read_table(spark, table_path + f"@{ts:%Y%m%d%H%M%S}{ms % 1000:03d}").count() == 7
    # DeltaTimeTravelSpec reads the @ time in the session time zone (spark.sql.session.timeZone)
    local = ts.astimezone(dt.timezone(dt.timedelta(hours=-8)))
    spark.conf.set("spark.sql.session.timeZone", "-08:00")
    try:
        assert read_table(spark, table_path + f"@{local:%Y%m%d%H%M%S}{ms % 1000:03d}").count() == 7
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    with pytest.raises(ValueError, match="DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS"):
        read_table(spark, table_path + "@v0", versionAsOf=1)
    with pytest.raises(ValueError, match="DELTA_TIMESTAMP_INVALID"):
        read_table(spark, table_path, timestampAsOf="i am not a timestamp")


def test_time_travel_takes_a_version_or_a_timestamp_not_both() -> None:
    """DeltaHistoryManagerSuite "can't provide both version and timestamp in DataFrameReader":
    Delta refuses the two options together when the read is planned (DELTA_ONEOF_IN_TIMETRAVEL)."""
    from deltalog.contrib.spark.errors import InvalidWriteOptionError
    from deltalog.contrib.spark.options import ReadOptions

    both = {"path": "/some/fake", "versionAsOf": "1", "timestampAsOf": "2020-10-22 23:20:11"}
    with pytest.raises(InvalidWriteOptionError, match=r"DELTA_ONEOF_IN_TIMETRAVEL.*either provide 'timestampAsOf' or"):
        ReadOptions.parse(both)


def test_idempotent_writes_and_save_modes(spark, table_path):
    df = _df(spark, n=5)
    for _ in range(2):
        df.write.format("deltalog").mode("append").option("txnAppId", "job-1").option("txnVersion", 7).save(table_path)
    assert spark.read.format("deltalog").load(table_path).count() == 5
    df.write.format("deltalog").mode("append").option("txnAppId", "job-1").option("txnVersion", 8).save(table_path)
    assert spark.read.format("deltalog").load(table_path).count() == 10
    txns = [a["txn"] for c in commits(table_path) for a in c if "txn" in a]
    assert [(t["appId"], t["version"]) for t in txns] == [("job-1", 7), ("job-1", 8)]
    crc = json.loads((Path(table_path) / "_delta_log" / f"{1:020d}.crc").read_text())
    assert [(t["appId"], t["version"]) for t in crc["setTransactions"]] == [("job-1", 8)]  # as Delta's .crc
    df.write.format("deltalog").mode("append").option("saveMode", "ignore").save(table_path)
    assert len(commits(table_path)) == 2
    with pytest.raises(Exception, match="already exists"):
        df.write.format("deltalog").mode("append").option("saveMode", "errorifexists").save(table_path)
    assert len(commits(table_path)) == 2


def test_spark_save_modes_and_partition_by_reach_the_table(spark, table_path):
    """What Spark refuses for a Python data source, ``register``'s writer takes as Delta does:
    ``save()`` in Spark's default mode (``errorifexists``, also ``error``) creates a missing
    table and refuses an existing one, ``ignore`` leaves an existing one alone (also given to
    ``save(..., mode=...)``), and ``partitionBy(...)`` (any case) partitions the table it creates.
    ``bucketBy`` with ``saveAsTable``, which Spark would drop, is refused as Delta refuses it."""
    df = _df(spark, n=4)
    df.write.format("deltalog").partitionBy("K").save(table_path)
    assert [a["metaData"]["partitionColumns"] for a in commits(table_path)[0] if "metaData" in a] == [["k"]]
    for mode in (None, "error", "errorifexists"):
        with pytest.raises(Exception, match="already exists"):
            df.write.format("deltalog").mode(mode).save(table_path)
    df.write.format("deltalog").mode("ignore").save(table_path)
    df.write.save(table_path, format="deltalog", mode="ignore", partitionBy="k")
    assert len(commits(table_path)) == 1 and spark.read.format("deltalog").load(table_path).count() == 4
    # a writer is reused with another mode (PySpark keeps its state): the mode of each save counts
    writer = _df(spark, n=2).write.format("deltalog").mode("ignore")
    writer.save(table_path)
    writer.mode("overwrite").save(table_path)
    writer.mode("errorifexists")
    with pytest.raises(Exception, match="already exists"):
        writer.save(table_path)
    writer.mode("append").save(table_path)
    assert len(commits(table_path)) == 3 and spark.read.format("deltalog").load(table_path).count() == 4
    bucketed = df.write.format("deltalog").mode("append").bucketBy(2, "id").option("path", table_path)
    with pytest.raises(Exception, match=r"DELTA_OPERATION_NOT_ALLOWED_DETAIL: .*`Bucketing` is not supported"):
        bucketed.saveAsTable("bucketed_t")
    assert len(commits(table_path)) == 3


def test_the_session_default_source_deltalog_writes_and_reads_as_the_format(spark, table_path):
    """With ``spark.sql.sources.default`` set to ``deltalog`` (as Databricks sets it to
    ``delta``), ``df.write.save(p)`` and ``spark.read.load(p)`` without ``format(...)`` are
    deltalog writes and reads: Delta's save modes, ``partitionBy`` and the session's confs
    (here ``commitInfo.userMetadata``) reach them as with ``format("deltalog")``."""
    spark.conf.set("spark.sql.sources.default", "deltalog")
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "from the session")
    try:
        df = _df(spark, n=4)
        df.write.partitionBy("k").save(table_path)
        df.write.mode("ignore").save(table_path)
        with pytest.raises(Exception, match="already exists"):
            df.write.save(table_path)
        assert spark.read.load(table_path).count() == 4
    finally:
        spark.conf.unset("spark.sql.sources.default")
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    (first,) = commits(table_path)
    assert [a["metaData"]["partitionColumns"] for a in first if "metaData" in a] == [["k"]]
    assert next(a["commitInfo"] for a in first if "commitInfo" in a)["userMetadata"] == "from the session"


def test_schema_checks_and_merge_schema(spark, table_path):
    """A column the table lacks is Delta's ``DELTA_METADATA_MISMATCH`` without ``mergeSchema``
    (DeltaInsertIntoSchemaEvolutionSuite), and is added with it; a column of another type is
    ``DELTA_FAILED_TO_MERGE_FIELDS`` first, with a new column or without, as Delta's ``mergeSchemas``
    runs before its schema change check ("insert with extra top-level column and implicit cast")."""
    _df(spark, n=3).write.format("deltalog").mode("append").option("userMetadata", "first load").save(table_path)
    wider = spark.createDataFrame([(99, "k9", 1.0, "new")], "id long, k string, x double, extra string")
    with pytest.raises(Exception, match=r"DELTA_METADATA_MISMATCH: .*columns the table does not: extra; .*mergeSchema"):
        wider.write.format("deltalog").mode("append").save(table_path)
    retyped = spark.createDataFrame([(9, "k9", 1.0, "new")], "id int, k string, x double, extra string")
    with pytest.raises(Exception, match=r"DELTA_FAILED_TO_MERGE_FIELDS: Failed to merge fields 'id'"):
        retyped.write.format("deltalog").mode("append").save(table_path)
    wider.write.format("deltalog").mode("append").option("mergeSchema", "true").save(table_path)
    got = rows(spark.read.format("deltalog").load(table_path), ["id"])
    assert got.columns.tolist() == ["id", "k", "x", "extra"]
    assert [None if pd.isna(v) else v for v in got.extra.tolist()] == [None, None, None, "new"]
    info = next(a["commitInfo"] for a in commits(table_path)[0] if "commitInfo" in a)
    assert info["userMetadata"] == "first load"
    assert delta_rs_rows(table_path, ["id"]).extra.tolist()[-1] == "new"


def test_failed_job_commits_nothing(spark, table_path):
    from pyspark.sql import functions as F

    _df(spark, n=3).write.format("deltalog").mode("append").save(table_path)
    boom = _df(spark, n=20).withColumn("x", F.expr("case when id = 17 then raise_error('boom') else x end"))
    with pytest.raises(Exception, match="boom"):
        boom.write.format("deltalog").mode("append").save(table_path)
    assert len(commits(table_path)) == 1
    assert spark.read.format("deltalog").load(table_path).count() == 3


def test_change_data_feed_and_table_properties(spark, table_path):
    from deltalog.contrib.spark import DeltaTable

    df = spark.createDataFrame([(i, i * 10) for i in range(5)], "id int, v int")
    df.write.format("deltalog").mode("append").option("delta.enableChangeDataFeed", "true").save(table_path)
    meta = next(a["metaData"] for a in commits(table_path)[0] if "metaData" in a)
    assert meta["configuration"] == {"delta.enableChangeDataFeed": "true"}
    dt_ = DeltaTable.forPath(spark, table_path)
    dt_.update("id = 1", {"v": "v + 1"})
    dt_.delete("id = 4")
    assert any("cdc" in a for a in commits(table_path)[1])
    changes = (
        spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 0).load(table_path)
    )
    got = sorted((r._change_type, r.id, r.v, r._commit_version) for r in changes.collect())
    assert ("insert", 0, 0, 0) in got
    assert ("update_preimage", 1, 10, 1) in got and ("update_postimage", 1, 11, 1) in got
    assert ("delete", 4, 40, 2) in got
    assert len(got) == 5 + 2 + 1
    from deltalog.txn.delta_log import DeltaLog

    ms = DeltaLog.for_table(table_path).snapshot(1).timestamp
    since = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")
    later = (spark.read.format("deltalog").option("readChangeFeed", "true").option("startingTimestamp", since)).load(
        table_path
    )
    assert sorted({r._commit_version for r in later.collect()}) == [1, 2]


def _odd(spark, values):
    return spark.createDataFrame([(v, v % 2 != 0) for v in values], "value int, is_odd boolean")


def test_dataChange_false_refused_on_create(spark, table_path):
    # DeltaOptionSuite "dataChange is set to false on metadata changing operation"
    with pytest.raises(Exception, match="DELTA_DATA_CHANGE_FALSE"):
        _odd(spark, [1]).write.format("deltalog").mode("append").option("dataChange", "false").save(table_path)
    assert not os.path.exists(os.path.join(table_path, "_delta_log", "00000000000000000000.json"))
