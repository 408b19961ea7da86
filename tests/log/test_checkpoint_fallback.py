"""A checkpoint that cannot be read is skipped for the newest earlier one (as Delta
falls back), when the commits after that one are still there."""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path

import pytest

from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from deltalog.txn.protocol.errors import CorruptLogError

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "v", "type": "long", "nullable": True, "metadata": {}}]})


def _table(path: Path, commits: int) -> DeltaLog:
    log = DeltaLog.for_table(str(path))
    txn = log.start_transaction()
    txn.update_metadata(
        Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, configuration={"delta.checkpointInterval": "5"})
    )
    txn.commit([], CreateTable())
    for i in range(commits):
        log.start_transaction().commit([AddFile(f"f{i}.parquet", {}, 1, 1)], Write())
    return log


def _checkpoint(path: Path, version: int) -> Path:
    return path / "_delta_log" / f"{version:020d}.checkpoint.parquet"


def test_an_unreadable_checkpoint_falls_back_to_the_previous_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _table(tmp_path, 12)  # checkpoints at 5 and 10
    torn = _checkpoint(tmp_path, 10)
    torn.write_bytes(torn.read_bytes()[: os.path.getsize(torn) // 2])  # no footer: unreadable
    with caplog.at_level(logging.WARNING):
        snap = DeltaLog.for_table(str(tmp_path)).update()
    assert snap.version == 12 and snap.num_files == 12
    assert snap.checkpoint_version == 5
    assert "the checkpoint at version 10" in caplog.text and "cannot be read" in caplog.text
    # time travel to the torn checkpoint's own version works the same way
    assert DeltaLog.for_table(str(tmp_path)).snapshot(10).num_files == 10


def test_without_the_commits_to_fall_back_on_the_error_stands(tmp_path: Path) -> None:
    _table(tmp_path, 12)
    torn = _checkpoint(tmp_path, 10)
    torn.write_bytes(b"PAR1 not a checkpoint")
    for v in range(0, 10):  # as if cleaned up behind checkpoint 10
        (tmp_path / "_delta_log" / f"{v:020d}.json").unlink()
    with pytest.raises(CorruptLogError, match=r"00000000000000000010\.checkpoint\.parquet"):
        DeltaLog.for_table(str(tmp_path)).update()
