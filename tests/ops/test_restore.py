"""RESTORE: back to an earlier version's files and metadata, refused when files were vacuumed."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from deltalog.txn.commands import restore as restore_module
from deltalog.txn.commands.optimize import optimize
from deltalog.txn.commands.restore import RestoreMissingFilesError, restore
from deltalog.txn.commands.vacuum import vacuum
from deltalog.txn.commit.commit_errors import ConcurrentWriteError
from deltalog.txn.commit.operations import Delete, SetTableProperties, UpgradeProtocol
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata, Protocol
from deltalog.txn.protocol.errors import VersionNotFoundError
from tests.log.helpers import set_mtime
from tests.ops.tables import append, create, read_ids


def test_restore_to_a_version(table_uri: str) -> None:
    log = create(table_uri)
    append(log, [1, 2], "a")
    append(log, [3], "b")  # version 2: the target
    append(log, [4], "a")
    txn = log.start_transaction()
    first = txn.filter_files([("p", "=", "a")])[0]
    txn.commit([first.remove(int(time.time() * 1000))], Delete(["p = 'a'"]))
    assert read_ids(log) == [3, 4]
    result = restore(log, version=2)
    assert (result.version, result.restored_version) == (5, 2)
    assert read_ids(log) == [1, 2, 3]
    assert {f.path for f in log.update().files} == {f.path for f in log.snapshot(2).files}
    info = log.history(limit=1)[0]
    assert info.operation == "RESTORE"
    assert info.operation_parameters == {"version": 2, "timestamp": None}  # Delta: {"version":2,"timestamp":null}
    assert info.operation_metrics["numRestoredFiles"] == "1"  # the deleted file comes back
    assert info.operation_metrics["numRemovedFiles"] == "1"  # the file of version 3 goes
    assert info.operation_metrics["numOfFilesAfterRestore"] == "2"
    assert info.operation_metrics["tableSizeAfterRestore"] == str(log.snapshot(2).size_in_bytes)
    _, protocol, metadata, *actions = log.read_commit(5)
    # as Delta's commitLarge: the protocol and the metadata are committed, even unchanged
    assert isinstance(protocol, Protocol) and isinstance(metadata, Metadata)
    assert all(a.data_change for a in actions)  # type: ignore[union-attr]


def test_restore_to_a_timestamp(tmp_path: Path) -> None:
    path = tmp_path / "t"
    log = create(str(path))
    append(log, [1])
    append(log, [2])
    # A commit's timestamp is its file's modification time (no in-commit timestamps here):
    # versions 0, 1, 2 a minute apart, and the restore asks for half a minute after version 1.
    # Five days ago: within delta.deletedFileRetentionDuration (a week), which RESTORE
    # enforces as Delta 4.1+ does (Delta's own test moved to "now - 5 days" likewise).
    start = int(time.time() * 1000) - 5 * 24 * 3600 * 1000
    for version in (0, 1, 2):
        set_mtime(str(path / "_delta_log" / f"{version:020d}.json"), start + version * 60_000)
    stamp = datetime.fromtimestamp((start + 90_000) / 1000, tz=timezone.utc)
    result = restore(log, timestamp=stamp)
    assert result.restored_version == 1
    assert read_ids(log) == [1]
    # as Delta records it: java.sql.Timestamp's text (RestoreTableCommand's getTimestamp)
    delta_text = f"{stamp:%Y-%m-%d %H:%M:%S}.{f'{stamp.microsecond:06d}'.rstrip('0') or '0'}"
    assert log.history(limit=1)[0].operation_parameters == {"version": None, "timestamp": delta_text}
    text = f"{stamp:%Y-%m-%d %H:%M:%S}.50Z"  # text: its own wall time, trailing zeros dropped
    restore(log, timestamp=text)
    assert log.history(limit=1)[0].operation_parameters == {
        "version": None,
        "timestamp": f"{stamp:%Y-%m-%d %H:%M:%S}.5",
    }


def test_restore_brings_back_the_metadata(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    append(log, [1])
    txn = log.start_transaction()
    from dataclasses import replace

    md = txn.metadata
    txn.update_metadata(replace(md, configuration={**md.configuration, "delta.appendOnly": "true"}))
    txn.commit([], SetTableProperties({"delta.appendOnly": "true"}))
    assert log.update().properties.append_only
    restore(log, version=1)
    assert not log.update().properties.append_only
    assert log.update().protocol == log.snapshot(2).protocol  # never downgraded


def test_refused_when_files_were_vacuumed(table_uri: str) -> None:
    log = create(table_uri)
    append(log, [1])
    append(log, [2])
    optimize(log, where=None)
    tombstones = log.update().tombstones_table().column("deletionTimestamp").to_pylist()
    assert len(tombstones) == 2
    # Vacuum an hour after the OPTIMIZE: its tombstones are older than "now - 0 hours".
    vacuum(log, retention_hours=0, enforce_retention=False, now_ms=max(tombstones) + 3_600_000)
    version = log.update().version
    with pytest.raises(RestoreMissingFilesError, match="no longer exist") as err:
        restore(log, version=2)
    assert len(err.value.missing) == 2
    assert log.update().version == version  # nothing committed
    assert read_ids(log) == [1, 2]
    # Delta's spark.sql.files.ignoreMissingFiles: the check is skipped, the files re-added
    result = restore(log, version=2, ignore_missing_files=True)
    assert result.metrics["numRestoredFiles"] == "2"
    assert {f.path for f in log.update().files} == {f.path for f in log.snapshot(2).files}


def test_restore_protocol_is_merged_or_downgraded_when_allowed(tmp_path: Path) -> None:
    """RestoreTableSuiteBase's "restore downgrade protocol (allowed=...)": the restored
    protocol is the latest merged with the target's, or, with Delta's
    ``restore.protocolDowngradeAllowed``, the target version's own."""
    log = create(str(tmp_path / "t"))
    append(log, [1])
    old = log.update().protocol
    txn = log.start_transaction()
    txn.upgrade_protocol(Protocol(2, 5))
    txn.commit([], UpgradeProtocol({"minReaderVersion": 2, "minWriterVersion": 5}))
    append(log, [2])
    restore(log, version=1)
    assert log.update().protocol == Protocol(2, 5)
    restore(log, version=1, allow_protocol_downgrade=True)
    assert log.update().protocol == old
    assert read_ids(log) == [1]


