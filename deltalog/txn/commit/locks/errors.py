"""Errors raised by commit locks.

Every error here derives from :class:`CommitLockError` (a :class:`~deltalog.errors.DeltaError`).
A lock that loses a race for a version raises
:class:`~deltalog.logstores.errors.FileAlreadyExistsError` instead, exactly as a store
does, so the transaction engine has one conflict signal whatever the lock.
"""

from __future__ import annotations

from deltalog.errors import DeltaError
from deltalog.logstores.errors import AmbiguousWriteError

__all__ = [
    "CommitLockConfigError",
    "CommitLockError",
    "CommitOutcomeUnknownError",
    "LockLostError",
    "LockTimeoutError",
    "LockUnavailableError",
    "MissingCommitError",
    "UnrecoverableClaimError",
    "UnsafeCommitLockError",
]


class CommitLockError(DeltaError):
    """A commit lock could not do its job; the message says what to do."""


class CommitLockConfigError(CommitLockError, ValueError):
    """A lock setting is malformed or names an unknown strategy."""


class UnsafeCommitLockError(CommitLockConfigError):
    """The chosen lock cannot keep two writers from publishing the same version on
    this store (for example ``lock="none"`` on a store without mutual exclusion)."""


class LockUnavailableError(CommitLockError):
    """The lock service (Redis) cannot be reached or refused us. Unless the error is a
    :class:`CommitOutcomeUnknownError`, nothing was published."""


class CommitOutcomeUnknownError(LockUnavailableError, AmbiguousWriteError):
    """The lock service failed after this writer may have claimed the version.

    The commit may still appear: the next writer (or :meth:`CommitLock.recover`) publishes
    a claimed version from the claimant's temp file. Resolve it like any ambiguous write:
    call ``lock.recover(store, log_uri)`` once the lock service is back, then read the
    commit file back and look for this transaction's ``txnId``.
    """

    def __init__(self, path: str, message: str) -> None:
        Exception.__init__(self, message)
        self.path = path


class LockTimeoutError(CommitLockError):
    """Another writer held the table's lease for longer than the acquire timeout."""


class LockLostError(CommitLockError):
    """This writer's claim of a version vanished before it published (the lock service
    was restarted or flushed). Nothing was published; retry the commit."""


class MissingCommitError(CommitLockError):
    """The lock service records a version as committed but its file is missing, or the
    previous version of the one being written does not exist."""


class UnrecoverableClaimError(CommitLockError):
    """A version was claimed, its file was never written and the claimant's temp file is
    gone, so nobody can finish it. An operator must decide (see docs/locks.md)."""
