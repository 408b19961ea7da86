"""Log cleanup removes temp files crashed writers left in ``_delta_log`` -- and only those."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from deltalog.txn.commit.operations import Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.cleanup import STALE_TEMP_AGE_MS, cleanup_stale_temp_files
from deltalog.txn.protocol.actions import AddFile
from tests.reliability.crash_worker import create_table


def _table(uri: str, commits: int) -> DeltaLog:
    create_table(uri)
    log = DeltaLog.for_table(uri)
    for i in range(commits):
        log.start_transaction().commit([AddFile(f"p=a/{i}.parquet", {"p": "a"}, 1, 1)], Write())
    return log


def test_stale_temp_files_go_and_everything_else_stays(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = _table(uri, 3)  # versions 0..3
    log_dir = tmp_path / "t" / "_delta_log"
    (log_dir / ".tmp").mkdir()
    hexid = uuid.uuid4().hex
    stale = [
        log_dir / f".00000000000000000004.json.{hexid}.tmp",
        log_dir / f".00000000000000000003.checkpoint.parquet.{hexid}.tmp",
        log_dir / f"._last_checkpoint.{hexid}.tmp",
        log_dir / ".tmp" / f"00000000000000000002.json.{uuid.uuid4()}",  # version 2 is published
    ]
    kept = [
        log_dir / ".tmp" / f"00000000000000000009.json.{uuid.uuid4()}",  # may repair a claim of 9
        log_dir / ".keep.tmp",  # not a name we write
        log_dir / "notes.txt",
        tmp_path / "t" / f".00000000000000000001.json.{hexid}.tmp",  # outside _delta_log
    ]
    young = log_dir / f".00000000000000000005.json.{uuid.uuid4().hex}.tmp"
    old = time.time() - 2 * STALE_TEMP_AGE_MS / 1000
    for path in stale + kept:
        path.write_bytes(b"x")
        os.utime(path, (old, old))
    young.write_bytes(b"x")
    before = sorted(p.name for p in log_dir.iterdir())

    assert cleanup_stale_temp_files(log, log.update()) == len(stale)
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in kept) and young.exists()
    after = sorted(p.name for p in log_dir.iterdir())
    assert sorted(set(before) - set(after)) == sorted(p.name for p in stale if p.parent == log_dir)
    assert DeltaLog.for_table(uri).update().version == 3


def test_expired_log_cleanup_includes_the_temp_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    log = _table(uri, 1)
    temp = tmp_path / "t" / "_delta_log" / f".00000000000000000002.json.{uuid.uuid4().hex}.tmp"
    temp.write_bytes(b"{}")
    later = int(time.time() * 1000) + 2 * STALE_TEMP_AGE_MS
    assert log.cleanup_expired_logs(now_ms=int(time.time() * 1000)) == 0
    assert temp.exists()
    assert log.cleanup_expired_logs(now_ms=later) == 1  # no checkpoint: no commit may go
    assert not temp.exists()
    assert log.list_commit_versions(0) == [0, 1]


def test_memory_store_temp_names_are_cleaned_too() -> None:
    uri = f"memory://temp-cleanup-{uuid.uuid4().hex}"
    log = _table(uri, 1)
    temp = f"{log.log_uri}/.00000000000000000002.json.{uuid.uuid4().hex}.tmp"
    log.store.write(temp, ["partial"])
    later = int(time.time() * 1000) + 2 * STALE_TEMP_AGE_MS
    assert cleanup_stale_temp_files(log, log.update(), now_ms=later) == 1
    assert [s.name for s in log.store.list_from(f"{log.log_uri}/.!") if not s.name.endswith(".crc")] == [
        "00000000000000000000.json",
        "00000000000000000001.json",
    ]
