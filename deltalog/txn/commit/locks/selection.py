"""Choosing the commit lock from the store's declared semantics and the user's setting.

================================================  =================  ==========================
store declares                                    ``lock="auto"``    also allowed
================================================  =================  ==========================
CONDITIONAL_WRITE / ATOMIC_RENAME, atomic files   none               in-process, redis://
CONDITIONAL_WRITE / ATOMIC_RENAME, partial files  in-process         redis://
NONE (a plain put)                                refused            redis://; in-process with
                                                                     ``single_writer=True``
================================================  =================  ==========================
"""

from __future__ import annotations

from deltalog.logstores.base import LogStore, MutualExclusion, StoreSemantics
from deltalog.txn.commit.locks.base import CommitLock
from deltalog.txn.commit.locks.errors import CommitLockConfigError, UnsafeCommitLockError
from deltalog.txn.commit.locks.in_process import InProcessCommitLock
from deltalog.txn.commit.locks.none import NoCommitLock
from deltalog.txn.commit.locks.registry import lock_from_uri

__all__ = ["choose_commit_lock", "describe_default_lock"]

_SAFE_CHOICES = (
    'lock="redis://HOST:PORT/DB" when several processes or machines write the table, or '
    'lock="in-process" with single_writer=True when this one process is its only writer'
)


def _name(store: LogStore) -> str:
    return store.name or type(store).__name__


def describe_default_lock(semantics: StoreSemantics) -> str:
    """What ``lock="auto"`` does on a store with these semantics (for ``deltalog stores``)."""
    if semantics.mutual_exclusion is MutualExclusion.NONE:
        return "required: redis://... (many writers) or in-process with single_writer=True"
    if semantics.partial_write_visible:
        return "in-process (partial writes are visible); redis://... allowed"
    return "none (the store's put-if-absent is enough); in-process or redis://... allowed"


def _refuse_none(store: LogStore) -> UnsafeCommitLockError:
    sem = store.semantics
    if sem.mutual_exclusion is MutualExclusion.NONE:
        why = (
            f"the store {_name(store)!r} has no mutual exclusion (a plain put), so two writers "
            "could both publish the same version and one commit would be lost"
        )
    else:
        why = (
            f"the store {_name(store)!r} shows partial writes, so commits must at least be "
            "serialized inside the process"
        )
    return UnsafeCommitLockError(f'lock="none" is unsafe here: {why}. Use {_SAFE_CHOICES}.')


def _check_in_process(store: LogStore, single_writer: bool) -> None:
    if store.semantics.mutual_exclusion is MutualExclusion.NONE and not single_writer:
        raise UnsafeCommitLockError(
            f'lock="in-process" on the store {_name(store)!r}, which has no mutual exclusion, '
            "only serializes the threads of this process; another process could publish the "
            "same version and a commit would be lost. Pass single_writer=True if this process "
            'is really the table\'s only writer, or use lock="redis://HOST:PORT/DB".'
        )


def choose_commit_lock(
    store: LogStore, lock: str | CommitLock | None = None, *, single_writer: bool = False
) -> CommitLock:
    """The commit lock for ``store``.

    ``lock`` is ``None`` or ``"auto"`` (choose from the store's semantics), ``"none"``,
    ``"in-process"``, a URI of a registered lock scheme (``redis://``, ``rediss://``),
    or a ready :class:`CommitLock`. ``single_writer=True`` declares this process the
    table's only writer, which a store without mutual exclusion needs before it accepts
    an in-process lock. Unsafe combinations raise :class:`UnsafeCommitLockError`.
    """
    sem = store.semantics
    exclusive = sem.mutual_exclusion is not MutualExclusion.NONE
    if isinstance(lock, CommitLock):
        if isinstance(lock, NoCommitLock) and not (exclusive and not sem.partial_write_visible):
            raise _refuse_none(store)
        if isinstance(lock, InProcessCommitLock):
            _check_in_process(store, single_writer or lock.single_writer)
        return lock
    if lock is not None and not isinstance(lock, str):
        raise CommitLockConfigError(f"lock must be a string or a CommitLock, got {type(lock).__name__}")
    setting = (lock or "auto").strip()
    key = setting.lower()
    if key == "auto":
        if not exclusive:
            if single_writer:
                return InProcessCommitLock(single_writer=True)
            raise UnsafeCommitLockError(
                f"the store {_name(store)!r} ({sem.describe()}) cannot keep two writers from "
                f"publishing the same version, so deltalog will not pick a commit lock for it. "
                f"Choose one: {_SAFE_CHOICES}."
            )
        return InProcessCommitLock() if sem.partial_write_visible else NoCommitLock()
    if key == "none":
        if not exclusive or sem.partial_write_visible:
            raise _refuse_none(store)
        return NoCommitLock()
    if key in ("in-process", "in_process", "inprocess"):
        _check_in_process(store, single_writer)
        return InProcessCommitLock(single_writer=single_writer)
    if "://" in setting:
        return lock_from_uri(setting, store.options)
    raise CommitLockConfigError(
        f"unknown commit lock {setting!r}: use 'auto', 'none', 'in-process', or a lock URI "
        "such as 'redis://HOST:PORT/DB'"
    )
