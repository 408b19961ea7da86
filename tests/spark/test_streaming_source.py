"""``spark.readStream.format("deltalog")``: the streaming source (Delta's ``DeltaSource``).

Pipelines run with ``trigger(availableNow=True)`` into a ``deltalog`` sink table, so a
restart from the same checkpoint is checked end to end: keys exactly once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
from typing import Any

import pytest

from deltalog.contrib.spark import DeltaTable
from deltalog.contrib.spark.errors import (
    DeltaSourceIgnoreChangesError,
    DeltaSourceMetadataEvolutionError,
    DeltaSourceSchemaChangedError,
    DeltaSourceSchemaEvolutionBlockedError,
    DeltaSourceTableChangedError,
)
from deltalog.contrib.spark.options import StreamReadOptions
from deltalog.contrib.spark.source import DeltaLogDataSource
from deltalog.contrib.spark.streaming import DeltaSourceReader
from tests.spark.helpers import operations

pytestmark = pytest.mark.spark


def _append(spark: Any, path: str, ids: list[int], **options: str) -> None:
    df = spark.createDataFrame([(i, i % 2) for i in ids], "id long, p long").coalesce(1)
    df.write.format("deltalog").mode("append").options(**options).save(path)


def _pipe(spark: Any, source: str, sink: str, checkpoint: str, **options: str) -> Any:
    """Run source -> sink until the source has nothing more (Trigger.AvailableNow)."""
    query = (
        spark.readStream.format("deltalog")
        .options(**options)
        .load(source)
        .writeStream.format("deltalog")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(sink)
    )
    query.awaitTermination()
    return query


def _ids(spark: Any, path: str) -> list[int]:
    return sorted(r.id for r in spark.read.format("deltalog").load(path).collect())


def _batches_with_rows(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_snapshot_then_appends_restart_exactly_once(spark, table_path, tmp_path):
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "ck")
    _append(spark, table_path, [0, 1, 2])
    _append(spark, table_path, [3, 4])
    _pipe(spark, table_path, sink, checkpoint)  # the initial snapshot (version 1)
    assert _ids(spark, sink) == [0, 1, 2, 3, 4]
    offsets = sorted(os.listdir(os.path.join(checkpoint, "offsets")), key=lambda n: int(n) if n.isdigit() else -1)
    with open(os.path.join(checkpoint, "offsets", offsets[-1]), encoding="utf-8") as f:
        stored = json.loads(f.read().splitlines()[-1])
    assert stored["sourceVersion"] == 1 and stored["reservoirVersion"] == 2 and stored["index"] == -1
    assert stored["isStartingVersion"] is False and stored["reservoirId"]

    _append(spark, table_path, [5, 6])
    _pipe(spark, table_path, sink, checkpoint)  # restarted: only the new commit
    assert _ids(spark, sink) == list(range(7))

    # killed after the sink committed the last batch but before Spark recorded it: the batch
    # is planned again from its stored offsets, and the sink recognises it
    last = max(int(n) for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit())
    for name in (str(last), f".{last}.crc"):
        if os.path.exists(os.path.join(checkpoint, "commits", name)):
            os.remove(os.path.join(checkpoint, "commits", name))
    _append(spark, table_path, [7])
    _pipe(spark, table_path, sink, checkpoint)
    assert _ids(spark, sink) == list(range(8))
    assert set(operations(sink)) == {"STREAMING UPDATE"}


def test_max_files_per_trigger_restart_mid_snapshot_and_optimize(spark, table_path, tmp_path):
    for ids in ([0, 1], [2, 3], [4, 5]):
        _append(spark, table_path, ids)
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "ck")
    query = _pipe(spark, table_path, sink, checkpoint, maxFilesPerTrigger="1")
    assert _batches_with_rows(query) == [2, 2, 2]  # the initial snapshot, one file a batch
    # killed mid-snapshot: batch 1 reached the sink but Spark did not record it, batch 2 was
    # never planned; meanwhile the source is compacted (dataChange=false) and appended to
    for name in ("commits/1", "commits/.1.crc", "commits/2", "commits/.2.crc", "offsets/2", "offsets/.2.crc"):
        if os.path.exists(os.path.join(checkpoint, name)):
            os.remove(os.path.join(checkpoint, name))
    DeltaTable.forPath(spark, table_path).optimize().executeCompaction()
    _append(spark, table_path, [6])
    _pipe(spark, table_path, sink, checkpoint, maxFilesPerTrigger="1")
    assert _ids(spark, sink) == list(range(7))
    # a new query reads the compacted file once; maxBytesPerTrigger still admits one file a batch
    other = str(tmp_path / "sink2")
    query = _pipe(spark, table_path, other, str(tmp_path / "ck2"), maxBytesPerTrigger="1b")
    assert _batches_with_rows(query) == [6, 1] and _ids(spark, other) == list(range(7))


def test_deletes_and_updates_fail_unless_allowed(spark, table_path, tmp_path):
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "ck")
    _append(spark, table_path, [0, 1, 2, 3], partitionBy="p")
    _pipe(spark, table_path, sink, checkpoint)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("p = 0")  # removes whole files: a delete-only commit
    deleted = (
        r"(?s)DeltaSourceIgnoreDeleteError: DELTA_SOURCE_IGNORE_DELETE: Detected deleted data.*version 1.*ignoreDeletes"
    )
    with pytest.raises(Exception, match=deleted):
        _pipe(spark, table_path, sink, checkpoint)
    _pipe(spark, table_path, sink, checkpoint, ignoreDeletes="true")
    table.delete("id = 1")  # rewrites a file: removes and adds
    updated = r"(?s)DeltaSourceIgnoreChangesError: DELTA_SOURCE_TABLE_IGNORE_CHANGES: Detected a data update.*version 2"
    with pytest.raises(Exception, match=updated):
        _pipe(spark, table_path, sink, checkpoint, ignoreDeletes="true")
    _append(spark, table_path, [10, 11])
    _pipe(spark, table_path, sink, checkpoint, skipChangeCommits="true")
    assert _ids(spark, sink) == [0, 1, 2, 3, 10, 11]  # the deletes are not streamed, the append is
    # the deprecated ignoreChanges streams the files a change commit adds (row 3 again)
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.txn.delta_log import DeltaLog

    table_id = DeltaLog.for_table(table_path).update().metadata.id
    start = {"sourceVersion": 1, "reservoirId": table_id, "reservoirVersion": 2, "index": -1}
    start["isStartingVersion"] = False
    # DeltaSourceSuite "read options [ignoreFileDeletion] (deprecated): equivalent to ignoreChanges"
    cases = [({"ignoreChanges": "true"}, [2, 3]), ({"ignoreFileDeletion": "true"}, [2, 3])]
    for options, added in [*cases, ({"skipChangeCommits": "true"}, [3])]:
        reader = _reader(table_path, **options)
        end = reader.latestOffset(start, ReadAllAvailable())
        got = sorted(f.path for p in reader.partitions(start, end) for f in p.files)
        assert got == sorted(a["add"]["path"] for v in added for a in _commit(table_path, v) if "add" in a)


def test_starting_version(spark, table_path, tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.txn.delta_log import DeltaLog

    for i in range(3):
        _append(spark, table_path, [i])
    from_one = str(tmp_path / "from1")
    _pipe(spark, table_path, from_one, str(tmp_path / "ck1"), startingVersion="1")
    assert _ids(spark, from_one) == [1, 2]
    # startingTimestamp: the first commit at or after it
    at_two = next(r.timestamp for r in DeltaLog.for_table(table_path).history() if r.version == 2)
    when = dt.datetime.fromtimestamp(at_two / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")
    reader = _reader(table_path, startingTimestamp=when)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert [f.path for p in reader.partitions(start, end) for f in p.files] == [
        a["add"]["path"] for a in _commit(table_path, 2) if "add" in a
    ]
    # past the latest commit: the version or timestamp does not exist (Delta's
    # VersionNotFoundException and DELTA_TIMESTAMP_GREATER_THAN_COMMIT), as in time travel
    from deltalog.txn.protocol.errors import VersionNotFoundError

    cases = [
        # DeltaSourceSuite "startingVersion": Delta's DELTA_VERSION_NOT_FOUND text
        (
            {"startingVersion": "3"},
            r"^DELTA_VERSION_NOT_FOUND: Cannot time travel Delta table to version 3\. Available "
            r"versions: \[0, 2\]\..*startingVersion='latest'",
        ),
        ({"startingTimestamp": "2999-01-01"}, "^DELTA_TIMESTAMP_GREATER_THAN"),
    ]
    for options, message in cases:
        with pytest.raises(VersionNotFoundError, match=message) as info:
            _reader(table_path, **options).latestOffset(start, ReadAllAvailable())
        assert info.value.latest == 2
    assert f"at {when})" in str(info.value)  # as Delta's, it names the latest commit's time
    # DeltaSourceSuite "startingTimestamp": text that is no timestamp is DELTA_TIMESTAMP_INVALID
    with pytest.raises(ValueError, match=r"^DELTA_TIMESTAMP_INVALID"):
        _reader(table_path, startingTimestamp="i am not a timestamp").latestOffset(start, ReadAllAvailable())
    # with Delta's timestampOutOfRange conf (given as an option) a start past the latest commit
    # is no error: the stream reads the commits from there on (Delta's getStartingVersion)
    lenient = {"spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled": "true"}
    ahead = [
        _reader(table_path, **options, **lenient)
        for options in ({"startingVersion": "3"}, {"startingTimestamp": "2999-01-01"})
    ]
    for early in ahead:
        assert early.latestOffset(early.initialOffset(), ReadAllAvailable()) == early.initialOffset()
    # startingVersion=latest: only commits after the query started
    reader = _reader(table_path, startingVersion="latest")
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadAllAvailable()) == start
    _append(spark, table_path, [3])
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end["reservoirVersion"] == 4 and end["index"] == -1
    assert [f.path for p in reader.partitions(start, end) for f in p.files] == [
        a["add"]["path"] for a in _commit(table_path, 3) if "add" in a
    ]
    for early in ahead:
        assert early.latestOffset(early.initialOffset(), ReadAllAvailable()) == end


def _commit(path: str, version: int) -> list[dict[str, Any]]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _reader(path: str, **options: str) -> DeltaSourceReader:
    """The source alone, reading the table's columns (as Spark creates it for a query)."""
    from deltalog.contrib.spark.logical_schema import logical_struct
    from deltalog.txn.delta_log import DeltaLog

    schema = logical_struct(DeltaLog.for_table(path).update().metadata.schema_string)
    return DeltaSourceReader(StreamReadOptions.parse({"path": path, **options}), schema)


