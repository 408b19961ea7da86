"""VACUUM LITE (Delta's ``VACUUM ... LITE``): the files to delete come from the log's removes
and change-data files since the last VACUUM's window, not from a listing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from deltalog.errors import VacuumLiteError
from deltalog.txn.commands.vacuum import vacuum
from deltalog.txn.commit.operations import Delete, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile
from tests.ops.tables import create, read_ids, write_file

DAY_MS = 24 * 3600 * 1000


def _remove(log: DeltaLog, add: AddFile) -> None:
    txn = log.start_transaction()
    txn.filter_files()
    txn.commit([add.remove(int(time.time() * 1000))], Delete(["id > 0"]))


def _exists(log: DeltaLog, add: AddFile) -> bool:
    return os.path.exists(log.store.fs_path(f"{log.table_uri}/{add.path}"))


def test_lite_deletes_what_the_log_removed_and_records_its_window(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    kept, gone = write_file(log, [1], "a"), write_file(log, [2], "a")
    log.start_transaction().commit([kept, gone], Write())
    _remove(log, gone)
    orphan = log.store.fs_path(f"{log.table_uri}/p=a/part-orphan.c000.snappy.parquet")
    with open(orphan, "wb") as fh:
        fh.write(b"x")
    later = int(time.time() * 1000) + 30 * DAY_MS  # every commit and file outside the 7-day window
    assert vacuum(log, dry_run=True, now_ms=later, lite=True).files == [gone.path]  # no listing: no orphan
    assert sorted(vacuum(log, dry_run=True, now_ms=later).files) == sorted(
        [gone.path, "p=a/part-orphan.c000.snappy.parquet"]
    )
    assert vacuum(log, now_ms=later, lite=True).files == [gone.path]
    assert not _exists(log, gone) and _exists(log, kept) and os.path.exists(orphan) and read_ids(log) == [1]
    info = log.store.fs_path(f"{log.log_uri}/_last_vacuum_info")
    with open(info) as fh:
        assert json.loads(fh.read()) == {"latestCommitVersionOutsideOfRetentionWindow": 2}
    # the next LITE run reads only the commits after that window
    again = write_file(log, [3], "a")
    log.start_transaction().commit([again], Write())
    _remove(log, again)
    assert vacuum(log, now_ms=later, lite=True).files == [again.path] and not _exists(log, again)
    assert vacuum(log, now_ms=later).files == ["p=a/part-orphan.c000.snappy.parquet"]  # a full one lists
    with open(info) as fh:
        assert json.loads(fh.read()) == {}  # as Delta: a full VACUUM records no window


def test_lite_refuses_when_commits_it_needs_were_cleaned_up(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    add = write_file(log, [1], "a")
    log.start_transaction().commit([add], Write())
    _remove(log, add)
    log.checkpoint()
    os.remove(log.store.fs_path(log.commit_uri(0)))  # what log cleanup does behind a checkpoint
    later = int(time.time() * 1000) + 30 * DAY_MS
    with pytest.raises(VacuumLiteError, match="DELTA_CANNOT_VACUUM_LITE"):
        vacuum(log, now_ms=later, lite=True)
    assert _exists(log, add)  # nothing deleted
    assert vacuum(log, now_ms=later, lite=True, dry_run=True, retention_hours=24 * 60).files == []  # none outside
