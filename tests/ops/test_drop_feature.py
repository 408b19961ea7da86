"""``checkpointProtection`` writes and ``DROP FEATURE`` (Delta's ``DeltaFastDropFeatureSuite``),
through the engine on tiny tables."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import deltalake
import pytest

from deltalog.errors import UnsupportedFeatureError
from deltalog.txn.commands.alter import set_table_properties
from deltalog.txn.commands.drop_feature import (
    DropFeatureUnsupportedError,
    DropFeatureWaitForRetentionError,
    FeatureNotPresentError,
    FeatureNotRemovableError,
    FeatureStillInUseError,
    drop_feature,
)
from deltalog.txn.commit.commit_errors import DropFeatureConflictError
from deltalog.txn.commit.operations import Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Protocol
from deltalog.txn.protocol.checkpoint_protection import PROPERTY, with_checkpoint_protection
from deltalog.txn.protocol.feature_removal import protocol_without
from tests.ops.tables import append, create, deletion_vector_table, read_ids

DAY_MS = 24 * 3600 * 1000


def _log_files(log: DeltaLog, kind: str) -> list[int]:
    names = os.listdir(log.store.fs_path(log.log_uri))
    return sorted(int(n[:20]) for n in names if n[:20].isdigit() and n[20:].startswith(kind))


def _age(log: DeltaLog, versions: range, days: int) -> None:
    """Make the log files of ``versions`` ``days`` old (Delta's ``setModificationTimes``)."""
    old = time.time() - days * 86400
    for name in os.listdir(log.store.fs_path(log.log_uri)):
        if name[:20].isdigit() and int(name[:20]) in versions:
            os.utime(os.path.join(log.store.fs_path(log.log_uri), name), (old, old))


def test_fast_drop_of_deletion_vectors_then_writes_checkpoints_and_cleanup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = deletion_vector_table(str(tmp_path / "t"))
    version = drop_feature(log, "deletionVectors")
    snap = log.update()
    ops = [r.operation for r in reversed(log.history())][3:]
    assert ops == ["UNSET TBLPROPERTIES", "REORG", "Deletion Vector Tombstones", *["Empty Commit"] * 3, "DROP FEATURE"]
    assert version == 9 and snap.protocol.writer_features == ("appendOnly", "checkpointProtection", "invariants")
    assert snap.protocol.min_reader_version == 1 and snap.metadata.configuration[PROPERTY] == "9"
    assert _log_files(log, ".checkpoint") == [6, 7, 8, 9]  # three barriers and the protected one
    tombstone = log.read_commit(5)[-1]
    assert tombstone.path.startswith("deletion_vector_") and not tombstone.data_change  # type: ignore[union-attr]
    # the table is written, checkpointed (the post-commit checkpoint at 10) and read by deltalog
    append(log, [9], "a")
    assert read_ids(log) == [2, 4, 9] and _log_files(log, ".checkpoint")[-1] == 10
    # cleanup: commits 0..6 expired; everything before the barrier checkpoint 7 goes, commits
    # before checkpoints, and the barriers stay (Delta's BufferingLogDeletionIterator)
    _age(log, range(0, 7), days=40)
    deleted: list[str] = []
    real_delete = log.store.delete
    monkeypatch.setattr(log.store, "delete", lambda p: (deleted.append(p.rsplit("/", 1)[1]), real_delete(p))[1])
    log.cleanup_expired_logs(log.update())
    first_checkpoint = min(i for i, n in enumerate(deleted) if ".checkpoint." in n)
    assert all(".checkpoint." in n for n in deleted[first_checkpoint:]) and deleted[first_checkpoint][:20].endswith("6")
    assert _log_files(log, ".json")[0] == 7 and _log_files(log, ".checkpoint") == [7, 8, 9, 10]
    for v in range(7, 11):
        assert read_ids(log, v) == ([2, 4, 9] if v == 10 else [2, 4])
    assert sorted(deltalake.DeltaTable(log.table_uri).to_pyarrow_table().column("id").to_pylist()) == [2, 4, 9]


def test_checkpoint_of_a_protected_version_needs_its_protocol(tmp_path: Path) -> None:
    """RFC requirement b: below the boundary, a checkpoint only of a protocol deltalog writes."""
    root = tmp_path / "t" / "_delta_log"
    root.mkdir(parents=True)
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    )
    meta = {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": schema, "partitionColumns": []}
    old = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["coordinatedCommits-preview", "inCommitTimestamp"],
    }
    new = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["checkpointProtection"]}
    conf = {"configuration": {PROPERTY: "1"}}
    (root / f"{0:020}.json").write_text(json.dumps({"protocol": old}) + "\n" + json.dumps({"metaData": meta}))
    (root / f"{1:020}.json").write_text(json.dumps({"protocol": new}) + "\n" + json.dumps({"metaData": meta | conf}))
    log = DeltaLog.for_table(str(tmp_path / "t"))
    with pytest.raises(UnsupportedFeatureError, match="coordinatedCommits-preview"):
        log.checkpoint(log.snapshot(0))
    assert _log_files(log, ".checkpoint") == []
    log.checkpoint(log.snapshot(1))
    assert _log_files(log, ".checkpoint") == [1]


def test_drop_commit_moves_its_protected_version_past_winners(tmp_path: Path) -> None:
    """Delta's ConflictChecker: the downgrade re-validates the dropped feature on each winner
    and protects the checkpoints before the version it finally lands at."""
    log = create(str(tmp_path / "t"), config={"delta.feature.vacuumProtocolCheck": "supported"})
    txn = log.start_transaction()
    txn.update_metadata(with_checkpoint_protection(txn.snapshot.metadata, txn.read_version + 1))
    protocol = protocol_without(txn.snapshot.protocol, "vacuumProtocolCheck", ("checkpointProtection",))
    txn.downgrade_protocol(protocol, lambda s: s.num_files < 2, protect_checkpoints=True)
    append(log, [1], "a")
    assert txn.commit([], Write()) == 2
    assert log.update().metadata.configuration[PROPERTY] == "2"
    txn = log.start_transaction()
    txn.downgrade_protocol(protocol_without(txn.snapshot.protocol, "checkpointProtection"), lambda s: s.num_files < 2)
    append(log, [2], "a")
    with pytest.raises(DropFeatureConflictError, match="version 3"):
        txn.commit([], Write())
    # the re-check comes before the metadata check, as in Delta's checkProtocolCompatibility
    log = create(str(tmp_path / "u"))
    txn = log.start_transaction()
    txn.update_metadata(txn.snapshot.metadata)
    txn.downgrade_protocol(Protocol(1, 1), lambda s: s.properties.checkpoint_interval == 10)
    set_table_properties(log, {"delta.checkpointInterval": "5"})
    with pytest.raises(DropFeatureConflictError, match="version 1"):
        txn.commit([], Write())


def test_drop_feature_errors_leave_the_table_alone(tmp_path: Path) -> None:
    log = create(
        str(tmp_path / "t"),
        config={
            "delta.constraints.pos": "id > 0",
            "delta.feature.identityColumns": "supported",
            "delta.feature.appendOnly": "supported",
        },
    )
    before = log.update().version
    cases: list[tuple[str, type[Exception], str]] = [
        ("deletionVectors", FeatureNotPresentError, "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"),
        ("appendOnly", FeatureNotRemovableError, "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"),
        ("fancyFeature", FeatureNotRemovableError, "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"),
        ("delta.appendOnly", FeatureNotRemovableError, "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY"),
        # Delta finds a feature by name in any case, but looks for the exact name in the protocol
        ("CHECKCONSTRAINTS", FeatureNotPresentError, "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"),
        # a delta.* name that is no table property is an unknown feature
        ("delta.fancyProperty", FeatureNotRemovableError, "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"),
        ("DELTA.APPENDONLY", FeatureNotRemovableError, "DELTA_FEATURE_DROP_FEATURE_IS_DELTA_PROPERTY"),
        ("identityColumns", FeatureNotRemovableError, "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"),
        # CheckConstraintsSuite "drop table feature": the names as Delta's formatColumn writes them
        ("checkConstraints", FeatureStillInUseError, "DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE.*first: `pos`"),
    ]
    for name, error, error_class in cases:
        with pytest.raises(error, match=error_class):
            drop_feature(log, name)
    with pytest.raises(FeatureNotRemovableError, match="DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED"):
        drop_feature(log, "checkConstraints", truncate_history=True)
    assert log.update().version == before
    # one Delta drops but deltalog does not (coordinated commits): refused by name
    features = [
        "appendOnly",
        "checkConstraints",
        "coordinatedCommits-preview",
        "inCommitTimestamp",
        "vacuumProtocolCheck",
    ]
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": features[4:],
        "writerFeatures": features,
    }
    info = {"timestamp": 1, "operation": "x", "inCommitTimestamp": int(time.time() * 1000)}
    commit = json.dumps({"commitInfo": info}) + "\n" + json.dumps({"protocol": protocol}) + "\n"
    Path(log.store.fs_path(log.log_uri), f"{before + 1:020}.json").write_text(commit)
    with pytest.raises(DropFeatureUnsupportedError, match="DELTALOG_FEATURE_DROP_NOT_IMPLEMENTED"):
        drop_feature(log, "coordinatedCommits-preview")
    assert log.update().version == before + 1


