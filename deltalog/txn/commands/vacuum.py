"""VACUUM: delete the files in a table's directory that the table no longer references.

Delta's ``VacuumCommand`` without Spark. A file under the table root is deleted when

- no active file of the latest snapshot and no unexpired tombstone (a ``remove`` newer than
  the retention) refers to it, nor to it as a deletion-vector file, and
- its modification time is older than ``now - retention``.

The retention is ``delta.deletedFileRetentionDuration`` (one week by default) unless
``retention_hours`` is given (rounded to whole hours, as Delta); a shorter retention is refused
while the retention check is on (``enforce_retention=True``, or Delta's
``spark.databricks.delta.retentionDurationCheck.enabled`` in the storage options), because it
can delete files a running writer is about to commit.

Hidden names are never looked into or deleted: anything starting with ``_`` or ``.``
(``_delta_log``, ``_SUCCESS``, ``.crc`` files), except partition directories whose column
name starts with ``_`` and ``_change_data`` (change-data files are referenced only by old
commits, so they go once they are older than the retention), as Delta's
``isHiddenDirectory`` rules; ``metadata`` is hidden only on a UniForm Iceberg table (its
Iceberg metadata). Nothing outside the table root is touched.

Unless ``dry_run`` or logging is off (Delta's ``spark.databricks.delta.vacuum.logging.enabled``
``false``: ``log_vacuum=False`` or that storage option), the run is recorded as ``VACUUM
START`` and ``VACUUM END`` commits with
Delta's parameters and metrics (``numFilesToDelete``, ``sizeOfDataToDelete``,
``numDeletedFiles``, and ``numVacuumedDirectories``: as Delta, the number of directories
VACUUM looked at, the root included, not of those it deleted, which is
:attr:`VacuumResult.num_dirs`).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from deltalog.txn.commands.vacuum_listing import InventoryEntry, files_from_inventory, is_hidden, list_table
from deltalog.txn.commands.vacuum_lite import files_from_log, latest_commit_outside_retention, write_last_vacuum_info
from deltalog.txn.commit.operations import VacuumEnd, VacuumStart
from deltalog.txn.log.deletion_vectors import dv_absolute_path
from deltalog.txn.protocol.actions import DeletionVectorDescriptor, decode_path
from deltalog.txn.protocol.errors import DeltaLogError
from deltalog.txn.protocol.features import check_write_supported

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs

    from deltalog.logstores.base import LogStore
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "RETENTION_CHECK_KEYS",
    "VACUUM_LOGGING_KEYS",
    "InventoryEntry",
    "VacuumResult",
    "VacuumRetentionError",
    "is_hidden",
    "vacuum",
]

log = logging.getLogger(__name__)

#: Storage-option keys that turn the retention safety check off when set to ``false``.
RETENTION_CHECK_KEYS = (
    "deltalog.retentionDurationCheck.enabled",
    "spark.databricks.delta.retentionDurationCheck.enabled",
)

#: Storage-option keys (Delta's ``vacuum.logging.enabled``) that, set to ``false``, make VACUUM
#: delete without its ``VACUUM START``/``VACUUM END`` commits.
VACUUM_LOGGING_KEYS = (
    "deltalog.vacuum.logging.enabled",
    "spark.databricks.delta.vacuum.logging.enabled",
)

Progress = Callable[[int, int], None]


class VacuumRetentionError(DeltaLogError, ValueError):
    """The requested retention is negative, or shorter than the table's
    ``delta.deletedFileRetentionDuration`` while the retention check is on."""


@dataclass
class VacuumResult:
    """What a vacuum deleted (or, with ``dry_run``, would delete). Iterates over ``files``."""

    table_uri: str
    files: list[str] = field(default_factory=list)
    size_in_bytes: int = 0
    #: the directories left empty by deleting ``files`` (or empty already), which VACUUM deletes
    dirs: list[str] = field(default_factory=list)
    num_dirs: int = 0  #: directories deleted, or with ``dry_run`` to delete (not Delta's numVacuumedDirectories)
    dry_run: bool = False
    retention_hours: float = 0.0
    start_version: int | None = None
    end_version: int | None = None

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table_uri,
            "dry_run": self.dry_run,
            "retention_hours": self.retention_hours,
            "num_files": len(self.files),
            "size_in_bytes": self.size_in_bytes,
            "num_dirs": self.num_dirs,
            "files": list(self.files),
            "dirs": list(self.dirs),
            "start_version": self.start_version,
            "end_version": self.end_version,
        }


def _relative(store: LogStore, root: str, raw: str) -> str | None:
    """``raw`` (an action path, decoded) relative to the table root ``root`` (the table's path in
    ``store``'s filesystem), or None when outside. An absolute path is placed by the table's own
    store, as a read opens it: an alias of the table's scheme (``s3a://`` for ``s3://``, ``file:``
    for a local path) names the same file; a URI the store cannot address is outside."""
    if "://" not in raw and not raw.startswith("/"):
        return raw.lstrip("/")
    try:
        where = store.fs_path(raw)
    except ValueError:  # LogStoreConfigError: a scheme the table's store does not serve
        return None
    base = root.rstrip("/")
    if where.startswith(base + "/"):
        return where[len(base) + 1 :]
    return None


def _retention_check_enabled(delta_log: DeltaLog) -> bool:
    return delta_log.storage_options.on_unless_false(*RETENTION_CHECK_KEYS)


def _logging_enabled(delta_log: DeltaLog, log_vacuum: bool | None) -> bool:
    """``log_vacuum``, else the :data:`VACUUM_LOGGING_KEYS` storage option (default true)."""
    if log_vacuum is not None:
        return log_vacuum
    return delta_log.storage_options.on_unless_false(*VACUUM_LOGGING_KEYS)


def _valid_paths(delta_log: DeltaLog, snapshot: Any, root: str, delete_before: int, now_ms: int) -> set[str]:
    """Relative paths (files and their parent directories) that must survive."""
    uri = delta_log.table_uri
    valid: set[str] = set()

    def keep(raw: str) -> None:
        rel = _relative(delta_log.store, root, raw)
        if rel is None:
            return
        valid.add(rel)
        parts = rel.split("/")
        for i in range(1, len(parts)):
            valid.add("/".join(parts[:i]))

    def keep_dv(dv: DeletionVectorDescriptor | None) -> None:
        if dv is not None and dv.storage_type in ("u", "p"):
            keep(dv_absolute_path(uri, dv))  # already decoded: decoding again names another file

    for add in snapshot.files:
        keep(decode_path(add.path))
        keep_dv(add.deletion_vector)
    tombstones = snapshot.tombstones_table(now_ms)
    if tombstones.num_rows:
        ts = pc.fill_null(tombstones.column("deletionTimestamp"), 0)
        tombstones = tombstones.filter(pc.greater_equal(ts, delete_before))
    for path in tombstones.column("path").to_pylist() if tombstones.num_rows else []:
        keep(decode_path(path))
    if tombstones.num_rows and "deletionVector" in tombstones.column_names:
        for dv in tombstones.column("deletionVector").to_pylist():
            if dv:
                keep_dv(DeletionVectorDescriptor.from_dict(dv))
    return valid


def vacuum(
    delta_log: DeltaLog,
    retention_hours: float | None = None,
    dry_run: bool = False,
    enforce_retention: bool = True,
    *,
    now_ms: int | None = None,
    lock: str | CommitLock | None = None,
    progress: Progress | None = None,
    max_workers: int = 8,
    inventory: pa.Table | Iterable[InventoryEntry] | None = None,
    lite: bool = False,
    log_vacuum: bool | None = None,
) -> VacuumResult:
    """Delete unreferenced files older than the retention; see the module docstring.

    The table's directory is listed (``max_workers`` directories at once) unless an
    ``inventory`` of its files is given (Delta's ``VACUUM ... USING INVENTORY``; see
    :mod:`~deltalog.txn.commands.vacuum_listing`), or with ``lite`` the files are found in the
    log (Delta's ``VACUUM ... LITE``; see :mod:`~deltalog.txn.commands.vacuum_lite`).
    ``log_vacuum=False`` deletes without the ``VACUUM START``/``END`` commits (None: the
    :data:`VACUUM_LOGGING_KEYS` storage option, default true).

    Returns a :class:`VacuumResult` (iterable over the table-relative paths deleted, or
    that would be deleted with ``dry_run``). Raises :class:`VacuumRetentionError` for an
    unsafe retention, and :class:`~deltalog.errors.UnsupportedFeatureError` for a table this
    client cannot write (dry run included, as Delta), leaving the table untouched.
    """
    snapshot = delta_log.require_table()
    # Delta's ``protocolWrite`` check, dry run included: a client that does not know a
    # writer feature cannot tell which files the table still needs.
    check_write_supported(snapshot.protocol, snapshot.metadata, table=delta_log.table_uri)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    table_retention_ms = int(snapshot.properties.deleted_file_retention.total_seconds() * 1000)
    retention_ms, check = _checked_retention(delta_log, retention_hours, table_retention_ms, enforce_retention)
    fs = delta_log.store.filesystem()
    root = delta_log.store.fs_path(delta_log.table_uri).rstrip("/")
    files, dirs, outside = _candidates(delta_log, snapshot, fs, root, now - retention_ms, inventory, lite, max_workers)
    valid = _valid_paths(delta_log, snapshot, root, now - retention_ms, now)
    result = _unreferenced(delta_log.table_uri, files, valid, now - retention_ms)
    result.dirs = _dirs_left_empty(dirs, files, result.files, valid)
    result.dry_run, result.retention_hours = dry_run, retention_ms / 3_600_000
    if dry_run:
        result.num_dirs = len(result.dirs)
        return result
    start = None
    if _logging_enabled(delta_log, log_vacuum):
        specified = None if retention_hours is None else retention_ms
        start = _vacuum_start(result, check, specified, table_retention_ms)
    _delete_between_start_and_end(delta_log, lock, start, result, fs, root, len(dirs), progress, max_workers)
    write_last_vacuum_info(delta_log, outside)
    return result


def _vacuum_start(result: VacuumResult, check: bool, specified_ms: int | None, default_ms: int) -> VacuumStart:
    """Delta's ``VACUUM START`` for ``result``; ``numFilesToDelete`` counts its files and
    directories, as Delta's diff holds both."""
    return VacuumStart(
        retention_check_enabled=check,
        specified_retention_millis=specified_ms,
        default_retention_millis=default_ms,
        user_metrics={
            "numFilesToDelete": str(len(result.files) + len(result.dirs)),
            "sizeOfDataToDelete": str(result.size_in_bytes),
        },
    )


def _candidates(
    delta_log: DeltaLog,
    snapshot: Snapshot,
    fs: pafs.FileSystem,
    root: str,
    delete_before: int,
    inventory: pa.Table | Iterable[InventoryEntry] | None,
    lite: bool,
    max_workers: int,
) -> tuple[list[tuple[str, int, int]], list[str], int | None]:
    """The files VACUUM may delete and the directories it looks at: the ``inventory``'s, the
    log's with ``lite`` (with the latest commit outside the retention), else the listing's."""
    # Delta's shouldIcebergMetadataDirBeHidden: ``metadata`` is UniForm's Iceberg metadata
    iceberg = "iceberg" in snapshot.properties.universal_format_enabled_formats
    if inventory is not None:
        return (*files_from_inventory(delta_log.table_uri, inventory, snapshot.partition_columns, iceberg), None)
    if lite:
        outside = latest_commit_outside_retention(delta_log, delete_before)
        relative = functools.partial(_relative, delta_log.store, root)
        return files_from_log(delta_log, snapshot.version, outside, relative), [], outside
    return (*list_table(delta_log, fs, root, snapshot.partition_columns, max_workers, iceberg), None)


def _unreferenced(
    table_uri: str, files: list[tuple[str, int, int]], valid: set[str], delete_before: int
) -> VacuumResult:
    """The files neither ``valid`` nor younger than ``delete_before``: what VACUUM deletes."""
    doomed = sorted((rel, size) for rel, size, mtime in files if rel not in valid and mtime < delete_before)
    result = VacuumResult(table_uri, files=[rel for rel, _ in doomed], size_in_bytes=sum(size for _, size in doomed))
    log.info(
        "vacuum %s: %d of %d files (%d bytes) are unreferenced and older than the retention",
        table_uri,
        len(doomed),
        len(files),
        result.size_in_bytes,
    )
    return result


def _dirs_left_empty(
    dirs: list[str], files: list[tuple[str, int, int]], doomed: list[str], valid: set[str]
) -> list[str]:
    """The directories (of ``dirs``) VACUUM deletes: neither ``valid`` nor holding a file that
    stays (one listed and not ``doomed``). Delta's diff holds the directories empty of old
    files; one left empty by this run's deletions waits for the next run there."""
    gone = set(doomed)
    held: set[str] = set()
    for rel, _, _ in files:
        if rel not in gone:
            parts = rel.split("/")
            held.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(d for d in dirs if d not in valid and d not in held)


def _checked_retention(
    delta_log: DeltaLog, retention_hours: float | None, table_retention_ms: int, enforce_retention: bool
) -> tuple[int, bool]:
    """The retention to use in milliseconds (``retention_hours`` rounded to whole hours, as
    Delta), and whether the retention check is on; raises
    :class:`VacuumRetentionError` for a negative one, or one shorter than the table's when
    the check is on."""
    # Delta's ``TimeUnit.HOURS.toMillis(math.round(h))``: whole hours, halves rounded up
    hours = None if retention_hours is None else math.floor(retention_hours + 0.5)
    if hours is not None and hours < 0:
        raise VacuumRetentionError(
            f"the vacuum retention cannot be negative (got {retention_hours} hours); give 0 or more hours"
        )
    retention_ms = table_retention_ms if hours is None else hours * 3_600_000
    check = enforce_retention and _retention_check_enabled(delta_log)
    if check and retention_ms < table_retention_ms:
        asked, table_hours = retention_ms / 3_600_000, table_retention_ms / 3_600_000
        raise VacuumRetentionError(
            f"refusing to vacuum {delta_log.table_uri} with a retention of {asked:g} hours, "
            f"shorter than the table's delta.deletedFileRetentionDuration ({table_hours:g} "
            "hours): a writer that is committing right now could lose its files and corrupt the table. "
            "If no operation is running on the table, pass enforce_retention=False (CLI: "
            "--no-retention-check) or set spark.databricks.delta.retentionDurationCheck.enabled=false; "
            f"otherwise use a retention of at least {table_hours:g} hours."
        )
    return retention_ms, check


def _delete_between_start_and_end(
    delta_log: DeltaLog,
    lock: str | CommitLock | None,
    start: VacuumStart | None,
    result: VacuumResult,
    fs: pafs.FileSystem,
    root: str,
    num_listed_dirs: int,
    progress: Progress | None,
    max_workers: int,
) -> None:
    """Commit ``VACUUM START``, delete ``result.files`` and then the empty ``result.dirs``, then
    commit ``VACUUM END`` (``FAILED`` when the deletion raised); the versions go in ``result``
    and the number of directories deleted in ``result.num_dirs``. No ``start``: no commits."""
    if start is not None:
        result.start_version = delta_log.start_transaction(lock=lock).commit([], start)
    deleted = 0
    looked_at = num_listed_dirs + 1  # Delta's dirCounts: the directories listed, and the root
    try:
        deleted = _delete_all(fs, root, result.files, progress, max_workers)
        result.num_dirs = _delete_empty_dirs(fs, root, result.dirs)
    except BaseException:
        if start is not None:
            _end(delta_log, lock, "FAILED", deleted, looked_at)
        raise
    if start is not None:
        # Delta's numDeletedFiles counts the files and the directories deleted
        result.end_version = _end(delta_log, lock, "COMPLETED", deleted + result.num_dirs, looked_at)


def _end(delta_log: DeltaLog, lock: str | CommitLock | None, status: str, deleted: int, dirs: int) -> int:
    txn = delta_log.start_transaction(lock=lock)
    version: int = txn.commit(
        [],
        VacuumEnd(
            status=status,
            user_metrics={"numDeletedFiles": str(deleted), "numVacuumedDirectories": str(dirs)},
        ),
    )
    return version


def _delete_all(fs: pafs.FileSystem, root: str, rels: list[str], progress: Progress | None, max_workers: int) -> int:
    total = len(rels)
    if progress is not None:
        progress(0, total)
    if not rels:
        return 0

    def delete(rel: str) -> None:
        try:
            fs.delete_file(f"{root}/{rel}")
        except FileNotFoundError:
            pass

    done = 0
    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        for _ in pool.map(delete, rels):
            done += 1
            if progress is not None:
                progress(done, total)
    return done


def _delete_empty_dirs(fs: pafs.FileSystem, root: str, dirs: list[str]) -> int:
    """Delete the directories (deepest first) that are empty now: one holding a hidden file
    (which VACUUM never lists) stays, as Delta's non-recursive delete fails on it."""
    import pyarrow.fs as pafs

    count = 0
    for rel in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
        path = f"{root}/{rel}"
        try:
            if fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True)):
                continue
            fs.delete_dir(path)
            count += 1
        except (FileNotFoundError, OSError) as exc:
            log.debug("vacuum: could not delete directory %s: %s", path, exc)
    return count