def test_unknown_version_and_bad_arguments(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    with pytest.raises(VersionNotFoundError):
        restore(log, version=7)
    with pytest.raises(ValueError, match="exactly one"):
        restore(log)


def _enable_deletion_vectors(log: DeltaLog) -> None:
    from deltalog.txn.commands.alter import set_table_properties

    set_table_properties(log, {"delta.enableDeletionVectors": "true"})


@pytest.mark.parametrize("winner", ["append", "enable_deletion_vectors"])
def test_any_concurrent_commit_fails_the_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, winner: str) -> None:
    """Delta's RESTORE commits with ``commitLarge``: no conflict resolution, any commit that
    lands after it read the table fails it with ``ConcurrentWriteException``, a feature
    enablement Delta resolves for other writers too (RowTrackingBackfillConflictsSuite
    "RESTORE fails from conflict with Backfill")."""
    uri = str(tmp_path / "t")
    log = create(uri)
    append(log, [1])
    append(log, [2])
    real = restore_module.missing_files
    other = DeltaLog.for_table(uri)

    def commit_meanwhile(store: object, table_uri: str, files: list) -> list[str]:  # type: ignore[type-arg]
        if winner == "append":
            append(other, [3])
        else:
            _enable_deletion_vectors(other)
        return real(store, table_uri, files)  # type: ignore[arg-type]

    monkeypatch.setattr(restore_module, "missing_files", commit_meanwhile)
    with pytest.raises(ConcurrentWriteError):
        restore(log, version=1)
    assert read_ids(DeltaLog.for_table(uri)) == ([1, 2, 3] if winner == "append" else [1, 2])
    assert DeltaLog.for_table(uri).update().version == 3


def test_restore_commits_the_metadata_and_protocol_so_a_racing_backfill_fails(tmp_path: Path) -> None:
    """Delta's RESTORE always commits the target's metadata and the merged protocol
    (``commitLarge``), the metadata completed as every metadata update is: on a table that
    supports row tracking it gets materialized column names. A row tracking backfill batch
    that read the table before fails on it (RowTrackingBackfillConflictsSuite "Backfill
    fails from conflict with RESTORE")."""
    from deltalog.txn.commands.row_tracking_backfill import _upgrade_protocol
    from deltalog.txn.commit.commit_errors import MetadataChangedError
    from deltalog.txn.commit.operations import RowTrackingBackfill

    log = create(str(tmp_path / "t"))
    append(log, [1])
    append(log, [2])
    _upgrade_protocol(log, None)  # the backfill's first step: rowTracking in the protocol only
    batch = log.start_transaction()
    files = batch.snapshot.files
    batch.track_files_read(files)
    version = restore(log, version=1).version
    committed = log.read_commit(version)
    assert any(isinstance(a, Protocol) for a in committed)
    (metadata,) = [a for a in committed if isinstance(a, Metadata)]
    assert "delta.rowTracking.materializedRowIdColumnName" in metadata.configuration
    with pytest.raises(MetadataChangedError):
        batch.commit([replace(f, data_change=False) for f in files], RowTrackingBackfill(0))
    assert read_ids(log) == [1]


