"""``delta.isolationLevel`` as a table property: ``Serializable`` or ``WriteSerializable``
(Delta's ``IsolationLevel.validTableIsolationLevels``). ``SnapshotIsolation`` is only the
level a ``dataChange=false`` commit is downgraded to: as a table level it would switch off
the concurrent-append check of every write. A bad value is refused before any file is
written, and a table that already carries one (written by another engine) fails the
write with a typed error that deletes its files, not with an "outcome unknown"."""

from __future__ import annotations

import json
import os

import pytest

from deltalog.contrib.spark.writes import commit_write
from deltalog.txn.commit.commit_errors import InvalidTransactionError
from tests.spark.test_write_transaction import _data_files, _plan, _rows, _task_files, _write


@pytest.mark.parametrize("level", ["SnapshotIsolation", "snapshotisolation", "Repeatable"])
def test_a_write_creating_a_table_refuses_an_isolation_level_that_is_not_a_table_level(
    table_path: str, level: str
) -> None:
    with pytest.raises(InvalidTransactionError, match=r"delta\.isolationLevel"):
        _plan(table_path, partitionBy="p", **{"delta.isolationLevel": level})
    assert not os.path.exists(table_path)


def _carry_snapshot_isolation(table_path: str) -> None:
    """A table whose metadata says SnapshotIsolation, as another engine could write it."""
    assert _write(table_path, _rows([1], [10]), partitionBy="p") == 0
    commit = os.path.join(table_path, "_delta_log", f"{0:020d}.json")
    with open(commit, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    for action in lines:  # as another engine would have written it
        if "metaData" in action:
            action["metaData"]["configuration"]["delta.isolationLevel"] = "SnapshotIsolation"
    with open(commit, "w", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(a) for a in lines) + "\n")
    os.remove(commit.replace(".json", ".crc"))


def test_a_table_carrying_snapshot_isolation_fails_writes_and_keeps_nothing(table_path: str) -> None:
    _carry_snapshot_isolation(table_path)
    plan = _plan(table_path, overwrite=True, replaceWhere="p = 1")
    files = _task_files(plan, _rows([1], [100]))
    with pytest.raises(InvalidTransactionError, match=r"delta\.isolationLevel"):
        commit_write(plan, files)
    assert len(_data_files(table_path)) == 1  # the table's file; the write's file is gone


def test_a_table_carrying_a_bad_level_can_be_repaired_by_setting_a_valid_one(table_path: str) -> None:
    """The commit that sets a valid level runs at it (Delta takes the level from the
    transaction's metadata), so the table is not locked by the bad value."""
    from dataclasses import replace

    from deltalog.txn.commit.operations import SetTableProperties
    from deltalog.txn.delta_log import DeltaLog

    _carry_snapshot_isolation(table_path)
    txn = DeltaLog.for_table(table_path).start_transaction()
    metadata = txn.snapshot.metadata
    props = {"delta.isolationLevel": "Serializable"}
    txn.update_metadata(replace(metadata, configuration={**metadata.configuration, **props}))
    assert txn.commit([], SetTableProperties(properties=props)) == 1
    assert _write(table_path, _rows([2], [20])) == 2
