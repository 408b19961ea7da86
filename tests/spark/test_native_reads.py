"""Native reads (``read_table``): Spark's own Parquet scan over exactly the snapshot's
files, with the same rows as the ``deltalog`` Python data source for every table."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import math
import uuid
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark import read_table
from deltalog.contrib.spark.errors import NativeReadUnsupportedError
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata, Protocol, action_to_line
from tests.log import test_feature_tables as feature_tables
from tests.spark.helpers import rows


def _plan(df: Any) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        df.explain()
    return out.getvalue()


def _same_rows(spark: Any, path: str, order: list[str], **options: Any) -> Any:
    """The native read of ``path``, after checking it is native and gives the Python path's rows."""
    native = read_table(spark, path, **options)
    assert "FileScan parquet" in _plan(native)
    python = read_table(spark, path, native=False, **options)
    assert "FileScan parquet" not in _plan(python)
    assert native.schema.jsonValue() == python.schema.jsonValue()
    expected = rows(python, order)
    assert len(expected) > 0
    assert rows(native, order).equals(expected)
    return native


def test_partitions_with_nulls_and_special_characters_and_time_travel(spark: Any, table_path: str) -> None:
    from pyspark.sql import functions as F

    df = (
        spark.range(40)
        .withColumn(
            "k", F.when(F.col("id") % 4 == 0, F.lit(None)).otherwise(F.concat(F.lit("a/b=c d%é"), F.col("id") % 4))
        )
        .withColumn("n", (F.col("id") % 3).cast("int"))
        .withColumn("x", F.col("id") * 1.5)
    )
    df.write.format("deltalog").mode("append").option("partitionBy", "k,n").save(table_path)
    version0_ms = DeltaLog.for_table(table_path).update().timestamp
    df.withColumn("id", F.col("id") + 100).write.format("deltalog").mode("append").option("partitionBy", "k,n").save(
        table_path
    )
    native = _same_rows(spark, table_path, ["id"])
    assert native.count() == 80
    # Hive-style layout: Spark discovers the partitions and prunes them for a later filter
    pruned = native.filter("k = 'a/b=c d%é1' and x > 3")
    plan = _plan(pruned)
    assert "PartitionFilters: [isnotnull(k" in plan and "PushedFilters: [IsNotNull(x), GreaterThan(x,3.0)]" in plan
    assert sorted(r.id for r in pruned.collect()) == sorted(
        i for i in [*range(40), *range(100, 140)] if i % 4 == 1 and i % 100 * 1.5 > 3
    )
    assert "ReadSchema: struct<id:bigint>" in _plan(native.select("id", "k"))
    # time travel, and file skipping by a where predicate at planning
    _same_rows(spark, table_path, ["id"], versionAsOf=0)
    stamp = dt.datetime.fromtimestamp(version0_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    assert read_table(spark, table_path, timestampAsOf=stamp).count() == 40
    skipped = _same_rows(spark, table_path, ["id"], where="k is null and n = 1")
    assert sorted(r.id for r in skipped.collect()) == [i for i in [*range(40), *range(100, 140)] if i % 100 % 12 == 4]
    assert len(skipped.inputFiles()) == 4  # that partition only: two tasks in each of two writes


def test_partition_values_from_the_log_when_not_hive_style(spark: Any, table_path: str) -> None:
    """Timestamp and boolean partitions (and empty strings) take their values from the log."""
    from pyspark.sql import functions as F

    (
        spark.range(12)
        .withColumn(
            "ts", F.when(F.col("id") % 3 == 0, F.lit(None)).otherwise(F.timestamp_seconds(F.col("id") % 3 * 3600))
        )
        .withColumn("b", F.col("id") % 2 == 0)
        .write.format("deltalog")
        .mode("append")
        .option("partitionBy", "ts,b")
        .save(table_path)
    )
    native = _same_rows(spark, table_path, ["id"])
    assert "BroadcastHashJoin" in _plan(native)


def test_partition_values_joined_by_paths_with_non_ascii_characters(spark: Any, tmp_path: Path) -> None:
    """Spark names a file in ``_metadata.file_path`` as ``java.net.URI`` does: non-ASCII
    characters as they are, not percent-encoded. A double partition column makes the scan
    join the log's partition values by that name (under a table root with an accent)."""
    path = str(tmp_path / "données")
    df = spark.createDataFrame([(1, "ü€", 1.0), (2, "a b", 2.0), (3, "é", None)], "id long, k string, d double")
    df.write.format("deltalog").mode("append").option("partitionBy", "k,d").save(path)
    native = _same_rows(spark, path, ["id"])
    assert "BroadcastHashJoin" in _plan(native)
    assert sorted(tuple(r) for r in native.collect()) == [(1, "ü€", 1.0), (2, "a b", 2.0), (3, "é", None)]


def test_where_on_a_timestamp_partition_in_the_session_time_zone(spark: Any, table_path: str) -> None:
    """``where`` skips files with its timestamp literals read as Spark reads them: local
    times of the session (the log holds UTC instants). A ``timestamp_ntz`` partition value
    is the same wall-clock time in every session."""
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        rows = (
            "select *, timestamp_ntz'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, id) as nz from values"
            " (1, timestamp'2024-01-01 00:00:00'), (2, timestamp'2024-01-01 08:00:00') t(id, ts)"
        )
        spark.sql(rows).write.format("deltalog").mode("append").option("partitionBy", "ts,nz").save(table_path)
        got = read_table(spark, table_path, where="ts = '2024-01-01 00:00:00'").collect()
        later = read_table(spark, table_path, where="ts > '2024-01-01 00:00:00-08:00'").collect()
        wall = read_table(spark, table_path).select("id", "nz").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert [r.id for r in got] == [1]
    assert [r.id for r in later] == [2]
    assert sorted((r.id, r.nz) for r in wall) == [(1, dt.datetime(2024, 1, 1, 1)), (2, dt.datetime(2024, 1, 1, 2))]


def test_timestamp_as_of_is_a_local_time_of_the_session(spark: Any, table_path: str) -> None:
    """Delta casts ``timestampAsOf`` text in the session time zone: 8 hours before the
    instant in Los Angeles names the same version (UTC would be before the first one), with
    ``read_table`` and with ``format("deltalog")`` (the session's conf wrapper hands the zone
    on), the change feed's ``startingTimestamp`` too."""
    for i in range(2):
        write = spark.createDataFrame([(i,)], "id long").write.format("deltalog").mode("append")
        write.option("delta.enableChangeDataFeed", "true").save(table_path)
    instant = dt.datetime.fromtimestamp(DeltaLog.for_table(table_path).snapshot(1).timestamp / 1000, dt.timezone.utc)
    local = (instant - dt.timedelta(hours=8)).strftime("%Y-%m-%d %H:%M:%S.%f")
    spark.conf.set("spark.sql.session.timeZone", "-08:00")
    try:
        native = read_table(spark, table_path, timestampAsOf=local).count()
        python = read_table(spark, table_path, timestampAsOf=local, native=False).count()
        source = spark.read.format("deltalog").option("timestampAsOf", local).load(table_path).count()
        changes = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingTimestamp", local)
        changed = [r.id for r in changes.load(table_path).collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert (native, python, source, changed) == (2, 2, 2, [1])


def test_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    from deltalog.txn.commit.operations import Write

    feature_tables.test_deletion_vectors_on_disk_and_inline(tmp_path)
    table = tmp_path / "dv"
    # a file without a deletion vector is scanned apart from those with one
    pq.write_table(pa.table({"id": pa.array(range(200, 205), pa.int64())}), table / "c.parquet")
    size = (table / "c.parquet").stat().st_size
    DeltaLog.for_table(str(table)).start_transaction().commit(
        [AddFile("c.parquet", {}, size, 1, stats='{"numRecords":5}')], Write()
    )
    native = _same_rows(spark, str(table), ["id"])
    expected = sorted({*range(10), *range(100, 109), *range(200, 205)} - {0, 3, 7})
    assert sorted(r.id for r in native.collect()) == expected
    assert "Union" in _plan(native)


def _files_with_deletion_vectors(
    table: Path, deletes: dict[str, tuple[int, list[int] | None]]
) -> tuple[list[AddFile], list[int]]:
    """Write each file (``name: (rows, deleted rows or None for no DV)``) of ids
    ``1000 * (n + 1) + row`` into ``table`` with its deletion vector file; their ``add``
    actions and the ids that stay live."""
    from deltalog.txn.log.deletion_vectors import write_dv_file, z85_encode
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    adds, expected = [], []
    for n, (name, (count, deleted)) in enumerate(deletes.items()):
        ids = range(1000 * (n + 1), 1000 * (n + 1) + count)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), table / name, compression="none")
        dv = None
        if deleted is not None:
            blob, [(offset, size, cardinality)] = write_dv_file([deleted])
            file_uuid = uuid.uuid4()
            (table / f"deletion_vector_{file_uuid}.bin").write_bytes(blob)
            dv = DeletionVectorDescriptor("u", z85_encode(file_uuid.bytes), size, cardinality, offset)
        stats = f'{{"numRecords":{count},"tightBounds":false}}'  # a file with a DV: as the protocol requires
        adds.append(AddFile(name, {}, (table / name).stat().st_size, 1, stats=stats, deletion_vector=dv))
        expected += [i for row, i in enumerate(ids) if row not in set(deleted or ())]
    return adds, expected