def test_delta_rs_reads_the_restored_table(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    uri = str(tmp_path / "t")
    log = create(uri)
    append(log, [1])
    append(log, [2])
    restore(log, version=1)
    assert DeltaTable(uri).to_pyarrow_table().column("id").to_pylist() == [1]


def test_an_append_only_table_cannot_be_restored_to_fewer_rows(tmp_path: Path) -> None:
    """Delta's ``assertRemovable(snapshot)``: the table read is append-only, so RESTORE to a
    version from before ``delta.appendOnly`` was set cannot remove its files (it turned the
    property off and deleted the rows in the same commit); nothing is committed."""
    from deltalog.txn.commands.alter import set_table_properties
    from deltalog.txn.commit.commit_errors import AppendOnlyViolationError

    log = create(str(tmp_path / "t"))
    append(log, [1])
    append(log, [2])
    set_table_properties(log, {"delta.appendOnly": "true"})
    version = log.update().version
    with pytest.raises(AppendOnlyViolationError, match=r"delta\.appendOnly=true"):
        restore(log, version=1)
    assert log.update().version == version
    assert read_ids(log) == [1, 2]


def test_restore_to_the_latest_version_is_refused(tmp_path: Path) -> None:
    """Delta's RESTORE requires the version to restore to be less than the latest one (by
    version or by the last commit's timestamp): nothing is committed."""
    from deltalog.txn.commands.restore import RestoreToLatestVersionError

    log = create(str(tmp_path / "t"))
    append(log, [1])
    with pytest.raises(RestoreToLatestVersionError, match=r"to version 1: the latest version is 1") as err:
        restore(log, version=1)
    assert isinstance(err.value, ValueError)
    with pytest.raises(RestoreToLatestVersionError):
        restore(log, timestamp=log.history(limit=1)[0].timestamp)
    # a time after the last commit finds the latest version too (RestoreTableCommand's
    # getActiveCommitAtTime(canReturnLastCommit = true)), not a time travel error
    with pytest.raises(RestoreToLatestVersionError):
        restore(log, timestamp=log.history(limit=1)[0].timestamp + 60_000)
    assert log.update().version == 1
    assert restore(log, version=0).version == 2


def test_restore_to_in_commit_timestamps_on_from_commit_0_keeps_the_later_enablement(tmp_path: Path) -> None:
    """InCommitTimestampSuite "commitLarge should correctly set the enablement tracking
    properties" and the REPLACE/CLONE provenance fix (Delta's
    ``getUpdatedMetadataWithICTEnablementInfo``): a table created with in-commit timestamps,
    turned off and on again, restored to version 0 keeps the enablement of the re-enabling
    commit, so commits 2 and 3, which have none, are still timed by their files (Delta would
    read them for in-commit timestamps and fail with DELTA_MISSING_COMMIT_TIMESTAMP)."""
    from deltalog.txn.commands.alter import set_table_properties

    ict = "delta.enableInCommitTimestamps"
    log = create(str(tmp_path / "t"), config={ict: "true"})
    append(log, [1])
    set_table_properties(log, {ict: "false"})  # version 2
    append(log, [2])
    set_table_properties(log, {ict: "true"})  # version 4: the enablement
    enabled = {k: v for k, v in log.update().metadata.configuration.items() if "Enablement" in k}
    assert enabled["delta.inCommitTimestampEnablementVersion"] == "4"
    restore(log, version=0)
    config = log.update().metadata.configuration
    assert config[ict] == "true"
    assert {k: v for k, v in config.items() if "Enablement" in k} == enabled
    # disabled, then restored to a version with them on from commit 0: enabled by the restore
    set_table_properties(log, {ict: "false"})  # version 6
    version = restore(log, version=0).version
    config = log.update().metadata.configuration
    assert config["delta.inCommitTimestampEnablementVersion"] == str(version)
