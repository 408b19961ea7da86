"""Change data feed: the rows a range of commits inserted, deleted or updated.

For each commit in ``[startingVersion, endingVersion]``: when the commit has ``cdc`` files
they are the change data (their ``_change_type`` column says what each row is); otherwise
the commit's ``add`` files (``dataChange=true``) are inserts and its ``remove`` files are
deletes, as Delta's ``CDCReader`` does. Every row gets ``_commit_version`` and
``_commit_timestamp``.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.reads import FileToRead
from deltalog.txn.actions import AddCDCFile, AddFile, CommitInfo, RemoveFile

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog

__all__ = ["change_files"]


def _timestamp(delta_log: DeltaLog, version: int, info: CommitInfo | None) -> dt.datetime:
    ms: int | None = None
    if info is not None:
        ms = info.in_commit_timestamp or info.timestamp
    if ms is None:
        ms = delta_log.snapshot(version).timestamp
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


def change_files(delta_log: DeltaLog, start: int, end: int | None) -> list[FileToRead]:
    """The files holding the changes of versions ``start..end`` (``end`` None: latest)."""
    latest = delta_log.update().version
    if latest < 0:
        raise DeltaAnalysisError(f"no Delta table at {delta_log.table_uri}")
    end = latest if end is None else min(end, latest)
    if start < 0 or start > end:
        raise DeltaAnalysisError(
            f"startingVersion {start} is after endingVersion/latest version {end}; choose versions in 0..{latest}"
        )
    snap = delta_log.snapshot(end)
    if not snap.properties.enable_change_data_feed:
        raise DeltaAnalysisError(
            f"change data feed is not enabled on {delta_log.table_uri}; set delta.enableChangeDataFeed=true"
        )
    out: list[FileToRead] = []
    for version in range(start, end + 1):
        actions = delta_log.read_commit(version)
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        ts = _timestamp(delta_log, version, info)
        consts = {"_commit_version": version, "_commit_timestamp": ts}
        cdcs = [a for a in actions if isinstance(a, AddCDCFile)]
        if cdcs:
            out.extend(FileToRead(c.path, c.partition_values, c.size, None, {**consts}) for c in cdcs)
            continue
        for a in actions:
            if isinstance(a, AddFile) and a.data_change:
                dv = None if a.deletion_vector is None else a.deletion_vector.to_dict()
                out.append(FileToRead(a.path, a.partition_values, a.size, dv, {**consts, "_change_type": "insert"}))
            elif isinstance(a, RemoveFile) and a.data_change:
                dv = None if a.deletion_vector is None else a.deletion_vector.to_dict()
                out.append(
                    FileToRead(
                        a.path,
                        a.partition_values or {},
                        a.size or 0,
                        dv,
                        {**consts, "_change_type": "delete"},
                    )
                )
    return out
