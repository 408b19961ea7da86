"""The commit-lock interface the transaction engine calls for every commit.

A :class:`CommitLock` publishes ``<log_uri>/<version:020d>.json`` so that of several
writers racing for one version exactly one wins and the others get
:class:`~deltalog.logstores.errors.FileAlreadyExistsError`. How it does so depends on the
store (see :func:`deltalog.txn.commit.locks.selection.choose_commit_lock`): nothing more than
the store's own put-if-absent, an in-process lock around it, or an external service
(Redis) with per-version fencing for stores without mutual exclusion.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from types import TracebackType
from typing import TypeVar

from deltalog.logstores.base import LogStore
from deltalog.txn.protocol.file_names import delta_file, log_path

__all__ = ["CommitLock", "commit_file_name", "commit_uri"]

_Lock = TypeVar("_Lock", bound="CommitLock")


def commit_file_name(version: int) -> str:
    """``00000000000000000042.json`` for version 42."""
    return delta_file(version)


def commit_uri(log_uri: str, version: int) -> str:
    """The URI of commit ``version`` in the ``_delta_log`` at ``log_uri``."""
    return log_path(log_uri, delta_file(version))


class CommitLock(ABC):
    """How commits are published to a table's log.

    Instances may be shared by threads and reused across tables and transactions.
    """

    #: Short name: ``"none"``, ``"in-process"``, ``"redis"``.
    name: str = ""

    @abstractmethod
    def write_commit(self, store: LogStore, log_uri: str, version: int, lines: Iterable[str]) -> None:
        """Publish ``lines`` as ``log_uri/%020d.json`` of ``version``.

        Raises :class:`~deltalog.logstores.errors.FileAlreadyExistsError` when the
        version is already taken (the engine then checks conflicts and retries at a
        later version) and a :class:`~deltalog.txn.commit.locks.errors.CommitLockError` when
        the lock itself fails.
        """

    def recover(self, store: LogStore, log_uri: str) -> None:  # noqa: B027 - optional hook
        """Finish a version that was claimed but whose file is not there yet.

        The engine calls this before listing the log to pick the next version; readers
        may call it too. A no-op for locks that never claim ahead of the store.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and background threads. Idempotent."""

    def __enter__(self: _Lock) -> _Lock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