def test_writer_feature_drop_and_truncate_history_paths(tmp_path: Path) -> None:
    # a writer feature: no barrier, no checkpointProtection (Delta's "Dropping writer feature")
    log = create(str(tmp_path / "ict"), config={"delta.enableInCommitTimestamps": "true"})
    append(log, [1], "a")
    drop_feature(log, "inCommitTimestamp")
    snap = log.update()
    assert snap.protocol == Protocol(1, 2)  # normalized, as Delta's removeFeature
    assert snap.metadata.configuration == {"delta.enableInCommitTimestamps": "false"}
    assert _log_files(log, ".checkpoint") == []
    # TRUNCATE HISTORY: the first run cleans the latest version and asks to wait 24 hours
    log = deletion_vector_table(str(tmp_path / "dv"))
    with pytest.raises(DropFeatureWaitForRetentionError, match="24 hours"):
        drop_feature(log, "deletionVectors", truncate_history=True)
    assert "deletionVectors" in log.update().protocol.writer_features
    drop_feature(log, "deletionVectors", truncate_history=True, now_ms=int(time.time() * 1000) + 2 * DAY_MS)
    snap = log.update()
    assert snap.protocol == Protocol(1, 2)  # no checkpointProtection after a truncation
    assert _log_files(log, ".json")[0] == 7 and read_ids(log) == [2, 4]
    # checkpointProtection: TRUNCATE HISTORY only, once the history before it is gone
    log = deletion_vector_table(str(tmp_path / "cp"))
    boundary = drop_feature(log, "deletionVectors")
    with pytest.raises(FeatureNotRemovableError, match="WITH_HISTORY_TRUNCATION"):
        drop_feature(log, "checkpointProtection")
    with pytest.raises(DropFeatureWaitForRetentionError, match="CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"):
        drop_feature(log, "checkpointProtection", truncate_history=True)
    drop_feature(log, "checkpointProtection", truncate_history=True, now_ms=int(time.time() * 1000) + 2 * DAY_MS)
    snap = log.update()
    assert snap.protocol.writer_features is None and PROPERTY not in snap.metadata.configuration
    assert _log_files(log, ".json")[0] >= boundary and read_ids(log) == [2, 4]
    assert sorted(deltalake.DeltaTable(log.table_uri).to_pyarrow_table().column("id").to_pylist()) == [2, 4]


