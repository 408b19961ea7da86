"""Writing V2 checkpoints (PROTOCOL "V2 Spec", "UUID-named checkpoint", "Sidecar Files").

Used when the table has the ``v2Checkpoint`` feature and ``delta.checkpointPolicy=v2``:

1. the file actions are streamed into sidecar Parquet files
   ``_delta_log/_sidecars/<uuid>.parquet`` (columns ``add`` and ``remove`` only; one file
   per ``part_size`` actions, 50,000 by default as Delta's, and one empty file when there
   is no file action, as Delta writes at least one);
2. the checkpoint itself, ``<version>.checkpoint.<uuid>.parquet`` (or ``.json``), holds
   ``checkpointMetadata``, ``protocol``, ``metaData``, ``txn``, ``domainMetadata`` and one
   ``sidecar`` action per sidecar file -- it is written last and at once, so a reader that
   sees it finds every sidecar in place;
3. ``_last_checkpoint`` names it in its ``v2Checkpoint`` entry.

Multi-part checkpoints are forbidden on such tables (the protocol says so), so
``part_size`` only splits the sidecars.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

import pyarrow as pa

from deltalog.txn.log.checkpoint_rows import (
    REMOVE,
    AddConverter,
    CheckpointResult,
    FileActionCounts,
    PartWriter,
    checkpoint_schema,
    file_action_batches,
    non_file_rows,
    publish_checkpoint,
)
from deltalog.txn.log.last_checkpoint import LastCheckpointInfo
from deltalog.txn.log.replay import STRING_MAP
from deltalog.txn.protocol.actions import CheckpointMetadata, DomainMetadata, Sidecar, action_to_line
from deltalog.txn.protocol.file_names import SIDECAR_DIR, log_path, v2_checkpoint_file

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["SIDECAR", "V2_SIDECAR_PART_SIZE", "write_v2_checkpoint"]

log = logging.getLogger(__name__)

#: the file actions per sidecar when no part size is given (Delta's default
#: ``checkpoint.partSize`` for V2 checkpoints)
V2_SIDECAR_PART_SIZE = 50_000

SIDECAR = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", STRING_MAP),
    ]
)


def _stat(dlog: SnapshotManagement, uri: str) -> tuple[int, int]:
    info = dlog.store.filesystem().get_file_info(dlog.store.fs_path(uri))
    mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
    return int(info.size or 0), int(mtime)


def _write_sidecars(
    dlog: SnapshotManagement, snapshot: Snapshot, now: int, converter: AddConverter, rows_per_file: int | None
) -> tuple[list[Sidecar], list[str], FileActionCounts, int]:
    """Stream the file actions into sidecar files; (sidecars, their URIs, what was streamed, actions)."""
    schema = pa.schema([pa.field("add", converter.add_type), pa.field("remove", REMOVE)])
    sidecar_dir = log_path(dlog.log_uri, SIDECAR_DIR)
    fs = dlog.store.filesystem()
    try:
        fs.create_dir(dlog.store.fs_path(sidecar_dir), recursive=True)
    except OSError:  # object stores have no directories to create
        pass
    uris: list[str] = []
    writer: PartWriter | None = None
    written = 0
    counts = FileActionCounts()

    try:
        for batch in file_action_batches(snapshot, schema, converter, now, counts):
            offset = 0
            while offset < batch.num_rows:
                if writer is None or (rows_per_file is not None and writer.rows >= rows_per_file):
                    if writer is not None:
                        writer.close()
                    uris.append(f"{sidecar_dir}/{uuid.uuid4()}.parquet")
                    writer = PartWriter(dlog, uris[-1], schema)
                take = batch.num_rows - offset
                if rows_per_file is not None:
                    take = min(take, rows_per_file - writer.rows)
                writer.write(batch.slice(offset, take) if take != batch.num_rows else batch)
                offset += take
                written += take
        if writer is None:  # no file action: still one (empty) sidecar, as Delta writes numParts >= 1
            uris.append(f"{sidecar_dir}/{uuid.uuid4()}.parquet")
            writer = PartWriter(dlog, uris[-1], schema)
        writer.close()
        writer = None
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    sidecars = []
    for uri in uris:
        size, mtime = _stat(dlog, uri)
        sidecars.append(Sidecar(uri.rsplit("/", 1)[1], size, mtime))
    return sidecars, uris, counts, written


def write_v2_checkpoint(
    dlog: SnapshotManagement,
    snapshot: Snapshot,
    *,
    now: int,
    fmt: str = "parquet",
    part_size: int | None = None,
) -> CheckpointResult:
    """Write a UUID-named V2 checkpoint of ``snapshot`` with sidecars (see the module doc)."""
    if fmt not in ("parquet", "json"):
        raise ValueError(f"a V2 checkpoint is 'parquet' or 'json', not {fmt!r}")
    base_schema = checkpoint_schema(snapshot, True)
    converter = AddConverter(snapshot, base_schema)
    sidecars, sidecar_uris, counts, file_actions = _write_sidecars(
        dlog, snapshot, now, converter, part_size if part_size and part_size > 0 else V2_SIDECAR_PART_SIZE
    )
    name = v2_checkpoint_file(snapshot.version, fmt)
    uri = log_path(dlog.log_uri, name)
    if fmt == "json":
        top_actions = _write_json_top_level(dlog, snapshot, uri, sidecars, now)
    else:
        top_actions = _write_parquet_top_level(dlog, snapshot, uri, sidecars, base_schema, now)
    size, mtime = _stat(dlog, uri)
    info = LastCheckpointInfo(
        version=snapshot.version,
        size=top_actions + file_actions,
        size_in_bytes=size + sum(s.size_in_bytes for s in sidecars),
        num_of_add_files=counts.adds,
        v2_checkpoint={"path": name, "sizeInBytes": size, "modificationTime": mtime},
    )
    publish_checkpoint(dlog, snapshot, info, sidecar_uris)
    log.info(
        "wrote V2 checkpoint %d of %s (%s, %d sidecar(s), %d file actions)",
        snapshot.version,
        dlog.table_uri,
        name,
        len(sidecars),
        file_actions,
    )
    uris = (uri, *sidecar_uris)
    actions = top_actions + file_actions
    return CheckpointResult(snapshot.version, uris, actions, counts.adds, size, counts.table_size_bytes)


def _write_json_top_level(
    dlog: SnapshotManagement, snapshot: Snapshot, uri: str, sidecars: list[Sidecar], now: int
) -> int:
    """The JSON top-level file: every non-file action, then the sidecars; returns the action count."""
    lines = [
        action_to_line(CheckpointMetadata(snapshot.version)),
        action_to_line(snapshot.protocol),
        action_to_line(snapshot.metadata),
        *(action_to_line(t) for t in snapshot.set_transactions_at(now).values()),
        *(action_to_line(DomainMetadata(d.domain, d.configuration, False)) for d in snapshot.domain_metadata.values()),
        *(action_to_line(s) for s in sidecars),
    ]
    dlog.store.write(uri, lines)
    return len(lines)


def _write_parquet_top_level(
    dlog: SnapshotManagement,
    snapshot: Snapshot,
    uri: str,
    sidecars: list[Sidecar],
    base_schema: pa.Schema,
    now: int,
) -> int:
    """The Parquet top-level file: the non-file rows, then the sidecar rows; returns the row count."""
    fields = [f for f in base_schema if f.name not in ("add", "remove")]
    schema = pa.schema([*fields, pa.field("sidecar", SIDECAR)])
    head = non_file_rows(snapshot, schema, now, True)
    writer = PartWriter(dlog, uri, schema)
    try:
        writer.write(head)
        if sidecars:
            writer.write(_sidecar_rows(schema, sidecars))
        writer.close()
    except BaseException:
        writer.abort()
        raise
    rows: int = head.num_rows + len(sidecars)
    return rows


def _sidecar_rows(schema: pa.Schema, sidecars: list[Sidecar]) -> pa.RecordBatch:
    from deltalog.txn.protocol.arrow_build import int64_array, string_array
    from deltalog.txn.protocol.arrow_build import null_array as nulls

    n = len(sidecars)
    values = pa.StructArray.from_arrays(
        [
            string_array([s.path for s in sidecars]),
            int64_array([s.size_in_bytes for s in sidecars]),
            int64_array([s.modification_time for s in sidecars]),
            nulls(n, STRING_MAP),
        ],
        fields=list(SIDECAR),
    )
    return pa.RecordBatch.from_arrays(
        [values if f.name == "sidecar" else pa.nulls(n, f.type) for f in schema], schema=schema
    )
