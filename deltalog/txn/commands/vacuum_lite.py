"""VACUUM LITE: the files to delete found in the log instead of a listing of the table.

Delta's ``VacuumCommand`` in ``LITE`` mode (``VACUUM t LITE``, or
``spark.databricks.delta.vacuum.lite.enabled``). Listing a large table's directory is what
makes VACUUM slow on object stores; the files VACUUM may delete are, apart from files no
commit ever named (a failed writer's leftovers, which only a full VACUUM finds), those that
``remove`` actions and change-data files of old commits name. LITE reads the commits from the
one after the last VACUUM's window up to the latest commit outside the retention window:

- the latest commit outside the window is the one active at ``now - retention``; with none
  (the table is younger than the retention) there is nothing to delete;
- each removed file (and its deletion-vector file) counts as modified at its
  ``deletionTimestamp``, each ``cdc`` file as modified at 0, and then goes through VACUUM's
  usual tests (not referenced by the snapshot or an unexpired tombstone, older than the
  retention);
- when commits the range needs were already cleaned up (and no earlier VACUUM recorded how
  far it got), LITE cannot see every file to delete and refuses with Delta's
  ``DELTA_CANNOT_VACUUM_LITE`` (:class:`VacuumLiteError`): run a full VACUUM.

Every VACUUM that deletes (full or LITE) records in ``_delta_log/_last_vacuum_info`` the latest
commit outside its window (nothing, for a full VACUUM, as Delta), the file Delta Spark reads too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from deltalog.txn.log.deletion_vectors import dv_absolute_path
from deltalog.txn.log.history import commit_timestamps
from deltalog.txn.protocol.actions import AddCDCFile, RemoveFile, decode_path
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.file_names import log_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from deltalog.txn.delta_log import DeltaLog

__all__ = [
    "LAST_VACUUM_INFO",
    "VacuumLiteError",
    "files_from_log",
    "latest_commit_outside_retention",
    "read_last_vacuum_info",
    "write_last_vacuum_info",
]

log = logging.getLogger(__name__)

#: The file in ``_delta_log`` where VACUUM records how far its last run looked (Delta's ``LastVacuumInfo``).
LAST_VACUUM_INFO = "_last_vacuum_info"
_KEY = "latestCommitVersionOutsideOfRetentionWindow"


class VacuumLiteError(DeltaLogError):
    """VACUUM LITE cannot see every file it should delete (Delta's ``DELTA_CANNOT_VACUUM_LITE``)."""

    error_class = "DELTA_CANNOT_VACUUM_LITE"

    def __init__(self, table_uri: str, earliest: int) -> None:
        super().__init__(
            "DELTA_CANNOT_VACUUM_LITE: VACUUM LITE cannot delete all eligible files as some files are not "
            f"referenced by the Delta log of {table_uri} (its commits before version {earliest} were cleaned up "
            "since the last VACUUM). Please run VACUUM FULL."
        )
        self.table_uri = table_uri


def read_last_vacuum_info(delta_log: DeltaLog) -> int | None:
    """The latest commit outside the window of the last VACUUM, or None (no record, a full
    VACUUM's, or an unreadable one: Delta ignores it too)."""
    try:
        lines = list(delta_log.store.read(log_path(delta_log.log_uri, LAST_VACUUM_INFO)))
        value = json.loads(lines[0]).get(_KEY) if lines else None
    except (FileNotFoundError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def write_last_vacuum_info(delta_log: DeltaLog, version: int | None) -> None:
    """Record how far a VACUUM looked; a failure is logged, never raised (Delta's
    ``persistLastVacuumInfo``: the files are deleted already)."""
    line = json.dumps({} if version is None else {_KEY: version})
    try:
        delta_log.store.write(log_path(delta_log.log_uri, LAST_VACUUM_INFO), [line], overwrite=True)
    except Exception as exc:  # best effort, as Delta
        log.warning("could not record the vacuum in %s: %s", LAST_VACUUM_INFO, exc)


def latest_commit_outside_retention(delta_log: DeltaLog, delete_before_ms: int) -> int | None:
    """The commit active at ``delete_before_ms`` (the last one at or before it), or None when
    every commit is newer (Delta's ``getActiveCommitAtTime`` without a recreatable version)."""
    chosen = None
    for version, ts in commit_timestamps(delta_log):
        if ts > delete_before_ms:
            break
        chosen = version
    return chosen


def files_from_log(
    delta_log: DeltaLog, latest_version: int, outside: int | None, relative: Callable[[str], str | None]
) -> list[tuple[str, int, int]]:
    """``(table-relative path, size, modification time)`` of the files LITE considers: those
    the commits from after the last VACUUM's window up to ``outside`` remove or write as change
    data. ``relative`` maps an action's path to the table root (None: outside the table, never
    deleted). Raises :class:`VacuumLiteError` when commits the range needs are gone."""
    if outside is None:
        return []
    commits = sorted(delta_log.listing(0).commits)
    earliest = commits[0] if commits else 0
    last = read_last_vacuum_info(delta_log)
    if earliest != 0 and (last is None or last < earliest):
        raise VacuumLiteError(delta_log.table_uri, earliest)
    start = min(latest_version, earliest if last is None else last + 1)
    found: dict[str, tuple[int, int]] = {}
    for version in (v for v in commits if start <= v <= outside):
        for raw, size, mtime in _named_files(delta_log, delta_log.read_commit(version)):
            rel = relative(raw)
            if rel is not None and (rel not in found or found[rel][1] < mtime):
                found[rel] = (size, mtime)  # the newest of duplicates, as Delta
    log.info("vacuum lite of %s: commits %d to %d name %d files", delta_log.table_uri, start, outside, len(found))
    return [(rel, size, mtime) for rel, (size, mtime) in found.items()]


def _named_files(delta_log: DeltaLog, actions: Iterable[object]) -> Iterable[tuple[str, int, int]]:
    for action in actions:
        if isinstance(action, RemoveFile):
            when = action.deletion_timestamp or 0
            dv = action.deletion_vector
            if dv is not None and dv.storage_type in ("u", "p"):
                yield dv_absolute_path(delta_log.table_uri, dv), int(dv.size_in_bytes or 0), when
            yield decode_path(action.path), int(action.size or 0), when
        elif isinstance(action, AddCDCFile):
            yield decode_path(action.path), int(action.size or 0), 0
