"""The rows of a checkpoint and the writer of one checkpoint file (a part, a sidecar).

The checkpoint has the protocol's schema (PROTOCOL "Checkpoint Schema"): one column per
action type (``txn``, ``add``, ``remove``, ``metaData``, ``protocol``, ``domainMetadata``, and
``checkpointMetadata`` when the table has the ``v2Checkpoint`` feature), one action per row.
``add.stats`` is the JSON string (``delta.checkpoint.writeStatsAsJson``, default true);
``add.stats_parsed`` and ``add.partitionValues_parsed`` are added when
``delta.checkpoint.writeStatsAsStruct`` is true. Rows are built from the snapshot's Arrow
tables in batches (zero-copy slices) -- the state is never turned into Python objects.
:class:`PartWriter` streams them to one file, written so a reader never sees half of it.
Used by the classic (:mod:`~deltalog.txn.log.checkpoint_writer`) and the V2
(:mod:`~deltalog.txn.log.checkpoint_v2`) checkpoint writers.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.txn.log.checkpoint_reader import CheckpointFiles
from deltalog.txn.log.checksum import validate_checksum
from deltalog.txn.log.last_checkpoint import LastCheckpointInfo, write_last_checkpoint
from deltalog.txn.log.replay import ADD_SCHEMA, STRING_MAP
from deltalog.txn.log.replay import DV_TYPE as DV
from deltalog.txn.protocol.arrow_build import (
    empty_table,
    false_array,
    int32_array,
    int64_array,
    null_array,
    string_array,
    string_scalar,
)
from deltalog.txn.protocol.schema import (
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructType,
    to_arrow_type,
)
from deltalog.txn.protocol.stats_columns import StatsColumns

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = [
    "BATCH_ROWS",
    "REMOVE",
    "AddConverter",
    "CheckpointResult",
    "FileActionCounts",
    "PartWriter",
    "checkpoint_schema",
    "file_action_batches",
    "load_if_overwriting_source",
    "non_file_rows",
    "publish_checkpoint",
]

log = logging.getLogger(__name__)

# Rows per record batch, hence per row group, of a written checkpoint: the Parquet writer's
# and the next reader's scratch memory grow with it (see checkpoint_reader.READ_BATCH_ROWS).
BATCH_ROWS = 8_192

TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STRING_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STRING_MAP),
        ("createdTime", pa.int64()),
    ]
)
PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
DOMAIN = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])
CHECKPOINT_METADATA = pa.struct([("version", pa.int64()), ("tags", STRING_MAP)])
REMOVE_FIELDS = [
    ("path", pa.string()),
    ("deletionTimestamp", pa.int64()),
    ("dataChange", pa.bool_()),
    ("extendedFileMetadata", pa.bool_()),
    ("partitionValues", STRING_MAP),
    ("size", pa.int64()),
    ("deletionVector", DV),
    ("baseRowId", pa.int64()),
    ("defaultRowCommitVersion", pa.int64()),
]
REMOVE = pa.struct(REMOVE_FIELDS)


@dataclass(frozen=True)
class CheckpointResult:
    version: int
    paths: tuple[str, ...]
    num_actions: int
    num_add_files: int
    #: the checkpoint's own size
    size_in_bytes: int
    #: the table's size: the sum of the add actions' sizes it holds
    table_size_bytes: int = 0


# ---------------------------------------------------------------------------------------
# stats_parsed / partitionValues_parsed


def _json_friendly(dt: Any) -> pa.DataType | None:
    """The type pyarrow's JSON reader reads a stats value as (None: no stats for it)."""
    if isinstance(dt, StructType):
        fields = [(f.physical_name, _json_friendly(f.type)) for f in dt.fields]
        kept = [pa.field(n, t) for n, t in fields if t is not None]
        return pa.struct(kept) if kept else None
    if isinstance(dt, (ArrayType, MapType)):
        return None
    if isinstance(dt, DecimalType):
        return to_arrow_type(dt)  # read from the JSON number exactly, never through a double
    assert isinstance(dt, PrimitiveType)
    if dt.name in ("date", "timestamp", "timestamp_ntz"):
        return pa.string()
    if dt.name in ("binary", "variant", "void"):
        return None
    return to_arrow_type(dt)


def _count_type(dt: Any) -> pa.DataType | None:
    if isinstance(dt, StructType):
        kept = [pa.field(f.physical_name, t) for f in dt.fields if (t := _count_type(f.type)) is not None]
        return pa.struct(kept) if kept else None
    return pa.int64()


