"""Row tracking backfill and unbackfill in batches of commits (Delta's
``RowTrackingBackfillCommand`` / ``RowTrackingUnBackfillCommand``), with concurrent commits
landing deterministically: the store runs them right before a batch's write."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Iterable
from pathlib import Path

import deltalake
import pytest

from deltalog.logstores.local import LocalLogStore
from deltalog.txn.commands.alter import set_table_properties
from deltalog.txn.commands.drop_feature import drop_feature
from deltalog.txn.commands.row_tracking_backfill import BackfillLimits
from deltalog.txn.commit.commit_errors import ConcurrentTransactionError
from deltalog.txn.commit.operations import Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, CommitInfo, RemoveFile, action_to_line
from deltalog.txn.protocol.row_tracking import high_water_mark
from tests.txn.test_row_tracking_commits import SCHEMA, data_file, row_ranges

Rival = Callable[[DeltaLog, list[str]], None]


class _BeforeBatchStore(LocalLogStore):
    """Runs ``rivals[(operation, batchId)]`` once, right before that batch's first write
    (the rival commits at the version the batch wanted: the batch then resolves a conflict),
    and ``after[(operation, batchId)]`` once right after its write."""

    def __init__(self) -> None:
        super().__init__()
        self.rivals: dict[tuple[str, str | None], Rival] = {}
        self.after: dict[tuple[str, str | None], Rival] = {}
        self.log: DeltaLog | None = None

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        lines = list(lines)
        key = None
        if path.endswith(".json") and "/_delta_log/" in path and lines and self.log is not None:
            info = json.loads(lines[0]).get("commitInfo", {})
            key = (info.get("operation"), info.get("operationParameters", {}).get("batchId"))
            rival = self.rivals.pop(key, None)
            if rival is not None:
                rival(self.log, lines)
        super().write(path, lines, overwrite)
        follower = None if key is None else self.after.pop(key, None)
        if follower is not None and self.log is not None:
            follower(self.log, lines)


def _table(tmp_path: Path, files: int, **config: str) -> tuple[DeltaLog, _BeforeBatchStore]:
    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.protocol.actions import Metadata

    store = _BeforeBatchStore()
    log = DeltaLog.for_table(str(tmp_path / "t"), logstore=store)
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=SCHEMA, configuration=dict(config)))
    txn.commit([], CreateTable())
    adds = [data_file(log.table_uri, 2, start=10 * i) for i in range(files)]
    log.start_transaction().commit(adds, Write())
    store.log = log
    return log, store


def _batch_paths(lines: list[str]) -> list[str]:
    return [json.loads(x)["add"]["path"] for x in lines if x.startswith('{"add"')]


def _operations(log: DeltaLog, since: int) -> list[tuple[str | None, str | None]]:
    records = sorted(log.history(), key=lambda r: r.version)
    return [(r.operation, (r.operation_parameters or {}).get("batchId")) for r in records if r.version > since]


def test_enabling_backfills_in_batches_and_resolves_concurrent_commits(tmp_path: Path) -> None:
    log, store = _table(tmp_path, 5)
    # reads before the enablement, commits after it (Delta's default isolation: a blind append does not fail it)
    deleter = log.start_transaction(isolation_level="WriteSerializable")
    first = deleter.snapshot.files[0]
    deleter.track_files_read([first])
    deleted: list[str] = []

    def append(log: DeltaLog, _: list[str]) -> None:  # lands where batch 0 wanted to
        log.start_transaction().commit([data_file(log.table_uri, 3, start=100)], Write())

    def delete(log: DeltaLog, lines: list[str]) -> None:  # removes a file batch 1 re-adds
        txn = log.start_transaction()
        path = next(p for p in _batch_paths(lines) if p != first.path)
        (victim,) = [f for f in txn.filter_files() if f.path == path]
        txn.commit([victim.remove(1)], Write(mode="Overwrite"))
        deleted.append(victim.path)

    store.rivals = {("ROW TRACKING BACKFILL", "0"): append, ("ROW TRACKING BACKFILL", "1"): delete}
    set_table_properties(
        log, {"delta.enableRowTracking": "true"}, row_tracking_backfill=BackfillLimits(max_files_per_commit=2)
    )
    assert _operations(log, 1) == [
        ("UPGRADE PROTOCOL", None),
        ("WRITE", None),  # the concurrent append: ids from the writer itself
        ("ROW TRACKING BACKFILL", "0"),
        ("WRITE", None),  # the concurrent delete
        ("ROW TRACKING BACKFILL", "1"),
        ("ROW TRACKING BACKFILL", "2"),
        ("SET TBLPROPERTIES", None),
    ]
    (upgrade,) = [r for r in log.history() if r.operation == "UPGRADE PROTOCOL"]
    assert "rowTracking" in json.loads(upgrade.operation_parameters["newProtocol"])["writerFeatures"]
    (appended,) = [a for a in log.read_commit(3) if isinstance(a, AddFile)]
    assert appended.base_row_id is not None and appended.default_row_commit_version == 3
    readds = {v: [a for a in log.read_commit(v) if isinstance(a, AddFile)] for v in (4, 6, 7)}
    assert [len(readds[v]) for v in (4, 6, 7)] == [2, 1, 1]  # batch 1 dropped the deleted file
    assert all(not a.data_change and a.base_row_id is not None for adds in readds.values() for a in adds)
    assert deleted[0] not in {a.path for adds in readds.values() for a in adds}
    assert appended.path not in {a.path for adds in readds.values() for a in adds}
    ranges = row_ranges(log)  # every file has ids
    ids = [i for lo, hi in ranges for i in range(lo, hi + 1)]
    assert len(ids) == len(set(ids)) == 11 and max(ids) <= high_water_mark(log.update().domain_metadata)
    # the early reader's delete keeps going: its remove carries the ids batch 0 gave the file
    v = deleter.commit([first.remove(1)], Write(mode="Overwrite"))
    (removed,) = [a for a in log.read_commit(v) if isinstance(a, RemoveFile)]
    (backfilled,) = [a for adds in readds.values() for a in adds if a.path == first.path]
    assert removed.base_row_id is not None
    assert (removed.base_row_id, removed.default_row_commit_version) == (
        backfilled.base_row_id,
        backfilled.default_row_commit_version,
    )
    assert deltalake.DeltaTable(log.table_uri).to_pyarrow_table().num_rows == 9


def test_dropping_unbackfills_in_batches_and_resolves_concurrent_commits(tmp_path: Path) -> None:
    log, store = _table(tmp_path, 5, **{"delta.enableRowTracking": "true"})
    limits = BackfillLimits(max_files_per_commit=2)

    def backfill(log: DeltaLog, _: list[str]) -> None:  # an enablement's batch (hand-made)
        log.store.write(
            log.commit_uri(log.update().version + 1),
            [
                action_to_line(
                    CommitInfo(timestamp=1, operation="ROW TRACKING BACKFILL", operation_parameters={"batchId": "0"})
                )
            ],
        )

    store.rivals = {("ROW TRACKING UNBACKFILL", "0"): backfill}
    with pytest.raises(ConcurrentTransactionError, match="BACKFILL_RUNNING_CONCURRENTLY_WITH_UNBACKFILL"):
        drop_feature(log, "rowTracking", row_tracking_backfill=limits)
    assert all(f.base_row_id is not None for f in log.update().files)  # no batch landed

    def third_party(log: DeltaLog, lines: list[str]) -> None:
        """A writer that ignores delta.rowTrackingSuspended (adds ids) and removes a file batch 0 re-adds."""
        snap = log.update()
        (victim,) = [f for f in snap.files if f.path == _batch_paths(lines)[1]]
        add = data_file(log.table_uri, 4, start=200)
        add = AddFile(add.path, {}, add.size, 1, stats=add.stats, base_row_id=500, default_row_commit_version=9)
        lines = [action_to_line(CommitInfo(timestamp=1, operation="WRITE")), action_to_line(victim.remove(1))]
        log.store.write(log.commit_uri(snap.version + 1), [*lines, action_to_line(add)])

    store.rivals = {("ROW TRACKING UNBACKFILL", "0"): third_party}
    before = log.update().version
    version = drop_feature(log, "rowTracking", row_tracking_backfill=limits)
    assert _operations(log, before) == [
        ("SET TBLPROPERTIES", None),
        ("WRITE", None),
        ("ROW TRACKING UNBACKFILL", "0"),
        ("ROW TRACKING UNBACKFILL", "1"),
        ("ROW TRACKING UNBACKFILL", "2"),
        ("DROP FEATURE", None),
    ]
    batch0 = [a for a in log.read_commit(before + 3) if isinstance(a, AddFile)]
    assert len(batch0) == 2 and any(a.num_records() == 4 for a in batch0)  # its file, the writer's stripped
    snap = log.update()
    assert snap.version == version and len(snap.files) == 5
    assert [(f.base_row_id, f.default_row_commit_version) for f in snap.files] == [(None, None)] * 5
    assert "rowTracking" not in (snap.protocol.writer_features or ())
    assert deltalake.DeltaTable(log.table_uri).to_pyarrow_table().num_rows == 12


def test_a_write_between_the_last_unbackfill_and_the_downgrade_is_unbackfilled_by_the_downgrade(tmp_path: Path) -> None:
    """Delta's RowTrackingRemovalConcurrencySuite "insert interleaves between the last
    unbackfill and the protocol downgrade": a writer that ignores
    ``delta.rowTrackingSuspended`` (row ids, a new high-water mark) commits after the last
    batch while the downgrade commit is prepared. Delta's ``checkProtocolCompatibility``
    resolves it as an unbackfill batch does (its adds re-added without ids by the downgrade
    commit; the ``delta.rowTracking`` domain is no conflict) instead of failing the drop."""
    from deltalog.txn.protocol.row_tracking import high_water_mark_domain

    log, store = _table(tmp_path, 2, **{"delta.enableRowTracking": "true"})

    def third_party(log: DeltaLog, _: list[str]) -> None:
        snap = log.update()
        add = data_file(log.table_uri, 3, start=100)
        add = AddFile(add.path, {}, add.size, 1, stats=add.stats, base_row_id=4, default_row_commit_version=9)
        info = CommitInfo(timestamp=1, operation="WRITE")
        lines = [action_to_line(a) for a in (info, add, high_water_mark_domain(6))]
        log.store.write(log.commit_uri(snap.version + 1), lines)

    store.rivals = {("DROP FEATURE", None): third_party}
    version = drop_feature(log, "rowTracking")
    (stripped,) = [a for a in log.read_commit(version) if isinstance(a, AddFile)]
    assert (stripped.base_row_id, stripped.default_row_commit_version, stripped.data_change) == (None, None, False)
    snap = log.update()
    assert [(f.base_row_id, f.default_row_commit_version) for f in snap.files] == [(None, None)] * 3
    assert "rowTracking" not in (snap.protocol.writer_features or ())
    assert high_water_mark(snap.non_file_state.domains) == -1  # the domain removed


class _Concurrent:
    """RowTrackingBackfillConflictsSuite's concurrent transaction: ``prepare`` opens it
    (reads and builds its actions), ``commit`` commits them; ``rows`` the table's rows after."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.commit_actions: Callable[[], int] | None = None
        self.rows: list[int] = []

    def prepare(self, log: DeltaLog, _: list[str] | None = None) -> None:
        from deltalog.txn.commit.operations import Delete, Optimize

        txn = log.start_transaction()
        rows = {f.path: _rows_of(log, f) for f in txn.snapshot.files}
        self.rows = sorted(n for values in rows.values() for n in values)
        if self.kind == "INSERT":
            actions: list[AddFile | RemoveFile] = [data_file(log.table_uri, 1, start=1337)]
            self.rows = sorted([*self.rows, 1337])
            self.commit_actions = lambda: txn.commit(actions, Write())
            return
        files = sorted(txn.files_for_scan(), key=lambda f: f.path)[:2]
        txn.track_files_read(files)
        if self.kind == "DV DELETE":  # the first row of a file deleted through a deletion vector
            actions = _dv_delete(files[0])
            self.rows.remove(rows[files[0].path][0])
            self.commit_actions = lambda: txn.commit(actions, Delete(["n = 0"]))
            return
        if self.kind == "DELETE":  # the first row of a file deleted: the rest rewritten
            kept = rows[files[0].path][1:]
            actions = [files[0].remove(1), data_file(log.table_uri, len(kept), start=kept[0])]
            self.rows.remove(rows[files[0].path][0])
            self.commit_actions = lambda: txn.commit(actions, Delete(["n = 0"]))
            return
        compacted = dataclasses.replace(data_file(log.table_uri, 4, start=500), data_change=False)
        actions = [*(f.remove(1, data_change=False) for f in files), compacted]  # an OPTIMIZE (new rows: a stand-in)
        gone = {n for f in files for n in rows[f.path]}
        self.rows = sorted([*(n for n in self.rows if n not in gone), 500, 501, 502, 503])
        self.commit_actions = lambda: txn.commit(actions, Optimize(predicate=[]))

    def commit(self, _: DeltaLog | None = None, __: list[str] | None = None) -> None:
        assert self.commit_actions is not None
        self.commit_actions()


def _dv_delete(f: AddFile) -> list[AddFile | RemoveFile]:
    """``f`` removed and re-added with an inline deletion vector deleting its first row."""
    from deltalog.txn.log.deletion_vectors import serialize_bitmap, z85_encode
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    bitmap = serialize_bitmap([0])
    dv = DeletionVectorDescriptor("i", z85_encode(bitmap + b"\0" * (-len(bitmap) % 4)), len(bitmap), 1)
    stats = json.dumps({"numRecords": f.num_records(), "tightBounds": False})
    return [f.remove(1), dataclasses.replace(f, data_change=True, deletion_vector=dv, stats=stats)]


def _live_rows(log: DeltaLog) -> list[int]:
    """The table's rows (``n``), deletion vectors applied, sorted."""
    from deltalog.txn.log.deletion_vectors import read_deletion_vector

    out: list[int] = []
    for f in log.update().files:
        dv = f.deletion_vector
        deleted = set() if dv is None else set(read_deletion_vector(log.store, log.table_uri, dv).to_pylist())
        out += [n for i, n in enumerate(_rows_of(log, f)) if i not in deleted]
    return sorted(out)


def _rows_of(log: DeltaLog, f: AddFile) -> list[int]:
    import pyarrow.parquet as pq

    values: list[int] = pq.read_table(log.store.fs_path(f"{log.table_uri}/{f.path}")).column("n").to_pylist()
    return values


_UPGRADE, _BATCH = ("UPGRADE PROTOCOL", None), ("ROW TRACKING BACKFILL", "0")


@pytest.mark.parametrize(
    ("kind", "scenario"),
    [("INSERT", 1), ("DELETE", 2), ("DELETE", 3), ("DELETE", 5), ("OPTIMIZE", 6), ("OPTIMIZE", 4), ("INSERT", 7)]
    + [("DV DELETE", n) for n in (2, 3, 5, 6, 7)],
)
def test_backfill_and_a_concurrent_transaction_both_commit_as_delta_backfill_conflicts_suite(
    tmp_path: Path, kind: str, scenario: int
) -> None:
    """Delta's RowTrackingBackfillConflictsSuite scenarios 1-7 (2 batches in 3 and 6): the
    concurrent transaction is prepared before the protocol upgrade (1-4) or after it (5-7)
    and commits before the upgrade (1), before the first batch (2), between the batches (3,
    6), after everything (4, 7) or while the only batch is prepared (5). Both commit, every
    file ends with valid row ids and the rows are the transaction's. ``DV DELETE``:
    RowTrackingBackfillConflictsDVSuite's DELETE (the file re-added with a deletion vector)."""
    log, store = _table(tmp_path, 4, **({"delta.enableDeletionVectors": "true"} if kind == "DV DELETE" else {}))
    other = _Concurrent(kind)
    if scenario <= 4:
        other.prepare(log)
    else:
        store.after[_UPGRADE] = other.prepare
    hooks = {1: (store.rivals, _UPGRADE), 2: (store.after, _UPGRADE), 3: (store.after, _BATCH)}
    hooks |= {5: (store.rivals, _BATCH), 6: (store.after, _BATCH)}
    if scenario in hooks:
        where, key = hooks[scenario]
        where[key] = other.commit
    set_table_properties(
        log, {"delta.enableRowTracking": "true"}, row_tracking_backfill=BackfillLimits(2 if scenario in (3, 6) else 10)
    )
    if scenario in (4, 7):
        other.commit()
    assert not store.rivals and not store.after
    snap = log.update()
    assert snap.metadata.properties.enable_row_tracking
    ranges = row_ranges(log)
    assert (
        all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
        and high_water_mark(snap.domain_metadata) >= ranges[-1][1]
    )
    assert _live_rows(log) == other.rows
    if kind != "DV DELETE":  # delta-rs's pyarrow reader refuses deletion vectors
        assert sorted(deltalake.DeltaTable(log.table_uri).to_pyarrow_table().column("n").to_pylist()) == other.rows


