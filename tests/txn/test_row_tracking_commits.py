"""Row tracking through the engine: ids on every add, the high-water mark, conflict
retries (4 writers interleaved deterministically), enablement and delta-rs reads."""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.txn.commit.operations import CreateTable, ManualUpdate, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, DomainMetadata, Metadata, Protocol, RemoveFile
from deltalog.txn.protocol.errors import RowTrackingError
from deltalog.txn.protocol.row_tracking import (
    MATERIALIZED_ROW_COMMIT_VERSION_KEY,
    MATERIALIZED_ROW_ID_KEY,
    high_water_mark,
)

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "n", "type": "long", "nullable": True, "metadata": {}}]})


def data_file(table: str, rows: int, start: int = 0) -> AddFile:
    """A real Parquet file of ``rows`` rows (n = start ..) and its add."""
    name = f"part-{uuid.uuid4()}.parquet"
    table = table.removeprefix("file://")
    os.makedirs(table, exist_ok=True)
    pq.write_table(pa.table({"n": pa.array(range(start, start + rows), pa.int64())}), os.path.join(table, name))
    size = os.path.getsize(os.path.join(table, name))
    return AddFile(name, {}, size, 1, stats=json.dumps({"numRecords": rows}))


def create(table: str, **config: str) -> DeltaLog:
    log = DeltaLog.for_table(table)
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=SCHEMA, configuration=dict(config)))
    txn.commit([], CreateTable())
    return log


def row_ranges(log: DeltaLog) -> list[tuple[int, int]]:
    """(first, last) row id of every live file."""
    out = []
    for f in log.update().files:
        assert f.base_row_id is not None and f.default_row_commit_version is not None, f
        records = f.num_records()
        assert records is not None
        out.append((f.base_row_id, f.base_row_id + records - 1))
    return sorted(out)


def test_creating_with_the_property_enables_row_tracking(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), **{"delta.enableRowTracking": "true"})
    snap = log.update()
    assert {"rowTracking", "domainMetadata"} <= set(snap.protocol.writer_features or ())
    config = snap.metadata.configuration
    assert config[MATERIALIZED_ROW_ID_KEY].startswith("_row-id-col-")
    assert config[MATERIALIZED_ROW_COMMIT_VERSION_KEY].startswith("_row-commit-version-col-")
    v = log.start_transaction().commit([data_file(log.table_uri, 3), data_file(log.table_uri, 2)], Write())
    files = sorted(log.update().files, key=lambda f: f.base_row_id or 0)
    assert [(f.base_row_id, f.default_row_commit_version) for f in files] == [(0, v), (3, v)]
    assert high_water_mark(log.update().domain_metadata) == 4
    info = json.loads(next(iter(log.store.read(log.commit_uri(v)))))["commitInfo"]
    assert info["tags"]["delta.rowTracking.preserved"] == "true"
    # the materialized column names stay when the metadata changes again
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={**txn.metadata.configuration, "delta.appendOnly": "true"}))
    txn.commit([], ManualUpdate())
    assert log.update().metadata.configuration[MATERIALIZED_ROW_ID_KEY] == config[MATERIALIZED_ROW_ID_KEY]


def test_four_interleaved_writers_get_disjoint_row_ids(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), **{"delta.enableRowTracking": "true"})
    log.start_transaction().commit([data_file(log.table_uri, 10)], Write())
    # four transactions read the same snapshot, then commit in turn: each after the first
    # retries past the winners and must take ids above their high-water mark
    txns = [log.start_transaction() for _ in range(4)]
    assert len({t.read_version for t in txns}) == 1
    versions = []
    for i, txn in enumerate(txns):
        versions.append(txn.commit([data_file(log.table_uri, 5 + i), data_file(log.table_uri, 1)], Write()))
    assert versions == [2, 3, 4, 5]
    ranges = row_ranges(log)
    ids = [i for lo, hi in ranges for i in range(lo, hi + 1)]
    assert len(ids) == len(set(ids)) == 10 + 5 + 6 + 7 + 8 + 4
    assert high_water_mark(log.update().domain_metadata) == max(ids) == len(ids) - 1
    # every add's defaultRowCommitVersion is the version it landed at
    for version in versions:
        adds = [a for a in log.read_commit(version) if isinstance(a, AddFile)]
        assert adds and all(a.default_row_commit_version == version for a in adds)
    # delta-rs reads the table
    table = deltalake.DeltaTable(log.table_uri)
    assert table.version() == 5 and table.to_pyarrow_table().num_rows == len(ids)


