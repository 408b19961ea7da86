"""``example://<name>/<path>``: the Delta log in a SQLite database, data files on disk.

SQLite gives the two hard guarantees of the LogStore contract for free:

- **mutual exclusion**: log files are rows keyed by ``(dir, name)``; a plain ``INSERT``
  of an existing key fails, so exactly one writer creates each commit
  (``MutualExclusion.CONDITIONAL_WRITE``);
- **atomic visibility**: a row is committed whole or not at all.

Listing is ``ORDER BY name`` (SQLite's BINARY collation compares UTF-8 bytes, exactly
the order Delta needs), merged with the files on disk in the same directory, because
checkpoints are Parquet files written through :meth:`ExampleLogStore.filesystem`.
"""

from __future__ import annotations

import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from deltalog.logstores import (
    FileAlreadyExistsError,
    FileStatus,
    LogStore,
    LogStoreConfigError,
    MutualExclusion,
    StoreSemantics,
    split_uri,
)

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["ROOT_OPTION", "ExampleLogStore"]

#: Storage option naming the directory that holds the databases and data files.
ROOT_OPTION = "EXAMPLE_ROOT"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS log_files (
    dir     TEXT    NOT NULL,
    name    TEXT    NOT NULL,
    content BLOB    NOT NULL,
    mtime   INTEGER NOT NULL,
    PRIMARY KEY (dir, name)
)
"""


class ExampleLogStore(LogStore):
    """Delta log files in SQLite (one database per ``<name>``), data files on local disk."""

    name = "example"
    schemes = ("example",)
    default_semantics = StoreSemantics(
        MutualExclusion.CONDITIONAL_WRITE, partial_write_visible=False, consistent_listing=True
    )

    # -- locations ---------------------------------------------------------------------

    @property
    def root(self) -> str:
        configured = self.options.first(ROOT_OPTION)
        return os.path.abspath(configured or os.path.join(tempfile.gettempdir(), "deltalog-example-backend"))

    def _parts(self, uri: str) -> tuple[str, str, str]:
        """``example://db/a/b/file`` -> ``("db", "a/b", "file")``."""
        scheme, rest = split_uri(uri)
        if scheme not in self.schemes:
            raise LogStoreConfigError(f"{type(self).__name__} serves {'/'.join(self.schemes)}://, not {uri}")
        database, _, path = rest.partition("/")
        if not _NAME.fullmatch(database):
            raise LogStoreConfigError(
                f"{uri}: the database name after {scheme}:// must be letters, digits, '.', '_' or '-'"
            )
        directory, _, name = "/".join(p for p in path.split("/") if p).rpartition("/")
        return database, directory, name

    def _uri(self, database: str, directory: str, name: str) -> str:
        path = f"{directory}/{name}" if directory else name
        return f"{self.schemes[0]}://{database}/{path}"

    def _disk_path(self, database: str, directory: str, name: str = "") -> str:
        return os.path.join(self.root, database, *directory.split("/"), name)

    def _connect(self, database: str) -> sqlite3.Connection:
        os.makedirs(self.root, exist_ok=True)
        connection = sqlite3.connect(os.path.join(self.root, f"{database}.sqlite3"), timeout=60.0, isolation_level=None)
        try:
            connection.execute("PRAGMA auto_vacuum = FULL")  # deleted files give space back
            connection.execute(_SCHEMA)
        except BaseException:
            connection.close()
            raise
        return connection

    # -- the contract ------------------------------------------------------------------

    def read(self, path: str) -> Iterator[str]:
        return iter(_lines(self.read_bytes(path)))

    def read_bytes(self, path: str) -> bytes:
        database, directory, name = self._parts(path)
        connection = self._connect(database)
        try:
            row = connection.execute(
                "SELECT content FROM log_files WHERE dir = ? AND name = ?", (directory, name)
            ).fetchone()
        finally:
            connection.close()
        if row is not None:
            return bytes(row[0])
        try:  # a checkpoint or data file written through filesystem()
            with open(self._disk_path(database, directory, name), "rb") as handle:
                return handle.read()
        except (FileNotFoundError, IsADirectoryError):
            raise FileNotFoundError(path) from None

    def write(self, path: str, lines: Iterable[str], overwrite: bool = False) -> None:
        database, directory, name = self._parts(path)
        if not name:
            raise LogStoreConfigError(f"{path} names a directory, not a file")
        content = b"".join(line.encode("utf-8") + b"\n" for line in lines)  # all or nothing
        if not overwrite and os.path.exists(self._disk_path(database, directory, name)):
            raise FileAlreadyExistsError(path)
        connection = self._connect(database)
        try:
            connection.execute(
                f"{self._insert(overwrite)} INTO log_files (dir, name, content, mtime) VALUES (?, ?, ?, ?)",
                (directory, name, content, int(time.time() * 1000)),
            )
        except sqlite3.IntegrityError:
            raise FileAlreadyExistsError(path) from None
        finally:
            connection.close()

    def _insert(self, overwrite: bool) -> str:
        """The SQL verb: a plain INSERT fails on an existing key (put-if-absent)."""
        return "INSERT OR REPLACE" if overwrite else "INSERT"

    def list_from(self, path: str) -> Iterator[FileStatus]:
        database, directory, start = self._parts(path)
        found = self._log_files(database, directory, start) + self._disk_files(database, directory, start)
        return iter(self._order(found))

    def _log_files(self, database: str, directory: str, start: str) -> list[FileStatus]:
        connection = self._connect(database)
        try:
            rows = connection.execute(
                "SELECT name, length(content), mtime FROM log_files WHERE dir = ? AND name >= ? ORDER BY name",
                (directory, start),
            ).fetchall()
        finally:
            connection.close()
        return [FileStatus(self._uri(database, directory, n), size, mtime) for n, size, mtime in rows]

    def _disk_files(self, database: str, directory: str, start: str) -> list[FileStatus]:
        try:
            entries = list(os.scandir(self._disk_path(database, directory)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in entries:
            if entry.name >= start and entry.is_file():
                stat = entry.stat()
                found.append(
                    FileStatus(self._uri(database, directory, entry.name), stat.st_size, stat.st_mtime_ns // 10**6)
                )
        return found

    def _order(self, found: list[FileStatus]) -> list[FileStatus]:
        """Sorted by name as UTF-8 bytes (Python compares str by code point: the same order)."""
        return sorted(found, key=lambda status: status.name)

    def resolve_path(self, path: str) -> str:
        return self._uri(*self._parts(path))

    def delete(self, path: str) -> None:
        database, directory, name = self._parts(path)
        connection = self._connect(database)
        try:
            connection.execute("DELETE FROM log_files WHERE dir = ? AND name = ?", (directory, name))
        finally:
            connection.close()
        try:
            os.unlink(self._disk_path(database, directory, name))
        except (FileNotFoundError, IsADirectoryError):
            pass

    # -- data files --------------------------------------------------------------------

    def filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs as pafs

        return pafs.LocalFileSystem()

    def fs_path(self, path: str) -> str:
        database, directory, name = self._parts(path)
        return self._disk_path(database, directory, name).rstrip(os.sep)


def _lines(content: bytes) -> list[str]:
    lines = content.decode("utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines
