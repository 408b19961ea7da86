"""Lock strategies configured by a URI (``redis://...``), found by URI scheme.

``txn`` must not import ``contrib`` at module level, so the Redis strategy is named here
as a dotted path and imported only when a ``redis://`` lock is asked for. Other
packages add schemes with :func:`register_lock_scheme` or under the entry-point group
``deltalog.commit_locks`` (entry name = URI scheme, value = ``module:factory``). A factory
is called as ``factory(uri, options)`` where ``options`` are the store's storage options,
and returns a :class:`~deltalog.txn.commit.locks.base.CommitLock`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points

from deltalog.txn.commit.locks.base import CommitLock
from deltalog.txn.commit.locks.errors import CommitLockConfigError

__all__ = ["ENTRY_POINT_GROUP", "LockFactory", "lock_from_uri", "lock_schemes", "register_lock_scheme"]

ENTRY_POINT_GROUP = "deltalog.commit_locks"

LockFactory = Callable[[str, Mapping[str, str]], CommitLock]

_BUILTIN: dict[str, str] = {
    "redis": "deltalog.contrib.redis_lock:redis_lock_from_uri",
    "rediss": "deltalog.contrib.redis_lock:redis_lock_from_uri",
}
_REGISTERED: dict[str, LockFactory | str] = {}
_LOCK = threading.Lock()


def register_lock_scheme(scheme: str, factory: LockFactory | str) -> None:
    """Make ``lock="<scheme>://..."`` build a lock with ``factory`` (a callable or a
    ``"module:attr"`` path imported on first use)."""
    with _LOCK:
        _REGISTERED[scheme.lower()] = factory


def lock_schemes() -> list[str]:
    """Every URI scheme a lock can be configured with."""
    names = set(_BUILTIN) | set(_REGISTERED)
    names.update(ep.name.lower() for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(names)


def _resolve(scheme: str) -> LockFactory | str | None:
    with _LOCK:
        found = _REGISTERED.get(scheme)
    if found is not None:
        return found
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name.lower() == scheme:
            return str(ep.value)
    return _BUILTIN.get(scheme)


def _import(target: str) -> LockFactory:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommitLockConfigError(
            f"cannot load the commit lock {target!r}: {exc}. For redis:// locks run pip install 'deltalog[redis]'"
        ) from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise CommitLockConfigError(f"{target!r} is not a commit-lock factory")
    return factory  # type: ignore[no-any-return]


def lock_from_uri(uri: str, options: Mapping[str, str]) -> CommitLock:
    """Build the lock a ``scheme://...`` setting names."""
    scheme, sep, _ = uri.partition("://")
    found = _resolve(scheme.lower()) if sep else None
    if found is None:
        raise CommitLockConfigError(
            f"unknown commit lock {_scheme_only(uri)!r}: use 'auto', 'none', 'in-process' or "
            f"a URI with one of the schemes {', '.join(lock_schemes())}"
        )
    factory = _import(found) if isinstance(found, str) else found
    lock = factory(uri, options)
    if not isinstance(lock, CommitLock):
        raise CommitLockConfigError(f"the factory for {scheme}:// returned {type(lock).__name__}, not a CommitLock")
    return lock


def _scheme_only(uri: str) -> str:
    """A lock setting safe to show: a URI is cut to its scheme (it may hold a password)."""
    scheme, sep, _ = uri.partition("://")
    return f"{scheme}://..." if sep else uri
