"""Log compaction files ``<x>.<y>.compacted.json`` (PROTOCOL "Log Compaction Files";
Delta's DeltaLogMinorCompactionSuite): readers may use one in place of the commits x..y, and
deltalog reads the commits instead, so a snapshot is the same with or without them -- on
checkpoints too, when a compaction reaches past the last commit, and a hole in the commits
is still an error (a compaction never fills one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltalog.logstores.local import LocalLogStore
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.snapshot import Snapshot
from deltalog.txn.protocol.actions import Action, AddFile, Metadata, RemoveFile, SetTransaction, action_to_line
from deltalog.txn.protocol.errors import NonContiguousVersionsError
from tests.log.helpers import add, commit, create, metadata, remove


def _commits() -> list[list[Action]]:
    """Versions 1..10 after ``create``: DeltaLogMinorCompactionSuite's ``generateData``, smaller."""
    return [
        [add("f5")],
        [remove("f5", size=10), add("f6")],
        [],
        [SetTransaction("app", 1, 1)],
        [*(remove(f"f{i}", size=10) for i in range(1, 5)), remove("f6", size=10), add("f7")],
        [add(f"f{i}") for i in range(8, 12)],
        [remove("f10", size=10), add("f12")],
        [metadata({"delta.appendOnly": "false"})],
        [AddFile("f8", {}, 10, 1, False, stats='{"numRecords": 1}')],
        [add("f13")],
    ]


def _table(tmp_path: Path, checkpoints: set[int]) -> str:
    table = str(tmp_path / "t")
    create(table, files=["f1", "f2", "f3", "f4"])
    log = DeltaLog.for_table(table)
    for version, actions in enumerate(_commits(), 1):
        if version - 1 in checkpoints:
            log.update()
            log.checkpoint()
        commit(table, version, actions)
    return table


def _compact(table: str, start: int, end: int, name_end: int | None = None) -> None:
    """Write ``start.end.compacted.json`` as Delta's minor compaction does: the commits'
    actions reconciled (newest per file, per app id; the last protocol and metadata), no
    commitInfo; named up to ``name_end`` when given (a compaction past the last commit)."""
    log = DeltaLog.for_table(table)
    files: dict[str, Action] = {}
    others: dict[str, Action] = {}
    for version in range(start, end + 1):
        for action in log.read_commit(version):
            if isinstance(action, (AddFile, RemoveFile)):
                files[action.path] = action
            elif isinstance(action, SetTransaction):
                others[f"txn {action.app_id}"] = action
            elif isinstance(action, Metadata):
                others["metaData"] = action
    name = f"{start:020d}.{(end if name_end is None else name_end):020d}.compacted.json"
    lines = [action_to_line(a) for a in [*others.values(), *files.values()]]
    LocalLogStore().write(f"{table}/_delta_log/{name}", lines)


def _state(snap: Snapshot) -> tuple[object, ...]:
    files = sorted((f.path, f.size) for f in snap.files)
    tombstones = sorted(f.path for f in snap.tombstones)
    txns = {k: t.version for k, t in snap.set_transactions.items()}
    return snap.version, files, tombstones, txns, snap.metadata.configuration


#: DeltaLogMinorCompactionSuite's windows: smallest interval first, one compacted delta for the
#: whole log, an empty one, ones covering the end, several, ones before and across a checkpoint
WINDOWS = [(1, 3), (2, 3), (3, 8), (0, 10), (0, 2), (3, 4), (4, 5), (7, 10), (8, 10), (3, 6), (9, 10), (4, 9)]
#: versions inside, at the ends of and between the windows and checkpoints
VERSIONS = [1, 3, 4, 6, 10]


def test_a_snapshot_is_the_same_with_compacted_deltas(tmp_path: Path) -> None:
    table = _table(tmp_path, {0, 2, 5})
    expected = [_state(DeltaLog.for_table(table).snapshot(version=v)) for v in VERSIONS]
    cached = DeltaLog.for_table(table)
    cached.update()
    for start, end in WINDOWS:
        _compact(table, start, end)
    log = DeltaLog.for_table(table)
    assert [_state(log.snapshot(version=v)) for v in VERSIONS] == expected
    assert _state(cached.update()) == expected[-1]  # an incremental update
    assert expected[-1][1] == [("f11", 10), ("f12", 10), ("f13", 10), ("f7", 10), ("f8", 10), ("f9", 10)]
    assert [r.version for r in log.history()] == list(range(10, -1, -1))


def test_a_compaction_past_the_last_commit_and_a_hole_in_the_commits(tmp_path: Path) -> None:
    table = _table(tmp_path, {0, 2})
    expected = _state(DeltaLog.for_table(table).update())
    _compact(table, 9, 10, name_end=11)  # as if through version 11, which does not exist
    _compact(table, 3, 6)
    assert _state(DeltaLog.for_table(table).update()) == expected
    (Path(table) / "_delta_log" / f"{4:020d}.json").unlink()
    with pytest.raises(NonContiguousVersionsError):  # compacted deltas never fill a hole
        DeltaLog.for_table(table).update()