def test_fast_drop_of_type_widening_rewrites_old_files_then_readers_without_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delta's TypeWideningPreDowngradeCommand: unset the property, REORG the files written
    before the widenings (int -> long, date -> timestamp_ntz, decimals, array elements), drop
    delta.typeChanges; then delta-rs, which lacks the reader feature, reads the table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.protocol.type_widening import all_type_changes
    from tests.features.widening_tables import NEW_ARROW, OLD_ARROW, build, expected_rows

    def live_rows(log: DeltaLog) -> list[dict[str, object]]:
        tables = [pq.read_table(f"{log.table_uri}/{f.path}") for f in log.update().files]
        assert all(t.schema.equals(NEW_ARROW) for t in tables)  # every footer has the wide types
        return sorted(pa.concat_tables(tables).to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type, return-value]

    log = build(str(tmp_path / "t"))
    old_file = next(f.path for f in log.update().files if pq.read_schema(f"{log.table_uri}/{f.path}") == OLD_ARROW)
    version = drop_feature(log, "typeWidening")
    snap = log.update()
    ops = [r.operation for r in log.history(7)]
    assert ops == ["DROP FEATURE", *["Empty Commit"] * 3, "DROP FEATURE", "REORG", "UNSET TBLPROPERTIES"]
    reorg = log.history(6)[-1]
    assert reorg.operation_metrics["numRemovedFiles"] == "1"  # the new file is already wide
    assert old_file not in {f.path for f in snap.files}
    columns = json.loads(log.history(5)[-1].operation_parameters["columns"])
    assert [c["name"] for c in columns] == ["i", "s", "f", "d", "m", "arr"]
    assert "typeWidening" not in (snap.protocol.reader_features or ())
    assert "checkpointProtection" in (snap.protocol.writer_features or ())
    assert snap.metadata.configuration[PROPERTY] == str(version)
    assert all_type_changes(json.loads(snap.metadata.schema_string)) == []
    assert "delta.enableTypeWidening" not in snap.metadata.configuration
    assert live_rows(log) == expected_rows()
    got = deltalake.DeltaTable(log.table_uri).to_pyarrow_table()
    assert got.schema.equals(NEW_ARROW, check_metadata=False)
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == expected_rows()
    with pytest.raises(FeatureNotPresentError):
        drop_feature(log, "typeWidening")

    # a commit that turns type widening back on while the downgrade commits fails the drop
    log = build(str(tmp_path / "u"))
    real = OptimisticTransaction.downgrade_protocol

    def racing(txn: OptimisticTransaction, *args: object, **kwargs: object) -> None:
        real(txn, *args, **kwargs)  # type: ignore[arg-type]
        set_table_properties(log, {"delta.enableTypeWidening": "true"})

    monkeypatch.setattr(OptimisticTransaction, "downgrade_protocol", racing)
    with pytest.raises(DropFeatureConflictError):
        drop_feature(log, "typeWidening")
    assert "typeWidening" in (log.update().protocol.reader_features or ())
    monkeypatch.undo()
    drop_feature(log, "typeWidening")  # a rerun unsets the property again and drops
    assert "typeWidening" not in (log.update().protocol.reader_features or ())
    assert live_rows(log) == expected_rows()


def test_drop_type_widening_rewrites_clustered_files_too(tmp_path: Path) -> None:
    """A file already clustered by OPTIMIZE but written before int -> long is rewritten by
    the drop's REORG like any other (OPTIMIZE of a clustered table skips clustered files)."""
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.commands.clustering import clustering_actions
    from deltalog.txn.commands.optimize import optimize
    from deltalog.txn.commands.type_widening import alter_column_type
    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.protocol.actions import AddFile, Metadata

    fields = [{"name": c, "type": "integer", "nullable": True, "metadata": {}} for c in ("x", "n")]
    log = DeltaLog.for_table(str(tmp_path / "t"))
    txn = log.start_transaction()
    config = {"delta.enableTypeWidening": "true"}
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()), schema_string=json.dumps({"type": "struct", "fields": fields}), configuration=config
        )
    )
    txn.commit(clustering_actions(txn, ["x"]), CreateTable(cluster_by=["x"]))
    pq.write_table(
        pa.table({"x": pa.array([2, 1], pa.int32()), "n": pa.array([5, 6], pa.int32())}), f"{log.table_uri}/a.parquet"
    )
    stats = '{"numRecords": 2, "minValues": {"x": 1}, "maxValues": {"x": 2}, "nullCount": {"x": 0}}'
    log.start_transaction().commit([AddFile("a.parquet", {}, 500, 1, stats=stats)], Write())
    optimize(log)
    assert all(f.clustering_provider == "liquid" for f in log.update().files)
    alter_column_type(log, "n", "long")
    drop_feature(log, "typeWidening")
    files = log.update().files
    assert [pq.read_schema(f"{log.table_uri}/{f.path}").field("n").type for f in files] == [pa.int64()]
    assert deltalake.DeltaTable(log.table_uri).to_pyarrow_table().sort_by("x").to_pydict() == {"x": [1, 2], "n": [6, 5]}


