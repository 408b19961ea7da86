"""Pluggable storage for the Delta log: the LogStore contract, its registry, and the
built-in backends.

Write a backend by subclassing :class:`LogStore`, declaring its semantics and
registering it under the ``deltalog.logstores`` entry-point group; see
``docs/writing-a-backend.md``.
"""

from deltalog.logstores.base import (
    FileStatus,
    LogStore,
    LogStoreSpec,
    MutualExclusion,
    StoreSemantics,
    split_uri,
)
from deltalog.logstores.errors import (
    AmbiguousWriteError,
    FileAlreadyExistsError,
    LogStoreConfigError,
    LogStoreError,
    MissingDependencyError,
    TransientStorageError,
    UnknownLogStoreError,
)
from deltalog.logstores.options import StorageOptions
from deltalog.logstores.registry import (
    ENTRY_POINT_GROUP,
    installed_stores,
    load_store_class,
    logstore_for,
    store_class_for_uri,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "AmbiguousWriteError",
    "FileAlreadyExistsError",
    "FileStatus",
    "LogStore",
    "LogStoreConfigError",
    "LogStoreError",
    "LogStoreSpec",
    "MissingDependencyError",
    "MutualExclusion",
    "StorageOptions",
    "StoreSemantics",
    "TransientStorageError",
    "UnknownLogStoreError",
    "installed_stores",
    "load_store_class",
    "logstore_for",
    "split_uri",
    "store_class_for_uri",
]