def _typed(dt: Any) -> pa.DataType | None:
    if isinstance(dt, StructType):
        kept = [pa.field(f.physical_name, t) for f in dt.fields if (t := _typed(f.type)) is not None]
        return pa.struct(kept) if kept else None
    if _json_friendly(dt) is None:
        return None
    return to_arrow_type(dt)


def _cast_values(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if arr.type == target:
        return arr
    if pa.types.is_struct(target):
        assert isinstance(arr, pa.StructArray)
        children = [_cast_values(arr.field(f.name), f.type) for f in target]
        mask = pc.invert(arr.is_valid()) if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_timestamp(target) and pa.types.is_string(arr.type):
        text = pc.replace_substring_regex(arr, r"Z$|[+-]00:?00$", "")
        return pc.cast(pc.cast(text, pa.timestamp("us")), target)
    return pc.cast(arr, target, safe=False)


def parse_stats(stats: pa.Array, columns: StatsColumns) -> pa.StructArray:
    """``stats_parsed`` from the ``stats`` JSON strings (nulls stay null), columnar, for the
    table's stats columns (Delta's ``statsSchema``)."""
    import pyarrow.json as pj

    cols = columns.schema
    friendly = _json_friendly(cols)
    counts = _count_type(cols)
    typed = _typed(cols)
    fields: list[pa.Field] = [pa.field("numRecords", pa.int64())]
    read_fields: list[pa.Field] = [pa.field("numRecords", pa.int64())]
    if friendly is not None and typed is not None:
        fields += [pa.field("minValues", typed), pa.field("maxValues", typed)]
        read_fields += [pa.field("minValues", friendly), pa.field("maxValues", friendly)]
    if counts is not None:
        fields.append(pa.field("nullCount", counts))
        read_fields.append(pa.field("nullCount", counts))
    fields.append(pa.field("tightBounds", pa.bool_()))
    read_fields.append(pa.field("tightBounds", pa.bool_()))
    n = len(stats)
    if n == 0:
        return pa.StructArray.from_arrays([pa.nulls(0, f.type) for f in fields], fields=fields)
    filled = pc.fill_null(stats, string_scalar("{}"))
    body = "\n".join(filled.to_pylist()).encode() if n else b""
    try:
        table = pj.read_json(
            pa.BufferReader(body),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema(read_fields),
                unexpected_field_behavior="ignore",
                newlines_in_values=False,
            ),
            read_options=pj.ReadOptions(block_size=max(1 << 20, len(body) + 1)),
        )
    except pa.ArrowInvalid as exc:
        log.warning("cannot parse file statistics as a struct (%s); writing stats_parsed as null", exc)
        return pa.nulls(n, pa.struct(fields))
    arrays = []
    for f in fields:
        col = table.column(f.name).combine_chunks() if table.num_rows else pa.nulls(0, f.type)
        arrays.append(_cast_values(col, f.type))
    mask = pc.is_null(stats)
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask if stats.null_count else None)


def parse_partition_values(
    pv: pa.Array, schema: StructType, partition_columns: tuple[str, ...], physical: dict[str, str]
) -> pa.StructArray:
    """``partitionValues_parsed``: each partition value cast to its column's type."""
    arrays = []
    fields = []
    for name in partition_columns:
        f = schema.field(name)
        key = physical.get(name, name)
        raw = pc.map_lookup(pv, string_scalar(key), "first")
        target = to_arrow_type(f.type)
        if pa.types.is_timestamp(target):
            values = pc.cast(pc.replace_substring_regex(raw, r"Z$", ""), pa.timestamp("us"))
            values = pc.cast(values, target)
        elif pa.types.is_binary(target):
            values = pc.cast(raw, pa.binary())
        else:
            values = pc.cast(raw, target, safe=False)
        arrays.append(values)
        fields.append(pa.field(key, target))
    return pa.StructArray.from_arrays(arrays, fields=fields)


# ---------------------------------------------------------------------------------------


def checkpoint_schema(snapshot: Snapshot, with_checkpoint_metadata: bool) -> pa.Schema:
    props = snapshot.properties
    add_fields: list[pa.Field] = [
        pa.field("path", pa.string()),
        pa.field("partitionValues", STRING_MAP),
        pa.field("size", pa.int64()),
        pa.field("modificationTime", pa.int64()),
        pa.field("dataChange", pa.bool_()),
        pa.field("tags", STRING_MAP),
        pa.field("deletionVector", DV),
        pa.field("baseRowId", pa.int64()),
        pa.field("defaultRowCommitVersion", pa.int64()),
    ]
    if props.checkpoint_write_stats_as_json:
        add_fields.append(pa.field("stats", pa.string()))
    fields = [
        pa.field("txn", TXN),
        pa.field("add", pa.struct(add_fields)),
        pa.field("remove", REMOVE),
        pa.field("metaData", METADATA),
        pa.field("protocol", PROTOCOL),
        pa.field("domainMetadata", DOMAIN),
    ]
    if with_checkpoint_metadata:
        fields.append(pa.field("checkpointMetadata", CHECKPOINT_METADATA))
    return pa.schema(fields)


