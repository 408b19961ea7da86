"""Tables using reader features, built by the tests per the protocol (so we know exactly
what is in them), loaded by deltalog with the right files and schema, and read by
delta-rs with the same rows."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.txn.commit.operations import CreateTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.deletion_vectors import (
    keep_mask,
    read_deletion_vector,
    serialize_bitmap,
    write_dv_file,
    z85_encode,
)
from deltalog.txn.protocol.actions import AddFile, DeletionVectorDescriptor, Metadata, Protocol, action_to_line
from deltalog.txn.protocol.column_mapping import logical_partition_values, rename_to_logical


def _field(name: str, type_: object, cm_id: int | None = None, physical: str | None = None) -> dict[str, object]:
    meta: dict[str, object] = {}
    if cm_id is not None:
        meta = {"delta.columnMapping.id": cm_id, "delta.columnMapping.physicalName": physical}
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def test_deletion_vectors_on_disk_and_inline(tmp_path: Path) -> None:
    table = tmp_path / "dv"
    table.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), table / "a.parquet")
    pq.write_table(pa.table({"id": pa.array(range(100, 110), pa.int64())}), table / "b.parquet")
    # an on-disk DV ('u': random prefix + Z85 of the file's UUID) deleting rows 0, 3 and 7 of a
    blob, [(offset, size, cardinality)] = write_dv_file([[0, 3, 7]])
    file_uuid = uuid.uuid4()
    (table / "ab").mkdir()
    (table / "ab" / f"deletion_vector_{file_uuid}.bin").write_bytes(blob)
    on_disk = DeletionVectorDescriptor("u", "ab" + z85_encode(file_uuid.bytes), size, cardinality, offset)
    # an inline DV ('i': the Z85-encoded bitmap, padded to a multiple of 4 bytes) deleting row 9 of b
    bitmap = serialize_bitmap([9])
    inline = DeletionVectorDescriptor("i", z85_encode(bitmap + b"\0" * (-len(bitmap) % 4)), len(bitmap), 1)

    log = DeltaLog.for_table(str(table))
    txn = log.start_transaction()
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            schema_string=json.dumps({"type": "struct", "fields": [_field("id", "long")]}),
            configuration={"delta.enableDeletionVectors": "true"},
        )
    )
    size_a, size_b = (table / "a.parquet").stat().st_size, (table / "b.parquet").stat().st_size
    txn.commit(
        [
            AddFile("a.parquet", {}, size_a, 1, stats='{"numRecords":10,"tightBounds":false}', deletion_vector=on_disk),
            AddFile("b.parquet", {}, size_b, 1, stats='{"numRecords":10,"tightBounds":false}', deletion_vector=inline),
        ],
        CreateTable(),
    )

    snap = DeltaLog.for_table(str(table)).update()
    assert snap.protocol == Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "invariants"))
    by_path = {f.path: f for f in snap.files}
    assert by_path["a.parquet"].deletion_vector == on_disk
    assert by_path["b.parquet"].deletion_vector == inline
    kept: list[int] = []
    for f in snap.files:
        assert f.deletion_vector is not None
        deleted = read_deletion_vector(log.store, log.table_uri, f.deletion_vector)
        data = pq.read_table(table / f.path)
        kept += data.filter(keep_mask(data.num_rows, deleted)).column("id").to_pylist()
    expected = sorted({*range(10), *range(100, 109)} - {0, 3, 7})
    assert sorted(kept) == expected
    # delta-rs applies the same deletion vectors (its DataFusion reader does; its pyarrow
    # dataset reader refuses tables with the deletionVectors reader feature)
    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(table))).execute("select id from t")
    assert sorted(pa.table(result.read_all()).column("id").to_pylist()) == expected


def test_column_mapping_name_mode(tmp_path: Path) -> None:
    table = tmp_path / "cm"
    schema = {
        "type": "struct",
        "fields": [
            _field("id", "long", 1, "col-1b4e"),
            _field("part", "string", 2, "col-2c9a"),
            _field("s", {"type": "struct", "fields": [_field("x", "integer", 4, "col-4f00")]}, 3, "col-3d11"),
        ],
    }
    (table / "zz").mkdir(parents=True)

    # the data file as Delta Spark writes it: physical names, and the column-mapping ids as
    # Parquet field ids
    def fid(n: int) -> dict[bytes, bytes]:
        return {b"PARQUET:field_id": str(n).encode()}

    inner = pa.struct([pa.field("col-4f00", pa.int32(), metadata=fid(4))])
    file_schema = pa.schema(
        [pa.field("col-1b4e", pa.int64(), metadata=fid(1)), pa.field("col-3d11", inner, metadata=fid(3))]
    )
    physical = pa.table(
        [pa.array([1, 2, 3], pa.int64()), pa.array([{"col-4f00": 10}, {"col-4f00": 20}, None], inner)],
        schema=file_schema,
    )
    pq.write_table(physical, table / "zz" / "part-0.parquet")
    # deltalog reads column mapping but does not write it (the engine refuses), so the log
    # is written here as the protocol lays it out
    log = DeltaLog.for_table(str(table))
    size = (table / "zz" / "part-0.parquet").stat().st_size
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(schema),
        partition_columns=("part",),
        configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "4"},
    )
    # partition values are keyed by the physical name
    add = AddFile("zz/part-0.parquet", {"col-2c9a": "p1"}, size, 1)
    log.store.write(log.commit_uri(0), [action_to_line(a) for a in (Protocol(2, 5), metadata, add)])

    snap = DeltaLog.for_table(str(table)).update()
    assert snap.protocol.min_reader_version == 2 and snap.protocol.min_writer_version == 5
    assert [f.name for f in snap.schema.fields] == ["id", "part", "s"]
    assert snap.properties.column_mapping_mode == "name"
    (f,) = snap.files
    assert logical_partition_values(f.partition_values, snap.schema, snap.partition_columns, "name") == {"part": "p1"}
    logical = rename_to_logical(pq.read_table(table / f.path), snap.schema)
    assert logical.column_names == ["id", "s"]
    assert logical.column("s").to_pylist() == [{"x": 10}, {"x": 20}, None]
    # delta-rs reads the same table through the same mapping (its DataFusion reader does;
    # its pyarrow dataset reader returns nulls for mapped columns)
    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(table))).execute("select * from t")
    rows = sorted(pa.table(result.read_all()).to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "part": "p1", "s": {"x": 10}},
        {"id": 2, "part": "p1", "s": {"x": 20}},
        {"id": 3, "part": "p1", "s": None},
    ]


def test_writes_to_column_mapping_tables_key_partition_values_by_physical_name(tmp_path: Path) -> None:
    import pytest

    from deltalog.txn.commit.commit_errors import InvalidTransactionError
    from deltalog.txn.commit.operations import Write

    test_column_mapping_name_mode(tmp_path)
    log = DeltaLog.for_table(str(tmp_path / "cm"))
    # the logical name is not a key of partitionValues under column mapping: refused, nothing written
    with pytest.raises(InvalidTransactionError, match="partition values"):
        log.start_transaction().commit([AddFile("zz/part-1.parquet", {"part": "p2"}, 1, 1)], Write())
    assert log.update().version == 0
    assert log.start_transaction().commit([AddFile("zz/part-1.parquet", {"col-2c9a": "p2"}, 1, 1)], Write()) == 1
