"""Snapshot management: listing a table's log, loading and caching its snapshots.

:class:`SnapshotManagement` (named after Delta's trait of the same role) is the log layer's
view of one table. It finds the table's :class:`~deltalog.logstores.base.LogStore`, loads snapshots
(newest complete checkpoint + the commits after it, ``_last_checkpoint`` as a hint),
keeps the latest one cached and advances it *incrementally*: :meth:`SnapshotManagement.update` lists
only from the cached version + 1 and applies the new commits to the cached state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from deltalog.logstores.base import FileStatus, LogStore
from deltalog.logstores.options import StorageOptions
from deltalog.logstores.registry import logstore_for
from deltalog.txn.log.checkpoint_reader import CheckpointFiles, read_checkpoint
from deltalog.txn.log.checksum import read_checksum, validate_checksum
from deltalog.txn.log.history import version_at_timestamp
from deltalog.txn.log.last_checkpoint import read_last_checkpoint
from deltalog.txn.log.log_segment import (
    CheckpointInstance,
    LogListing,
    LogSegment,
    build_segment,
    parse_listing,
)
from deltalog.txn.log.replay import CommitBatch, LogState, parse_log_object, partition_keys
from deltalog.txn.log.snapshot import Snapshot
from deltalog.txn.log.time_travel_retention import enforce_time_travel_within_retention, enforcement_enabled
from deltalog.txn.protocol.actions import Action, Metadata, parse_line
from deltalog.txn.protocol.errors import (
    CorruptLogError,
    NonContiguousVersionsError,
    TableNotFoundError,
    VersionNotFoundError,
)
from deltalog.txn.protocol.file_names import DELTA_FILE_RE, LOG_DIR, delta_file, listing_prefix, log_path

__all__ = ["SnapshotManagement"]

log = logging.getLogger(__name__)

#: Delta's ``spark.databricks.delta.snapshotLoading.maxRetries`` (2): how many older
#: checkpoints a load tries after the one it picked cannot be read
SNAPSHOT_LOADING_MAX_RETRIES = 2


_Self = TypeVar("_Self", bound="SnapshotManagement")


class SnapshotManagement:
    """The transaction log of the Delta table at ``table_uri``: its listing, its commits and
    its snapshots. Users hold the :class:`~deltalog.txn.delta_log.DeltaLog` built on it."""

    def __init__(self, table_uri: str, store: LogStore) -> None:
        self.store = store
        self.table_uri = table_uri.rstrip("/")
        self.log_uri = log_path(self.table_uri, LOG_DIR)
        self._lock = threading.RLock()
        self._current: Snapshot | None = None

    @classmethod
    def for_table(
        cls: type[_Self],
        uri: str,
        storage_options: Mapping[str, str] | None = None,
        logstore: str | type[LogStore] | LogStore | None = None,
    ) -> _Self:
        store = logstore_for(uri, storage_options, logstore)
        return cls(store.resolve_path(uri.rstrip("/")), store)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.table_uri!r}, store={type(self.store).__name__})"

    @property
    def storage_options(self) -> StorageOptions:
        return self.store.options

    def commit_uri(self, version: int) -> str:
        return log_path(self.log_uri, delta_file(version))

    # -- listing and reading ------------------------------------------------------------

    def _list(self, start_version: int = 0) -> list[FileStatus]:
        return list(self.store.list_from(log_path(self.log_uri, listing_prefix(start_version))))

    def listing(self, start_version: int = 0) -> LogListing:
        return parse_listing(self._list(start_version))

    def list_commit_versions(self, start: int = 0) -> list[int]:
        versions = []
        for status in self._list(start):
            m = DELTA_FILE_RE.match(status.name)
            if m:
                versions.append(int(m.group(1)))
        return sorted(v for v in versions if v >= start)

    def _read_lines(self, path: str, version: int | None = None) -> list[str]:
        try:
            return list(self.store.read(path))
        except UnicodeDecodeError as exc:
            raise CorruptLogError(path, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        except FileNotFoundError:
            if version is not None:
                raise VersionNotFoundError(
                    f"commit {version} of {self.table_uri} does not exist (no {path})", version=version
                ) from None
            raise

    def read_commit(self, version: int) -> list[Action]:
        """The actions of commit ``version`` (unknown actions skipped)."""
        path = self.commit_uri(version)
        actions: list[Action] = []
        for n, line in enumerate(self._read_lines(path, version), 1):
            if not line.strip():
                continue
            try:
                action = parse_line(line)
            except ValueError as exc:
                raise CorruptLogError(path, f"line {n}: {exc}") from None
            if action is not None:
                actions.append(action)
        return actions

    def read_commit_raw(self, version: int, path: str | None = None) -> list[dict[str, Any]]:
        """The decoded JSON objects of commit ``version``, one per line."""
        path = path or self.commit_uri(version)
        out: list[dict[str, Any]] = []
        for n, line in enumerate(self._read_lines(path, version), 1):
            if line.strip():
                out.append(parse_log_object(line, path, n))
        return out

    def _collect(self, commits: list[FileStatus], batch: CommitBatch, metadata: Metadata | None = None) -> None:
        for status in commits:
            version = int(status.name[:20])
            batch.add_lines(version, self._read_lines(status.path, version), status.path)
        keys = set(partition_keys(metadata)) | set(partition_keys(batch.metadata))
        batch.partition_keys = tuple(sorted(keys))
        batch.parse()  # a bad line fails the load, naming its file and line

    # -- snapshots ----------------------------------------------------------------------

    def _commit_timestamp(
        self, version: int, state: LogState, batch: CommitBatch | None, fallback: int
    ) -> int | Callable[[], int]:
        """The timestamp of ``version``: its ``inCommitTimestamp`` when the table has in-commit
        timestamps, else ``fallback`` (the file's modification time). A commit of such a table
        without commitInfo or its ``inCommitTimestamp`` gives a read that raises
        :class:`CorruptLogError` (Delta's ``DELTA_MISSING_COMMIT_INFO`` /
        ``DELTA_MISSING_COMMIT_TIMESTAMP``), so only asking for the timestamp fails."""
        md = state.metadata
        if md is None or not md.properties.enable_in_commit_timestamps:
            return fallback
        info = batch.commit_infos.get(version) if batch is not None else None
        if info is None:
            try:
                raw = self.read_commit_raw(version)
            except VersionNotFoundError:
                return fallback  # cleaned up behind a checkpoint
            info = next((o["commitInfo"] for o in raw if isinstance(o.get("commitInfo"), dict)), None)
        if info is not None and info.get("inCommitTimestamp") is not None:
            return int(info["inCommitTimestamp"])
        return partial(_raise_missing_ict, self.commit_uri(version), version, "commitInfo" if info is None else "")

    def _load(self, segment: LogSegment) -> Snapshot:
        """The snapshot of ``segment``; when its checkpoint cannot be read, the snapshot
        rebuilt from the newest earlier complete checkpoint and the commits after it, up to
        :data:`SNAPSHOT_LOADING_MAX_RETRIES` times, the last resort being the commits alone
        (Delta's ``createSnapshotFromGivenOrEquivalentLogSegment``), provided those commits
        are still there; else the first error is raised."""
        first: CorruptLogError | None = None
        for _ in range(SNAPSHOT_LOADING_MAX_RETRIES + 1):
            try:
                return self._load_segment(segment)
            except CorruptLogError as exc:
                checkpoint = segment.checkpoint
                if checkpoint is None or not any(exc.path == f.path for f in checkpoint.files):
                    raise
                first = first or exc
                fallback = self._segment_before(segment.version, checkpoint)
                if fallback is None:
                    raise first from None
                log.warning(
                    "the checkpoint at version %d of %s cannot be read (%s); rebuilding version %d from %s",
                    checkpoint.version,
                    self.table_uri,
                    exc.problem,
                    segment.version,
                    "the commits"
                    if fallback.checkpoint is None
                    else f"the checkpoint at version {fallback.checkpoint_version}",
                )
                segment = fallback
        assert first is not None
        raise first

    def _segment_before(self, version: int, checkpoint: CheckpointInstance) -> LogSegment | None:
        """The segment of ``version`` on the newest complete checkpoint older than
        ``checkpoint`` (on the commits alone when there is none), or None when the commits
        it needs are gone (Delta's ``getLogSegmentWithMaxExclusiveCheckpointVersion``)."""
        listing = self.listing(0)
        earlier = [c for c in listing.complete_checkpoints(version) if c.version < checkpoint.version]
        try:
            return build_segment(self.log_uri, listing, version, checkpoint=earlier[-1] if earlier else None)
        except (VersionNotFoundError, NonContiguousVersionsError):
            return None

    def _load_segment(self, segment: LogSegment) -> Snapshot:
        """The snapshot of ``segment``: the checkpoint's small actions and the commits are
        read now; the checkpoint's file actions are read (and the commits' file actions
        reconciled with them, in Arrow) on first use."""
        files = None
        if segment.checkpoint is not None:
            contents = read_checkpoint(self.store, self.log_uri, segment.checkpoint)
            base = contents.non_file_state()
            files = contents.files
        else:
            base = LogState.empty()
        batch = CommitBatch()
        self._collect(list(segment.commits), batch, base.metadata)
        state = base.with_non_file_actions(batch)
        if segment.commits:
            fallback = segment.commits[-1].modification_time
        else:
            assert segment.checkpoint is not None
            fallback = segment.checkpoint.modification_time
        ts = self._commit_timestamp(segment.version, state, batch, fallback)
        pending = (batch,) if batch.has_file_actions else ()
        snapshot = Snapshot(
            self.table_uri,
            segment.version,
            state,
            ts,
            segment,
            pending=pending,
            pending_actions=batch.num_file_actions,
            base=files,
        )
        if segment.commits and segment.commit_versions[-1] == segment.version:
            snapshot.last_commit = segment.commits[-1]
        if segment.checksum is not None:
            checksum = read_checksum(self.store, self.log_uri, segment.version)
            if checksum is not None:
                validate_checksum(snapshot, checksum)  # metadata, protocol, domains; files when loaded
                snapshot.checksum = checksum
                snapshot.checksum_from_log = True
        return snapshot

    def _segment(self, version: int | None) -> LogSegment | None:
        hint = read_last_checkpoint(self.store, self.log_uri)
        start = 0
        if hint is not None and (version is None or version >= hint.version):
            start = hint.version
        listing = self.listing(start)
        if start > 0 and not listing.complete_checkpoints(version):
            log.warning(
                "_last_checkpoint of %s points to version %d, which has no complete checkpoint; listing the whole log",
                self.table_uri,
                start,
            )
            listing = self.listing(0)
        if listing.max_version < 0:
            return None
        return build_segment(self.log_uri, listing, version)

    def _empty(self) -> Snapshot:
        return Snapshot(self.table_uri, -1, LogState.empty(), 0)

    def empty_snapshot(self) -> Snapshot:
        """The state before version 0 (no table yet): what a transaction that creates the
        table read, to open it again at read version -1."""
        return self._empty()

    def update(self) -> Snapshot:
        """The latest snapshot; advances the cached one incrementally."""
        with self._lock:
            cached = self._current
            if cached is None or cached.version < 0:
                snap = self._reload()
            else:
                snap = self._advance(cached)
            self._current = snap
            return snap

    def _advance(self, cached: Snapshot) -> Snapshot:
        # listed from the cached version itself (the same one request): when nothing is left
        # at or after it, the log it came from was deleted or replaced by a shorter one; from
        # its checkpoint while its files are still to be read there, as Delta lists from the
        # cached segment's checkpoint (a newer one below the cached version replaces it)
        listing = parse_listing(self._list(self._listing_start(cached)))
        new_versions = sorted(v for v in listing.commits if v > cached.version)
        if listing.max_version < cached.version:
            return self._reload()  # as Delta: an empty directory is version -1
        if self._reads_an_older_checkpoint(cached, listing) or self._log_replaced(cached, listing):
            return self._reload()
        if cached.last_commit is None:
            cached.last_commit = listing.commits.get(cached.version)  # known from now on
        if not new_versions:
            return cached
        expected = list(range(cached.version + 1, new_versions[-1] + 1))
        if new_versions != expected:
            return self._reload()  # commits were cleaned up behind a newer checkpoint
        batch = CommitBatch()
        commits = [listing.commits[v] for v in new_versions]
        self._collect(commits, batch, cached.non_file_state.metadata)
        last = new_versions[-1]
        probe = cached.non_file_state.with_non_file_actions(batch)
        ts = self._commit_timestamp(last, probe, batch, commits[-1].modification_time)
        advanced = cached.apply_batch(last, batch, ts)
        advanced.last_commit = commits[-1]
        return advanced

    @staticmethod
    def _listing_start(cached: Snapshot) -> int:
        """Where :meth:`_advance` lists from: the cached version, or the checkpoint the cached
        snapshot has yet to read its files from."""
        source = cached.file_source
        if cached.files_in_memory or not isinstance(source, CheckpointFiles):
            return cached.version
        return min(cached.version, max(source.version, 0))

    @staticmethod
    def _log_replaced(cached: Snapshot, listing: LogListing) -> bool:
        """Whether the commit file of the cached version is gone or is another file than the
        one the cached state was read from (size or modification time differ): the table
        was deleted and made again, so its cached state is no base for the new commits
        (Delta's update compares the listed files, ``LogSegment.equals``; ``DeltaLogSuite``:
        deleting and recreating a directory should cause the snapshot to be recomputed)."""
        known = cached.last_commit
        if known is None:
            return False
        seen = listing.commits.get(cached.version)
        return seen is None or (seen.size, seen.modification_time) != (known.size, known.modification_time)

    @staticmethod
    def _reads_an_older_checkpoint(cached: Snapshot, listing: LogListing) -> bool:
        """Whether ``cached`` still reads its files from a checkpoint older than one the
        listing shows: then the snapshot is loaded on the newer checkpoint, as Delta's
        update takes the new log segment, since log cleanup may delete the older one
        (``SnapshotManagementSuite``: expired checkpoints in the snapshot cache)."""
        if cached.files_in_memory:
            return False
        newer = listing.complete_checkpoints()
        return bool(newer) and newer[-1].version > getattr(cached.file_source, "version", -1)

    def _reload(self) -> Snapshot:
        """The latest snapshot, loaded afresh (the empty one when the log holds nothing)."""
        segment = self._segment(None)
        return self._empty() if segment is None else self._load(segment)

    @property
    def current(self) -> Snapshot:
        """The cached latest snapshot (loaded on first use)."""
        snap = self._current
        return self.update() if snap is None else snap

    def install_snapshot(self, snapshot: Snapshot) -> None:
        """Cache ``snapshot`` if it is newer than the cached one (the engine hands over the
        post-commit state)."""
        with self._lock:
            if self._current is None or snapshot.version > self._current.version:
                self._current = snapshot

    def table_exists(self) -> bool:
        return self.update().version >= 0

    def snapshot(
        self,
        version: int | None = None,
        timestamp: datetime | int | str | None = None,
        *,
        enforce_retention: bool = False,
    ) -> Snapshot:
        """The snapshot at ``version`` or at ``timestamp`` (Delta's time-travel rules), or the
        latest. Raises :class:`TableNotFoundError` for time travel on a missing table.

        ``enforce_retention`` (Delta's ``enforceTimeTravelWithinDeletedFileRetention``, off
        by default as in Delta's ``getSnapshotAt``): refuse a version older than the table's
        ``delta.deletedFileRetentionDuration`` unless it is the latest, with
        :class:`~deltalog.txn.log.time_travel_retention.TimeTravelBeyondDeletedFileRetentionDurationError`;
        a storage option of :data:`~deltalog.txn.log.time_travel_retention.ENFORCE_KEYS` set
        to ``false`` turns that off. Time-travel reads, RESTORE and CLONE ask for it."""
        if version is not None and timestamp is not None:
            raise ValueError("give a version or a timestamp, not both")
        if timestamp is not None:
            version = version_at_timestamp(self, timestamp)
        if version is None:
            return self.update()
        target = self._snapshot_at(version)
        if enforce_retention and enforcement_enabled(self.storage_options):
            enforce_time_travel_within_retention(target, self.update())
        return target

    def _snapshot_at(self, version: int) -> Snapshot:
        if version < 0:
            raise VersionNotFoundError(
                f"DELTA_VERSION_NOT_FOUND: cannot time travel to version {version} of {self.table_uri}: "
                "versions start at 0",
                version=version,
            )
        cached = self._current
        if cached is not None and cached.version == version:
            return cached
        segment = self._segment(version)
        if segment is None:
            raise TableNotFoundError(self.table_uri)
        return self._load(segment)

    def require_table(self) -> Snapshot:
        snap = self.update()
        if snap.version < 0:
            raise TableNotFoundError(self.table_uri)
        return snap


def _raise_missing_ict(path: str, version: int, missing: str) -> int:
    if missing == "commitInfo":
        problem = f"DELTA_MISSING_COMMIT_INFO: table feature inCommitTimestamp is enabled but version {version}"
        raise CorruptLogError(path, f"{problem} has no commitInfo")
    problem = f"DELTA_MISSING_COMMIT_TIMESTAMP: table feature inCommitTimestamp is enabled but version {version}"
    raise CorruptLogError(path, f"{problem} has no commitInfo.inCommitTimestamp")