# -- one-row arrays built without pyarrow's Python-object conversion (see arrow_build) ------


def _one_str(value: str | None) -> pa.Array:
    return pa.nulls(1, pa.string()) if value is None else string_array([value])


def _one_int(value: int | None, typ: pa.DataType) -> pa.Array:
    if value is None:
        return pa.nulls(1, typ)
    return int64_array([value]).cast(typ)


def _one_bool(value: bool | None) -> pa.Array:
    if value is None:
        return pa.nulls(1, pa.bool_())
    return pc.invert(false_array(1)) if value else false_array(1)


def _one_list(values: Sequence[str] | None) -> pa.Array:
    if values is None:
        return pa.nulls(1, pa.list_(pa.string()))
    return pa.ListArray.from_arrays(int32_array([0, len(values)]), string_array(list(values)))


def _one_map(mapping: Mapping[str, str | None] | None) -> pa.Array:
    if mapping is None:
        return pa.nulls(1, STRING_MAP)
    keys = list(mapping)
    items = pa.concat_arrays([_one_str(mapping[k]) for k in keys]) if keys else string_array([])
    return pa.MapArray.from_arrays(int32_array([0, len(keys)]), string_array(keys), items)


def _one_struct(children: Sequence[pa.Array], typ: pa.DataType) -> pa.Array:
    return pa.StructArray.from_arrays(list(children), fields=list(typ))


