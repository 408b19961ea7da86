"""The change data feed's version range as Delta's ``CDCReader`` resolves and checks it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import time
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark.changes import change_files
from deltalog.contrib.spark.errors import DeltaAnalysisError, InvalidWriteOptionError
from deltalog.contrib.spark.options import CDF_OUT_OF_RANGE_CONF, ReadOptions
from deltalog.contrib.spark.source import change_range
from deltalog.txn.commit.operations import SetTableProperties, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata, Protocol, action_to_line


def _table_switching_the_feed(path: str) -> DeltaLog:
    """v0 one row without the feed, v1 feed on, v2 one row, v3 feed off, v4 one row, v5 feed
    on, v6 one row; commit v at ``base + 100 v`` seconds (returned as ``log.base``)."""
    os.makedirs(path)
    log = DeltaLog.for_table(path)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}

    def add(i: int) -> AddFile:
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), os.path.join(path, f"{i}.parquet"))
        size = os.path.getsize(os.path.join(path, f"{i}.parquet"))
        return AddFile(f"{i}.parquet", {}, size, 1, stats='{"numRecords":1}')

    def feed(on: bool) -> None:
        txn = log.start_transaction()
        props = {"delta.enableChangeDataFeed": str(on).lower()}
        txn.update_metadata(dataclasses.replace(log.update().metadata, configuration=props))
        txn.commit([], SetTableProperties(props))

    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=json.dumps(schema)))
    txn.commit([add(0)], Write())
    for i in (1, 3, 5):
        feed(i != 3)
        log.start_transaction().commit([add(i + 1)], Write())
    base = int(time.time()) - 3600
    for version in range(7):
        os.utime(log.commit_uri(version).removeprefix("file://"), (base + 100 * version,) * 2)
    return log


def test_change_feed_range_is_checked_and_resolved_as_delta(spark: Any, table_path: str) -> None:
    log = _table_switching_the_feed(table_path)
    base = int(os.path.getmtime(log.commit_uri(0).removeprefix("file://")))

    def at(seconds: int) -> str:
        return dt.datetime.fromtimestamp(base + seconds, tz=dt.timezone.utc).isoformat()

    def bounds(**options: Any) -> tuple[int, int] | None:
        return change_range(log, ReadOptions.parse({"path": table_path, **{k: str(v) for k, v in options.items()}}))

    def versions(start: int, end: int) -> list[tuple[int, str]]:
        return [(f.constants["_commit_version"], f.constants["_change_type"]) for f in change_files(log, start, end)]

    # Delta refuses a range whose first version, or a version in it, records no change data
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_MISSING_CHANGE_DATA.*version \[0\]"):
        versions(0, 2)
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_MISSING_CHANGE_DATA.*version \[3\]"):
        versions(1, 6)
    assert versions(1, 2) == [(2, "insert")]
    # an ending version after the latest ends at the latest
    assert bounds(startingVersion=5, endingVersion=99) == (5, 6)
    # two times between the same two commits: an empty feed; a start after the end: an error
    assert bounds(startingTimestamp=at(510), endingTimestamp=at(520)) is None
    with pytest.raises(DeltaAnalysisError, match="DELTA_INVALID_CDC_RANGE"):
        bounds(startingTimestamp=at(520), endingTimestamp=at(510))
    with pytest.raises(DeltaAnalysisError, match="DELTA_INVALID_CDC_RANGE"):
        bounds(startingVersion=6, endingVersion=5)
    with pytest.raises(DeltaAnalysisError, match="DELTA_NO_START_FOR_CDC_READ"):
        bounds(endingVersion=6)
    # times as Spark casts text (DeltaCDCSuite "CDF timestamp format"): Delta's formats and
    # Spark's one-digit fields and zone names; not the compact ISO forms Spark does not read
    stamp = dt.datetime.fromtimestamp(base + 550, tz=dt.timezone.utc)
    for text in (
        stamp.strftime("%Y-%m-%d %H:%M:%S"),
        stamp.strftime("%Y-%m-%d %H:%M:%S.000"),
        stamp.strftime("%Y-%m-%d %H:%M:%S +0000"),
        stamp.astimezone(dt.timezone(dt.timedelta(hours=-8))).strftime("%Y-%m-%d %H:%M:%S -0800"),
        f"{stamp.year}-{stamp.month}-{stamp.day} {stamp.hour}:{stamp.minute}:{stamp.second} UTC",
    ):
        assert bounds(startingTimestamp=text, endingVersion=6) == (6, 6), text
    for text in (stamp.strftime("%Y%m%d%H%M%S000"), stamp.strftime("%Y%m%d"), "2024-W18-3"):
        with pytest.raises(ValueError, match=r"DELTA_TIMESTAMP_INVALID.*cannot be converted to a valid timestamp"):
            bounds(startingTimestamp=text, endingVersion=6)
    with pytest.raises(InvalidWriteOptionError, match="readRowTracking cannot be combined"):
        bounds(readChangeFeed=True, readRowTracking=True)  # Delta has no row ids in a change feed
    # DeltaCDCColumnMappingSuite "time travel with batch cdf is disbaled by default": Delta
    # refuses time travel with a change feed read (the option, or the path's @v suffix)
    for travel in ({"versionAsOf": 2}, {"timestampAsOf": at(250)}, {"path": f"{table_path}@v2"}):
        with pytest.raises(InvalidWriteOptionError, match="DELTA_UNSUPPORTED_TIME_TRAVEL_VIEWS"):
            bounds(readChangeFeed=True, startingVersion=1, **travel)
    # past the latest commit: an error, or with timestampOutOfRange an empty feed / the latest
    with pytest.raises(DeltaAnalysisError, match="DELTA_CDC_START_VERSION_AFTER_LATEST"):
        bounds(startingVersion=7)
    # a batch read takes startingVersion as a number (CDCReaderBase.getVersionForCDC), not
    # the stream's "latest"
    with pytest.raises(DeltaAnalysisError, match=r"DELTA_VERSION_INVALID.*\(latest\)"):
        bounds(startingVersion="latest")
    with pytest.raises(Exception, match="after the latest commit"):
        bounds(startingTimestamp=at(700))
    lenient = {CDF_OUT_OF_RANGE_CONF: "true"}
    assert bounds(startingVersion=7, **lenient) is None
    assert bounds(startingTimestamp=at(700), **lenient) is None
    assert bounds(startingTimestamp=at(550), endingTimestamp=at(900), **lenient) == (6, 6)
    # through Spark, with the session's conf (read_table hands it to the data source)
    from deltalog.contrib.spark import read_table

    spark.conf.set(CDF_OUT_OF_RANGE_CONF, "true")
    try:
        got = read_table(spark, table_path, readChangeFeed=True, startingTimestamp=at(550), endingTimestamp=at(900))
        assert [(r.id, r._change_type, r._commit_version) for r in got.collect()] == [(6, "insert", 6)]
    finally:
        spark.conf.unset(CDF_OUT_OF_RANGE_CONF)


def _field(name: str, type_: Any, physical: str | None = None, nullable: bool = True) -> dict[str, Any]:
    meta = (
        {}
        if physical is None
        else {"delta.columnMapping.id": int(physical[4:]), "delta.columnMapping.physicalName": physical}
    )
    return {"name": name, "type": type_, "nullable": nullable, "metadata": meta}


def test_change_feed_refuses_schema_changes_it_cannot_read_across(spark: Any, tmp_path: Any) -> None:
    """Delta's ``checkBatchCdfReadSchemaIncompatibility``: every schema the range's data was
    written with must read correctly with the read schema (the end version's)."""
    path = str(tmp_path / "mapped")
    os.makedirs(path)
    log = DeltaLog.for_table(path)
    config = {"delta.enableChangeDataFeed": "true", "delta.columnMapping.mode": "name"}
    meta = Metadata(id="t", configuration={**config, "delta.columnMapping.maxColumnId": "3"})

    def schema(*fields: dict[str, Any]) -> Metadata:
        return dataclasses.replace(meta, schema_string=json.dumps({"type": "struct", "fields": list(fields)}))

    def add(name: str, ids: list[int], texts: list[str]) -> AddFile:
        table = pa.table({"col-1": pa.array(ids, pa.int64()), "col-2": pa.array(texts)})
        pq.write_table(table, os.path.join(path, name))
        return AddFile(name, {}, os.path.getsize(os.path.join(path, name)), 1, stats=f'{{"numRecords":{len(ids)}}}')

    point = {"type": "struct", "fields": [_field("x", "long", "col-3")]}
    wider = {"type": "struct", "fields": [_field("x", "long", "col-3"), _field("y", "long", "col-4")]}
    commits = [
        [
            Protocol(3, 7, ("columnMapping",), ("columnMapping", "changeDataFeed")),
            schema(_field("id", "long", "col-1"), _field("s", "string", "col-2")),
        ],
        [add("a.parquet", [1], ["a"])],
        [schema(_field("id", "long", "col-1"), _field("t", "string", "col-2"))],  # v2: RENAME s TO t
        [add("b.parquet", [2], ["b"])],
        [schema(_field("id", "long", "col-1"), _field("t", "string", "col-2"), _field("p", point, "col-3"))],  # v4
        [schema(_field("id", "long", "col-1"), _field("t", "string", "col-2"), _field("p", wider, "col-3"))],  # v5
        [schema(_field("id", "long", "col-1"), _field("t", "string", "col-2"))],  # v6: DROP COLUMN p
    ]
    for version, actions in enumerate(commits):
        log.store.write(log.commit_uri(version), [action_to_line(a) for a in actions])

    def changes(start: int, end: int) -> list[tuple[int, str]]:
        return [(f.constants["_commit_version"], f.path) for f in change_files(log, start, end)]

    # the rename between the data of version 1 and the read schema of version 3
    with pytest.raises(DeltaAnalysisError, match=r"INCOMPATIBLE_DATA_SCHEMA.*version 0 has"):
        changes(0, 3)
    assert changes(0, 1) == [(1, "a.parquet")] and changes(2, 3) == [(3, "b.parquet")]
    # a nested field added (v5) reads; a column dropped at the end does not (v4 and v5 have it)
    assert changes(2, 5) == [(3, "b.parquet")]
    with pytest.raises(DeltaAnalysisError, match=r"INCOMPATIBLE_SCHEMA_CHANGE.*version 4 has"):
        changes(2, 6)
    # Delta's unsafe conf reads anyway: by physical name, the renamed column keeps its values
    unsafe = "spark.databricks.delta.changeDataFeed.unsafeBatchReadOnIncompatibleSchemaChanges.enabled"
    got = (
        spark.read.format("deltalog")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .option("endingVersion", 3)
        .option(unsafe, "true")
        .load(path)
    )
    assert sorted((r.id, r.t, r._commit_version) for r in got.collect()) == [(1, "a", 1), (2, "b", 3)]


def test_commit_timestamp_is_the_in_commit_timestamp_whenever_the_commit_has_one() -> None:
    """Delta's ``changesToDF`` takes ``commitInfo.inCommitTimestamp`` when present, whatever
    the latest version says (a table that turned in-commit timestamps off keeps them in the
    commits made while they were on), else the commit file's (monotonic) time."""
    from deltalog.contrib.spark.changes import _timestamp
    from deltalog.txn.protocol.actions import CommitInfo

    def ms(stamp: dt.datetime) -> int:
        return round(stamp.timestamp() * 1000)

    assert ms(_timestamp({1: 5_000}, 1, CommitInfo(timestamp=7_000, in_commit_timestamp=9_000))) == 9_000
    assert ms(_timestamp({1: 5_000}, 1, CommitInfo(timestamp=7_000))) == 5_000
    assert ms(_timestamp({}, 1, CommitInfo(timestamp=7_000))) == 7_000


def test_a_merge_that_changed_no_row_has_no_changes() -> None:
    """Delta's ``shouldSkipFileActionsInCommit``: a MERGE commit without change files whose
    metrics say it inserted, updated and deleted nothing rewrote files without changing a
    row, so its adds and removes are not change data (with a metric missing they are)."""
    from deltalog.contrib.spark.changes import ChangeFeed
    from deltalog.txn.protocol.actions import CommitInfo, RemoveFile

    feed = ChangeFeed(DeltaLog.for_table("memory://unused"), {}, 0, 1, Metadata())
    noop = {"numTargetRowsInserted": "0", "numTargetRowsUpdated": "0", "numTargetRowsDeleted": "0"}
    files = [RemoveFile("a.parquet", 1, True, size=10), AddFile("b.parquet", {}, 10, 1)]
    assert feed.commit_changes(1, [CommitInfo(operation="MERGE", operation_metrics=noop), *files]) == []
    partial = {k: v for k, v in noop.items() if k != "numTargetRowsDeleted"}
    changed = feed.commit_changes(1, [CommitInfo(operation="MERGE", operation_metrics=partial), *files])
    assert sorted((f.path, f.constants["_change_type"]) for f in changed) == [
        ("a.parquet", "delete"),
        ("b.parquet", "insert"),
    ]
    assert len(feed.commit_changes(1, [CommitInfo(operation="UPDATE", operation_metrics=noop), *files])) == 2


def test_without_column_mapping_the_feed_reads_with_the_latest_schema(tmp_path: Any) -> None:
    """Delta's batch change feed reads a table without column mapping with the latest
    version's schema (its ``legacy`` schema mode), also for an earlier ``endingVersion``: a
    column added after the range is there, null."""
    from deltalog.contrib.spark.source import DeltaLogDataSource

    path = str(tmp_path / "table")
    os.makedirs(path)
    log = DeltaLog.for_table(path)
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), os.path.join(path, "a.parquet"))
    size = os.path.getsize(os.path.join(path, "a.parquet"))
    meta = Metadata(id="t", configuration={"delta.enableChangeDataFeed": "true"})

    def schema(*fields: dict[str, Any]) -> Metadata:
        return dataclasses.replace(meta, schema_string=json.dumps({"type": "struct", "fields": list(fields)}))

    commits = [
        [Protocol(1, 4), schema(_field("id", "long")), AddFile("a.parquet", {}, size, 1, stats='{"numRecords":1}')],
        [schema(_field("id", "long"), _field("x", "string"))],  # v1: ADD COLUMN x
    ]
    for version, actions in enumerate(commits):
        log.store.write(log.commit_uri(version), [action_to_line(a) for a in actions])
    source = DeltaLogDataSource({"path": path, "readChangeFeed": "true", "startingVersion": "0", "endingVersion": "0"})
    read_schema = source.schema()
    assert read_schema.fieldNames() == ["id", "x", "_change_type", "_commit_version", "_commit_timestamp"]
    reader = source.reader(read_schema)
    got = [row for part in reader.partitions() for batch in reader.read(part) for row in batch.to_pylist()]
    assert [(r["id"], r["x"], r["_change_type"], r["_commit_version"]) for r in got] == [(1, None, "insert", 0)]


