"""Writing deletion vectors: DML that marks rows deleted instead of rewriting files.

Delta Spark's ``DMLWithDeletionVectorsHelper`` and ``DeletionVectorWriter`` in the
engine. For each touched file the caller gives the row indexes (positions in the Parquet
file) that the command deletes; :func:`mark_rows_deleted` then

1. merges them with the file's existing deletion vector (their union);
2. writes the new bitmaps, several to one file ``[<prefix>/]deletion_vector_<uuid>.bin``
   (a new file once a file's DVs would pass ``packing_target_size``, 2 MiB by default:
   Delta's ``BinPackingIterator`` over ``spark.databricks.delta.deletionVectors.packing.targetSize``)
   (PROTOCOL "Deletion Vector File Storage Format": a format version byte ``1``, then per
   DV a big-endian int32 size, the portable ``RoaringBitmapArray`` and a big-endian CRC-32
   of it), described by ``u`` descriptors (the random prefix, when
   ``delta.randomizeFilePrefixes`` is on, followed by the Z85-encoded UUID) with their
   ``offset``, ``sizeInBytes`` and ``cardinality``; bitmaps no larger than
   ``max_inline_bytes`` are stored inline in the log instead (``i``, Z85). Delta Spark's
   DML never inlines (it always writes files), so the default is 0;
3. returns the actions Delta commits (``AddFile.removeRows``): a ``remove`` of the old
   ``(path, DV)`` pair and an ``add`` of the same path with the new DV, both with
   ``dataChange=true``, the add's statistics kept but marked ``tightBounds=false``
   (Delta's ``updateStatsToWideBounds``); a file whose every row is now deleted is just
   removed (Delta's ``isFullyReplaced``), with no DV written for it.
"""

from __future__ import annotations

import decimal
import json
import random
import string
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from deltalog.txn.log.deletion_vectors import (
    dv_absolute_path,
    read_deletion_vector,
    serialize_bitmap,
    write_dv_file,
    z85_encode,
)
from deltalog.txn.protocol.actions import Action, AddFile, DeletionVectorDescriptor, Metadata
from deltalog.txn.protocol.errors import InvalidTableStateError
from deltalog.txn.protocol.file_stats import stats_json
from deltalog.txn.protocol.properties import TableProperties

if TYPE_CHECKING:
    from deltalog.logstores.base import LogStore

__all__ = [
    "DEFAULT_PACKING_TARGET_SIZE",
    "DeletionVectorCommit",
    "DeletionVectorWriter",
    "deleted_rows_of",
    "inline_descriptor",
    "mark_rows_deleted",
    "random_prefix",
    "random_prefix_length",
    "widen_stats",
]

_ALPHANUMERIC = string.ascii_letters + string.digits

#: Delta's ``deletionVectors.packing.targetSize`` default: DVs of one command go to a new
#: file once the current one would pass this many bytes.
DEFAULT_PACKING_TARGET_SIZE = 2 * 1024 * 1024
#: The bytes a DV file adds around each bitmap: its size and its checksum (big-endian int32s).
_DV_FRAMING_BYTES = 8


def random_prefix_length(configuration: Mapping[str, str]) -> int:
    """Delta's ``DeltaUtils.getRandomPrefixLength``: ``delta.randomPrefixLength`` (default 2)
    when ``delta.randomizeFilePrefixes`` is true, else 0; ``InvalidPropertyError`` (a
    ``ValueError``) for a length that is not a positive number."""
    properties = TableProperties(dict(configuration))
    return properties.random_prefix_length if properties.randomize_file_prefixes else 0


def random_prefix(length: int, seed: str | None = None) -> str:
    """``length`` random alphanumeric characters (Delta's ``getRandomPrefix``); the same
    characters for the same ``seed`` when one is given."""
    rng = random.Random(seed) if seed is not None else random
    return "".join(rng.choices(_ALPHANUMERIC, k=length))


def inline_descriptor(rows: np.ndarray) -> DeletionVectorDescriptor:
    """An inline (``i``) descriptor: the serialized bitmap, Z85-encoded in the log."""
    data = serialize_bitmap(rows)
    return DeletionVectorDescriptor("i", z85_encode(data), len(data), len(rows))


