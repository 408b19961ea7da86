"""The sandbox one check runs in: a store and a directory of its own."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from deltalog.logstores.base import LogStore

__all__ = ["CheckContext"]

log = logging.getLogger(__name__)


class CheckContext:
    """A store plus a fresh directory URI (``base_uri``) that only this check uses.

    Every URI a check touches comes from :meth:`uri`, which remembers it, so
    :meth:`cleanup` can delete what the check wrote (log files through the store,
    data files through the data filesystem).
    """

    def __init__(self, store: LogStore, base_uri: str) -> None:
        self.store = store
        self.base_uri = base_uri.rstrip("/")
        self._touched: list[str] = []
        self._directories: list[str] = []

    def uri(self, *parts: str) -> str:
        """``base_uri/part/part``; remembered for cleanup."""
        uri = "/".join((self.base_uri, *parts))
        self._touched.append(uri)
        return uri

    def directory(self, *parts: str) -> str:
        """``base_uri/part/part`` for a directory of many files. :meth:`cleanup` removes it
        whole through the data filesystem (one bulk delete where the store has one), then
        deletes through the store what that left (log files a store keeps elsewhere);
        :meth:`holds_log_files` names its sub-directories that need the second step."""
        uri = "/".join((self.base_uri, *parts))
        self._directories.append(uri)
        return uri

    def holds_log_files(self, directory: str) -> None:
        """``directory`` (under a :meth:`directory`) holds files written through the store."""
        self._directories.append(directory)

    def write(self, uri: str, lines: Iterable[str], overwrite: bool = False) -> None:
        self.store.write(uri, lines, overwrite=overwrite)

    def read(self, uri: str) -> list[str]:
        return list(self.store.read(uri))

    def list_dir(self, directory: str) -> list[str]:
        """The names ``list_from`` returns for all of ``directory`` (from ``!``, below every
        name a table holds, ``.`` of temp files included)."""
        return [status.name for status in self.store.list_from(f"{directory}/!")]

    def list_names(self, start_uri: str) -> list[str]:
        """The names ``list_from(start_uri)`` returns, in the store's order."""
        return [status.name for status in self.store.list_from(start_uri)]

    def cleanup(self) -> list[str]:
        """Delete every file this check named; returns the problems met (also logged)."""
        problems: list[str] = []
        for uri in dict.fromkeys(reversed(self._touched)):
            try:
                self.store.delete(uri)
            except Exception as exc:  # cleanup must not hide the check's own result
                problems.append(f"cannot delete {uri}: {type(exc).__name__}: {exc}")
        self._touched.clear()
        for directory in dict.fromkeys(reversed(self._directories)):
            problems.extend(remove_tree(self.store, directory))
            problems.extend(_delete_listed(self.store, directory))
        self._directories.clear()
        problems.extend(remove_tree(self.store, self.base_uri))
        for problem in problems:
            log.warning("conformance cleanup: %s", problem)
        return problems


def _delete_listed(store: LogStore, directory: str) -> list[str]:
    """Delete, through the store and on a few threads, every file it lists in ``directory``."""
    from concurrent.futures import ThreadPoolExecutor

    try:
        paths = [status.path for status in store.list_from(f"{directory}/!")]
    except Exception as exc:
        return [f"cannot list {directory}: {type(exc).__name__}: {exc}"]
    problems: list[str] = []

    def delete(path: str) -> None:
        try:
            store.delete(path)
        except Exception as exc:
            problems.append(f"cannot delete {path}: {type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(delete, paths))
    return problems


def remove_tree(store: LogStore, uri: str) -> list[str]:
    """Remove the directory ``uri`` through the store's data filesystem, if it exists."""
    try:
        import pyarrow.fs as pafs

        fs = store.filesystem()
        path = store.fs_path(uri)
        if fs.get_file_info(path).type == pafs.FileType.Directory:
            try:
                fs.delete_dir(path)
            except FileNotFoundError:
                # GCS: the objects are deleted, then the directory's marker object, which
                # a directory made only by writing files into it never had
                if fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True)):
                    raise
    except Exception as exc:
        return [f"cannot remove {uri}: {type(exc).__name__}: {exc}"]
    return []