@pytest.mark.parametrize(
    ("before", "refused"),
    [
        ({"delta.columnMapping.mode": "name"}, {"delta.columnMapping.mode": "id"}),
        ({}, {"delta.enableIcebergCompatV3": "true"}),
    ],
    ids=["column mapping mode change", "IcebergCompatV3 without column mapping"],
)
def test_enabling_with_a_property_the_property_commit_refuses_commits_nothing(
    tmp_path: Path, before: dict[str, str], refused: dict[str, str]
) -> None:
    """RowTrackingBackfillSuite "Trigger backfill using ALTER TABLE, but another property
    fails": Delta upgrades the protocol and backfills, then its property commit refuses the
    other property. deltalog checks the property commit first, so the refusal (which says
    nothing was committed) leaves the table as it was."""
    from deltalog.errors import DeltaLogError

    log, _ = _table(tmp_path, 2)
    if before:
        set_table_properties(log, before)
    read = log.update()
    with pytest.raises(DeltaLogError, match="Nothing was committed"):
        set_table_properties(log, {"delta.enableRowTracking": "true", **refused})
    after = log.update()
    assert after.version == read.version and after.protocol == read.protocol
    assert [f.base_row_id for f in after.files] == [None, None]


def test_enabling_lifts_a_suspension_in_the_same_call_when_no_file_needs_ids(tmp_path: Path) -> None:
    """Delta checks ``delta.rowTrackingSuspended`` in each backfill batch
    (``RowTrackingBackfillBatch``): a call that sets ``delta.enableRowTracking=true`` and
    ``delta.rowTrackingSuspended=false`` on a suspended table whose files all kept their ids
    needs no batch and succeeds; once a file lacks ids it is refused (before any commit)."""
    from deltalog.txn.protocol.errors import RowTrackingError

    log, _ = _table(tmp_path, 2, **{"delta.enableRowTracking": "true"})
    suspend = {"delta.enableRowTracking": "false", "delta.rowTrackingSuspended": "true"}
    resume = {"delta.enableRowTracking": "true", "delta.rowTrackingSuspended": "false"}
    set_table_properties(log, suspend)
    ids = row_ranges(log)
    set_table_properties(log, resume)
    assert _operations(log, 1) == [("SET TBLPROPERTIES", None), ("SET TBLPROPERTIES", None)]  # no batch
    snap = log.update()
    assert snap.metadata.properties.enable_row_tracking and row_ranges(log) == ids
    set_table_properties(log, suspend)
    log.start_transaction().commit([data_file(log.table_uri, 3, start=100)], Write())  # no ids: suspended
    version = log.update().version
    with pytest.raises(RowTrackingError, match="rowTrackingSuspended is true"):
        set_table_properties(log, resume)
    assert log.update().version == version