def test_offsets_schema_change_and_table_id(spark, table_path, tmp_path):
    """The reader alone (no query): offsets round-trip through JSON; a schema change or a
    re-created table stops it with a typed error."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    _append(spark, table_path, [0, 1])
    reader = _reader(table_path)
    start = json.loads(json.dumps(reader.initialOffset()))
    end = json.loads(json.dumps(reader.latestOffset(start, ReadAllAvailable())))
    assert end["reservoirVersion"] == 1 and end["index"] == -1
    assert [len(p.files) for p in reader.partitions(start, end)] == [1]
    assert reader.latestOffset(end, ReadAllAvailable()) == end
    spark.createDataFrame([(2, 0, "x")], "id long, p long, s string").write.format("deltalog").mode("append").option(
        "mergeSchema", "true"
    ).save(table_path)
    with pytest.raises(DeltaSourceSchemaChangedError, match="version 1"):
        reader.latestOffset(end, ReadAllAvailable())
    other = str(tmp_path / "other")
    _append(spark, other, [0])
    with pytest.raises(DeltaSourceTableChangedError, match="id has changed"):
        _reader(other).latestOffset(end, ReadAllAvailable())


def test_change_feed_as_a_stream(spark, table_path):
    _append(spark, table_path, [0, 1, 2], partitionBy="p", **{"delta.enableChangeDataFeed": "true"})
    DeltaTable.forPath(spark, table_path).delete("id = 1")
    _append(spark, table_path, [5])

    def changes(name: str, **options: str) -> list[tuple[int, str, int]]:
        query = (
            spark.readStream.format("deltalog")
            .option("readChangeFeed", "true")
            .options(**options)
            .load(table_path)
            .writeStream.format("memory")
            .queryName(name)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        got = spark.table(name).select("id", "_change_type", "_commit_version").collect()
        return sorted((r.id, r._change_type, r._commit_version) for r in got)

    assert changes("cdf_from_0", startingVersion="0") == [
        (0, "insert", 0),
        (1, "delete", 1),
        (1, "insert", 0),
        (2, "insert", 0),
        (5, "insert", 2),
    ]
    # no startingVersion: the latest snapshot's rows as inserts, at its version
    assert changes("cdf_snapshot") == [(0, "insert", 2), (2, "insert", 2), (5, "insert", 2)]


def test_change_feed_stream_rate_limits_split_plain_commits(spark, table_path):
    """Delta's ``DeltaCDCStreamSuite`` "rateLimit - overall": a commit of plain adds and
    removes is admitted file by file (``IndexedChangeFileSeq.filterFiles``), one with ``cdc``
    files or deletion vectors whole; a query stopped in the middle of a commit resumes there."""
    from pyspark.sql.functions import expr, lit
    from pyspark.sql.streaming.datasource import ReadMaxBytes, ReadMaxFiles

    cdf = {"delta.enableChangeDataFeed": "true"}
    _append(spark, table_path, [0, 1, 2, 3], partitionBy="p", **cdf)  # v0: two files
    spark.createDataFrame([(4, -1)], "id long, p long").write.format("deltalog").mode("append").save(table_path)
    table = DeltaTable.forPath(spark, table_path)
    table.delete("p = -1")  # v2: a remove
    table.update(expr("id < 2"), {"id": lit(0)})  # v3, v4: two cdc files each
    table.update(expr("id > 1"), {"id": lit(0)})
    for option, limit in (("maxFilesPerTrigger", ReadMaxFiles(1)), ("maxBytesPerTrigger", ReadMaxBytes(1))):
        reader = _reader(table_path, readChangeFeed="true", startingVersion="0", **{option: "1"})
        start, sizes, ends = reader.initialOffset(), [], []
        while (end := json.loads(json.dumps(reader.latestOffset(start, limit)))) != start:
            sizes.append(sum(b.num_rows for p in reader.partitions(start, end) for b in reader.read(p)))
            start, ends = end, [*ends, (end["reservoirVersion"], end["index"])]
        assert sizes == [2, 2, 1, 1, 4, 4], (option, sizes)
        assert ends[0] == (0, 0)  # in the middle of version 0
    # a commit that does not fit stops the batch there (Delta's "batch reject stops iteration"),
    # and the next batch takes it first whatever its size
    for files, expected in ((3, [5, 5, 4]), (2, [4, 2, 4, 4])):
        reader = _reader(table_path, readChangeFeed="true", startingVersion="0", maxFilesPerTrigger=str(files))
        start, sizes = reader.initialOffset(), []
        while (end := reader.latestOffset(start, ReadMaxFiles(files))) != start:
            sizes.append(sum(b.num_rows for p in reader.partitions(start, end) for b in reader.read(p)))
            start = end
        assert sizes == expected, (files, sizes)
    # restarted from the mid-commit offset: the rest of version 0, then on
    source = DeltaLogDataSource(
        {"path": table_path, "readChangeFeed": "true", "startingVersion": "0", "maxFilesPerTrigger": "1"}
    )
    reader = source.streamReader(source.schema())
    middle = {**reader.initialOffset(), "reservoirVersion": 0, "index": 0, "isStartingVersion": False}
    end = reader.latestOffset(middle, ReadMaxFiles(1))
    rows = [r for p in reader.partitions(middle, end) for b in reader.read(p) for r in b.to_pylist()]
    assert (end["reservoirVersion"], end["index"]) == (1, -1)
    assert sorted((r["id"], r["_change_type"], r["_commit_version"]) for r in rows) in (
        [(0, "insert", 0), (2, "insert", 0)],
        [(1, "insert", 0), (3, "insert", 0)],
    )


def test_deletion_vector_deletes_in_a_stream(spark, table_path):
    """Delta's ``DeltaSourceDeletionVectorsSuite`` "DELETE->DELETE" in one batch: a DELETE that
    writes deletion vectors re-adds its files, so it is a change commit: it stops the stream,
    ``ignoreChanges`` streams the files' remaining rows again, ``skipChangeCommits`` nothing.
    In the change feed (``DeltaCDCStreamSuite`` "CDC DV-diff") such a commit is admitted whole
    and streams only the deleted rows."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles

    props = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    for ids in ([0, 1, 2], [3, 4, 5], [6, 7, 8]):
        _append(spark, table_path, ids, **props)
    before = _reader(table_path).initialOffset()
    before = {**before, "reservoirVersion": 3, "index": -1, "isStartingVersion": False}
    table = DeltaTable.forPath(spark, table_path)
    table.delete("id = 3 OR id = 7")  # version 3: two files re-added with deletion vectors
    table.delete("id = 4")  # version 4
    assert all(a["add"].get("deletionVector") for a in _commit(table_path, 3) if "add" in a)
    with pytest.raises(DeltaSourceIgnoreChangesError, match="version 3"):
        _reader(table_path).latestOffset(before, ReadAllAvailable())
    for options, again in (({"ignoreChanges": "true"}, [4, 5, 5, 6, 8]), ({"skipChangeCommits": "true"}, [])):
        _, ids, _ = _run_batches(_reader(table_path, **options), before, ReadAllAvailable())
        assert sorted(ids) == again, options
    source = DeltaLogDataSource(
        {"path": table_path, "readChangeFeed": "true", "startingVersion": "3", "maxFilesPerTrigger": "1"}
    )
    reader = source.streamReader(source.schema())
    start, batches = reader.initialOffset(), []
    while (end := reader.latestOffset(start, ReadMaxFiles(1))) != start:
        rows = [r for p in reader.partitions(start, end) for b in reader.read(p) for r in b.to_pylist()]
        batches.append(sorted((r["id"], r["_change_type"], r["_commit_version"]) for r in rows))
        start = end
    assert batches == [[(3, "delete", 3), (7, "delete", 3)], [(4, "delete", 4)]]