def test_deletion_vectors_on_files_of_one_size_and_many_bitmap_words(spark: Any, tmp_path: Path) -> None:
    """Files with deletion vectors are found by their size: files of one size are scanned
    apart (one without a DV too), and every row's bit (0, 63, past the last deleted row) is
    read from its own DV."""
    from deltalog.txn.commit.operations import Write

    feature_tables.test_deletion_vectors_on_disk_and_inline(tmp_path)
    table = tmp_path / "dv"
    deletes: dict[str, list[int] | None] = {
        "s0.parquet": [0, 63, 64, 127, 128, 191, 299],
        "s1.parquet": list(range(0, 300, 3)),
        "s2.parquet": [1],  # rows past its only word are all live
        "s3.parquet": [],  # an empty deletion vector
        "s4.parquet": None,  # no deletion vector
    }
    adds, expected = _files_with_deletion_vectors(table, {name: (300, rows) for name, rows in deletes.items()})
    assert len({a.size for a in adds}) == 1  # one size: the scans must not mix them up
    DeltaLog.for_table(str(table)).start_transaction().commit(adds, Write())
    native = _same_rows(spark, str(table), ["id"])
    assert sorted(r.id for r in native.collect()) == sorted([*expected, *({*range(10), *range(100, 109)} - {0, 3, 7})])
    assert native.filter("id >= 1000").count() == len(expected)


