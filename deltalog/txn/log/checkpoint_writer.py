"""Writing classic (single-file or multi-part) Parquet checkpoints, then ``_last_checkpoint``.

The rows come from :mod:`~deltalog.txn.log.checkpoint_rows` and are streamed, part by part,
through its :class:`~deltalog.txn.log.checkpoint_rows.PartWriter`: on object stores (a file
is published only when its upload completes) each file is written once, in place, with no
rename; elsewhere through a temporary name and a rename. With ``delta.checkpointPolicy=v2``
the V2 writer (:mod:`~deltalog.txn.log.checkpoint_v2`) writes the checkpoint instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from deltalog.txn.log.checkpoint_parts import part_rows
from deltalog.txn.log.checkpoint_rows import (
    AddConverter,
    CheckpointResult,
    FileActionCounts,
    PartWriter,
    checkpoint_schema,
    file_action_batches,
    load_if_overwriting_source,
    non_file_rows,
    publish_checkpoint,
)
from deltalog.txn.log.checkpoint_v2 import write_v2_checkpoint
from deltalog.txn.log.last_checkpoint import LastCheckpointInfo
from deltalog.txn.protocol.checkpoint_protection import check_checkpoint_allowed
from deltalog.txn.protocol.features import protocol_features
from deltalog.txn.protocol.file_names import checkpoint_file_singular, checkpoint_file_with_parts, log_path

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["CheckpointResult", "write_checkpoint"]

log = logging.getLogger(__name__)


def write_checkpoint(
    dlog: SnapshotManagement,
    snapshot: Snapshot,
    *,
    part_size: int | None = None,
    now_ms: int | None = None,
    v2_format: str = "parquet",
) -> CheckpointResult:
    """Write the checkpoint of ``snapshot`` and point ``_last_checkpoint`` at it.

    The file actions are streamed: from the snapshot's tables when they are loaded, else
    straight from the previous checkpoint's record batches and the commits after it
    (:meth:`Snapshot.file_batches`), so the state is never held in memory twice.
    ``part_size`` (actions per file) writes a multi-part checkpoint when the state has
    more actions than that (the state is loaded to count them); otherwise one
    ``%020d.checkpoint.parquet`` file. On a table with the ``v2Checkpoint`` feature the
    classic checkpoint follows the V2 spec (``checkpointMetadata``, never multi-part), and
    with ``delta.checkpointPolicy=v2`` a UUID-named V2 checkpoint with sidecars is written
    (``v2_format``: ``parquet`` or ``json``; see :mod:`deltalog.txn.log.checkpoint_v2`).
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    _check_protection(dlog, snapshot)
    reader, _ = protocol_features(snapshot.protocol)
    with_cm = "v2Checkpoint" in reader
    if with_cm and snapshot.properties.checkpoint_policy == "v2":
        return write_v2_checkpoint(dlog, snapshot, now=now, fmt=v2_format, part_size=part_size)
    if with_cm:
        part_size = None  # multi-part checkpoints are forbidden with v2Checkpoint (PROTOCOL)
    base_schema = checkpoint_schema(snapshot, with_cm)
    converter = AddConverter(snapshot, base_schema)
    schema = base_schema.set(base_schema.get_field_index("add"), pa.field("add", converter.add_type))
    head = non_file_rows(snapshot, schema, now, with_cm)
    uris = _checkpoint_uris(dlog, snapshot, part_size, now)
    load_if_overwriting_source(dlog, snapshot, uris)

    counts = FileActionCounts()

    def batches() -> Iterator[pa.RecordBatch]:
        yield head
        yield from file_action_batches(snapshot, schema, converter, now, counts)

    written = _write_parts(dlog, uris, schema, batches())
    return _publish(dlog, snapshot, uris, written, counts)


def _check_protection(dlog: SnapshotManagement, snapshot: Snapshot) -> None:
    """A checkpoint of a version the latest state protects (``checkpointProtection``) needs a
    protocol at that version this client can write (the RFC's requirement b). A snapshot at
    least as new as the cached latest one carries the newest boundary itself."""
    latest = dlog.update() if dlog.current.version > snapshot.version else snapshot
    check_checkpoint_allowed(
        snapshot.version, snapshot.protocol, snapshot.metadata, latest.protocol, latest.metadata, dlog.table_uri
    )


def _checkpoint_uris(dlog: SnapshotManagement, snapshot: Snapshot, part_size: int | None, now: int) -> list[str]:
    """One checkpoint file, or ``ceil(file actions / part_size)`` parts when the state has
    more adds and tombstones than ``part_size`` (Delta's ``numParts``, which counts
    ``numOfFiles + numOfRemoves``, not the protocol, metadata and transactions)."""
    num_parts = 1
    if part_size is not None and part_size > 0:
        total = snapshot.num_files + snapshot.tombstones_table(now).num_rows
        if total > part_size:
            num_parts = -(-total // part_size)
    names = (
        [checkpoint_file_singular(snapshot.version)]
        if num_parts == 1
        else checkpoint_file_with_parts(snapshot.version, num_parts)
    )
    return [log_path(dlog.log_uri, name) for name in names]


def _write_parts(
    dlog: SnapshotManagement,
    uris: list[str],
    schema: pa.Schema,
    batches: Iterable[pa.RecordBatch],
) -> int:
    """Stream ``batches`` into the files ``uris``; returns the rows written. A multi-part
    checkpoint's parts are Spark hash partitions of the path (:mod:`checkpoint_parts`,
    as the protocol requires; the part size only sets how many there are), every part
    written even when it gets no row. On failure the open files are aborted."""
    writers: list[PartWriter] = []
    written = 0
    try:
        for uri in uris:
            writers.append(PartWriter(dlog, uri, schema))
        for batch in batches:
            if len(writers) == 1:
                writers[0].write(batch)
            else:
                for part, rows in part_rows(batch, len(writers)).items():
                    writers[part].write(batch.take(rows))
            written += batch.num_rows
        while writers:
            writers[0].close()
            writers.pop(0)
    except BaseException:
        for writer in writers:
            writer.abort()
        raise
    return written


def _publish(
    dlog: SnapshotManagement, snapshot: Snapshot, uris: list[str], written: int, counts: FileActionCounts
) -> CheckpointResult:
    """Point ``_last_checkpoint`` at the written checkpoint and let ``snapshot`` use it."""
    num_parts = len(uris)
    size = sum(s.size for u in uris for s in dlog.store.list_from(u) if s.path.endswith(u.rsplit("/", 1)[1]))
    info = LastCheckpointInfo(
        version=snapshot.version,
        size=written,
        parts=None if num_parts == 1 else num_parts,
        size_in_bytes=size,
        num_of_add_files=counts.adds,
    )
    publish_checkpoint(dlog, snapshot, info, uris)
    log.info(
        "wrote checkpoint %d of %s (%d actions, %d file(s))",
        snapshot.version,
        dlog.table_uri,
        written,
        num_parts,
    )
    return CheckpointResult(snapshot.version, tuple(uris), written, counts.adds, size, counts.table_size_bytes)