def test_enabling_while_turning_column_mapping_off_backfills_then_rewrites(tmp_path: Path) -> None:
    """``SET TBLPROPERTIES ('delta.enableRowTracking' = 'true', 'delta.columnMapping.mode' =
    'none')`` on a table that maps columns: Delta's ``validateAndBackfill``, then its
    ``RemoveColumnMappingCommand``, then the property commit (the check made before the
    backfill takes the mode change as the rewrite leaves it, not as one it refuses)."""
    from tests.txn.test_row_tracking_commits import create

    log = create(str(tmp_path / "t"))
    log.start_transaction().commit([data_file(log.table_uri, 2, start=2 * i) for i in range(2)], Write())
    set_table_properties(log, {"delta.columnMapping.mode": "name"})
    set_table_properties(log, {"delta.enableRowTracking": "true", "delta.columnMapping.mode": "none"})
    assert [op for op, _ in _operations(log, 2)] == [
        "UPGRADE PROTOCOL",
        "ROW TRACKING BACKFILL",
        "REMOVE COLUMN MAPPING",
        "SET TBLPROPERTIES",
    ]
    snap = log.update()
    assert snap.metadata.properties.enable_row_tracking
    assert snap.metadata.configuration["delta.columnMapping.mode"] == "none"
    ids = [i for lo, hi in row_ranges(log) for i in range(lo, hi + 1)]
    assert len(ids) == len(set(ids)) == 4
    assert sorted(deltalake.DeltaTable(log.table_uri).to_pyarrow_table().column("n").to_pylist()) == [0, 1, 2, 3]