@pytest.mark.parametrize(
    ("max_files", "max_words", "joined"),
    [(16, 1 << 16, False), (5, 12, False), (4, 1 << 16, True), (16, 11, True)],
    ids=["lookup", "lookup-at-both-limits", "join-above-the-file-limit", "join-above-the-word-limit"],
)
def test_deletion_vectors_looked_up_or_joined(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_files: int, max_words: int, joined: bool
) -> None:
    """Files of different sizes scanned together: their words are looked up in one array at
    each file's offset (5 files, 5 + 4 + 1 words and one each of ``a`` and ``b``), or, above
    either limit, joined; both drop exactly the deleted rows (bits 0 and 63, word edges,
    rows past the last word, an empty deletion vector, a file without one)."""
    from deltalog.contrib.spark import native_dv
    from deltalog.txn.commit.operations import Write

    monkeypatch.setattr(native_dv, "LOOKUP_MAX_FILES", max_files)
    monkeypatch.setattr(native_dv, "LOOKUP_MAX_WORDS", max_words)
    feature_tables.test_deletion_vectors_on_disk_and_inline(tmp_path)
    table = tmp_path / "dv"
    deletes: dict[str, tuple[int, list[int] | None]] = {
        "f0.parquet": (300, [0, 63, 64, 127, 128, 191, 299]),
        "f1.parquet": (200, list(range(0, 200, 3))),
        "f2.parquet": (130, [1]),  # rows past its only word are all live
        "f3.parquet": (100, []),  # an empty deletion vector
        "f4.parquet": (50, None),  # no deletion vector
    }
    adds, expected = _files_with_deletion_vectors(table, deletes)
    sizes = {a.size for a in adds} | {(table / n).stat().st_size for n in ("a.parquet", "b.parquet")}
    assert len(sizes) == len(adds) + 2  # one scan for all the files with DVs
    DeltaLog.for_table(str(table)).start_transaction().commit(adds, Write())
    native = _same_rows(spark, str(table), ["id"])
    assert sorted(r.id for r in native.filter("id >= 1000").collect()) == expected
    plan = _plan(native)
    assert ("BroadcastHashJoin" in plan) == joined
    assert ("Subquery" in plan) != joined


