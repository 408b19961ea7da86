"""CLONE: a new Delta table made of another table's files at one version.

Delta's ``CloneTableCommand`` in the txn layer, one commit on the target (``CLONE``,
parameters ``source`` and ``sourceVersion``, Delta's metrics ``sourceTableSize``,
``sourceNumOfFiles``, ``numRemovedFiles``, ``numCopiedFiles``, ``removedFilesSize``,
``copiedFilesSize``):

- **shallow** (Delta's ``SHALLOW CLONE``): the target's ``add`` actions point at the
  source's data files by absolute path, and relative deletion vectors become absolute
  (``p``), as Delta's ``makePathsAbsolute`` does. Nothing is copied. VACUUM of the target
  never deletes them (they are outside its directory), but VACUUM of the source may: the
  clone then fails to read, as in Delta.
- **deep**: every data file and deletion-vector file is copied under the target with its
  relative path (a source file named by absolute path gets its file name), so the clone
  depends on nothing of the source.

The target keeps the source's schema, partitioning, properties (plus ``properties``) and
protocol, under a new table id (its name and description are the target's: none for a new
table), and its liquid-clustering columns (the ``delta.clustering`` domain, the only domain
Delta's ``handleDomainMetadataForCloneTable`` copies); row IDs and commit versions are not
carried over (Delta neither). ``properties`` may not change the column mapping mode (Delta's
``checkColumnMappingMode``). Without ``replace`` the target location must not hold anything
yet (Delta's ``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``); with it (Delta's ``CREATE OR
REPLACE TABLE ... CLONE``) a Delta table there must have no files
(:class:`CloneReplaceNonEmptyTableError`, Delta's ``DELTA_UNSUPPORTED_NON_EMPTY_CLONE``) and
keeps its id, name, description, history and protocol (merged with the source's, never a
downgrade). Files a deep clone copied are deleted only when the commit certainly did not land.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from deltalog.txn.commit.commit_errors import commit_certainly_failed
from deltalog.txn.commit.operations import Clone
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.data_files import missing_files, name_missing
from deltalog.txn.log.deletion_vectors import dv_absolute_path
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import (
    Action,
    AddFile,
    DeletionVectorDescriptor,
    DomainMetadata,
    Metadata,
    decode_path,
    encode_path,
    is_absolute_path,
)
from deltalog.txn.protocol.clustering import CLUSTERING_DOMAIN
from deltalog.txn.protocol.column_mapping import column_mapping_mode
from deltalog.txn.protocol.errors import DeltaLogError, RowTrackingError, UnsupportedColumnMappingModeChangeError
from deltalog.txn.protocol.identity import with_merged_high_water_marks
from deltalog.txn.protocol.properties import validate_table_properties
from deltalog.txn.protocol.protocol_requirements import merge_protocols, protocol_for_new_table

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "CloneReplaceNonEmptyTableError",
    "CloneResult",
    "CloneSourceFilesMissingError",
    "CloneTargetNotEmptyError",
    "clone",
]

log = logging.getLogger(__name__)

COPY_THREADS = 8
#: Bytes read and written at a time by a deep clone's copies.
COPY_CHUNK = 8 * 1024 * 1024


class CloneTargetNotEmptyError(DeltaLogError, FileExistsError):
    """The clone's target location already holds a table or files."""

    def __init__(self, target_uri: str) -> None:
        super().__init__(
            f"cannot clone into {target_uri}: the location is not empty. Clone into a new, empty "
            "location, or replace the table there (replace=True); nothing was written."
        )
        self.target_uri = target_uri


class CloneReplaceNonEmptyTableError(DeltaLogError, FileExistsError):
    """A clone with ``replace`` onto a Delta table that still has files (Delta's
    ``DELTA_UNSUPPORTED_NON_EMPTY_CLONE``)."""

    error_class = "DELTA_UNSUPPORTED_NON_EMPTY_CLONE"

    def __init__(self, target_uri: str, num_files: int) -> None:
        super().__init__(
            f"[{self.error_class}] cannot replace the table at {target_uri} by a clone: it has {num_files} "
            "files, and CLONE only replaces an empty table. Delete its rows first (DELETE with no "
            "condition), or clone into a new, empty location; nothing was written."
        )
        self.target_uri = target_uri
        self.num_files = num_files


