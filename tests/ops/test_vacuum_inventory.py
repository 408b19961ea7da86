"""VACUUM at scale: an inventory instead of a listing (Delta 3.2's ``USING INVENTORY``),
and the listing of many directories at once."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from deltalog.txn.commands.vacuum import vacuum
from deltalog.txn.commands.vacuum_listing import InventoryEntry, VacuumInventoryError
from deltalog.txn.delta_log import DeltaLog
from tests.ops.tables import append, create

HOUR_MS = 3600 * 1000


def _orphan(log: DeltaLog, rel: str, hours_old: float) -> str:
    path = log.store.fs_path(f"{log.table_uri}/{rel}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Path(path).write_bytes(b"orphan")
    when = time.time() - hours_old * 3600
    os.utime(path, (when, when))
    return path


def _inventory(log: DeltaLog, now_ms: int) -> pa.Table:
    """What a storage inventory report would say about the table's directory (and more)."""
    root = log.store.fs_path(log.table_uri)
    rows: list[tuple[str, int, bool, int]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rows += [(os.path.join(dirpath, d), 0, True, now_ms) for d in dirnames]
        rows += [
            (os.path.join(dirpath, f), 6, False, int(os.path.getmtime(os.path.join(dirpath, f)) * 1000))
            for f in filenames
        ]
    rows.append(("/elsewhere/p=a/not-ours.parquet", 6, False, 0))  # outside the table: ignored
    return pa.table(
        {
            "path": [r[0] for r in rows],
            "length": pa.array([r[1] for r in rows], pa.int64()),
            "isDir": [r[2] for r in rows],
            "modificationTime": pa.array([r[3] for r in rows], pa.int64()),
        }
    )


def test_vacuum_deletes_what_the_inventory_lists_and_nothing_else(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    append(log, [1, 2], "a")
    old = _orphan(log, "p=a/old-orphan.parquet", hours_old=200)
    young = _orphan(log, "p=b/young-orphan.parquet", hours_old=1)
    now = int(time.time() * 1000)
    inventory = _inventory(log, now)
    unlisted = _orphan(log, "p=c/unlisted-orphan.parquet", hours_old=200)  # after the report

    result = vacuum(log, inventory=inventory)

    assert result.files == ["p=a/old-orphan.parquet"]
    assert not os.path.exists(old)
    assert os.path.exists(young) and os.path.exists(unlisted)
    assert sorted(a.path for a in log.update().files) == sorted(a.path for a in log.snapshot(1).files)
    # the same table vacuumed by listing finds the orphan the report did not know about
    assert vacuum(log, dry_run=True).files == ["p=c/unlisted-orphan.parquet"]


def test_an_inventory_row_repeated_keeps_the_newest_and_tuples_work(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    append(log, [1], "a")
    path = _orphan(log, "p=a/orphan.parquet", hours_old=200)
    now = int(time.time() * 1000)
    rows = [
        InventoryEntry(path, 6, False, now - 300 * HOUR_MS),
        InventoryEntry(path, 6, False, now),  # rewritten since: too young
        InventoryEntry(log.store.fs_path(f"{log.table_uri}/_delta_log/00000000000000000000.json"), 1, False, 0),
    ]
    assert vacuum(log, dry_run=True, inventory=rows).files == []


def test_an_inventory_without_delta_s_schema_is_refused(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    append(log, [1], "a")
    _orphan(log, "p=a/orphan.parquet", hours_old=200)
    bad = pa.table({"path": ["x"], "size": pa.array([1], pa.int64())})
    with pytest.raises(VacuumInventoryError, match="modificationTime long"):
        vacuum(log, inventory=bad)
    assert log.update().version == 1  # no VACUUM START recorded


def test_listing_many_directories_at_once_finds_the_same_files(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    append(log, [1], "a")
    expected = sorted(f"p=x{i}/orphan-{i}.parquet" for i in range(40))
    for rel in expected:
        _orphan(log, rel, hours_old=200)
    assert vacuum(log, dry_run=True, max_workers=1).files == expected
    assert vacuum(log, dry_run=True, max_workers=8).files == expected