def test_column_mapping_by_name(spark: Any, tmp_path: Path) -> None:
    feature_tables.test_column_mapping_name_mode(tmp_path)
    native = _same_rows(spark, str(tmp_path / "cm"), ["id"])
    assert [r.asDict(recursive=True) for r in native.orderBy("id").collect()] == [
        {"id": 1, "part": "p1", "s": {"x": 10}},
        {"id": 2, "part": "p1", "s": {"x": 20}},
        {"id": 3, "part": "p1", "s": None},
    ]
    # partition pruning by the log's values, which are keyed by physical names
    assert _same_rows(spark, str(tmp_path / "cm"), ["id"], where="part = 'p1'").count() == 3
    assert read_table(spark, str(tmp_path / "cm"), where="part = 'p2'").inputFiles() == []


def _write_log(
    table: Path, protocol: Protocol, schema: list[dict[str, Any]], adds: list[AddFile], **config: str
) -> None:
    log = DeltaLog.for_table(str(table))
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps({"type": "struct", "fields": schema}),
        configuration=dict(config),
    )
    log.store.write(log.commit_uri(0), [action_to_line(a) for a in (protocol, metadata, *adds)])


def test_column_mapping_by_id_and_type_widening_and_missing_columns(spark: Any, tmp_path: Path) -> None:
    """id mode (Parquet field ids), an int file under a long column (type widening), an
    older file without a later column, and timestamp_ntz."""
    table = tmp_path / "idmode"
    table.mkdir()

    def fid(n: int) -> dict[bytes, bytes]:
        return {b"PARQUET:field_id": str(n).encode()}

    old = pa.table([pa.array([1, 2], pa.int32())], schema=pa.schema([pa.field("col-a", pa.int32(), metadata=fid(1))]))
    new = pa.table(
        [pa.array([3, 4], pa.int64()), pa.array([dt.datetime(2024, 1, 1, 12), None], pa.timestamp("us"))],
        schema=pa.schema(
            [pa.field("col-a", pa.int64(), metadata=fid(1)), pa.field("col-b", pa.timestamp("us"), metadata=fid(2))]
        ),
    )
    pq.write_table(old, table / "old.parquet")
    pq.write_table(new, table / "new.parquet")
    schema = [feature_tables._field("id", "long", 1, "col-a"), feature_tables._field("t", "timestamp_ntz", 2, "col-b")]
    features = ("columnMapping", "timestampNtz", "typeWidening")
    adds = [AddFile(n, {}, (table / n).stat().st_size, 1) for n in ("old.parquet", "new.parquet")]
    _write_log(
        table,
        Protocol(3, 7, features, features),
        schema,
        adds,
        **{"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "2"},
    )
    native = _same_rows(spark, str(table), ["id"])
    assert [tuple(r) for r in native.orderBy("id").collect()] == [
        (1, None),
        (2, None),
        (3, dt.datetime(2024, 1, 1, 12)),
        (4, None),
    ]


def test_deletion_vectors_by_field_id_across_row_groups_splits_and_both_parquet_readers(
    spark: Any, tmp_path: Path
) -> None:
    """A row's position comes from Spark's Parquet reader (``native_dv.ROW_INDEX`` in the
    read schema): right in id mode (a column without a field id), in files of many row
    groups split into many tasks, and in the vectorized and the parquet-mr reader (a struct
    column), for a scan of one file and of two."""
    from deltalog.txn.commit.operations import Write
    from deltalog.txn.log.deletion_vectors import write_dv_file, z85_encode
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    table = tmp_path / "iddv"
    table.mkdir()
    fields = [
        pa.field("col-a", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
        pa.field(
            "col-s",
            pa.struct([pa.field("col-x", pa.int64(), metadata={b"PARQUET:field_id": b"3"})]),
            metadata={b"PARQUET:field_id": b"2"},
        ),
    ]
    adds, live = [], []
    for n, (count, deleted) in enumerate([(500, [0, 1, 63, 64, 299, 300, 499]), (400, list(range(5, 400, 7)))]):
        ids = list(range(1000 * n, 1000 * n + count))
        data = pa.table([pa.array(ids), pa.array([{"col-x": i} for i in ids])], schema=pa.schema(fields))
        pq.write_table(data, table / f"f{n}.parquet", row_group_size=60)
        blob, [(offset, size, cardinality)] = write_dv_file([deleted])
        file_uuid = uuid.uuid4()
        (table / f"deletion_vector_{file_uuid}.bin").write_bytes(blob)
        dv = DeletionVectorDescriptor("u", z85_encode(file_uuid.bytes), size, cardinality, offset)
        size_n = (table / f"f{n}.parquet").stat().st_size
        stats = f'{{"numRecords":{count},"tightBounds":false}}'
        adds.append(AddFile(f"f{n}.parquet", {}, size_n, 1, stats=stats, deletion_vector=dv))
        live.append(sorted(set(ids) - {ids[r] for r in deleted}))
    struct = {"type": "struct", "fields": [feature_tables._field("x", "long", 3, "col-x")]}
    schema = [feature_tables._field("id", "long", 1, "col-a"), feature_tables._field("s", struct, 2, "col-s")]
    features = ("columnMapping", "deletionVectors")
    # delta.enableDeletionVectors: a commit adds files with deletion vectors only where the
    # table allows new ones (Delta's DELTA_ADDING_DELETION_VECTORS_DISALLOWED)
    mapping = {
        "delta.columnMapping.mode": "id",
        "delta.columnMapping.maxColumnId": "3",
        "delta.enableDeletionVectors": "true",
    }
    _write_log(table, Protocol(3, 7, features, features), schema, adds[:1], **mapping)
    DeltaLog.for_table(str(table)).start_transaction().commit(adds[1:], Write())
    conf = ("spark.sql.parquet.enableVectorizedReader", "spark.sql.files.maxPartitionBytes")
    saved = [spark.conf.get(k) for k in conf]
    try:
        for vectorized in ("true", "false"):
            spark.conf.set(conf[0], vectorized)
            spark.conf.set(conf[1], "2000")  # many splits of each file
            for version, expected in ((0, live[0]), (1, live[0] + live[1])):
                native = _same_rows(spark, str(table), ["id"], versionAsOf=version)
                assert native.rdd.getNumPartitions() > 2
                got = [(r.id, r.s.x) for r in native.orderBy("id").collect()]
                assert got == [(i, i) for i in expected], vectorized
    finally:
        for k, v in zip(conf, saved):
            spark.conf.set(k, v)


def test_a_table_written_by_delta_rs(spark: Any, tmp_path: Path) -> None:
    import deltalake

    path = str(tmp_path / "rs")
    data = pa.table(
        {
            "id": pa.array(range(20), pa.int64()),
            "p": pa.array([None if i % 5 == 0 else f"v {i % 3}/x" for i in range(20)], pa.string()),
            "ts": pa.array(
                [dt.datetime(2024, 1, i + 1, tzinfo=dt.timezone.utc) for i in range(20)], pa.timestamp("us", "UTC")
            ),
        }
    )
    deltalake.write_deltalake(path, data, partition_by=["p"])
    deltalake.write_deltalake(path, data.slice(0, 5), mode="append", partition_by=["p"])
    native = _same_rows(spark, path, ["id", "ts"])
    assert native.count() == 25


def test_nan_and_negative_zero_rows_survive_parquet_filter_pushdown(spark: Any, tmp_path: Path) -> None:
    """Parquet's min/max leave NaN out and its dictionaries and bloom filters tell -0.0 from
    0.0, while Spark orders NaN above every number and has -0.0 = 0.0: row groups filtered
    by them would drop matching rows (files of delta-rs and of pyarrow, which deltalog's
    Python data source writes with)."""
    import deltalake

    path = str(tmp_path / "rs")
    data = pa.table({"id": pa.array([0, 1, 2], pa.int64()), "f": pa.array([math.nan, 1.0, -0.0], pa.float64())})
    deltalake.write_deltalake(path, data)
    deltalake.write_deltalake(path, pa.table({"id": [3, 4], "f": [2.0, None]}), mode="append")
    native = read_table(spark, path)
    assert "FileScan parquet" in _plan(native)
    for condition, expected in (("f > 1.5", [0, 3]), ("f = 'NaN'", [0]), ("f = 0.0", [2]), ("f >= 'NaN'", [0])):
        assert sorted(r.id for r in native.filter(condition).collect()) == expected, condition
        assert sorted(r.id for r in read_table(spark, path, where=condition).collect()) == expected, condition


def test_an_empty_partition_value_in_the_log_is_null(spark: Any, tmp_path: Path) -> None:
    """PROTOCOL: "An empty string for any type translates to a null partition value"
    (delta-rs logs ``"k": ""`` for an empty string); both read paths and their filters."""
    import deltalake

    path = str(tmp_path / "rs")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "k": ["", "a", None]})
    deltalake.write_deltalake(path, data, partition_by=["k"])
    assert "" in {f.partition_values["k"] for f in DeltaLog.for_table(path).update().files}
    native = _same_rows(spark, path, ["id"])
    assert sorted((r.id, r.k) for r in native.collect()) == [(1, None), (2, "a"), (3, None)]
    assert sorted(r.id for r in read_table(spark, path, where="k is null").collect()) == [1, 3]
    python = spark.read.format("deltalog").load(path).filter("k is null")
    assert sorted(r.id for r in python.collect()) == [1, 3]