def test_change_feed_refuses_reading_across_column_mapping_turned_off(tmp_path: Any) -> None:
    """Delta's ``hasNoColumnMappingSchemaChanges`` prohibits reading across a column mapping
    downgrade (RemoveColumnMappingCDCSuite), even when no physical name changes: data of a
    version with column mapping is not read with a schema without it."""
    from pathlib import Path

    from deltalog.txn.commands import alter
    from tests.log.test_column_mapping_writes import _create, _write

    log = _create(Path(tmp_path / "t"), {"delta.enableChangeDataFeed": "true"})
    _write(log, [{"id": 0, "part": "a", "s": None}])  # v1
    alter.set_table_properties(log, {"delta.columnMapping.mode": "name"})  # v2: names kept as physical names
    _write(log, [{"id": 1, "part": "a", "s": None}])  # v3
    alter.set_table_properties(log, {"delta.columnMapping.mode": "none"})  # v4: the rewrite
    _write(log, [{"id": 2, "part": "a", "s": None}])  # v5
    assert [f.constants["_commit_version"] for f in change_files(log, 0, 3)] == [1, 3]  # across the upgrade
    assert [f.constants["_commit_version"] for f in change_files(log, 4, 5)] == [5]
    with pytest.raises(DeltaAnalysisError, match=r"INCOMPATIBLE_SCHEMA_CHANGE.*version 2 has"):
        change_files(log, 0, 5)