class CloneSourceFilesMissingError(DeltaLogError, FileNotFoundError):
    """Data or deletion-vector files of the source version are gone (vacuumed): a clone of it
    could not be read (shallow) or copied (deep); nothing was written."""

    def __init__(self, source_uri: str, version: int, missing: list[str]) -> None:
        shown = name_missing(missing)
        super().__init__(
            f"cannot clone version {version} of {source_uri}: {len(missing)} of its data or deletion-vector "
            f"files no longer exist (removed by VACUUM?): {shown}. Clone a later version whose files still "
            "exist; nothing was written."
        )
        self.source_uri = source_uri
        self.version = version
        self.missing = missing


@dataclass
class CloneResult:
    """The outcome of :func:`clone`: the target's version and Delta's CLONE metrics."""

    target_uri: str
    version: int
    source_version: int
    metrics: dict[str, str] = field(default_factory=dict)


def _absolute_uri(table_uri: str, path: str) -> str:
    """An action path made absolute against its table, still URI-encoded as actions are."""
    if is_absolute_path(path):
        return path
    return f"{encode_path(table_uri.rstrip('/'))}/{path}"


def _absolute_dv(table_uri: str, dv: DeletionVectorDescriptor) -> DeletionVectorDescriptor:
    if dv.storage_type != "u":
        return dv
    return replace(dv, storage_type="p", path_or_inline_dv=encode_path(dv_absolute_path(table_uri, dv)))


def _shallow(source_uri: str, add: AddFile) -> AddFile:
    dv = add.deletion_vector
    return replace(
        add,
        path=_absolute_uri(source_uri, add.path),
        deletion_vector=None if dv is None else _absolute_dv(source_uri, dv),
        data_change=True,
        base_row_id=None,
        default_row_commit_version=None,
    )


@dataclass
class _Copy:
    """One file a deep clone copies: from a source URI to a target URI."""

    source: str
    target: str
    size: int
    is_data_file: bool = True


def _deep(source_uri: str, target_uri: str, add: AddFile, copies: list[_Copy]) -> AddFile:
    """The target's add for ``add``, recording the copies it needs."""
    relative = decode_path(add.path)
    if is_absolute_path(add.path):
        relative = f"{uuid.uuid4().hex[:8]}-{relative.rstrip('/').rsplit('/', 1)[-1]}"
        source_file = decode_path(add.path)
    else:
        source_file = f"{source_uri}/{relative}"
    copies.append(_Copy(source_file, f"{target_uri}/{relative}", add.size))
    dv = add.deletion_vector
    if dv is not None and dv.storage_type == "u":
        dv_source = dv_absolute_path(source_uri, dv)
        dv_target = dv_absolute_path(target_uri, dv)  # same prefix and name under the target
        if all(c.target != dv_target for c in copies):
            copies.append(_Copy(dv_source, dv_target, dv.size_in_bytes, is_data_file=False))
    return replace(add, path=encode_path(relative), data_change=True, base_row_id=None, default_row_commit_version=None)


def _copy_files(source: DeltaLog, target: DeltaLog, copies: list[_Copy]) -> None:
    src_fs, dst_fs = source.store.filesystem(), target.store.filesystem()

    def copy_one(item: _Copy) -> None:
        directory = item.target.rsplit("/", 1)[0]
        try:
            dst_fs.create_dir(target.store.fs_path(directory), recursive=True)
        except OSError:
            pass  # there already, or an object store without directories
        # Not pyarrow's copy_files: it hands the source object's metadata (S3's Content-Type,
        # ...) to the destination, which Azure refuses when the blob is committed, and it
        # drops an error raised when the destination stream closes (an empty blob stays).
        # The target store's stream takes no metadata, and closing it here raises.
        with (
            src_fs.open_input_stream(source.store.fs_path(item.source)) as src,
            target.store.open_output_stream(item.target) as out,
        ):
            while chunk := src.read(COPY_CHUNK):
                out.write(chunk)

    with ThreadPoolExecutor(max_workers=COPY_THREADS) as pool:
        list(pool.map(copy_one, copies))