def test_enabling_on_files_without_record_counts_is_refused_before_the_protocol_upgrade(tmp_path: Path) -> None:
    """A file without ``numRecords`` cannot get row ids (Delta's batch fails with
    ``DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS`` after its protocol upgrade, leaving a table
    whose every later write needs statistics); deltalog refuses before any commit."""
    from deltalog.txn.protocol.errors import RowTrackingError

    log, _ = _table(tmp_path, 1)
    log.start_transaction().commit([dataclasses.replace(data_file(log.table_uri, 2), stats=None)], Write())
    read = log.update()
    with pytest.raises(RowTrackingError, match=r"^\[DELTA_ROW_ID_ASSIGNMENT_WITHOUT_STATS\] .*numRecords"):
        set_table_properties(log, {"delta.enableRowTracking": "true"})
    after = log.update()
    assert after.version == read.version and after.protocol == read.protocol


def test_two_concurrent_enablements_give_each_file_ids_once(tmp_path: Path) -> None:
    """RowTrackingBackfillBackfillConflictsSuite "Two Concurrent backfills": a second
    enablement's batch read the files the first's batch then re-added (and the first's
    property commit followed); it drops them (an empty batch), does not upgrade the protocol
    again, and no file's ids change."""
    from deltalog.txn.commands.row_tracking_backfill import _upgrade_protocol

    log, store = _table(tmp_path, 4)
    _upgrade_protocol(log, None)  # the first enablement's upgrade
    first: dict[str, tuple[int | None, int | None]] = {}

    def first_enablement(log: DeltaLog, _: list[str]) -> None:
        set_table_properties(DeltaLog.for_table(log.table_uri), {"delta.enableRowTracking": "true"})
        first.update({f.path: (f.base_row_id, f.default_row_commit_version) for f in log.update().files})

    store.rivals[_BATCH] = first_enablement
    set_table_properties(log, {"delta.enableRowTracking": "true"})
    assert _operations(log, 2) == [_BATCH, ("SET TBLPROPERTIES", None), _BATCH, ("SET TBLPROPERTIES", None)]
    assert [a for a in log.read_commit(5) if isinstance(a, (AddFile, RemoveFile))] == []
    assert {f.path: (f.base_row_id, f.default_row_commit_version) for f in log.update().files} == first
    assert row_ranges(log) == [(0, 1), (2, 3), (4, 5), (6, 7)]