def test_change_rows_of_overwrites_as_delta(spark: Any, table_path: str) -> None:
    """DeltaCDCSuite "batch write: append, dynamic partition overwrite + CDF": an overwrite's
    removed rows are deletes and its written rows inserts, whether it replaces partitions
    (dynamic: only those it writes), a predicate's files (replaceWhere) or the table."""

    def write(rows: list[tuple[str, str]], mode: str = "overwrite", **options: str) -> None:
        w = spark.createDataFrame(rows, "value string, part string").write.format("deltalog").mode(mode)
        for k, v in {"partitionBy": "part", **options}.items():
            w = w.option(k, v)
        w.save(table_path)

    write([("a", "x"), ("b", "y"), ("c", "x")], "append", **{"delta.enableChangeDataFeed": "true"})  # v0
    write([("a", "x"), ("e", "x"), ("d", "z")], partitionOverwriteMode="dynamic")  # v1: partitions x and z
    write([("f", "y")], replaceWhere="part = 'y'")  # v2
    write([("g", "x")])  # v3: the whole table
    feed = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 0).load(table_path)
    got = sorted((r._commit_version, r._change_type, r.value, r.part) for r in feed.collect())
    insert, delete = "insert", "delete"
    assert got == sorted(
        [(0, insert, "a", "x"), (0, insert, "b", "y"), (0, insert, "c", "x")]
        + [(1, delete, "a", "x"), (1, delete, "c", "x"), (1, insert, "a", "x"), (1, insert, "e", "x")]
        + [(1, insert, "d", "z"), (2, delete, "b", "y"), (2, insert, "f", "y")]
        + [(3, delete, v, p) for v, p in (("a", "x"), ("e", "x"), ("d", "z"), ("f", "y"))]
        + [(3, insert, "g", "x")]
    )