def test_drop_column_mapping_rewrites_files_with_logical_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Delta's ColumnMappingPreDowngradeCommand / RemoveColumnMappingCommand: one REMOVE COLUMN
    MAPPING commit rewrites every file (renamed, nested and partition columns) with logical
    names; then the fast drop; deltalog and delta-rs read the rows; names a table without
    column mapping cannot have are refused (Delta's DropColumnMappingFeatureSuite)."""
    import pyarrow.parquet as pq

    from deltalog.errors import InvalidColumnNamesError
    from deltalog.txn.commands import alter
    from tests.log.test_column_mapping_writes import _create, _delta_rs_rows, _deltalog_rows, _write

    for mode in ("name", "id"):
        log = _create(tmp_path / mode, {"delta.columnMapping.mode": mode})
        _write(log, [{"id": 1, "part": "a", "s": {"x": 1}}, {"id": 2, "part": "b", "s": None}])
        alter.rename_column(log, "id", "key")
        _write(log, [{"key": 3, "part": "a", "s": {"x": 3}}])
        rows = _deltalog_rows(log)
        version = drop_feature(log, "columnMapping")
        snap = log.update()
        assert [r.operation for r in log.history(5)] == ["DROP FEATURE", *["Empty Commit"] * 3, "REMOVE COLUMN MAPPING"]
        rewrite = log.history(5)[-1]
        assert (
            rewrite.operation_metrics["numRewrittenFiles"] == "3" and rewrite.operation_metrics["numCopiedRows"] == "3"
        )
        assert snap.protocol.reader_features is None and snap.protocol.min_reader_version == 1
        assert "columnMapping" not in (snap.protocol.writer_features or ())
        assert snap.metadata.configuration == {PROPERTY: str(version)}
        assert "delta.columnMapping" not in snap.metadata.schema_string
        assert sorted(f.partition_values["part"] for f in snap.files) == ["a", "a", "b"]
        for f in snap.files:
            assert pq.read_schema(f"{log.table_uri}/{f.path}").names == ["key", "s"]
            assert '"key"' in (f.stats or "")
        assert _deltalog_rows(log) == rows == _delta_rs_rows(tmp_path / mode)
    # TRUNCATE HISTORY: the rewrite first, the downgrade once the mapped versions expired
    log = _create(tmp_path / "truncate", {"delta.columnMapping.mode": "name"})
    _write(log, [{"id": 1, "part": "a", "s": None}])
    with pytest.raises(DropFeatureWaitForRetentionError, match="columnMapping"):
        drop_feature(log, "columnMapping", truncate_history=True)
    drop_feature(log, "columnMapping", truncate_history=True, now_ms=int(time.time() * 1000) + 2 * DAY_MS)
    assert log.update().protocol == Protocol(1, 2)  # no checkpointProtection after a truncation
    # a name that needs column mapping: refused, nothing committed
    log = _create(tmp_path / "bad", {"delta.columnMapping.mode": "name"})
    alter.rename_column(log, "id", "my id")
    before = log.update().version
    with pytest.raises(
        InvalidColumnNamesError, match=r"DELTA_INVALID_COLUMN_NAMES_WHEN_REMOVING_COLUMN_MAPPING.*my id"
    ):
        drop_feature(log, "columnMapping")
    assert log.update().version == before
    # row tracking: the rewritten rows keep their stable row ids (materialized, as OPTIMIZE does)
    log = _create(tmp_path / "rows", {"delta.columnMapping.mode": "name", "delta.enableRowTracking": "true"})
    _write(log, [{"id": 1, "part": "a", "s": None}, {"id": 2, "part": "a", "s": None}])
    _write(log, [{"id": 3, "part": "a", "s": None}])
    drop_feature(log, "columnMapping")
    assert _stable_row_ids(log) == {1: 0, 2: 1, 3: 2}
    assert all((f.base_row_id or 0) > 2 for f in log.update().files)  # fresh base ids: the columns hold them
    # deletion vectors: the rewritten file leaves the deleted row out
    import numpy as np

    from deltalog.txn.commit.operations import Delete
    from deltalog.txn.log.deletion_vector_writer import mark_rows_deleted

    log = _create(tmp_path / "dv", {"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"})
    _write(log, [{"id": 1, "part": "a", "s": None}, {"id": 2, "part": "a", "s": {"x": 5}}])
    txn = log.start_transaction()
    marked = mark_rows_deleted(
        log.store, log.table_uri, txn.snapshot.metadata.configuration, [(txn.filter_files()[0], np.array([0]))], 0
    )
    txn.commit(marked.actions, Delete(["id = 1"]))
    drop_feature(log, "columnMapping")
    assert log.history(5)[-1].operation_metrics["numDeletionVectorsRemoved"] == "1"
    assert [f.deletion_vector for f in log.update().files] == [None]
    assert _deltalog_rows(log) == [{"id": 2, "part": "a", "s": {"x": 5}}] == _delta_rs_rows(tmp_path / "dv")

    # a file appended while the rewrite runs fails the rewrite (it read the whole table): its
    # files are deleted and the table keeps column mapping
    from deltalog.txn.commands import column_mapping_removal
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError

    log = _create(tmp_path / "race", {"delta.columnMapping.mode": "name"})
    _write(log, [{"id": 1, "part": "a", "s": None}])
    real = column_mapping_removal.rewrite_bin

    def racing(spec: Any, files: Any) -> Any:
        _write(log, [{"id": 2, "part": "b", "s": None}])
        return real(spec, files)

    monkeypatch.setattr(column_mapping_removal, "rewrite_bin", racing)
    with pytest.raises(ConcurrentAppendError):
        drop_feature(log, "columnMapping")
    snap = log.update()
    assert snap.properties.column_mapping_mode == "name" and snap.version == 2
    on_disk = {str(f.relative_to(tmp_path / "race")) for f in (tmp_path / "race").rglob("*.parquet")}
    assert on_disk == {f.path for f in snap.files}  # the rewritten file is gone


@pytest.mark.parametrize("how", ["drop", "unset"])
def test_removing_column_mapping_renames_the_clustering_columns(tmp_path: Path, how: str) -> None:
    """The ``delta.clustering`` domain names the clustering columns by physical name: the
    REMOVE COLUMN MAPPING commit names them by the names the files now hold (Delta keeps the
    mapped names, which then name no column: a deliberate difference, docs/features.md), so
    OPTIMIZE still clusters by the renamed column."""
    import uuid

    from deltalog.txn.commands import alter
    from deltalog.txn.commands.clustering import clustering_actions
    from deltalog.txn.commands.optimize import optimize
    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.clustering import logical_clustering_columns
    from tests.log.test_column_mapping_writes import _delta_rs_rows, _write

    fields = [{"name": c, "type": "long", "nullable": True, "metadata": {}} for c in ("x", "n")]
    log = DeltaLog.for_table(str(tmp_path))
    txn = log.start_transaction()
    schema = json.dumps({"type": "struct", "fields": fields})
    txn.update_metadata(
        Metadata(id=str(uuid.uuid4()), schema_string=schema, configuration={"delta.columnMapping.mode": "name"})
    )
    txn.commit(clustering_actions(txn, ["x"]), CreateTable(cluster_by=["x"]))
    _write(log, [{"x": 2, "n": 1}])
    alter.rename_column(log, "x", "x2")
    if how == "drop":
        drop_feature(log, "columnMapping")
    else:
        alter.unset_table_properties(log, ["delta.columnMapping.mode"])
    snap = log.update()
    assert json.loads(snap.domain_metadata["delta.clustering"].configuration) == {"clusteringColumns": [["x2"]]}
    assert logical_clustering_columns(snap.domain_metadata, json.loads(snap.metadata.schema_string)) == ["x2"]
    _write(log, [{"x2": 1, "n": 2}])
    optimize(log)
    assert all(f.clustering_provider == "liquid" for f in log.update().files)
    assert _delta_rs_rows(tmp_path) == [{"x2": 1, "n": 2}, {"x2": 2, "n": 1}]


def _stable_row_ids(log: DeltaLog) -> dict[int, int]:
    """id -> stable row id (the materialized column where set, else baseRowId + position)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltalog.txn.protocol import row_tracking

    snap = log.update()
    column = row_tracking.named_materialized_columns(snap.metadata)[0]
    out: dict[int, int] = {}
    for f in snap.files:
        table = pq.read_table(f"{log.table_uri}/{f.path}")
        materialized = table.column(column).combine_chunks() if column in table.column_names else None
        positions = pa.array(range(table.num_rows), pa.uint64())
        ids = row_tracking.row_ids(f.base_row_id, positions, materialized)
        out.update(zip(table.column("id").to_pylist(), ids.to_pylist()))
    return out


def test_drop_row_tracking_then_domain_metadata(tmp_path: Path) -> None:
    """Delta's RowTrackingPreDowngradeCommand (disable + suspend, unbackfill; the downgrade
    commit removes the properties and the delta.rowTracking domain) and
    DomainMetadataPreDowngradeCommand (leaked domains removed), both writer features without
    history protection; domainMetadata is refused while rowTracking needs it."""
    from deltalog.txn.protocol.actions import DomainMetadata

    log = create(str(tmp_path / "t"), config={"delta.enableRowTracking": "true"})
    append(log, [1, 2], "a")
    append(log, [3], "b")
    assert all(f.base_row_id is not None for f in log.update().files)
    with pytest.raises(FeatureNotRemovableError, match=r"DELTA_FEATURE_DROP_DEPENDENT_FEATURE.*rowTracking"):
        drop_feature(log, "domainMetadata")
    with pytest.raises(FeatureNotRemovableError, match="HISTORY_TRUNCATION_NOT_ALLOWED"):
        drop_feature(log, "rowTracking", truncate_history=True)
    version = drop_feature(log, "rowTracking")
    snap = log.update()
    assert [r.operation for r in log.history(3)] == ["DROP FEATURE", "ROW TRACKING UNBACKFILL", "SET TBLPROPERTIES"]
    assert snap.protocol.writer_features == ("appendOnly", "domainMetadata", "invariants")
    assert snap.metadata.configuration == {} and _log_files(log, ".checkpoint") == []
    assert [(f.base_row_id, f.default_row_commit_version) for f in snap.files] == [(None, None)] * 2
    assert any(isinstance(a, DomainMetadata) and a.removed for a in log.read_commit(version))
    append(log, [4], "a")  # no row ids any more
    assert all(f.base_row_id is None for f in log.update().files)
    log.start_transaction().commit([DomainMetadata("app.owner", '{"team":"qa"}')], Write())
    drop_feature(log, "domainMetadata")
    snap = log.update()
    assert [r.operation for r in log.history(2)] == ["DROP FEATURE", "DOMAIN METADATA CLEANUP"]
    assert snap.protocol == Protocol(1, 2) and not any(not d.removed for d in snap.domain_metadata.values())
    assert read_ids(log) == [1, 2, 3, 4]
    assert sorted(deltalake.DeltaTable(log.table_uri).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 4]


def test_drop_materialize_partition_columns_removes_its_property(tmp_path: Path) -> None:
    """Delta's MaterializePartitionColumnsTableFeature: no pre-downgrade work; the downgrade
    commit removes delta.enableMaterializePartitionColumnsFeature. identityColumns is not a
    removable feature in Delta: refused."""
    config = {"delta.enableMaterializePartitionColumnsFeature": "true", "delta.feature.identityColumns": "supported"}
    log = create(str(tmp_path / "t"), config=config)
    append(log, [1], "a")
    with pytest.raises(FeatureNotRemovableError, match="DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"):
        drop_feature(log, "identityColumns")
    assert drop_feature(log, "materializePartitionColumns") == 2
    snap = log.update()
    assert snap.protocol.writer_features == ("appendOnly", "identityColumns", "invariants")
    assert snap.metadata.configuration == {}
    append(log, [2], "b")
    assert read_ids(log) == [1, 2]


def test_set_or_unset_column_mapping_mode_rewrites_the_table_and_keeps_the_feature(tmp_path: Path) -> None:
    """Delta's AlterTableSet/UnsetPropertiesDeltaCommand (RemoveColumnMappingSuite): SET
    'delta.columnMapping.mode' = 'none' or UNSET it rewrites the table (one REMOVE COLUMN
    MAPPING commit; the other properties in a second commit); the feature stays in the
    protocol; refused without touching the table when a name needs column mapping, another
    property is bad, IcebergCompat needs column mapping or the removal is not allowed."""
    from deltalog.errors import (
        IcebergCompatViolationError,
        InvalidColumnNamesError,
        InvalidPropertyError,
        UnsupportedColumnMappingModeChangeError,
    )
    from deltalog.txn.commands import alter
    from tests.log.test_column_mapping_writes import _create, _delta_rs_rows, _deltalog_rows, _write

    log = _create(tmp_path / "set", {"delta.columnMapping.mode": "name", "team": "a"})
    _write(log, [{"id": 1, "part": "a", "s": {"x": 1}}, {"id": 2, "part": "b", "s": None}])
    alter.rename_column(log, "id", "key")
    rows, protocol = _deltalog_rows(log), log.update().protocol
    before = log.update().version
    bad: list[tuple[Any, type[Exception], str]] = [
        ({"delta.columnMapping.mode": "none", "delta.appendOnly": "yes"}, InvalidPropertyError, "appendOnly"),
        (
            {"delta.columnMapping.mode": "none", "delta.enableIcebergCompatV2": "true"},
            IcebergCompatViolationError,
            "requires",
        ),
        ({"delta.columnMapping.mode": "none"}, UnsupportedColumnMappingModeChangeError, "'name' to 'none'"),
    ]
    for properties, error, message in bad:
        allowed = error is not UnsupportedColumnMappingModeChangeError
        with pytest.raises(error, match=message):
            alter.set_table_properties(log, properties, allow_column_mapping_removal=allowed)
        assert log.update().version == before
    with pytest.raises(InvalidPropertyError, match="nope"):
        alter.unset_table_properties(log, ["delta.columnMapping.mode", "nope"], if_exists=False)
    assert log.update().version == before
    assert alter.set_table_properties(log, {"delta.columnMapping.mode": "none", "owner": "ops"}) == before + 2
    assert [(c.operation, c.operation_parameters) for c in log.history(2)] == [
        (
            "SET TBLPROPERTIES",
            {"properties": json.dumps({"delta.columnMapping.mode": "none", "owner": "ops"}, separators=(",", ":"))},
        ),
        ("REMOVE COLUMN MAPPING", {}),
    ]
    snap = log.update()
    assert snap.metadata.configuration == {"delta.columnMapping.mode": "none", "team": "a", "owner": "ops"}
    assert snap.protocol == protocol and "columnMapping" in (snap.protocol.writer_features or ())
    assert "delta.columnMapping" not in snap.metadata.schema_string
    assert _deltalog_rows(log) == rows == _delta_rs_rows(tmp_path / "set")
    # SET none again, on a table without column mapping: only the property, no rewrite
    alter.set_table_properties(log, {"delta.columnMapping.mode": "none"})
    assert log.history(1)[0].operation == "SET TBLPROPERTIES"

    # UNSET (id mode): the property removed, with the other keys in a second commit
    log = _create(tmp_path / "unset", {"delta.columnMapping.mode": "id", "team": "a"})
    _write(log, [{"id": 1, "part": "a", "s": None}])
    alter.unset_table_properties(log, ["delta.columnMapping.mode", "team"], if_exists=False)
    assert [c.operation for c in log.history(2)] == ["UNSET TBLPROPERTIES", "REMOVE COLUMN MAPPING"]
    assert log.update().metadata.configuration == {}
    assert _deltalog_rows(log) == [{"id": 1, "part": "a", "s": None}] == _delta_rs_rows(tmp_path / "unset")
    with pytest.raises(InvalidPropertyError, match=r"cannot unset delta\.columnMapping\.mode"):  # gone now
        alter.unset_table_properties(log, ["delta.columnMapping.mode"], if_exists=False)

    # the value in any case ('NONE': Delta would drop the mapping without rewriting the files)
    log = _create(tmp_path / "upper", {"delta.columnMapping.mode": "name"})
    alter.set_table_properties(log, {"delta.columnMapping.mode": "NONE"})
    assert log.history(1)[0].operation == "REMOVE COLUMN MAPPING"

    # a name a table without column mapping cannot have; IcebergCompat needs column mapping
    log = _create(tmp_path / "bad", {"delta.columnMapping.mode": "name"})
    alter.rename_column(log, "id", "my id")
    with pytest.raises(InvalidColumnNamesError, match="my id"):
        alter.unset_table_properties(log, ["delta.columnMapping.mode"])
    log = _create(tmp_path / "ice", {"delta.columnMapping.mode": "name", "delta.enableIcebergCompatV2": "true"})
    with pytest.raises(IcebergCompatViolationError, match="columnMapping"):
        alter.set_table_properties(log, {"delta.columnMapping.mode": "none"})
    for name in ("bad", "ice"):
        assert DeltaLog.for_table(str(tmp_path / name)).update().metadata.configuration["delta.columnMapping.mode"] == (
            "name"
        )
