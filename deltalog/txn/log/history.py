"""Commit timestamps, time travel by timestamp, and table history.

Commit times are the commit files' modification times *made monotonic* (a commit whose
time is not after its predecessor's counts as predecessor + 1 ms, as Delta Spark's
``DeltaHistoryManager`` does), or ``commitInfo.inCommitTimestamp`` for the versions from
``delta.inCommitTimestampEnablementVersion`` on when in-commit timestamps are enabled.
Time travel to a timestamp picks the newest version committed at or before it; a timestamp
before the earliest reconstructable version or after the latest commit is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from deltalog.txn.protocol.actions import CommitInfo
from deltalog.txn.protocol.errors import TableNotFoundError, VersionNotFoundError
from deltalog.txn.protocol.time_zones import parse_timestamp_text

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["CommitRecord", "commit_timestamps", "history", "starting_version_at", "to_millis", "version_at_timestamp"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class CommitRecord:
    """One entry of the history: a version, its timestamp (ms) and its ``commitInfo``."""

    version: int
    timestamp: int
    commit_info: CommitInfo | None

    def __getattr__(self, name: str) -> Any:
        info = object.__getattribute__(self, "commit_info")
        if info is not None and hasattr(info, name):
            return getattr(info, name)
        raise AttributeError(name)

    @property
    def operation(self) -> str | None:
        return None if self.commit_info is None else self.commit_info.operation

    @property
    def datetime(self) -> datetime:
        return datetime.fromtimestamp(self.timestamp / 1000, tz=timezone.utc)

    def to_dict(self) -> dict[str, Any]:
        d = {} if self.commit_info is None else self.commit_info.to_dict()
        d["version"] = self.version
        d["timestamp"] = self.timestamp
        return d


def to_millis(value: datetime | int | float | str) -> int:
    """Milliseconds since the epoch; naive datetimes and strings are taken as UTC."""
    if isinstance(value, bool):
        raise TypeError("a timestamp must be a datetime, milliseconds or an ISO-8601 string")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        parsed = parse_timestamp_text(value)
        if parsed is None:
            raise ValueError(
                f"DELTA_TIMESTAMP_INVALID: The provided timestamp ({value!r}) cannot be converted to a valid "
                "timestamp; give it as Spark casts text to a timestamp, like '2024-05-01 12:00:00' or "
                "'2024-05-01T12:00:00+00:00'"
            )
        value = parsed
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    # integer arithmetic: float seconds * 1000 can lose the last millisecond
    return (value - _EPOCH) // timedelta(milliseconds=1)


def _ict_start(log: SnapshotManagement) -> int | None:
    """The first version whose in-commit timestamp counts, or None when ICT is off."""
    snap = log.update()
    if snap.version < 0 or not snap.properties.enable_in_commit_timestamps:
        return None
    start = snap.properties.in_commit_timestamp_enablement_version
    return 0 if start is None else start


def commit_timestamps(
    log: SnapshotManagement, start: int = 0, read_in_commit_timestamps: bool = True, *, list_from: int = 0
) -> list[tuple[int, int]]:
    """(version, timestamp ms) of every listed commit from ``start``, monotonic. A commit
    with an in-commit timestamp is read for it; with ``read_in_commit_timestamps`` False it
    is left out instead (a caller that reads the commit anyway takes it from there).
    ``list_from``: commits before it are not listed, so file times are made monotonic from
    there on (Delta's ``getCommitsWithNonIctTimestamps(start)``)."""
    listing = log.listing(0)
    ict_from = _ict_start(log)
    out: list[tuple[int, int]] = []
    prev: int | None = None
    for version in sorted(v for v in listing.commits if v >= list_from):
        status = listing.commits[version]
        ts = status.modification_time
        if ict_from is not None and version >= ict_from:
            if version < start or not read_in_commit_timestamps:
                continue  # its own timestamp, whatever came before: nothing to carry forward
            for obj in log.read_commit_raw(version, status.path):
                info = obj.get("commitInfo")
                if isinstance(info, dict) and info.get("inCommitTimestamp") is not None:
                    ts = int(info["inCommitTimestamp"])
                break
        elif prev is not None and ts <= prev:
            ts = prev + 1
        prev = ts
        if version >= start:
            out.append((version, ts))
    return out


def _earliest_recreatable(log: SnapshotManagement) -> int:
    """The first version whose state the log can rebuild (Delta's
    ``getEarliestRecreatableCommit``): 0 while commit 0 is there, else the newest complete
    checkpoint at or before the first commit at or after it that the listed commits reach
    (a checkpoint at least the first listed commit - 1). 0 for a log without commits."""
    listing = log.listing(0)
    if not listing.commits or 0 in listing.commits:
        return 0
    first = min(listing.commits)
    checkpoints = {c.version for c in listing.complete_checkpoints()}
    newest: int | None = None
    for version in sorted(checkpoints | set(listing.commits)):
        if version in checkpoints:
            newest = version
        if version in listing.commits and newest is not None and newest >= first - 1:
            return newest
    if newest is not None and newest >= first:
        return newest
    raise VersionNotFoundError(
        f"DELTA_NO_RECREATABLE_HISTORY_FOUND: no recreatable commits found at {log.log_uri}: commit 0 is gone "
        f"and no checkpoint is followed by the commits after it (the first listed commit is {first})",
        earliest=first,
        latest=max(listing.commits),
    )


def _ict_window(log: SnapshotManagement, commits: list[tuple[int, int]], target: int) -> list[tuple[int, int]]:
    """The commits a time travel to ``target`` searches (PROTOCOL "In-Commit Timestamps"):
    once in-commit timestamps were turned on at a version after the first, a timestamp at or
    after the enablement timestamp searches only the versions from the enablement version
    on, an earlier one only the versions before it (Delta's ``getActiveCommitAtTime``)."""
    props = log.update().properties
    enabled_at = props.in_commit_timestamp_enablement_version
    enabled_ts = props.in_commit_timestamp_enablement_timestamp
    if not props.enable_in_commit_timestamps or enabled_at is None or enabled_ts is None:
        return commits
    if not commits or enabled_at <= commits[0][0]:
        return commits
    if target >= enabled_ts:
        return [c for c in commits if c[0] >= enabled_at]
    return [c for c in commits if c[0] < enabled_at]


def version_at_timestamp(
    log: SnapshotManagement, timestamp: datetime | int | str, can_return_last_commit: bool = False
) -> int:
    """The version time travel to ``timestamp`` reads (Delta's rules). A time after the
    latest commit is an error, or with ``can_return_last_commit`` the latest version (Delta's
    ``getActiveCommitAtTime(canReturnLastCommit)``, as a change feed's ``endingTimestamp``
    with ``timestampOutOfRange.enabled``)."""
    target = to_millis(timestamp)
    earliest = _earliest_recreatable(log)
    every = commit_timestamps(log, list_from=earliest)
    if not every:
        raise TableNotFoundError(log.table_uri)
    commits = _ict_window(log, every, target) or every
    if target < commits[0][1]:
        raise VersionNotFoundError(
            f"DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION: the timestamp {_fmt(target)} is before the earliest "
            f"version available in {log.table_uri} "
            f"(version {commits[0][0]} at {_fmt(commits[0][1])}); use a later timestamp",
            earliest=every[0][0],
            latest=every[-1][0],
        )
    if commits[-1] == every[-1] and target > commits[-1][1] and not can_return_last_commit:
        raise VersionNotFoundError(
            f"DELTA_TIMESTAMP_GREATER_THAN_COMMIT: the timestamp {_fmt(target)} is after the latest commit of "
            f"{log.table_uri} "
            f"(version {commits[-1][0]} at {_fmt(commits[-1][1])}); use a timestamp at or before it",
            earliest=every[0][0],
            latest=every[-1][0],
        )
    chosen = commits[0][0]
    for version, ts in commits:
        if ts <= target:
            chosen = version
        else:
            break
    return chosen


def starting_version_at(
    log: SnapshotManagement, timestamp: datetime | int | str, can_exceed_latest: bool = False
) -> int:
    """The first version committed at or after ``timestamp``, where a stream or the change
    feed starts (Delta's ``getStartingVersionFromTimestamp``): the commit active at that time
    among every listed commit (recreatable or not), searched on the same side of the
    in-commit timestamp enablement as time travel; that version when it was committed at
    ``timestamp`` or later (the earliest commit, for a time before every commit), else the
    next one. A time after the latest commit is an error, or with ``can_exceed_latest`` the
    version after the latest (Delta's ``canExceedLatest``: an empty change feed)."""
    target = to_millis(timestamp)
    every = commit_timestamps(log)
    if not every:
        raise TableNotFoundError(log.table_uri)
    commits = _ict_window(log, every, target) or every
    version, ts = commits[0]
    for v, t in commits:
        if t > target:
            break
        version, ts = v, t
    if ts >= target:
        return version
    if version + 1 > every[-1][0] and not can_exceed_latest:
        raise VersionNotFoundError(
            f"DELTA_TIMESTAMP_GREATER_THAN_COMMIT: the timestamp {_fmt(target)} is after the latest commit of "
            f"{log.table_uri} "
            f"(version {version} at {_fmt(ts)}); use a timestamp at or before it",
            earliest=every[0][0],
            latest=every[-1][0],
        )
    return version + 1


def _fmt(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


def history(log: SnapshotManagement, limit: int | None = None) -> list[CommitRecord]:
    """Commit records, newest first (at most ``limit``)."""
    if limit is not None and limit <= 0:
        return []
    # DESCRIBE HISTORY LIMIT n lists (and makes monotonic) only the newest n commits
    list_from = 0 if limit is None else max(log.update().version - limit + 1, 0)
    stamps = commit_timestamps(log, list_from=list_from)
    if not stamps:
        raise TableNotFoundError(log.table_uri)
    chosen = list(reversed(stamps))
    if limit is not None:
        chosen = chosen[:limit]
    records = []
    for version, ts in chosen:
        info = None
        try:
            raw = log.read_commit_raw(version)
        except VersionNotFoundError:
            continue  # cleaned up between the listing and the read
        for obj in raw:
            body = obj.get("commitInfo")
            if isinstance(body, dict):
                info = CommitInfo.from_dict(body)
                break
        records.append(CommitRecord(version, ts, info))
    return records
