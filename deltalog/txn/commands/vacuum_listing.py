"""What VACUUM looks at: the files and directories under a table's root.

Two sources, as Delta's ``VacuumCommand``:

- **listing** the table's directory, one directory per request, several directories at once
  (``max_workers`` threads; on object stores each listing is a round trip, so a table with
  many partition directories lists in a fraction of the sequential time);
- an **inventory** (Delta 3.2's ``VACUUM ... USING INVENTORY``): rows of ``path`` (absolute,
  as the store names it), ``length``, ``isDir``, ``modificationTime`` (ms), for example from
  an S3 Inventory or Azure Blob inventory report, so a huge table is never listed. Rows
  outside the table root are ignored.

Both skip hidden names (``_delta_log``, ``.crc`` files, ...) by Delta's ``isHiddenDirectory``
rules, applied to every component of a path, except inside a native Spark write's staging
directory (``deltalog-staging-<uuid>/``, :data:`STAGING_PREFIX`): nothing under it is ever
in the log, and a driver killed during the write leaves Hadoop's hidden ``_temporary``
attempt directories in it, which VACUUM must see to remove the abandoned write whole.
Delta's own writer needs no such rule: its ``DelayedCommitProtocol`` writes straight into
the table's directories.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from deltalog.txn.protocol.errors import DeltaLogError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs

    from deltalog.txn.delta_log import DeltaLog

__all__ = [
    "INVENTORY_COLUMNS",
    "STAGING_PREFIX",
    "InventoryEntry",
    "VacuumInventoryError",
    "files_from_inventory",
    "is_hidden",
    "list_table",
]

#: Delta's ``VacuumCommand.INVENTORY_SCHEMA``: column name -> Delta type.
INVENTORY_COLUMNS = {"path": "string", "length": "long", "isDir": "boolean", "modificationTime": "long"}

#: The name of a native Spark write's staging directory at the table root starts with this
#: (``deltalog.contrib.spark.native_write``): the write's files, moved into the table's
#: layout before the commit, so none is ever referenced by the log.
STAGING_PREFIX = "deltalog-staging-"

#: Files and directories under the root: ``[(relative path, size, mtime ms)]``, ``[relative dir]``.
Listing = tuple[list[tuple[str, int, int]], list[str]]

_NEVER = 2**62  # the age of a file whose modification time is unknown: never old enough


class VacuumInventoryError(DeltaLogError, ValueError):
    """The inventory given to VACUUM does not have Delta's inventory schema."""


class InventoryEntry(NamedTuple):
    """One row of a VACUUM inventory."""

    path: str
    length: int
    is_dir: bool
    modification_time: int


def is_hidden(name: str, partition_columns: Sequence[str], iceberg_metadata_hidden: bool = True) -> bool:
    """Delta's ``DeltaTableUtils.isHiddenDirectory`` for one path component: ``metadata`` is
    hidden only with ``iceberg_metadata_hidden`` (a UniForm Iceberg table's metadata)."""
    if name == "metadata":
        return iceberg_metadata_hidden
    if not (name.startswith(".") or name.startswith("_")):
        return False
    if name.startswith("_delta_index") or name.startswith("_change_data"):
        return False
    return not any(name.startswith(f"{c}=") for c in partition_columns)


def _hidden_below(rel_dir: str, name: str, partition_columns: Sequence[str], iceberg: bool) -> bool:
    """Whether ``name`` in the table-relative directory ``rel_dir`` is hidden from VACUUM:
    by :func:`is_hidden` (``iceberg``: a UniForm Iceberg table), except inside a staging directory."""
    return not rel_dir.startswith(STAGING_PREFIX) and is_hidden(name, partition_columns, iceberg)


