"""Commit-lock strategies: how a commit file is published so that exactly one writer
wins each version. See ``docs/locks.md``."""

from deltalog.txn.commit.locks.base import CommitLock, commit_file_name, commit_uri
from deltalog.txn.commit.locks.errors import (
    CommitLockConfigError,
    CommitLockError,
    CommitOutcomeUnknownError,
    LockLostError,
    LockTimeoutError,
    LockUnavailableError,
    MissingCommitError,
    UnrecoverableClaimError,
    UnsafeCommitLockError,
)
from deltalog.txn.commit.locks.in_process import InProcessCommitLock
from deltalog.txn.commit.locks.none import NoCommitLock
from deltalog.txn.commit.locks.registry import lock_schemes, register_lock_scheme
from deltalog.txn.commit.locks.selection import choose_commit_lock, describe_default_lock

__all__ = [
    "CommitLock",
    "CommitLockConfigError",
    "CommitLockError",
    "CommitOutcomeUnknownError",
    "InProcessCommitLock",
    "LockLostError",
    "LockTimeoutError",
    "LockUnavailableError",
    "MissingCommitError",
    "NoCommitLock",
    "UnrecoverableClaimError",
    "UnsafeCommitLockError",
    "choose_commit_lock",
    "commit_file_name",
    "commit_uri",
    "describe_default_lock",
    "lock_schemes",
    "register_lock_scheme",
]