def test_a_change_feed_stream_far_behind_reads_each_commit_a_few_times(spark, table_path, monkeypatch):
    """A change-feed stream 20 commits behind, one commit a batch: each batch finds the
    changes of the commits it reaches, not of every commit up to the latest (which made
    catching up quadratic in the commits behind)."""
    import shutil

    from pyspark.sql.streaming.datasource import ReadMaxFiles

    from deltalog.txn.commit.operations import Write
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot_management import SnapshotManagement
    from deltalog.txn.protocol.actions import AddFile

    _append(spark, table_path, [0], **{"delta.enableChangeDataFeed": "true"})
    log = DeltaLog.for_table(table_path)
    (first,) = log.update().files
    behind = 20
    for n in range(behind):
        shutil.copy(os.path.join(table_path, first.path), os.path.join(table_path, f"copy-{n}.parquet"))
        add = AddFile(f"copy-{n}.parquet", {}, first.size, first.modification_time, data_change=True)
        log.start_transaction().commit([add], Write())
    reads = []
    real = SnapshotManagement.read_commit
    monkeypatch.setattr(SnapshotManagement, "read_commit", lambda self, v: reads.append(v) or real(self, v))
    reader = _reader(table_path, readChangeFeed="true", startingVersion="1", maxFilesPerTrigger="1")
    start, versions = reader.initialOffset(), []
    while (end := reader.latestOffset(start, ReadMaxFiles(1))) != start:
        versions += [f.constants["_commit_version"] for p in reader.partitions(start, end) for f in p.files]
        start = end
    assert versions == list(range(1, behind + 1))
    assert len(reads) <= 6 * behind, len(reads)  # a few reads per commit, not ~behind per batch


def test_change_feed_stream_into_a_table(spark, table_path, tmp_path):
    """The change feed archived into a table without the change feed (a Delta pattern): its
    ``_change_type``, ``_commit_version`` and ``_commit_timestamp`` are ordinary columns there,
    so every change is a row of the sink, exactly once across a restart."""
    _append(spark, table_path, [0, 1, 2], partitionBy="p", **{"delta.enableChangeDataFeed": "true"})
    DeltaTable.forPath(spark, table_path).delete("id = 1")
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "ck")
    _pipe(spark, table_path, sink, checkpoint, readChangeFeed="true", startingVersion="0")
    _append(spark, table_path, [5])
    _pipe(spark, table_path, sink, checkpoint, readChangeFeed="true", startingVersion="0")
    got = spark.read.format("deltalog").load(sink).collect()
    assert sorted((r.id, r._change_type, r._commit_version) for r in got) == [
        (0, "insert", 0),
        (1, "delete", 1),
        (1, "insert", 0),
        (2, "insert", 0),
        (5, "insert", 2),
    ]
    assert all(r._commit_timestamp is not None for r in got)
    assert not os.path.exists(os.path.join(sink, "_change_data"))


def test_exclude_regex_and_options_not_implemented(spark, table_path):
    """``excludeRegex`` leaves out the files whose path it matches (Delta applies it to the
    batch's files, after admission); Delta source options deltalog does not implement are
    refused by name instead of being taken as storage options and ignored."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles

    from deltalog.contrib.spark.errors import InvalidWriteOptionError

    _append(spark, table_path, [0, 1], partitionBy="p")
    _append(spark, table_path, [2, 3])
    paths = [a["add"]["path"] for v in (0, 1) for a in _commit(table_path, v) if "add" in a]
    kept = [p for p in paths if "p=1/" not in p]
    assert len(kept) == 2 and len(paths) == 4
    for limit in (ReadAllAvailable(), ReadMaxFiles(1)):
        reader = _reader(table_path, startingVersion="0", excludeRegex="p=1/", maxFilesPerTrigger="1")
        start, got = reader.initialOffset(), []
        while (end := reader.latestOffset(start, limit)) != start:
            got += [f.path for p in reader.partitions(start, end) for f in p.files]
            start = end
        assert sorted(got) == sorted(kept)
    # the change feed's initial snapshot (Delta's IndexedChangeFileSeq) leaves an excluded file
    # out before the limit counts it: one kept file a batch, no empty batch
    reader = _reader(table_path, readChangeFeed="true", excludeRegex="p=1/", maxFilesPerTrigger="1")
    start, batches = reader.initialOffset(), []
    while (end := reader.latestOffset(start, ReadMaxFiles(1))) != start:
        batches.append([f.path for p in reader.partitions(start, end) for f in p.files])
        start = end
    assert sorted(batches) == sorted([[p] for p in kept])
    for options in (
        {"excludeRegex": "("},
        {"failOnDataLoss": "maybe"},
        {"ignoreFileDeletion": "yes"},
        {"withEventTimeOrder": "true"},
        {"versionAsOf": "0"},
    ):
        with pytest.raises(InvalidWriteOptionError, match=next(iter(options))):
            _reader(table_path, **options)
    _reader(table_path, failOnDataLoss="true")  # Delta's default


def _run_batches(reader: DeltaSourceReader, start: dict[str, Any], limit: Any, stop_after: int | None = None) -> Any:
    """Spark's micro-batch loop over ``reader`` alone: (last offset, ids read, planned batch).
    ``stop_after``: stop once that many batches were planned, the last one read but not
    recorded (as after a crash before Spark's commit), and return it as the planned batch."""
    ids: list[int] = []
    done = 0
    while (end := json.loads(json.dumps(reader.latestOffset(start, limit)))) != start:
        ids += [i for p in reader.partitions(start, end) for b in reader.read(p) for i in b.column("id").to_pylist()]
        done += 1
        if done == stop_after:
            return start, ids, end
        start = end
    return start, ids, None


def test_delta_rs_table_restart_mid_commit(table_path):
    """A table written by delta-rs, one file a batch (maxBytesPerTrigger) so that a commit of
    several files spans batches; the query stops in the middle of a commit, a new reader
    replays the unrecorded batch and goes on across OPTIMIZE (dataChange=false), a
    checkpoint and a delete-only commit (ignoreDeletes): every id exactly once."""
    import deltalake
    import pyarrow as pa
    from pyspark.sql.streaming.datasource import ReadMaxBytes

    def write(ids: list[int]) -> None:
        data = pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([i % 3 for i in ids], pa.int64())})
        deltalake.write_deltalake(table_path, data, mode="append", partition_by=["p"])

    write([0, 1])
    options = {"maxBytesPerTrigger": "1", "ignoreDeletes": "true"}
    limit = ReadMaxBytes(1)
    reader = _reader(table_path, **options)
    start = reader.initialOffset()
    start, ids, _ = _run_batches(reader, start, limit)
    write([2, 3, 4])  # three files
    committed, got, planned = _run_batches(reader, start, limit, stop_after=2)
    ids += got
    assert planned is not None and planned["index"] >= 0  # stopped inside the commit
    table = deltalake.DeltaTable(table_path)
    table.optimize.compact()
    table.create_checkpoint()
    write([5, 6])
    deltalake.DeltaTable(table_path).delete("p = 2")  # 2 and 5 stay streamed
    reader = _reader(table_path, **options)  # restarted: the planned batch again, then on
    replayed = [
        i for p in reader.partitions(committed, planned) for b in reader.read(p) for i in b.column("id").to_pylist()
    ]
    assert replayed == got[-len(replayed) :]
    _, rest, _ = _run_batches(reader, planned, limit)
    assert sorted(ids + rest) == list(range(7))