def test_change_rows_of_a_replace_where_on_data_columns(spark: Any, table_path: str) -> None:
    """DeltaCDCSuite / DescribeDeltaHistorySuite "replaceWhere on data column": with the change
    data feed on, a replaceWhere on data columns records the rows it replaced as deletes and
    the rows it wrote as inserts (Delta's WriteIntoDelta, replaceWhere.dataColumnsWithCDF);
    the rows copied out of a rewritten file are no change. Before, such a write was refused."""

    def write(rows: list[tuple[int, int]], mode: str = "overwrite", **options: str) -> None:
        w = spark.createDataFrame(rows, "id long, b long").coalesce(1).write.format("deltalog").mode(mode)
        for k, v in options.items():
            w = w.option(k, v)
        w.save(table_path)

    write([(i, i % 2) for i in range(4)], "append", **{"delta.enableChangeDataFeed": "true"})  # v0
    write([(10, 1), (11, 1)], replaceWhere="b = 1")  # v1: 1 and 3 replaced, 0 and 2 copied
    write([(12, 5)], replaceWhere="b = 5")  # v2: no row replaced, nothing rewritten
    feed = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1).load(table_path)
    got = sorted((r._commit_version, r._change_type, r.id, r.b) for r in feed.collect())
    replaced = [(1, "delete", 1, 1), (1, "delete", 3, 1), (1, "insert", 10, 1), (1, "insert", 11, 1)]
    assert got == [*replaced, (2, "insert", 12, 5)]
    assert sorted((r.id, r.b) for r in spark.read.format("deltalog").load(table_path).collect()) == [
        (0, 0),
        (2, 0),
        (10, 1),
        (11, 1),
        (12, 5),
    ]
    unmatched, replaced = (c.operation_metrics for c in DeltaLog.for_table(table_path).history(2))
    assert (replaced["numDeletedRows"], replaced["numCopiedRows"], replaced["numAddedChangeFiles"]) == ("2", "2", "2")
    assert (unmatched["numDeletedRows"], unmatched["numCopiedRows"]) == ("0", "0")
