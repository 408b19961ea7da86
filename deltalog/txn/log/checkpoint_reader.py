"""Reading checkpoints: classic single-file, multi-part, and V2 (UUID-named JSON or
Parquet, with sidecar files), straight into Arrow.

A checkpoint is read in two steps. :func:`read_checkpoint` reads the small actions
(protocol, metaData, txn, domainMetadata, checkpointMetadata, sidecar) at once -- a snapshot
needs them to exist. The file actions are read later, only when they are needed, by
:class:`CheckpointFiles`: a stream of ``(adds, removes)`` record batches that projects only
the ``add``/``remove`` fields replay keeps (``stats_parsed`` and ``partitionValues_parsed``
are not read; ``stats`` stays a string -- made from ``stats_parsed``, as Delta does, in a
checkpoint written without it, :mod:`deltalog.txn.log.checkpoint_stats`) and normalizes them to
:data:`~deltalog.txn.log.replay.ADD_SCHEMA` / ``REMOVE_SCHEMA`` whatever integer widths or
optional fields the writer used. A snapshot can therefore be loaded, or rewritten as a new
checkpoint, while holding one record batch of the old checkpoint at a time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.logstores.base import LogStore
from deltalog.txn.log.checkpoint_stats import with_stats_from_parsed
from deltalog.txn.log.log_segment import CheckpointInstance
from deltalog.txn.log.replay import (
    ADD_SCHEMA,
    ORDER,
    REMOVE_SCHEMA,
    LineOrigin,
    LogState,
    normalize_struct,
    parse_file_lines,
    parse_log_object,
    partition_keys,
)
from deltalog.txn.protocol.actions import (
    CheckpointMetadata,
    DomainMetadata,
    Metadata,
    Protocol,
    SetTransaction,
    Sidecar,
    decode_path,
)
from deltalog.txn.protocol.arrow_build import empty_table, false_array
from deltalog.txn.protocol.errors import CorruptLogError
from deltalog.txn.protocol.file_names import SIDECAR_DIR

if TYPE_CHECKING:
    # imported where a Parquet checkpoint is read: ``pyarrow.parquet`` pulls in ``pyarrow.fs``
    # with every cloud filesystem (~9 MB), which a table without a Parquet checkpoint never needs
    import pyarrow.parquet as pq

__all__ = ["READ_BATCH_ROWS", "CheckpointContents", "CheckpointFiles", "read_checkpoint", "sidecar_uri"]

log = logging.getLogger(__name__)

# Rows per record batch read from a Parquet checkpoint. The decoder's scratch memory grows
# with the batch: 8,192 rows keep a streamed rewrite of a 100k-file checkpoint ~20 MB below
# 32,768; a 1M-file rewrite takes ~30% longer (about half of delta-rs's time). The checkpoints
# we write have row groups this size (checkpoint_rows.BATCH_ROWS).
READ_BATCH_ROWS = 8_192
_SMALL = ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar")
_FILE_LINE_PREFIXES = ('{"add":', '{"remove":')


def _adds_out(adds: pa.Table) -> pa.Table:
    i = adds.schema.get_field_index("dataChange")
    return adds.set_column(i, "dataChange", false_array(len(adds)))


class CheckpointFiles:
    """The file actions of one checkpoint, read lazily as ``(adds, removes)`` batches."""

    def __init__(
        self,
        store: LogStore,
        version: int,
        parquet_uris: tuple[str, ...],
        json_lines: tuple[tuple[str, tuple[str, ...]], ...] = (),
        partition_keys: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.version = version
        self.parquet_uris = parquet_uris
        self.json_lines = json_lines  # (uri, file-action lines) of JSON V2 checkpoints
        self.partition_keys = partition_keys

    def __repr__(self) -> str:
        return f"CheckpointFiles(version={self.version}, files={len(self.parquet_uris) + len(self.json_lines)})"

    def file_batches(self) -> Iterator[tuple[pa.Table, pa.Table]]:
        for uri, lines in self.json_lines:
            adds, removes = parse_file_lines(lines, (), [LineOrigin(0, uri)], self.partition_keys)
            yield _adds_out(adds.drop_columns([ORDER])), removes.drop_columns([ORDER])
        for uri in self.parquet_uris:
            yield from _parquet_file_batches(self.store, uri)


# Optional fields only: a map's null count also counts empty maps, and an empty
# ``partitionValues`` (an unpartitioned table) must stay an empty map, not become null.
_SKIPPABLE = frozenset(
    {
        "tags",
        "deletionVector",
        "baseRowId",
        "defaultRowCommitVersion",
        "clusteringProvider",
        "stats",
        "extendedFileMetadata",
    }
)


def _all_null_fields(meta: pq.FileMetaData) -> set[str]:
    """The ``add.x`` / ``remove.x`` fields whose every leaf chunk is all null by the
    statistics (deletion vectors, tags, row tracking on most tables): not worth decoding."""
    candidates: dict[str, bool] = {}
    for j in range(meta.num_columns):
        parts = meta.schema.column(j).path.split(".")
        if len(parts) < 2 or parts[0] not in ("add", "remove"):
            continue
        name = f"{parts[0]}.{parts[1]}"
        if parts[1] not in _SKIPPABLE or candidates.get(name) is False:
            continue
        all_null = meta.num_row_groups > 0
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            stats = rg.column(j).statistics
            if stats is None or not stats.has_null_count or stats.null_count < rg.num_rows:
                all_null = False
                break
        candidates[name] = all_null
    return {name for name, all_null in candidates.items() if all_null}


def _projection(pf: pq.ParquetFile) -> list[str]:
    schema = pf.schema_arrow
    skip = _all_null_fields(pf.metadata)
    columns: list[str] = []
    for name, wanted in (("add", ADD_SCHEMA), ("remove", REMOVE_SCHEMA)):
        if name in schema.names:
            struct = schema.field(name).type
            if not pa.types.is_struct(struct):
                continue
            present = {struct.field(i).name for i in range(struct.num_fields)}
            fields = [f"{name}.{f.name}" for f in wanted if f.name in present]
            kept = [c for c in fields if c not in skip]
            if name == "add" and "stats" not in present and "stats_parsed" in present:
                kept.append("add.stats_parsed")  # the statistics are only there (checkpoint_stats)
            # keep one field so the struct's own validity (which rows are adds) is read
            columns += kept or fields[:1]
    return columns


def _parquet_file_batches(store: LogStore, uri: str) -> Iterator[tuple[pa.Table, pa.Table]]:
    import pyarrow.parquet as pq

    fs = store.filesystem()
    empty_removes = empty_table(REMOVE_SCHEMA)
    empty_adds = empty_table(ADD_SCHEMA)
    try:
        handle = fs.open_input_file(store.fs_path(uri))
    except FileNotFoundError:
        raise CorruptLogError(
            uri,
            "the checkpoint file disappeared after the snapshot was loaded (log cleanup?); load the table again",
        ) from None
    with handle:
        try:
            pf = pq.ParquetFile(handle, pre_buffer=False)
            columns = _projection(pf)
            if not columns:
                return
            batches = pf.iter_batches(batch_size=READ_BATCH_ROWS, columns=columns, use_threads=False)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                names = batch.schema.names
                adds = (
                    _adds_out(normalize_struct(with_stats_from_parsed(batch.column(names.index("add"))), ADD_SCHEMA))
                    if "add" in names
                    else empty_adds
                )
                removes = (
                    normalize_struct(batch.column(names.index("remove")), REMOVE_SCHEMA)
                    if "remove" in names
                    else empty_removes
                )
                del batch
                # hand the decoder's freed scratch memory back now: mimalloc keeps it
                # otherwise, and a million-file load peaks ~20 MB higher
                pa.default_memory_pool().release_unused()
                yield adds, removes
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise CorruptLogError(uri, f"not a readable Parquet checkpoint ({exc})") from exc


@dataclass
class CheckpointContents:
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, SetTransaction] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    checkpoint_metadata: CheckpointMetadata | None = None
    sidecars: list[Sidecar] = field(default_factory=list)
    files: CheckpointFiles | None = None

    def take_small(self, key: str, body: dict[str, Any]) -> None:
        if key == "protocol":
            self.protocol = Protocol.from_dict(body)
        elif key == "metaData":
            self.metadata = Metadata.from_dict(body)
        elif key == "txn":
            t = SetTransaction.from_dict(body)
            self.txns[t.app_id] = t
        elif key == "domainMetadata":
            d = DomainMetadata.from_dict(body)
            if not d.removed:
                self.domains[d.domain] = d
        elif key == "checkpointMetadata":
            self.checkpoint_metadata = CheckpointMetadata.from_dict(body)
        elif key == "sidecar":
            self.sidecars.append(Sidecar.from_dict(body))

    def non_file_state(self) -> LogState:
        return LogState(
            self.protocol,
            self.metadata,
            self.txns,
            self.domains,
            empty_table(ADD_SCHEMA),
            empty_table(REMOVE_SCHEMA),
        )

    def to_state(self) -> LogState:
        """The whole checkpoint, file actions read into memory."""
        base = self.non_file_state()
        return base if self.files is None else LogState.collect(base, self.files.file_batches())


def sidecar_uri(log_uri: str, path: str) -> str:
    """Where a sidecar lives: relative names are under ``_delta_log/_sidecars/``."""
    if "://" in path or path.startswith("/"):
        return decode_path(path)
    return f"{log_uri}/{SIDECAR_DIR}/{decode_path(path)}"


# a field every action of the column has: a row group whose chunk of it is all null holds
# no such action
_SMALL_PROBE = {
    "protocol": "protocol.minReaderVersion",
    "metaData": "metaData.id",
    "txn": "txn.appId",
    "domainMetadata": "domainMetadata.domain",
    "checkpointMetadata": "checkpointMetadata.version",
    "sidecar": "sidecar.path",
}


def _row_groups_with(pf: pq.ParquetFile, columns: list[str]) -> list[int]:
    """The row groups that may hold a non-null value of any of ``columns`` (by the
    column-chunk statistics; a chunk without statistics counts as holding one)."""
    meta = pf.metadata
    leaves = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
    probes = [leaves[_SMALL_PROBE[c]] for c in columns if _SMALL_PROBE[c] in leaves]
    if len(probes) != len(columns):
        return list(range(meta.num_row_groups))
    found = []
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        for j in probes:
            stats = rg.column(j).statistics
            if stats is None or not stats.has_null_count or stats.null_count < rg.num_rows:
                found.append(i)
                break
    return found


def _read_small_parquet(store: LogStore, uri: str, contents: CheckpointContents) -> None:
    """The small actions of a Parquet checkpoint, reading only the row groups that hold
    them (a checkpoint's metaData column is one value and a million nulls)."""
    import pyarrow.parquet as pq

    fs = store.filesystem()
    tables: list[pa.Table] = []
    try:
        with fs.open_input_file(store.fs_path(uri)) as handle:
            pf = pq.ParquetFile(handle)
            columns = [n for n in _SMALL if n in pf.schema_arrow.names]
            if columns:
                for i in _row_groups_with(pf, columns):
                    table = pf.read_row_group(i, columns=columns, use_threads=False)
                    mask = None
                    for c in columns:
                        valid = table.column(c).is_valid()
                        mask = valid if mask is None else pc.or_(mask, valid)
                    tables.append(table.filter(mask))
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptLogError(uri, f"not a readable Parquet checkpoint ({exc})") from exc
    for table in tables:
        for key in _SMALL:
            if key in table.column_names:
                col = table.column(key)
                if col.null_count == len(col):
                    continue
                for body in col.drop_null().to_pylist():
                    contents.take_small(key, _maps_to_dicts(body))


def _maps_to_dicts(value: Any) -> Any:
    """pyarrow gives maps as lists of (key, value) tuples; the codec wants dicts."""
    if isinstance(value, dict):
        return {k: _maps_to_dicts(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: _maps_to_dicts(v) for k, v in value}
    if isinstance(value, list):
        return [_maps_to_dicts(v) for v in value]
    return value


def _read_json_checkpoint(store: LogStore, uri: str, contents: CheckpointContents) -> tuple[str, ...]:
    """Read the small actions of a JSON V2 checkpoint; return its file-action lines."""
    file_lines: list[str] = []
    try:
        for n, line in enumerate(store.read(uri), 1):
            if line.startswith(_FILE_LINE_PREFIXES):
                file_lines.append(line)
                continue
            if not line.strip():
                continue
            obj = parse_log_object(line, uri, n)
            for key, body in obj.items():
                if body is None:
                    continue
                if key in ("add", "remove"):
                    file_lines.append(json.dumps({key: body}, separators=(",", ":")))
                else:
                    contents.take_small(key, body)
    except (KeyError, TypeError) as exc:
        raise CorruptLogError(uri, f"malformed action: missing or invalid {exc}") from None
    return tuple(file_lines)


def read_checkpoint(store: LogStore, log_uri: str, checkpoint: CheckpointInstance) -> CheckpointContents:
    """The small actions of a checkpoint, with its file actions as a lazy
    :class:`CheckpointFiles` (``contents.files``)."""
    contents = CheckpointContents()
    parquet: list[str] = []
    json_lines: list[tuple[str, tuple[str, ...]]] = []
    for status in checkpoint.files:
        if status.name.endswith(".json"):
            lines = _read_json_checkpoint(store, status.path, contents)
            if lines:
                json_lines.append((status.path, lines))
        else:
            _read_small_parquet(store, status.path, contents)
            parquet.append(status.path)
    parquet += [sidecar_uri(log_uri, s.path) for s in contents.sidecars]
    # A checkpoint without protocol or metaData is read as it is: the snapshot refuses the
    # state unless a later commit holds them (Delta's DELTA_STATE_RECOVER_ERROR), rather
    # than falling back to an earlier checkpoint as for a file that cannot be read.
    contents.files = CheckpointFiles(
        store, checkpoint.version, tuple(parquet), tuple(json_lines), partition_keys(contents.metadata)
    )
    log.debug("read checkpoint %s (%d files)", checkpoint.version, len(checkpoint.files))
    return contents
