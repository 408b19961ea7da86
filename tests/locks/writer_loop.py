"""The commit loop the lock tests use (the transaction engine replaces it in real use):
recover, list the latest version, write latest + 1, retry on FileAlreadyExistsError."""

from __future__ import annotations

import json

from deltalog.logstores.base import LogStore
from deltalog.logstores.errors import FileAlreadyExistsError
from deltalog.txn.commit.locks.base import CommitLock, commit_uri


def latest_version(store: LogStore, log_uri: str) -> int:
    latest = -1
    for status in store.list_from(commit_uri(log_uri, 0)):
        stem = status.name[: -len(".json")]
        if status.name.endswith(".json") and len(stem) == 20 and stem.isdigit():
            latest = max(latest, int(stem))
    return latest


def commit_lines(marker: str) -> list[str]:
    return [
        json.dumps({"commitInfo": {"marker": marker}}),
        json.dumps({"add": {"path": f"{marker}.parquet"}}),
    ]


def commit_once(lock: CommitLock, store: LogStore, log_uri: str, marker: str, attempts: int = 10_000) -> int:
    """Commit one marker; return its version."""
    for _ in range(attempts):
        lock.recover(store, log_uri)
        version = latest_version(store, log_uri) + 1
        try:
            lock.write_commit(store, log_uri, version, commit_lines(marker))
            return version
        except FileAlreadyExistsError:
            continue
    raise AssertionError(f"{marker} did not commit in {attempts} attempts")


def read_markers(store: LogStore, log_uri: str) -> dict[int, list[str]]:
    """version -> markers found in that commit file."""
    found: dict[int, list[str]] = {}
    for version in range(latest_version(store, log_uri) + 1):
        try:
            lines = list(store.read(commit_uri(log_uri, version)))
        except FileNotFoundError:
            continue
        found[version] = [json.loads(line)["commitInfo"]["marker"] for line in lines if "commitInfo" in line]
    return found