def test_column_mapping_enabled_mid_stream(spark, table_path):
    """Enabling column mapping on an existing table keeps every column's name as its
    physical name: the stream goes on through it (Delta's
    ``hasNoColumnMappingSchemaChanges``), and a stream from before it reads the old files."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    _append(spark, table_path, [0, 1])
    reader = _reader(table_path)
    start, ids, _ = _run_batches(reader, reader.initialOffset(), ReadAllAvailable())
    table = DeltaTable.forPath(spark, table_path)
    table.setProperties({"delta.columnMapping.mode": "name"})
    _append(spark, table_path, [2])
    _, more, _ = _run_batches(reader, start, ReadAllAvailable())
    assert sorted(ids + more) == [0, 1, 2]
    from_zero = _reader(table_path, startingVersion="0")
    _, ids, _ = _run_batches(from_zero, from_zero.initialOffset(), ReadAllAvailable())
    assert sorted(ids) == [0, 1, 2]
    table.renameColumn("p", "q")  # a real change of the schema still stops it, and for good:
    with pytest.raises(DeltaSourceSchemaChangedError, match=r"RENAME/DROP COLUMN.*schemaTrackingLocation"):
        reader.latestOffset(start, ReadAllAvailable())
    # turning column mapping off (the files rewritten under their names) stops a stream that
    # started with it, even when no physical name changes (Delta prohibits reading across it)
    table.renameColumn("q", "p")
    reader = _reader(table_path)
    start, _, _ = _run_batches(reader, reader.initialOffset(), ReadAllAvailable())
    table.setProperties({"delta.columnMapping.mode": "none"})
    with pytest.raises(DeltaSourceSchemaChangedError):
        reader.latestOffset(start, ReadAllAvailable())


def test_a_schema_given_to_the_stream_must_be_the_tables(spark, table_path):
    """``readStream.schema(...)`` naming a column the table does not have, or another type,
    is refused (Delta's ``DELTA_READ_SOURCE_SCHEMA_CONFLICT``) instead of streaming nulls."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.source import DeltaLogDataSource

    _append(spark, table_path, [0, 1])
    source = DeltaLogDataSource({"path": table_path})
    for fields in ([("id", LongType()), ("q", LongType())], [("id", StringType()), ("p", LongType())]):
        with pytest.raises(DeltaAnalysisError, match="DELTA_READ_SOURCE_SCHEMA_CONFLICT"):
            source.streamReader(StructType([StructField(n, t) for n, t in fields]))
    same = StructType([StructField("p", LongType(), False), StructField("id", LongType())])
    assert source.streamReader(same).schema == same  # order and nullability do not matter


def test_type_widening_before_the_stream_schema(spark, tmp_path):
    """Commits from before a type widening are read with the wider type (Delta lets a stream
    backfill through a widening when the table supports it), so a stream started, or
    restarted, before the widening gets past it."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    table_path = str(tmp_path / "widened")  # delta-rs does not read typeWidening tables
    df = spark.createDataFrame([(0, 1)], "id long, n int").coalesce(1)
    df.write.format("deltalog").mode("append").option("delta.enableTypeWidening", "true").save(table_path)
    DeltaTable.forPath(spark, table_path).alterColumnType("n", "long")
    spark.createDataFrame([(1, 1 << 40)], "id long, n long").write.format("deltalog").mode("append").save(table_path)
    reader = _reader(table_path, startingVersion="0")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    rows = [r for p in reader.partitions(start, end) for b in reader.read(p) for r in b.to_pylist()]
    assert sorted((r["id"], r["n"]) for r in rows) == [(0, 1), (1, 1 << 40)]


def test_read_row_tracking_as_a_stream(spark, table_path):
    """``readRowTracking`` in a stream gives each row its ``_metadata`` row id and row commit
    version, as the batch read does (it streamed nulls)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.contrib.spark.source import DeltaLogDataSource

    _append(spark, table_path, [0, 1], **{"delta.enableRowTracking": "true"})
    _append(spark, table_path, [2])
    options = {"path": table_path, "readRowTracking": "true", "startingVersion": "0"}
    source = DeltaLogDataSource(options)
    reader = source.streamReader(source.schema())
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    got = sorted(
        (r["id"], r["_metadata"]["row_id"], r["_metadata"]["row_commit_version"])
        for p in reader.partitions(start, end)
        for b in reader.read(p)
        for r in b.to_pylist()
    )
    batch = spark.read.format("deltalog").option("readRowTracking", "true").load(table_path)
    assert got == sorted((r.id, r._metadata.row_id, r._metadata.row_commit_version) for r in batch.collect())
    assert [v for _, _, v in got] == [0, 0, 1]


def test_change_feed_commit_timestamp_is_the_commits(spark, table_path):
    """``_commit_timestamp`` is the commit's timestamp as Delta's change feed has it (its
    in-commit timestamp, else the commit file's modification time, as the history and
    ``startingTimestamp`` count it), not the writer's clock in ``commitInfo``."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.contrib.spark.source import DeltaLogDataSource

    _append(spark, table_path, [0], **{"delta.enableChangeDataFeed": "true"})
    _append(spark, table_path, [1])
    later = _commit(table_path, 1)[0]["commitInfo"]["timestamp"] + 86_400_000  # a day after its commitInfo
    os.utime(os.path.join(table_path, "_delta_log", f"{1:020d}.json"), ns=(later * 1_000_000, later * 1_000_000))
    source = DeltaLogDataSource({"path": table_path, "readChangeFeed": "true", "startingVersion": "0"})
    reader = source.streamReader(source.schema())
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    rows = [r for p in reader.partitions(start, end) for b in reader.read(p) for r in b.to_pylist()]
    stamps = {r["id"]: round(r["_commit_timestamp"].timestamp() * 1000) for r in rows}
    assert stamps[1] == later


def test_stream_behind_log_cleanup_fail_on_data_loss(table_path):
    """A stream whose next commit was deleted by log cleanup: Delta's
    ``DELTA_MISSING_FILES_UNEXPECTED_VERSION`` by default (``failOnDataLoss=true``); with
    ``failOnDataLoss=false`` it goes on from the earliest commit left, as Delta's
    ``getChangesIterator`` does (the lost commits' rows are skipped, the later ones read once)."""
    import deltalake
    import pyarrow as pa
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.contrib.spark.errors import DeltaSourceDataLossError
    from deltalog.txn.delta_log import DeltaLog

    def write(ids: list[int]) -> None:
        data = pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([i % 2 for i in ids], pa.int64())})
        deltalake.write_deltalake(table_path, data, mode="append", configuration={"delta.enableChangeDataFeed": "true"})

    write([0])
    reader = _reader(table_path)
    start, ids, _ = _run_batches(reader, reader.initialOffset(), ReadAllAvailable())
    assert ids == [0] and start["reservoirVersion"] == 1
    for i in (1, 2, 3):
        write([i])
    log = DeltaLog.for_table(table_path)
    log.checkpoint()  # at version 3
    write([4])
    assert log.cleanup_expired_logs(now_ms=32_503_680_000_000) >= 3  # commits 0-2 are gone
    with pytest.raises(
        DeltaSourceDataLossError, match="cannot resume from version 1; transaction log starts at 3"
    ) as info:
        _reader(table_path).latestOffset(start, ReadAllAvailable())
    assert info.value.expected == 1 and info.value.earliest == 3
    lenient = _reader(table_path, failOnDataLoss="false")
    _, more, _ = _run_batches(lenient, start, ReadAllAvailable())
    assert sorted(more) == [3, 4]
    with pytest.raises(DeltaSourceDataLossError):  # the change feed as a stream: the same rule
        _reader(table_path, readChangeFeed="true").latestOffset(start, ReadAllAvailable())
    _, changed, _ = _run_batches(
        _reader(table_path, readChangeFeed="true", failOnDataLoss="false"), start, ReadAllAvailable()
    )
    assert sorted(changed) == [3, 4]
    # a gap between the commits a stream reads (Delta's "incremental: commit file gap between
    # versions"): 5 and 7 there, 6 missing; the same error, or 6 skipped
    start, _, _ = _run_batches(lenient, start, ReadAllAvailable())
    for i in (5, 6, 7):
        write([i])
    log.checkpoint()  # at version 7: the table stays readable without commit 6
    os.remove(os.path.join(table_path, "_delta_log", f"{6:020d}.json"))
    for options in ({}, {"readChangeFeed": "true"}):
        with pytest.raises(DeltaSourceDataLossError, match="cannot resume from version 6; transaction log starts at 7"):
            _reader(table_path, **options).latestOffset(start, ReadAllAvailable())
        _, more, _ = _run_batches(_reader(table_path, failOnDataLoss="false", **options), start, ReadAllAvailable())
        assert sorted(more) == [5, 7], options


def test_trailing_commit_missing_when_the_batch_is_read(table_path):
    """Delta's "fail on missing trailing commit": a commit planned into a batch (by
    ``latestOffset``) and gone from the log when the batch is read fails the batch with
    ``DELTA_STREAMING_TRAILING_COMMIT_MISSING`` rather than reading it as empty, whether the
    batch ends in the middle of the commit or after it, in the change feed too, and also with
    ``failOnDataLoss=false`` (Delta checks it regardless)."""
    import deltalake
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.streaming.datasource import ReadMaxFiles

    from deltalog.contrib.spark.errors import DeltaSourceTrailingCommitMissingError
    from deltalog.txn.commit.operations import Write
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import AddFile

    for ids in ([0], [1]):
        data = pa.table({"id": pa.array(ids, pa.int64())})
        deltalake.write_deltalake(table_path, data, mode="append", configuration={"delta.enableChangeDataFeed": "true"})
    adds = []
    for i in (2, 3, 4):  # version 2: three files
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), os.path.join(table_path, f"v2-{i}.parquet"))
        adds.append(AddFile(f"v2-{i}.parquet", {}, os.path.getsize(os.path.join(table_path, f"v2-{i}.parquet")), 0))
    DeltaLog.for_table(table_path).start_transaction().commit(adds, Write())
    commit_two = os.path.join(table_path, "_delta_log", f"{2:020d}.json")
    with open(commit_two, encoding="utf-8") as f:
        saved = f.read()
    for options in ({}, {"readChangeFeed": "true"}, {"failOnDataLoss": "false"}):
        for limit, end_at in ((ReadMaxFiles(3), (2, 0)), (ReadMaxFiles(1000), (3, -1))):
            source = DeltaLogDataSource({"path": table_path, "startingVersion": "0", **options})
            reader = source.streamReader(source.schema())
            start = reader.initialOffset()
            end = reader.latestOffset(start, limit)
            assert (end["reservoirVersion"], end["index"]) == end_at
            os.remove(commit_two)
            try:
                with pytest.raises(DeltaSourceTrailingCommitMissingError, match=r"up to version 2 .* after version 1"):
                    reader.partitions(start, end)
            finally:
                with open(commit_two, "w", encoding="utf-8") as f:
                    f.write(saved)
            assert sum(len(p.files) for p in reader.partitions(start, end)) == (3 if end_at[1] == 0 else 5)
    # a batch with nothing to read in its end version is no false alarm (Delta's "empty batch
    # from startIndex >= endIndex is not a false positive")
    for index in (1, 2):
        begin = {**start, "reservoirVersion": 2, "index": index, "isStartingVersion": False}
        assert not any(p.files for p in reader.partitions(begin, {**begin, "index": 1, "isStartingVersion": True}))


