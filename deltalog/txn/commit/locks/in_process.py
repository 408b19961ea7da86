"""The "in-process" strategy: one ``threading.Lock`` per table log, process-wide.

Held around the store's write, it makes threads of one process commit to a table one at
a time, so they do not waste attempts on a version another thread is writing, and no
thread lists the log while another thread's partially visible file is being written
(Delta's ``isCommitLockEnabled``). It does nothing across processes: on a store
without mutual exclusion it is only safe when this process is the table's only writer.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from deltalog.logstores.base import LogStore
from deltalog.txn.commit.locks.base import CommitLock, commit_uri

__all__ = ["InProcessCommitLock", "path_lock"]


class _PathLock:
    """A lock that can be weakly referenced (``threading.Lock`` cannot)."""

    __slots__ = ("__weakref__", "lock", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()


_REGISTRY: weakref.WeakValueDictionary[str, _PathLock] = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


def path_lock(resolved_log_path: str) -> _PathLock:
    """The process-wide lock of one resolved log path.

    The registry holds locks weakly: a lock lives while some writer holds a reference,
    so the registry never grows with the number of tables ever touched.
    """
    key = resolved_log_path.rstrip("/")
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(key)
        if found is None:
            found = _PathLock(key)
            _REGISTRY[key] = found
        return found


class InProcessCommitLock(CommitLock):
    """Serialize commits to one table among the threads of this process."""

    name = "in-process"

    def __init__(self, single_writer: bool = False) -> None:
        #: Whether the user declared this process the table's only writer (required on
        #: stores without mutual exclusion; recorded for :func:`choose_commit_lock`).
        self.single_writer = single_writer

    def write_commit(self, store: LogStore, log_uri: str, version: int, lines: Iterable[str]) -> None:
        held = path_lock(store.resolve_path(log_uri))
        with held.lock:
            store.write(commit_uri(log_uri, version), lines, overwrite=False)

    def __repr__(self) -> str:
        return f"InProcessCommitLock(single_writer={self.single_writer})"
