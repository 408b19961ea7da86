"""Writing classic (single-file or multi-part) Parquet checkpoints, then ``_last_checkpoint``.

The checkpoint has the protocol's schema (PROTOCOL "Checkpoint Schema"): one column per
action type (``txn``, ``add``, ``remove``, ``metaData``, ``protocol``, ``domainMetadata``, and
``checkpointMetadata`` when the table has the ``v2Checkpoint`` feature), one action per row.
``add.stats`` is the JSON string (``delta.checkpoint.writeStatsAsJson``, default true);
``add.stats_parsed`` and ``add.partitionValues_parsed`` are added when
``delta.checkpoint.writeStatsAsStruct`` is true. Rows are built from the snapshot's Arrow
tables in batches (zero-copy slices) and streamed to a ``ParquetWriter`` -- the state is
never turned into Python objects. When the store shows partial writes, or its data
filesystem's output streams are not atomic (local disk, memory), each file is written to a
temporary name and renamed into place, so a reader never sees half a checkpoint.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.txn.features import protocol_features
from deltalog.txn.last_checkpoint import LastCheckpointInfo, write_last_checkpoint
from deltalog.txn.log_segment import checkpoint_name
from deltalog.txn.schema import (
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructType,
    to_arrow_type,
)

if TYPE_CHECKING:
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.snapshot import Snapshot

__all__ = ["BATCH_ROWS", "CheckpointResult", "checkpoint_schema", "write_checkpoint"]

log = logging.getLogger(__name__)

BATCH_ROWS = 65_536

STRING_MAP = pa.map_(pa.string(), pa.string())
DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)
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
    size_in_bytes: int


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
        return pa.float64()
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


def _stats_columns(schema: StructType, partition_columns: tuple[str, ...], num_indexed: int) -> StructType:
    data = [f for f in schema.fields if f.name not in partition_columns]
    if num_indexed >= 0:
        data = data[:num_indexed]
    return StructType(tuple(data))


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


def parse_stats(
    stats: pa.Array, schema: StructType, partition_columns: tuple[str, ...], num_indexed: int
) -> pa.StructArray:
    """``stats_parsed`` from the ``stats`` JSON strings (nulls stay null), columnar."""
    import pyarrow.json as pj

    cols = _stats_columns(schema, partition_columns, num_indexed)
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
    filled = pc.fill_null(stats, "{}")
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
        col = table.column(f.name).combine_chunks() if table.num_rows else pa.array([], f.type)
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
        raw = pc.map_lookup(pv, pa.scalar(key, pa.string()), "first")
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


def _single_struct(value: dict[str, Any] | None, typ: pa.DataType) -> pa.Array:
    return pa.array([value], typ)


def _non_file_rows(snapshot: Snapshot, schema: pa.Schema, now_ms: int, with_cm: bool) -> pa.RecordBatch:
    md = snapshot.metadata
    proto = snapshot.protocol
    rows: list[dict[str, Any]] = []
    rows.append(
        {
            "protocol": {
                "minReaderVersion": proto.min_reader_version,
                "minWriterVersion": proto.min_writer_version,
                "readerFeatures": None if proto.reader_features is None else list(proto.reader_features),
                "writerFeatures": None if proto.writer_features is None else list(proto.writer_features),
            }
        }
    )
    rows.append(
        {
            "metaData": {
                "id": md.id,
                "name": md.name,
                "description": md.description,
                "format": {"provider": md.format.provider, "options": dict(md.format.options)},
                "schemaString": md.schema_string,
                "partitionColumns": list(md.partition_columns),
                "configuration": dict(md.configuration),
                "createdTime": md.created_time,
            }
        }
    )
    for t in snapshot.set_transactions_at(now_ms).values():
        rows.append({"txn": {"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated}})
    for d in snapshot.domain_metadata.values():
        rows.append(
            {"domainMetadata": {"domain": d.domain, "configuration": d.configuration, "removed": False}}
        )
    if with_cm:
        rows.append({"checkpointMetadata": {"version": snapshot.version, "tags": None}})
    columns = [pa.array([r.get(f.name) for r in rows], f.type) for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _add_batches(snapshot: Snapshot, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    files = snapshot.files_table
    add_type = schema.field("add").type
    wanted = [add_type.field(i) for i in range(add_type.num_fields)]
    props = snapshot.properties
    with_struct = props.checkpoint_write_stats_as_struct
    from deltalog.txn.column_mapping import physical_partition_names

    physical = (
        physical_partition_names(snapshot.schema, snapshot.partition_columns)
        if snapshot.properties.column_mapping_mode != "none"
        else {}
    )
    for start in range(0, files.num_rows, BATCH_ROWS):
        chunk = files.slice(start, BATCH_ROWS)
        n = chunk.num_rows
        children: list[pa.Array] = []
        fields: list[pa.Field] = []
        for f in wanted:
            col = chunk.column(f.name).combine_chunks()
            if f.name == "dataChange":
                col = pa.repeat(pa.scalar(False), n)
            children.append(col.cast(f.type) if col.type != f.type else col)
            fields.append(f)
        if with_struct:
            if snapshot.partition_columns:
                pv = parse_partition_values(
                    chunk.column("partitionValues").combine_chunks(),
                    snapshot.schema,
                    snapshot.partition_columns,
                    physical,
                )
                children.append(pv)
                fields.append(pa.field("partitionValues_parsed", pv.type))
            sp = parse_stats(
                chunk.column("stats").combine_chunks(),
                snapshot.schema,
                snapshot.partition_columns,
                props.data_skipping_num_indexed_cols,
            )
            children.append(sp)
            fields.append(pa.field("stats_parsed", sp.type))
        add = pa.StructArray.from_arrays(children, fields=fields)
        yield _file_batch(schema, "add", add)


def _file_batch(schema: pa.Schema, column: str, values: pa.Array) -> pa.RecordBatch:
    n = len(values)
    cols = [values if f.name == column else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(cols, names=schema.names)


def _remove_batches(snapshot: Snapshot, schema: pa.Schema, now_ms: int) -> Iterator[pa.RecordBatch]:
    tombstones = snapshot.tombstones_table(now_ms)
    for start in range(0, tombstones.num_rows, BATCH_ROWS):
        chunk = tombstones.slice(start, BATCH_ROWS)
        children = []
        for name, typ in REMOVE_FIELDS:
            col = chunk.column(name).combine_chunks()
            if name == "dataChange":
                col = pa.repeat(pa.scalar(False), chunk.num_rows)
            children.append(col.cast(typ) if col.type != typ else col)
        yield _file_batch(
            schema,
            "remove",
            pa.StructArray.from_arrays(children, fields=[pa.field(n, t) for n, t in REMOVE_FIELDS]),
        )


def _with_add_schema(schema: pa.Schema, first_add: pa.RecordBatch | None) -> pa.Schema:
    if first_add is None:
        return schema
    idx = schema.get_field_index("add")
    return schema.set(idx, pa.field("add", first_add.schema.field("add").type))


class _PartWriter:
    """Writes one checkpoint file, through a temp name when partial writes are visible."""

    def __init__(self, dlog: DeltaLog, uri: str, schema: pa.Schema) -> None:
        self.store = dlog.store
        self.uri = uri
        self.fs = self.store.filesystem()
        self.use_temp = self.store.needs_temp_file_for(uri)
        directory, _, name = uri.rpartition("/")
        self.write_uri = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp" if self.use_temp else uri
        self.stream = self.fs.open_output_stream(self.store.fs_path(self.write_uri))
        self.writer = pq.ParquetWriter(self.stream, schema, compression="snappy")
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)
        self.rows += batch.num_rows

    def close(self) -> None:
        self.writer.close()
        self.stream.close()
        if self.use_temp:
            self.fs.move(self.store.fs_path(self.write_uri), self.store.fs_path(self.uri))

    def abort(self) -> None:
        try:
            self.writer.close()
            self.stream.close()
        finally:
            if self.use_temp:
                self.store.delete(self.write_uri)


def write_checkpoint(
    dlog: DeltaLog, snapshot: Snapshot, *, part_size: int | None = None, now_ms: int | None = None
) -> CheckpointResult:
    """Write the checkpoint of ``snapshot`` and point ``_last_checkpoint`` at it.

    ``part_size`` (actions per file) writes a multi-part checkpoint when the state has
    more actions than that; otherwise one ``%020d.checkpoint.parquet`` file.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    reader, _ = protocol_features(snapshot.protocol)
    with_cm = "v2Checkpoint" in reader
    base_schema = checkpoint_schema(snapshot, with_cm)
    head = _non_file_rows(snapshot, base_schema, now, with_cm)
    adds = _add_batches(snapshot, base_schema)
    first_add = next(adds, None)
    schema = _with_add_schema(base_schema, first_add)
    head = pa.RecordBatch.from_arrays(
        [c if c.type == f.type else pa.nulls(len(c), f.type) for c, f in zip(head.columns, schema)],
        schema=schema,
    )

    def batches() -> Iterator[pa.RecordBatch]:
        yield head
        if first_add is not None:
            yield first_add
            yield from adds
        for b in _remove_batches(snapshot, base_schema, now):
            yield pa.RecordBatch.from_arrays(
                [c if c.type == f.type else pa.nulls(len(c), f.type) for c, f in zip(b.columns, schema)],
                schema=schema,
            )

    total = head.num_rows + snapshot.num_files + snapshot.tombstones_table(now).num_rows
    num_parts = 1
    if part_size is not None and part_size > 0 and total > part_size:
        num_parts = -(-total // part_size)
    uris = (
        [f"{dlog.log_uri}/{checkpoint_name(snapshot.version)}"]
        if num_parts == 1
        else [
            f"{dlog.log_uri}/{checkpoint_name(snapshot.version, i, num_parts)}"
            for i in range(1, num_parts + 1)
        ]
    )
    limit = total if num_parts == 1 else part_size
    assert limit is not None
    part = 0
    writer = _PartWriter(dlog, uris[0], schema)
    written = 0
    try:
        for batch in batches():
            offset = 0
            while offset < batch.num_rows:
                if writer.rows >= limit and part + 1 < num_parts:
                    writer.close()
                    part += 1
                    writer = _PartWriter(dlog, uris[part], schema)
                take = (
                    batch.num_rows - offset
                    if part + 1 == num_parts
                    else min(batch.num_rows - offset, limit - writer.rows)
                )
                writer.write(batch.slice(offset, take))
                offset += take
                written += take
        writer.close()
        while part + 1 < num_parts:  # fewer rows than planned: still write every part
            part += 1
            writer = _PartWriter(dlog, uris[part], schema)
            writer.close()
    except BaseException:
        writer.abort()
        raise
    size = sum(s.size for u in uris for s in dlog.store.list_from(u) if s.path.endswith(u.rsplit("/", 1)[1]))
    info = LastCheckpointInfo(
        version=snapshot.version,
        size=written,
        parts=None if num_parts == 1 else num_parts,
        size_in_bytes=size,
        num_of_add_files=snapshot.num_files,
    )
    write_last_checkpoint(dlog.store, dlog.log_uri, info)
    log.info(
        "wrote checkpoint %d of %s (%d actions, %d file(s))",
        snapshot.version,
        dlog.table_uri,
        written,
        num_parts,
    )
    return CheckpointResult(snapshot.version, tuple(uris), written, snapshot.num_files, size)