def _row(schema: pa.Schema, column: str, value: pa.Array) -> pa.RecordBatch:
    cols = [value if f.name == column else pa.nulls(1, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def non_file_rows(snapshot: Snapshot, schema: pa.Schema, now_ms: int, with_cm: bool) -> pa.RecordBatch:
    """The checkpoint rows that are not file actions: protocol, metadata, the live ``txn``
    actions, the domain metadata and (``with_cm``) ``checkpointMetadata``."""
    rows = [_row(schema, "protocol", _protocol_struct(snapshot)), _row(schema, "metaData", _metadata_struct(snapshot))]
    for t in snapshot.set_transactions_at(now_ms).values():
        rows.append(
            _row(
                schema,
                "txn",
                _one_struct(
                    [_one_str(t.app_id), _one_int(t.version, pa.int64()), _one_int(t.last_updated, pa.int64())], TXN
                ),
            )
        )
    for d in snapshot.domain_metadata.values():
        rows.append(
            _row(
                schema,
                "domainMetadata",
                _one_struct([_one_str(d.domain), _one_str(d.configuration), _one_bool(False)], DOMAIN),
            )
        )
    if with_cm:
        rows.append(
            _row(
                schema,
                "checkpointMetadata",
                _one_struct([_one_int(snapshot.version, pa.int64()), _one_map(None)], CHECKPOINT_METADATA),
            )
        )
    table = pa.Table.from_batches(rows, schema=schema).combine_chunks()
    return table.to_batches()[0]


def _protocol_struct(snapshot: Snapshot) -> pa.Array:
    proto = snapshot.protocol
    return _one_struct(
        [
            _one_int(proto.min_reader_version, pa.int32()),
            _one_int(proto.min_writer_version, pa.int32()),
            _one_list(None if proto.reader_features is None else sorted(proto.reader_features)),
            _one_list(None if proto.writer_features is None else sorted(proto.writer_features)),
        ],
        PROTOCOL,
    )


def _metadata_struct(snapshot: Snapshot) -> pa.Array:
    md = snapshot.metadata
    return _one_struct(
        [
            _one_str(md.id),
            _one_str(md.name),
            _one_str(md.description),
            _one_struct(
                [_one_str(md.format.provider), _one_map(dict(md.format.options))],
                METADATA.field("format").type,
            ),
            _one_str(md.schema_string),
            _one_list(list(md.partition_columns)),
            _one_map(dict(md.configuration)),
            _one_int(md.created_time, pa.int64()),
        ],
        METADATA,
    )


class AddConverter:
    """Turns slices of the snapshot's add table into checkpoint rows (``add`` column)."""

    def __init__(self, snapshot: Snapshot, schema: pa.Schema) -> None:
        from deltalog.txn.protocol.column_mapping import physical_partition_names

        self.snapshot = snapshot
        add_type = schema.field("add").type
        self.wanted = [add_type.field(i) for i in range(add_type.num_fields)]
        props = snapshot.properties
        self.with_struct = props.checkpoint_write_stats_as_struct
        self.stats_columns = StatsColumns.of(snapshot.metadata) if self.with_struct else None
        self.physical = (
            physical_partition_names(snapshot.schema, snapshot.partition_columns)
            if props.column_mapping_mode != "none" and self.with_struct
            else {}
        )
        self.add_type: pa.DataType = self.convert(empty_table(ADD_SCHEMA)).type

    def convert(self, chunk: pa.Table) -> pa.StructArray:
        n = chunk.num_rows
        children: list[pa.Array] = []
        fields: list[pa.Field] = []
        for f in self.wanted:
            if f.name == "dataChange":
                col: pa.Array = false_array(n)
            else:
                col = _combine(chunk.column(f.name))
            children.append(col.cast(f.type) if col.type != f.type else col)
            fields.append(f)
        if self.with_struct:
            snapshot = self.snapshot
            if snapshot.partition_columns:
                pv = parse_partition_values(
                    _combine(chunk.column("partitionValues")),
                    snapshot.schema,
                    snapshot.partition_columns,
                    self.physical,
                )
                children.append(pv)
                fields.append(pa.field("partitionValues_parsed", pv.type))
            assert self.stats_columns is not None
            sp = parse_stats(_combine(chunk.column("stats")), self.stats_columns)
            children.append(sp)
            fields.append(pa.field("stats_parsed", sp.type))
        return pa.StructArray.from_arrays(children, fields=fields)


def _combine(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _file_batch(schema: pa.Schema, column: str, values: pa.Array) -> pa.RecordBatch:
    n = len(values)
    # the other action columns are all null: shared zero buffers, not ``pa.nulls``'s
    # per-child allocations (the remove and metaData structs cost ~100 bytes a row)
    cols = [values if f.name == column else null_array(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _remove_struct(chunk: pa.Table) -> pa.StructArray:
    children = []
    for name, typ in REMOVE_FIELDS:
        col = false_array(chunk.num_rows) if name == "dataChange" else _combine(chunk.column(name))
        children.append(col.cast(typ) if col.type != typ else col)
    return pa.StructArray.from_arrays(children, fields=[pa.field(n, t) for n, t in REMOVE_FIELDS])


def _slices(table: pa.Table, rows: int) -> Iterator[pa.Table]:
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


def _leaves(schema: pa.Schema) -> list[str]:
    """Dotted paths of the Parquet leaf columns of ``schema`` (as pyarrow names them)."""
    out: list[str] = []

    def walk(prefix: str, typ: pa.DataType) -> None:
        if pa.types.is_struct(typ):
            for i in range(typ.num_fields):
                walk(f"{prefix}.{typ.field(i).name}", typ.field(i).type)
        elif pa.types.is_map(typ):
            walk(f"{prefix}.key_value.key", typ.key_type)
            walk(f"{prefix}.key_value.value", typ.item_type)
        elif pa.types.is_list(typ):
            walk(f"{prefix}.list.element", typ.value_type)
        else:
            out.append(prefix)

    for f in schema:
        walk(f.name, f.type)
    return out


@dataclass
class FileActionCounts:
    """What :func:`file_action_batches` streamed."""

    adds: int = 0
    #: the sum of the adds' ``size``
    table_size_bytes: int = 0


def file_action_batches(
    snapshot: Snapshot, schema: pa.Schema, converter: AddConverter, now_ms: int, counts: FileActionCounts
) -> Iterator[pa.RecordBatch]:
    """The snapshot's add actions and unexpired remove tombstones as checkpoint record batches
    (classic and V2 checkpoints alike), streamed from the snapshot's file batches. At the end
    the streamed file count and size are checked against the snapshot's checksum, as Delta
    validates it before a checkpoint: on a mismatch
    :class:`~deltalog.txn.protocol.errors.ChecksumMismatchError` is raised while the writers
    can still abort, so no checkpoint is published."""
    for adds, removes in snapshot.file_batches():
        for chunk in _slices(adds, BATCH_ROWS):
            counts.adds += chunk.num_rows
            counts.table_size_bytes += int(pc.sum(chunk.column("size")).as_py() or 0)
            yield _file_batch(schema, "add", converter.convert(chunk))
        del adds
        if removes.num_rows:
            live = removes.filter(snapshot.unexpired_mask(removes, now_ms))
            for chunk in _slices(live, BATCH_ROWS):
                yield _file_batch(schema, "remove", _remove_struct(chunk))
    if snapshot.checksum is not None:
        validate_checksum(snapshot, snapshot.checksum, (counts.adds, counts.table_size_bytes))


def load_if_overwriting_source(dlog: SnapshotManagement, snapshot: Snapshot, uris: Sequence[str]) -> None:
    """Rewriting a checkpoint the snapshot streams its files from (the same version and
    names): written in place (no temp name), one part would be published while the
    others are still read. Read the files into memory first."""
    if any(dlog.store.needs_temp_file_for(u) for u in uris):
        return
    source = snapshot.file_source
    streamed = {dlog.store.resolve_path(u) for u in getattr(source, "parquet_uris", ())}
    if streamed & {dlog.store.resolve_path(u) for u in uris}:
        snapshot.num_files  # noqa: B018 -- loads the file actions


def _make_dir(fs: Any, path: str) -> None:
    try:
        fs.create_dir(path, recursive=True)
    except OSError:
        pass  # there already, or the filesystem has no directories


class PartWriter:
    """Writes one checkpoint file (a part, a sidecar).

    Where the data filesystem publishes a file only once it is complete (an object
    store's PUT, multipart completion, committed block list), the file is written once,
    in place: no temp name, no rename -- Azure Blob without hierarchical namespace has no
    rename at all, and on S3 and GCS it is a copy. Only where a file is visible while it
    is written (local disk, memory, stores that declare partial writes visible) does it go
    through a temp name and the filesystem's move (:meth:`LogStore.needs_temp_file_for`).
    """

    def __init__(self, dlog: SnapshotManagement, uri: str, schema: pa.Schema) -> None:
        import pyarrow.parquet as pq  # not at the top: it imports pyarrow.fs and every cloud filesystem

        self.store = dlog.store
        self.uri = uri
        self.fs = self.store.filesystem()
        self.use_temp = self.store.needs_temp_file_for(uri)
        directory, _, name = uri.rpartition("/")
        self.write_uri = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp" if self.use_temp else uri
        if self.use_temp:
            # a filesystem with real directories may not have this one yet: a store that
            # keeps its log files elsewhere (a database) has no _delta_log on disk
            _make_dir(self.fs, self.store.fs_path(directory))
        self.stream = self.store.open_output_stream(self.write_uri)
        self.writer = pq.ParquetWriter(
            self.stream,
            schema,
            compression="snappy",
            # paths and stats are unique per row: a dictionary attempt only costs memory
            use_dictionary=[c for c in _leaves(schema) if not c.endswith((".path", ".stats"))],
            # min/max of the stats JSON is useless; keep the rest (readers, ours included,
            # skip all-null fields by their null counts)
            write_statistics=[c for c in _leaves(schema) if not c.endswith(".stats")],
        )
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)
        self.rows += batch.num_rows
        # hand the encoder's freed pages back now (mimalloc keeps them otherwise)
        pa.default_memory_pool().release_unused()

    def close(self) -> None:
        self.writer.close()
        self.stream.close()
        if self.use_temp:
            self.fs.move(self.store.fs_path(self.write_uri), self.store.fs_path(self.uri))

    def abort(self) -> None:
        """Give up the file. Through a temp name: delete it. Written in place (an object
        store publishes the object when its stream closes, and pyarrow cannot abort an
        upload): never write the Parquet footer, so what the close publishes is not a
        readable checkpoint, and delete it at once -- a reader in between fails loudly
        instead of loading a partial state."""
        try:
            if self.use_temp:
                self.writer.close()
            else:
                self.writer.is_open = False  # no footer, not even from the writer's __del__
            self.stream.close()
        finally:
            self.store.delete(self.write_uri)


def publish_checkpoint(
    dlog: SnapshotManagement, snapshot: Snapshot, info: LastCheckpointInfo, files: Sequence[str]
) -> None:
    """Point ``_last_checkpoint`` at a written checkpoint and let ``snapshot`` read its file
    actions from ``files`` (the parts, or a V2 checkpoint's sidecars) from now on."""
    write_last_checkpoint(dlog.store, dlog.log_uri, info)
    snapshot.adopt_checkpoint(CheckpointFiles(dlog.store, snapshot.version, tuple(files)))
    snapshot.checkpoint_version = snapshot.version  # what post-commit and describe count from
