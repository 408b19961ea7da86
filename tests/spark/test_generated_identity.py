"""Generated, identity and default columns through the data source's write (plan, tasks,
commit), driven in-process as in test_write_transaction.py: no Spark session, concurrent
writers interleaved deterministically. Tables are read back by deltalog and delta-rs."""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any

import deltalake
import pyarrow as pa
import pytest

from deltalog.contrib.spark.files import write_batches
from deltalog.contrib.spark.options import WriteOptions
from deltalog.contrib.spark.writes import WritePlan, commit_write, plan_write
from deltalog.txn.commit.commit_errors import MetadataChangedError
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from deltalog.txn.protocol.generated_columns import GeneratedColumnConstraintViolationError
from deltalog.txn.protocol.identity import IdentityColumnError, identity_columns

UTC = pa.timestamp("us", tz="UTC")


def _field(name: str, type_: str, **meta: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def _identity(allow: bool, start: int = 1, step: int = 1) -> dict[str, Any]:
    return {"delta.identity.start": start, "delta.identity.step": step, "delta.identity.allowExplicitInsert": allow}


def _create(path: str, *fields: dict[str, Any], partition_columns: tuple[str, ...] = ()) -> DeltaLog:
    log = DeltaLog.for_table(path)
    txn = log.start_transaction()
    schema = {"type": "struct", "fields": list(fields)}
    txn.update_metadata(Metadata(schema_string=json.dumps(schema), partition_columns=partition_columns))
    txn.commit([], CreateTable())
    return log


def _plan(path: str, data: pa.Table) -> WritePlan:
    from deltalog.txn.protocol.schema import from_arrow_type

    fields = [
        {"name": f.name, "type": from_arrow_type(f.type).to_json_value(), "nullable": True, "metadata": {}}
        for f in data.schema
    ]
    return plan_write(WriteOptions.parse({"path": path}, False), json.dumps({"type": "struct", "fields": fields}))


def _write(path: str, data: pa.Table, task_id: int = 0) -> int | None:
    plan = _plan(path, data)
    return commit_write(plan, write_batches(plan.spec, data.to_batches(), task_id))


def _read_ours(path: str) -> pa.Table:
    """The table as deltalog's data source reads it (its driver plan and task reads)."""
    from deltalog.contrib.spark.reads import FileToRead, ReadSpec, read_files

    log = DeltaLog.for_table(path)
    snapshot = log.update()
    metadata = snapshot.metadata
    from deltalog.txn.protocol.schema import parse_schema

    output = parse_schema(metadata.schema_string).to_arrow()
    spec = ReadSpec(
        log.store.spec(), log.table_uri, metadata.schema_string, tuple(metadata.partition_columns), output_schema=output
    )
    items = [FileToRead(a.path, a.partition_values, a.size) for a in snapshot.files]
    return pa.Table.from_batches(list(read_files(spec, items)))


def _rows(path: str, *columns: str) -> list[tuple[Any, ...]]:
    """Rows by delta-rs and by deltalog's own reader, which must agree."""
    ours = _read_ours(path).select(list(columns))
    theirs = deltalake.DeltaTable(path).to_pyarrow_table().select(list(columns))
    key = [(c, "ascending") for c in columns]
    assert ours.sort_by(key).to_pylist() == theirs.sort_by(key).to_pylist()
    return sorted(tuple(r.values()) for r in theirs.to_pylist())


def _data_files(path: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), path)
        for d, _, names in os.walk(path)
        if "_delta_log" not in d
        for f in names
        if f.endswith(".parquet")
    )


def test_generated_partition_column_is_computed_and_read_back_by_delta_rs(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    _create(
        path,
        _field("ts", "timestamp"),
        _field("x", "long"),
        _field("day", "date", **{"delta.generationExpression": "CAST(ts AS DATE)"}),
        partition_columns=("day",),
    )
    stamps = [dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone.utc), dt.datetime(2024, 1, 2, 23, tzinfo=dt.timezone.utc)]
    assert _write(path, pa.table({"ts": pa.array(stamps, UTC), "x": [1, 2]})) == 1
    assert _rows(path, "x", "day") == [(1, dt.date(2024, 1, 1)), (2, dt.date(2024, 1, 2))]
    assert sorted(f.split("/")[0] for f in _data_files(path)) == ["day=2024-01-01", "day=2024-01-02"]
    protocol = DeltaLog.for_table(path).update().protocol
    # as Delta (DeltaProtocolTransitionsSuite): the default (1, 2) plus generatedColumns, normalized
    assert protocol.min_writer_version == 7 and protocol.writer_features == (
        "appendOnly",
        "generatedColumns",
        "invariants",
    )


