"""RESTORE and CLONE to a version refuse one older than ``delta.deletedFileRetentionDuration``
(Delta Spark 4.1+: ``RestoreTableCommand`` and a CLONE source with ``VERSION AS OF`` call
``getSnapshotAt(..., enforceTimeTravelWithinDeletedFileRetention = true)``), unless it is
the latest version; ``enforce_retention=False`` or the storage option turns that off."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from deltalog.errors import TimeTravelBeyondDeletedFileRetentionDurationError
from deltalog.txn.commands.clone import clone
from deltalog.txn.commands.restore import restore
from deltalog.txn.delta_log import DeltaLog
from tests.log.helpers import set_mtime
from tests.ops.tables import append, create, read_ids

DAY_MS = 24 * 3600 * 1000
ENFORCE_OPTION = "deltalog.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"


def _aged_table(uri: str) -> DeltaLog:
    """Versions 0 (create), 1 ([1]) and 2 ([2]), committed 10, 8 and 1 days ago."""
    log = create(uri)
    append(log, [1])
    append(log, [2])
    now = int(time.time() * 1000)
    for version, days in ((0, 10), (1, 8), (2, 1)):
        set_mtime(os.path.join(uri, "_delta_log", f"{version:020d}.json"), now - days * DAY_MS)
    return DeltaLog.for_table(uri)


def test_restore_beyond_the_retention_is_refused(tmp_path: Path) -> None:
    log = _aged_table(str(tmp_path / "t"))
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        restore(log, version=1)
    eight_days_ago = datetime.fromtimestamp((time.time() * 1000 - 7.9 * DAY_MS) / 1000, tz=timezone.utc)
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        restore(log, timestamp=eight_days_ago)
    assert log.update().version == 2  # nothing committed
    result = restore(log, version=1, enforce_retention=False)
    assert result.restored_version == 1 and read_ids(log) == [1]


def test_restore_honours_the_storage_option(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _aged_table(uri)
    log = DeltaLog.for_table(uri, storage_options={ENFORCE_OPTION: "false"})
    assert restore(log, version=1).restored_version == 1


def test_clone_of_a_version_beyond_the_retention_is_refused(tmp_path: Path) -> None:
    source = _aged_table(str(tmp_path / "source"))
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        clone(source, str(tmp_path / "c1"), version=1)
    assert not (tmp_path / "c1" / "_delta_log").exists()  # nothing written
    assert clone(source, str(tmp_path / "c2"), version=2).source_version == 2  # the latest
    assert clone(source, str(tmp_path / "c3")).source_version == 2  # no time travel
    older = clone(source, str(tmp_path / "c4"), version=1, enforce_retention=False)
    assert older.source_version == 1