def test_schema_tracking_location_rename_then_drop(spark, tmp_path):
    """A column-mapped table streamed with ``schemaTrackingLocation``: the schema log is
    Delta's (``<location>/_schema_log_<tableId>/<n>``, ``v1`` then ``PersistedMetadata``);
    RENAME COLUMN and DROP COLUMN each end the batch before them, record the new schema and
    fail the query once (``DELTA_STREAMING_METADATA_EVOLUTION``); restarted, the query
    refuses to go on until the change is unblocked (a reader option, or the SQL conf given as
    one), then reads with the new schema: every id exactly once."""
    from pyspark.errors import StreamingQueryException

    source, sink, ck = str(tmp_path / "src"), str(tmp_path / "sink"), str(tmp_path / "ck")
    schemas = os.path.join(ck, "_schemas")
    spark.createDataFrame([(0, 10), (1, 11)], "id long, b long").coalesce(1).write.format("deltalog").mode(
        "append"
    ).option("delta.columnMapping.mode", "name").save(source)
    table = DeltaTable.forPath(spark, source)

    def run(**options: str) -> None:
        reader = spark.readStream.format("deltalog").option("schemaTrackingLocation", schemas).options(**options)
        writer = reader.load(source).writeStream.format("deltalog").option("mergeSchema", "true")
        writer.option("checkpointLocation", ck).trigger(availableNow=True).start(sink).awaitTermination()

    def rows() -> list[tuple[Any, ...]]:
        df = spark.read.format("deltalog").load(sink)
        return sorted((tuple(r) for r in df.select(*sorted(df.columns)).collect()), key=lambda r: r[-1])

    run()
    (log_dir,) = os.listdir(schemas)
    table_id = next(a["metaData"]["id"] for a in _commit(source, 0) if "metaData" in a)
    assert log_dir == f"_schema_log_{table_id}"
    with open(os.path.join(schemas, log_dir, "0"), encoding="utf-8") as f:
        serde, entry = f.read().splitlines()
    entry = json.loads(entry)
    assert serde == "v1" and entry["deltaCommitVersion"] == 0 and json.loads(entry["dataSchemaJson"])["fields"]
    assert {"tableId", "partitionSchemaJson", "sourceMetadataPath", "tableConfigurations", "protocolJson"} <= set(entry)
    assert rows() == [(10, 0), (11, 1)]

    _append_cols(spark, source, "id long, b long", [(2, 12)])
    table.renameColumn("b", "c")
    _append_cols(spark, source, "id long, c long", [(3, 13)])
    with pytest.raises(StreamingQueryException, match="DELTA_STREAMING_METADATA_EVOLUTION"):
        run()
    assert rows() == [(10, 0), (11, 1), (12, 2)]  # the batch before the rename was written
    assert sorted(os.listdir(os.path.join(schemas, log_dir))) == ["0", "1"]
    with pytest.raises(
        StreamingQueryException, match=r"CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION.*RENAME COLUMN"
    ):
        run()
    run(allowSourceColumnRename="always")
    assert rows() == [(10, None, 0), (11, None, 1), (12, None, 2), (None, 13, 3)]

    table.dropColumn("c")
    _append_cols(spark, source, "id long", [(4,)])
    with pytest.raises(StreamingQueryException, match="DELTA_STREAMING_METADATA_EVOLUTION"):
        run(allowSourceColumnRename="always")
    source_options = {"path": source, "schemaTrackingLocation": schemas, "allowSourceColumnRename": "always"}
    with pytest.raises(DeltaSourceSchemaEvolutionBlockedError, match=r"(?s)DROP COLUMN.*allowSourceColumnDrop") as info:
        data_source = DeltaLogDataSource(source_options)
        data_source.streamReader(data_source.schema())
    # Delta's SQL conf for this stream and this change, as the message names it, set in the session
    conf_for_this_change = (
        r'spark\.conf\.set\("(spark\.databricks\.delta\.streaming\.allowSourceColumnDrop\.ckpt_-?\d+)", "4"\)'
    )
    (conf,) = re.findall(conf_for_this_change, str(info.value))
    spark.conf.set(conf, "4")
    try:
        run(allowSourceColumnRename="always")
    finally:
        spark.conf.unset(conf)
    assert [r[-1] for r in rows()] == [0, 1, 2, 3, 4]


def test_change_feed_stream_with_schema_tracking_across_rename(spark, tmp_path):
    """``readChangeFeed`` with ``schemaTrackingLocation`` (Delta's CDC source on the schema
    log): an UPDATE before a RENAME COLUMN is streamed with the old name, the rename ends the
    batch and stops the query once, and restarted with ``allowSourceColumnRename`` the DELETE
    after it (of a row written before it) streams with the new name: every change exactly
    once, with its ``_change_type`` and ``_commit_version``."""
    from pyspark.errors import StreamingQueryException

    source, sink, ck = str(tmp_path / "src"), str(tmp_path / "sink"), str(tmp_path / "ck")
    properties = {"delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"}
    spark.createDataFrame([(0, 10), (1, 11)], "id long, b long").coalesce(1).write.format("deltalog").mode(
        "append"
    ).options(**properties).save(source)
    table = DeltaTable.forPath(spark, source)

    def run(**options: str) -> None:
        reader = spark.readStream.format("deltalog").options(readChangeFeed="true", schemaTrackingLocation=ck + "/s")
        writer = reader.options(**options).load(source).writeStream.format("deltalog").option("mergeSchema", "true")
        writer.option("checkpointLocation", ck).trigger(availableNow=True).start(sink).awaitTermination()

    def rows() -> list[tuple[Any, ...]]:
        df = spark.read.format("deltalog").load(sink)
        cols = [c for c in ("id", "b", "c") if c in df.columns] + ["_change_type", "_commit_version"]
        return sorted((tuple(r) for r in df.select(*cols).collect()), key=lambda r: (r[-1], r[-2], r[0]))

    run()
    table.update("id = 1", {"b": "b + 100"})  # version 1
    table.renameColumn("b", "c")  # version 2
    table.delete("id = 0")  # version 3
    # a batch read with the (not yet updated) log reads with its schema: column b is no longer the
    # table's, refused rather than read as nulls (as without readChangeFeed)
    batch = spark.read.format("deltalog").options(readChangeFeed="true", schemaTrackingLocation=ck + "/s")
    with pytest.raises(Exception, match="DELTA_READ_SOURCE_SCHEMA_CONFLICT"):
        batch.option("startingVersion", 3).load(source).collect()
    with pytest.raises(StreamingQueryException, match="DELTA_STREAMING_METADATA_EVOLUTION"):
        run()
    assert rows() == [
        (0, 10, "insert", 0),
        (1, 11, "insert", 0),
        (1, 111, "update_postimage", 1),
        (1, 11, "update_preimage", 1),
    ]
    run(allowSourceColumnRename="always")
    assert rows() == [
        (0, 10, None, "insert", 0),
        (1, 11, None, "insert", 0),
        (1, 111, None, "update_postimage", 1),
        (1, 11, None, "update_preimage", 1),
        (0, None, 10, "delete", 3),
    ]


def test_change_feed_schema_tracking_barrier_and_fail_on_data_loss(table_path, tmp_path):
    """The change-feed source on the schema log, alone: a commit that changes the schema
    (an append adding a column) ends the batch at its barrier whatever its files, as Delta's
    ``IndexedChangeFileSeq.filterFiles`` returns only the barrier of such a commit, and its
    changes are read only after the restart; with ``failOnDataLoss=false`` a tracked stream
    reads no commit (Delta's ``require``: the schema log cannot tolerate missing commits)."""
    import deltalake
    import pyarrow as pa
    from pyspark.sql.streaming.datasource import ReadMaxFiles

    from deltalog.contrib.spark.errors import InvalidWriteOptionError

    def write(ids: list[int], **more: Any) -> None:
        data = {"id": pa.array(ids, pa.int64()), "p": pa.array([i % 2 for i in ids], pa.int64()), **more}
        deltalake.write_deltalake(
            table_path,
            pa.table(data),
            mode="append",
            partition_by=["p"],
            schema_mode="merge",
            configuration={"delta.enableChangeDataFeed": "true"},
        )

    write([0])
    write([1, 2], n=pa.array([1, 2], pa.int64()))  # version 1: a column added, two files
    options = {"path": table_path, "readChangeFeed": "true", "startingVersion": "0"}
    options["schemaTrackingLocation"] = str(tmp_path / "schemas")

    def reader(**more: str) -> DeltaSourceReader:
        data_source = DeltaLogDataSource({**options, **more})
        return data_source.streamReader(data_source.schema())

    with pytest.raises(DeltaSourceMetadataEvolutionError, match="version 0"):  # the log starts at version 0
        reader().latestOffset(reader().initialOffset(), ReadMaxFiles(2))
    source = reader()
    start = source.initialOffset()
    end = source.latestOffset(start, ReadMaxFiles(2))
    assert (end["reservoirVersion"], end["index"]) == (1, -20)  # not (1, -1): the barrier, not the limit
    assert [f.constants["_commit_version"] for p in source.partitions(start, end) for f in p.files] == [0]
    full = source.latestOffset(start, ReadMaxFiles(1))  # no capacity left: the batch ends before the commit
    assert (full["reservoirVersion"], full["index"]) == (1, -1)
    with pytest.raises(InvalidWriteOptionError, match="cannot tolerate missing commit files"):
        reader(failOnDataLoss="false").latestOffset(start, ReadMaxFiles(2))

    # a barrier commit's changes are not read before the restart: the change data feed turned
    # off (version 2) stops the stream after version 1's rows, then fails it when restarted (Delta's
    # changesToDF from version 2)
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.commands.alter import set_table_properties
    from deltalog.txn.delta_log import DeltaLog

    set_table_properties(DeltaLog.for_table(table_path), {"delta.enableChangeDataFeed": "false"})
    post = source.latestOffset(end, ReadMaxFiles(2))
    with pytest.raises(DeltaSourceMetadataEvolutionError, match="version 1"):
        source.commit(post)
    source = reader()
    off = source.latestOffset(post, ReadMaxFiles(9))
    assert (off["reservoirVersion"], off["index"]) == (2, -20)
    assert sorted(r["id"] for p in source.partitions(post, off) for b in source.read(p) for r in b.to_pylist()) == [
        1,
        2,
    ]
    with pytest.raises(DeltaSourceMetadataEvolutionError, match="version 2"):
        source.commit(source.latestOffset(off, ReadMaxFiles(9)))
    with pytest.raises(DeltaAnalysisError, match="DELTA_MISSING_CHANGE_DATA"):
        reader().latestOffset(dict(off, index=-19), ReadMaxFiles(9))