def _require_empty_target(target: DeltaLog) -> None:
    import pyarrow.fs as pafs

    fs = target.store.filesystem()
    root = target.store.fs_path(target.table_uri)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.File:
        raise CloneTargetNotEmptyError(target.table_uri)
    if info.type == pafs.FileType.Directory and fs.get_file_info(pafs.FileSelector(root, recursive=False)):
        raise CloneTargetNotEmptyError(target.table_uri)
    if target.update().version >= 0:  # a store that keeps its log elsewhere (a database)
        raise CloneTargetNotEmptyError(target.table_uri)


def _target_metadata(
    snapshot: Snapshot, existing: Snapshot | None, properties: Mapping[str, str] | None, allow_arbitrary: bool
) -> Metadata:
    """The clone's metadata (Delta's ``determineTargetMetadata``): the source's, with
    ``properties`` checked as Delta's CLONE checks them
    (:func:`~deltalog.txn.protocol.properties.validate_table_properties`) on top; the
    target's id, name and description (a new id, none, none for a new table) and identity
    high-water marks; the source's creation time. The column mapping mode may not change (Delta's
    ``checkColumnMappingMode``)."""
    overrides = validate_table_properties(properties or {}, allow_arbitrary=allow_arbitrary)
    config = {**snapshot.metadata.configuration, **overrides}
    # the source's createdTime stays, as Delta's ``sourceTable.metadata.copy(...)`` keeps it
    metadata = replace(snapshot.metadata, id=str(uuid.uuid4()), name=None, description=None, configuration=config)
    if existing is not None:
        metadata = replace(
            with_merged_high_water_marks(metadata, existing.metadata),
            id=existing.metadata.id,
            name=existing.metadata.name,
            description=existing.metadata.description,
        )
    new_mode = column_mapping_mode(config)
    for before in (snapshot.metadata, *([existing.metadata] if existing is not None else [])):
        if column_mapping_mode(before.configuration) != new_mode:
            raise UnsupportedColumnMappingModeChangeError(
                column_mapping_mode(before.configuration),
                new_mode,
                hint="a CLONE keeps the source table's mode: leave delta.columnMapping.mode out of its properties, "
                "or clone into a new location",
            )
    return metadata


def _check_clonable(
    source: DeltaLog, snapshot: Snapshot, target: DeltaLog, existing: Snapshot | None, replace: bool
) -> None:
    """Refuse, before anything is written, a target that is not empty (without ``replace``),
    a Delta table with files (with it), and a source version whose files were vacuumed
    (Delta checks nothing for a shallow clone, which then cannot be read)."""
    if not replace:
        _require_empty_target(target)
    elif existing is not None and existing.num_files:
        raise CloneReplaceNonEmptyTableError(target.table_uri, existing.num_files)
    missing = missing_files(source.store, source.table_uri, snapshot.files)
    if missing:
        raise CloneSourceFilesMissingError(source.table_uri, snapshot.version, missing)


def _require_record_counts(txn: OptimisticTransaction, files: Sequence[AddFile]) -> None:
    """Refuse, before anything is copied, a clone whose target gives row ids (it supports
    row tracking) to a source file without ``numRecords`` (Delta's
    ``DELTA_CLONE_WITH_ROW_TRACKING_WITHOUT_STATS``)."""
    if not row_tracking.is_supported(txn.protocol) or row_tracking.is_suspended(txn.metadata):
        return
    missing = [f.path for f in files if f.num_records() is None]
    if missing:
        raise RowTrackingError(
            f"[DELTA_CLONE_WITH_ROW_TRACKING_WITHOUT_STATS] cannot clone into {txn.delta_log.table_uri} with row "
            f"tracking: {len(missing)} source file(s) have no numRecords statistic (e.g. {missing[0]}), which row ids "
            "need. Collect statistics on the source first, or clone without row tracking."
        )