def test_copied_files_keep_their_row_ids(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), **{"delta.enableRowTracking": "true"})
    log.start_transaction().commit([data_file(log.table_uri, 4)], Write())
    (f,) = log.update().files
    # a recommit of the same file keeps its ids and version
    v = log.start_transaction().commit([replace(f, data_change=False)], ManualUpdate())
    (again,) = log.update().files
    assert (again.base_row_id, again.default_row_commit_version) == (f.base_row_id, f.default_row_commit_version)
    assert v == 2 and high_water_mark(log.update().domain_metadata) == 3
    # its remove carries them too
    v = log.start_transaction().commit([again.remove(1)], Write(mode="Overwrite"))
    removes = [a for a in log.read_commit(v) if isinstance(a, RemoveFile)]
    assert (removes[0].base_row_id, removes[0].default_row_commit_version) == (f.base_row_id, 1)


def test_enabling_on_an_existing_table_backfills_its_files(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    log.start_transaction().commit([data_file(log.table_uri, 3), data_file(log.table_uri, 2)], Write())
    assert all(f.base_row_id is None for f in log.update().files)
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={"delta.enableRowTracking": "true"}))
    v = txn.commit([], ManualUpdate())
    ids = [i for lo, hi in row_ranges(log) for i in range(lo, hi + 1)]
    assert sorted(ids) == list(range(5))
    readds = [a for a in log.read_commit(v) if isinstance(a, AddFile)]
    assert len(readds) == 2 and not any(a.data_change for a in readds)
    assert deltalake.DeltaTable(log.table_uri).to_pyarrow_table().num_rows == 5


def test_adds_without_record_counts_and_hand_made_marks_are_refused(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), **{"delta.enableRowTracking": "true"})
    with pytest.raises(RowTrackingError, match=r"^\[DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS\] .*numRecords"):
        log.start_transaction().commit([AddFile("x.parquet", {}, 1, 1)], Write())
    with pytest.raises(RowTrackingError, match="by hand"):
        log.start_transaction().commit([DomainMetadata("delta.rowTracking", '{"rowIdHighWaterMark":99}')], Write())
    assert log.update().version == 0


def _stable_ids(log: DeltaLog) -> dict[int, tuple[int, int]]:
    """n -> (stable row id, stable row commit version), read as readers must."""
    from deltalog.contrib.spark.reads import FileToRead, ReadSpec, read_file
    from deltalog.txn.protocol.row_tracking import materialized_columns

    snap = log.update()
    columns = materialized_columns(snap.protocol, snap.metadata)
    assert columns is not None
    tracked = pa.struct([("row_id", pa.int64()), ("row_commit_version", pa.int64())])
    out = pa.schema([("n", pa.int64()), ("_metadata", tracked)])
    spec = ReadSpec(log.store.spec(), log.table_uri, SCHEMA, (), output_schema=out, row_tracking_columns=columns)
    rows = {}
    for f in snap.files:
        item = FileToRead(
            f.path, {}, f.size, base_row_id=f.base_row_id, default_row_commit_version=f.default_row_commit_version
        )
        for r in read_file(spec, log.store, item).to_pylist():
            rows[r["n"]] = (r["_metadata"]["row_id"], r["_metadata"]["row_commit_version"])
    return rows


