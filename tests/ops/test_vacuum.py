"""VACUUM: what is deleted, what is kept, the retention check and the commits it records."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from deltalog.txn.commands.vacuum import VacuumRetentionError, is_hidden, vacuum
from deltalog.txn.commands.vacuum_listing import STAGING_PREFIX
from deltalog.txn.commit.operations import Delete, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.deletion_vector_writer import widen_stats
from deltalog.txn.log.deletion_vectors import dv_absolute_path, write_dv_file, z85_encode
from deltalog.txn.protocol.actions import DeletionVectorDescriptor
from tests.ops.tables import append, create, read_ids, write_file

HOUR_MS = 3600 * 1000


def _age(path: str, hours_old: float) -> None:
    when = time.time() - hours_old * 3600
    os.utime(path, (when, when))


def _local(log: DeltaLog, rel: str) -> str:
    return log.store.fs_path(f"{log.table_uri}/{rel}")


def _touch(path: str, hours_old: float, data: bytes = b"x") -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    _age(path, hours_old)


def test_refuses_a_retention_below_the_table_setting(table_uri: str) -> None:
    log = create(table_uri)
    append(log, [1, 2])
    with pytest.raises(VacuumRetentionError, match="deletedFileRetentionDuration"):
        vacuum(log, retention_hours=1)
    with pytest.raises(VacuumRetentionError, match="negative"):
        vacuum(log, retention_hours=-1, enforce_retention=False)
    assert log.update().version == 1  # nothing recorded


def test_retention_check_can_be_disabled_through_storage_options(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    create(uri)
    log = DeltaLog.for_table(uri, {"spark.databricks.delta.retentionDurationCheck.enabled": "false"})
    result = vacuum(log, retention_hours=0, dry_run=True)
    assert result.retention_hours == 0


def test_table_retention_property_sets_the_default(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), config={"delta.deletedFileRetentionDuration": "interval 2 hours"})
    orphan = _local(log, "p=a/orphan.parquet")
    _touch(orphan, hours_old=3)
    young = _local(log, "p=a/young.parquet")
    _touch(young, hours_old=1)
    assert vacuum(log, dry_run=True).files == ["p=a/orphan.parquet"]
    vacuum(log, retention_hours=2)  # equal to the table's retention: allowed


def test_retention_hours_are_rounded_to_whole_hours_as_delta(tmp_path: Path) -> None:
    """Delta's ``VacuumCommand`` takes ``TimeUnit.HOURS.toMillis(math.round(h))``: ``RETAIN 0.4
    HOURS`` is 0 hours, ``1.5`` is 2, and 167.6 hours passes the one-week retention check."""
    log = create(str(tmp_path / "t"))
    orphan = _local(log, "p=a/orphan.parquet")
    _touch(orphan, hours_old=1.25)
    assert vacuum(log, retention_hours=0.4, enforce_retention=False, dry_run=True).retention_hours == 0
    assert vacuum(log, retention_hours=1.5, enforce_retention=False, dry_run=True).files == []
    assert vacuum(log, retention_hours=1.4, enforce_retention=False, dry_run=True).files == ["p=a/orphan.parquet"]
    assert vacuum(log, retention_hours=167.6, dry_run=True).retention_hours == 168


def test_deletes_only_unreferenced_old_files(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    kept = write_file(log, [1, 2], "a")
    gone = write_file(log, [3, 4], "a")
    log.start_transaction().commit([kept, gone], Write())
    # remove `gone` long ago, and an orphan left by a failed job, both older than the retention
    txn = log.start_transaction()
    txn.filter_files()
    txn.commit([gone.remove(int(time.time() * 1000) - 10 * 24 * HOUR_MS)], Delete(["id > 2"]))
    for add in (kept, gone):
        _age(_local(log, add.path), hours_old=24 * 10)
    orphan = _local(log, "p=a/part-orphan.c000.snappy.parquet")
    _touch(orphan, hours_old=24 * 10)
    fresh_orphan = _local(log, "p=a/part-fresh.c000.snappy.parquet")
    _touch(fresh_orphan, hours_old=1)

    dry = vacuum(log, dry_run=True)
    assert sorted(dry.files) == sorted([gone.path, "p=a/part-orphan.c000.snappy.parquet"])
    assert os.path.exists(orphan) and log.update().version == 2

    result = vacuum(log)
    assert sorted(result) == sorted(dry.files)
    assert not os.path.exists(orphan)
    assert not os.path.exists(_local(log, gone.path))
    assert os.path.exists(_local(log, kept.path))
    assert os.path.exists(fresh_orphan)  # younger than the retention: a writer may be committing it
    assert read_ids(log) == [1, 2]


def test_unexpired_tombstones_protect_their_files(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    add = write_file(log, [1], "a")
    log.start_transaction().commit([add], Write())
    txn = log.start_transaction()
    txn.filter_files()
    txn.commit([add.remove(int(time.time() * 1000) - 2 * HOUR_MS)], Delete(["true"]))
    _age(_local(log, add.path), hours_old=24 * 30)
    # removed 2 hours ago: a 3-hour retention keeps it (time travel still needs it), 1 hour does not
    assert vacuum(log, retention_hours=3, enforce_retention=False, dry_run=True).files == []
    assert vacuum(log, retention_hours=1, enforce_retention=False, dry_run=True).files == [add.path]


def test_never_touches_the_log_hidden_files_or_anything_outside(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    append(log, [1])
    root = log.store.fs_path(log.table_uri)
    protected = [
        f"{root}/_SUCCESS",
        f"{root}/.hidden.parquet",
        f"{root}/p=a/.part-1.parquet.crc",
        f"{root}/_tmp/part-1.parquet",
        f"{root}/_delta_log/garbage.json",
        str(tmp_path / "outside.parquet"),
        str(tmp_path / "t2" / "part-1.parquet"),
    ]
    for p in protected:
        _touch(p, hours_old=24 * 30)
    for name in os.listdir(f"{root}/_delta_log"):
        _age(f"{root}/_delta_log/{name}", hours_old=24 * 30)
    cdc = f"{root}/_change_data/cdc-00000.snappy.parquet"
    _touch(cdc, hours_old=24 * 30)
    result = vacuum(log, retention_hours=0, enforce_retention=False)
    assert result.files == ["_change_data/cdc-00000.snappy.parquet"]
    for p in protected:
        assert os.path.exists(p), p
    assert not os.path.exists(cdc)
    assert log.update().version == 3 and read_ids(log) == [1]


def test_metadata_is_hidden_only_on_a_uniform_iceberg_table(tmp_path: Path) -> None:
    """Delta's ``isHiddenDirectory`` hides ``metadata`` only for UniForm's Iceberg metadata
    (DeltaVacuumSuite "gc metadata dir when uniform disabled"): on another table it is an
    untracked directory like any other."""
    assert is_hidden("metadata", [], iceberg_metadata_hidden=True)
    assert not is_hidden("metadata", [], iceberg_metadata_hidden=False)
    log = create(str(tmp_path / "t"))
    stray = _local(log, "metadata/file1.json")
    _touch(stray, hours_old=24 * 30)
    result = vacuum(log, retention_hours=0, enforce_retention=False)
    assert (result.files, result.dirs) == (["metadata/file1.json"], ["metadata"])
    assert not os.path.exists(os.path.dirname(stray))
    uniform = {
        "delta.universalFormat.enabledFormats": "iceberg",
        "delta.enableIcebergCompatV2": "true",
        "delta.columnMapping.mode": "name",
    }
    iceberg = create(str(tmp_path / "u"), config=uniform)
    kept = _local(iceberg, "metadata/v1.metadata.json")
    _touch(kept, hours_old=24 * 30)
    assert vacuum(iceberg, retention_hours=0, enforce_retention=False).files == []
    assert os.path.exists(kept)


def test_partition_directories_of_underscore_columns_are_not_hidden() -> None:
    assert is_hidden("_delta_log", ["p"])
    assert is_hidden(".x", ["p"])
    assert not is_hidden("_p=1", ["_p"])
    assert not is_hidden("_change_data", [])
    assert not is_hidden("p=1", ["p"])


def test_records_vacuum_start_and_end(table_uri: str) -> None:
    log = create(table_uri, config={"delta.deletedFileRetentionDuration": "interval 0 hours"})
    append(log, [1])
    result = vacuum(log)
    assert (result.start_version, result.end_version) == (2, 3)
    end, start = log.history(limit=2)
    assert start.operation == "VACUUM START" and end.operation == "VACUUM END"
    assert start.operation_parameters == {
        "retentionCheckEnabled": True,  # Delta writes booleans and numbers raw
        "defaultRetentionMillis": 0,
    }
    assert start.operation_metrics["numFilesToDelete"] == "0"
    assert end.operation_parameters == {"status": "COMPLETED"}
    # Delta's numVacuumedDirectories counts the directories VACUUM looked at, the root included
    # (VacuumCommand's dirCounts): here the root and p=a
    assert end.operation_metrics == {"numDeletedFiles": "0", "numVacuumedDirectories": "2"}


def test_memory_store_orphans_are_deleted() -> None:
    uri = f"memory://vac-{uuid.uuid4().hex}/t"
    log = create(uri)
    append(log, [1, 2])
    orphan = write_file(log, [9], "a")  # written, never committed
    time.sleep(0.01)  # older than "now - 0 hours"
    dry = vacuum(log, retention_hours=0, enforce_retention=False, dry_run=True)
    assert dry.files == [orphan.path]
    vacuum(log, retention_hours=0, enforce_retention=False)
    fs = log.store.filesystem()
    from pyarrow.fs import FileType

    assert fs.get_file_info(log.store.fs_path(f"{uri}/{orphan.path}")).type == FileType.NotFound
    assert read_ids(log) == [1, 2]


def test_empty_partition_directories_are_removed(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    append(log, [1], "a")
    stray = _local(log, "p=zz/part-stray.parquet")
    _touch(stray, hours_old=24 * 30)
    result = vacuum(log, retention_hours=0, enforce_retention=False)
    assert result.num_dirs == 1
    assert not os.path.exists(os.path.dirname(stray))
    assert os.path.isdir(_local(log, "p=a"))


def test_directories_count_in_the_dry_run_and_the_metrics_as_delta(tmp_path: Path) -> None:
    """Delta's dry run lists the directories it deletes with the files (DeltaVacuumSuite's
    "deleting directories"), and ``numFilesToDelete``/``numDeletedFiles`` count both ("Deleted
    N files and directories"); a directory holding a young file stays."""
    log = create(str(tmp_path / "t"))
    append(log, [1], "a")
    _touch(_local(log, "x/y/orphan.parquet"), hours_old=24 * 30)
    os.makedirs(_local(log, "ghi"))
    _touch(_local(log, "young/new.parquet"), hours_old=0)
    an_hour_ago = int(time.time() * 1000) - HOUR_MS  # the young file is younger than that
    preview = vacuum(log, retention_hours=0, enforce_retention=False, dry_run=True, now_ms=an_hour_ago)
    assert (preview.files, preview.dirs, preview.num_dirs) == (["x/y/orphan.parquet"], ["ghi", "x", "x/y"], 3)
    result = vacuum(log, retention_hours=0, enforce_retention=False, now_ms=an_hour_ago)
    assert (result.files, result.num_dirs) == (["x/y/orphan.parquet"], 3)
    assert not os.path.exists(_local(log, "x")) and not os.path.exists(_local(log, "ghi"))
    assert os.path.exists(_local(log, "young/new.parquet"))
    end, start = log.history(limit=2)
    assert start.operation_metrics["numFilesToDelete"] == "4"
    assert end.operation_metrics["numDeletedFiles"] == "4"


@pytest.mark.parametrize("directory", ["t", "odd%20name/t"])
def test_deletion_vector_files_of_active_files_are_kept(tmp_path: Path, directory: str) -> None:
    """Also under a directory whose name holds a ``%``: the DV file's path is not decoded
    twice (which named another file and left the live DV unprotected)."""
    log = create(str(tmp_path / directory), config={"delta.enableDeletionVectors": "true"})
    add = write_file(log, [1, 2, 3], "a")
    log.start_transaction().commit([add], Write())
    blob, [(offset, size, card)] = write_dv_file([[1]])
    file_id = uuid.uuid4()
    dv = DeletionVectorDescriptor("u", z85_encode(file_id.bytes), size, card, offset)
    dv_path = log.store.fs_path(dv_absolute_path(log.table_uri, dv))
    with open(dv_path, "wb") as fh:
        fh.write(blob)

    txn = log.start_transaction()
    txn.filter_files()
    with_dv = replace(add, deletion_vector=dv, data_change=True, stats=widen_stats(add.stats, 3, 0))
    txn.commit([add.remove(int(time.time() * 1000)), with_dv], Delete(["id = 2"]))
    _age(dv_path, hours_old=24 * 30)
    _age(_local(log, add.path), hours_old=24 * 30)
    assert read_ids(log) == [1, 3]
    result = vacuum(log, retention_hours=0, enforce_retention=False)
    assert result.files == []
    assert os.path.exists(dv_path)
    assert read_ids(log) == [1, 3]


@pytest.mark.parametrize("spelling", ["file:///", "file:/", "/"])
def test_absolute_paths_inside_the_root_are_protected(tmp_path: Path, spelling: str) -> None:
    """``file:///x``, ``file:/x`` (as Delta Spark spells a local path) and ``/x`` alike."""
    log = create(str(tmp_path / "t"))
    add = write_file(log, [7], "a")
    absolute = replace(add, path=spelling + _local(log, add.path).lstrip("/"))
    log.start_transaction().commit([absolute], Write())
    _age(_local(log, add.path), hours_old=24 * 30)
    assert vacuum(log, retention_hours=0, enforce_retention=False, dry_run=True).files == []


def test_an_abandoned_native_write_staging_directory_is_removed_whole(tmp_path: Path) -> None:
    """A driver killed during a native Spark write leaves ``deltalog-staging-<uuid>/`` with
    Hadoop's hidden ``_temporary`` attempt directories inside. Nothing under it is ever in
    the log, so VACUUM looks inside it (hidden names included) and removes what is older
    than the retention, and the directories it empties; a write still under way (young
    files) keeps its files."""
    log = create(str(tmp_path / "t"))
    append(log, [1, 2])
    stale = f"{STAGING_PREFIX}{uuid.uuid4()}"
    attempt = f"{stale}/_temporary/0/_temporary/attempt_202611270000_0001_m_000000_0"
    old = [f"{attempt}/part-00000-a.snappy.parquet", f"{stale}/_temporary/0/task_0/part-00001-b.snappy.parquet"]
    old.append(f"{stale}/k=1/part-00002-c.snappy.parquet")
    for rel in old:
        _touch(_local(log, rel), hours_old=24 * 10)
    running = f"{STAGING_PREFIX}{uuid.uuid4()}/_temporary/0/_temporary/attempt_x/part-00000-d.snappy.parquet"
    _touch(_local(log, running), hours_old=0)
    assert sorted(vacuum(log, dry_run=True).files) == sorted(old)
    vacuum(log)
    assert not os.path.exists(_local(log, stale))  # the whole directory, hidden parts included
    assert os.path.exists(_local(log, running))
    assert read_ids(log) == [1, 2]


def test_an_inventory_row_inside_a_staging_directory_is_seen(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    rel = f"{STAGING_PREFIX}{uuid.uuid4()}/_temporary/0/part-00000-a.snappy.parquet"
    _touch(_local(log, rel), hours_old=24 * 10)
    old_ms = int(time.time() * 1000) - 10 * 24 * HOUR_MS
    inventory = [(_local(log, rel), 1, False, old_ms), (_local(log, "_hidden/part-0.parquet"), 1, False, old_ms)]
    assert vacuum(log, dry_run=True, inventory=inventory).files == [rel]


def test_a_table_this_client_cannot_write_is_refused_even_for_a_dry_run(tmp_path: Path) -> None:
    """Delta's VACUUM checks the write protocol first (``deltaLog.protocolWrite``), dry run
    included: a client that does not know a writer feature must not decide which files are
    unreferenced (the feature may reference files in ways it cannot see)."""
    import json

    from deltalog.errors import UnsupportedFeatureError

    log = create(str(tmp_path / "t"))
    append(log, [1], "a")
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "someFutureFeature"]}
    (tmp_path / "t" / "_delta_log" / f"{2:020d}.json").write_text(json.dumps({"protocol": protocol}) + "\n")
    orphan = _local(log, "orphan.parquet")
    _touch(orphan, hours_old=1000)
    for dry_run in (True, False):
        with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
            vacuum(log, dry_run=dry_run)
    assert os.path.exists(orphan) and log.update().version == 2


def test_logging_off_deletes_without_commits(table_uri: str) -> None:
    """Delta's ``spark.databricks.delta.vacuum.logging.enabled=false`` (DeltaVacuumSuite
    "vacuum event logging"): files deleted, no ``VACUUM START``/``END`` commit; given as
    ``log_vacuum`` or as the storage option."""
    log = create(table_uri, config={"delta.deletedFileRetentionDuration": "interval 0 hours"})
    append(log, [1])
    orphan = write_file(log, [9], "a")
    time.sleep(0.01)
    result = vacuum(log, log_vacuum=False)
    assert result.files == [orphan.path] and (result.start_version, result.end_version) == (None, None)
    quiet = DeltaLog.for_table(table_uri, {"spark.databricks.delta.vacuum.logging.enabled": "false"})
    vacuum(quiet)
    assert [c.operation for c in log.history()] == ["WRITE", "CREATE TABLE"]
    assert vacuum(log).start_version == 2  # logged by default
