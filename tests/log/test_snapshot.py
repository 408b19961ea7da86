"""Snapshots: replay, reconciliation, incremental update, apply, errors (DeltaLogSuite)."""

from __future__ import annotations

import os

import pytest

from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import DomainMetadata, Protocol, SetTransaction
from deltalog.txn.protocol.errors import (
    CorruptLogError,
    InvalidTableStateError,
    NonContiguousVersionsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from tests.log.helpers import add, commit, create, metadata, protocol, remove


def test_empty_location_is_version_minus_one_and_errors(tmp_path):
    log = DeltaLog.for_table(str(tmp_path))
    snap = log.update()
    assert snap.version == -1 and not log.table_exists()
    with pytest.raises(TableNotFoundError, match="no Delta table at"):
        _ = snap.metadata
    with pytest.raises(TableNotFoundError, match="no Delta table at"):
        log.snapshot(version=0)


def test_replay_reconciles_by_path_and_dv(tmp_path):
    t = str(tmp_path)
    create(t, files=["a", "b"])
    commit(t, 1, [remove("a"), add("c")])
    commit(t, 2, [add("a")])  # delete and re-add the same file in different transactions
    snap = DeltaLog.for_table(t).update()
    assert snap.version == 2
    assert sorted(f.path for f in snap.files) == ["a", "b", "c"]
    assert all(not f.data_change for f in snap.files)
    assert snap.tombstones == []  # a's tombstone replaced by the re-add
    assert snap.files_table.column_names[:5] == [
        "path",
        "partitionValues",
        "size",
        "modificationTime",
        "dataChange",
    ]


def test_paths_are_canonicalized_special_characters(tmp_path):
    t = str(tmp_path)
    create(t, files=["p=a%20b/f%25.parquet"])
    commit(t, 1, [remove("p=a b/f%.parquet")])
    assert DeltaLog.for_table(t).update().num_files == 0


def test_versions_not_contiguous(tmp_path):
    t = str(tmp_path)
    create(t, files=["a"])
    commit(t, 1, [add("b")])
    commit(t, 2, [add("c")])
    os.remove(f"{t}/_delta_log/{1:020d}.json")
    # Delta's DELTA_VERSIONS_NOT_CONTIGUOUS (DeltaSourceFastDropFeatureCDCSuite: a change feed stream
    # from a version whose snapshot cannot be rebuilt)
    with pytest.raises(
        NonContiguousVersionsError, match=r"^\[DELTA_VERSIONS_NOT_CONTIGUOUS\].*expected version 1 next"
    ):
        DeltaLog.for_table(t).update()


def test_state_without_protocol_or_metadata_fails(tmp_path):
    t = str(tmp_path)
    commit(t, 0, [metadata(), add("a")])
    with pytest.raises(InvalidTableStateError, match="has no protocol action"):
        DeltaLog.for_table(t).update()
    t2 = str(tmp_path / "t2")
    commit(t2, 0, [protocol()])
    with pytest.raises(InvalidTableStateError, match="has no metaData action"):
        DeltaLog.for_table(t2).update()


def test_corrupt_commit_names_file_and_line(tmp_path):
    t = str(tmp_path)
    create(t, files=["a"])
    with open(f"{t}/_delta_log/{1:020d}.json", "w") as fh:
        fh.write('{"add": {"path": "x"\n')
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.json: line 1 is not valid JSON"):
        DeltaLog.for_table(t).update()
    with pytest.raises(CorruptLogError, match="line 1"):
        DeltaLog.for_table(t).read_commit(1)


def test_unknown_actions_and_fields_are_ignored(tmp_path):
    t = str(tmp_path)
    create(t, files=["a"])
    with open(f"{t}/_delta_log/{1:020d}.json", "w") as fh:
        fh.write(
            '{"futureAction": {"x": 1}}\n{"add": {"path": "b", "partitionValues": {}, "size": 1, '
            '"modificationTime": 1, "dataChange": true, "newField": 5}}\n'
        )
    assert sorted(f.path for f in DeltaLog.for_table(t).update().files) == ["a", "b"]


def _with_unknown_columns(checkpoint: str) -> None:
    """The checkpoint rewritten as EvolvabilitySuiteBase's ``generateTransactionLogWithExtraColumn``
    and a future writer would: a top-level ``unknown`` column, a new field in the ``add``,
    ``metaData`` and ``protocol`` structs, and a row holding only an unknown action."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(checkpoint)
    for name in ("add", "metaData", "protocol"):
        col = table.column(name).combine_chunks()
        fields = [col.type.field(i) for i in range(col.type.num_fields)]
        arrays = [col.field(i) for i in range(col.type.num_fields)] + [pa.array([7] * len(col), pa.int64())]
        names = [f.name for f in fields] + ["someFutureField"]
        grown = pa.StructArray.from_arrays(arrays, names=names, mask=pc.invert(col.is_valid()))
        table = table.set_column(table.schema.get_field_index(name), name, grown)
    table = table.append_column("unknown", pa.array([True] * table.num_rows))
    table = table.append_column("some_new_action", pa.nulls(table.num_rows, pa.struct([("a", pa.int64())])))
    only_unknown = {name: [None] for name in table.schema.names} | {"some_new_action": [{"a": 1}]}
    pq.write_table(pa.concat_tables([table, pa.Table.from_pydict(only_unknown, schema=table.schema)]), checkpoint)


def test_unknown_columns_in_checkpoints_and_commit_lines_are_ignored(tmp_path):
    """EvolvabilitySuite "transaction log schema evolvability": a checkpoint with unknown columns
    and fields, a commit of an unknown action, and lines holding an unknown key beside a known
    action read as without them; deltalog's next checkpoint leaves them out, as Delta's."""
    import pyarrow.parquet as pq

    t = str(tmp_path)
    create(t, files=["a", "b"])
    log = DeltaLog.for_table(t)
    _with_unknown_columns(log.checkpoint().paths[0].removeprefix("file://"))
    with open(f"{t}/_delta_log/{1:020d}.json", "w") as fh:
        fh.write(
            '{"remove": {"path": "a", "deletionTimestamp": 1, "dataChange": true}}\n{"some_new_action": {"a": 1}}\n'
        )
    with open(f"{t}/_delta_log/{2:020d}.json", "w") as fh:
        fh.write(
            '{"commitInfo": {"timestamp": 1, "operation": "WRITE"}, "some_new_action_alongside_add_action": ["a"]}\n'
            '{"add": {"path": "a", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": true, '
            '"some_new_column_in_add_action": 1}, "some_new_action_alongside_add_action": ["a", "1"]}\n'
        )
    fresh = DeltaLog.for_table(t).update()
    assert fresh.version == 2 and sorted(f.path for f in fresh.files) == ["a", "b"]
    assert fresh.protocol == protocol() and fresh.metadata == metadata()
    commit(t, 3, [remove("b")])
    schema = pq.read_schema(DeltaLog.for_table(t).checkpoint().paths[0].removeprefix("file://"))
    assert "unknown" not in schema.names and "some_new_action" not in schema.names
    assert not {"someFutureField", "some_new_column_in_add_action"} & {f.name for f in schema.field("add").type}
    assert sorted(f.path for f in DeltaLog.for_table(t).update().files) == ["a"]


def test_unsupported_reader_feature_is_refused_by_name(tmp_path):
    t = str(tmp_path)
    commit(
        t,
        0,
        [
            Protocol(3, 7, ("deletionVectors", "fancyFeature"), ("deletionVectors", "fancyFeature")),
            metadata(),
        ],
    )
    with pytest.raises(UnsupportedFeatureError, match="fancyFeature") as err:
        DeltaLog.for_table(t).update()
    assert err.value.features == ("fancyFeature",)


def test_update_is_incremental_and_apply_matches_replay(tmp_path, monkeypatch):
    t = str(tmp_path)
    create(t, files=["a", "b"])
    log = DeltaLog.for_table(t)
    s0 = log.update()
    commit(t, 1, [remove("a"), add("c"), SetTransaction("app", 3, 5)])
    commit(t, 2, [DomainMetadata("d", "{}")])
    listed: list[str] = []
    real = log.store.list_from
    monkeypatch.setattr(log.store, "list_from", lambda p: (listed.append(p), real(p))[1])
    s2 = log.update()
    assert listed == [f"{log.log_uri}/{0:020d}"]  # one listing, from the cached version
    assert s2.version == 2 and sorted(f.path for f in s2.files) == ["b", "c"]
    assert s2.txn_version("app") == 3 and "d" in s2.domain_metadata
    assert log.update() is s2  # nothing new: the cached snapshot
    applied = s0.apply(1, [remove("a"), add("c")], 123)
    assert applied.version == 1 and applied.timestamp == 123
    assert sorted(f.path for f in applied.files) == ["b", "c"]
    assert [r.path for r in applied.tombstones] == ["a"]
    with pytest.raises(InvalidTableStateError, match="versions must be contiguous"):
        s0.apply(5, [], 1)


def test_install_snapshot_keeps_the_newest(tmp_path):
    t = str(tmp_path)
    create(t, files=["a"])
    log = DeltaLog.for_table(t)
    s0 = log.update()
    s1 = s0.apply(1, [add("b")], 1)
    log.install_snapshot(s1)
    assert log.current is s1
    log.install_snapshot(s0)
    assert log.current is s1


def test_time_travel_by_version(tmp_path):
    t = str(tmp_path)
    create(t, files=["a"])
    commit(t, 1, [add("b")])
    log = DeltaLog.for_table(t)
    assert log.snapshot(version=0).num_files == 1
    # Delta's DELTA_VERSION_NOT_FOUND (DeltaTimeTravelSuite "as of with versions")
    missing = r"DELTA_VERSION_NOT_FOUND: .* the latest version is 1 \(available versions: \[0, 1\]\)"
    with pytest.raises(VersionNotFoundError, match=missing):
        log.snapshot(version=7)
    with pytest.raises(VersionNotFoundError, match=r"^DELTA_VERSION_NOT_FOUND: .*versions start at 0"):
        log.snapshot(version=-2)


def test_tombstone_and_txn_expiry(tmp_path):
    t = str(tmp_path)
    create(
        t,
        config={
            "delta.deletedFileRetentionDuration": "interval 1 hour",
            "delta.setTransactionRetentionDuration": "interval 1 day",
        },
        files=["a", "b"],
    )
    now = 10**12
    commit(
        t,
        1,
        [
            remove("a", ts=now - 2 * 3600_000),
            remove("b", ts=now - 60_000),
            SetTransaction("old", 1, now - 2 * 86_400_000),
            SetTransaction("new", 2, now),
            SetTransaction("undated", 3, None),  # Delta's lastUpdated.exists(_ > cutoff): expired
        ],
    )
    snap = DeltaLog.for_table(t).update()
    assert [r["path"] for r in snap.tombstones_table(now).to_pylist()] == ["b"]
    assert set(snap.set_transactions_at(now)) == {"new"}


def test_update_sees_a_deleted_or_shorter_log(tmp_path):
    """Golden ``update-deleted-directory``: once the table's directory is gone, ``update()``
    is the empty snapshot (version -1), as Delta's; a table made again at the path with fewer
    versions is read afresh, not the cached state of the one before."""
    import shutil

    t = str(tmp_path / "t")
    create(t, files=["a"])
    commit(t, 1, [add("b")])
    log = DeltaLog.for_table(t)
    assert log.update().version == 1
    shutil.rmtree(t)
    assert log.update().version == -1 and not log.table_exists()
    create(t, files=["c"])
    assert log.update().version == 0 and [f.path for f in log.update().files] == ["c"]


@pytest.mark.parametrize("versions", [2, 4])
def test_update_sees_a_log_made_again_with_as_many_or_more_versions(tmp_path, versions):
    """DeltaLogSuite "deleting and recreating a directory should cause the snapshot to be
    recomputed": Delta's update compares the commit files it listed (``LogSegment.equals``:
    path, size, modification time), so a table made again at the path is read afresh even
    when it has as many versions as the cached one, or more; never the cached state of the
    one before with the new commits applied on top."""
    import shutil

    t = str(tmp_path / "t")
    create(t, files=["a"])
    commit(t, 1, [add("b")])
    log = DeltaLog.for_table(t)
    assert sorted(f.path for f in log.update().files) == ["a", "b"]
    shutil.rmtree(t)
    create(t, files=["x"])
    for v in range(1, versions):
        commit(t, v, [add(f"y{v}"), add(f"z{v}")], mtime_ms=10**12 + v)  # unlike the old commit 1
    snap = log.update()
    expected = ["x", *sorted(f"{c}{v}" for v in range(1, versions) for c in "yz")]
    assert snap.version == versions - 1 and sorted(f.path for f in snap.files) == expected


@pytest.mark.parametrize(
    ("proto", "config", "missing"),
    [
        # DeltaProtocolVersionSuite "all active features are enabled in protocol"
        (Protocol(3, 7, (), ()), {"delta.appendOnly": "false", "delta.enableChangeDataFeed": "true"}, "changeDataFeed"),
        (Protocol(1, 7, None, ("rowTracking",)), {}, "domainMetadata"),  # a listed feature's requirement
        (Protocol(3, 7, (), ("deletionVectors",)), {"delta.appendOnly": "true"}, "appendOnly"),
        # a legacy protocol is not checked; a preview twin serves
        (Protocol(1, 2), {"delta.enableChangeDataFeed": "true"}, None),
        (
            Protocol(3, 7, ("typeWidening-preview",), ("typeWidening-preview",)),
            {"delta.enableTypeWidening": "true"},
            None,
        ),
    ],
)
def test_features_the_metadata_enables_must_be_in_the_protocol(tmp_path, proto, config, missing):
    """Delta's ``assertTableFeaturesMatchMetadata`` on every snapshot
    (``DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH``): only another writer's commit can break it."""
    t = str(tmp_path)
    create(t)
    commit(t, 1, [proto, metadata(config)])
    if missing is None:
        assert DeltaLog.for_table(t).update().version == 1
        return
    with pytest.raises(
        InvalidTableStateError, match=rf"PROTOCOL_METADATA_MISMATCH.*not listed in protocol: {missing}\."
    ):
        DeltaLog.for_table(t).update()
    assert DeltaLog.for_table(t).snapshot(0).version == 0


def test_an_incremental_update_checks_a_changed_protocol_against_the_metadata(tmp_path):
    """The same check when a cached snapshot advances over another writer's commit."""
    t = str(tmp_path)
    create(t)
    log = DeltaLog.for_table(t)
    log.update()
    commit(t, 1, [Protocol(3, 7, (), ()), metadata({"delta.enableChangeDataFeed": "true"})])
    with pytest.raises(InvalidTableStateError, match="not listed in protocol: changeDataFeed"):
        log.update()