def test_optimize_keeps_stable_row_ids_and_commit_versions(tmp_path: Path) -> None:
    from deltalog.txn.commands.optimize import optimize

    log = create(str(tmp_path / "t"), **{"delta.enableRowTracking": "true"})
    log.start_transaction().commit([data_file(log.table_uri, 3, start=0)], Write())
    log.start_transaction().commit([data_file(log.table_uri, 2, start=3)], Write())
    before = _stable_ids(log)
    assert before == {0: (0, 1), 1: (1, 1), 2: (2, 1), 3: (3, 2), 4: (4, 2)}
    result = optimize(log)
    assert result.version == 3 and len(log.update().files) == 1
    (f,) = log.update().files
    assert f.base_row_id == 5 and f.default_row_commit_version == 3  # fresh ids for the new file
    assert _stable_ids(log) == before  # the materialized columns keep the stable ones
    info = json.loads(next(iter(log.store.read(log.commit_uri(3)))))["commitInfo"]
    assert info["tags"]["delta.rowTracking.preserved"] == "true"
    assert sorted(deltalake.DeltaTable(log.table_uri).to_pyarrow_table().column("n").to_pylist()) == [0, 1, 2, 3, 4]


def test_enabling_conflicts_with_an_append_that_assigned_no_row_ids(tmp_path: Path) -> None:
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError

    log = create(str(tmp_path / "t"))  # no files yet: nothing to backfill
    txn = log.start_transaction()
    assert txn.metadata is not None
    txn.update_metadata(replace(txn.metadata, configuration={"delta.enableRowTracking": "true"}))
    log.start_transaction().commit([data_file(log.table_uri, 2)], Write())  # no row ids
    with pytest.raises(ConcurrentAppendError):
        txn.commit([], ManualUpdate())


def test_a_retry_over_a_commit_that_adds_the_feature_assigns_row_ids(tmp_path: Path) -> None:
    """Delta's DefaultRowCommitVersionSuite "default row commit versions are assigned when
    concurrent txn enables row tracking": a transaction that read the table before a winner
    added the ``rowTracking`` feature gives its files row ids and the version they land at;
    a checkpoint keeps both ("checkpoint preserves defaultRowCommitVersion")."""
    log = create(str(tmp_path / "t"))
    txn = log.start_transaction()
    protocol = log.update().protocol
    features = tuple(sorted({*(protocol.writer_features or ()), "rowTracking", "domainMetadata"}))
    log.start_transaction().commit([Protocol(1, 7, None, features)], ManualUpdate())
    log.start_transaction().commit([], ManualUpdate())
    assert txn.commit([data_file(log.table_uri, 1), data_file(log.table_uri, 1)], Write()) == 3
    log.checkpoint()
    files = DeltaLog.for_table(log.table_uri).update().files
    assert sorted((f.base_row_id, f.default_row_commit_version) for f in files) == [(0, 3), (1, 3)]


def _memory_add(records: int, path: str | None = None) -> AddFile:
    return AddFile(path or f"f-{uuid.uuid4().hex}.parquet", {}, 10, 1, stats=json.dumps({"numRecords": records}))


def _with_row_tracking_feature(log: DeltaLog, *actions: AddFile) -> None:
    """A commit adding ``rowTracking`` to the protocol (and ``actions``), row tracking off."""
    protocol = log.update().protocol
    features = tuple(sorted({*(protocol.writer_features or ()), "rowTracking", "domainMetadata"}))
    log.start_transaction().commit([Protocol(1, 7, None, features), *actions], ManualUpdate())


def _keeps_ids_of_re_added_files(log: DeltaLog) -> int | None:
    # ConflictCheckerRowIdSuite "re-added files keep their row ids" (a concurrent append moved the mark)
    before = log.update().files
    txn = log.start_transaction()
    log.start_transaction().commit([_memory_add(56), _memory_add(57)], Write())
    txn.commit(list(before), ManualUpdate())
    after = {f.path: f.base_row_id for f in log.update().files}
    assert all(after[f.path] == f.base_row_id for f in before)
    return None


