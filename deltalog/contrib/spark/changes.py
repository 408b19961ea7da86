"""Change data feed: the rows a range of commits inserted, deleted or updated.

For each commit in ``[startingVersion, endingVersion]``: when the commit has ``cdc`` files
they are the change data (their ``_change_type`` column says what each row is); otherwise
the commit's ``add`` files (``dataChange=true``) are inserts and its ``remove`` files are
deletes, as Delta's ``CDCReader`` does; a file removed and re-added with another deletion
vector (DELETE, UPDATE or MERGE with deletion vectors) changes only the rows the two
deletion vectors differ by; a MERGE whose metrics say it changed no row has no changes.
Every row gets ``_commit_version`` and ``_commit_timestamp`` (the commit's in-commit
timestamp, else its file's modification time, as Delta's).

As Delta's ``CDCReader.changesToDF``, a feed refuses a range whose first version, or a
commit in it, has the change data feed off (``DELTA_MISSING_CHANGE_DATA``): such commits
wrote no ``cdc`` files, so their updates would read as plain inserts and deletes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.errors import DeltaAnalysisError
from deltalog.contrib.spark.options import CDF_UNSAFE_SCHEMA_CONF
from deltalog.contrib.spark.reads import FileToRead
from deltalog.txn.protocol.actions import (
    AddCDCFile,
    AddFile,
    CommitInfo,
    DeletionVectorDescriptor,
    Metadata,
    RemoveFile,
)

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import Action

__all__ = ["ChangeFeed", "change_files", "enforce_start_within_retention", "invalid_range", "merge_changed_nothing"]


def _timestamp(stamps: Mapping[int, int], version: int, info: CommitInfo | None) -> dt.datetime:
    """The commit's timestamp as Delta's change feed has it: its in-commit timestamp when
    its ``commitInfo`` has one (also on a table that turned them off since), else its commit
    file's modification time (made monotonic, as the history and ``startingTimestamp`` count
    it); ``commitInfo.timestamp`` only when the file is not listed."""
    ms = None if info is None else info.in_commit_timestamp
    if ms is None:
        ms = stamps.get(version)
    if ms is None and info is not None:
        ms = info.timestamp
    return dt.datetime.fromtimestamp((ms or 0) / 1000, tz=dt.timezone.utc)


@dataclass(frozen=True)
class ChangeFeed:
    """The change data of the commits of a table with the change data feed on, one commit at
    a time (a stream reads only the commits its batch admits). ``stamps`` are the commits'
    file times (made monotonic) for those without an in-commit timestamp."""

    delta_log: DeltaLog
    stamps: Mapping[int, int]
    start: int
    end: int
    #: the table's metadata at version ``start``
    start_metadata: Metadata

    @classmethod
    def open(cls, delta_log: DeltaLog, start: int, end: int) -> ChangeFeed:
        """The feed of versions ``start..end`` (``end`` at most the latest); raises
        :class:`DeltaAnalysisError` when version ``start`` does not record change data."""
        from deltalog.txn.log.history import commit_timestamps

        stamps = dict(commit_timestamps(delta_log, start, read_in_commit_timestamps=False))
        feed = cls(delta_log, stamps, start, end, delta_log.snapshot(start).metadata)
        if not feed.start_metadata.properties.enable_change_data_feed:
            feed._not_recorded(start)
        return feed

    def _not_recorded(self, version: int) -> None:
        raise DeltaAnalysisError(
            f"DELTA_MISSING_CHANGE_DATA: error getting change data for range [{self.start} , {self.end}] of "
            f"{self.delta_log.table_uri} as change data was not recorded for version [{version}]. If you have "
            "enabled the change data feed on this table, use history() to see when it was first enabled and "
            "read from there; otherwise, to start recording change data, set delta.enableChangeDataFeed=true"
        )

    def commit_changes(self, version: int, actions: Sequence[Action]) -> list[FileToRead]:
        """The files holding the changes of commit ``version`` (its ``actions``); raises
        :class:`DeltaAnalysisError` when the commit turns the change data feed off."""
        if any(isinstance(a, Metadata) and not a.properties.enable_change_data_feed for a in actions):
            self._not_recorded(version)
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        consts = {"_commit_version": version, "_commit_timestamp": _timestamp(self.stamps, version, info)}
        cdcs = [a for a in actions if isinstance(a, AddCDCFile)]
        if cdcs:
            return [FileToRead(c.path, c.partition_values, c.size, None, {**consts}) for c in cdcs]
        if info is not None and merge_changed_nothing(info):
            return []
        return _file_action_changes(self.delta_log, actions, consts)


def _file_action_changes(delta_log: DeltaLog, actions: Sequence[Action], consts: dict[str, Any]) -> list[FileToRead]:
    """The changes of a commit without ``cdc`` files, in the order of its actions (so that a
    stream's index of a change is Delta's): ``add``s are inserts, ``remove``s deletes, a file
    removed and re-added with another deletion vector the rows the two differ by."""
    out: list[FileToRead] = []
    adds = {a.path: a for a in actions if isinstance(a, AddFile) and a.data_change}
    removes = {r.path: r for r in actions if isinstance(r, RemoveFile) and r.data_change}
    for action in actions:
        if isinstance(action, AddFile) and action.data_change:
            remove = removes.get(action.path)
            if remove is not None and (action.deletion_vector or remove.deletion_vector):
                out.extend(_deletion_vector_changes(delta_log, action, remove, consts))
                continue
            change = {**consts, "_change_type": "insert"}
            out.append(FileToRead(action.path, action.partition_values, action.size, _dv(action), change))
        elif isinstance(action, RemoveFile) and action.data_change:
            add = adds.get(action.path)
            if add is not None and (add.deletion_vector or action.deletion_vector):
                continue
            change = {**consts, "_change_type": "delete"}
            out.append(FileToRead(action.path, action.partition_values or {}, action.size or 0, _dv(action), change))
    return out


#: the MERGE metrics that say it changed no row
_MERGE_CHANGE_METRICS = ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")


def merge_changed_nothing(info: CommitInfo) -> bool:
    """Delta's ``CDCReader.shouldSkipFileActionsInCommit``: a MERGE whose metrics say it
    inserted, updated and deleted no row (a metric missing: unknown, not skipped) may still
    have rewritten files; their adds and removes are no change data."""
    metrics = info.operation_metrics or {}
    return info.operation == "MERGE" and all(metrics.get(name) == "0" for name in _MERGE_CHANGE_METRICS)


def change_files(
    delta_log: DeltaLog, start: int, end: int, read: Snapshot | None = None, check_schemas: bool = True
) -> list[FileToRead]:
    """The files holding the changes of versions ``start..end`` (both existing versions),
    to be read with the schema of ``read`` (default: version ``end``'s). As Delta's batch
    ``CDCReader.changesToDF``, with ``check_schemas`` every schema the range's data was
    written with (version ``start``'s and each schema change after it) must read correctly
    with that schema (:mod:`~deltalog.contrib.spark.read_compatibility`): a column renamed
    or dropped (under column mapping), a type changed, a column dropped by an overwrite, a
    new non-nullable column or other partition columns raise :class:`DeltaAnalysisError`."""
    if start < 0 or start > end:
        raise invalid_range(start, end)
    feed = ChangeFeed.open(delta_log, start, end)
    read = read or delta_log.snapshot(end)
    out: list[FileToRead] = []
    for version in range(start, end + 1):
        actions = delta_log.read_commit(version)
        for metadata in (a for a in actions if isinstance(a, Metadata)):
            if check_schemas and version > start:
                _check_read_schema(feed, read, metadata, version, schema_change=True)
        out.extend(feed.commit_changes(version, actions))
    if check_schemas:
        _check_read_schema(feed, read, feed.start_metadata, start, schema_change=False)
    return out


def _check_read_schema(feed: ChangeFeed, read: Snapshot, metadata: Metadata, version: int, schema_change: bool) -> None:
    """Delta's ``checkBatchCdfReadSchemaIncompatibility`` (the read schema's version is the
    range's end or the latest, so the data schemas are never newer than it)."""
    import json

    from deltalog.contrib.spark.read_compatibility import read_shape, readable_with, turns_column_mapping_off

    ours = read.metadata
    same_partitions = tuple(metadata.partition_columns) == tuple(ours.partition_columns)
    old, new = read_shape(json.loads(metadata.schema_string)), read_shape(json.loads(ours.schema_string))
    turned_off = turns_column_mapping_off(metadata.configuration, ours.configuration)
    if same_partitions and readable_with(old, new, widening=False) and not turned_off:
        return
    what, advice = (
        (
            "an incompatible schema change",
            f"read versions {feed.start} to {version - 1} and {version} to {feed.end} apart",
        )
        if schema_change
        else ("an incompatible data schema", "start the read at or after the version that changed it")
    )
    raise DeltaAnalysisError(
        f"DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_{'SCHEMA_CHANGE' if schema_change else 'DATA_SCHEMA'}: retrieving "
        f"table changes of {feed.delta_log.table_uri} between version {feed.start} and {feed.end} failed because "
        f"of {what}: the read schema is {ours.schema_string} at version {read.version}, but version {version} "
        f"has {metadata.schema_string} (partitioned by {list(metadata.partition_columns)}). A column renamed or "
        f"dropped, a type changed, column mapping turned off or other partition columns would read wrongly; "
        f"{advice}, or set {CDF_UNSAFE_SCHEMA_CONF}=true to read with the read schema anyway"
    )


def invalid_range(start: int, end: int) -> DeltaAnalysisError:
    """Delta's ``DELTA_INVALID_CDC_RANGE``: an end before the start."""
    return DeltaAnalysisError(
        f"DELTA_INVALID_CDC_RANGE: CDC range from start {start} to end {end} was invalid. End cannot be before "
        "start; choose a startingVersion/startingTimestamp at or before the end"
    )


def enforce_start_within_retention(delta_log: DeltaLog, start: int, end: int | None) -> None:
    """Refuse a batch change feed starting at a version older than
    ``delta.deletedFileRetentionDuration`` (unless it is the latest), as Delta's
    ``CDCReader.getCDCRelation`` builds the starting snapshot with the retention check. A
    start after the latest version or after ``end`` is left to the range checks (Delta
    checks those first); streams do not come here (Delta's streaming source does not check)."""
    from deltalog.txn.log.time_travel_retention import enforcement_enabled

    if not enforcement_enabled(delta_log.storage_options):
        return  # do not load the starting snapshot for nothing
    latest = delta_log.update().version
    if 0 <= start < latest and (end is None or start <= end):
        delta_log.snapshot(start, enforce_retention=True)


def _dv(action: AddFile | RemoveFile) -> dict[str, Any] | None:
    return None if action.deletion_vector is None else action.deletion_vector.to_dict()


def _deleted_rows(delta_log: DeltaLog, dv: DeletionVectorDescriptor | None) -> set[int]:
    from deltalog.txn.log.deletion_vectors import read_deletion_vector

    if dv is None:
        return set()
    return set(read_deletion_vector(delta_log.store, delta_log.table_uri, dv).to_pylist())


def _deletion_vector_changes(
    delta_log: DeltaLog, add: AddFile, remove: RemoveFile, consts: dict[str, Any]
) -> list[FileToRead]:
    """The changes of a file removed and re-added in one commit with another deletion
    vector (Delta's ``CDCReader.generateFileActionsWithInlineDv``): rows the new DV deletes
    and the old one did not are deletes; rows the old DV deleted and the new one does not
    (a restore) are inserts."""
    before = _deleted_rows(delta_log, remove.deletion_vector)
    after = _deleted_rows(delta_log, add.deletion_vector)
    out: list[FileToRead] = []
    for rows, change in ((after - before, "delete"), (before - after, "insert")):
        if rows:
            out.append(
                FileToRead(
                    add.path,
                    add.partition_values,
                    add.size,
                    None,
                    {**consts, "_change_type": change},
                    only_rows=tuple(sorted(rows)),
                )
            )
    return out