def _prepare_target(txn: OptimisticTransaction, snapshot: Snapshot, options: _TargetOptions) -> None:
    """The target's protocol and metadata in ``txn`` (Delta's ``determineTargetProtocol``):
    the source's protocol, merged with an existing target's (never a downgrade, unless
    ``allow_protocol_downgrade``: then the source's as for a new table), then what the
    metadata's properties need."""
    existing = txn.snapshot if txn.table_exists else None
    metadata = _target_metadata(snapshot, existing, options.properties, options.allow_arbitrary_properties)
    downgrading = existing is not None and options.allow_protocol_downgrade
    if existing is None:
        txn.upgrade_protocol(snapshot.protocol)  # first: the metadata adds what the properties need
    elif not downgrading and (merged := merge_protocols(existing.protocol, snapshot.protocol)) is not None:
        txn.upgrade_protocol(merged)
    # no table creation for IcebergCompat (Delta's isCreatingOrReorgTable): files keep their names
    txn.update_metadata(metadata, creating_table=False)
    if downgrading:
        needed = protocol_for_new_table(metadata)  # the properties before the protocol ones are taken out
        wanted = merge_protocols(snapshot.protocol, needed) or snapshot.protocol
        if wanted != txn.protocol:
            txn.downgrade_protocol(wanted, lambda _snapshot: True)  # the target has no files
    txn.mark_constraints_checked()  # the source's own files, checked when they were written


@dataclass(frozen=True)
class _TargetOptions:
    """How the target's metadata and protocol are chosen (see :func:`clone`)."""

    properties: Mapping[str, str] | None = None
    allow_arbitrary_properties: bool = False
    allow_protocol_downgrade: bool = False


def clone(
    source: DeltaLog,
    target_uri: str | DeltaLog,
    *,
    version: int | None = None,
    timestamp: datetime | int | str | None = None,
    shallow: bool = True,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
    lock: str | CommitLock | None = None,
    enforce_retention: bool = True,
    allow_arbitrary_properties: bool = False,
    source_name: str | None = None,
    allow_protocol_downgrade: bool = False,
) -> CloneResult:
    """Clone ``source`` (at ``version``/``timestamp``, the latest by default) to the new
    table at ``target_uri`` (a URI with ``storage_options``, or a :class:`DeltaLog`, whose
    settings the commit takes): shallow (absolute paths to the source's files) or deep (copies).
    ``properties`` (keys checked as Delta's) are set on the target on top of the source's;
    ``replace`` replaces an empty Delta table at the target (Delta's ``CREATE OR REPLACE``).
    Raises (writing nothing) :class:`CloneTargetNotEmptyError`,
    :class:`CloneReplaceNonEmptyTableError`, :class:`CloneSourceFilesMissingError` (vacuumed files),
    or, as Delta 4.1+ does for ``CLONE ... VERSION AS OF``,
    :class:`~deltalog.txn.log.time_travel_retention.TimeTravelBeyondDeletedFileRetentionDurationError`
    for a version older than ``delta.deletedFileRetentionDuration`` that is not the latest
    (``enforce_retention=False`` or the storage option turns that off, as for :func:`restore`).
    ``source_name``: the ``source`` parameter of the commit (the source's URI by default; Delta
    records its table name, ``delta.`<path>``` for a table by path). ``allow_protocol_downgrade``
    (Delta's ``restore.protocolDowngradeAllowed``): a replaced table gets the source's protocol
    even when its own is higher."""
    snapshot = source.snapshot(version=version, timestamp=timestamp, enforce_retention=enforce_retention)
    if snapshot.version < 0:
        source.require_table()
    target = DeltaLog.for_table(target_uri, storage_options) if isinstance(target_uri, str) else target_uri
    txn = target.start_transaction(lock=lock)
    existing = txn.snapshot if txn.table_exists else None
    _check_clonable(source, snapshot, target, existing, replace)
    _prepare_target(txn, snapshot, _TargetOptions(properties, allow_arbitrary_properties, allow_protocol_downgrade))
    files = snapshot.files
    _require_record_counts(txn, files)
    copies: list[_Copy] = []
    adds: list[Action] = [*_cloned_domains(snapshot, existing)]
    adds += [
        _shallow(source.table_uri, f) if shallow else _deep(source.table_uri, target.table_uri, f, copies)
        for f in files
    ]
    metrics = _clone_metrics(snapshot, copies)
    operation = Clone(source=source_name or source.table_uri, source_version=snapshot.version, user_metrics=metrics)
    committed = _copy_and_commit(txn, source, target, copies, adds, operation)
    log.info(
        "cloned %s at version %d to %s (%s, %d files)",
        source.table_uri,
        snapshot.version,
        target.table_uri,
        "shallow" if shallow else "deep",
        len(adds),
    )
    return CloneResult(target.table_uri, committed, snapshot.version, metrics)


