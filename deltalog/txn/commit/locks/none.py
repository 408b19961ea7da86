"""The "none" strategy: rely on the store's own put-if-absent."""

from __future__ import annotations

from collections.abc import Iterable

from deltalog.logstores.base import LogStore
from deltalog.txn.commit.locks.base import CommitLock, commit_uri

__all__ = ["NoCommitLock"]


class NoCommitLock(CommitLock):
    """Publish with ``store.write(commit, lines, overwrite=False)`` and nothing else.

    Safe only on stores whose semantics declare mutual exclusion (CONDITIONAL_WRITE or
    ATOMIC_RENAME): the store itself lets exactly one writer create the file.
    """

    name = "none"

    def write_commit(self, store: LogStore, log_uri: str, version: int, lines: Iterable[str]) -> None:
        store.write(commit_uri(log_uri, version), lines, overwrite=False)