def _append_cols(spark: Any, path: str, schema: str, data: list[tuple[Any, ...]]) -> None:
    spark.createDataFrame(data, schema).coalesce(1).write.format("deltalog").mode("append").save(path)


def test_schema_tracking_merges_consecutive_changes_and_type_widening(spark, tmp_path):
    """The source alone: a RENAME then a type widening with no data between are one change
    (Delta merges consecutive metadata-only commits when the stream is loaded again); the
    barrier offset is Delta's (``sourceVersion`` 3, index -20, then -19); the merged change
    needs both ``allowSourceColumnRename`` and ``allowSourceColumnTypeChange``."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    path, schemas = str(tmp_path / "t"), str(tmp_path / "ck" / "_schemas")
    properties = {"delta.columnMapping.mode": "name", "delta.enableTypeWidening": "true"}
    spark.createDataFrame([(0, 1)], "id long, n int").coalesce(1).write.format("deltalog").mode("append").options(
        **properties
    ).save(path)
    options = {"path": path, "schemaTrackingLocation": schemas}

    def reader(**more: str) -> DeltaSourceReader:
        data_source = DeltaLogDataSource({**options, **more})
        return data_source.streamReader(data_source.schema())

    first = reader()
    start = first.initialOffset()
    end = first.latestOffset(start, ReadAllAvailable())  # starts the log at version 0
    table = DeltaTable.forPath(spark, path)
    table.renameColumn("n", "m")
    table.alterColumnType("m", "long")
    _append_cols(spark, path, "id long, m long", [(1, 1 << 40)])
    barrier = first.latestOffset(end, ReadAllAvailable())
    assert (barrier["sourceVersion"], barrier["reservoirVersion"], barrier["index"]) == (3, 1, -20)
    post = first.latestOffset(barrier, ReadAllAvailable())
    assert post["index"] == -19 and first.latestOffset(post, ReadAllAvailable()) == post
    assert [f for a, b in ((end, barrier), (barrier, post)) for p in first.partitions(a, b) for f in p.files] == []
    with pytest.raises(DeltaSourceMetadataEvolutionError, match="version 1"):
        first.commit(barrier)
    with pytest.raises(DeltaSourceSchemaEvolutionBlockedError, match="RENAME AND TYPE WIDENING"):
        reader(allowSourceColumnRename="always")
    log_dir = os.path.join(schemas, os.listdir(schemas)[0])
    with open(os.path.join(log_dir, "2"), encoding="utf-8") as f:
        merged = json.loads(f.read().split("\n")[1])
    assert merged["deltaCommitVersion"] == 2 and merged["previousMetadataSeqNum"] == 0
    second = reader(allowSourceColumnRename="always", allowSourceColumnTypeChange="2")
    last = second.latestOffset(post, ReadAllAvailable())
    rows = [r for p in second.partitions(post, last) for b in second.read(p) for r in b.to_pylist()]
    assert rows == [{"id": 1, "m": 1 << 40}] and last["sourceVersion"] == 1

    # two streams on one log: the second writer of an entry is refused; a torn entry too
    from deltalog.contrib.spark.errors import DeltaSourceSchemaLogError
    from deltalog.contrib.spark.streaming import open_schema_log

    parsed = StreamReadOptions.parse(options)
    table_id = os.path.basename(log_dir).removeprefix("_schema_log_")
    one, two = open_schema_log(parsed, table_id), open_schema_log(parsed, table_id)
    assert one is not None and two is not None and one.current is not None
    one.write(dataclasses.replace(one.current, delta_commit_version=3))
    with pytest.raises(DeltaSourceSchemaLogError, match="DELTA_STREAMING_SCHEMA_LOCATION_CONFLICT"):
        two.write(dataclasses.replace(one.current, delta_commit_version=4))
    with open(os.path.join(log_dir, "4"), "w", encoding="utf-8") as f:
        f.write("v1\n{")
    with pytest.raises(DeltaSourceSchemaLogError, match="DELTA_STREAMING_SCHEMA_LOG_DESERIALIZE_FAILED"):
        open_schema_log(parsed, table_id)


def test_schema_tracking_ignores_changes_of_internal_writer_metadata_only() -> None:
    """Delta's ``hasSchemaChangeComparedToStreamMetadata`` compares schemas without internal
    writer metadata (``removeInternalWriterMetadata``): a write that only moves an identity
    column's high-water mark, or a changed generation expression, is no schema change for a
    stream with ``schemaTrackingLocation``; a changed comment still is."""
    from deltalog.contrib.spark.schema_log import metadata_changed, persisted
    from deltalog.txn.protocol.actions import Metadata, Protocol

    def metadata(**meta: Any) -> Metadata:
        field = {"name": "id", "type": "long", "nullable": True, "metadata": meta}
        return Metadata(id="t", schema_string=json.dumps({"type": "struct", "fields": [field]}))

    identity = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": False}
    protocol = Protocol(1, 2)
    read = persisted("t", 1, metadata(**identity, **{"delta.identity.highWaterMark": 1}), protocol, "/t")
    assert not metadata_changed(read, metadata(**identity, **{"delta.identity.highWaterMark": 7}), protocol)
    generated = persisted("t", 1, metadata(**{"delta.generationExpression": "1"}), protocol, "/t")
    assert not metadata_changed(generated, metadata(**{"delta.generationExpression": "2"}), protocol)
    assert metadata_changed(generated, metadata(**{"delta.generationExpression": "1", "comment": "c"}), protocol)


def test_schema_change_inside_arrays_and_maps() -> None:
    """Delta's ``determineNonAdditiveSchemaChangeType`` finds renamed and dropped fields and
    widened types at any depth, inside arrays (``element``) and maps (``key``, ``value``) too
    (``SchemaMergingUtils.explode``, ``TypeWideningMetadata.collectTypeChanges``): such a
    change blocks a stream with ``schemaTrackingLocation`` until it is unblocked, and a type
    change that is no widening fails it, as at the top level."""
    from deltalog.contrib.spark.schema_log import blocked_change, persisted, schema_change
    from deltalog.txn.protocol.actions import Metadata, Protocol

    def field(name: str, t: Any, physical: str) -> dict[str, Any]:
        return {"name": name, "type": t, "nullable": True, "metadata": {"delta.columnMapping.physicalName": physical}}

    def struct(*fields: dict[str, Any]) -> dict[str, Any]:
        return {"type": "struct", "fields": list(fields)}

    def array(element: Any) -> dict[str, Any]:
        return {"type": "array", "elementType": element, "containsNull": True}

    def map_of(key: Any, value: Any) -> dict[str, Any]:
        return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True}

    old = struct(
        field("arr", array(struct(field("x", "integer", "c2"), field("y", "integer", "c3"))), "c1"),
        field("m", map_of("string", struct(field("u", "integer", "c5"))), "c4"),
        field("w", array("integer"), "c6"),
    )
    new = struct(
        field("arr", array(struct(field("a.z", "integer", "c2"))), "c1"),
        field("m", map_of("string", struct(field("u", "long", "c5"))), "c4"),
        field("w", array("long"), "c6"),
    )
    change = schema_change(old, new)
    assert change is not None and change.name == "RENAME, DROP AND TYPE WIDENING"
    assert change.renamed == (("arr.element.x", "arr.element.`a.z`"),)
    assert change.dropped == ("arr.element.y",)
    assert change.widened == (("m.value.u", "integer", "long"), ("w.element", "integer", "long"))
    assert "'m.value.u': INT -> BIGINT\n'w.element': INT -> BIGINT" in change.details()  # Delta's DataType.sql
    assert not change.incompatible
    narrowed = schema_change(new, struct(new["fields"][0], new["fields"][1], field("w", array("string"), "c6")))
    assert narrowed is not None and narrowed.incompatible == (("w.element", "long", "string"),)
    # Delta's checkIncompatibleSchemaChange (isReadCompatible, forbidTightenNullability): a `void`
    # column that took a type (a mergeSchema write) is no change, a column made NOT NULL (or an
    # array's elements, a map's values) is one no option unblocks
    assert schema_change(struct(field("v", "void", "c7")), struct(field("v", "long", "c7"))) is None
    not_null = {**field("w", array("integer"), "c6"), "nullable": False}
    tightened = schema_change(old, struct(old["fields"][0], old["fields"][1], not_null))
    assert tightened is not None and tightened.incompatible == (("w", "nullable", "not null"),)
    elements = field("w", {**array("integer"), "containsNull": False}, "c6")
    tightened = schema_change(old, struct(old["fields"][0], old["fields"][1], elements))
    assert tightened is not None and tightened.incompatible == (("w.element", "nullable", "not null"),)
    assert schema_change(struct(not_null), struct(field("w", array("integer"), "c6"))) is None  # loosened

    def entry(schema: dict[str, Any], version: int) -> Any:
        return persisted("t", version, Metadata(id="t", schema_string=json.dumps(schema)), Protocol(1, 1), "")

    blocked = blocked_change({"allowSourceColumnRenameAndDrop": "always"}, entry(old, 1), entry(new, 2))
    assert blocked is not None and blocked.widened
    options = {"spark.databricks.delta.streaming.allowSourceColumnRenameAndDrop": "always"}
    assert blocked_change({**options, "allowSourceColumnTypeChange": "2"}, entry(old, 1), entry(new, 2)) is None


def test_unblock_by_sql_confs_of_the_session_and_per_checkpoint(spark, tmp_path):
    """DeltaSourceMetadataEvolutionSupportSuite: Delta's SQL confs unblock a change for all
    streams (``spark.databricks.delta.streaming.allowSourceColumn*`` = ``always``) or for one
    stream (``....ckpt_<hash>`` = ``always`` or the change's version; the hash is Java's
    ``hashCode`` of the entry's ``sourceMetadataPath``, named by the error); set in the session,
    a stream's ``load`` takes them, as Delta's source reads them from the session."""
    from deltalog.contrib.spark.schema_log import SchemaTrackingLog, checkpoint_hash, persisted
    from deltalog.contrib.spark.session_writes import session_read_defaults
    from deltalog.contrib.spark.streaming import _check_unblocked
    from deltalog.logstores.registry import logstore_for
    from deltalog.txn.protocol.actions import Metadata, Protocol

    def field(name: str) -> dict[str, Any]:
        return {"name": name, "type": "long", "nullable": True, "metadata": {}}

    location = str(tmp_path / "schemas")
    log = SchemaTrackingLog(logstore_for(location), location, "t")
    for version, fields in ((0, [field("a"), field("b")]), (2, [field("b")])):  # a dropped at version 2
        schema = json.dumps({"type": "struct", "fields": fields})
        log.write(persisted("t", version, Metadata(id="t", schema_string=schema), Protocol(1, 1), log.location))

    def check(**options: str) -> None:
        _check_unblocked(StreamReadOptions.parse({"path": "/t", **options}), log)

    with pytest.raises(DeltaSourceSchemaEvolutionBlockedError) as info:
        check()
    prefix = "spark.databricks.delta.streaming.allowSourceColumnDrop"
    (ckpt,) = re.findall(rf'spark\.conf\.set\("({re.escape(prefix)}\.ckpt_-?\d+)", "2"\)', str(info.value))
    for line in (f'spark.conf.set("{ckpt}", "always")', f'spark.conf.set("{prefix}", "always")'):
        assert line in str(info.value)
    # Delta's getCheckpointHash: Java's String.hashCode ("polygenelubricants" hashes to Integer.MIN_VALUE)
    assert (checkpoint_hash("hello"), checkpoint_hash("polygenelubricants")) == (99162322, -(1 << 31))
    assert ckpt.endswith(f".ckpt_{checkpoint_hash(log.location)}")
    both = prefix.replace("Drop", "RenameAndDrop")
    for unblocked in (
        {ckpt: "2"},
        {ckpt: "ALWAYS"},
        {prefix: "always"},
        {both: "always"},
        {both + ckpt[len(prefix) :]: "2"},
    ):
        check(**unblocked)
    for still_blocked in ({ckpt: "3"}, {prefix: "2"}, {prefix + ".ckpt_1": "always"}):
        with pytest.raises(DeltaSourceSchemaEvolutionBlockedError):
            check(**still_blocked)

    conf = both
    spark.conf.set(conf, "always")
    spark.conf.set(ckpt, "2")
    try:
        assert {conf: "always", ckpt: "2"}.items() <= session_read_defaults(spark, {}, stream=True).items()
        assert conf not in session_read_defaults(spark, {})  # a batch read has no source to unblock
        assert session_read_defaults(spark, {conf: "3"}, stream=True).get(conf) is None  # the read's own wins
    finally:
        spark.conf.unset(conf)
        spark.conf.unset(ckpt)


def test_protocol_of_each_version_read_after_a_feature_was_dropped(tmp_path):
    """DeltaSourceFastDropFeatureSuite: a reader feature this client lacks, dropped again since
    (the latest protocol is clean): a stream from the latest version reads; one whose
    ``startingVersion``/``startingTimestamp`` or restart offset is a version where the feature
    was on, or that reads forward across the commit adding it, fails with Delta's
    ``DELTA_UNSUPPORTED_FEATURES_FOR_READ``; a restart past it reads on."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.txn.protocol.errors import UnsupportedFeatureError

    path = str(tmp_path / "t")
    os.makedirs(os.path.join(path, "_delta_log"))

    def add(i: int) -> dict[str, Any]:
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), os.path.join(path, f"{i}.parquet"))
        size = os.path.getsize(os.path.join(path, f"{i}.parquet"))
        return {
            "add": {
                "path": f"{i}.parquet",
                "partitionValues": {},
                "size": size,
                "modificationTime": i,
                "dataChange": True,
            }
        }

    def protocol(*features: str) -> dict[str, Any]:
        return {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": list(features),
                "writerFeatures": list(features),
            }
        }

    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    metadata = {
        "id": "t",
        "format": {"provider": "parquet"},
        "schemaString": json.dumps(schema),
        "partitionColumns": [],
    }
    unsupported = "testUnsupportedReaderWriter"
    # the feature added at version 2 and dropped at version 4
    commits = [
        [protocol(), {"metaData": metadata}, add(0)],
        [add(1)],
        [protocol(unsupported)],
        [add(3)],
        [protocol()],
        [add(5)],
    ]
    for version, actions in enumerate(commits):
        commit = os.path.join(path, "_delta_log", f"{version:020d}.json")
        with open(commit, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(a) + "\n" for a in actions)
        os.utime(commit, (version, version))  # committed at second `version` of 1970

    def ids(start: dict[str, Any] | None = None, **options: str) -> list[int]:
        reader = _reader(path, **options)
        return sorted(_run_batches(reader, start or reader.initialOffset(), ReadAllAvailable())[1])

    assert ids() == [0, 1, 3, 5]  # the initial snapshot of the latest version
    at = {"sourceVersion": 1, "reservoirId": "t", "isStartingVersion": False}
    assert ids({**at, "reservoirVersion": 5, "index": -1}) == [5]
    assert ids(startingVersion="4") == [5]
    failing = [{"startingVersion": "1"}, {"startingVersion": "3"}, {"startingTimestamp": "1970-01-01 00:00:03"}]
    for start, options in [(None, o) for o in failing] + [({**at, "reservoirVersion": 3, "index": 0}, {})]:
        with pytest.raises(UnsupportedFeatureError, match=rf"^\[DELTA_UNSUPPORTED_FEATURES_FOR_READ\].*{unsupported}"):
            ids(start, **options)