def test_a_row_that_contradicts_its_generation_expression_is_refused_and_nothing_is_written(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    log = _create(path, _field("x", "long"), _field("y", "long", **{"delta.generationExpression": "x * 10"}))
    assert _write(path, pa.table({"x": [1, 2], "y": [10, 20]})) == 1
    with pytest.raises(GeneratedColumnConstraintViolationError, match=r"y <=> x \* 10") as err:
        _write(path, pa.table({"x": [3, 4], "y": [30, 41]}))
    assert err.value.values == {"y": 41, "x": 4}
    assert log.update().version == 1
    assert len(_data_files(path)) == 1  # the failed task deleted its files
    assert _rows(path, "x", "y") == [(1, 10), (2, 20)]


def test_identity_always_generates_values_and_refuses_explicit_ones(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    log = _create(path, _field("id", "long", **_identity(False)), _field("x", "long"))
    assert _write(path, pa.table({"x": [1, 2, 3]})) == 1
    assert _rows(path, "id", "x") == [(1, 1), (2, 2), (3, 3)]
    assert identity_columns(log.update().metadata)[0].high_water_mark == 3
    commit_info = next(a for a in log.read_commit(1) if type(a).__name__ == "CommitInfo")
    assert commit_info.extra["tags"] == {"delta.identity.schemaUpdate": "true"}
    with pytest.raises(IdentityColumnError, match="GENERATED ALWAYS AS IDENTITY column id"):
        _plan(path, pa.table({"id": [9], "x": [4]}))
    protocol = log.update().protocol
    assert protocol.min_writer_version == 7 and protocol.writer_features == (
        "appendOnly",
        "identityColumns",
        "invariants",
    )


def test_identity_by_default_keeps_given_values_without_moving_the_mark(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    log = _create(path, _field("id", "long", **_identity(True, start=100, step=10)), _field("x", "long"))
    _write(path, pa.table({"id": [5, 6], "x": [1, 2]}))
    assert identity_columns(log.update().metadata)[0].high_water_mark is None  # as Delta: only generated values
    _write(path, pa.table({"x": [3]}))
    assert _rows(path, "id", "x") == [(5, 1), (6, 2), (100, 3)]
    assert identity_columns(log.update().metadata)[0].high_water_mark == 100


def _extreme(snapshot: Any, files: Any, name: str, largest: bool) -> int | None:
    """SYNC IDENTITY's aggregate over the transaction's snapshot, by deltalog's own reader."""
    if not files:
        return None
    values = [v for v in _read_ours(snapshot.table_uri).column(name).to_pylist() if v is not None]
    return (max if largest else min)(values) if values else None


def test_sync_identity_moves_the_mark_past_explicit_values_as_delta(tmp_path: Any) -> None:
    """IdentityColumnSyncSuite: values before ``start`` set no mark; a value on or past it is
    rounded onto the grid; the mark never moves back unless lowering is allowed; the commit is
    a CHANGE COLUMN tagged as an identity-only update; a non-identity column is refused."""
    from deltalog.txn.commands.sync_identity import sync_identity

    path = str(tmp_path / "t")
    log = _create(path, _field("id", "long", **_identity(True, start=100, step=2)), _field("x", "long"))
    sync_identity(log, "ID", _extreme)  # an empty table keeps no mark
    _write(path, pa.table({"id": [1, 2, 99], "x": [1, 2, 3]}))
    sync_identity(log, "id", _extreme)
    assert identity_columns(log.update().metadata)[0].high_water_mark is None  # before start
    _write(path, pa.table({"id": [101], "x": [4]}))
    version = sync_identity(log, "id", _extreme)
    assert identity_columns(log.update().metadata)[0].high_water_mark == 102  # rounded onto 100 + 2k
    _write(path, pa.table({"x": [5]}))
    assert _rows(path, "id", "x")[-1] == (104, 5)
    info = next(a for a in log.read_commit(version) if type(a).__name__ == "CommitInfo")
    assert info.operation == "CHANGE COLUMN" and info.extra["tags"] == {"delta.identity.schemaUpdate": "true"}
    assert json.loads(info.operation_parameters["column"])["metadata"]["delta.identity.highWaterMark"] == 102
    sync_identity(log, "id", lambda *_: 100)  # lower: kept
    assert identity_columns(log.update().metadata)[0].high_water_mark == 104
    sync_identity(log, "id", lambda *_: 100, allow_lowering=True)
    assert identity_columns(log.update().metadata)[0].high_water_mark == 100
    before = log.update().version
    with pytest.raises(IdentityColumnError, match="DELTA_IDENTITY_COLUMNS_ALTER_NON_IDENTITY_COLUMN"):
        sync_identity(log, "x", _extreme)
    with pytest.raises(IdentityColumnError, match="overflows a long"):
        sync_identity(log, "id", lambda *_: 2**63 - 1)
    assert log.update().version == before


def test_two_tasks_of_one_write_never_collide(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    log = _create(path, _field("id", "long", **_identity(False)), _field("x", "long"))
    plan = _plan(path, pa.table({"x": [0]}))
    lines = write_batches(plan.spec, pa.table({"x": [1, 2]}).to_batches(), 0)
    lines += write_batches(plan.spec, pa.table({"x": [3, 4]}).to_batches(), 1)
    commit_write(plan, lines)
    ids = [r[0] for r in _rows(path, "id")]
    assert len(set(ids)) == 4
    assert identity_columns(log.update().metadata)[0].high_water_mark == max(ids)


def test_four_concurrent_identity_writers_never_duplicate_a_value(tmp_path: Any) -> None:
    """All four plan against version 0 and write their files; they then commit in turn.
    Each commit moves the high-water mark (a metadata change), so, as in Delta, every
    writer after the first fails with MetadataChangedError and commits nothing; run again,
    it plans past the new mark."""
    path = str(tmp_path / "t")
    log = _create(path, _field("id", "long", **_identity(False)), _field("w", "long"))
    batches = {w: pa.table({"w": [w] * 3}) for w in range(4)}
    planned = {w: _plan(path, batches[w]) for w in range(4)}
    written = {w: write_batches(planned[w].spec, batches[w].to_batches(), 0) for w in range(4)}
    assert commit_write(planned[0], written[0]) == 1
    losers = []
    for w in (1, 2, 3):
        with pytest.raises(MetadataChangedError):
            commit_write(planned[w], written[w])
        losers.append(w)
    assert log.update().version == 1
    for w in losers:  # the retry: a new plan (new high-water mark), new files, one commit
        _write(path, batches[w])
    rows = _rows(path, "id", "w")
    ids = [r[0] for r in rows]
    assert len(ids) == 12 and len(set(ids)) == 12
    assert sorted(ids) == list(range(1, 13))
    assert identity_columns(log.update().metadata)[0].high_water_mark == 12


def test_a_stream_generates_identity_values_past_the_mark_its_earlier_batches_moved(tmp_path: Any) -> None:
    """Delta's IdentityColumnIngestionSuite "streaming": each micro-batch generates values
    past the high-water mark the batches before it moved (its tasks read it when they run,
    not when the query started) and moves it; a batch whose values another writer may
    have generated too (it moved the mark after the tasks read it) fails as Delta's
    conflict checker fails it, commits nothing and deletes its files."""
    from deltalog.contrib.spark.source import DeltaCommitMessage, DeltaStreamWriter

    path = str(tmp_path / "t")
    log = _create(path, _field("id", "long", **_identity(False, start=10, step=2)), _field("x", "long"))
    schema = json.dumps({"type": "struct", "fields": [_field("x", "long")]})
    options = WriteOptions.parse({"path": path, "checkpointLocation": str(tmp_path / "ck")}, False)
    writer = DeltaStreamWriter(plan_write(options, schema, streaming=True), "query", complete=False)
    for batch_id, xs in enumerate(([1, 2], [3], [4, 5])):
        writer.commit([writer.write(iter(pa.table({"x": xs}).to_batches()))], batch_id)
    assert _rows(path, "id", "x") == [(10, 1), (12, 2), (14, 3), (16, 4), (18, 5)]
    assert identity_columns(log.update().metadata)[0].high_water_mark == 18
    late = writer.write(iter(pa.table({"x": [6]}).to_batches()))  # its task read the mark 18
    _write(path, pa.table({"x": [7]}))  # generates 20 and moves the mark
    with pytest.raises(MetadataChangedError):
        writer.commit([late], 3)
    assert log.update().version == 4 and len(_data_files(path)) == 4
    assert isinstance(late, DeltaCommitMessage) and not os.path.exists(
        os.path.join(path, json.loads(late.actions[0])["add"]["path"])
    )
    writer.commit([writer.write(iter(pa.table({"x": [6]}).to_batches()))], 3)  # the batch run again
    assert _rows(path, "id", "x")[-2:] == [(20, 7), (22, 6)]
    assert identity_columns(log.update().metadata)[0].high_water_mark == 22


def test_an_identity_only_update_does_not_fail_a_writer_that_changes_no_metadata(tmp_path: Any) -> None:
    """Delta's checkNoMetadataUpdates: a winner tagged delta.identity.schemaUpdate only
    fails transactions that change the metadata themselves."""
    path = str(tmp_path / "t")
    log = _create(path, _field("id", "long", **_identity(True)), _field("x", "long"))
    other = log.start_transaction()  # reads version 0, appends a file, no metadata change
    _write(path, pa.table({"x": [1]}))  # version 1: identity values, high-water mark moved
    given = pa.table({"id": pa.array([50], pa.int64()), "x": pa.array([2], pa.int64())})
    plan = _plan(path, given)
    lines = write_batches(plan.spec, given.to_batches(), 0)
    add = next(a for a in (AddFile.from_dict(json.loads(line)["add"]) for line in lines))
    assert other.commit([add], Write(mode="Append")) == 2  # no generated columns: nothing to declare
    assert _rows(path, "id", "x") == [(1, 1), (50, 2)]


def test_defaults_fill_missing_columns_and_delta_rs_reads_them(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    log = _create(
        path,
        _field("x", "long"),
        _field("status", "string", CURRENT_DEFAULT="'new'"),
        _field("n", "integer", CURRENT_DEFAULT="7"),
    )
    assert "allowColumnDefaults" in (log.update().protocol.writer_features or ())
    _write(path, pa.table({"x": [1]}))
    _write(path, pa.table({"x": [2], "status": ["old"]}))
    assert _rows(path, "x", "status", "n") == [(1, "new", 7), (2, "old", 7)]


def test_spark_builder_and_data_source_write_fill_every_kind_of_column(
    spark: Any, table_path: str, caplog: Any
) -> None:
    """One small Spark job: a table created with the builder, written by format("deltalog")
    with only its plain columns, read back by Spark (both paths) and delta-rs; a read
    filtered on the timestamp skips the other days' partitions."""
    from deltalog.contrib.spark import DeltaTable, read_table, register
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    register(spark)
    (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long", generatedAlwaysAs=IdentityGenerator(start=10, step=5))
        .addColumn("ts", "timestamp")
        .addColumn("day", "date", generatedAlwaysAs="CAST(ts AS DATE)")
        .addColumn("status", "string", default="'new'")
        .partitionedBy("day")
        .execute()
    )
    df = spark.createDataFrame(
        [(dt.datetime(2024, 1, 1, 10), "a"), (dt.datetime(2024, 1, 3, 9), "b")], "ts timestamp, note string"
    ).drop("note")
    df.coalesce(1).write.format("deltalog").mode("append").save(table_path)
    got = spark.read.format("deltalog").load(table_path).orderBy("ts").collect()
    assert [(r.id, r.day, r.status) for r in got] == [
        (10, dt.date(2024, 1, 1), "new"),
        (15, dt.date(2024, 1, 3), "new"),
    ]
    with caplog.at_level("INFO", logger="deltalog.contrib.spark.native"):
        native = read_table(spark, table_path, where="ts >= '2024-01-02 00:00:00'")
    assert "at version 1: 1 of 2 files" in caplog.text  # the day=2024-01-01 partition is skipped
    assert [(r.id, r.day) for r in native.collect()] == [(15, dt.date(2024, 1, 3))]
    with pytest.raises(Exception, match="GENERATED ALWAYS AS IDENTITY column id"):
        spark.createDataFrame([(1, dt.datetime(2024, 1, 1))], "id long, ts timestamp").write.format("deltalog").mode(
            "append"
        ).save(table_path)
    assert DeltaLog.for_table(table_path).update().version == 1


def test_a_timestamp_generated_from_a_date_is_local_midnight_in_the_session_zone(spark: Any, table_path: str) -> None:
    """Spark evaluates ``date_trunc('MONTH', d)`` and ``CAST(d AS TIMESTAMP)`` of a date at
    midnight in the session time zone (OptimizeGeneratedColumnSuite's TimestampTruncPartitionExpr
    with a date source): the write tasks fill those values, and accept them when the data gives
    them, in a session outside UTC too (they were midnight UTC, and Spark's own values refused)."""
    from deltalog.contrib.spark import DeltaTable, register

    register(spark)
    (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("d", "date")
        .addColumn("m", "timestamp", generatedAlwaysAs="date_trunc('MONTH', d)")
        .addColumn("t", "timestamp", generatedAlwaysAs="CAST(d AS TIMESTAMP)")
        .execute()
    )
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = spark.createDataFrame([(dt.date(2021, 3, 15),)], "d date")
        df.write.format("deltalog").mode("append").save(table_path)
        given = df.selectExpr("d", "date_trunc('MONTH', d) AS m", "CAST(d AS TIMESTAMP) AS t")
        given.write.format("deltalog").mode("append").save(table_path)
        got = spark.read.format("deltalog").load(table_path).selectExpr(
            "CAST(m AS STRING) AS m", "CAST(t AS STRING) AS t"
        )
        assert [tuple(r) for r in got.collect()] == [("2021-03-01 00:00:00", "2021-03-15 00:00:00")] * 2
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_update_and_merge_recompute_generated_columns_and_apply_defaults(spark: Any, table_path: str) -> None:
    """Delta's PreprocessTableUpdate/Merge: a generated column is recomputed from the new
    values, a MERGE insert gives unassigned columns their defaults, and an identity
    column is neither updated nor left without values."""
    from deltalog.contrib.spark import DeltaTable, register
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    register(spark)
    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("x", "long")
        .addColumn("y", "long", generatedAlwaysAs="x * 10")
        .addColumn("s", "string", default="'d'")
        .execute()
    )
    spark.createDataFrame([(1,), (2,)], "x long").write.format("deltalog").mode("append").save(table_path)
    table.update("x = 1", {"x": "x + 2"})
    source = spark.createDataFrame([(7,)], "x long")
    table.alias("t").merge(source.alias("s"), "t.x = s.x").whenNotMatchedInsert(values={"x": "s.x"}).execute()
    assert _rows(table_path, "x", "y", "s") == [(2, 20, "d"), (3, 30, "d"), (7, 70, "d")]
    ids = str(table_path) + "-ids"
    with_ids = DeltaTable.create(spark).location(ids).addColumn("id", "long", generatedAlwaysAs=IdentityGenerator())
    with_ids = with_ids.addColumn("x", "long").execute()
    with pytest.raises(IdentityColumnError, match="cannot be updated"):
        with_ids.update("x = 1", {"id": "5"})
    _merge_generates_identity_values(spark, with_ids, ids)


def _merge_generates_identity_values(spark: Any, table: Any, path: str) -> None:
    """MERGE inserts generate identity values past the high-water mark, which the commit
    moves to the largest value written (Delta's GenerateIdentityValues and its
    IdentityColumnStatsTracker); matched rows keep theirs; a schema-evolving MERGE moves it too."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    spark.createDataFrame([(1,), (2,)], "x long").write.format("deltalog").mode("append").save(path)

    def merge(rows: list[tuple[int, ...]], schema: str = "x long", evolve: bool = False) -> None:
        builder = table.alias("t").merge(spark.createDataFrame(rows, schema).alias("s"), "t.x = s.x")
        builder = builder.withSchemaEvolution() if evolve else builder
        builder.whenMatchedUpdate(set={"x": "s.x"}).whenNotMatchedInsert(values={"x": "s.x"}).execute()

    def mark() -> int:
        from deltalog.txn.delta_log import DeltaLog

        fields = json.loads(DeltaLog.for_table(path).update().metadata.schema_string)["fields"]
        return int(next(f for f in fields if f["name"] == "id")["metadata"]["delta.identity.highWaterMark"])

    before = dict(_rows(path, "x", "id"))
    merge([(1,), (7,), (8,)])
    after = dict(_rows(path, "x", "id"))
    assert after[1] == before[1] and len(set(after.values())) == 4 and min(after[7], after[8]) > max(before.values())
    assert mark() == max(after.values())
    prior = mark()
    merge([(9, 1)], "x long, z int", evolve=True)  # a schema change in the same commit
    evolved = dict(_rows(path, "x", "id"))
    assert evolved[9] > prior and mark() == max(evolved.values())
    cdf = str(path) + "-cdf"
    with_cdf = DeltaTable.create(spark).location(cdf).addColumn("id", "long", generatedAlwaysAs=IdentityGenerator())
    with_cdf = with_cdf.addColumn("x", "long").property("delta.enableChangeDataFeed", "true").execute()
    spark.createDataFrame([(1,), (2,), (3,)], "x long").coalesce(1).write.format("deltalog").mode("append").save(cdf)
    # one partition of target and source rows: an inserted row's value would differ if its
    # change row were computed apart from its data row (other rows before it in the partition)
    source = spark.createDataFrame([(1,), (4,), (2,), (5,)], "x long").coalesce(1).alias("s")
    with_cdf.alias("t").merge(source, "t.x = s.x").whenMatchedDelete("s.x = 2").whenNotMatchedInsert(
        values={"x": "s.x"}
    ).execute()
    data = {r.x: r.id for r in spark.read.format("deltalog").load(cdf).collect()}
    changes = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 2).load(cdf)
    inserted = {r.x: r.id for r in changes.filter("_change_type = 'insert'").collect()}
    assert sorted(data) == [1, 3, 4, 5] and inserted == {4: data[4], 5: data[5]}
    assert [r.x for r in changes.filter("_change_type = 'delete'").collect()] == [2]


def test_the_engine_refuses_data_from_a_writer_that_did_not_enforce_generated_columns(tmp_path: Any) -> None:
    """PROTOCOL: writers MUST enforce ``(<column> <=> <expression>) IS TRUE``; as for CHECK
    constraints, a data commit must declare it did (``mark_constraints_checked``)."""
    from deltalog.txn.commit.commit_errors import ConstraintsNotCheckedError

    path = str(tmp_path / "t")
    log = _create(path, _field("x", "long"), _field("y", "long", **{"delta.generationExpression": "x * 10"}))
    add = AddFile("part-0.parquet", {}, size=1, modification_time=0)
    with pytest.raises(ConstraintsNotCheckedError, match=r"Generated Column: y <=> x \* 10"):
        log.start_transaction().commit([add], Write(mode="Append"))
    txn = log.start_transaction()
    txn.mark_constraints_checked()
    assert txn.commit([add], Write(mode="Append")) == 1


def test_a_column_a_generated_column_reads_cannot_be_renamed_or_dropped(spark: Any, table_path: str) -> None:
    """Delta's checkDependentExpressions (DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE):
    renaming or dropping ``a`` would leave ``b``'s expression naming a column the table no
    longer has, and every later write would fail. Dropping the generated column first
    frees ``a``."""
    from deltalog.contrib.spark import DeltaTable, read_table
    from deltalog.txn.protocol.errors import InvalidSchemaChangeError

    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("a", "long")
        .addColumn("s", "struct<x: long, y: long>")
        .addColumn("b", "long", generatedAlwaysAs="a + 1")
        .addColumn("c", "long", generatedAlwaysAs="s.x * 2")
        .property("delta.columnMapping.mode", "name")
        .execute()
    )
    log = DeltaLog.for_table(table_path)
    for change in (
        lambda: table.renameColumn("a", "z"),
        lambda: table.dropColumn("A"),
        lambda: table.renameColumn("s.x", "w"),
        lambda: table.dropColumns(["s", "c"]),
    ):
        with pytest.raises(InvalidSchemaChangeError, match="DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE"):
            change()
    assert log.update().version == 0
    table.renameColumn("s.y", "v")  # no generated column reads s.y
    table.dropColumns(["b", "c"])
    table.renameColumn("a", "z")
    spark.createDataFrame([(1, (2, 3))], "z long, s struct<x: long, v: long>").write.format("deltalog").mode(
        "append"
    ).save(table_path)
    assert [r.asDict(recursive=True) for r in read_table(spark, table_path).collect()] == [
        {"z": 1, "s": {"x": 2, "v": 3}}
    ]


def test_merge_schema_cannot_widen_a_generated_column_itself(spark: Any, tmp_path: Any) -> None:
    """Delta's commit checks every generated column's type against its expression's
    (``validateGeneratedColumns``): a ``mergeSchema`` write whose ``g`` is a ``long`` cannot
    widen the ``int`` column ``g = a`` (it did, leaving a table Delta refuses to change)."""
    from pyspark.errors import AnalysisException

    from deltalog.contrib.spark import DeltaTable

    table_path = str(tmp_path / "t")  # not the fixture's: delta-rs reads no typeWidening table
    DeltaTable.create(spark).location(table_path).addColumn("a", "int").addColumn(
        "g", "int", generatedAlwaysAs="a"
    ).property("delta.enableTypeWidening", "true").execute()
    data = spark.createDataFrame([(1, 1)], "a int, g long")
    with pytest.raises(AnalysisException, match=r"DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH.*column g is integer"):
        data.write.format("deltalog").mode("append").option("mergeSchema", "true").save(table_path)
    assert DeltaLog.for_table(table_path).update().version == 0


@pytest.mark.parametrize(
    ("column", "expression", "message"),
    [
        ("int", "CAST(ts AS DATE)", "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH.*DATE.*INT"),
        ("int", "a * 1000000000", "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH.*BIGINT"),
        ("long", "zz + 1", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES"),
        ("long", "g + 1", "DELTA_INVALID_GENERATED_COLUMN_REFERENCES"),  # another generated column
        # GeneratedColumnSuite "validateGeneratedColumns: unsupported expressions": these were created
        ("long", "deltalog_test_udf(a)", "DELTA_UDF_IN_GENERATED_COLUMN: Found deltalog_test_udf"),
        ("double", "rand()", "DELTA_NON_DETERMINISTIC_EXPRESSION_IN_GENERATED_COLUMN: Found rand"),
        ("long", "max(a)", "DELTA_AGGREGATE_IN_GENERATED_COLUMN: Found max"),
        ("long", "explode(array(a))", "DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN: explode"),
        ("timestamp", "current_timestamp", "DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN: current_timestamp"),
        ("int", "(SELECT 1)", "DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN: scalarsubquery"),
        ("boolean", "exists(array(a), x -> x > 1)", "DELTA_UNSUPPORTED_EXPRESSION_GENERATED_COLUMN: lambdafunction"),
        # DeltaVariantSuite "Variant cannot be created as a generated column": the type is checked first
        ("variant", "parse_json(cast(a as string))", "DELTA_UNSUPPORTED_DATA_TYPE_IN_GENERATED_COLUMN: VARIANT"),
    ],
)
def test_the_builder_refuses_a_generation_expression_delta_would_refuse(
    spark: Any, tmp_path: Any, column: str, expression: str, message: str
) -> None:
    """Delta's GeneratedColumn.validateGeneratedColumns at CREATE TABLE: the expression is
    analysed over the table's other columns and its type must be the column's. Without it
    ``CAST(ts AS DATE)`` into an int column wrote 19723 for 2024-01-01. Nor may it use a
    user-defined function, a non-deterministic or aggregate expression, or any expression
    outside Delta's ``AllowedUserProvidedExpressions``."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    spark.udf.register("deltalog_test_udf", lambda v: v, "long")
    path = str(tmp_path / "t")
    builder = DeltaTable.create(spark).location(path).addColumn("ts", "timestamp").addColumn("a", "long")
    builder = builder.addColumn("g", "int", generatedAlwaysAs="year(ts)").addColumn(
        "x", column, generatedAlwaysAs=expression
    )
    with pytest.raises(DeltaAnalysisError, match=message):
        builder.execute()
    assert not os.path.exists(os.path.join(path, "_delta_log"))


@pytest.mark.parametrize(
    ("default", "reason"), [("'abc'", "does not cast to int32"), ("a + 1", "cannot name a column")]
)
def test_the_builder_refuses_a_default_no_write_could_compute(
    spark: Any, tmp_path: Any, default: str, reason: str
) -> None:
    """The table was created, then every write that needed the default failed."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.protocol.column_defaults import UnsupportedDefaultExpressionError

    path = str(tmp_path / "t")
    builder = DeltaTable.create(spark).location(path).addColumn("a", "long").addColumn("d", "int", default=default)
    with pytest.raises(UnsupportedDefaultExpressionError, match=reason):
        builder.execute()
    assert not os.path.exists(os.path.join(path, "_delta_log"))


# What Delta's DeltaTableUtils.removeInternalWriterMetadata and removeInternalDeltaMetadata
# take out of the schema of every read (batch, change feed, stream); comments, defaults,
# collations and char/varchar types stay.
_INTERNAL_KEYS = {
    "delta.generationExpression",
    "delta.identity.start",
    "delta.identity.step",
    "delta.identity.highWaterMark",
    "delta.identity.allowExplicitInsert",
    "delta.columnMapping.id",
    "delta.columnMapping.physicalName",
    "delta.columnMapping.nested.ids",
    "parquet.field.id",
    "parquet.field.nested.ids",
    "delta.typeChanges",
}


def test_reads_show_the_schema_without_delta_internal_metadata_and_copying_them_makes_plain_columns(
    spark: Any, table_path: str
) -> None:
    """As Delta's reads (DeltaLog.createRelation, CDCReader, DeltaSource): a DataFrame of a
    table with identity, generated and default columns under column mapping carries the
    comment and the default but no generation expression, identity or column mapping
    metadata, on every read path; so a table written from it has plain columns."""
    from deltalog.contrib.spark import DeltaTable, read_table, register, write_table
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    register(spark)
    (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long", generatedAlwaysAs=IdentityGenerator())
        .addColumn("x", "long", comment="the x")
        .addColumn("g", "long", generatedAlwaysAs="x * 2")
        .addColumn("d", "string", default="'n'")
        .property("delta.columnMapping.mode", "name")
        .property("delta.enableChangeDataFeed", "true")
        .execute()
    )
    spark.createDataFrame([(1,)], "x long").write.format("deltalog").mode("append").save(table_path)
    stored = json.loads(DeltaLog.for_table(table_path).update().metadata.schema_string)["fields"]
    expected = {f["name"]: {k: v for k, v in f["metadata"].items() if k not in _INTERNAL_KEYS} for f in stored}
    assert expected["x"] == {"comment": "the x"} and "CURRENT_DEFAULT" in expected["d"]
    assert expected["id"] == {} and expected["g"] == {}
    cdf = {"readChangeFeed": "true", "startingVersion": "0"}
    reads = {
        "native": read_table(spark, table_path, native=True),
        "python": read_table(spark, table_path, native=False),
        "toDF": DeltaTable.forPath(spark, table_path).toDF(),
        "cdf native": read_table(spark, table_path, **cdf),
        "cdf python": spark.read.format("deltalog").options(**cdf).load(table_path),
        "stream": spark.readStream.format("deltalog").load(table_path),
    }
    for how, df in reads.items():
        got = {f.name: f.metadata for f in df.schema.fields if f.name in expected}
        assert got == expected, how
    copy = table_path + "-copy"
    write_table(reads["native"], copy, mode="overwrite")
    copied = json.loads(DeltaLog.for_table(copy).update().metadata.schema_string)["fields"]
    plain = {f["name"]: f["metadata"] for f in copied if f["name"] != "d"}
    assert plain == {"id": {}, "x": {"comment": "the x"}, "g": {}}  # no generated, no identity column


def test_data_of_only_partition_columns_is_written_when_the_tasks_fill_a_non_partition_column(tmp_path: Any) -> None:
    """Delta's checkPartitionColumns (DELTA_NON_PARTITION_COLUMN_ABSENT) runs on the data
    after the identity, generated and default columns are added (TransactionalWrite.
    normalizeSchema): IdentityColumnSuite's "restore - on partitioned table" inserts only
    the partition column of a table whose identity column is its only other column."""
    path = str(tmp_path / "t")
    log = _create(
        path, _field("id", "long", **_identity(False)), _field("value", "integer"), partition_columns=("value",)
    )
    assert _write(path, pa.table({"value": pa.array([1, 2], pa.int32())})) == 1
    assert _rows(path, "id", "value") == [(1, 1), (2, 2)]
    assert identity_columns(log.update().metadata)[0].high_water_mark == 2
    plain = str(tmp_path / "plain")
    _create(plain, _field("x", "long"), _field("value", "integer"), partition_columns=("value",))
    with pytest.raises(Exception, match="DELTA_NON_PARTITION_COLUMN_ABSENT"):
        _plan(plain, pa.table({"value": pa.array([1], pa.int32())}))


@pytest.mark.parametrize("cdf", [False, True])
def test_merge_recomputes_a_generated_column_per_clause(spark: Any, table_path: str, cdf: bool) -> None:
    """GeneratedColumnSuite "MERGE INSERT and UPDATE": each clause that does not assign the
    generated column c3 computes it from the row's new values, even when another clause
    (UPDATE SET *, INSERT *) assigns it; before, one clause assigning c3 left every other
    clause's rows with the old value or null and the MERGE failed the generated column's
    check. With the change data feed the rows go through the path that also writes change
    data; an insert-only MERGE through its own."""
    from deltalog.contrib.spark import DeltaTable, read_table

    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("c1", "int")
        .addColumn("c2", "int")
        .addColumn("c3", "int", generatedAlwaysAs="c2 + 1")
        .property("delta.enableChangeDataFeed", str(cdf).lower())
        .execute()
    )
    schema = "c1 int, c2 int, c3 int"
    spark.createDataFrame([(1, 2, 3), (2, 100, 101)], schema).write.format("deltalog").mode("append").save(table_path)
    source = spark.createDataFrame([(1, 11, 12), (2, 3, 4), (3, 20, 21), (4, 5, 6), (5, 6, 7)], schema).alias("s")
    (
        table.alias("t")
        .merge(source, "t.c1 = s.c1")
        .whenMatchedUpdate("s.c1 = 1", {"c2": "100"})
        .whenMatchedUpdateAll()
        .whenNotMatchedInsert("s.c1 = 4", {"c1": "s.c1", "c2": "22"})
        .whenNotMatchedInsert("s.c1 = 5", {"c1": "5", "c2": "s.c3"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    expected = [(1, 100, 101), (2, 3, 4), (3, 20, 21), (4, 22, 23), (5, 7, 8)]
    assert sorted(tuple(r) for r in read_table(spark, table_path).collect()) == expected
    if cdf:
        changes = read_table(spark, table_path, readChangeFeed="true", startingVersion="2")
        posts = changes.filter("_change_type in ('update_postimage', 'insert')").select("c1", "c2", "c3")
        assert sorted(tuple(r) for r in posts.collect()) == expected
        return
    more = spark.createDataFrame([(6, 1, 2), (7, 1, 2)], schema).alias("s")
    (
        table.alias("t")
        .merge(more, "t.c1 = s.c1")
        .whenNotMatchedInsert("s.c1 = 6", {"c1": "s.c1", "c2": "s.c2 + 1"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert sorted(tuple(r) for r in read_table(spark, table_path).collect())[-2:] == [(6, 2, 3), (7, 1, 2)]


def test_a_void_generated_column_given_by_the_data_is_checked(tmp_path: Any) -> None:
    """GeneratedColumnSuite's default table has ``c0_g void GENERATED ALWAYS AS (null)``; its
    "delete" and "update_*" tests rewrite rows that carry the column, which the tasks then
    check (``c0_g <=> null``). Checking a null-typed column failed in pyarrow (no ``equal``
    kernel for null), so every DELETE or UPDATE rewrite of such a table failed."""
    path = str(tmp_path / "t")
    _create(path, _field("c0_g", "void", **{"delta.generationExpression": "null"}), _field("x", "long"))
    assert _write(path, pa.table({"x": [1]})) == 1
    assert _write(path, pa.table({"c0_g": pa.nulls(1), "x": [2]})) == 2
    assert _rows(path, "x") == [(1,), (2,)]


# GeneratedColumnSuite cases deltalog already agreed on: (case, generated column's
# expression, data, the generated column's values, or the error when Delta refuses).
_GEN = "delta.generationExpression"
_AGREEING = [
    ("append_data: filled", "c1 + 10", {"c1": [1, 2]}, [11, 12]),
    ("different case: C1 names c1", "c1 + 10", {"C1": [1]}, [11]),
    ("expression in upper case", "C1 + 10", {"c1": [1]}, [11]),
    ("given and right, in another order", "c1 + 10", {"c2": [11], "c1": [1]}, [11]),
    (
        "null <=> null holds",
        "c1 + 10",
        {"c1": pa.array([None], pa.int64()), "c2": pa.array([None], pa.int64())},
        [None],
    ),
    ("given and wrong", "c1 + 10", {"c1": [1], "c2": [12]}, r"c2 <=> c1 \+ 10"),
    ("null where a value is due", "c1 + 10", {"c1": [1], "c2": pa.array([None], pa.int64())}, r"c2 <=> c1 \+ 10"),
    ("a value where null is due", "c1 + 10", {"c1": pa.array([None], pa.int64()), "c2": [5]}, r"c2 <=> c1 \+ 10"),
]


@pytest.mark.parametrize(("case", "expression", "data", "expected"), _AGREEING, ids=[c[0] for c in _AGREEING])
def test_generated_columns_fill_and_check_as_delta_suite(
    tmp_path: Any, case: str, expression: str, data: dict[str, Any], expected: Any
) -> None:
    """A refused write leaves the table at its creation version and its directory empty."""
    path = str(tmp_path / "t")
    log = _create(path, _field("c1", "long"), _field("c2", "long", **{_GEN: expression}))
    table = pa.table({k: pa.array(v, pa.int64()) if isinstance(v, list) else v for k, v in data.items()})
    if isinstance(expected, str):
        with pytest.raises(GeneratedColumnConstraintViolationError, match=expected):
            _write(path, table)
        assert log.update().version == 0 and _data_files(path) == []
        return
    assert _write(path, table) == 1
    assert [r[1] for r in _rows(path, "c1", "c2")] == expected


def test_a_table_whose_protocol_predates_generated_columns_does_not_enforce_them(tmp_path: Any) -> None:
    """GeneratedColumnCompatibilitySuite "dbr 8_0": Databricks 8.0 wrote
    ``delta.generationExpression`` into a (1, 2) table; Delta's ``enforcesGeneratedColumns``
    needs the feature, so such a table is written as a plain one (deltalog computed and
    checked ``c2``, refusing ``(1, 10)``)."""
    path = str(tmp_path / "t")
    os.makedirs(os.path.join(path, "_delta_log"))
    schema = {"type": "struct", "fields": [_field("c1", "integer"), _field("c2", "integer", **{_GEN: "c1 + 1"})]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "dbr-8-0",
                "format": {"provider": "parquet", "options": {}},
                "partitionColumns": [],
                "schemaString": json.dumps(schema),
                "configuration": {},
            }
        },
    ]
    with open(os.path.join(path, "_delta_log", "00000000000000000000.json"), "w") as out:
        out.write("\n".join(json.dumps(a) for a in actions) + "\n")
    assert _write(path, pa.table({"c1": pa.array([1], pa.int32()), "c2": pa.array([10], pa.int32())})) == 1
    assert _write(path, pa.table({"c1": pa.array([2], pa.int32())})) == 2
    assert _rows(path, "c1", "c2") == [(1, 10), (2, None)]
    assert DeltaLog.for_table(path).update().protocol.min_writer_version == 2


def test_spark_sync_identity_aggregates_the_table_and_honours_the_lowering_conf(spark: Any, table_path: str) -> None:
    """``DeltaTable.syncIdentity`` (``ALTER COLUMN ... SYNC IDENTITY``): Spark's max of the
    column over the table; the mark only moves back under Delta's session conf."""
    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.table_builder import IdentityGenerator

    table = (
        DeltaTable.create(spark)
        .location(table_path)
        .addColumn("id", "long", generatedByDefaultAs=IdentityGenerator(start=1, step=10))
        .addColumn("v", "long")
        .execute()
    )
    spark.createDataFrame([(35, 1), (7, 2)], "id long, v long").write.format("deltalog").mode("append").save(table_path)
    table.syncIdentity("id")
    log = DeltaLog.for_table(table_path)
    assert identity_columns(log.update().metadata)[0].high_water_mark == 41  # 35 rounded onto 1 + 10k
    table.delete("id = 35")
    conf = "spark.databricks.delta.identityColumn.allowSyncIdentityToLowerHighWaterMark.enabled"
    spark.conf.set(conf, "true")
    try:
        table.syncIdentity("id")
    finally:
        spark.conf.unset(conf)
    assert identity_columns(log.update().metadata)[0].high_water_mark == 11