def _copy_and_commit(
    txn: OptimisticTransaction,
    source: DeltaLog,
    target: DeltaLog,
    copies: list[_Copy],
    adds: list[Action],
    operation: Clone,
) -> int:
    """Copy a deep clone's files, then commit; the copies are deleted again when the commit
    certainly did not land."""
    committing = False
    try:
        if copies:
            _copy_files(source, target, copies)
        committing = True
        return txn.commit_large(iter(adds), operation)
    except BaseException as exc:
        if copies and (not committing or commit_certainly_failed(exc, txn.may_have_landed)):
            _delete_copies(target, copies)
        raise


def _cloned_domains(snapshot: Snapshot, existing: Snapshot | None) -> list[DomainMetadata]:
    """The source's domains a clone carries over: only ``delta.clustering``, as Delta's
    ``METADATA_DOMAIN_TO_COPY_FOR_CLONE_TABLE``; a replaced table's own is removed when the
    source has none (Delta's ``handleDomainMetadataForReplaceTable``)."""
    domain = snapshot.domain_metadata.get(CLUSTERING_DOMAIN)
    if domain is not None and not domain.removed:
        return [DomainMetadata(CLUSTERING_DOMAIN, domain.configuration, False)]
    old = None if existing is None else existing.domain_metadata.get(CLUSTERING_DOMAIN)
    if old is None or old.removed:
        return []
    return [DomainMetadata(CLUSTERING_DOMAIN, old.configuration, True)]


def _clone_metrics(snapshot: Snapshot, copies: list[_Copy]) -> dict[str, str]:
    """Delta's CLONE operation metrics."""
    return {
        "sourceTableSize": str(snapshot.size_in_bytes),
        "sourceNumOfFiles": str(snapshot.num_files),
        "numRemovedFiles": "0",
        "numCopiedFiles": str(sum(1 for c in copies if c.is_data_file)),
        "removedFilesSize": "0",
        "copiedFilesSize": str(sum(c.size for c in copies if c.is_data_file)),
    }


def _delete_copies(target: DeltaLog, copies: list[_Copy]) -> None:
    """Delete what a failed deep clone copied, and the directories it made for them (the
    target was empty before), so the clone can be tried again at that location."""
    for item in copies:
        try:
            target.store.delete(item.target)
        except OSError:
            log.warning("could not delete %s copied by a failed clone", item.target)
    _delete_empty_dirs(target, {item.target.rsplit("/", 1)[0] for item in copies})


def _delete_empty_dirs(target: DeltaLog, directories: set[str]) -> None:
    """Delete ``directories`` (URIs under the target) and their parents below the target's
    root (which is left as it was), deepest first, each only when empty."""
    import pyarrow.fs as pafs

    fs = target.store.filesystem()
    root = target.table_uri.rstrip("/")
    chain: set[str] = set()
    for directory in directories:
        while directory.startswith(root + "/"):
            chain.add(directory)
            directory = directory.rsplit("/", 1)[0]
    for directory in sorted(chain, key=len, reverse=True):
        path = target.store.fs_path(directory)
        try:
            if not fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
                fs.delete_dir(path)
        except OSError:
            pass  # not empty, gone, or an object store without directories
