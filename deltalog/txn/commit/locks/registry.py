"""Lock strategies configured by a URI (``redis://...``), found by URI scheme.

Lock strategies register the way stores do (``deltalog.logstores``): under the entry-point
group ``deltalog.commit_locks``, entry name = URI scheme, value = ``module:factory``.
deltalog's own Redis lock (``redis``, ``rediss``) is registered so in its
``pyproject.toml``; ``txn`` never names it. At run time :func:`register_lock_scheme` adds a
scheme too (it wins over an entry point of the same name). A factory is called as
``factory(uri, options)`` where ``options`` are the store's storage options, and returns a
:class:`~deltalog.txn.commit.locks.base.CommitLock`. The factory's module is imported only
when a lock with its scheme is asked for.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Mapping
from functools import lru_cache
from importlib.metadata import entry_points

from deltalog.txn.commit.locks.base import CommitLock
from deltalog.txn.commit.locks.errors import CommitLockConfigError

__all__ = [
    "ENTRY_POINT_GROUP",
    "LockFactory",
    "lock_from_uri",
    "lock_schemes",
    "refresh",
    "register_lock_scheme",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "deltalog.commit_locks"

LockFactory = Callable[[str, Mapping[str, str]], CommitLock]

_REGISTERED: dict[str, LockFactory | str] = {}
_LOCK = threading.Lock()


def register_lock_scheme(scheme: str, factory: LockFactory | str) -> None:
    """Make ``lock="<scheme>://..."`` build a lock with ``factory`` (a callable or a
    ``"module:attr"`` path imported on first use)."""
    with _LOCK:
        _REGISTERED[scheme.lower()] = factory


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, str]:
    """Scheme → ``module:factory`` of every installed entry point (first one wins)."""
    found: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        scheme, target = ep.name.lower(), str(ep.value)
        previous = found.get(scheme)
        if previous is not None and previous != target:
            log.warning(
                "two commit locks are registered for %s:// (%s and %s); using %s", scheme, previous, target, previous
            )
            continue
        found[scheme] = target
    return found


def refresh() -> None:
    """Forget the cached entry points (after installing a lock package in this process)."""
    _entry_points.cache_clear()


def lock_schemes() -> list[str]:
    """Every URI scheme a lock can be configured with: entry points and registered ones."""
    with _LOCK:
        registered = set(_REGISTERED)
    return sorted(registered | set(_entry_points()))


def _resolve(scheme: str) -> LockFactory | str | None:
    with _LOCK:
        found = _REGISTERED.get(scheme)
    if found is not None:
        return found
    return _entry_points().get(scheme)


def _import(scheme: str, target: str) -> LockFactory:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommitLockConfigError(
            f"cannot load the commit lock {target!r} registered for {scheme}://: {exc}"
        ) from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise CommitLockConfigError(f"{target!r}, registered for {scheme}://, is not a commit-lock factory")
    return factory  # type: ignore[no-any-return]


def lock_from_uri(uri: str, options: Mapping[str, str]) -> CommitLock:
    """Build the lock a ``scheme://...`` setting names."""
    scheme, sep, _ = uri.partition("://")
    scheme = scheme.lower()
    found = _resolve(scheme) if sep else None
    if found is None:
        schemes = lock_schemes()
        known = (
            f"a URI with one of the installed lock schemes {', '.join(s + '://' for s in schemes)}"
            if schemes
            else f"a lock URI; no lock scheme is installed (none in the entry-point group {ENTRY_POINT_GROUP!r}: "
            "reinstall deltalog)"
        )
        raise CommitLockConfigError(
            f"unknown commit lock {_scheme_only(uri)!r}: use 'auto', 'none', 'in-process' or {known}"
        )
    factory = _import(scheme, found) if isinstance(found, str) else found
    lock = factory(uri, options)
    if not isinstance(lock, CommitLock):
        raise CommitLockConfigError(f"the factory for {scheme}:// returned {type(lock).__name__}, not a CommitLock")
    return lock


def _scheme_only(uri: str) -> str:
    """A lock setting safe to show: a URI is cut to its scheme (it may hold a password)."""
    scheme, sep, _ = uri.partition("://")
    return f"{scheme}://..." if sep else uri
