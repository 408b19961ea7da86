"""Reading a table as a stream: ``spark.readStream.format("deltalog").load(uri)``.

Follows Delta's ``DeltaSource``. The stream is a sequence of *indexed files*: the table's
files at the version the stream starts from (the *initial snapshot*, ordered by
``modificationTime`` then ``path``), then, commit by commit, the ``add`` actions with
``dataChange=true``. Each version is framed by a base (index -1) and an end placeholder, and
an offset ``(reservoirVersion, index, isStartingVersion)`` names the last file a batch read
(Delta's ``DeltaSourceOffset``, serialised with Delta's field names, ``sourceVersion`` 1).
A batch reads the files after its start offset up to and including its end offset, so a
query restarted from its checkpoint plans exactly the batches it had not finished. A
batch leaves out the files ``excludeRegex`` matches (after admission, as Delta).

Commits are checked as Delta checks them: a commit that removes data (``remove`` with
``dataChange=true``) fails the stream unless ``ignoreDeletes`` (commits that only delete),
``skipChangeCommits`` (skip every such commit) or the deprecated ``ignoreChanges`` (emit the
re-added files again) allows it; commits with ``dataChange=false`` (OPTIMIZE) add nothing; a
changed table id or a schema the stream cannot read with its schema stops the stream.

Spark pickles the reader right after creating it, so everything read from the log is kept
in lazily built state that is never pickled.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from deltalog.contrib.spark.changes import ChangeFeed
from deltalog.contrib.spark.errors import (
    DeltaAnalysisError,
    DeltaSourceDataLossError,
    DeltaSourceIgnoreChangesError,
    DeltaSourceIgnoreDeleteError,
    DeltaSourceMetadataEvolutionError,
    DeltaSourceSchemaChangedError,
    DeltaSourceSchemaEvolutionBlockedError,
    DeltaSourceTableChangedError,
    DeltaSourceTrailingCommitMissingError,
    InvalidWriteOptionError,
)
from deltalog.contrib.spark.input_partitions import FilesPartition, files_partitions
from deltalog.contrib.spark.logical_schema import arrow_schema
from deltalog.contrib.spark.options import StreamReadOptions
from deltalog.contrib.spark.read_compatibility import read_shape, readable_with, turns_column_mapping_off
from deltalog.contrib.spark.reads import FileToRead, ReadSpec, read_files, row_tracking_columns
from deltalog.contrib.spark.schema_log import (
    PersistedMetadata,
    SchemaTrackingLog,
    blocked_change,
    checkpoint_hash,
    evolved,
    metadata_changed,
    persisted,
    read_with,
    schema_change,
    unblock_hint,
)
from deltalog.contrib.spark.stream_admission import (
    BASE_INDEX,
    END_INDEX,
    METADATA_CHANGE_INDEX,
    POST_METADATA_CHANGE_INDEX,
    AdmissionLimits,
    IndexedFile,
    excluded_paths,
    whole_commit,
)
from deltalog.contrib.spark.tablelog import open_log
from deltalog.logstores.registry import logstore_for
from deltalog.txn.protocol.actions import AddFile, CommitInfo, Metadata, Protocol, RemoveFile
from deltalog.txn.protocol.column_mapping import column_mapping_mode
from deltalog.txn.protocol.errors import NonContiguousVersionsError, VersionNotFoundError
from deltalog.txn.protocol.features import check_read_supported
from deltalog.txn.protocol.properties import TableProperties

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = ["DeltaSourceReader", "IndexedFile", "SourceOffset"]

#: ``BASE_INDEX`` as offsets with ``sourceVersion`` 1 serialise it
_BASE_INDEX_V1 = -1
#: ``reservoirVersion`` of the initial offset: where the stream starts is decided by the
#: first batch (from ``startingVersion``/``startingTimestamp`` or the latest version)
UNSTARTED = -1
SOURCE_VERSION = 1
SOURCE_VERSION_METADATA_CHANGE = 3
#: Delta's ``maxFilesPerTrigger`` default
DEFAULT_MAX_FILES_PER_TRIGGER = 1000


@dataclass(frozen=True)
class SourceOffset:
    """Delta's ``DeltaSourceOffset``: the last indexed file a batch read."""

    reservoir_id: str
    reservoir_version: int
    index: int
    is_initial_snapshot: bool

    def to_dict(self) -> dict[str, Any]:
        change = self.index in (METADATA_CHANGE_INDEX, POST_METADATA_CHANGE_INDEX)
        return {
            "sourceVersion": SOURCE_VERSION_METADATA_CHANGE if change else SOURCE_VERSION,
            "reservoirId": self.reservoir_id,
            "reservoirVersion": self.reservoir_version,
            "index": _BASE_INDEX_V1 if self.index == BASE_INDEX else self.index,
            "isStartingVersion": self.is_initial_snapshot,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any], table: str, table_id: str) -> SourceOffset:
        version = raw.get("sourceVersion", 0)
        _check_source_version(version, table)
        if raw["reservoirId"] != table_id:
            raise DeltaSourceTableChangedError(table, table_id, str(raw["reservoirId"]))
        index = int(raw["index"])
        if version == SOURCE_VERSION and index == _BASE_INDEX_V1:
            index = BASE_INDEX
        return cls(str(raw["reservoirId"]), int(raw["reservoirVersion"]), index, bool(raw["isStartingVersion"]))

    @property
    def unstarted(self) -> bool:
        return self.reservoir_version == UNSTARTED


