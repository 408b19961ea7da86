"""Errors raised by LogStores and by the LogStore registry."""

from __future__ import annotations

from collections.abc import Iterable

from deltalog.errors import DeltaError

__all__ = [
    "AmbiguousWriteError",
    "FileAlreadyExistsError",
    "LogStoreConfigError",
    "LogStoreError",
    "MissingDependencyError",
    "TransientStorageError",
    "UnknownLogStoreError",
]


class LogStoreError(DeltaError):
    """A storage operation failed."""


class FileAlreadyExistsError(LogStoreError, FileExistsError):
    """``write(path, lines, overwrite=False)`` found ``path`` already there.

    This is the mutual-exclusion signal the transaction engine relies on: another
    writer created the file first. It is a :class:`FileExistsError`, as Delta's
    ``LogStore`` raises ``java.nio.file.FileAlreadyExistsException``.
    """

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} already exists")
        self.path = path


class TransientStorageError(LogStoreError):
    """A storage request failed in a way that may succeed when tried again
    (throttling, a 5xx answer, a reset connection) and the store's own retries ran out."""


class AmbiguousWriteError(LogStoreError):
    """A write may or may not have landed (for example a timeout after the request
    was sent). The caller must find out by reading the file back."""

    def __init__(self, path: str, cause: BaseException | None = None) -> None:
        detail = f": {cause}" if cause is not None else ""
        super().__init__(f"the outcome of writing {path} is unknown{detail}")
        self.path = path


class LogStoreConfigError(LogStoreError, ValueError):
    """A store was configured wrongly (bad option, bad override, bad URI)."""


class UnknownLogStoreError(LogStoreConfigError):
    """No installed LogStore serves a URI scheme, or a named store does not exist."""

    def __init__(self, what: str, installed: Iterable[str]) -> None:
        names = ", ".join(sorted(installed)) or "(none)"
        super().__init__(
            f"{what}. Installed LogStores: {names}. Install the backend's extra "
            "(deltalog[s3], deltalog[azure], deltalog[gcs], deltalog[all]) or a package "
            "that registers one under the 'deltalog.logstores' entry-point group, or "
            "choose one with logstore=... / deltalog.logstore.<scheme>.impl."
        )


class MissingDependencyError(LogStoreError, ImportError):
    """A LogStore exists for the scheme but a package it needs is not installed."""

    def __init__(self, store: str, module: str, extra: str | None) -> None:
        hint = f"pip install 'deltalog[{extra}]'" if extra else f"pip install {module}"
        super().__init__(
            f"the LogStore '{store}' needs the Python package '{module}', which is not installed; run: {hint}"
        )
        self.store = store
        self.module = module
        self.extra = extra
