"""Time travel within ``delta.deletedFileRetentionDuration`` (Delta Spark 4.1+,
``SnapshotManagement.enforceTimeTravelWithinDeletedFileRetentionDuration``): a snapshot
asked for with ``enforce_retention=True`` whose timestamp is older than
``now - retention`` of the latest snapshot is refused, unless it is the latest version.
``DeltaLog.snapshot`` does not enforce it by default (Delta's ``getSnapshotAt`` neither):
the entry points Delta enforces it on ask for it."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from deltalog.errors import TimeTravelBeyondDeletedFileRetentionDurationError
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import CommitInfo, Protocol, action_to_line
from tests.log.helpers import add, commit, metadata, protocol, set_mtime

DAY_MS = 24 * 3600 * 1000
ENFORCE_CONF = "spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"
ENFORCE_OPTION = "deltalog.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _table(tmp_path: Path, ages_in_days: list[float], config: dict[str, str] | None = None) -> str:
    """Versions 0.. committed ``ages_in_days`` ago (commit file modification times)."""
    table = str(tmp_path / "t")
    now = _now_ms()
    commit(table, 0, [protocol(), metadata(config)], mtime_ms=now - int(ages_in_days[0] * DAY_MS))
    for version, age in enumerate(ages_in_days[1:], 1):
        commit(table, version, [add(f"f{version}.parquet")], mtime_ms=now - int(age * DAY_MS))
    return table


def test_a_version_older_than_the_retention_is_refused(tmp_path: Path) -> None:
    log = DeltaLog.for_table(_table(tmp_path, [10, 8, 6, 1]))
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError) as err:
        log.snapshot(version=1, enforce_retention=True)
    message = str(err.value)
    assert message.startswith("DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION")
    assert "Cannot time travel beyond delta.deletedFileRetentionDuration (168 HOURS) set on the table" in message
    assert ENFORCE_CONF in message and ENFORCE_OPTION in message  # how to turn it off
    assert "delta.deletedFileRetentionDuration" in message
    assert err.value.error_class == "DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION"
    assert (err.value.version, err.value.latest_version, err.value.retention_hours) == (1, 3, 168)
    assert log.snapshot(version=2, enforce_retention=True).version == 2  # 6 days: within the week


def test_by_timestamp_the_version_found_is_checked(tmp_path: Path) -> None:
    log = DeltaLog.for_table(_table(tmp_path, [10, 8, 6, 1]))
    eight_days_ago = datetime.fromtimestamp((_now_ms() - 7.9 * DAY_MS) / 1000, tz=timezone.utc)
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        log.snapshot(timestamp=eight_days_ago, enforce_retention=True)  # version 1
    five_days_ago = datetime.fromtimestamp((_now_ms() - 5 * DAY_MS) / 1000, tz=timezone.utc)
    assert log.snapshot(timestamp=five_days_ago, enforce_retention=True).version == 2


def test_the_latest_version_is_always_allowed(tmp_path: Path) -> None:
    log = DeltaLog.for_table(_table(tmp_path, [30, 20]))
    assert log.snapshot(version=1, enforce_retention=True).version == 1
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        log.snapshot(version=0, enforce_retention=True)


def test_not_enforced_unless_asked(tmp_path: Path) -> None:
    """``snapshot(version=)`` is the log's own time travel (streams, commands, history use
    it): as Delta's ``getSnapshotAt``, it enforces nothing by default."""
    log = DeltaLog.for_table(_table(tmp_path, [10, 8, 1]))
    assert log.snapshot(version=0).version == 0
    assert log.snapshot(version=1).num_files == 1


@pytest.mark.parametrize("key", [ENFORCE_CONF, ENFORCE_OPTION])
def test_a_storage_option_turns_it_off(tmp_path: Path, key: str) -> None:
    table = _table(tmp_path, [10, 8, 1])
    log = DeltaLog.for_table(table, storage_options={key: "false"})
    assert log.snapshot(version=0, enforce_retention=True).version == 0
    on = DeltaLog.for_table(table, storage_options={key: "true"})
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        on.snapshot(version=0, enforce_retention=True)


def test_the_latest_snapshots_retention_counts(tmp_path: Path) -> None:
    """A longer ``delta.deletedFileRetentionDuration`` allows older versions; it is read from
    the latest snapshot's metadata, not the target's (Delta's ``latestSnapshot.metadata``)."""
    table = _table(tmp_path, [40, 20, 10], config={"delta.deletedFileRetentionDuration": "interval 30 days"})
    log = DeltaLog.for_table(table)
    assert log.snapshot(version=1, enforce_retention=True).version == 1  # 20 days < 30 days
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError) as err:
        log.snapshot(version=0, enforce_retention=True)  # 40 days
    assert err.value.retention_hours == 720
    shorter = metadata({"delta.deletedFileRetentionDuration": "interval 0 hours"})
    commit(table, 3, [shorter], mtime_ms=_now_ms() - 1000)
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError, match=r"\(0 HOURS\)"):
        log.snapshot(version=2, enforce_retention=True)  # its own metadata still says 30 days


def test_the_in_commit_timestamp_is_the_snapshots_timestamp(tmp_path: Path) -> None:
    """With in-commit timestamps the snapshot's timestamp is ``commitInfo.inCommitTimestamp``,
    not the commit file's modification time (Delta's ``Snapshot.timestamp``)."""
    table = str(tmp_path / "t")
    now = _now_ms()
    ict = Protocol(3, 7, (), ("inCommitTimestamp",))
    config = {"delta.enableInCommitTimestamps": "true"}
    for version, ict_age, file_age in ((0, 10, 0), (1, 1, 10), (2, 0, 0)):
        path = Path(table) / "_delta_log" / f"{version:020d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        info = CommitInfo(timestamp=now, operation="WRITE", in_commit_timestamp=now - ict_age * DAY_MS)
        actions = [ict, metadata(config)] if version == 0 else [add(f"f{version}.parquet")]
        path.write_text("\n".join(action_to_line(a) for a in [info, *actions]) + "\n")
        set_mtime(str(path), now - file_age * DAY_MS)
    log = DeltaLog.for_table(table)
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        log.snapshot(version=0, enforce_retention=True)  # its file is new, its in-commit timestamp old
    assert log.snapshot(version=1, enforce_retention=True).version == 1  # the other way round