def _list_directory(
    delta_log: DeltaLog, fs: pafs.FileSystem, root: str, rel_dir: str, partition_columns: Sequence[str], iceberg: bool
) -> tuple[list[tuple[str, int, int]], list[str]]:
    """The visible files and subdirectories directly in ``rel_dir``. When the filesystem
    reports no modification time, the store's ``list_from`` of the directory gives it."""
    import pyarrow.fs as pafs

    where = f"{root}/{rel_dir}" if rel_dir else root
    files: list[tuple[str, int, int]] = []
    dirs: list[str] = []
    store_mtimes: dict[str, int] | None = None
    for info in fs.get_file_info(pafs.FileSelector(where, recursive=False, allow_not_found=True)):
        name = info.base_name
        if _hidden_below(rel_dir, name, partition_columns, iceberg):
            continue
        rel = f"{rel_dir}/{name}" if rel_dir else name
        if info.type == pafs.FileType.Directory:
            dirs.append(rel)
        elif info.type == pafs.FileType.File:
            mtime = None if info.mtime_ns is None else info.mtime_ns // 1_000_000
            if mtime is None:
                if store_mtimes is None:
                    dir_uri = f"{delta_log.table_uri}/{rel_dir}" if rel_dir else delta_log.table_uri
                    store_mtimes = {s.name: s.modification_time for s in delta_log.store.list_from(f"{dir_uri}/")}
                mtime = store_mtimes.get(name, _NEVER)
            files.append((rel, int(info.size or 0), int(mtime)))
    return files, dirs


def list_table(
    delta_log: DeltaLog,
    fs: pafs.FileSystem,
    root: str,
    partition_columns: Sequence[str],
    max_workers: int = 8,
    iceberg: bool = True,
) -> Listing:
    """Every visible file and directory under ``root`` (``iceberg``: ``metadata`` is hidden),
    listing up to ``max_workers`` directories at once (level by level); a file whose age stays
    unknown is never deleted."""
    files: list[tuple[str, int, int]] = []
    dirs: list[str] = []
    level = [""]
    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        while level:
            found = pool.map(lambda d: _list_directory(delta_log, fs, root, d, partition_columns, iceberg), level)
            level = []
            for level_files, level_dirs in found:
                files.extend(level_files)
                dirs.extend(level_dirs)
                level.extend(level_dirs)
    return files, dirs


def _relative_to(root_uri: str, path: str) -> str | None:
    """``path`` (absolute, a URI or a filesystem path) relative to the table root, or None."""
    root, candidate = urlsplit(root_uri), urlsplit(path)
    if candidate.scheme and root.scheme and (candidate.scheme, candidate.netloc) != (root.scheme, root.netloc):
        return None
    base = "/" + root.path.strip("/")
    where = "/" + candidate.path.lstrip("/")
    return where[len(base) + 1 :] if where.startswith(base + "/") else None


def _entries(inventory: pa.Table | Iterable[InventoryEntry]) -> Iterable[InventoryEntry]:
    import pyarrow as pa

    if not isinstance(inventory, pa.Table):
        return (InventoryEntry(*row) for row in inventory)
    types = {"string": pa.string(), "long": pa.int64(), "boolean": pa.bool_()}
    got = {f.name: f.type for f in inventory.schema if f.name in INVENTORY_COLUMNS}
    want = {name: types[t] for name, t in INVENTORY_COLUMNS.items()}
    if got != want:
        raise VacuumInventoryError(
            "a VACUUM inventory needs the columns path string, length long, isDir boolean, "
            f"modificationTime long (Delta's inventory schema); got {inventory.schema}"
        )
    columns = [inventory.column(name).to_pylist() for name in INVENTORY_COLUMNS]
    return (InventoryEntry(*row) for row in zip(*columns))


def files_from_inventory(
    table_uri: str,
    inventory: pa.Table | Iterable[InventoryEntry],
    partition_columns: Sequence[str],
    iceberg: bool = True,
) -> Listing:
    """The inventory's visible files and directories under the table root (``iceberg``:
    ``metadata`` is hidden; the newest row of a path repeated in the inventory wins, as in Delta)."""
    newest: dict[str, InventoryEntry] = {}
    hidden = functools.partial(_hidden_below, partition_columns=partition_columns, iceberg=iceberg)
    for entry in _entries(inventory):
        rel = _relative_to(table_uri, entry.path)
        parts = rel.split("/") if rel else []
        if not rel or any(hidden("/".join(parts[:i]), p) for i, p in enumerate(parts)):
            continue
        seen = newest.get(rel)
        if seen is None or entry.modification_time > seen.modification_time:
            newest[rel] = entry._replace(path=rel)
    files = [(e.path, int(e.length), int(e.modification_time)) for e in newest.values() if not e.is_dir]
    dirs = [e.path for e in newest.values() if e.is_dir]
    return files, dirs