def test_unsupported_feature_falls_back_with_the_reason_logged(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A table that may hold shredded variants, in a session whose
    ``spark.sql.variant.allowReadingShredded`` is false (Spark's reader would fail on them):
    the Python data source reads it, with the reason logged; ``native=True`` raises."""
    table = tmp_path / "variant"
    table.mkdir()
    pq.write_table(pa.table({"s": ["a", "b"]}), table / "f.parquet")
    features = ("variantShredding-preview", "variantType")
    _write_log(
        table,
        Protocol(3, 7, features, features),
        [feature_tables._field("s", "string"), feature_tables._field("v", "variant")],
        [AddFile("f.parquet", {}, (table / "f.parquet").stat().st_size, 1)],
    )
    spark.conf.set("spark.sql.variant.allowReadingShredded", "false")
    try:
        with caplog.at_level(logging.INFO, logger="deltalog.contrib.spark.native"):
            df = read_table(spark, str(table))
        assert "FileScan parquet" not in _plan(df)
        assert sorted((r.s, r.v) for r in df.collect()) == [("a", None), ("b", None)]
        assert any("allowReadingShredded" in r.getMessage() for r in caplog.records)
        with pytest.raises(NativeReadUnsupportedError, match="allowReadingShredded=false"):
            read_table(spark, str(table), native=True)
    finally:
        spark.conf.unset("spark.sql.variant.allowReadingShredded")
    assert "FileScan parquet" in _plan(read_table(spark, str(table)))


def test_delta_rs_variant_tables_read_natively(spark: Any, tmp_path: Path) -> None:
    """delta-rs names ``variantType`` among the reader features of a table with deletion
    vectors whatever its columns (nothing for the scan to apply), and writes variant columns
    unshredded (``metadata`` first, no Parquet annotation): both read natively, the
    variants with the Python data source's very binaries."""
    import deltalake
    from deltalake.schema import Field, PrimitiveType, Schema, VariantType

    table = tmp_path / "rs-features"
    table.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), table / "f.parquet")
    features = ("variantType", "timestampNtz", "deletionVectors")
    add = AddFile("f.parquet", {}, (table / "f.parquet").stat().st_size, 1)
    _write_log(table, Protocol(3, 7, features, features), [feature_tables._field("id", "long")], [add])
    df = read_table(spark, str(table), native=True)
    assert "FileScan parquet" in _plan(df)
    assert sorted(r.id for r in df.collect()) == [1, 2]
    path = str(tmp_path / "rs-variant")
    deltalake.DeltaTable.create(path, Schema([Field("id", PrimitiveType("long")), Field("v", VariantType())]))
    binary = pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)
    empty = b"\x01\x00\x00"  # a metadata without names; values: the int8 1, Variant null, SQL NULL
    v = pa.StructArray.from_arrays(
        [pa.array([empty] * 3), pa.array([b"\x0c\x01", b"\x00", b""])],
        fields=list(binary),
        mask=pa.array([False, False, True]),
    )
    deltalake.write_deltalake(path, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": v}), mode="append")
    native = read_table(spark, path, native=True)
    assert "FileScan parquet" in _plan(native)

    def variants(df: Any) -> list[Any]:
        return sorted((r.id, r.v and (r.v.toJson(), bytes(r.v.value), bytes(r.v.metadata))) for r in df.collect())

    assert variants(native) == variants(read_table(spark, path, native=False))
    assert [x[1] and x[1][0] for x in variants(native)] == ["1", "null", None]


def test_delta_table_to_df_is_native_and_bound_to_its_snapshot(spark: Any, table_path: str) -> None:
    from deltalog.contrib.spark import DeltaTable

    spark.range(5).write.format("deltalog").mode("append").save(table_path)
    df = DeltaTable.forPath(spark, table_path).toDF()
    assert "FileScan parquet" in _plan(df)
    spark.range(5, 8).write.format("deltalog").mode("append").save(table_path)
    assert df.count() == 5  # planned on version 0
    assert DeltaTable.forPath(spark, table_path).toDF().count() == 8


def test_a_column_named_with_a_dot_is_not_the_struct_field_of_that_path(spark: Any, tmp_path: Path) -> None:
    """```s.a``` (a top-level column whose name has a dot) and ``s.a`` (field ``a`` of struct
    ``s``) are different columns, as Spark resolves them: a ``where`` or DELETE condition on
    one never skips files by the other's statistics (each file holds 1 in one, 10 in the other)."""
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    schema = "s struct<a:int>, `s.a` int"
    for row in [((1,), 10), ((10,), 1)]:
        df = spark.createDataFrame([row], schema)
        df.write.format("deltalog").mode("append").option("delta.columnMapping.mode", "name").save(path)
    every = spark.createDataFrame([((1,), 10), ((10,), 1)], schema)
    for where in ["s.a > 5", "`S.A` = 1"]:
        expected = sorted(map(str, every.where(where).collect()))
        assert sorted(map(str, read_table(spark, path, where=where).collect())) == expected, where
    DeltaTable.forPath(spark, path).delete("s.a > 5")
    assert [tuple(r) for r in read_table(spark, path).collect()] == [((1,), 10)]


def test_generation_expressions_a_table_does_not_enforce_derive_no_partition_filter(spark: Any, tmp_path: Path) -> None:
    """GeneratedColumn.generatePartitionFilters derives nothing unless the protocol supports
    ``generatedColumns``: a (1, 2) table (Databricks 8.0's) keeps the expression as mere
    metadata, so its partition values need not be ``CAST(ts AS DATE)`` of the rows."""
    path = str(tmp_path / "dbr80")
    fields = [
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "p", "type": "date", "nullable": True, "metadata": {"delta.generationExpression": "CAST(ts AS DATE)"}},
    ]
    metadata = Metadata(schema_string=json.dumps({"type": "struct", "fields": fields}), partition_columns=("p",))
    (tmp_path / "dbr80" / "_delta_log").mkdir(parents=True)
    lines = [action_to_line(Protocol(1, 2)), action_to_line(metadata)]
    (tmp_path / "dbr80" / "_delta_log" / "00000000000000000000.json").write_text("\n".join(lines) + "\n")
    data = spark.sql("select timestamp'2024-01-01 10:00:00' as ts, date'2020-01-01' as p")
    data.write.format("deltalog").mode("append").save(path)
    where = "ts = '2024-01-01 10:00:00'"
    assert [r.p for r in read_table(spark, path, where=where).collect()] == [dt.date(2020, 1, 1)]
    assert [r.p for r in spark.read.format("deltalog").load(path).where(where).collect()] == [dt.date(2020, 1, 1)]


def test_float_statistics_still_bound_a_column_widened_to_double(spark: Any, tmp_path: Path) -> None:
    """Delta writes a float's statistics as its shortest decimal: ``0.7`` for 0.7f, which is
    0.699999988079071 as a double. Read as a double once the column is widened, that bound
    sits above the row: no read path, nor a DELETE, may skip the file for ``f < 0.7``."""
    from deltalog.contrib.spark.data_skipping import data_skipped_files

    table = tmp_path / "floats"
    table.mkdir()
    struct = pa.struct([pa.field("g", pa.float32())])
    data = pa.table({"f": pa.array([0.7], pa.float32()), "st": pa.array([{"g": 0.7}], struct)})
    pq.write_table(data, table / "old.parquet")
    bound = {"f": 0.7, "st": {"g": 0.7}}
    stats = {"numRecords": 1, "minValues": bound, "maxValues": bound, "nullCount": {"f": 0, "st": {"g": 0}}}
    add = AddFile("old.parquet", {}, (table / "old.parquet").stat().st_size, 1, stats=json.dumps(stats))
    changed = {"delta.typeChanges": [{"fromType": "float", "toType": "double"}]}
    g = {"name": "g", "type": "double", "nullable": True, "metadata": changed}
    schema = [
        {"name": "f", "type": "double", "nullable": True, "metadata": changed},
        {"name": "st", "type": {"type": "struct", "fields": [g]}, "nullable": True, "metadata": {}},
    ]
    _write_log(table, Protocol(3, 7, ("typeWidening",), ("typeWidening",)), schema, [add])
    for where in ("f < 0.7 AND st.g IN (0.699999988079071)", "st.g < 0.7 AND f = 0.699999988079071"):
        assert read_table(spark, str(table), where=where, native=where.startswith("f")).count() == 1, where
    snapshot = DeltaLog.for_table(str(table)).update()  # DELETE, UPDATE and replaceWhere skip so
    assert data_skipped_files(snapshot, snapshot.files, "f <= 0.69999999") == snapshot.files