def test_an_enablement_failed_by_a_metadata_change_is_finished_by_the_next(tmp_path: Path) -> None:
    """RowTrackingBackfillBackfillConflictsSuite "A second backfill after a failed backfill":
    a metadata change landing while a batch is prepared fails it (MetadataChangedError, row
    tracking not enabled); enabling again backfills the files and enables it."""
    from deltalog.txn.commit.commit_errors import MetadataChangedError

    log, store = _table(tmp_path, 2)

    def change_metadata(log: DeltaLog, _: list[str]) -> None:
        set_table_properties(DeltaLog.for_table(log.table_uri), {"delta.appendOnly": "false"})

    store.rivals[_BATCH] = change_metadata
    with pytest.raises(MetadataChangedError):
        set_table_properties(log, {"delta.enableRowTracking": "true"})
    snap = log.update()
    assert not snap.metadata.properties.enable_row_tracking and all(f.base_row_id is None for f in snap.files)
    set_table_properties(log, {"delta.enableRowTracking": "true"})
    assert [op for op, _ in _operations(log, 1)] == [
        "UPGRADE PROTOCOL",
        "SET TBLPROPERTIES",
        "ROW TRACKING BACKFILL",
        "SET TBLPROPERTIES",
    ]
    assert log.update().metadata.properties.enable_row_tracking and row_ranges(log) == [(0, 1), (2, 3)]


@pytest.mark.parametrize("winner", ["CLONE", "SET TBLPROPERTIES"])
def test_clone_and_an_enablement_of_an_empty_table_as_delta_clone_conflicts_suite(tmp_path: Path, winner: str) -> None:
    """RowTrackingBackfillCloneConflictsSuite: CREATE OR REPLACE ... SHALLOW CLONE onto an
    empty table while row tracking is enabled on it (after the protocol upgrade, no batch).
    A clone landing first fails the property commit (MetadataChangedError); a property
    commit landing first fails the clone (ConcurrentWriteError: no conflict resolution)."""
    from deltalog.txn.commands.clone import clone
    from deltalog.txn.commands.row_tracking_backfill import _upgrade_protocol
    from deltalog.txn.commit.commit_errors import ConcurrentWriteError, MetadataChangedError
    from tests.txn.test_row_tracking_commits import create

    source = create(str(tmp_path / "source"))
    source.start_transaction().commit([data_file(source.table_uri, 3)], Write())
    target, store = _table(tmp_path, 0)
    enable = {"delta.enableRowTracking": "true"}

    def clone_first(log: DeltaLog, _: list[str]) -> None:
        clone(source, log.table_uri, replace=True)

    def enable_first(log: DeltaLog, _: list[str]) -> None:
        set_table_properties(DeltaLog.for_table(log.table_uri), enable)

    if winner == "CLONE":
        store.rivals[("SET TBLPROPERTIES", None)] = clone_first
        with pytest.raises(MetadataChangedError):
            set_table_properties(target, enable)
    else:
        _upgrade_protocol(target, None)
        store.rivals[("CLONE", None)] = enable_first
        with pytest.raises(ConcurrentWriteError):
            clone(source, target, replace=True)
    snap = target.update()
    assert "rowTracking" in (snap.protocol.writer_features or ())
    assert snap.metadata.properties.enable_row_tracking == (winner != "CLONE")
    assert len(snap.files) == (1 if winner == "CLONE" else 0)
    assert [op for op, _ in _operations(target, 1)] == ["UPGRADE PROTOCOL", winner]
