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
from deltalog.txn.protocol.errors import CorruptLogError, InvalidTableStateError, NonContiguousVersionsError

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


@pytest.mark.parametrize("action", ["metaData", "protocol"])
def test_a_checkpoint_without_protocol_or_metadata_is_refused(tmp_path: Path, action: str) -> None:
    """A readable checkpoint that lacks an action is a state Delta refuses to reconstruct
    (``DELTA_STATE_RECOVER_ERROR``; golden ``deltalog-state-reconstruction-from-checkpoint-missing-*``),
    not an unreadable file to fall back from: every earlier commit is there, and still the
    read fails. A later commit that holds the action completes the state, as in Delta."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    _table(tmp_path, 4)
    log = DeltaLog.for_table(str(tmp_path))
    log.checkpoint()
    cp = _checkpoint(tmp_path, 4)
    data = pq.read_table(cp)
    pq.write_table(data.filter(pc.is_null(data.column(action))), cp)
    with pytest.raises(
        InvalidTableStateError,
        match=rf"has no {action} action; .*the checkpoint at version 4 \(.*04\.checkpoint\.parquet\) lacks it",
    ):
        DeltaLog.for_table(str(tmp_path)).update()
    assert DeltaLog.for_table(str(tmp_path)).snapshot(3).num_files == 3  # before the checkpoint
    restated = log.update().metadata if action == "metaData" else log.update().protocol
    later = DeltaLog.for_table(str(tmp_path))
    with open(tmp_path / "_delta_log" / f"{5:020d}.json", "w") as fh:
        fh.write(json.dumps({action: restated.to_dict()}) + "\n")
    assert later.update().version == 5 and later.update().num_files == 4


def _corrupt(path: Path, version: int, part: int | None, empty: bool) -> None:
    """Delta's ``makeCorruptCheckpointFile``: the checkpoint (or its ``part``) cut to 0 or 10 bytes."""
    names = sorted(n for n in os.listdir(path / "_delta_log") if n.startswith(f"{version:020d}.checkpoint"))
    with open(path / "_delta_log" / names[(part or 1) - 1], "r+b") as fh:
        fh.truncate(0 if empty else 10)


@pytest.mark.parametrize("empty", [True, False])
@pytest.mark.parametrize("part", [None, 1, 2])
def test_snapshot_management_suite_corrupt_checkpoints(tmp_path: Path, part: int | None, empty: bool) -> None:
    """Delta's ``SnapshotManagementSuite`` ``recover from a corrupt checkpoint`` (classic, and
    either part of a multi-part checkpoint): back to the previous checkpoint, or to the
    commits; without the history behind it the load fails."""
    parts = None if part is None else 1
    log = _table(tmp_path, 2)
    log.checkpoint(part_size=parts)  # checkpoint 2
    log.start_transaction().commit([AddFile("g.parquet", {}, 1, 1), AddFile("h.parquet", {}, 1, 1)], Write())
    log.checkpoint(part_size=parts)  # checkpoint 3
    _corrupt(tmp_path, 3, part, empty)
    snap = DeltaLog.for_table(str(tmp_path)).update()
    assert (snap.version, snap.num_files, snap.checkpoint_version) == (3, 4, 2)
    _corrupt(tmp_path, 2, part, empty)
    snap = DeltaLog.for_table(str(tmp_path)).update()
    assert (snap.version, snap.num_files, snap.checkpoint_version) == (3, 4, None)
    (tmp_path / "_delta_log" / f"{0:020d}.json").unlink()
    with pytest.raises((CorruptLogError, NonContiguousVersionsError)):
        DeltaLog.for_table(str(tmp_path)).update()


def test_a_checkpoint_without_any_commit_file_is_no_table(tmp_path: Path) -> None:
    """``should throw a clear exception when checkpoint exists but its corresponding delta
    file doesn't exist`` (also when the checkpoint is corrupt): Delta refuses the log
    (``Could not find any delta files for version 0``); the commit of the checkpoint's own
    version is enough, as log cleanup always keeps it."""
    log = _table(tmp_path, 2)
    log.checkpoint()
    for v in (0, 1):
        (tmp_path / "_delta_log" / f"{v:020d}.json").unlink()
    assert DeltaLog.for_table(str(tmp_path)).update().num_files == 2
    (tmp_path / "_delta_log" / f"{2:020d}.json").unlink()
    with pytest.raises(InvalidTableStateError, match="could not find any delta files for version 2"):
        DeltaLog.for_table(str(tmp_path)).update()
    with pytest.raises(InvalidTableStateError, match="could not find any delta files for version 2"):
        DeltaLog.for_table(str(tmp_path)).snapshot(2)
    _corrupt(tmp_path, 2, None, empty=False)
    with pytest.raises(InvalidTableStateError, match="could not find any delta files"):
        DeltaLog.for_table(str(tmp_path)).update()


def test_update_moves_to_a_newer_checkpoint_when_the_old_one_is_cleaned_up(tmp_path: Path) -> None:
    """``checkpoint/json not found when executor restart after expired checkpoints in the
    snapshot cache are cleaned up``: a cached snapshot that reads its files from checkpoint 5
    is updated onto another writer's checkpoint (as Delta's update takes the new log segment),
    so log cleanup deleting checkpoint 5 does not break it -- with or without new commits."""
    for extra in (0, 2):
        path = tmp_path / f"t{extra}"
        _table(path, 6)  # checkpoint 5
        reader = DeltaLog.for_table(str(path))
        assert reader.update().checkpoint_version == 5  # files not read yet
        writer = DeltaLog.for_table(str(path))
        for i in range(extra):
            writer.start_transaction().commit([AddFile(f"x{i}.parquet", {}, 1, 1)], Write())
        writer.checkpoint()
        _checkpoint(path, 5).unlink()  # as log cleanup would
        snap = reader.update()
        assert snap.num_files == 6 + extra and snap.checkpoint_version == 6 + extra