@dataclass
class DeletionVectorWriter:
    """Stores bitmaps for one command: each :meth:`write` call puts its on-disk bitmaps in one
    new DV file (Delta packs the DVs of a task's bin in one file). :attr:`written` lists the
    files written, so a command whose commit fails can :meth:`discard` them."""

    store: LogStore
    table_uri: str
    prefix_length: int = 0
    max_inline_bytes: int = 0
    packing_target_size: int = DEFAULT_PACKING_TARGET_SIZE
    written: list[str] = field(default_factory=list)

    def write(self, bitmaps: Sequence[np.ndarray]) -> list[DeletionVectorDescriptor]:
        """Descriptors of ``bitmaps`` (sorted unique row indexes, none empty), in order."""
        out: list[DeletionVectorDescriptor | None] = [None] * len(bitmaps)
        on_disk: list[int] = []
        for i, rows in enumerate(bitmaps):
            if not len(rows):
                raise ValueError("an empty deletion vector is never stored (the file keeps no DV)")
            if self.max_inline_bytes > 0:
                inline = inline_descriptor(rows)
                if inline.size_in_bytes <= self.max_inline_bytes:
                    out[i] = inline
                    continue
            on_disk.append(i)
        for packed in self._bins(bitmaps, on_disk):
            blob, entries = write_dv_file([bitmaps[i] for i in packed])
            encoded = random_prefix(self.prefix_length) + z85_encode(uuid.uuid4().bytes)
            for i, (offset, size, cardinality) in zip(packed, entries):
                out[i] = DeletionVectorDescriptor("u", encoded, size, cardinality, offset)
            self._put(dv_absolute_path(self.table_uri, DeletionVectorDescriptor("u", encoded, 0, 0)), blob)
        return [d for d in out if d is not None]

    def _bins(self, bitmaps: Sequence[np.ndarray], indexes: Sequence[int]) -> list[list[int]]:
        """``indexes`` in order, cut into files as Delta's ``BinPackingIterator``: a bin is
        closed when the next DV (its serialized bitmap and framing) would take it past
        :attr:`packing_target_size`; a bin holds at least one DV."""
        bins: list[list[int]] = []
        current: list[int] = []
        current_size = 0
        for i in indexes:
            size = len(serialize_bitmap(bitmaps[i])) + _DV_FRAMING_BYTES
            if current and current_size + size > self.packing_target_size:
                bins.append(current)
                current, current_size = [], 0
            current.append(i)
            current_size += size
        return [*bins, current] if current else bins

    def _put(self, path: str, blob: bytes) -> None:
        fs = self.store.filesystem()
        target = self.store.fs_path(path)
        fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        self.written.append(path)
        with fs.open_output_stream(target) as sink:
            sink.write(blob)

    def discard(self) -> None:
        """Delete the DV files this writer wrote (a commit that did not land)."""
        fs = self.store.filesystem()
        for path in self.written:
            try:
                fs.delete_file(self.store.fs_path(path))
            except FileNotFoundError:
                pass
        self.written.clear()


def deleted_rows_of(store: LogStore, table_uri: str, add: AddFile) -> np.ndarray:
    """The rows ``add``'s deletion vector already deletes (int64, sorted; empty without one)."""
    if add.deletion_vector is None:
        return np.array([], np.int64)
    return np.asarray(read_deletion_vector(store, table_uri, add.deletion_vector).to_numpy(), dtype=np.int64)


def _physical_stats(store: LogStore, table_uri: str, add: AddFile, metadata: Metadata | None) -> str | None:
    """``add``'s statistics with ``numRecords`` (a file with a deletion vector must have it,
    PROTOCOL "Deletion Vectors"): its own, else computed anew from the Parquet footer, as
    Delta's ``getActionsWithStats`` recomputes the statistics of a file without
    ``numRecords``: every column the table's ``metadata`` collects statistics for (only
    ``numRecords`` without ``metadata``)."""
    if add.num_records() is not None:
        return add.stats
    from deltalog.txn.log.calendar_rebase import rebase_spec
    from deltalog.txn.log.data_files import data_file_arrow_schema, open_data_file
    from deltalog.txn.protocol.actions import decode_path
    from deltalog.txn.protocol.file_stats import StatsCollector

    rel = decode_path(add.path)
    path = rel if "://" in rel or rel.startswith("/") else f"{table_uri.rstrip('/')}/{rel}"
    with open_data_file(store.filesystem(), store.fs_path(path)) as pf:
        if metadata is None:
            return stats_json({"numRecords": int(pf.metadata.num_rows)})
        collector = StatsCollector.for_table(metadata, data_file_arrow_schema(pf))
        collector.update_from_footer(pf.metadata, datetime_bounds=rebase_spec(pf.metadata.metadata) is None)
    return collector.to_json()


def widen_stats(stats: str | None, num_records: int, old_cardinality: int) -> str:
    """``stats`` with ``tightBounds=false`` (Delta's ``updateStatsToWideBounds``): when the
    bounds were tight, a column whose ``nullCount`` equals the logical row count (all its
    live rows null) gets the physical row count, which stays true whatever rows the new
    DV deletes. Stats without ``numRecords`` get it (``num_records``)."""
    # decimals stay exact: a double would round their bounds
    parsed: dict[str, Any] = json.loads(stats, parse_float=decimal.Decimal) if stats else {}
    was_tight = parsed.get("tightBounds") is True
    logical = num_records - old_cardinality
    if was_tight and isinstance(parsed.get("nullCount"), dict):

        def widen(node: dict[str, Any]) -> dict[str, Any]:
            return {
                k: widen(v) if isinstance(v, dict) else (num_records if v == logical else v) for k, v in node.items()
            }

        parsed["nullCount"] = widen(parsed["nullCount"])
    parsed.setdefault("numRecords", num_records)
    parsed["tightBounds"] = False
    return stats_json(parsed)


@dataclass
class DeletionVectorCommit:
    """What :func:`mark_rows_deleted` decided: the actions to commit, Delta's DV metrics,
    the rows newly deleted, and the writer (to :meth:`~DeletionVectorWriter.discard` its
    files if the commit does not land)."""

    actions: list[Action]
    writer: DeletionVectorWriter
    num_modified_rows: int = 0
    num_removed_files: int = 0
    num_dvs_added: int = 0
    num_dvs_removed: int = 0
    num_dvs_updated: int = 0
    touched: list[AddFile] = field(default_factory=list)
    fully_removed: list[AddFile] = field(default_factory=list)

    def metrics(self, prefix: str = "num") -> dict[str, str]:
        """Delta's ``numDeletionVectorsAdded/Removed/Updated`` (``numTarget...`` for MERGE:
        ``prefix="numTarget"``), as its history shows them: an updated DV counts as added
        and removed too (``DeltaOperationMetrics.DELETION_VECTORS``)."""
        return {
            f"{prefix}DeletionVectorsAdded": str(self.num_dvs_added + self.num_dvs_updated),
            f"{prefix}DeletionVectorsRemoved": str(self.num_dvs_removed + self.num_dvs_updated),
            f"{prefix}DeletionVectorsUpdated": str(self.num_dvs_updated),
        }


def mark_rows_deleted(
    store: LogStore,
    table_uri: str,
    configuration: Mapping[str, str],
    marks: Sequence[tuple[AddFile, np.ndarray]],
    now: int,
    *,
    max_inline_bytes: int = 0,
    packing_target_size: int = DEFAULT_PACKING_TARGET_SIZE,
    metadata: Metadata | None = None,
) -> DeletionVectorCommit:
    """The actions that delete, in each ``(file, row indexes)`` of ``marks``, those rows
    (see the module docstring). Files where no new row is deleted are left alone. Raises
    :class:`InvalidTableStateError` for a row index past the file's ``numRecords``. A file
    without ``numRecords`` gets statistics computed from its footer for the columns the
    table's ``metadata`` names (:func:`_physical_stats`)."""
    writer = DeletionVectorWriter(
        store, table_uri, random_prefix_length(configuration), max_inline_bytes, packing_target_size
    )
    result = DeletionVectorCommit([], writer)
    pending: list[tuple[AddFile, np.ndarray, int, str | None]] = []
    for add, new_rows in marks:
        new = np.asarray(new_rows, dtype=np.int64)
        if not len(new):
            continue
        stats = _physical_stats(store, table_uri, add, metadata)
        num_records = int(json.loads(stats or "{}")["numRecords"])
        if int(new.max()) >= num_records or int(new.min()) < 0:
            raise InvalidTableStateError(
                f"row index {int(new.max())} is outside {add.path}, which has {num_records} rows: "
                "the rows to delete were not read from this file"
            )
        old = deleted_rows_of(store, table_uri, add)
        merged = np.union1d(old, new)
        modified = len(merged) - len(old)
        if not modified:
            continue
        result.num_modified_rows += modified
        result.touched.append(add)
        if len(merged) == num_records:  # every row deleted: the file goes (isFullyReplaced)
            result.actions.append(add.remove(now))
            result.fully_removed.append(add)
            result.num_removed_files += 1
            result.num_dvs_removed += add.deletion_vector is not None
            continue
        pending.append((add, merged, num_records, stats))
    descriptors = writer.write([merged for _, merged, _, _ in pending])
    for (add, _, num_records, stats), dv in zip(pending, descriptors):
        _re_add(result, add, dv, widen_stats(stats, num_records, _cardinality(add)), now)
    return result


def _cardinality(add: AddFile) -> int:
    return add.deletion_vector.cardinality if add.deletion_vector is not None else 0


def _re_add(result: DeletionVectorCommit, add: AddFile, dv: DeletionVectorDescriptor, stats: str, now: int) -> None:
    """Delta's ``AddFile.removeRows``: a remove of ``add`` and an add of its path with ``dv``
    and the widened ``stats``, counted as an added or an updated DV."""
    result.actions.append(add.remove(now))
    result.actions.append(replace(add, deletion_vector=dv, data_change=True, stats=stats))
    if add.deletion_vector is None:
        result.num_dvs_added += 1
    else:
        result.num_dvs_updated += 1
