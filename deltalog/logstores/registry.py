"""Finding the LogStore for a table URI.

Stores register under the entry-point group ``deltalog.logstores`` (deltalog's built-ins
too, in its own ``pyproject.toml``); the entry's name is the store's name and its class
lists the URI schemes it serves. The choice, first match wins:

1. the ``logstore=`` argument: a :class:`LogStore` instance or class, an entry-point
   name, or a dotted path (``pkg.mod:Class`` or ``pkg.mod.Class``);
2. the option ``deltalog.logstore.<scheme>.impl``;
3. Delta's spelling ``spark.delta.logStore.<scheme>.impl`` (or ``delta.logStore.<scheme>.impl``);
4. the store registered for the URI's scheme (a plain path is ``file``).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points

from deltalog.logstores.base import LogStore, split_uri
from deltalog.logstores.errors import (
    LogStoreConfigError,
    MissingDependencyError,
    UnknownLogStoreError,
)
from deltalog.logstores.options import StorageOptions

__all__ = [
    "ENTRY_POINT_GROUP",
    "RegisteredStore",
    "installed_stores",
    "load_store_class",
    "logstore_for",
    "store_class_for_uri",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "deltalog.logstores"
_BUILTIN_PREFIX = "deltalog."


@dataclass(frozen=True)
class RegisteredStore:
    """One entry of the ``deltalog.logstores`` group."""

    name: str
    target: str  # "module:Class"
    distribution: str | None

    @property
    def builtin(self) -> bool:
        return self.target.startswith(_BUILTIN_PREFIX)

    def load(self) -> type[LogStore]:
        return _import_class(self.target)


@lru_cache(maxsize=1)
def _registered() -> tuple[RegisteredStore, ...]:
    found: dict[str, RegisteredStore] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", None)
        entry = RegisteredStore(ep.name, ep.value, dist)
        previous = found.get(ep.name)
        if previous is not None and previous.target != entry.target:
            log.warning(
                "two LogStores are registered as %r (%s and %s); using %s",
                ep.name,
                previous.target,
                entry.target,
                previous.target,
            )
            continue
        found[ep.name] = entry
    return tuple(sorted(found.values(), key=lambda e: e.name))


def refresh() -> None:
    """Forget the cached entry points (after installing a backend in this process)."""
    _registered.cache_clear()
    _schemes.cache_clear()


def installed_stores() -> dict[str, RegisteredStore]:
    """Every registered store by name."""
    return {entry.name: entry for entry in _registered()}


@lru_cache(maxsize=1)
def _schemes() -> dict[str, list[tuple[RegisteredStore, type[LogStore]]]]:
    by_scheme: dict[str, list[tuple[RegisteredStore, type[LogStore]]]] = {}
    for entry in _registered():
        try:
            cls = entry.load()
        except Exception as exc:  # a broken third-party package must not break the rest
            log.warning("cannot load the LogStore %r (%s): %s", entry.name, entry.target, exc)
            continue
        for scheme in cls.schemes:
            by_scheme.setdefault(scheme.lower(), []).append((entry, cls))
        for prefix in cls.scheme_prefixes:
            by_scheme.setdefault(_PREFIX_KEY + prefix.lower(), []).append((entry, cls))
    return by_scheme


_PREFIX_KEY = "\0prefix:"


def _candidates(scheme: str) -> list[tuple[RegisteredStore, type[LogStore]]]:
    """Stores naming ``scheme`` exactly, else those serving a prefix of it."""
    by_scheme = _schemes()
    exact = by_scheme.get(scheme)
    if exact:
        return exact
    for key, stores in by_scheme.items():
        if key.startswith(_PREFIX_KEY) and scheme.startswith(key[len(_PREFIX_KEY) :]):
            return stores
    return []


def _import_class(target: str) -> type[LogStore]:
    if ":" in target:
        module_name, _, attr = target.partition(":")
    else:
        module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise LogStoreConfigError(f"not a dotted path to a LogStore class: {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise LogStoreConfigError(f"cannot import {module_name!r} for LogStore {target!r}: {exc}") from exc
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise LogStoreConfigError(f"{module_name!r} has no attribute {attr!r}") from None
    if not (isinstance(obj, type) and issubclass(obj, LogStore)):
        raise LogStoreConfigError(f"{target!r} is not a LogStore subclass")
    return obj


def load_store_class(name_or_path: str) -> type[LogStore]:
    """A store class from an entry-point name or a dotted path."""
    entry = installed_stores().get(name_or_path)
    if entry is not None:
        return entry.load()
    if "." in name_or_path or ":" in name_or_path:
        return _import_class(name_or_path)
    raise UnknownLogStoreError(f"no LogStore is named {name_or_path!r}", installed_stores())


def _check_dependencies(cls: type[LogStore]) -> None:
    for module in cls.requires:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            raise MissingDependencyError(cls.name or cls.__name__, module, cls.extra)


def _configured_impl(scheme: str, options: Mapping[str, str]) -> str | None:
    keys = (
        f"deltalog.logstore.{scheme}.impl",
        f"spark.delta.logStore.{scheme}.impl",
        f"delta.logStore.{scheme}.impl",
    )
    opts = options if isinstance(options, StorageOptions) else StorageOptions(options)
    return opts.first(*keys)


def store_class_for_uri(
    uri: str, options: Mapping[str, str] | None = None, logstore: str | type[LogStore] | None = None
) -> type[LogStore]:
    """The store class that serves ``uri`` (see the module docstring for the order)."""
    scheme = split_uri(uri)[0] or "file"
    if isinstance(logstore, type):
        cls = logstore
    elif isinstance(logstore, str):
        cls = load_store_class(logstore)
    elif (configured := _configured_impl(scheme, options or {})) is not None:
        cls = load_store_class(configured)
    else:
        candidates = _candidates(scheme)
        if not candidates:
            raise UnknownLogStoreError(
                f"no installed LogStore serves the scheme '{scheme}://' (table {uri})",
                installed_stores(),
            )
        third_party = [c for c in candidates if not c[0].builtin]
        if len(third_party) > 1:
            names = ", ".join(entry.name for entry, _ in third_party)
            raise LogStoreConfigError(
                f"several installed LogStores serve '{scheme}://' ({names}); choose one "
                f"with logstore=<name> or the option deltalog.logstore.{scheme}.impl"
            )
        cls = (third_party or candidates)[0][1]
    _check_dependencies(cls)
    return cls


def logstore_for(
    uri: str,
    options: Mapping[str, object] | None = None,
    logstore: str | type[LogStore] | LogStore | None = None,
) -> LogStore:
    """A ready store for ``uri``, configured with ``options``."""
    if isinstance(logstore, LogStore):
        return logstore
    opts = StorageOptions(options)
    cls = store_class_for_uri(uri, opts, logstore)
    return cls(opts)
