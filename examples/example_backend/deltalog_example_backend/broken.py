"""A deliberately broken store, to show what the conformance kit catches.

It declares ``CONDITIONAL_WRITE`` like :class:`ExampleLogStore`, but

- ``write(path, lines, overwrite=False)`` silently replaces an existing file
  (``INSERT OR REPLACE``): two writers of one commit version both "succeed" and one
  commit is lost -- and since the store claims put-if-absent, the engine would not
  protect it with a commit lock;
- ``list_from`` returns files in the order they were written, not sorted by name.

Everything else is the working example store, so the kit must fail exactly the checks
about mutual exclusion and listing order. Never use it for a real table.
"""

from __future__ import annotations

from deltalog.logstores import FileStatus
from deltalog_example_backend.store import ExampleLogStore

__all__ = ["BrokenLogStore"]


class BrokenLogStore(ExampleLogStore):
    """``broken://<name>/<path>``: claims put-if-absent, overwrites; lists unsorted."""

    name = "example-broken"
    schemes = ("broken",)

    def _insert(self, overwrite: bool) -> str:
        return "INSERT OR REPLACE"  # BUG (on purpose): never refuses an existing file

    def _log_files(self, database: str, directory: str, start: str) -> list[FileStatus]:
        connection = self._connect(database)
        try:
            rows = connection.execute(
                "SELECT name, length(content), mtime FROM log_files WHERE dir = ? AND name >= ? "
                "ORDER BY rowid",  # BUG (on purpose): insertion order, not name order
                (directory, start),
            ).fetchall()
        finally:
            connection.close()
        return [FileStatus(self._uri(database, directory, n), size, mtime) for n, size, mtime in rows]

    def _order(self, found: list[FileStatus]) -> list[FileStatus]:
        return found  # BUG (on purpose): no sort