def test_schema_log_entry_without_configurations_and_protocol(tmp_path):
    """DeltaSourceSchemaEvolutionSuite "backward-compat: latest version can read back older
    JSON": an entry written before ``tableConfigurations`` and ``protocolJson`` existed (Delta
    2.x's ``PersistedSchema``) is read with the table's configuration and protocol where it
    has none (Delta's ``readSnapshotDescriptor``): a column-mapped table's files are read by
    their physical names, not as nulls, and the protocol is no change."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    path, schemas = str(tmp_path / "t"), str(tmp_path / "schemas")
    os.makedirs(os.path.join(path, "_delta_log"))
    mapping = {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"}
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": mapping}]}
    )
    configuration = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"}
    metadata = {"id": "t", "format": {"provider": "parquet"}, "schemaString": schema, "partitionColumns": []}
    protocol = {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}}
    for version in (0, 1):
        pq.write_table(pa.table({"col-1": pa.array([version], pa.int64())}), os.path.join(path, f"{version}.parquet"))
        size = os.path.getsize(os.path.join(path, f"{version}.parquet"))
        add = {
            "path": f"{version}.parquet",
            "partitionValues": {},
            "size": size,
            "modificationTime": 0,
            "dataChange": True,
        }
        first = [protocol, {"metaData": {**metadata, "configuration": configuration}}] if version == 0 else []
        with open(os.path.join(path, "_delta_log", f"{version:020d}.json"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(a) + "\n" for a in [*first, {"add": add}])
    old = {
        "tableId": "t",
        "deltaCommitVersion": 0,
        "dataSchemaJson": schema,
        "partitionSchemaJson": '{"type":"struct","fields":[]}',
    }
    os.makedirs(os.path.join(schemas, "_schema_log_t"))
    with open(os.path.join(schemas, "_schema_log_t", "0"), "w", encoding="utf-8") as f:
        f.write("v1\n" + json.dumps({**old, "sourceMetadataPath": ""}))
    reader = _reader(path, schemaTrackingLocation=schemas)
    start = {"sourceVersion": 1, "reservoirId": "t", "reservoirVersion": 1, "index": -1, "isStartingVersion": False}
    assert _run_batches(reader, start, ReadAllAvailable())[1] == [1]


def test_restart_before_a_non_additive_change_fails(spark, table_path, tmp_path):
    """DeltaSourceSuite "drop column / rename column: should fail with non-additive schema
    change error" from a restart: a query restarted (or started with ``startingVersion``) at a
    version whose schema the stream's cannot read fails before reading it (Delta's
    ``checkReadIncompatibleSchemaChangeOnStreamStartOnce``), though the commits it reads
    carry no metadata: a rename (column mapping) would stream the old column's values as
    nulls, a column dropped by ``overwriteSchema`` would silently lose them."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    def stream_then(path: str, change: Any, **options: str) -> tuple[dict[str, Any], DeltaSourceReader]:
        reader = _reader(path, **options)
        start, _, _ = _run_batches(reader, reader.initialOffset(), ReadAllAvailable())
        _append(spark, path, [1])  # the restarted query reads this with the changed schema
        change()
        return start, _reader(path, **options)

    _append(spark, table_path, [0], **{"delta.columnMapping.mode": "name"})
    table = DeltaTable.forPath(spark, table_path)
    start, restarted = stream_then(table_path, lambda: table.renameColumn("p", "q"))
    with pytest.raises(DeltaSourceSchemaChangedError, match=r"version 1 .*RENAME/DROP COLUMN.*schemaTrackingLocation"):
        restarted.latestOffset(start, ReadAllAvailable())
    end = dict(start, reservoirVersion=2)
    with pytest.raises(DeltaSourceSchemaChangedError, match="version 1"):  # a planned batch replayed
        _reader(table_path).partitions(start, end)
    with pytest.raises(DeltaSourceSchemaChangedError, match="version 1"):
        _reader(table_path, startingVersion="1").latestOffset(start, ReadAllAvailable())

    plain = str(tmp_path / "plain")  # no column mapping: p dropped by an overwrite
    _append(spark, plain, [0])
    narrower = spark.createDataFrame([(2,)], "id long").write.format("deltalog").mode("overwrite")

    def overwrite() -> None:
        narrower.option("overwriteSchema", "true").save(plain)

    start, restarted = stream_then(plain, overwrite, skipChangeCommits="true")
    with pytest.raises(DeltaSourceSchemaChangedError, match="version 1") as info:
        restarted.latestOffset(start, ReadAllAvailable())
    assert "schemaTrackingLocation" not in str(info.value)  # it would not help: restart from a new checkpoint


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        # DeltaSourceSuite "maxFilesPerTrigger: invalid parameter" / "maxBytesPerTrigger: invalid parameter"
        *[("maxFilesPerTrigger", v, "must be a positive integer") for v in ("0", "-1", "string")],
        *[("maxBytesPerTrigger", v, "must be a size configuration such as '10g'") for v in ("0", "-1", "string")],
        # DeltaSourceSuite "startingVersion": Invalid value '-1' for option 'startingVersion'
        *[("startingVersion", v, "must be greater than or equal to zero") for v in ("-1", "one", "1.5")],
        # Delta's DeltaOptionParser.toBoolean
        *[(o, "yes", "must be 'true' or 'false'") for o in ("ignoreDeletes", "skipChangeCommits", "failOnDataLoss")],
    ],
)
def test_invalid_source_options_are_delta_illegal_option(option: str, value: str, message: str) -> None:
    from deltalog.contrib.spark.errors import InvalidWriteOptionError

    expected = f"^DELTA_ILLEGAL_OPTION: Invalid value '{value}' for option '{option}', {message}"
    with pytest.raises(InvalidWriteOptionError, match=expected.replace(".", r"\.")):
        StreamReadOptions.parse({"path": "/nowhere", option: value})


def test_bad_exclude_regex_and_both_starting_options_name_delta_classes() -> None:
    """DeltaSourceSuite "excludeRegex throws good error on bad regex pattern" and "startingVersion
    and startingTimestamp are both set"."""
    from deltalog.contrib.spark.errors import InvalidWriteOptionError

    with pytest.raises(InvalidWriteOptionError, match=r"^DELTA_REGEX_OPT_SYNTAX_ERROR: Please recheck your syntax for"):
        StreamReadOptions.parse({"path": "/nowhere", "excludeRegex": "[abc"})
    both = {"path": "/nowhere", "startingVersion": "0", "startingTimestamp": "2020-01-01"}
    both_set = "^DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET: Please either"
    with pytest.raises(InvalidWriteOptionError, match=both_set):
        StreamReadOptions.parse(both)


def test_schema_change_message_as_delta(spark, table_path):
    """DeltaSourceSuite "add column: restarting with new DataFrame should recover" matches
    "Detected schema change"; a stream given startingVersion/startingTimestamp gets Delta's
    DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS advice (start after the change's version)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    _append(spark, table_path, [0])
    plain, from_zero = _reader(table_path), _reader(table_path, startingVersion="0")
    starts = [(r, r.initialOffset()) for r in (plain, from_zero)]
    wider = spark.createDataFrame([(1, 1, "x")], "id long, p long, s string").write.format("deltalog")
    wider.mode("append").option("mergeSchema", "true").save(table_path)
    with pytest.raises(
        DeltaSourceSchemaChangedError, match=r"^DELTA_SCHEMA_CHANGED_WITH_VERSION: Detected schema change"
    ):
        _run_batches(plain, starts[0][1], ReadAllAvailable())
    with pytest.raises(DeltaSourceSchemaChangedError) as info:
        _run_batches(from_zero, starts[1][1], ReadAllAvailable())
    assert str(info.value).startswith("DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS: Detected schema change in version 1")
    assert "'startingVersion' or 'startingTimestamp' option to start from a version newer than 1" in str(info.value)


@pytest.mark.parametrize(
    ("version", "message"),
    [
        # DeltaSourceOffsetSuite "unknown sourceVersion value", "invalid sourceVersion value",
        # "missing sourceVersion"; version 2 is reserved
        (
            4,
            r"^DELTA_INVALID_FORMAT_FROM_SOURCE_VERSION: Unsupported format\. Expected version should be smaller "
            r"than or equal to 3 but was 4\. Please upgrade",
        ),
        ("foo", "^DELTA_INVALID_SOURCE_OFFSET_FORMAT: The stored source offset format is invalid"),
        (None, r"^DELTA_INVALID_SOURCE_VERSION: sourceVersion\(0\) is invalid"),
        (2, r"^DELTA_INVALID_SOURCE_VERSION: sourceVersion\(2\) is invalid"),
    ],
)
def test_offset_format_errors_as_delta(version: Any, message: str) -> None:
    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.contrib.spark.streaming import SourceOffset

    raw = {"reservoirId": "t", "reservoirVersion": 1, "index": 1, "isStartingVersion": True}
    if version is not None:
        raw["sourceVersion"] = version
    with pytest.raises(DeltaAnalysisError, match=message):
        SourceOffset.from_dict(raw, "/table", "t")
    # DeltaSourceOffsetSuite "DeltaSourceOffset deserialization": v3 offsets at BASE_INDEX
    v3 = SourceOffset.from_dict({**raw, "sourceVersion": 3, "index": -100, "isStartingVersion": False}, "/t", "t")
    assert v3.to_dict() == {**raw, "sourceVersion": 1, "index": -1, "isStartingVersion": False}


def test_start_version_not_recreatable(spark, tmp_path):
    """DeltaSourceSuite "startingVersion": a start version whose snapshot cannot be rebuilt
    (commit 0 deleted, checkpoint at 2) still streams on a table without column mapping; with
    column mapping Delta cannot check renames and drops there and fails
    (DELTA_STREAMING_CHECK_COLUMN_MAPPING_NO_SNAPSHOT)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.contrib.spark.errors import DeltaAnalysisError
    from deltalog.txn.delta_log import DeltaLog

    for mode in ("none", "name"):
        path = str(tmp_path / mode)
        for i in range(3):
            _append(spark, path, [i], **({"delta.columnMapping.mode": mode} if i == 0 else {}))
        DeltaLog.for_table(path).checkpoint()
        os.remove(os.path.join(path, "_delta_log", f"{0:020d}.json"))
        reader = _reader(path, startingVersion="1")
        if mode == "none":
            assert sorted(_run_batches(reader, reader.initialOffset(), ReadAllAvailable())[1]) == [1, 2]
        else:
            with pytest.raises(DeltaAnalysisError, match=r"^DELTA_STREAMING_CHECK_COLUMN_MAPPING_NO_SNAPSHOT"):
                reader.latestOffset(reader.initialOffset(), ReadAllAvailable())


def test_start_before_a_tightened_nullability_fails(spark, table_path):
    """DeltaSourceSuite "handling nullability schema changes": a stream started (startingVersion)
    at a commit written while a column was nullable, read with the later NOT NULL schema, fails
    at the start (the commits it reads have no metadata the check would meet)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.txn.commit.operations import ManualUpdate
    from deltalog.txn.delta_log import DeltaLog

    def insert(value: int) -> None:
        df = spark.createDataFrame([(value, value)], "id long not null, p long not null")
        df.write.format("deltalog").mode("append").save(table_path)

    def id_nullable(nullable: bool) -> None:
        log = DeltaLog.for_table(table_path)
        metadata = log.update().metadata
        schema = json.loads(metadata.schema_string)
        schema["fields"][0]["nullable"] = nullable
        changed = dataclasses.replace(metadata, schema_string=json.dumps(schema))
        log.start_transaction().commit([changed], ManualUpdate())

    insert(0)
    id_nullable(True)
    insert(1)  # version 2, written while id was nullable
    id_nullable(False)
    insert(2)
    reader = _reader(table_path, startingVersion="2")
    with pytest.raises(DeltaSourceSchemaChangedError, match=r"^DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS.*version 2"):
        reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
