"""Build real Delta tables for the operations tests: Parquet files written with pyarrow
and committed through the transaction engine, on any store (local, memory)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata, encode_path
from deltalog.txn.protocol.file_stats import StatsCollector
from deltalog.txn.protocol.partition_paths import partition_directory

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "name", "type": "string", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
DATA_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def create(
    uri: str,
    partitioned: bool = True,
    config: dict[str, str] | None = None,
    storage_options: dict[str, str] | None = None,
) -> DeltaLog:
    log = DeltaLog.for_table(uri, storage_options)
    txn = log.start_transaction()
    partition_by = ("p",) if partitioned else ()
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()), schema_string=SCHEMA, partition_columns=partition_by, configuration=dict(config or {})
        )
    )
    txn.commit([], CreateTable(partition_by=partition_by))
    return log


def write_file(log: DeltaLog, ids: Sequence[int], part: str | None, data_change: bool = True) -> AddFile:
    """Write one Parquet file of rows ``ids`` (partition ``p=part``) and return its add."""
    table = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]}, schema=DATA_SCHEMA)
    values: dict[str, str | None] = {} if part is None else {"p": part}
    directory = partition_directory(("p",), values) if part is not None else ""
    name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    rel = f"{directory}/{name}" if directory else name
    uri = f"{log.table_uri}/{rel}"
    fs = log.store.filesystem()
    path = log.store.fs_path(uri)
    if directory:
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        pq.write_table(table, out)
    stats = StatsCollector(DATA_SCHEMA)
    stats.update(table)
    size = int(fs.get_file_info(path).size)
    return AddFile(encode_path(rel), values, size, 1, data_change, stats.to_json())


def append(log: DeltaLog, ids: Sequence[int], part: str | None = "a") -> int:
    add = write_file(log, ids, part)
    version: int = log.start_transaction().commit([add], Write(mode="Append"))
    return version


def read_ids(log: DeltaLog, version: int | None = None) -> list[int]:
    """Every id in the table (DV-deleted rows excluded), sorted."""
    from deltalog.txn.log.deletion_vectors import read_deletion_vector

    snap = log.snapshot(version) if version is not None else log.update()
    fs = log.store.filesystem()
    out: list[Any] = []
    for f in snap.files:
        with fs.open_input_file(log.store.fs_path(f"{log.table_uri}/{f.path}")) as handle:
            t = pq.read_table(handle)
        ids = t.column("id").to_pylist()
        if f.deletion_vector is not None:
            deleted = set(read_deletion_vector(log.store, log.table_uri, f.deletion_vector).to_pylist())
            ids = [v for i, v in enumerate(ids) if i not in deleted]
        out += ids
    return sorted(out)


def deletion_vector_table(uri: str) -> DeltaLog:
    """Versions 0 (create, deletion vectors on), 1 (write ids 1..4), 2 (DELETE ids 1 and 3
    through a deletion vector on disk)."""
    import time
    from dataclasses import replace

    from deltalog.txn.commit.operations import Delete
    from deltalog.txn.log.deletion_vector_writer import widen_stats
    from deltalog.txn.log.deletion_vectors import dv_absolute_path, write_dv_file, z85_encode
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    log = create(uri, config={"delta.enableDeletionVectors": "true"})
    add = write_file(log, [1, 2, 3, 4], "a")
    log.start_transaction().commit([add], Write())
    blob, [(offset, size, card)] = write_dv_file([[0, 2]])
    dv = DeletionVectorDescriptor("u", z85_encode(uuid.uuid4().bytes), size, card, offset)
    with open(log.store.fs_path(dv_absolute_path(log.table_uri, dv)), "wb") as fh:
        fh.write(blob)
    txn = log.start_transaction()
    txn.filter_files()
    with_dv = replace(add, deletion_vector=dv, stats=widen_stats(add.stats, 4, 0))
    txn.commit([add.remove(int(time.time() * 1000)), with_dv], Delete(["x"]))
    return log
