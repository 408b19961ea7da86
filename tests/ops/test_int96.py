"""INT96 data files (Spark's legacy timestamp encoding) without Spark: the schema deltalog
infers from one, and OPTIMIZE writing their values back as microseconds."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.txn.commands.optimize import optimize
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.data_files import data_file_arrow_schema, open_data_file
from deltalog.txn.protocol.actions import AddFile, Metadata

LATEST = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
EARLIEST = dt.datetime(1, 1, 1)


def test_int96_columns_read_as_microseconds_and_infer_as_utc_timestamps(tmp_path):
    ts = pa.timestamp("us")
    table = pa.table(
        {
            "plain": pa.array([LATEST, EARLIEST], pa.timestamp("us", tz="UTC")),  # written as INT96
            "n": pa.array([1, 2], pa.int64()),
            "nested": pa.array([{"t": LATEST, "k": 1}, None], pa.struct([("t", ts), ("k", pa.int32())])),
            "listed": pa.array([[EARLIEST], []], pa.list_(ts)),
            "mapped": pa.array([[("a", LATEST)], None], pa.map_(pa.string(), ts)),
        }
    )
    path = str(tmp_path / "int96.parquet")
    pq.write_table(table, path, use_deprecated_int96_timestamps=True)
    fs = pa.fs.LocalFileSystem()
    with open_data_file(fs, path) as pf:
        schema = data_file_arrow_schema(pf)
        back = pf.read()
    utc = pa.timestamp("us", tz="UTC")
    assert schema.field("plain").type == utc
    assert schema.field("n").type == pa.int64()
    assert schema.field("nested").type == pa.struct([("t", utc), ("k", pa.int32())])
    assert schema.field("listed").type.value_type == utc
    assert schema.field("mapped").type.item_type == utc
    assert schema.field("mapped").type.key_type == pa.string()
    assert back.column("plain").cast(pa.int64()).to_pylist() == table.column("plain").cast(pa.int64()).to_pylist()
    assert back.column("nested").to_pylist() == table.column("nested").to_pylist()
    assert back.column("listed").to_pylist() == table.column("listed").to_pylist()
    assert back.column("mapped").to_pylist() == table.column("mapped").to_pylist()


def test_optimize_writes_int96_values_back_as_microseconds(tmp_path):
    uri = str(tmp_path / "t")
    log = DeltaLog.for_table(uri)
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        ],
    }
    with log.start_transaction() as txn:
        txn.update_metadata(Metadata(schema_string=json.dumps(schema)))
        txn.commit([], CreateTable())
    adds = []
    for i, stamp in enumerate((LATEST, EARLIEST)):
        name = f"part-{i}.parquet"
        data = pa.table({"id": pa.array([i], pa.int64()), "ts": pa.array([stamp], pa.timestamp("us"))})
        pq.write_table(data, f"{uri}/{name}", use_deprecated_int96_timestamps=True)
        size = (tmp_path / "t" / name).stat().st_size
        adds.append(AddFile(name, {}, size=size, modification_time=0, stats=json.dumps({"numRecords": 1})))
    log.start_transaction().commit(adds, Write())

    optimize(log)
    files = log.update().files
    assert len(files) == 1
    out = pq.read_table(f"{uri}/{files[0].path}").sort_by("id")
    assert out.column("ts").type == pa.timestamp("us", tz="UTC")
    expected = pa.array([LATEST, EARLIEST], pa.timestamp("us")).cast(pa.int64()).to_pylist()
    assert out.column("ts").cast(pa.int64()).to_pylist() == expected
    stats = json.loads(files[0].stats or "{}")
    assert stats["minValues"]["ts"] == "0001-01-01T00:00:00.000Z"
    # 9999-12-31T23:59:59.999999 rounded up has no year: truncated, as Delta writes it
    assert stats["maxValues"]["ts"] == "9999-12-31T23:59:59.999Z"