def _check_source_version(version: Any, table: str) -> None:
    """Delta's ``DeltaSourceOffset`` deserializer: ``sourceVersion`` is 1 or 3 (2 is reserved);
    a later one was written by a newer reader (a missing one reads as 0)."""
    where = f" (a streaming offset of {table})"
    if not isinstance(version, int) or isinstance(version, bool):
        invalid = "DELTA_INVALID_SOURCE_OFFSET_FORMAT: The stored source offset format is invalid"
        raise DeltaAnalysisError(invalid + where)
    if version > SOURCE_VERSION_METADATA_CHANGE:
        raise DeltaAnalysisError(
            "DELTA_INVALID_FORMAT_FROM_SOURCE_VERSION: Unsupported format. Expected version should be smaller than or "
            f"equal to {SOURCE_VERSION_METADATA_CHANGE} but was {version}. Please upgrade to a newer version of "
            "deltalog" + where
        )
    if version not in (SOURCE_VERSION, SOURCE_VERSION_METADATA_CHANGE):
        raise DeltaAnalysisError(f"DELTA_INVALID_SOURCE_VERSION: sourceVersion({version}) is invalid" + where)


def _to_read(add: AddFile, constants: dict[str, Any] | None = None) -> FileToRead:
    dv = None if add.deletion_vector is None else add.deletion_vector.to_dict()
    return FileToRead(
        add.path,
        add.partition_values,
        add.size,
        dv,
        constants or {},
        base_row_id=add.base_row_id,
        default_row_commit_version=add.default_row_commit_version,
    )


@dataclass
class _State:
    """What the reader learns from the log on first use (in the process that plans batches)."""

    delta_log: DeltaLog
    #: the snapshot the stream's schema was taken from (Delta's ``snapshotAtSourceInit``)
    snapshot: Snapshot
    table_id: str
    read_shape: Any
    partition_columns: tuple[str, ...]
    spec: ReadSpec
    #: the table supports type widening: older commits may hold narrower types
    type_widening: bool
    #: the metadata files are read with: the schema log's current entry, else the snapshot's
    read: PersistedMetadata
    #: ``schemaTrackingLocation``: the stream's schema log
    schema_log: SchemaTrackingLog | None = None
    #: the version of the log's entry when the source started (Delta's
    #: ``persistedMetadataAtSourceInit``): changes at or before it are not changes
    tracked_version: int | None = None

    @property
    def tracking(self) -> bool:
        """Whether schema changes are barriers (Delta's ``trackingMetadataChange``)."""
        return self.schema_log is not None and self.schema_log.current is not None


class DeltaSourceReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming source (Delta's ``DeltaSource``) behind ``spark.readStream.format("deltalog")``."""

    def __init__(self, options: StreamReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self._state: _State | None = None
        self._available_now = False
        self._available_now_end: SourceOffset | None = None
        self._starting: tuple[int | None] | None = None
        self._initial_files: tuple[int, list[AddFile]] | None = None
        #: the schema at the first batch's start was checked (Delta's
        #: ``hasCheckedReadIncompatibleSchemaChangesOnStreamStart``)
        self._start_checked = False

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"], state["schema"])  # type: ignore[misc]

    # -- state from the log -------------------------------------------------------------------

    @property
    def _table(self) -> str:
        return self.options.read.path

    def _init(self) -> _State:
        if self._state is None:
            o = self.options.read
            delta_log = open_log(o.path, o.storage_options, o.logstore)
            snapshot = delta_log.require_table()
            metadata = snapshot.metadata
            schema_log = open_schema_log(self.options, metadata.id)
            tracked = None if schema_log is None else schema_log.current
            if schema_log is not None:
                _check_unblocked(self.options, schema_log)
            location = "" if schema_log is None else schema_log.location
            read = (
                read_with(tracked, metadata, snapshot.protocol)
                if tracked is not None
                else persisted(metadata.id, snapshot.version, metadata, snapshot.protocol, location)
            )
            tracking = row_tracking_columns(snapshot) if o.read_row_tracking else None
            spec = dataclasses.replace(
                ReadSpec.for_snapshot(delta_log, snapshot, arrow_schema(self.schema), tracking),
                schema_json=read.data_schema_json,
                partition_columns=read.partition_columns,
                column_mapping_mode=TableProperties(read.table_configurations or {}).column_mapping_mode,
            )
            self._state = _State(
                delta_log,
                snapshot,
                metadata.id,
                read_shape(read.schema),
                read.partition_columns,
                spec,
                bool({"typeWidening", "typeWidening-preview"} & set(snapshot.protocol.reader_features or ())),
                read,
                schema_log,
                None if tracked is None else tracked.delta_commit_version,
            )
        return self._state

    def check_schema_log(self) -> None:
        """Open the schema log and check that its last change is unblocked (raises
        :class:`DeltaSourceSchemaEvolutionBlockedError`)."""
        self._init()

    def _starting_version(self) -> int | None:
        """``startingVersion`` / ``startingTimestamp`` as a version (None: neither given),
        decided once per query run as Delta's ``getStartingVersion``."""
        if self._starting is None:
            o = self.options.read
            state = self._init()
            version: int | None = o.starting_version
            if o.starting_version_latest:
                version = state.delta_log.update().version + 1
            elif version is not None:
                _check_version_exists(state.delta_log, version, self._table, o.cdf_out_of_range)
            elif o.starting_timestamp is not None:
                version = _first_version_at_or_after(
                    state.delta_log, o.starting_timestamp, self._table, o.cdf_out_of_range
                )
            self._starting = (version,)
        return self._starting[0]

    def _offset(self, raw: dict[str, Any]) -> SourceOffset:
        return SourceOffset.from_dict(raw, self._table, self._init().table_id)

    # -- checks ---------------------------------------------------------------------------------

    def _check_metadata(self, metadata: Metadata, version: int) -> None:
        state = self._init()
        if metadata.id != state.table_id:
            raise DeltaSourceTableChangedError(self._table, metadata.id, state.table_id)
        shape = read_shape(json.loads(metadata.schema_string))
        same_partitions = tuple(metadata.partition_columns) == state.partition_columns
        ours = state.snapshot.metadata
        if version < state.snapshot.version:
            ok = same_partitions and readable_with(shape, state.read_shape, state.type_widening)
            earlier, later = metadata, ours
        else:
            ok = same_partitions and shape == state.read_shape
            earlier, later = ours, metadata
        if not ok or turns_column_mapping_off(earlier.configuration, later.configuration):
            o = self.options.read
            starting = o.starting_version is not None or o.starting_version_latest or o.starting_timestamp is not None
            hint = _column_mapping_change_hint(earlier, later)
            raise DeltaSourceSchemaChangedError(
                self._table, version, state.snapshot.metadata.schema_string, metadata.schema_string, hint, starting
            )

    def _check_start_once(self, version: int) -> None:
        """Delta's ``checkReadIncompatibleSchemaChangeOnStreamStartOnce``: the first batch this
        reader plans or reads checks the schema of the version it starts at (a restart, or
        ``startingVersion``, before a rename, drop or overwrite of the schema whose commit it
        will not meet with the schema it met it with). Without a snapshot at that version (its
        commits cleaned up), a column-mapped table fails, another one goes on unchecked."""
        if self._start_checked:
            return
        self._start_checked = True
        state = self._init()
        if state.tracking or version == state.snapshot.version:
            return
        try:
            metadata = state.delta_log.snapshot(version).metadata
        except (VersionNotFoundError, NonContiguousVersionsError) as exc:
            if column_mapping_mode(state.snapshot.metadata.configuration) == "none":
                return
            raise DeltaAnalysisError(
                "DELTA_STREAMING_CHECK_COLUMN_MAPPING_NO_SNAPSHOT: Failed to obtain Delta log snapshot for the start "
                f"version {version} of {self._table} when checking column mapping schema changes ({exc}). Please "
                "choose a different start version (a new checkpoint location, or another startingVersion)"
            ) from exc
        self._check_metadata(metadata, version)

    def _check_commit_metadata(self, actions: list[Any], version: int) -> bool:
        """Check a commit's metadata and protocol; True when, with ``schemaTrackingLocation``,
        the commit changes the metadata the stream reads with (a barrier ends the batch
        before it: Delta's ``getMetadataOrProtocolChangeIndexedFileIterator``)."""
        state = self._init()
        metadata = next((a for a in actions if isinstance(a, Metadata)), None)
        protocol = next((a for a in actions if isinstance(a, Protocol)), None)
        if protocol is not None:
            check_read_supported(protocol, self._table)
        if metadata is not None and (not state.tracking or metadata.id != state.table_id):
            self._check_metadata(metadata, version)
        return state.tracking and self._changed(version, metadata, protocol)

    def _changed(self, version: int, metadata: Metadata | None, protocol: Protocol | None) -> bool:
        state = self._init()
        if state.tracked_version is not None and state.tracked_version >= version:
            return False
        return metadata_changed(state.read, metadata, protocol)

    def _evolve_if_changed(
        self, version: int, metadata: Metadata | None, protocol: Protocol | None, replace_current: bool = False
    ) -> None:
        """Record the metadata of ``version`` in the schema log and stop the query (Delta's
        ``updateMetadataTrackingLogAndFailTheStreamIfNeeded``), when it is a change."""
        state = self._init()
        if state.schema_log is None or not self._changed(version, metadata, protocol):
            return
        entry = state.schema_log.write(evolved(state.read, version, metadata, protocol), replace_current)
        raise _metadata_evolution(self._table, version, entry)

    def _start_schema_log(self, start: SourceOffset) -> None:
        """Delta's eager ``initializeMetadataTrackingAndExitStream``: an empty schema log gets
        the metadata of the version the stream reads from; the query stops when that is not the
        metadata it was started with (restarted, it reads with the logged one)."""
        state = self._init()
        if state.schema_log is None or state.schema_log.current is not None:
            return
        latest = state.delta_log.update().version
        version = min(self._start_point(start)[0], latest)
        snapshot = state.delta_log.snapshot(version)
        state.schema_log.write(
            persisted(state.table_id, version, snapshot.metadata, snapshot.protocol, state.schema_log.location)
        )
        if metadata_changed(state.read, snapshot.metadata, snapshot.protocol):
            entry = state.schema_log.current
            assert entry is not None
            raise _metadata_evolution(self._table, version, entry)

    def _pending_schema_change(self, offset: SourceOffset) -> SourceOffset | None:
        """Delta's ``getNextOffsetFromPreviousOffsetIfPendingSchemaChange``: after a barrier
        offset, the offset right after it (so that Spark commits the barrier, which records the
        change and stops the query); after that one, no further offset while the change is
        pending."""
        if not self._init().tracking:
            return None
        if offset.index == METADATA_CHANGE_INDEX:
            return dataclasses.replace(offset, index=POST_METADATA_CHANGE_INDEX)
        if offset.index == POST_METADATA_CHANGE_INDEX and self._changed(
            offset.reservoir_version, *self._metadata_at(offset.reservoir_version)
        ):
            return offset
        return None

    def _metadata_at(self, version: int) -> tuple[Metadata | None, Protocol | None]:
        actions = self._init().delta_log.read_commit(version)
        metadata = next((a for a in actions if isinstance(a, Metadata)), None)
        return metadata, next((a for a in actions if isinstance(a, Protocol)), None)

    def _skip_commit(self, actions: list[Any], version: int) -> bool:
        """Delta's ``validateCommitAndDecideSkipping``: fail on a commit that removes data
        unless the options allow it; True when ``skipChangeCommits`` skips the commit."""
        o = self.options
        allow_changes = o.ignore_changes or o.skip_change_commits
        allow_deletes = allow_changes or o.ignore_deletes
        seen_add = False
        removed: str | None = None
        operation: str | None = None
        for action in actions:
            if isinstance(action, AddFile) and action.data_change:
                seen_add = True
            elif isinstance(action, RemoveFile) and action.data_change:
                removed = removed or action.path
            elif isinstance(action, CommitInfo) and action.operation:
                operation = f"{action.operation} ({json.dumps(action.operation_parameters or {})})"
        if removed is None:
            return False
        if seen_add and not allow_changes:
            raise DeltaSourceIgnoreChangesError(self._table, version, operation or removed)
        if not seen_add and not allow_deletes:
            raise DeltaSourceIgnoreDeleteError(self._table, version, removed)
        return o.skip_change_commits

    # -- the indexed files --------------------------------------------------------------------

    def _snapshot_files(self, version: int) -> Iterator[IndexedFile]:
        """The initial snapshot at ``version``: its files by (modificationTime, path)."""
        if self._initial_files is None or self._initial_files[0] != version:
            snapshot = self._init().delta_log.snapshot(version)
            if self._init().tracking:
                # an initial snapshot taken again after the log was started, at a later version
                # (Delta's getSnapshotAt): its schema replaces the logged one
                self._evolve_if_changed(version, snapshot.metadata, snapshot.protocol, replace_current=True)
            else:
                self._check_metadata(snapshot.metadata, version)
            files = sorted(snapshot.files, key=lambda a: (a.modification_time, a.path))
            self._initial_files = (version, files)
        constants: dict[str, Any] | None = None
        excluded = None
        if self.options.read.read_change_feed:
            ms = self._init().delta_log.snapshot(version).timestamp
            when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
            constants = {"_change_type": "insert", "_commit_version": version, "_commit_timestamp": when}
            # Delta's CDC source leaves excluded files out before admission counts them
            excluded = excluded_paths(self.options.exclude_regex)
        yield IndexedFile(version, BASE_INDEX)
        for i, add in enumerate(self._initial_files[1]):
            if not (excluded and excluded(add.path)):
                yield IndexedFile(version, i, _to_read(add, constants))
        yield IndexedFile(version, END_INDEX)

    def _commits(self, start: int, end: SourceOffset | None) -> Iterator[IndexedFile]:
        if self._init().tracking and not self.options.fail_on_data_loss:
            # Delta's require in getFileChanges / getFileChangesForCDC
            raise InvalidWriteOptionError(
                "requirement failed: Using schema from schema tracking log cannot tolerate missing commit files "
                f"(stream of {self._table}): failOnDataLoss=false cannot be used with schemaTrackingLocation; "
                "drop failOnDataLoss=false (or stream without schemaTrackingLocation)"
            )
        delta_log = self._init().delta_log
        latest_snapshot = delta_log.update()
        latest = latest_snapshot.version
        start = self._first_commit_left(start, latest_snapshot)
        feed: ChangeFeed | None = None
        if self.options.read.read_change_feed and start <= latest:
            last = latest if end is None else min(latest, end.reservoir_version)
            # each commit's changes are found when the batch reaches it (a stream far behind
            # does not read every later commit for every batch)
            feed = ChangeFeed.open(delta_log, start, last) if start <= last else None
        version = start
        while version <= latest:
            if end is not None and version > end.reservoir_version:
                return
            if end is not None and version == end.reservoir_version and end.index == BASE_INDEX:
                yield IndexedFile(version, BASE_INDEX)  # the batch stops before this commit
                return
            try:
                actions = delta_log.read_commit(version)
            except VersionNotFoundError:
                version = self._commit_after_gap(version, latest)
                continue
            yield from self._commit_files(version, actions, feed)
            version += 1

    def _commit_after_gap(self, missing: int, latest: int) -> int:
        """Delta's ``getChangeLogFiles(failOnDataLoss)`` over a gap in the log (a commit file
        deleted by hand): :class:`DeltaSourceDataLossError` naming the missing commit and the
        next one there, or with ``failOnDataLoss=false`` that next commit."""
        left = self._init().delta_log.list_commit_versions(missing)
        following = left[0] if left else latest + 1
        if self.options.fail_on_data_loss:
            raise DeltaSourceDataLossError(self._table, missing, following)
        return following

    def _commit_files(self, version: int, actions: list[Any], feed: ChangeFeed | None) -> Iterator[IndexedFile]:
        """The indexed files of commit ``version``: its ``add``s, or in the change feed its
        changes (a file ``excludeRegex`` matches left out, keeping the others' indices, as
        Delta's CDC source filters before admission)."""
        files: list[FileToRead]
        whole = None
        barrier = self._check_commit_metadata(actions, version)
        if barrier and self.options.read.read_change_feed:
            # a batch ends at the barrier: the commit's changes are read after the restart,
            # with its metadata (Delta's IndexedChangeFileSeq.filterFiles)
            files = []
        elif self.options.read.read_change_feed:  # the change feed streams removes too
            files = [] if feed is None else feed.commit_changes(version, actions)
            whole = whole_commit(actions, excluded_paths(self.options.exclude_regex))
        elif self._skip_commit(actions, version):
            files = []
        else:
            files = [_to_read(a) for a in actions if isinstance(a, AddFile) and a.data_change]
        excluded = excluded_paths(self.options.exclude_regex) if self.options.read.read_change_feed else None
        yield IndexedFile(version, BASE_INDEX, whole=whole)
        if barrier:
            yield IndexedFile(version, METADATA_CHANGE_INDEX)
        for i, item in enumerate(files):
            if not (excluded and excluded(item.path)):
                yield IndexedFile(version, i, item, whole=whole)
        yield IndexedFile(version, END_INDEX, whole=whole)

    def _first_commit_left(self, start: int, latest: Snapshot) -> int:
        """Delta's ``getChangesIterator(start, failOnDataLoss)``: the first commit to read from
        ``start`` on. Commits after the latest checkpoint are all in the log; one at or before
        it may have been deleted by log cleanup, which fails the stream
        (:class:`DeltaSourceDataLossError`) unless ``failOnDataLoss=false``, which goes on
        from the earliest commit left."""
        checkpoint = latest.checkpoint_version
        if start > latest.version or checkpoint is None or start > checkpoint:
            return start
        left = self._init().delta_log.list_commit_versions(start)
        first = left[0] if left else latest.version + 1
        if first > start and self.options.fail_on_data_loss:
            raise DeltaSourceDataLossError(self._table, start, first)
        return first

    def _changes(
        self, from_version: int, from_index: int, initial: bool, end: SourceOffset | None
    ) -> Iterator[IndexedFile]:
        """Delta's ``getFileChanges``: the indexed files after ``(from_version, from_index)``,
        up to ``end`` (or the Trigger.AvailableNow bound)."""
        items: Iterator[IndexedFile]
        if initial:
            items = itertools.chain(self._snapshot_files(from_version), self._commits(from_version + 1, end))
        else:
            items = self._commits(from_version, end)
        bound = end or self._available_now_end
        for item in items:
            if not (item.version > from_version or item.index > from_index):
                continue
            if bound is not None and (
                item.version > bound.reservoir_version
                or (item.version == bound.reservoir_version and item.index > bound.index)
            ):
                return
            yield item

    def _start_point(self, start: SourceOffset) -> tuple[int, int, bool]:
        """(version, index, initial snapshot?) to read after, for a batch starting at ``start``."""
        if not start.unstarted:
            return start.reservoir_version, start.index, start.is_initial_snapshot
        version = self._starting_version()
        if version is not None:
            return version, BASE_INDEX, False
        return self._init().snapshot.version, BASE_INDEX, True

    def _next_offset(self, start: SourceOffset, admission: AdmissionLimits | None) -> SourceOffset | None:
        from_version, from_index, initial = self._start_point(start)
        changes: Iterator[IndexedFile] = self._changes(from_version, from_index, initial, None)
        if admission is not None:
            changes = admission.filter(changes)
        last: IndexedFile | None = None
        for last in changes:  # the last one is the offset
            if last.index == METADATA_CHANGE_INDEX:
                break  # the batch ends at a schema change (Delta's stopIndexedFileIteratorAtSchemaChangeBarrier)
        if last is None:
            return None
        self._check_start_once(from_version)
        table_id = self._init().table_id
        if last.index == END_INDEX:
            return SourceOffset(table_id, last.version + 1, BASE_INDEX, False)
        return SourceOffset(table_id, last.version, last.index, initial and last.version == from_version)

    def _admission(self, limit: ReadLimit) -> AdmissionLimits | None:
        o = self.options
        if isinstance(limit, ReadAllAvailable):
            return None
        max_files = o.max_files_per_trigger
        if max_files is None and o.max_bytes_per_trigger is None:
            max_files = DEFAULT_MAX_FILES_PER_TRIGGER
        max_bytes = o.max_bytes_per_trigger
        if isinstance(limit, ReadMaxFiles):
            max_files = limit.max_files
        elif isinstance(limit, ReadMaxBytes):
            max_bytes = limit.max_bytes
        return AdmissionLimits(max_files, max_bytes, change_feed=o.read.read_change_feed)

    # -- DataSourceStreamReader -----------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        return SourceOffset(self._init().table_id, UNSTARTED, BASE_INDEX, True).to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.options
        if o.max_files_per_trigger is None and o.max_bytes_per_trigger is not None:
            return ReadMaxBytes(o.max_bytes_per_trigger)
        # with both options, maxBytesPerTrigger applies too (see _admission)
        return ReadMaxFiles(o.max_files_per_trigger or DEFAULT_MAX_FILES_PER_TRIGGER)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        offset = self._offset(start)
        self._start_schema_log(offset)
        pending = self._pending_schema_change(offset)
        if pending is not None:
            return pending.to_dict()
        if self._available_now and self._available_now_end is None:
            # the bound of this Trigger.AvailableNow run: what is in the log now
            self._available_now_end = self._next_offset(offset, None) or offset
        end = self._next_offset(offset, self._admission(limit))
        return start if end is None or end == offset else end.to_dict()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, last = self._offset(start), self._offset(end)
        if first == last:
            return []
        if first.unstarted and self._starting_version() is None:
            # Delta's extractStartingState: the initial snapshot the end offset was taken in
            version = last.reservoir_version if last.is_initial_snapshot else last.reservoir_version - 1
            from_version, from_index, initial = version, BASE_INDEX, True
        else:
            from_version, from_index, initial = self._start_point(first)
        self._check_start_once(from_version)
        excluded = excluded_paths(self.options.exclude_regex)
        items: list[FileToRead] = []
        seen = from_version - 1  # the versions before the batch's start were read already
        for f in self._changes(from_version, from_index, initial, last):
            seen = f.version
            if f.file is not None and not (excluded and excluded(f.file.path)):
                items.append(f.file)
        self._check_trailing_commit(from_version, from_index, last, seen)
        return files_partitions(self._init().spec, last.reservoir_version, items)

    def _check_trailing_commit(self, from_version: int, from_index: int, end: SourceOffset, seen: int) -> None:
        """Delta's trailing-commit validation in ``getBatch``: the batch read every commit up to
        the last one its end offset names (the end's version when the batch reads a file of it,
        else the version before), or a commit left the log after the batch was planned
        (:class:`DeltaSourceTrailingCommitMissingError`, whatever ``failOnDataLoss`` says)."""
        reads_end_version = end.index >= 0 and (from_version < end.reservoir_version or from_index < end.index)
        expected = end.reservoir_version if reads_end_version else end.reservoir_version - 1
        if seen < expected:
            raise DeltaSourceTrailingCommitMissingError(self._table, expected, seen)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilesPartition)
        yield from read_files(partition.spec, partition.files)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark keeps the offsets in the checkpoint. A batch that ended at a schema change
        is done: record the change in the schema log and stop the query (Delta fails the stream
        in ``commit``, after the batch before the change was written)."""
        offset = self._offset(end)
        if self._init().tracking and offset.index in (METADATA_CHANGE_INDEX, POST_METADATA_CHANGE_INDEX):
            self._evolve_if_changed(offset.reservoir_version, *self._metadata_at(offset.reservoir_version))


def _column_mapping_change_hint(earlier: Metadata, later: Metadata) -> str | None:
    """Delta's ``DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG`` advice, for a change
    that renames or drops columns of a column-mapped table (``hasNoColumnMappingSchemaChanges``
    fails): only ``schemaTrackingLocation`` streams across it. Without column mapping (a column
    dropped by ``overwriteSchema``) Delta's advice stays restart, else a new checkpoint."""
    if column_mapping_mode(later.configuration) == "none":
        return None
    change = schema_change(json.loads(earlier.schema_string), json.loads(later.schema_string))
    if change is None or not (change.renamed or change.dropped):
        return None
    return (
        "The change renames or drops columns (RENAME/DROP COLUMN), so restarting does not help: to "
        "stream across it, give the stream option schemaTrackingLocation (Delta's "
        "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG)"
    )


def _check_version_exists(delta_log: DeltaLog, version: int, table: str, out_of_range: bool = False) -> None:
    """Delta's ``checkVersionExists(mustBeRecreatable = false)`` for ``startingVersion``: the
    commit is in the log (a version past the latest, or cleaned up, is not; Delta's
    ``VersionNotFoundException``, as time travel raises it). With ``out_of_range`` (Delta's
    ``changeDataFeed.timestampOutOfRange.enabled``) a version past the latest is allowed."""
    latest = delta_log.update().version
    versions = delta_log.list_commit_versions(0)
    earliest = versions[0] if versions else latest
    if (version > latest and not out_of_range) or version < earliest:
        raise VersionNotFoundError(
            f"DELTA_VERSION_NOT_FOUND: Cannot time travel Delta table to version {version}. Available versions: "
            f"[{earliest}, {latest}]. The stream's startingVersion is not in {table}: start at one of them, or "
            "startingVersion='latest'",
            version=version,
            earliest=earliest,
            latest=latest,
        )


def _first_version_at_or_after(delta_log: DeltaLog, timestamp: str, table: str, out_of_range: bool = False) -> int:
    """Delta's ``getStartingVersionFromTimestamp``: the first commit at or after ``timestamp``
    (:func:`~deltalog.txn.log.history.starting_version_at`); past the latest commit it raises
    as time travel does (Delta's ``DELTA_TIMESTAMP_GREATER_THAN_COMMIT``), or with
    ``out_of_range`` is the version after the latest (Delta's ``canExceedLatest``)."""
    from deltalog.txn.log.history import starting_version_at

    try:
        return starting_version_at(delta_log, timestamp, can_exceed_latest=out_of_range)
    except VersionNotFoundError as exc:
        # the time travel error names the latest commit's time, as Delta's maximumTimestamp
        raise VersionNotFoundError(
            f"{exc}, or startingVersion='latest' (the stream's startingTimestamp {timestamp} of {table})",
            earliest=exc.earliest,
            latest=exc.latest,
        ) from None


def open_schema_log(options: StreamReadOptions, table_id: str) -> SchemaTrackingLog | None:
    """The stream's schema log (None without ``schemaTrackingLocation``)."""
    location = options.schema_tracking_location
    if location is None:
        return None
    store = logstore_for(location, options.read.storage_options)
    return SchemaTrackingLog(store, location, table_id, options.source_tracking_id)


def _check_unblocked(options: StreamReadOptions, log: SchemaTrackingLog) -> None:
    """Delta's ``validateIfSchemaChangeCanBeUnblocked`` when a source starts: the log's last
    change renames, drops or widens columns only with the option (or conf) that allows it."""
    previous, current = log.previous, log.current
    if previous is None or current is None:
        return
    change = schema_change(previous.schema, current.schema)
    if change is not None and change.incompatible:  # not retryable: no option unblocks it
        raise DeltaSourceSchemaChangedError(
            options.read.path, current.delta_commit_version, previous.data_schema_json, current.data_schema_json
        )
    change = blocked_change(dict(options.schema_change_unblocks), previous, current)
    if change is not None:
        version = current.delta_commit_version
        hint = unblock_hint(change, version, checkpoint_hash(current.source_metadata_path))
        raise DeltaSourceSchemaEvolutionBlockedError(
            change.name, change.details(), previous.delta_commit_version, version, hint
        )


def _metadata_evolution(table: str, version: int, entry: PersistedMetadata) -> DeltaSourceMetadataEvolutionError:
    """The error that stops a query once the schema log recorded ``entry`` (the metadata of
    ``version``): restarted, the query reads with it."""
    return DeltaSourceMetadataEvolutionError(
        table,
        version,
        entry.data_schema_json,
        json.dumps(entry.table_configurations or {}),
        entry.protocol_json or "",
    )