def _keeps_ids_after_a_winner_not_moving_the_mark(log: DeltaLog) -> int | None:
    # "Re-added files keep their row IDs after conflict with txn not updating high watermark"
    first, last = log.update().files
    txn = log.start_transaction()
    log.start_transaction().commit([first], ManualUpdate())  # re-adds: the mark stays
    log.start_transaction().commit([_memory_add(10), _memory_add(10)], Write())
    txn.commit([replace(last, data_change=True), _memory_add(1)], ManualUpdate())
    after = {f.path: f.base_row_id for f in log.update().files}
    assert (after[first.path], after[last.path]) == (first.base_row_id, last.base_row_id)
    return None


def _feature_and_mark_committed_concurrently(log: DeltaLog) -> int | None:
    # RowTrackingConflictResolutionSuite "Set valid baseRowId if table feature and
    # RowIdHighWaterMark are committed concurrently"
    txn = log.start_transaction()
    _with_row_tracking_feature(log)
    log.start_transaction().commit([_memory_add(11)], Write())
    txn.commit([_memory_add(1, "file_path")], ManualUpdate())
    return 11


def _feature_and_adds_in_one_commit(log: DeltaLog) -> int | None:
    # "Conflict resolution if table feature and initial AddFiles are in the same commit"
    txn = log.start_transaction()
    _with_row_tracking_feature(log, _memory_add(1, "other_path"))
    txn.commit([_memory_add(1, "file_path")], ManualUpdate())
    return 1


def _concurrent_insert(log: DeltaLog) -> int | None:
    # "Conflict resolution with concurrent INSERT"
    _with_row_tracking_feature(log)
    log.start_transaction().commit([_memory_add(7)], Write())
    txn = log.start_transaction()
    log.start_transaction().commit([_memory_add(11)], Write())
    txn.commit([_memory_add(1, "file_path")], ManualUpdate())
    return 18


def _winner_not_moving_the_mark(log: DeltaLog) -> int | None:
    # "Handle commits that do not bump the high water mark"
    _with_row_tracking_feature(log)
    log.start_transaction().commit([_memory_add(7)], Write())
    txn = log.start_transaction()
    log.start_transaction().commit([log.update().protocol], ManualUpdate())
    txn.commit([_memory_add(1, "file_path")], ManualUpdate())
    return 7


@pytest.mark.parametrize(
    ("scenario", "row_tracking"),
    [
        (_keeps_ids_of_re_added_files, True),
        (_keeps_ids_after_a_winner_not_moving_the_mark, True),
        (_feature_and_mark_committed_concurrently, False),
        (_feature_and_adds_in_one_commit, False),
        (_concurrent_insert, False),
        (_winner_not_moving_the_mark, False),
    ],
)
def test_row_ids_after_conflicts_as_delta_conflict_checker_suites(
    scenario: Callable[[DeltaLog], int | None], row_tracking: bool
) -> None:
    """Delta's ConflictCheckerRowIdSuite and RowTrackingConflictResolutionSuite: after the
    retry every live file has disjoint row ids below the high-water mark, re-added files keep
    theirs, and ``file_path`` gets the base row id Delta's test expects."""
    log = DeltaLog.for_table(f"memory://row-ids-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    config = {"delta.enableRowTracking": "true"} if row_tracking else {}
    txn.update_metadata(
        Metadata(schema_string=SCHEMA, configuration={**config, "delta.isolationLevel": "Serializable"})
    )
    txn.commit([], CreateTable())
    if row_tracking:
        log.start_transaction().commit([_memory_add(5), _memory_add(5)], Write())
    expected = scenario(log)
    snap = log.update()
    ranges = row_ranges(log)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    assert high_water_mark(snap.domain_metadata) == ranges[-1][1]
    if expected is not None:
        (f,) = [f for f in snap.files if f.path == "file_path"]
        assert f.base_row_id == expected
